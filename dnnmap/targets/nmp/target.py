"""The NMP target in the registry (:mod:`dnnmap.targets.registry`): `dnnmap compile --target nmp`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dnnmap.arch.spec import load_arch
from dnnmap.targets.nmp import NmpCompileResult, NmpSimulation, compile_network, run_compiled
from dnnmap.targets.nmp.artifacts import FORMAT
from dnnmap.targets.registry import CompileOptions, SimulateOptions, register
from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class NmpTarget:
    """Per-core programs for TSO's multicore NPU, run on its functional simulator (docs/nmp.md)."""

    name: str = "nmp"
    description: str = "multicore NPU (4 TLE x 8 TLT): TSO's schedules as per-core programs, functional simulator"
    manifest_format: str = FORMAT
    source_suffixes: tuple[str, ...] = ()
    compile_options: frozenset[str] = frozenset({"arch", "bits", "seed", "params"})
    simulate_options: frozenset[str] = frozenset({"seed"})
    option_hints: dict[str, str] = field(default_factory=lambda: {
        "spec": "the NMP machine is an architecture: give it with --arch (a preset name or a YAML file)",
        "opt_level": "the NMP target compiles every layer or refuses the network",
        "skip_unsupported": "the NMP target compiles every layer or refuses the network",
        "full_frame": "an NMP run always simulates the whole network"})

    def compile(self, network: Network, out_dir: Path, options: CompileOptions) -> NmpCompileResult:
        """Compile ``network`` at ``--bits`` (default 16) with ``--seed``'s or ``--params``' weights on ``--arch``
        (default the nmp preset)."""
        arch = load_arch(options.arch) if options.arch is not None else None
        return compile_network(network, out_dir, 16 if options.bits is None else options.bits, options.seed or 0,
                               arch, options.params)

    def simulate(self, folder: Path, options: SimulateOptions) -> NmpSimulation:
        """Run ``folder`` on the functional simulator with a random input from ``seed``."""
        return run_compiled(folder, seed=options.seed)


register(NmpTarget())
