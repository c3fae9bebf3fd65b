"""The NVE target in the registry (:mod:`dnnmap.targets.registry`): `dnnmap compile --target nve`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dnnmap.targets.nve import CompileResult, IssRunResult, compile_network, run_compiled
from dnnmap.targets.nve.artifacts import FORMAT
from dnnmap.targets.registry import CompileOptions, SimulateOptions, register
from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class NveTarget:
    """VLIW programs for the Neuro Vector Engine, run on its instruction-set simulator (docs/nve.md)."""

    name: str = "nve"
    description: str = "Neuro Vector Engine: VLIW programs per layer, instruction-set simulator"
    manifest_format: str = FORMAT
    source_suffixes: tuple[str, ...] = (".xml",)
    compile_options: frozenset[str] = frozenset({"spec", "opt_level", "skip_unsupported"})
    simulate_options: frozenset[str] = frozenset({"seed", "full_frame"})
    option_hints: dict[str, str] = field(default_factory=lambda: {
        "arch": "the NVE machine is described by --spec SPEC.yaml (docs/nve.md section 2)"})

    def compile(self, network: Network | Path, out_dir: Path, options: CompileOptions) -> CompileResult:
        """Compile ``network`` (or an NVE XML description) at ``--opt-level`` (default 3) with ``--spec``."""
        level = 3 if options.opt_level is None else options.opt_level
        return compile_network(network, out_dir, options.spec, level, options.skip_unsupported)

    def simulate(self, folder: Path, options: SimulateOptions) -> IssRunResult:
        """Run ``folder`` on the ISS (a reduced frame unless ``full_frame``)."""
        return run_compiled(folder, full_frame=options.full_frame, seed=options.seed)


register(NveTarget())
