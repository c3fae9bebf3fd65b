"""What an import did to the source graph, and the error listing every unsupported operator."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from dnnmap.errors import InputFileError


@dataclass(frozen=True)
class SourceOp:
    """One node of the source model: its name and its framework op type (``Conv``, ``Conv2D``)."""

    node: str
    op_type: str


@dataclass(frozen=True)
class FoldedNode:
    """A source node merged into a layer of the imported network (batch-norm, pad, activation)."""

    node: str
    op_type: str
    into: str


@dataclass(frozen=True)
class ImportReport:
    """Summary of the graph clean-up: what was skipped, folded, fused, lowered and removed."""

    source: str
    skipped: tuple[SourceOp, ...] = ()
    bridged: tuple[str, ...] = ()  # consumers reading, past a skipped node, a tensor of another size (one line each)
    folded_batchnorms: tuple[FoldedNode, ...] = ()
    folded_pads: tuple[FoldedNode, ...] = ()
    fused_activations: tuple[FoldedNode, ...] = ()
    removed: tuple[SourceOp, ...] = ()  # reshape/flatten/identity/dropout/... (no loop-nest meaning)
    assumptions: tuple[str, ...] = ()  # e.g. an unspecified Keras batch taken as 1
    folded_biases: tuple[FoldedNode, ...] = ()  # TensorFlow BiasAdd (ONNX and Keras convolutions carry their bias)
    zero_stuffed: tuple[SourceOp, ...] = ()  # transposed convolutions lowered to direct ones over stuffed inputs

    def lines(self) -> tuple[str, ...]:
        """Human-readable summary, one fact per line (the CLI prints these)."""
        out = [f"imported from {self.source}", *self.assumptions]
        if self.skipped:
            out.append(f"skipped {len(self.skipped)} unsupported node(s): {_by_type(self.skipped)}")
            out.extend(self.bridged)
        if self.folded_batchnorms:
            pairs = _first([f"{f.node}->{f.into}" for f in self.folded_batchnorms])
            out.append(f"folded {len(self.folded_batchnorms)} batch-norm(s) into convolutions: {pairs}")
        if self.folded_biases:
            out.append(f"folded {len(self.folded_biases)} bias add(s) into their convolutions / FC layers")
        if self.folded_pads:
            out.append(f"folded {len(self.folded_pads)} pad node(s) into the padding of their consumers")
        if self.fused_activations:
            kinds = Counter(f.op_type for f in self.fused_activations)
            desc = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
            out.append(f"fused {len(self.fused_activations)} element-wise op(s) into their producers: {desc}")
        if self.zero_stuffed:
            out.append(f"lowered {len(self.zero_stuffed)} transposed convolution(s) to direct convolutions over their "
                       "zero-stuffed inputs; their MACs include the multiplications by the inserted zeros: "
                       + _first([s.node for s in self.zero_stuffed]))
        if self.removed:
            out.append(f"removed {len(self.removed)} layout/no-op node(s): {_by_type(self.removed, names=False)}")
        return tuple(out)


def _first(names: list[str], limit: int = 5) -> str:
    return ", ".join(names[:limit]) + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _by_type(items: tuple[SourceOp, ...], names: bool = True) -> str:
    groups: dict[str, list[str]] = {}
    for item in items:
        groups.setdefault(item.op_type, []).append(item.node)
    parts = []
    for op_type in sorted(groups):
        nodes = groups[op_type]
        if names:
            parts.append(f"{op_type} x{len(nodes)} ({_first(nodes)})")
        else:
            parts.append(f"{op_type} x{len(nodes)}")
    return "; ".join(parts)


class UnsupportedOperatorsError(InputFileError):
    """The model uses operators the importer cannot express; lists every one with node names and counts."""

    def __init__(self, path: str, unsupported: tuple[SourceOp, ...], supported: tuple[str, ...]) -> None:
        self.path = path
        self.unsupported = unsupported
        total = len(unsupported)
        kinds = len({u.op_type for u in unsupported})
        super().__init__(
            f"{path}: {total} node(s) of {kinds} unsupported operator type(s): {_by_type(unsupported)}. "
            f"Supported operators: {', '.join(supported)}. "
            "Pass --skip-unsupported (skip_unsupported=True) to drop them and import the rest."
        )
