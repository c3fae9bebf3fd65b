"""Architectures several tests share."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec, load_arch


def eyeriss_without_hops() -> ArchSpec:
    """The Eyeriss preset with free fan-out hops: the architecture written for both dnnmap and AccelForge in
    their side-by-side comparison (AccelForge's spec has no network component)."""
    data = load_arch("eyeriss").model_dump()
    data["levels"][1]["fanout"]["hop_energy"] = 0.0
    return ArchSpec.model_validate(data)
