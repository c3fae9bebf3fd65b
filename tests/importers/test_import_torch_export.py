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
from torch_models import ARCHITECTURES, decoder, export_module, export_onnx  # noqa: E402

from dnnmap.errors import InputFileError  # noqa: E402
import dnnmap  # noqa: E402
from dnnmap.workload import ops, zoo  # noqa: E402
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


SLOW_EXPORTS = {"vgg16"}  # 25 s and the suite's memory peak (a 489 MB file); its layer kinds are all in the others


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_EXPORTS else n
                                  for n in sorted(ARCHITECTURES)])
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


def test_conv_transpose_is_a_direct_convolution_over_the_zero_stuffed_input(tmp_path: Path) -> None:
    model = decoder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = export_module(model, (1, 3, 16, 16), str(tmp_path / "decoder.onnx"))
    result = import_model(path)
    conv, up1, up2 = result.network.layers
    # up1: 8x8 stuffed to 15x15 (a zero between pixels), padded by kernel - 1 - pad = 1 (+ output_padding 1 at the end)
    assert up1.op == ops.conv2d(up1.name, 8, 4, 15, 3, 1, (1, 1, 2, 2))
    # up2: 16x16 stuffed to 31x31, dilation 2: padded by 2 * (3 - 1) - 2 = 2; groups 2 of 2 -> 3 channels
    assert up2.op == ops.conv2d(up2.name, 4, 6, 31, 3, 1, 2, dilation=2, groups=2)
    with torch.no_grad():
        y1 = model[:3](torch.zeros(1, 3, 16, 16))
        y2 = model[3](y1)
    assert up1.output_shape == tuple(y1.shape) == (1, 4, 16, 16) and up1.fused == ("relu",)
    assert up2.output_shape == tuple(y2.shape) == (1, 6, 31, 31) and up2.inputs == (up1.name,)
    assert up1.op.macs == 4 * 8 * 16 * 16 * 3 * 3  # every output pixel sums a full 3x3 window, zeros included
    assert up2.op.macs == 6 * 2 * 31 * 31 * 3 * 3
    assert [s.node for s in result.report.zero_stuffed] == [up1.name, up2.name]
    assert any("lowered 2 transposed convolution(s)" in line and "inserted zeros" in line
               for line in result.report.lines())
    mapped = dnnmap.map_network(path, arch="eyeriss", budget=200)
    assert [(layer.layer, layer.macs) for layer in mapped.layers] == [
        (layer.name, layer.op.macs) for layer in result.network.layers]
    assert all(layer.cycles > 0 for layer in mapped.layers)
