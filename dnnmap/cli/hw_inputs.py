"""Inputs shared by ``dnnmap generate-hw`` and ``dnnmap sweep``: the networks (passes, densities) and
the options they share."""

from __future__ import annotations

from dnnmap.api import resolve_network
from dnnmap.workload.ir import Network
from dnnmap.workload.sparsity import apply_densities, parse_density_options
from dnnmap.workload.training import parse_passes, training_network

DENSITY_HELP = ("KEY=VALUE: density (share of non-zeros) of a tensor (W, dO, ...) or role (weights, activations) "
                "in every layer; repeatable; priced by the core's sparse model (docs/sparse.md)")


def networks_of(models: list[str], passes: str, density: list[str] | None) -> list[Network]:
    """The models resolved, expanded to the training ``passes`` and given the ``--density`` values."""
    chosen = parse_passes(passes)
    densities = parse_density_options(density or [])
    return [apply_densities(training_network(resolve_network(m), chosen), densities) for m in models]
