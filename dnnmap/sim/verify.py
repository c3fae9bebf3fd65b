"""``verify``: simulate a mapping and report the output check and the access-count table (``dnnmap verify``)."""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping
from dnnmap.sim.loopnest import SimResult, simulate
from dnnmap.sim.transfers import dram_transfers
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class VerifyReport:
    """The simulation and its printable summary; ``ok`` when the output is bit-exact and complete."""

    ok: bool
    text: str
    result: SimResult


def format_counts(result: SimResult, op: Operator, arch: ArchSpec) -> str:
    """One row per (level, tensor) with reads/fills/updates/drains/accumulate reads (docs/cost-model.md
    2, 2b), then per-level maxima and totals."""
    header = (f"{'level':<10} {'tensor':<8} {'reads':>10} {'fills':>10} {'updates':>10} {'drains':>10} "
              f"{'acc.reads':>10}")
    lines = [header, "-" * len(header)]
    for lv in reversed(arch.levels):
        for t in op.tensors:
            if (lv.name, t.name) in result.counts:
                c = result.counts[(lv.name, t.name)]
                lines.append(f"{lv.name:<10} {t.name:<8} {c.reads:>10} {c.fills:>10} {c.updates:>10} {c.drains:>10} "
                             f"{c.accumulate_reads:>10}")
    lines.append("")
    lines.append("max words in/out of one instance: "
                 + ", ".join(f"{lv.name} {result.max_instance_words(lv.name)}" for lv in arch.levels))
    if result.hop_words:
        lines.append("words through fan-outs: " + ", ".join(f"{k} {v}" for k, v in result.hop_words.items()))
    lines.append(f"lane-steps executed {result.macs} on {result.lanes} lanes, {result.temporal_steps} temporal steps, "
                 f"{len(dram_transfers(result))} DRAM transfers")
    return "\n".join(lines)


def verify(op: Operator, arch: ArchSpec, mapping: Mapping, seed: int = 0) -> VerifyReport:
    """Simulate ``mapping`` literally on random integer tensors and summarize the result."""
    result = simulate(op, arch, mapping, seed=seed)
    ok = bool(result.output_matches and result.iterations_exact)
    if ok:
        verdict = "output: bit-exact with the NumPy reference; every iteration executed once"
    else:
        verdict = (f"output: MISMATCH (bit-exact {result.output_matches}, "
                   f"each iteration exactly once {result.iterations_exact})")
    title = f"verify {op.name or 'layer'} ({op.kind}) on {arch.name}"
    return VerifyReport(ok, "\n".join([title, verdict, "", format_counts(result, op, arch)]), result)
