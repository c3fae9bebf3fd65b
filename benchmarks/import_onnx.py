"""Time ONNX import of the standard CNNs (target: ResNet-50 under 1 s).

Usage: python benchmarks/import_onnx.py [MODEL.onnx ...]
Without arguments, exports the torch.nn architectures of tests/importers/torch_models.py
(needs ``pip install torch==2.13.0``) to a temporary folder and times those.
Prints, per model: file size, median/min wall time of ``import_model`` over 5 runs,
layer count and MACs.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from dnnmap.workload.importers import import_model

REPEATS = 5


def time_import(path: Path) -> None:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = import_model(path)
        times.append(time.perf_counter() - start)
    net = result.network
    print(f"{path.stem:15s} {path.stat().st_size / 2**20:8.1f} MiB  median {statistics.median(times):6.3f} s  "
          f"min {min(times):6.3f} s  {len(net.layers):4d} layers  {net.macs / 1e9:7.3f} GMAC  "
          f"{len(result.report.folded_batchnorms):3d} BN folded", flush=True)


def exported_models(folder: Path) -> list[Path]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "importers"))
    from torch_models import ARCHITECTURES, export_onnx

    paths = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ARCHITECTURES:
            paths.append(Path(export_onnx(name, str(folder / f"{name}.onnx"))))
    return paths


def main() -> None:
    print(f"{'model':15s} {'file':>12s}  import time over {REPEATS} runs")
    if len(sys.argv) > 1:
        for arg in sys.argv[1:]:
            time_import(Path(arg))
        return
    with tempfile.TemporaryDirectory() as tmp:
        for path in exported_models(Path(tmp)):
            time_import(path)


if __name__ == "__main__":
    main()
