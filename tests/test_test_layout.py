"""The test tree itself: pytest imports test modules by basename (no packages), so two test files
with one name in different folders break collection in a clean checkout."""

from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique() -> None:
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []
