"""Real exports: torch.nn versions of the zoo architectures exported to ONNX and imported back.

Needs ``pip install torch==2.13.0`` (CPU wheel); skipped with that hint otherwise.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch not installed; run: pip install torch==2.13.0")

from network_compare import assert_same_network  # noqa: E402
from torch_models import ARCHITECTURES, export_onnx  # noqa: E402

from dnnmap.errors import InputFileError  # noqa: E402
from dnnmap.workload import zoo  # noqa: E402
from dnnmap.workload.importers import import_model, load_network, save_network  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Export each architecture once per test module (name -> .onnx path)."""
    folder = tmp_path_factory.mktemp("onnx")
    cache: dict[tuple[str, bool], Path] = {}

    def get(name: str, dynamic_batch: bool = False) -> Path:
        key = (name, dynamic_batch)
        if key not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the legacy TorchScript exporter warns that it is deprecated
                path = folder / f"{name}{'_dyn' if dynamic_batch else ''}.onnx"
                cache[key] = Path(export_onnx(name, str(path), dynamic_batch))
        return cache[key]

    return get


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_exported_architecture_matches_zoo(exported: Callable[..., Path], name: str) -> None:
    result = import_model(exported(name))
    assert_same_network(result.network, zoo.get(name))
    build, _ = ARCHITECTURES[name]
    with torch.device("meta"):
        n_batchnorms = sum(isinstance(m, torch.nn.BatchNorm2d) for m in build().modules())
    assert len(result.report.folded_batchnorms) == n_batchnorms
    assert result.report.skipped == ()


def test_dynamic_batch_export(exported: Callable[..., Path]) -> None:
    path = exported("resnet18", dynamic_batch=True)
    with pytest.raises(InputFileError, match=r"input 'input' has dynamic or unknown dimensions \(batch, 3, 224, 224\)"):
        load_network(path)
    net = load_network(path, input_shapes={"input": (4, 3, 224, 224)})
    assert_same_network(net, zoo.get("resnet18", batch=4))


def test_imported_inception_round_trips_through_yaml(exported: Callable[..., Path], tmp_path: Path) -> None:
    net = load_network(exported("inceptionv3"))
    assert load_network(save_network(net, tmp_path / "inception.yaml")) == net
