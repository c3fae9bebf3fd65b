"""Clean-up passes on a :class:`SourceGraph`, shared by the front ends.

Order (see :func:`clean_up`): remove no-op layout nodes, fold explicit pads into the
padding of the consuming convolution/pooling, list (or skip) unsupported operators,
fold bias adds, then batch-norms, into the preceding convolution (TSO's transform step), fuse
activations and other unary element-wise ops into their producer when that producer
has no other consumer (otherwise they stay as an ``identity`` element-wise layer), and
merge a concat that only feeds another concat into it (Keras InceptionV3 nests them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dnnmap.workload.importers.graph import SourceGraph, SourceNode
from dnnmap.workload.importers.report import FoldedNode, ImportReport, SourceOp, UnsupportedOperatorsError

WINDOW_OPS = ("conv", "pool")
FOLD_TARGETS = ("conv", "fc", "matmul")
LINEAR = ("conv", "fc", "matmul", "einsum")  # a scale of one operand is a scale of the output
UNFOLDED_FUNCTION = {"bias": "bias_add", "batchnorm": "batchnorm"}


@dataclass(frozen=True)
class CleanedGraph:
    graph: SourceGraph
    report: ImportReport


def clean_up(graph: SourceGraph, supported: tuple[str, ...], skip_unsupported: bool = False) -> CleanedGraph:
    """Run every pass; raise :class:`UnsupportedOperatorsError` listing all unsupported nodes unless skipping."""
    graph, removed = remove_passthrough(graph)
    graph, pads = fold_pads(graph)
    graph, skipped, bridged = drop_unsupported(graph, supported, skip_unsupported)
    graph, biases = fold_into_producers(graph, "bias")
    graph, bns = fold_into_producers(graph, "batchnorm")
    graph, fused = fuse_unary(graph)
    graph, gated = merge_gated_units(graph)
    graph, merged = merge_nested_concats(graph)
    zero_stuffed = tuple(SourceOp(n.name, n.source_op) for n in graph.nodes if "stuffed_hw" in n.attrs)
    report = ImportReport(graph.path, skipped=skipped, bridged=bridged, folded_batchnorms=bns, folded_pads=pads,
                          fused_activations=fused, removed=removed + merged + gated, assumptions=graph.notes,
                          folded_biases=biases, zero_stuffed=zero_stuffed)
    return CleanedGraph(graph, report)


def _rewire(nodes: list[SourceNode], old: str, new: str) -> list[SourceNode]:
    return [n.with_(inputs=tuple(new if s == old else s for s in n.inputs)) if old in n.inputs else n
            for n in nodes]


def _rewire_outputs(graph: SourceGraph, old: str, new: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(new if o == old else o for o in graph.outputs))


def _bypass(graph: SourceGraph, node: SourceNode) -> SourceGraph:
    """Remove ``node``; its consumers read its first input instead (its output shape is their input shape)."""
    nodes = [n for n in graph.nodes if n.name != node.name]
    if node.inputs:
        nodes = _rewire(nodes, node.name, node.inputs[0])
        outputs = _rewire_outputs(graph, node.name, node.inputs[0])
    else:
        nodes = [n.with_(inputs=tuple(s for s in n.inputs if s != node.name),
                         input_shapes=tuple(sh for s, sh in zip(n.inputs, n.input_shapes) if s != node.name))
                 for n in nodes]
        outputs = tuple(o for o in graph.outputs if o != node.name)
    return replace(graph, nodes=tuple(nodes), outputs=outputs)


def remove_passthrough(graph: SourceGraph) -> tuple[SourceGraph, tuple[SourceOp, ...]]:
    removed = []
    for node in [n for n in graph.nodes if n.op == "passthrough"]:
        graph = _bypass(graph, graph_node(graph, node.name))
        removed.append(SourceOp(node.name, node.source_op))
    return graph, tuple(removed)


def graph_node(graph: SourceGraph, name: str) -> SourceNode:
    return next(n for n in graph.nodes if n.name == name)


def _producer(graph: SourceGraph, node: SourceNode) -> SourceNode | None:
    """The node computing ``node``'s first input; ``None`` for a graph input or no input."""
    return next((n for n in graph.nodes if node.inputs and n.name == node.inputs[0]), None)


def fold_pads(graph: SourceGraph) -> tuple[SourceGraph, tuple[FoldedNode, ...]]:
    """Add each pad's border to the padding of its consumers (all must be conv/pool, none a transposed conv);
    else mark it unsupported."""
    folded = []
    for name in [n.name for n in graph.nodes if n.op == "pad"]:
        pad = graph_node(graph, name)
        users = graph.consumers().get(name, [])
        if not users or name in graph.outputs or any(u.op not in WINDOW_OPS for u in users):
            reason = "not followed by convolution or pooling"
        elif any("stuffed_hw" in u.attrs for u in users):
            reason = "before a transposed convolution"
        else:
            reason = ""
        nodes = []
        for n in graph.nodes:
            if n.name == name and reason:
                n = n.with_(op="unsupported", source_op=f"{n.source_op} ({reason})")
            elif n.name == name:
                continue
            elif n.name in {u.name for u in users}:
                padding = tuple(a + b for a, b in zip(n.attrs["padding"], pad.attrs["padding"]))
                shapes = tuple(pad.input_shapes[0] if s == name else sh for s, sh in zip(n.inputs, n.input_shapes))
                n = n.with_(attrs={**n.attrs, "padding": padding}, input_shapes=shapes)
                folded.append(FoldedNode(name, pad.source_op, n.name))
            nodes.append(n)
        graph = graph.with_nodes(nodes if reason else _rewire(nodes, name, pad.inputs[0]))
    return graph, tuple(folded)


def drop_unsupported(graph: SourceGraph, supported: tuple[str, ...],
                     skip: bool) -> tuple[SourceGraph, tuple[SourceOp, ...], tuple[str, ...]]:
    """Raise :class:`UnsupportedOperatorsError` listing every unsupported node, or with ``skip`` bypass them:
    (graph, the skipped nodes, one note per consumer that then reads a tensor of another size)."""
    bad = tuple(SourceOp(n.name, n.source_op) for n in graph.nodes if n.op == "unsupported")
    if not bad:
        return graph, (), ()
    if not skip:
        raise UnsupportedOperatorsError(graph.path, bad, supported)
    bridged = _size_changes(graph, {item.node for item in bad})
    for item in bad:
        graph = _bypass(graph, graph_node(graph, item.node))
    return graph, bad, bridged


def _size_changes(graph: SourceGraph, dropped: set[str]) -> tuple[str, ...]:
    """One line per consumer that, once the ``dropped`` nodes are bypassed (to their first input, through other
    dropped nodes), reads a tensor whose number of elements differs from its own input's (a skipped reduction,
    resize, concat or slice): its loop nest keeps the input shape the file declares, its producer writes another."""
    by_name = {n.name: n for n in graph.nodes}
    written = {**dict(graph.inputs), **{n.name: n.output_shape for n in graph.nodes}}
    lines = []
    for consumer in (n for n in graph.nodes if n.name not in dropped):
        for src, read in zip(consumer.inputs, consumer.input_shapes):
            source = src
            while source in dropped and by_name[source].inputs:
                source = by_name[source].inputs[0]
            if source == src or source in dropped or not read or not written.get(source):
                continue  # not through a dropped node, no input left to read, or a shape unknown (lower() says so)
            if math.prod(read) != math.prod(written[source]):
                lines.append(f"after skipping {src!r}, {consumer.name!r} reads {source!r} {list(written[source])} "
                             f"but its loop nest keeps its input {list(read)} from the file: the sizes differ and "
                             "the skipped work is not counted")
    return tuple(lines)


def fold_into_producers(graph: SourceGraph, op: str) -> tuple[SourceGraph, tuple[FoldedNode, ...]]:
    """Fold each ``op`` node (``bias`` or ``batchnorm``) into its producing conv/fc/matmul when that producer feeds
    nothing else and has no fused activation yet.

    Folding changes the producer's weights and bias only; shapes and MACs are unchanged, so
    the IR only loses the node. One that cannot be folded becomes a unary element-wise op
    (``bias_add`` / ``batchnorm``) and may then fuse into its producer like an activation.
    """
    folded = []
    for node in [n for n in graph.nodes if n.op == op]:
        consumers = graph.consumers()
        producer = _producer(graph, node)
        if (producer is not None and producer.op in FOLD_TARGETS and not producer.fused
                and len(consumers.get(producer.name, [])) == 1 and producer.name not in graph.outputs):
            graph = _bypass(graph, graph_node(graph, node.name))
            folded.append(FoldedNode(node.name, node.source_op, producer.name))
        else:
            nodes = [n.with_(op="eltwise_unary", attrs={"function": UNFOLDED_FUNCTION[op]}) if n.name == node.name
                     else n for n in graph.nodes]
            graph = graph.with_nodes(nodes)
    return graph, tuple(folded)


