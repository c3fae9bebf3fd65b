"""Loop-order trie built innermost-out with Sunstone's two pruning rules (RTML Sec. 3.2.3-3.2.6, Fig. 8).

A node fixes the innermost loops of one level's inter-tile order (``suffix``, innermost
first). Its *signature* is the reuse it buys: per tensor, the dimensions along which
consecutive child tiles reuse that tensor. Our executable reading of Observations 1-3 (the
report's definitions are lost in its text; docs/search.md):

* a loop ``d`` placed directly outside the fixed suffix reuses tensor ``t`` when ``d`` is a
  full- or partial-reuse dimension of ``t`` and every loop already inside is a *full*-reuse
  dimension of ``t`` (an indexing or sliding-window loop inside breaks the run, Observation 1);
* **rule 1 (no further reuse)**: a child that adds nothing to its parent's signature is never
  generated; its subtree cannot add reuse either (every tensor still unblocked is indexed by
  the new loop, so it blocks them all: Observation 2);
* **rule 2 (sibling dominance, Observation 3)**: leaves with equal signatures keep one (2i);
  a leaf whose signature is contained in another's, tensor by tensor, is dropped (2ii);
* orders whose signatures are incomparable are all kept (conservative: e.g. ``..RK`` and
  ``..PK`` reuse the input across different window dimensions; which wins depends on bounds).

The loops outside a kept suffix do not change reuse (Observation 2) and are placed outside in
the operator's dimension order. These rules are **lossy** for the cost model: it also counts
halo reuse across a window loop that sits outside another window loop, which the trie ignores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from dnnmap.search.sunstone.reuse import ReuseKind, reuse_table
from dnnmap.workload.ir import Operator

Signature = frozenset[tuple[str, str]]  # (tensor, dim) pairs reused across consecutive tiles


@dataclass(frozen=True)
class OrderNode:
    suffix: tuple[str, ...]  # innermost first
    signature: Signature

    def label(self, width: int) -> str:
        """Fig. 8 style: ``xxCR`` = R innermost, C next, two loops free."""
        return "x" * (width - len(self.suffix)) + "".join(reversed(self.suffix))

    def reused(self) -> dict[str, frozenset[str]]:
        out: dict[str, set[str]] = {}
        for t, d in self.signature:
            out.setdefault(t, set()).add(d)
        return {t: frozenset(ds) for t, ds in out.items()}


@dataclass
class TrieResult:
    """Leaves kept, and every node generated or pruned on the way (for tests and statistics)."""

    kept: list[OrderNode]
    generated: list[OrderNode] = field(default_factory=list)
    pruned_no_reuse: list[tuple[str, ...]] = field(default_factory=list)  # rule 1 (never expanded)
    pruned_duplicate: list[OrderNode] = field(default_factory=list)  # rule 2(i)
    pruned_dominated: list[OrderNode] = field(default_factory=list)  # rule 2(ii)

    def full_orders(self, dims: tuple[str, ...]) -> list[tuple[str, ...]]:
        """Complete orders, outermost first: the free loops in ``dims`` order, then the suffix."""
        return [tuple(d for d in dims if d not in n.suffix) + tuple(reversed(n.suffix)) for n in self.kept]


def _adds(kinds: dict[str, dict[str, ReuseKind]], suffix: tuple[str, ...], d: str) -> Signature:
    """Reuse a loop ``d`` adds directly outside ``suffix``."""
    return frozenset((t, d) for t, per in kinds.items()
                     if per[d] is not ReuseKind.INDEX and all(per[e] is ReuseKind.FULL for e in suffix))


def build_trie(op: Operator, dims: tuple[str, ...] | None = None) -> TrieResult:
    """Grow the trie over ``dims`` (default: all of ``op``'s) innermost-out and apply both rules."""
    dims = tuple(op.dim_names if dims is None else dims)
    kinds = reuse_table(op)
    result = TrieResult(kept=[])
    leaves: list[OrderNode] = []
    stack = [OrderNode((), frozenset())]
    while stack:
        node = stack.pop()
        children = []
        for d in dims:
            if d in node.suffix:
                continue
            added = _adds(kinds, node.suffix, d)
            if not added:
                result.pruned_no_reuse.append(node.suffix + (d,))
                continue
            children.append(OrderNode(node.suffix + (d,), node.signature | added))
        result.generated.extend(children)
        if children:
            stack.extend(reversed(children))
        elif node.suffix:
            leaves.append(node)
    seen: dict[Signature, OrderNode] = {}
    for leaf in leaves:
        if leaf.signature in seen:
            result.pruned_duplicate.append(leaf)
        else:
            seen[leaf.signature] = leaf
    unique = list(seen.values())
    for leaf in unique:
        if any(leaf.signature < other.signature for other in unique):
            result.pruned_dominated.append(leaf)
        else:
            result.kept.append(leaf)
    if not result.kept:  # no loop reuses anything (e.g. one dimension): any order is as good
        result.kept.append(OrderNode(dims[-1:], frozenset()))
    return result


@lru_cache(maxsize=4096)
def _cached(op: Operator, dims: tuple[str, ...]) -> TrieResult:
    return build_trie(op, dims)


def order_candidates(op: Operator, dims: tuple[str, ...]) -> TrieResult:
    """Cached :func:`build_trie` over the non-trivial loops ``dims`` of one level."""
    return _cached(op, tuple(dims))
