"""Shared TSO fixtures: the NMP preset, its TSO machine, and the machine with the constants fitted to TSO Fig. 1."""

from __future__ import annotations

import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.search.tso.machine import FIG1_BANDWIDTH_GBPS, FIG1_CAS_NS, TsoMachine


@pytest.fixture(scope="session")
def nmp() -> ArchSpec:
    return load_arch("nmp")


@pytest.fixture(scope="session")
def fig1_machine(nmp: ArchSpec) -> TsoMachine:
    return TsoMachine.from_arch(nmp).with_dram(FIG1_BANDWIDTH_GBPS, FIG1_CAS_NS)
