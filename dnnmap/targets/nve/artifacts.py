"""The compiler's output directory: program binaries, a readable listing and a JSON manifest.

``manifest.json`` holds the spec, each layer's geometry, and per program the binary's
file name and the host-side stream layout (which the binary alone does not carry: the
order in which input words must arrive and what each output word is). The directory is
written to a temporary sibling and renamed into place, so an error never leaves a
partial output directory.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.targets.nve.codegen import LoopAct, LoopWrite, StreamLayout
from dnnmap.targets.nve.compiler import OPT_LEVELS, CompiledLayer
from dnnmap.targets.nve.encoding import encode_program
from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.listing import program_listing
from dnnmap.targets.nve.metrics import layer_figures
from dnnmap.targets.nve.spec import NveSpec
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
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "manifest.json").is_file():
        raise DnnmapError(f"{out_dir}: exists and is not an NVE output directory; refusing to overwrite it")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
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
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def read_manifest(out_dir: Path) -> dict[str, Any]:
    path = Path(out_dir) / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the NVE manifest ({e.strerror}); run the compiler first") from e
    except json.JSONDecodeError as e:
        raise InputFileError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputFileError(f"{path}: not an NVE manifest (format must be {FORMAT!r})")
    return manifest
