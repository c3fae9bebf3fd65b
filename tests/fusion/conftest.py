"""Fixtures shared by the fusion tests: one fused search that several modules check from different sides."""

from __future__ import annotations

import pytest
from nets import vgg16_e_prefix

from dnnmap.arch.spec import load_arch
from dnnmap.fusion.network import FusionResult, fuse_network


@pytest.fixture(scope="session")
def vgg_prefix_fused() -> FusionResult:
    """``auto`` fusion (groups of up to 3 layers, energy) of the VGG16-E prefix (32x32 maps, 8 channels) on
    hwff_config1, searched once for test_search, test_bound and test_trace (FusionResult is frozen)."""
    return fuse_network(vgg16_e_prefix(size=32, widths=(8, 8, 8)), load_arch("hwff_config1"), "auto", 3, "energy")
