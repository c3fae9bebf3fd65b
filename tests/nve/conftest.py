"""Shared fixtures for the NVE target tests."""

from __future__ import annotations

import pytest

from dnnmap.targets.nve import CompileResult, compile_network
from dnnmap.targets.nve.compiler import CompiledLayer, build_program, compile_layer
from dnnmap.targets.nve.layers import ConvLayer, network_layers
from dnnmap.targets.nve.spec import DEFAULT_SPEC, NveSpec
from dnnmap.workload import zoo


@pytest.fixture(scope="session")
def spec() -> NveSpec:
    return DEFAULT_SPEC


@pytest.fixture(scope="session")
def filter3x3() -> ConvLayer:
    """The thesis's 3x3 filter benchmark (one input, one output map) on a 20x6 frame (two strips)."""
    return ConvLayer("filter3x3", 1, ((0,),), (3, 3), (1, 1), (20, 6))


@pytest.fixture(scope="session")
def programs3x3(filter3x3: ConvLayer, spec: NveSpec) -> dict[int, object]:
    return {lvl: build_program(filter3x3, (0,), spec, lvl) for lvl in range(3)}


@pytest.fixture(scope="session")
def face(tmp_path_factory: pytest.TempPathFactory) -> CompileResult:
    """The face detector compiled at level 3 for the full 1280x720 frame (shared: compiling takes seconds)."""
    return compile_network("nve_face", tmp_path_factory.mktemp("nve") / "face")


@pytest.fixture(scope="session")
def speed(spec: NveSpec) -> list[CompiledLayer]:
    """The speed-sign detector's layers compiled at level 3 for the full frame, in memory (compiling takes
    about ten seconds, so it is shared; the output directory round trip is tested with face and LeNet-5)."""
    return [compile_layer(ly, spec, 3) for ly in network_layers(zoo.get("nve_speed"), spec)[0]]
