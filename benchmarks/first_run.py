"""CPU cost of the README's first command, cold (numba's kernel cache empty) and warm, and on a fresh install.

Run: ``python benchmarks/first_run.py [MODEL] [--arch ARCH] [--fresh-install]``. Runs ``dnnmap map MODEL --arch
ARCH`` (default ``resnet18`` on ``eyeriss``) twice in fresh interpreters with ``NUMBA_CACHE_DIR`` pointing at a
new empty folder: the first run compiles the cost kernel (cold), the second loads it from that cache
(warm). The project's own cache (``__pycache__`` next to the kernels) is not touched. Prints the CPU
seconds (user + system of the child process) and the wall seconds of each run, and the goal (8 s CPU).

``--fresh-install`` measures the README's first line as a new user runs it: a clone of the committed HEAD in a
temporary folder, a new virtual environment, ``pip install -e .`` (which compiles the kernel into numba's cache,
install/backend.py; packages come from pip's cache where it has them), then the command."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_CPU_SECONDS = 8.0


def timed(command: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None,
          exit_code: int = 0) -> tuple[float, float]:
    """CPU (user + system of the child process) and wall seconds of ``command``; stops when it does not end with
    ``exit_code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != exit_code:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}, expected {exit_code}:\n{done.stderr[-3000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def timed_run(args: list[str], cache: Path | None = None, exit_code: int = 0) -> tuple[float, float]:
    """CPU and wall seconds of one ``dnnmap`` run in a fresh interpreter using the kernel cache ``cache`` (None:
    numba's usual one); stops when the run does not end with ``exit_code``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           **({"NUMBA_CACHE_DIR": str(cache)} if cache is not None else {})}
    return timed([sys.executable, "-m", "dnnmap.cli.main", *args], env=env, exit_code=exit_code)


def fresh_install(command: list[str]) -> None:
    """The README's first line in a new clone and virtual environment: install, then the first command."""
    with tempfile.TemporaryDirectory(prefix="dnnmap-fresh-") as tmp:
        clone, venv = Path(tmp) / "dnnmap", Path(tmp) / "venv"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        cpu, wall = timed([str(venv / "bin" / "pip"), "install", "-q", "-e", "."], clone)
        print(f"pip install -e . (fresh venv, kernel compiled into numba's cache): {cpu:.1f} s CPU, {wall:.1f} s wall")
        cpu, wall = timed([str(venv / "bin" / "dnnmap"), *command], Path(tmp))
        print(f"then dnnmap {' '.join(command)}: {cpu:.1f} s CPU, {wall:.1f} s wall "
              f"(goal {GOAL_CPU_SECONDS:g} s CPU: {'met' if cpu <= GOAL_CPU_SECONDS else 'not met'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="resnet18")
    parser.add_argument("--arch", default="eyeriss")
    parser.add_argument("--fresh-install", action="store_true", help="clone, new venv, pip install -e ., then run")
    args = parser.parse_args()
    command = ["map", args.model, "--arch", args.arch]
    if args.fresh_install:
        fresh_install(command)
        return
    with tempfile.TemporaryDirectory(prefix="dnnmap-numba-") as cache:
        for label in ("cold (empty kernel cache)", "warm (cached kernel)"):
            cpu, wall = timed_run(command, Path(cache))
            print(f"dnnmap {' '.join(command)}, {label}: {cpu:.1f} s CPU, {wall:.1f} s wall "
                  f"(goal {GOAL_CPU_SECONDS:g} s CPU: {'met' if cpu <= GOAL_CPU_SECONDS else 'not met'})")


if __name__ == "__main__":
    main()
