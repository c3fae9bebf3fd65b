"""The build backend: setuptools' own, plus, for an in-place install (``pip install -e .``), the cost kernel
compiled into numba's on-disk cache beside the sources, so the first ``dnnmap map`` loads it instead of
compiling it (issue 27: about 12 s of CPU moved from the first command to the install).

The compile runs :func:`dnnmap.cost.warmup.compile_kernels` in a fresh interpreter of the build environment
(``[build-system] requires`` lists what it imports). numba keys its cache on the source file, its own version,
the Python version and the CPU, so the cache is used only where those match the installed environment; where
they do not (or the compile fails), the first run compiles as before. A non-editable install (``pip install .``)
copies the sources elsewhere and gets no cache from here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - the backend's other hooks are setuptools' own

ROOT = Path(__file__).resolve().parents[1]
COMPILE = "from dnnmap.cost.warmup import compile_kernels; compile_kernels()"


def compile_kernel_cache() -> None:
    """Compile the Eyeriss kernel family into numba's cache beside the sources; a failure only warns."""
    path = os.environ.get("PYTHONPATH")  # pip's build environment reaches the child through it: keep it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *([path] if path else [])])}
    env.pop("NUMBA_CACHE_DIR", None)
    try:
        done = subprocess.run([sys.executable, "-c", COMPILE], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"dnnmap: the cost kernel was not compiled at install ({exc}); the first run compiles it",
              file=sys.stderr)
        return
    if done.returncode != 0:
        print("dnnmap: the cost kernel was not compiled at install; the first run compiles it:\n"
              + done.stderr[-2000:], file=sys.stderr)


def build_editable(wheel_directory: str, config_settings: dict | None = None,
                   metadata_directory: str | None = None) -> str:
    """setuptools' editable wheel, then the kernel cache (the wheel points at these sources)."""
    name = build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
    compile_kernel_cache()
    return name