def fuse_unary(graph: SourceGraph) -> tuple[SourceGraph, tuple[FoldedNode, ...]]:
    """Move each unary element-wise op onto its producer's ``fused`` list when the producer has one consumer; a
    scale by one constant whose producer has several consumers moves onto its only consumer when that is linear
    (conv, fc, matmul, einsum: ViT's ``q * scale`` before QK^T)."""
    fused = []
    for op in [n for n in graph.nodes if n.op == "eltwise_unary"]:
        current = graph_node(graph, op.name)
        consumers = graph.consumers()
        producer = _producer(graph, current)
        function = current.attrs["function"]
        users = consumers.get(current.name, [])
        if producer is not None and len(consumers.get(producer.name, [])) == 1 and producer.name not in graph.outputs:
            merged, source = producer.with_(fused=producer.fused + (function,) + current.fused), producer.name
        elif (current.attrs.get("scalar") and not current.fused and len(users) == 1 and users[0].op in LINEAR
              and current.name not in graph.outputs and current.inputs):
            # a constant scale of one operand of a linear layer is the same scale of its output
            merged, source = users[0].with_(fused=(function,) + users[0].fused), current.inputs[0]
        else:
            continue  # stays an element-wise (identity) layer carrying the function
        nodes = [merged if n.name == merged.name else n for n in graph.nodes if n.name != current.name]
        graph = replace(graph, nodes=tuple(_rewire(nodes, current.name, source)),
                        outputs=_rewire_outputs(graph, current.name, source))
        fused.append(FoldedNode(current.name, function, merged.name))
    return graph, tuple(fused)


def merge_gated_units(graph: SourceGraph) -> tuple[SourceGraph, tuple[SourceOp, ...]]:
    """``silu(gate) * up`` (a product of a silu layer feeding only it and another tensor) is one ``swiglu`` layer
    reading the gate's and the up-projection's producers (Llama's MLP)."""
    merged = []
    for name in [n.name for n in graph.nodes if n.op == "mul" and len(n.inputs) == 2]:
        mul = graph_node(graph, name)
        consumers = graph.consumers()
        gates = [n for n in graph.nodes if n.name in mul.inputs and n.op == "vector" and n.attrs["kind"] == "silu"
                 and len(consumers.get(n.name, [])) == 1 and n.name not in graph.outputs and not n.fused]
        if not gates or mul.input_shapes[0] != mul.input_shapes[1]:
            continue
        gate = gates[0]
        up = next(src for src in mul.inputs if src != gate.name)
        swiglu = mul.with_(op="vector", attrs={"kind": "swiglu"}, inputs=(gate.inputs[0], up),
                           input_shapes=(gate.input_shapes[0], mul.input_shapes[mul.inputs.index(up)]))
        graph = graph.with_nodes([swiglu if n.name == name else n for n in graph.nodes if n.name != gate.name])
        merged.append(SourceOp(gate.name, f"{gate.source_op} (merged into swiglu {name})"))
    return graph, tuple(merged)


def merge_nested_concats(graph: SourceGraph) -> tuple[SourceGraph, tuple[SourceOp, ...]]:
    """Splice a concat whose only consumer is a concat into that consumer's inputs (same channel order)."""
    merged = []
    for name in [n.name for n in graph.nodes if n.op == "concat"]:
        inner = graph_node(graph, name)
        users = graph.consumers().get(name, [])
        if len(users) != 1 or users[0].op != "concat" or inner.fused or name in graph.outputs:
            continue
        outer = users[0]
        inputs, shapes = [], []
        for src, shape in zip(outer.inputs, outer.input_shapes):
            inputs += inner.inputs if src == name else [src]
            shapes += inner.input_shapes if src == name else [shape]
        spliced = outer.with_(inputs=tuple(inputs), input_shapes=tuple(shapes))
        graph = graph.with_nodes([spliced if n.name == outer.name else n for n in graph.nodes if n.name != name])
        merged.append(SourceOp(name, f"{inner.source_op} (merged into {outer.name})"))
    return graph, tuple(merged)
