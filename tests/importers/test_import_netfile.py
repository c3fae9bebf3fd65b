"""The project's own network file: exact round trips of every zoo network, readable layout, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dnnmap.errors import InputFileError
from dnnmap.workload import zoo
from dnnmap.workload.importers import load_network, save_network
from dnnmap.workload.importers.netfile import dumps


@pytest.mark.parametrize("name", zoo.names())
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_zoo_round_trip(tmp_path: Path, name: str, suffix: str) -> None:
    net = zoo.get(name, batch=2)
    path = save_network(net, tmp_path / f"{name}{suffix}")
    assert load_network(path) == net
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # the temp file was renamed, nothing left over


def test_yaml_is_readable() -> None:
    text = dumps(zoo.get("resnet18"))
    assert "format: dnnmap-network" in text
    assert "  dims: {N: 1, G: 1, K: 64, C: 3, P: 112, Q: 112, R: 7, S: 7}" in text
    assert "  - {name: I, role: input, axes: [N, G, C, H=2*P+R, W=2*Q+S]}" in text


def _write(tmp_path: Path, mutate) -> Path:
    data = yaml.safe_load(dumps(zoo.get("lenet5")))
    mutate(data)
    path = tmp_path / "net.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["layers"][1]["dims"].update(K="many"), r"layers\[1\]\.dims\.K: Input should be a valid integer"),
    (lambda d: d["layers"][0].update(colour="red"), r"layers\[0\]\.colour: Extra inputs are not permitted"),
    (lambda d: d.update(format="other"), r"format: Input should be 'dnnmap-network'"),
    (lambda d: d["layers"][2].update(inputs=["nowhere"]), r"layer 'conv2' reads 'nowhere', which is not defined"),
    (lambda d: d["layers"][0]["tensors"][0].update(axes=["H=2*P+"]), r"layers\[0\] \(conv1\)\.tensors\.I: cannot "
                                                                       r"parse axis 'H=2\*P\+'"),
    (lambda d: d["layers"][0]["tensors"][0].update(axes=["H=P+Z"]), r"tensor I uses unknown dimension Z"),
    (lambda d: d["layers"][0]["dims"].update(P=0), r"dims\.P: Input should be greater than or equal to 1"),
])
def test_invalid_netfile_errors(tmp_path: Path, mutate, message: str) -> None:
    path = _write(tmp_path, mutate)
    with pytest.raises(InputFileError, match=message) as info:
        load_network(path)
    assert str(path) in str(info.value)


def test_not_yaml_and_bad_suffix(tmp_path: Path) -> None:
    path = tmp_path / "net.yaml"
    path.write_text("layers: [unclosed\n")
    with pytest.raises(InputFileError, match=r"net.yaml: not valid YAML") as info:
        load_network(path)
    assert isinstance(info.value.__cause__, yaml.YAMLError)  # the parser's exception stays chained
    with pytest.raises(InputFileError, match=r"network files must end in .yaml"):
        save_network(zoo.get("lenet5"), tmp_path / "net.txt")
    with pytest.raises(InputFileError, match=r"net.yaml: cannot write into .*missing_dir \(No such file"):
        save_network(zoo.get("lenet5"), tmp_path / "missing_dir" / "net.yaml")
