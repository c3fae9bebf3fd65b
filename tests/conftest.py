"""Test-only helpers (tests/support: the random case generator) are importable from every test folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "support"))
