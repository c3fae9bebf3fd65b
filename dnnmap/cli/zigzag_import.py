"""``dnnmap import-arch zigzag``: a ZigZag hardware file (and optionally its workload and mapping) in dnnmap's files."""

from __future__ import annotations

from pathlib import Path

import yaml

from dnnmap.api import mapping_file_name
from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.zigzag import import_zigzag_arch
from dnnmap.cli.console import stdout_console, wrote
from dnnmap.errors import DnnmapError
from dnnmap.fileio import load_data
from dnnmap.mapping.io import save_mapping, write_atomic
from dnnmap.mapping.mapping import Mapping, validate_mapping
from dnnmap.mapping.zigzag_map import mapping_entry, operand_links, zigzag_mapping
from dnnmap.report.summary import counted
from dnnmap.workload.importers import save_network
from dnnmap.workload.importers.zigzag_workload import (
    common_precision,
    final_output_bits,
    load_zigzag_workload,
)


def spec_yaml(spec: ArchSpec) -> str:
    """An imported spec as YAML (``clock_mhz`` written even when it is nothing's default)."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    data["clock_mhz"] = spec.clock_mhz
    return yaml.safe_dump(data, sort_keys=False)


def import_zigzag(hardware: Path, output: Path, workload: Path | None, mapping: Path | None,
                  network_output: Path | None, mapping_output: Path | None, clock_mhz: float,
                  shared_boundary: bool = False) -> None:
    """Write the dnnmap spec of ``hardware``; with ``workload`` its network file, with ``mapping`` one mapping
    file per layer into ``mapping_output`` (a directory): each operand's loops where ZigZag allocates them
    (per-tensor placement), or with ``shared_boundary`` at one boundary per memory
    (:func:`dnnmap.mapping.zigzag_map.zigzag_mapping`)."""
    if mapping is not None and workload is None:
        raise DnnmapError("--mapping needs --workload (the layers the ZigZag mapping file names)")
    if shared_boundary and mapping is None:
        raise DnnmapError("--shared-boundary applies to the mappings of --mapping")
    out = stdout_console()
    imported = load_zigzag_workload(workload) if workload is not None else None
    bits, notes = common_precision(imported) if imported is not None else (None, [])
    mapping_data = load_data(mapping, "ZigZag mapping file") if mapping is not None else None
    links = None
    if mapping_data is not None and imported is not None:
        entry, at = mapping_entry(mapping_data, imported.network.layers[0].name, str(mapping))
        links = operand_links(entry, at)
    final = final_output_bits(imported) if imported is not None else None
    core = import_zigzag_arch(hardware, links, bits, clock_mhz, final)
    write_atomic(output, spec_yaml(core.spec))
    wrote(out, output, detail=f"architecture {core.spec.name!r}, {counted(len(core.spec.levels), 'level')}, "
                              f"{counted(core.spec.num_macs, 'MAC')}")
    for note in [*core.notes, *notes, *(imported.notes if imported else ())]:
        out.print(f"note: {note}", markup=False)
    if imported is None:
        return
    net_path = network_output or output.parent / f"{workload.name.split('.')[0]}.net.yaml"  # type: ignore[union-attr]
    save_network(imported.network, net_path)
    wrote(out, net_path, detail=counted(len(imported.network.layers), "layer"))
    if mapping_data is None:
        return
    folder = mapping_output or output.parent / f"{mapping.name.split('.')[0]}.mappings"  # type: ignore[union-attr]
    names = [lv.name for lv in core.spec.levels]
    lowered: list[str] = []
    for i, layer in enumerate(imported.network.layers):
        m = zigzag_mapping(mapping_data, str(mapping), layer.op, core, shared_boundary)
        validate_mapping(m, layer.op, core.spec)
        save_mapping(folder / mapping_file_name(i, layer.name),
                     Mapping(m.levels, m.layouts, m.layer, str(output), m.notes), names, layer.op)
        lowered += [f"{layer.name}: {n}" for n in m.notes[1:]]
    wrote(out, folder, detail=counted(len(imported.network.layers), "mapping file"))
    if lowered:
        out.print(f"note: {counted(len(lowered), 'operand tile')} smaller than ZigZag allocates (docs/zigzag.md, "
                  f"\"Mapping file\"), e.g. {lowered[0]}", markup=False)
