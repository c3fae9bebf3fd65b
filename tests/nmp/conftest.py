"""Shared fixtures of the NMP target tests: LeNet-5 and a small ResNet-style network, compiled once."""

from __future__ import annotations

import pytest

from dnnmap.targets.nmp.compiler import NmpCompiled, compile_nmp
from dnnmap.workload import zoo
from nmp_networks import tiny_resnet


@pytest.fixture(scope="session")
def lenet() -> NmpCompiled:
    return compile_nmp(zoo.get("lenet5"))


@pytest.fixture(scope="session")
def resnet() -> NmpCompiled:
    """The ResNet-style network with a batch norm after every convolution (folded before quantization)."""
    return compile_nmp(tiny_resnet(), batchnorm=True, seed=3)
