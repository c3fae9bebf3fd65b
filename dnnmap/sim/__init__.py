"""Reference simulator: executes a mapping's loop nest literally (docs/cost-model.md sections 1, 2, 2b)
and derives the costs from what it counted (section 3).

It is the independent check of the analytical cost model and must not import ``dnnmap.cost``.
"""

from dnnmap.sim.loopnest import AccessCounts, SimResult, simulate
from dnnmap.sim.metrics import SimMetrics, sim_metrics
from dnnmap.sim.reference import reference_output
from dnnmap.sim.transfers import DramTransfer, dram_bursts, dram_transfers
from dnnmap.sim.verify import VerifyReport, verify

__all__ = ["AccessCounts", "DramTransfer", "SimMetrics", "SimResult", "VerifyReport", "dram_bursts", "dram_transfers",
           "reference_output", "sim_metrics", "simulate", "verify"]
