"""The NMP compiler's output directory (docs/nmp.md "Output directory"), written atomically and read strictly.

``manifest.json`` (format ``dnnmap-nmp/1``): the architecture at the compiled word width, TSO options,
per layer the schedule and Q-points, per tensor the Q-point, the memory map, and the SHA-256 of every
other file. ``programs.bin``: every core's operations (binary records, :mod:`isa`). ``weights.bin``: the
weights segment of DRAM. ``listing.txt``: the memory map and every core's operations, readable.
``network.yaml``: the network; ``params.npz``: its float parameters (batch norm unfolded), which the
float comparison and the fixed-point reference (re-quantized at the manifest's Q-points) read.

Reading refuses a missing or changed file, a manifest outside its schema, a memory map or program set
that does not fit the network, each with a message naming the file and field.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, StrictInt, StrictStr

from dnnmap.arch.spec import parse_arch
from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.fileio import (StrictModel, int_choice, is_manifest_dir, load_data, publish_dir, read_bytes,
                           validate_strict)
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.search import TsoSchedule
from dnnmap.search.tso.slicing import DATAFLOWS, SLICINGS, tle_slicing
from dnnmap.search.tso.timing import Tiles, breakdown
from dnnmap.targets.nmp.compiler import NmpCompiled, weights_image
from dnnmap.targets.nmp.generate import LayerProgram
from dnnmap.targets.nmp.isa import RECORD, Op, decode, encode, listing_line
from dnnmap.targets.nmp.layers import nmp_layers
from dnnmap.targets.nmp.layout import memory_map
from dnnmap.targets.nmp.machine import nmp_machine
from dnnmap.targets.nmp.params import folded, load_params, save_params
from dnnmap.targets.nmp.quantize import BITS_CHOICES, FRAC_RANGE, with_qpoints
from dnnmap.workload.importers import load_network, save_network

FORMAT = "dnnmap-nmp/1"
MAGIC = b"NMPPROG\x00"
HEADER = struct.Struct("<8sIII")  # magic, version, layers, cores
FILES = ("programs.bin", "weights.bin", "network.yaml", "params.npz")


# ---- writing ---------------------------------------------------------------------
def encode_programs(programs: tuple[LayerProgram, ...], cores: int) -> bytes:
    out = [HEADER.pack(MAGIC, 1, len(programs), cores)]
    for p in programs:
        for ops in p.cores:
            out.append(struct.pack("<I", len(ops)))
            out += [encode(op) for op in ops]
    return b"".join(out)


def _listing(c: NmpCompiled) -> str:
    lines = [f"NMP programs for network {c.network.name} ({c.quant.bits}-bit fixed point, {c.machine.tle} TLE x "
             f"{c.machine.tlt} TLT)", "", "memory map (byte address, bytes, buffer C x H x W, border top/left):"]
    for r in c.memory.regions:
        lines.append(f"  0x{r.addr:06x} {r.nbytes:>8} {r.kind:<10} {r.name:<24} {'x'.join(map(str, r.shape))} "
                     f"border {r.border[0]},{r.border[1]}")
    lines.append(f"  weights.bin = DRAM [0x{c.memory.weights_base:06x}, 0x{c.memory.size:06x})")
    for ly, s, p in zip(c.layers, c.schedules, c.programs, strict=True):
        lines += ["", "=" * 100, f"layer {ly.name} ({ly.kind}): {s.describe()}; TSO estimate {s.seconds * 1e6:.2f} us"]
        for i, ops in enumerate(p.cores):
            e, t = divmod(i, c.machine.tlt)
            lines.append(f"-- TLE {e} TLT {t}: {len(ops)} ops")
            lines += [f"  {k:4d}  {listing_line(op)}" for k, op in enumerate(ops)]
    return "\n".join(lines) + "\n"


def _options(o: TsoOptions) -> dict[str, Any]:
    return {k: getattr(o, k) for k in ("dram", "alpha", "edges", "filters", "mac_divisor", "sw_s_per_transfer",
                                       "prune_depth")}


def write_output(out_dir: Path, c: NmpCompiled) -> Path:
    """Write the directory atomically (module docstring); returns it."""
    out_dir = Path(out_dir)

    with publish_dir(out_dir, is_manifest_dir) as tmp:
        (tmp / "programs.bin").write_bytes(encode_programs(c.programs, c.machine.tle * c.machine.tlt))
        (tmp / "weights.bin").write_bytes(weights_image(c.memory, c.quant, c.layers))
        save_network(c.network, tmp / "network.yaml")
        save_params(c.params, tmp / "params.npz")
        (tmp / "listing.txt").write_text(_listing(c))
        layers = [{"name": ly.name, "kind": ly.kind, "slicing": s.p, "dataflow": s.q, "TR": s.TR, "TC": s.TC,
                   "TN": s.TN, "TM": s.TM, "estimate_us": round(s.seconds * 1e6, 4),
                   "w_frac": c.quant.w_frac.get(ly.name), "ops": sum(len(x) for x in p.cores)}
                  for ly, s, p in zip(c.layers, c.schedules, c.programs, strict=True)]
        manifest = {"format": FORMAT, "network": c.network.name, "bits": c.quant.bits,
                    "arch": c.arch.model_dump(mode="json"), "tso_options": _options(c.schedules[0].options),
                    "frac": c.quant.frac, "layers": layers,
                    "memory_map": {"size": c.memory.size, "weights_base": c.memory.weights_base,
                                   "regions": [{"name": r.name, "kind": r.kind, "addr": r.addr,
                                                "elem_bytes": r.elem_bytes, "shape": list(r.shape),
                                                "border": list(r.border)} for r in c.memory.regions]},
                    "sha256": {f: hashlib.sha256((tmp / f).read_bytes()).hexdigest() for f in FILES}}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out_dir


# ---- reading ---------------------------------------------------------------------
QPoint = Annotated[StrictInt, Field(ge=FRAC_RANGE[0], le=FRAC_RANGE[1])]  # what the shift fields can express
Nat = Annotated[StrictInt, Field(ge=0, lt=2**40)]


class LayerEntry(StrictModel):
    name: StrictStr
    kind: StrictStr
    slicing: Literal[SLICINGS]  # type: ignore[valid-type]
    dataflow: Literal[DATAFLOWS]  # type: ignore[valid-type]
    TR: Annotated[StrictInt, Field(ge=1, le=2**20)]
    TC: Annotated[StrictInt, Field(ge=1, le=2**20)]
    TN: Annotated[StrictInt, Field(ge=1, le=2**20)]
    TM: Annotated[StrictInt, Field(ge=1, le=2**20)]
    estimate_us: float
    w_frac: QPoint | None
    ops: Nat


class RegionEntry(StrictModel):
    name: StrictStr
    kind: Literal["input", "activation", "weights", "bias"]
    addr: Nat
    elem_bytes: int_choice(1, 2, 4)  # type: ignore[valid-type]
    shape: Annotated[list[Nat], Field(min_length=3, max_length=3)]
    border: Annotated[list[Nat], Field(min_length=2, max_length=2)]


class MemoryEntry(StrictModel):
    size: Nat
    weights_base: Nat
    regions: list[RegionEntry]


class Manifest(StrictModel):
    format: Literal["dnnmap-nmp/1"]
    network: StrictStr
    bits: int_choice(*BITS_CHOICES)  # type: ignore[valid-type]
    arch: dict[StrictStr, Any]
    tso_options: dict[StrictStr, Any]
    frac: dict[StrictStr, QPoint]
    layers: Annotated[list[LayerEntry], Field(min_length=1)]
    memory_map: MemoryEntry
    sha256: dict[StrictStr, Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]]


def _manifest(out: Path) -> dict[str, Any]:
    path = out / "manifest.json"
    if not out.is_dir():
        raise InputFileError(f"{out}: no such directory; write one with `dnnmap compile NET --target nmp -o {out}`")
    if not path.is_file():
        raise InputFileError(f"{path}: no manifest; run `dnnmap compile NET --target nmp -o {out}` first")
    data = load_data(path, "NMP manifest", fmt="json")
    validate_strict(Manifest, data, path, "NMP manifest")
    return data


def decode_programs(data: bytes, path: Path, layers: int, cores: int) -> tuple[tuple[tuple[Op, ...], ...], ...]:
    if len(data) < HEADER.size:
        raise InputFileError(f"{path}: {len(data)} bytes, shorter than the {HEADER.size}-byte header")
    magic, version, n_layers, n_cores = HEADER.unpack_from(data)
    if magic != MAGIC or version != 1 or (n_layers, n_cores) != (layers, cores):
        raise InputFileError(f"{path}: not an NMP program file for this manifest (magic {magic!r}, version {version}, "
                             f"{n_layers} layers x {n_cores} cores; expected {layers} x {cores})")
    pos, out = HEADER.size, []
    for li in range(layers):
        progs = []
        for ci in range(cores):
            if pos + 4 > len(data):
                raise InputFileError(f"{path}: truncated at layer {li} core {ci}")
            (n,), pos = struct.unpack_from("<I", data, pos), pos + 4
            if pos + n * RECORD.size > len(data):
                raise InputFileError(f"{path}: layer {li} core {ci} declares {n} ops beyond the end of the file")
            try:
                progs.append(tuple(decode(data[pos + k * RECORD.size: pos + (k + 1) * RECORD.size],
                                          f"layer {li} core {ci} op {k}") for k in range(n)))
            except ValueError as e:
                raise InputFileError(f"{path}: {e}") from e
            pos += n * RECORD.size
        out.append(tuple(progs))
    if pos != len(data):
        raise InputFileError(f"{path}: {len(data) - pos} trailing bytes after the last program")
    return tuple(out)


def load_compiled(out_dir: str | Path) -> tuple[NmpCompiled, bytes]:
    """The compiled network and the weights segment of ``out_dir``, every file checked (module docstring)."""
    out = Path(out_dir)
    man = _manifest(out)
    mpath = out / "manifest.json"
    if sorted(man["sha256"]) != sorted(FILES):
        raise InputFileError(f"{mpath}: field 'sha256' must list exactly {', '.join(FILES)}, got "
                             f"{', '.join(sorted(man['sha256'])) or 'none'}")
    blobs = {}
    for f in FILES:
        blobs[f] = read_bytes(out / f, f"NMP {f}")
        if hashlib.sha256(blobs[f]).hexdigest() != man["sha256"].get(f):
            raise InputFileError(f"{out / f}: changed since it was compiled (SHA-256 differs from {mpath}); "
                                 "compile again")
    arch = parse_arch(man["arch"], f"{mpath}: field 'arch'")
    try:
        network = load_network(out / "network.yaml")
        layers = nmp_layers(network)
        machine = nmp_machine(arch)
        opts = TsoOptions(**man["tso_options"])
    except (DnnmapError, TypeError, ValueError) as e:
        raise InputFileError(f"{out}: the compiled network cannot be rebuilt: {e}") from e
    if [(ly.name, ly.kind) for ly in layers] != [(x["name"], x["kind"]) for x in man["layers"]] \
            or machine.bits != man["bits"]:
        raise InputFileError(f"{mpath}: field 'layers' (names, kinds) / 'bits' disagree with network.yaml and the "
                             "architecture")
    params = load_params(out / "params.npz", layers)
    frac, w_frac = man["frac"], {x["name"]: x["w_frac"] for x in man["layers"] if x["w_frac"] is not None}
    needed = {network.inputs[0][0], *(ly.name for ly in layers)}
    if set(frac) != needed or set(w_frac) != {ly.name for ly in layers if ly.is_conv}:
        raise InputFileError(f"{mpath}: fields 'frac' / 'layers[].w_frac' must give a Q-point for every tensor "
                             "and every convolution's weights")
    quant = with_qpoints(layers, folded(params), frac, w_frac, man["bits"])
    mm = memory_map(network, layers, machine.elem_bytes, machine.burst_bytes)
    regions = [{"name": r.name, "kind": r.kind, "addr": r.addr, "elem_bytes": r.elem_bytes, "shape": list(r.shape),
                "border": list(r.border)} for r in mm.regions]
    if man["memory_map"] != {"size": mm.size, "weights_base": mm.weights_base, "regions": regions}:
        raise InputFileError(f"{mpath}: field 'memory_map' does not match the network's memory map")
    if len(blobs["weights.bin"]) != mm.size - mm.weights_base:
        raise InputFileError(f"{out / 'weights.bin'}: {len(blobs['weights.bin'])} bytes, the memory map's weights "
                             f"segment has {mm.size - mm.weights_base}")
    cores = machine.tle * machine.tlt
    decoded = decode_programs(blobs["programs.bin"], out / "programs.bin", len(layers), cores)
    tso = TsoMachine.from_arch(arch)
    schedules = []
    for layer, entry in zip(network.layers, man["layers"], strict=True):
        tl = tso_layer(layer.op)
        s = tle_slicing(entry["slicing"], tl.R, tl.M, tso.tle)
        one = Tiles(*(np.array([entry[k]], dtype=np.int64) for k in ("TR", "TC", "TN", "TM")))
        schedules.append(TsoSchedule(tl, s, entry["dataflow"], entry["TR"], entry["TC"], entry["TN"], entry["TM"],
                                     breakdown(tl, tso, opts, s, entry["dataflow"], one), opts))
    programs = tuple(LayerProgram(ly.name, p) for ly, p in zip(layers, decoded, strict=True))
    return (NmpCompiled(network, arch, layers, params, quant, machine, mm, tuple(schedules), programs),
            blobs["weights.bin"])
