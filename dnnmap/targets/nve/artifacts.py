"""The compiler's output directory: program binaries, a readable listing and a JSON manifest.

``manifest.json`` holds the spec, each layer's geometry, and per program the binary's
file name and the host-side stream layout (which the binary alone does not carry: the
order in which input words must arrive and what each output word is). The directory is
written to a temporary sibling and renamed into place, so an error never leaves a
partial output directory; it gets the usual directory permissions.

Reading (:func:`load_compiled`) validates an edited or damaged directory before anything runs:
the manifest against a strict schema, every layer against the spec, every program binary
against the spec's field widths, buffer sizes and its manifest entry, and every stream layout
against the layer's geometry; a manifest that lists no layer is an error, not a vacuous pass.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from dnnmap.errors import InputFileError
from dnnmap.fileio import (StrictModel, int_choice, is_manifest_dir, load_data, publish_dir, read_bytes,
                           validate_strict)
from dnnmap.targets.nve.codegen import LoopAct, LoopWrite, StreamLayout
from dnnmap.targets.nve.compiler import OPT_LEVELS, CompiledLayer
from dnnmap.targets.nve.encoding import FieldWidths, decode_program, encode_program
from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.listing import program_listing
from dnnmap.targets.nve.metrics import layer_figures
from dnnmap.targets.nve.program import NveProgram
from dnnmap.targets.nve.spec import NveSpec, spec_from_data
from dnnmap.targets.nve.taskgraph import CoeffWord, PixelWord

FORMAT = "dnnmap-nve/1"


def _word(w: PixelWord | CoeffWord) -> list[Any]:
    return ["c", w.index] if isinstance(w, CoeffWord) else ["p", w.in_map, w.col, w.phase, w.word]


def _unword(x: list[Any]) -> PixelWord | CoeffWord:
    return CoeffWord(x[1]) if x[0] == "c" else PixelWord(*x[1:])


def stream_to_json(s: StreamLayout) -> dict[str, Any]:
    return {"init_words": [_word(w) for w in s.init_words],
            "loop_writes": [[w.slot, w.stage, *_word(w.word)[1:]] for w in s.loop_writes],
            "loop_acts": [[a.slot, a.stage, a.out_map, a.half] for a in s.loop_acts],
            "loads": [list(x) for x in s.loads], "out_maps": list(s.out_maps), "in_maps": list(s.in_maps)}


def stream_from_json(d: dict[str, Any]) -> StreamLayout:
    return StreamLayout(tuple(_unword(w) for w in d["init_words"]),
                        tuple(LoopWrite(x[0], x[1], PixelWord(*x[2:])) for x in d["loop_writes"]),
                        tuple(LoopAct(*x) for x in d["loop_acts"]), tuple(tuple(x) for x in d["loads"]),
                        tuple(d["out_maps"]), tuple(d["in_maps"]))


def layer_to_json(layer: ConvLayer) -> dict[str, Any]:
    return {"name": layer.name, "in_maps": layer.in_maps, "connections": [list(c) for c in layer.connections],
            "kernel": list(layer.kernel), "subsample": list(layer.subsample), "out_hw": list(layer.out_hw),
            "batch": layer.batch}


def layer_from_json(d: dict[str, Any]) -> ConvLayer:
    return ConvLayer(d["name"], d["in_maps"], tuple(tuple(c) for c in d["connections"]), tuple(d["kernel"]),
                     tuple(d["subsample"]), tuple(d["out_hw"]), d["batch"])  # type: ignore[arg-type]


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def write_output(out_dir: Path, network: str, compiled: list[CompiledLayer], skipped: list[tuple[str, str]],
                 spec: NveSpec, opt_level: int, seconds: float) -> dict[str, Any]:
    """Write binaries, listing and manifest atomically into ``out_dir``; return the manifest."""
    out_dir = Path(out_dir)

    with publish_dir(out_dir, is_manifest_dir) as tmp:
        (tmp / "programs").mkdir()
        layers = []
        listing = [f"NVE programs for network {network} (optimization level {opt_level}: {OPT_LEVELS[opt_level]})"]
        for cl in compiled:
            progs = []
            for i, cp in enumerate(cl.programs):
                rel = f"programs/{_safe(cl.layer.name)}_{i}.nveb"
                (tmp / rel).write_bytes(encode_program(cp.program, spec))
                progs.append({"binary": rel, "out_maps": list(cp.out_maps), "size": cp.program.size,
                              "ii": cp.loop.ii, "mii": cp.loop.mii, "stream": stream_to_json(cp.stream)})
                listing += ["", "=" * 100, program_listing(cp, spec.coeffs_per_word)]
            fig = layer_figures(cl, spec)
            layers.append({**layer_to_json(cl.layer), "programs": progs,
                           "figures": {"macs_per_instruction": round(fig.utilization(spec.lanes), 4),
                                       "instructions": fig.instructions, "mac_ops": fig.mac_ops,
                                       "input_bytes": fig.input_bytes, "output_bytes": fig.output_bytes,
                                       "coefficient_bytes": fig.coefficient_bytes}})
        manifest = {"format": FORMAT, "network": network, "opt_level": opt_level,
                    "optimizations": OPT_LEVELS[opt_level], "spec": spec.model_dump(), "layers": layers,
                    "skipped": [{"layer": n, "reason": r} for n, r in skipped],
                    "compile_seconds": round(seconds, 3)}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        (tmp / "listing.txt").write_text("\n".join(listing) + "\n")
    return manifest


# ---- reading -------------------------------------------------------------------
Nat = Annotated[StrictInt, Field(ge=0, le=2**31)]
Pos = Annotated[StrictInt, Field(ge=1, le=2**31)]


class StreamEntry(StrictModel):
    init_words: list[list[StrictStr | Nat]]
    loop_writes: list[Annotated[list[Nat], Field(min_length=6, max_length=6)]]
    loop_acts: list[Annotated[list[Nat], Field(min_length=4, max_length=4)]]
    loads: list[Annotated[list[Nat], Field(min_length=3, max_length=3)]]
    out_maps: list[Nat]
    in_maps: list[Nat]


class ProgramEntry(StrictModel):
    binary: Annotated[StrictStr, Field(pattern=r"^programs/[A-Za-z0-9_-]+\.nveb$")]
    out_maps: Annotated[list[Nat], Field(min_length=1)]
    size: Pos
    ii: Pos
    mii: Pos
    stream: StreamEntry


class LayerEntry(StrictModel):
    name: StrictStr
    in_maps: Pos
    connections: Annotated[list[Annotated[list[Nat], Field(min_length=1)]], Field(min_length=1)]
    kernel: Annotated[list[Pos], Field(min_length=2, max_length=2)]
    subsample: Annotated[list[Pos], Field(min_length=2, max_length=2)]
    out_hw: Annotated[list[Annotated[StrictInt, Field(ge=1, le=2**16)]], Field(min_length=2, max_length=2)]
    batch: Annotated[StrictInt, Field(ge=1, le=2**10)]
    programs: Annotated[list[ProgramEntry], Field(min_length=1)]
    figures: dict[StrictStr, StrictInt | float] = Field(default_factory=dict)


class SkippedEntry(StrictModel):
    layer: StrictStr
    reason: StrictStr


class ManifestSpec(StrictModel):
    format: Literal["dnnmap-nve/1"]
    network: StrictStr
    opt_level: int_choice(0, 1, 2, 3)  # type: ignore[valid-type]
    optimizations: StrictStr
    spec: dict[StrictStr, StrictInt | float | StrictBool]
    layers: list[LayerEntry]
    skipped: list[SkippedEntry] = Field(default_factory=list)
    compile_seconds: float = 0.0


def read_manifest(out_dir: Path) -> dict[str, Any]:
    """The manifest of ``out_dir`` checked against the schema (raw data; see :func:`load_compiled`)."""
    path = Path(out_dir) / "manifest.json"
    if not path.is_file():
        raise InputFileError(f"{path}: no NVE manifest; run the compiler first (`dnnmap compile NET -o DIR`)")
    data = load_data(path, "NVE manifest", fmt="json")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputFileError(f"{path}: not an NVE manifest (format must be {FORMAT!r})")
    validate_strict(ManifestSpec, data, path, "NVE manifest")
    return data


@dataclass(frozen=True)
class CompiledFolder:
    """A validated compiler output directory: the spec and, per layer, its programs with stream layouts."""

    out_dir: Path
    spec: NveSpec
    layers: tuple[tuple[ConvLayer, tuple[tuple[NveProgram, StreamLayout], ...]], ...]


def _stream(d: dict[str, Any], layer: ConvLayer, program: NveProgram, entry: dict[str, Any], spec: NveSpec,
            where: str) -> StreamLayout:
    """The stream layout of one program, every index checked against the layer and the program."""
    def bad(field: str, why: str) -> InputFileError:
        return InputFileError(f"{where}.stream.{field}: {why}")

    for i, w in enumerate(d["init_words"]):
        ok = (len(w) == 2 and w[0] == "c" and type(w[1]) is int) or (
            len(w) == 5 and w[0] == "p" and all(type(x) is int for x in w[1:]))
        if not ok:
            raise bad(f"init_words[{i}]", f"expected ['c', load] or ['p', map, column, phase, word], got {w!r:.60}")
    try:
        stream = stream_from_json(d)
    except (TypeError, IndexError, ValueError) as e:
        raise bad("(layout)", str(e)) from e
    out_maps, n_loads = set(stream.out_maps), len(stream.loads)
    if list(stream.out_maps) != entry["out_maps"] or not out_maps <= set(range(layer.out_maps)):
        raise bad("out_maps", f"{list(stream.out_maps)} must equal the program's out_maps {entry['out_maps']} and "
                  f"lie within the layer's {layer.out_maps} output maps")
    if not set(stream.in_maps) <= set(range(layer.in_maps)):
        raise bad("in_maps", f"{list(stream.in_maps)} outside the layer's {layer.in_maps} input maps")
    words = [w for w in stream.init_words if isinstance(w, PixelWord)] + [lw.word for lw in stream.loop_writes]
    for w in words:
        if w.in_map >= layer.in_maps or w.phase >= layer.subsample[0] or w.word >= 3 or w.col >= layer.in_hw[1]:
            raise bad("words", f"pixel word {w} outside the layer's input (maps {layer.in_maps}, subsample "
                      f"{layer.subsample[0]}, 3 words per phase, width {layer.in_hw[1]})")
    if any(w.index >= n_loads for w in stream.init_words if isinstance(w, CoeffWord)):
        raise bad("init_words", f"a coefficient word names a load beyond the {n_loads} loads")
    for k, first, n in stream.loads:
        if k not in out_maps or not 1 <= n <= spec.coeffs_per_word or first + n > layer.coefficients(k):
            raise bad("loads", f"load ({k}, {first}, {n}) outside output map {k}'s coefficient chain")
    for x in (*stream.loop_writes, *stream.loop_acts):
        if x.slot >= entry["ii"] or x.stage >= spec.max_stages:
            raise bad("loop", f"slot {x.slot} / stage {x.stage} outside ii={entry['ii']} / {spec.max_stages} stages")
    if any(a.out_map not in out_maps or a.half > 1 for a in stream.loop_acts):
        raise bad("loop_acts", "an activation names an output map the program does not compute or a half > 1")
    return stream


def _program(path: Path, entry: dict[str, Any], spec: NveSpec, where: str) -> NveProgram:
    """The decoded binary, checked against the spec (field widths, buffer sizes) and its manifest entry."""
    data = read_bytes(path, "NVE program binary", limit=16 * 2**20)
    try:
        program = decode_program(data, str(path))
    except (ValueError, struct.error) as e:  # an opcode outside its enumeration, a truncated mode table
        raise InputFileError(f"{path}: malformed NVE program ({e})") from e
    why = f"its field widths differ from the spec's ({FieldWidths.of(spec)})"
    try:
        canonical = encode_program(program, spec)
    except ValueError as e:  # a field that does not fit this spec's widths
        canonical, why = b"", str(e)
    if canonical != data:
        raise InputFileError(f"{path}: not encoded for the manifest's spec: {why}")
    s = program.settings
    if program.size != entry["size"]:
        raise InputFileError(f"{path}: {program.size} instructions, the manifest ({where}) says {entry['size']}")
    if program.size > spec.instruction_buffer_size or len(s.modes) >= spec.agu_modes:
        raise InputFileError(f"{path}: {program.size} instructions / {len(s.modes)} AGU modes exceed the spec's "
                             f"instruction buffer ({spec.instruction_buffer_size}) / mode table ({spec.agu_modes})")
    if s.loop_end - s.loop_start + 1 != entry["ii"] or s.drain > spec.max_stages:
        raise InputFileError(f"{path}: loop [{s.loop_start}, {s.loop_end}] / drain {s.drain} disagree with "
                             f"ii={entry['ii']} in the manifest ({where}) and {spec.max_stages} stages")
    if any(t > spec.local_buffer_words or i > spec.local_buffer_words for t, i in s.modes):
        raise InputFileError(f"{path}: an AGU mode (toggle, inc) exceeds the local buffer's {spec.local_buffer_words} "
                             "words")
    return program


def load_compiled(out_dir: str | Path) -> CompiledFolder:
    """Read and validate a compiler output directory (see the module docstring)."""
    out = Path(out_dir)
    manifest = read_manifest(out)
    mpath = out / "manifest.json"
    spec = spec_from_data(manifest["spec"], f"{mpath}: field 'spec'")
    if not manifest["layers"]:
        raise InputFileError(f"{mpath}: lists no compiled layer, so there is nothing to simulate (a vacuous pass "
                             "is not a pass)")
    layers = []
    for i, entry in enumerate(manifest["layers"]):
        where = f"layers[{i}] ({entry['name']})"
        layer = layer_from_json(entry)
        problem = _layer_problem(layer, spec)
        if problem:
            raise InputFileError(f"{mpath}: field '{where}': {problem}")
        programs = []
        for j, prog in enumerate(entry["programs"]):
            at = f"{where}.programs[{j}]"
            program = _program(out / prog["binary"], prog, spec, at)
            programs.append((program, _stream(prog["stream"], layer, program, prog, spec, f"{mpath}: field '{at}")))
        layers.append((layer, tuple(programs)))
    return CompiledFolder(out, spec, tuple(layers))


def _layer_problem(layer: ConvLayer, spec: NveSpec) -> str | None:
    if any(not c or len(set(c)) != len(c) or max(c) >= layer.in_maps for c in layer.connections):
        return f"connections must list distinct input maps 0..{layer.in_maps - 1}"
    if layer.macs > 2**40:
        return f"{layer.macs:,} MACs exceed the simulator's limit 2**40"
    return layer.misfit(spec)
