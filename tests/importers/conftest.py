import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

OPTIONAL = {"torch": "pip install torch==2.13.0", "keras": "pip install 'dnnmap[keras]'"}


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's reporter object
    """Say which importer test modules were skipped and how to enable them, even under ``-q``."""
    missing = [f"{name} ({hint})" for name, hint in OPTIONAL.items() if importlib.util.find_spec(name) is None]
    if missing:
        terminalreporter.write_line(f"importer tests skipped for missing optional packages: {'; '.join(missing)}")
