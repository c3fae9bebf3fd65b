"""The user's search options, one value passed from every entry point (CLI, API, fusion, hwgen, sweep) to the
mapper that runs: ``SearchOptions(budget=2000, seed=1, imperfect=0.15)``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from dnnmap import limits
from dnnmap.search.constraints import Constraints

DEFAULT_BUDGET = 50_000  # random samples per layer (ResNet-50 on Eyeriss: ~5 s, docs/search.md)
DEFAULT_WASTE = 0.15  # --imperfect: a dimension's factors may pad it by up to 15% (docs/search.md)
DEFAULT_BUDGET_SECONDS = 60.0  # optimal mapper: seconds per layer before it stops with a certified gap


@dataclass(frozen=True)
class SearchOptions:
    """How hard and where to search; each mapper reads the fields it understands.

    ``budget``/``seed``: the random mapper's samples per layer and seed. ``budget_seconds``: the optimal
    mapper's time per layer (None: no limit). ``imperfect``: factors may pad each dimension by up to this
    fraction of its bound (imperfect factorization; None: exact factors). ``tile_first``: Sunstone also walks
    the tile-first order. ``exhaustive_limit``: ``auto`` enumerates spaces up to this many mappings
    (the ``exhaustive`` mapper: up to the larger of this and 5e6). ``constraints``: the map space's
    constraints (a dataflow, docs/search.md "Constraints"); the auto, exhaustive and random mappers walk the
    constrained space. ``placement``: the space also holds every per-tensor placement (``--placement``; the
    auto, exhaustive and random mappers, like constraints)."""

    budget: int = DEFAULT_BUDGET
    seed: int = 0
    budget_seconds: float | None = DEFAULT_BUDGET_SECONDS
    imperfect: float | None = None
    tile_first: bool = False
    exhaustive_limit: float = 2e5
    constraints: Constraints = field(default_factory=Constraints)
    placement: bool = False

    def space_constraints(self) -> Constraints:
        """The constraints the map space is walked under: the user's, with ``imperfect`` as the allowed padding
        and ``placement`` (or the constraints') widening it to per-tensor placements."""
        return replace(self.constraints, waste=self.imperfect, placement=self.constraints.placement or self.placement)

    def check(self) -> None:
        """Refuse budgets, seeds and time limits the mappers cannot honour (dnnmap.limits), naming the option."""
        limits.check_budget(self.budget)
        limits.check_seed(self.seed)
        if self.budget_seconds is not None:
            limits.check_range(self.budget_seconds, 0, 1e6, "--budget-seconds",
                               "at most 1e6 seconds (11.6 days) per layer")
        if self.imperfect is not None:
            limits.check_range(self.imperfect, 0, 1, "--imperfect", "a padding fraction from 0 to 1")
