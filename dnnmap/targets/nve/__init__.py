"""NVE target: VLIW code generation for the Neuro Vector Engine and an instruction-set simulator.

Entry points (the CLI wires ``dnnmap compile NET --target nve -o out/`` and
``dnnmap simulate out/`` to them):

* :func:`compile_network` - XML DSL file, zoo name or IR network -> programs in ``out_dir``;
* :func:`run_compiled` - run the programs in ``out_dir`` on the ISS with random 8-bit
  pixels and 16-bit weights and check every output bit-exactly against the NumPy reference
  (an :class:`IssRunResult`);
* :func:`load_nve_network` - the IR network of an NVE XML description or a zoo name.

The names differ from :func:`dnnmap.sim.simulate` / :class:`dnnmap.sim.SimResult` (the
loop-nest simulator of mappings) and :func:`dnnmap.workload.importers.load_network`
(model files), which are other things.

See ``docs/nve.md`` for the spec parameters, the encoding and every choice/deviation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from dnnmap.errors import InputFileError, MappingError
from dnnmap.targets.nve.artifacts import load_compiled, write_output
from dnnmap.targets.nve.compiler import OPT_LEVELS, CompiledLayer, compile_layer
from dnnmap.targets.nve.iss import StreamConfig
from dnnmap.targets.nve.layers import misfit_error, network_layers
from dnnmap.targets.nve.metrics import LayerFigures, layer_figures
from dnnmap.targets.nve.simulation import LayerSim, simulate_layer
from dnnmap.targets.nve.spec import DEFAULT_SPEC, NveSpec, load_spec
from dnnmap.targets.nve.xml_dsl import load_xml
from dnnmap.workload import zoo
from dnnmap.workload.ir import Network

__all__ = ["CompileResult", "IssRunResult", "NveSpec", "DEFAULT_SPEC", "StreamConfig", "compile_network",
           "run_compiled", "load_nve_network", "load_spec", "OPT_LEVELS"]


@dataclass(frozen=True)
class CompileResult:
    out_dir: Path
    network: str
    opt_level: int
    layers: tuple[CompiledLayer, ...]
    figures: tuple[LayerFigures, ...]
    skipped: tuple[tuple[str, str], ...]  # (layer, why it does not fit)
    seconds: float

    def summary(self, lanes: int = 16) -> str:
        lines = [f"{self.network}: {sum(len(c.programs) for c in self.layers)} NVE programs in {self.out_dir} "
                 f"(optimization level {self.opt_level}: {OPT_LEVELS[self.opt_level]}, {self.seconds:.2f} s)"]
        for cl, f in zip(self.layers, self.figures, strict=True):
            lines.append(f"  {cl.layer.name}: {f.programs} program(s), sizes {min(f.program_sizes)}-"
                         f"{max(f.program_sizes)}, {f.utilization(lanes):.2f} MAC/instr, "
                         f"{f.transfer_bytes / 2**20:.2f} MiB transferred")
        lines += [f"  skipped {n}: {r}" for n, r in self.skipped]
        return "\n".join(lines)


@dataclass(frozen=True)
class IssRunResult:
    """Outcome of running a compiled output directory on the ISS: per layer cycles, counts and mismatches."""

    out_dir: Path
    layers: tuple[LayerSim, ...]
    lanes: int
    full_frame: bool = False

    @property
    def bit_exact(self) -> bool:
        return all(s.bit_exact for s in self.layers)

    @property
    def passed(self) -> bool:
        """The verdict ``dnnmap simulate`` exits on: every output bit-exact."""
        return self.bit_exact

    def summary(self) -> str:
        frame = "full frame" if self.full_frame else "reduced frame (output rows x columns below; --full-frame for all)"
        lines = [f"NVE instruction-set simulation of {self.out_dir}, {frame}: "
                 f"{'all outputs bit-exact' if self.bit_exact else 'outputs DIFFER from the NumPy reference'}"]
        for s in self.layers:
            st = s.stats
            lines.append(f"  {s.name} ({s.out_hw[0]}x{s.out_hw[1]}): {s.programs} program(s), {st.cycles} cycles "
                         f"({st.input_stalls} input / {st.output_stalls} output stalls), {st.issued} instructions, "
                         f"{s.macs_per_instruction(self.lanes):.2f} MAC/instr, "
                         f"{'bit-exact' if s.bit_exact else f'{s.mismatches}/{s.outputs} outputs differ'}")
        return "\n".join(lines)


def load_nve_network(source: Network | str | Path, frame_hw: tuple[int, int] | None = None) -> Network:
    """An IR network from an XML DSL file or a zoo name (a Network passes through)."""
    if isinstance(source, Network):
        return source
    path = Path(source)
    if path.suffix.lower() == ".xml" or path.exists():
        if not path.is_file():
            raise InputFileError(f"{path}: no such XML network description")
        return load_xml(path, frame_hw)
    return zoo.get(str(source))


def compile_network(network_or_path: Network | str | Path, out_dir: str | Path,
                    spec: NveSpec | str | Path | None = None, opt_level: int = 3,
                    skip_unsupported: bool = False, frame_hw: tuple[int, int] | None = None) -> CompileResult:
    """Compile every layer for the NVE and write binaries, listing and manifest to ``out_dir``.

    Layers that do not fit the engine (operator kind, kernel, subsample, or a program
    larger than the instruction/local buffer) raise one MappingError naming each of them
    and why, unless ``skip_unsupported`` (they are then listed in the result and manifest).
    """
    if opt_level not in OPT_LEVELS:
        raise InputFileError(f"opt_level {opt_level!r} is not allowed; choose one of "
                             + ", ".join(f"{k} ({v})" for k, v in OPT_LEVELS.items()))
    nve_spec = spec if isinstance(spec, NveSpec) else DEFAULT_SPEC if spec is None else load_spec(spec)
    start = time.perf_counter()
    network = load_nve_network(network_or_path, frame_hw)
    layers, skipped = network_layers(network, nve_spec)
    if skipped and not skip_unsupported:  # refuse at once, before compiling the layers that do fit
        raise misfit_error(network.name, skipped)
    compiled = []
    for layer in layers:
        try:
            compiled.append(compile_layer(layer, nve_spec, opt_level))
        except MappingError as e:  # a program that exceeds the instruction or local buffer
            skipped.append((layer.name, str(e)))
    order = [ly.name for ly in network.layers]
    skipped.sort(key=lambda x: order.index(x[0]))
    if not compiled or (skipped and not skip_unsupported):
        raise misfit_error(network.name, skipped)
    seconds = time.perf_counter() - start
    out = Path(out_dir)
    write_output(out, network.name, compiled, skipped, nve_spec, opt_level, seconds)
    return CompileResult(out, network.name, opt_level, tuple(compiled),
                         tuple(layer_figures(c, nve_spec) for c in compiled), tuple(skipped), seconds)


def run_compiled(out_dir: str | Path, rows: int | None = None, cols: int | None = None, full_frame: bool = False,
                 seed: int = 0, config: StreamConfig = StreamConfig()) -> IssRunResult:
    """Run the programs of ``out_dir`` on the ISS and check them bit-exactly against the reference.

    By default each layer runs on a reduced frame (``rows`` x ``cols`` outputs, default
    lanes+4 rows = one full and one partial strip, and 6 columns) - the same binaries,
    with the iteration-count setting register and the strip count adapted; ``full_frame``
    simulates the compiled frame size (seconds per 1280x720 network, docs/nve.md §7).
    """
    folder = load_compiled(out_dir)
    spec = folder.spec
    results = []
    for i, (layer, programs) in enumerate(folder.layers):
        if not full_frame:
            p, q = layer.out_hw
            layer = layer.with_out_hw(min(p, rows or spec.lanes + 4), min(q, cols or 6))
        try:
            results.append(simulate_layer(layer, list(programs), spec, seed + i, config))
        except (ValueError, IndexError, KeyError) as e:  # a stream layout the validation could not rule out
            raise InputFileError(f"{folder.out_dir}: layer {layer.name!r}: its programs and stream layouts do not "
                                 f"fit together ({e}); the directory was edited or damaged, compile it again") from e
    return IssRunResult(folder.out_dir, tuple(results), spec.lanes, full_frame)
