"""The package's top level loads lazily: reading the IR does not pay for the search, the compiled cost
kernel or numba (each test runs a fresh interpreter, since this one has imported everything already)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import dnnmap

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numba", "dnnmap.api", "dnnmap.cost.kernel", "dnnmap.search.network")


def _loaded_after(statement: str) -> list[str]:
    """The modules of ``HEAVY`` a fresh interpreter has loaded after running ``statement``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    probe = f"import sys; {statement}; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_importing_the_ir_does_not_load_numba_or_the_search() -> None:
    assert _loaded_after("import dnnmap.workload.ir, dnnmap.workload.ops, dnnmap.arch.spec") == []


def test_map_network_loads_the_api_on_first_use() -> None:
    assert _loaded_after("import dnnmap; dnnmap.map_network") == list(HEAVY)


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    assert "map_network" in dir(dnnmap)
    with pytest.raises(AttributeError, match="no_such_name"):
        dnnmap.no_such_name  # noqa: B018 - the attribute access is the test
