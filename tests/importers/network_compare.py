"""Compare an imported network with a zoo network up to layer names and topological order."""

from __future__ import annotations

from collections import Counter

from dnnmap.workload.ir import Layer, Network


def layer_signature(layer: Layer) -> tuple:
    return (layer.op.kind, layer.op.dims, layer.output_shape, layer.fused)


def signatures(net: Network) -> Counter:
    return Counter(layer_signature(layer) for layer in net.layers)


def edge_signatures(net: Network) -> Counter:
    """Multiset of (producer signature, consumer signature) pairs: the DAG's wiring, names aside."""
    sig = {name: ("input", shape) for name, shape in net.inputs}
    sig.update({layer.name: layer_signature(layer) for layer in net.layers})
    return Counter((sig[src], sig[dst]) for src, dst in net.edges())


def assert_same_network(imported: Network, reference: Network) -> None:
    only_imported = signatures(imported) - signatures(reference)
    only_reference = signatures(reference) - signatures(imported)
    assert not only_imported and not only_reference, (
        f"layers differ: only imported {list(only_imported.items())[:3]}, only zoo {list(only_reference.items())[:3]}")
    assert edge_signatures(imported) == edge_signatures(reference)
    assert imported.macs == reference.macs
    assert [shape for _, shape in imported.inputs] == [shape for _, shape in reference.inputs]
