"""Test-only helpers (tests/support: the random case generator) are importable from every test folder.

``DNNMAP_TEST_MEMORY_LOG=FILE`` (opt-in) appends the test runner's resident memory (``VmRSS``) and peak
(``VmHWM``) after each test module to FILE: how the suite's memory was measured (docs/architecture.md,
"Test-suite memory").
"""

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "support"))

MEMORY_LOG = os.environ.get("DNNMAP_TEST_MEMORY_LOG")
START = time.monotonic()


def _status_mb(key: str) -> int:
    """A ``/proc/self/status`` memory line (``VmRSS``, ``VmHWM``) in MB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith(f"{key}:"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """With ``DNNMAP_TEST_MEMORY_LOG``, one line per test module once its last test has run."""
    yield
    if MEMORY_LOG and (nextitem is None or nextitem.path != item.path):
        with open(MEMORY_LOG, "a") as log:
            log.write(f"{time.monotonic() - START:8.1f} s  rss {_status_mb('VmRSS'):6d} MB  "
                      f"peak {_status_mb('VmHWM'):6d} MB  {item.path.relative_to(item.config.rootpath)}\n")
