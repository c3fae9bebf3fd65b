"""NMP target: programs for TSO's multicore NPU (4 TLE x 8 TLT) and a functional simulator (docs/nmp.md).

Entry points (the CLI wires ``dnnmap compile NET --target nmp -o out/`` and ``dnnmap simulate out/``):

* :func:`compile_network` - network -> folded, calibrated, quantized; scheduled per layer by TSO;
  per-core programs, memory map, packed weights, listing and manifest in ``out_dir``;
* :func:`run_compiled` - run ``out_dir`` on the simulator with a random input, check every layer
  bit-exactly against the NumPy fixed-point reference and the output against the float network, and set
  the simulator's transfers, bursts and time beside TSO's estimate of the same schedules.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from dnnmap.arch.spec import ArchSpec
from dnnmap.targets.nmp.artifacts import load_compiled, write_output
from dnnmap.targets.nmp.compiler import NmpCompiled, compile_nmp, random_inputs
from dnnmap.targets.nmp.execution import NmpRun, execute
from dnnmap.targets.nmp.layers import nmp_layers
from dnnmap.targets.nmp.model_check import LayerCheck, check_layer
from dnnmap.targets.nmp.params import load_params
from dnnmap.search.tso.machine import TsoMachine
from dnnmap.workload.ir import Network

# float tolerance of the network output, max |quantized - float| / max |float| (docs/nmp.md "Tolerance")
FLOAT_TOLERANCE = {16: 0.01, 8: 0.15}

__all__ = ["compile_network", "run_compiled", "NmpCompiled", "NmpSimulation", "FLOAT_TOLERANCE"]


@dataclass(frozen=True)
class NmpCompileResult:
    out_dir: Path
    compiled: NmpCompiled
    seconds: float

    def summary(self) -> str:
        c = self.compiled
        lines = [f"{c.network.name}: NMP programs for {len(c.layers)} layers x {c.machine.tle * c.machine.tlt} "
                 f"cores ({c.ops} ops, {c.quant.bits}-bit fixed point, {c.memory.size} B of DRAM) in {self.out_dir} "
                 f"({self.seconds:.2f} s)"]
        for ly, s, p in zip(c.layers, c.schedules, c.programs, strict=True):
            lines.append(f"  {ly.name}: {s.describe()}, {sum(len(x) for x in p.cores)} ops, "
                         f"TSO estimate {s.seconds * 1e6:.2f} us")
        return "\n".join(lines)


def compile_network(network: Network, out_dir: str | Path, bits: int = 16, seed: int = 0,
                    arch: ArchSpec | None = None, params_path: Path | None = None) -> NmpCompileResult:
    """Compile ``network`` for the NMP and write ``out_dir`` (random parameters from ``seed`` unless
    ``params_path`` gives an .npz file; docs/nmp.md)."""
    start = time.perf_counter()
    params = load_params(Path(params_path), nmp_layers(network)) if params_path is not None else None
    compiled = compile_nmp(network, arch, bits, params, seed)
    write_output(Path(out_dir), compiled)
    return NmpCompileResult(Path(out_dir), compiled, time.perf_counter() - start)


@dataclass(frozen=True)
class NmpSimulation:
    out_dir: Path
    compiled: NmpCompiled
    run: NmpRun
    checks: tuple[LayerCheck, ...]
    seed: int

    @property
    def bit_exact(self) -> bool:
        return self.run.bit_exact

    @property
    def within_tolerance(self) -> bool:
        return self.run.float_error <= FLOAT_TOLERANCE[self.compiled.quant.bits]

    @property
    def passed(self) -> bool:
        """Every layer bit-exact and the output within the float tolerance (``dnnmap simulate`` exits 0)."""
        return self.bit_exact and self.within_tolerance

    def summary(self) -> str:
        c, r = self.compiled, self.run
        m = c.machine
        n = len(c.layers)
        verdict = (f"all {n} layer outputs bit-exact" if r.bit_exact else
                   f"MISMATCHES in {sum(1 for x in r.mismatches if x)} of {n} layers")
        tol = FLOAT_TOLERANCE[c.quant.bits]
        lines = [f"NMP simulation of {self.out_dir} ({c.network.name}, {c.quant.bits}-bit, {m.tle} TLE x {m.tlt} TLT, "
                 f"input seed {self.seed}): {verdict} against the NumPy fixed-point reference",
                 f"  float network: max |output error| {100 * r.float_error:.3f}% of max |output| (tolerance "
                 f"{100 * tol:g}%: {'ok' if r.float_error <= tol else 'EXCEEDED'})",
                 "  per layer: simulator vs TSO's model of the same schedule (every DRAM transfer counted; bias loads excluded)",
                 f"  {'layer':<12}{'schedule':<14}{'words':>7}{'xfers sim/model':>17}{'bytes sim/model':>19}"
                 f"{'bursts sim/model':>18}{'aligned':>8}{'MAC us sim/model':>18}{'DRAM us sim/model':>19}"]
        for k, mis, words in zip(self.checks, r.mismatches, r.outputs, strict=True):
            mv = k.model_value
            lines.append(f"  {k.name:<12}{k.schedule:<14}{words:>7}{k.sim_transfers:>9}/{mv('transfers'):<7.0f}"
                         f"{k.sim_bytes:>10}/{mv('dram_bytes'):<8.0f}{k.sim_bursts:>9}/{mv('bursts'):<8.0f}"
                         f"{k.sim_aligned_bursts:>8}{k.sim_mac_s * 1e6:>9.3f}/{mv('mac') * 1e6:<8.3f}"
                         f"{k.sim_dram_s * 1e6:>9.3f}/{mv('dram') * 1e6:<8.3f}"
                         + ("" if not mis else f"  {mis} words differ"))
        sim = sum(k.sim_mac_s + k.sim_dram_s for k in self.checks)
        per_tlt = sum(k.model_value("mac") + k.model_value("dram") for k in self.checks)
        literal = sum(float(k.literal.total[0]) for k in self.checks)
        lines.append(f"  total time: simulated {sim * 1e6:.2f} us; TSO estimate {per_tlt * 1e6:.2f} us (every "
                     "transfer counted), "
                     f"literal (what the mapper minimized) {literal * 1e6:.2f} us")
        return "\n".join(lines)


def run_compiled(out_dir: str | Path, seed: int = 0) -> NmpSimulation:
    """Simulate ``out_dir`` on one random input from ``seed`` and check it (module docstring)."""
    compiled, weights = load_compiled(out_dir)
    x = random_inputs(compiled.network, 1, seed)[0]
    run = execute(compiled, weights, x)
    tso = TsoMachine.from_arch(compiled.arch)
    checks = tuple(check_layer(s, st, tso, compiled.machine)
                   for s, st in zip(compiled.schedules, run.stats, strict=True))
    return NmpSimulation(Path(out_dir), compiled, run, checks, seed)
