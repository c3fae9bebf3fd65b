"""Which unit executes a layer's operations, and what they cost there (docs/arch-spec.md "vector").

MAC kinds (convolutions, matmuls, einsums, training passes) run on the MAC array. The other kinds
(pooling, element-wise, concat, softmax, norms, activations, rotary embeddings) run on the
architecture's ``vector`` unit, or on the MAC array, one operation per lane and cycle, when it declares
none. The cost model and the simulator both price a layer's operations through :func:`compute_unit`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.workload.ir import Operator
from dnnmap.workload.kinds import kind_of


@dataclass(frozen=True)
class ComputeUnit:
    """The unit running one layer: its lanes, energy per operation and bandwidth."""

    name: str  # "MAC array" or "vector unit"
    lanes: int
    energy: float  # per operation
    ops_per_iteration: int  # operations of one loop iteration (MAC kinds: 1)
    macs: bool  # the layer's operations are MACs
    words: int  # words of the layer's tensors (each input read once, the output written once)
    bandwidth: float | None  # words per cycle of the vector unit (None: unlimited)
    cycles: int = 1  # cycles per temporal step of a mapping (the MAC array's ``mac.cycles``; the vector unit 1)

    def least_cycles(self, operations: float) -> float:
        """Cycles the unit needs at least for ``operations`` (executed) operations: 0 for MACs (the mapping's
        temporal steps times ``cycles`` are the MAC array's cycles), else ``operations / lanes`` and, with a
        bandwidth, the layer's words / bandwidth. Compute cycles are the larger of this and the temporal steps
        times ``cycles`` (docs/cost-model.md section 3)."""
        if self.macs:
            return 0.0
        least = operations / self.lanes
        return least if self.bandwidth is None else max(least, self.words / self.bandwidth)


def compute_unit(op: Operator, arch: ArchSpec) -> ComputeUnit:
    """The unit that runs ``op`` on ``arch`` (module docstring)."""
    kind = kind_of(op)
    words = sum(t.size(op.bounds) for t in op.tensors)
    if kind is None or kind.macs:
        return ComputeUnit("MAC array", arch.num_macs, arch.mac.energy, 1, True, words, None, arch.mac.cycles)
    if arch.vector is None:
        return ComputeUnit("MAC array", arch.num_macs, arch.mac.energy, kind.ops, False, words, None,
                           arch.mac.cycles)
    vec = arch.vector
    return ComputeUnit("vector unit", vec.lanes, vec.energy, kind.ops, False, words, vec.bandwidth)
