"""Which level and tensors make a priced mapping not fit: the words behind ``CostBatch.capacity_excess``."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec, Level
from dnnmap.cost.model import CostBatch
from dnnmap.workload.ir import Operator


def _capacity_words(level: Level, role: str) -> str:
    """``level``'s capacity for ``role``'s partition, with the buffering depth that divides it."""
    total = level.capacity.get(role, 0) if isinstance(level.capacity, dict) else level.capacity
    usable = level.capacity_for(role)
    return f"{usable:,.0f}" + (f" ({total:,} / {level.buffers} buffers)" if level.buffers > 1 else "")


def overflows(cost: CostBatch, op: Operator, arch: ArchSpec, b: int = 0) -> list[str]:
    """One line per capacity partition that mapping ``b`` of ``cost`` overfills: the level, the tensors kept in
    the partition with their words, and the capacity (in the level's unit, words or bits). Empty when it fits."""
    lines = []
    for i, level in enumerate(arch.levels):
        if cost.capacity_excess[b, i] <= 0 or level.capacity is None:
            continue
        unit = "bits" if level.capacity_unit == "bits" else "words"
        if i == len(arch.levels) - 1:  # a bounded backing store holds the whole tensors
            lines.append(f"level {level.name}: the whole tensors exceed its capacity "
                         f"{_capacity_words(level, 'input')} {unit} by {cost.capacity_excess[b, i]:,.0f}")
            continue
        parts: dict[str, list[int]] = {}
        for j, t in enumerate(op.tensors):
            if cost.tile_words[b, i, j] > 0:
                parts.setdefault(t.role if isinstance(level.capacity, dict) else "input", []).append(j)
        for role, tensors in parts.items():
            words = {j: float(cost.tile_words[b, i, j]) * arch.capacity_units_of(level, op.tensors[j].role)
                     for j in tensors}
            if sum(words.values()) <= level.capacity_for(role):
                continue
            kept = " + ".join(f"{op.tensors[j].name} ({op.tensors[j].role}) {w:,.0f}" for j, w in words.items())
            scope = f"{role} capacity" if isinstance(level.capacity, dict) else "capacity"
            total = f" = {sum(words.values()):,.0f}" if len(words) > 1 else ""
            lines.append(f"level {level.name}: {kept}{total} {unit} > {scope} "
                         f"{_capacity_words(level, role)}")
    return lines
