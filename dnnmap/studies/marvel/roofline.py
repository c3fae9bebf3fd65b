"""The roofline bound of one layer on a platform (Marvel Sec. 4.2, Fig. 8's "attainable" throughput).

The paper plots an attainable throughput without its definition (digest gap 8); ours is the
classical roofline over every roof the platform declares: a layer needs at least

* ``compute``: iterations / PEs cycles (one MAC, add or comparison per PE per cycle);
* ``ingress``: (input + weight words) / the L2-to-PE network's ingress words per cycle (every
  operand word read crosses the NoC at least once; multicast sends it once);
* ``egress``: output words / the egress words per cycle (reduction sends each output once);
* ``dram``: the compulsory DRAM bytes (every tensor once) / DRAM bytes per cycle.

Words are the distinct elements the layer touches (:func:`touched_words`: a stride-2 1x1
window reads a quarter of its input's interval hull). The attainable throughput is iterations /
the largest of these, in iterations per cycle. The NoC roofs are Marvel's "NoC bandwidth x
arithmetic intensity" with the intensity of Table 2's first column (MACs per input and weight word).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.space import touched_lower
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class Roofline:
    """The four roofs of one layer, in cycles."""

    iterations: int
    roofs: tuple[tuple[str, float], ...]  # (name, cycles) for compute, ingress, egress, dram

    @property
    def cycles(self) -> float:
        return max(c for _, c in self.roofs)

    @property
    def bound(self) -> str:
        """The roof that binds."""
        return max(self.roofs, key=lambda r: r[1])[0]

    @property
    def throughput(self) -> float:
        """Attainable iterations per cycle."""
        return self.iterations / self.cycles


def dram_bytes_per_cycle(arch: ArchSpec) -> float:
    """The DRAM's bytes per cycle: its transfer bandwidth at the clock, else its word bandwidth; inf if none."""
    dram = arch.dram
    if dram.transfer is not None:
        return dram.transfer.bandwidth_gbps * 1e9 / (arch.clock_mhz * 1e6)
    if dram.bandwidth is not None:
        return dram.bandwidth * arch.bytes_of("input")
    return math.inf


def touched_words(op: Operator, tensor: str) -> int:
    """Distinct elements of ``tensor`` the layer reads or writes: the core's count of the words a tile touches
    (:func:`~dnnmap.search.space.touched_lower`) over the whole layer, exact there (one range per dimension)."""
    whole = np.array([[b for _, b in op.dims]], dtype=np.int64)
    return int(touched_lower(op, whole, contiguous=True)[0, op.tensors.index(op.tensor(tensor))])


def roofline(op: Operator, arch: ArchSpec) -> Roofline:
    """The roofs of ``op`` on ``arch`` (module docstring); a network without a bandwidth is no roof."""
    pes = math.prod(lv.fanout.size for lv in arch.levels if lv.fanout) or 1
    words = {role: 0 for role in ("input", "weight", "output")}
    dram_bytes = 0.0
    for t in op.tensors:
        n = touched_words(op, t.name)
        words[t.role] += n
        dram_bytes += n * arch.bytes_of(t.role)
    ingress = egress = 0.0
    for lv in arch.levels:
        if lv.fanout is None:
            continue
        if lv.fanout.ingress_bandwidth:
            ingress = max(ingress, (words["input"] + words["weight"]) / lv.fanout.ingress_bandwidth)
        if lv.fanout.egress_bandwidth:
            egress = max(egress, words["output"] / lv.fanout.egress_bandwidth)
    roofs = (("compute", op.iterations / pes), ("ingress", ingress), ("egress", egress),
             ("dram", dram_bytes / dram_bytes_per_cycle(arch)))
    return Roofline(op.iterations, roofs)
