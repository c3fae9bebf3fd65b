"""CNNs exported by ``torch.onnx.export(dynamo=True)`` (torch's default exporter since 2.9) import as their
TorchScript exports do: ``AdaptiveAvgPool2d(1)`` / ``AdaptiveMaxPool2d(1)`` become ``ReduceMean`` / ``ReduceMax``
over H and W (axes as an input, opset 18) instead of GlobalAveragePool / GlobalMaxPool; batch-norms come already
folded into the convolutions. torchvision is not a dependency: ResNet-18 and MobileNetV2 are the torch.nn
equivalents of ``torch_models`` (residual adds, depthwise convolutions, ReLU6)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch not installed; run: pip install torch==2.13.0")
pytest.importorskip("onnxscript", reason="torch.onnx.export(dynamo=True) needs: pip install onnxscript")

from network_compare import assert_same_network  # noqa: E402
from torch import nn  # noqa: E402
from torch_models import ARCHITECTURES, conv_bn, export_module  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from dnnmap.cli.main import app  # noqa: E402
from dnnmap.workload import zoo  # noqa: E402
from dnnmap.workload.importers import import_model, load_network  # noqa: E402


class SmallNet(nn.Module):
    """conv-bn-hardswish, a depthwise conv with ReLU6 and a residual add, then ``pool`` and a Linear classifier."""

    def __init__(self, pool: nn.Module) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, 1, act=nn.Hardswish)
        self.dw = conv_bn(16, 16, 3, 1, 1, groups=16, act=nn.ReLU6)
        self.head = nn.Sequential(pool, nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        return self.head(y + self.dw(y))


MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[int, int, int, int], str | None]] = {
    "small_avg": (lambda: SmallNet(nn.AdaptiveAvgPool2d(1)), (1, 3, 32, 32), None),
    "small_max": (lambda: SmallNet(nn.AdaptiveMaxPool2d(1)), (1, 3, 32, 32), None),
    "resnet18": (*ARCHITECTURES["resnet18"], "resnet18"),
    "mobilenetv2": (*ARCHITECTURES["mobilenetv2"], "mobilenetv2"),
}


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Path, Path]]:
    """(TorchScript export, dynamo export) of one module with the same weights, made once per test module."""
    folder = tmp_path_factory.mktemp("dynamo")
    cache: dict[str, tuple[Path, Path]] = {}

    def get(name: str) -> tuple[Path, Path]:
        if name not in cache:
            build, shape, _ = MODELS[name]
            torch.manual_seed(0)
            module = build()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated; dynamo prints its steps
                cache[name] = tuple(Path(export_module(module, shape, str(folder / f"{name}_{kind}.onnx"),
                                                       dynamo=kind == "dynamo"))
                                    for kind in ("torchscript", "dynamo"))
        return cache[name]

    return get


@pytest.mark.parametrize("name", list(MODELS))
def test_dynamo_export_imports_as_the_torchscript_one(exports: Callable[[str], tuple[Path, Path]], name: str) -> None:
    torchscript, dynamo = exports(name)
    reference, result = import_model(torchscript), import_model(dynamo)
    assert result.report.skipped == ()
    assert_same_network(result.network, reference.network)  # kinds, dims, shapes, fused ops, wiring and MACs
    pools = [layer for layer in result.network.layers if layer.op.kind.startswith("pool")]
    assert pools[-1].output_shape[2:] == (1, 1) and pools[-1].op.bounds["R"] > 1  # the global pool is kept
    zoo_name = MODELS[name][2]
    if zoo_name:
        assert_same_network(result.network, zoo.get(zoo_name))


@pytest.mark.parametrize("name", ["small_avg", "small_max", "resnet18", "mobilenetv2"])
def test_dynamo_export_imports_and_maps_through_the_cli(exports: Callable[[str], tuple[Path, Path]], name: str,
                                                       tmp_path: Path) -> None:
    """``dnnmap import`` then ``dnnmap map`` (no --skip-unsupported): every layer mapped, with its MACs."""
    _, dynamo = exports(name)
    runner = CliRunner()
    imported = runner.invoke(app, ["import", str(dynamo), "-o", str(tmp_path / "net.yaml")])
    assert imported.exit_code == 0, imported.output
    mapped = runner.invoke(app, ["map", str(tmp_path / "net.yaml"), "--arch", "eyeriss", "--mapper", "random",
                                 "--budget", "20", "--json", str(tmp_path / "map.json")])
    assert mapped.exit_code == 0, mapped.output
    layers = json.loads((tmp_path / "map.json").read_text())["layers"]
    net = load_network(tmp_path / "net.yaml")
    assert [(layer["name"], layer["macs"]) for layer in layers] == [(x.name, x.op.macs) for x in net.layers]
    assert all(layer["cycles"] > 0 for layer in layers)
    assert net.macs == load_network(exports(name)[0]).macs
