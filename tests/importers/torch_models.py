"""Compact torch.nn definitions of the zoo's architectures (same variants as docs/zoo.md), for export tests.

Each builder returns an ``nn.Module`` with batch-norms where the original networks have them, so the ONNX export carries BatchNormalization
nodes for the importer to fold. Only imported inside tests that have torch.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


def conv_bn(cin: int, cout: int, k: int | tuple[int, int], stride: int = 1, pad: int | tuple[int, int] = 0,
            groups: int = 1, act: type[nn.Module] | None = nn.ReLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([act()] if act else []))


# ---- ResNet (v1.5: stride on the 3x3 conv of bottlenecks) ---------------------------
class Residual(nn.Module):
    def __init__(self, cin: int, mid: int, cout: int, stride: int, bottleneck: bool) -> None:
        super().__init__()
        if bottleneck:
            self.body = nn.Sequential(conv_bn(cin, mid, 1), conv_bn(mid, mid, 3, stride, 1),
                                      conv_bn(mid, cout, 1, act=None))
        else:
            self.body = nn.Sequential(conv_bn(cin, cout, 3, stride, 1), conv_bn(cout, cout, 3, 1, 1, act=None))
        self.shortcut = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet(blocks: tuple[int, ...], bottleneck: bool) -> nn.Module:
    expansion = 4 if bottleneck else 1
    layers: list[nn.Module] = [conv_bn(3, 64, 7, 2, 3), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, count in enumerate(blocks):
        mid = 64 * 2 ** stage
        for i in range(count):
            layers.append(Residual(cin, mid, mid * expansion, 2 if i == 0 and stage else 1, bottleneck))
            cin = mid * expansion
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000))


# ---- MobileNetV2 ---------------------------------------------------------------------
class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        expand_layers = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        self.body = nn.Sequential(*expand_layers, conv_bn(hidden, hidden, 3, stride, 1, hidden, nn.ReLU6),
                                  conv_bn(hidden, cout, 1, act=None))
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


def mobilenetv2() -> nn.Module:
    settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))
    layers: list[nn.Module] = [conv_bn(3, 32, 3, 2, 1, act=nn.ReLU6)]
    cin = 32
    for t, c, n, s in settings:
        for i in range(n):
            layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    return nn.Sequential(*layers, conv_bn(cin, 1280, 1, act=nn.ReLU6), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Dropout(0.2), nn.Linear(1280, 1000))


# ---- VGG16 (plain stack, no batch-norm) ----------------------------------
def vgg16() -> nn.Module:
    layers: list[nn.Module] = []
    cin = 3
    for width, convs in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(convs):
            layers += [nn.Conv2d(cin, width, 3, padding=1), nn.ReLU()]
            cin = width
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(),
                         nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, 1000))


# ---- SqueezeNet ----------------------------------------------------------------------
class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU())
        self.e1 = nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU())
        self.e3 = nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.squeeze(x)
        return torch.cat([self.e1(s), self.e3(s)], 1)


def squeezenet(version: str) -> nn.Module:
    def pool() -> nn.Module:
        return nn.MaxPool2d(3, 2, ceil_mode=True)
    fires = [(16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256)]
    pool_after = (0, 3, 7) if version == "1_0" else (0, 2, 4)  # pool before fire2 and after these fire indices
    stem = nn.Conv2d(3, 96, 7, 2) if version == "1_0" else nn.Conv2d(3, 64, 3, 2)
    layers: list[nn.Module] = [stem, nn.ReLU(), pool()]
    cin = 96 if version == "1_0" else 64
    for i, (sq, ex) in enumerate(fires, start=1):
        layers.append(Fire(cin, sq, ex))
        cin = 2 * ex
        if i in pool_after[1:]:
            layers.append(pool())
    return nn.Sequential(*layers, nn.Dropout(), nn.Conv2d(512, 1000, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten())


# ---- InceptionV3 (torchvision layout, no auxiliary classifier, 299 input) -------------
class Branches(nn.Module):
    """Parallel branches concatenated on channels; each branch is a list of layers."""

    def __init__(self, *branches: list[nn.Module]) -> None:
        super().__init__()
        self.branches = nn.ModuleList(nn.Sequential(*b) for b in branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([b(x) for b in self.branches], 1)


class SplitBranches(nn.Module):
    """A stem followed by two parallel heads whose outputs are concatenated (InceptionE's 1x3 / 3x1 split)."""

    def __init__(self, stem: list[nn.Module], heads: tuple[nn.Module, nn.Module]) -> None:
        super().__init__()
        self.stem, self.heads = nn.Sequential(*stem), nn.ModuleList(heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.stem(x)
        return torch.cat([h(s) for h in self.heads], 1)


def _avg_branch(cin: int, cout: int) -> list[nn.Module]:
    return [nn.AvgPool2d(3, 1, 1), conv_bn(cin, cout, 1)]


def inception_a(cin: int, pool_features: int) -> nn.Module:
    return Branches([conv_bn(cin, 64, 1)], [conv_bn(cin, 48, 1), conv_bn(48, 64, 5, pad=2)],
                    [conv_bn(cin, 64, 1), conv_bn(64, 96, 3, pad=1), conv_bn(96, 96, 3, pad=1)],
                    _avg_branch(cin, pool_features))


def inception_c(cin: int, c7: int) -> nn.Module:
    return Branches([conv_bn(cin, 192, 1)],
                    [conv_bn(cin, c7, 1), conv_bn(c7, c7, (1, 7), pad=(0, 3)), conv_bn(c7, 192, (7, 1), pad=(3, 0))],
                    [conv_bn(cin, c7, 1), conv_bn(c7, c7, (7, 1), pad=(3, 0)), conv_bn(c7, c7, (1, 7), pad=(0, 3)),
                     conv_bn(c7, c7, (7, 1), pad=(3, 0)), conv_bn(c7, 192, (1, 7), pad=(0, 3))],
                    _avg_branch(cin, 192))


def inception_e(cin: int) -> nn.Module:
    def split(stem: list[nn.Module], c: int) -> SplitBranches:
        return SplitBranches(stem, (conv_bn(c, 384, (1, 3), pad=(0, 1)), conv_bn(c, 384, (3, 1), pad=(1, 0))))
    return Branches([conv_bn(cin, 320, 1)], [split([conv_bn(cin, 384, 1)], 384)],
                    [split([conv_bn(cin, 448, 1), conv_bn(448, 384, 3, pad=1)], 384)], _avg_branch(cin, 192))


def inceptionv3() -> nn.Module:
    stem = [conv_bn(3, 32, 3, 2), conv_bn(32, 32, 3), conv_bn(32, 64, 3, pad=1), nn.MaxPool2d(3, 2),
            conv_bn(64, 80, 1), conv_bn(80, 192, 3), nn.MaxPool2d(3, 2)]
    mixed_6a = Branches([conv_bn(288, 384, 3, 2)],
                        [conv_bn(288, 64, 1), conv_bn(64, 96, 3, pad=1), conv_bn(96, 96, 3, 2)], [nn.MaxPool2d(3, 2)])
    mixed_7a = Branches([conv_bn(768, 192, 1), conv_bn(192, 320, 3, 2)],
                        [conv_bn(768, 192, 1), conv_bn(192, 192, (1, 7), pad=(0, 3)),
                         conv_bn(192, 192, (7, 1), pad=(3, 0)), conv_bn(192, 192, 3, 2)], [nn.MaxPool2d(3, 2)])
    return nn.Sequential(*stem, inception_a(192, 32), inception_a(256, 64), inception_a(288, 64), mixed_6a,
                         inception_c(768, 128), inception_c(768, 160), inception_c(768, 160), inception_c(768, 192),
                         mixed_7a, inception_e(1280), inception_e(2048), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Dropout(), nn.Linear(2048, 1000))


# zoo name -> (builder, input shape)
ARCHITECTURES: dict[str, tuple[Callable[[], nn.Module], tuple[int, int, int, int]]] = {
    "resnet18": (lambda: resnet((2, 2, 2, 2), bottleneck=False), (1, 3, 224, 224)),
    "resnet50": (lambda: resnet((3, 4, 6, 3), bottleneck=True), (1, 3, 224, 224)),
    "mobilenetv2": (mobilenetv2, (1, 3, 224, 224)),
    "vgg16": (vgg16, (1, 3, 224, 224)),
    "squeezenet1_0": (lambda: squeezenet("1_0"), (1, 3, 224, 224)),
    "squeezenet1_1": (lambda: squeezenet("1_1"), (1, 3, 224, 224)),
    "inceptionv3": (inceptionv3, (1, 3, 299, 299)),
}


def decoder() -> nn.Module:
    """An upsampling decoder: transposed convolutions with output_padding, groups and dilation."""
    return nn.Sequential(conv_bn(3, 8, 3, 2, 1),
                         nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
                         nn.ConvTranspose2d(4, 6, 3, stride=2, padding=2, groups=2, dilation=2))


def export_module(model: nn.Module, shape: tuple[int, ...], path: str, dynamic_batch: bool = False,
                  dynamo: bool = False) -> str:
    """Export ``model`` (eval mode, input named ``input``) with the TorchScript exporter, keeping batch-norms, or
    with ``dynamo`` the ``torch.export`` one (torch's default since 2.9; it needs the onnxscript package)."""
    dynamic_axes = {"input": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model.eval(), (torch.zeros(shape),), path, dynamo=dynamo, input_names=["input"],
                      output_names=["logits"], do_constant_folding=False, dynamic_axes=dynamic_axes)
    return path


def export_onnx(name: str, path: str, dynamic_batch: bool = False) -> str:
    """Export the zoo-named architecture with uninitialised weights (only shapes matter)."""
    build, shape = ARCHITECTURES[name]
    with torch.device("meta"):
        model = build()
    return export_module(model.to_empty(device="cpu"), shape, path, dynamic_batch)
