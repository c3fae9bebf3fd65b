"""Loading a self-contained mapping file together with its operator and architecture."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dnnmap.api import resolve_arch
from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import DnnmapError, InputFileError, MappingError
from dnnmap.mapping.io import load_mapping_file, mapping_from_dict
from dnnmap.mapping.mapping import Mapping, validate_mapping
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class LoadedMapping:
    mapping: Mapping
    op: Operator
    arch: ArchSpec


def load_mapping_with_arch(path: Path, arch: str | None) -> LoadedMapping:
    """The mapping in ``path`` on ``arch`` (default: the file's ``arch`` field), checked for legality."""
    _, op, raw = load_mapping_file(path)
    if op is None:
        raise InputFileError(f"{path}: field 'operator' is missing; the file must embed its layer "
                             "(files written by `dnnmap map --save-mappings` do)")
    arch_ref = arch or raw.get("arch")
    if not arch_ref:
        raise DnnmapError(f"{path}: no 'arch' field in the file; pass --arch NAME_OR_YAML")
    beside = path.parent / str(arch_ref)
    # a spec written beside the mapping (a fused layer's hardware share, `map --fuse --save-mappings`)
    spec = resolve_arch(beside if not arch and str(arch_ref).endswith(".yaml") and beside.is_file() else str(arch_ref))
    mapping = mapping_from_dict(raw, [lv.name for lv in spec.levels], str(path), op)
    try:
        validate_mapping(mapping, op, spec)
    except MappingError as err:
        raise MappingError(f"{path}: {err}") from err
    return LoadedMapping(mapping, op, spec)
