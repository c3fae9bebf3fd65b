import pytest

from dnnmap.errors import InputFileError
from dnnmap.workload.importers import parse_input_shapes


def test_parse_input_shapes() -> None:
    assert parse_input_shapes(["input=1x3x224x224", "mask = 2X1"]) == {"input": (1, 3, 224, 224), "mask": (2, 1)}
    assert parse_input_shapes([]) == {}


@pytest.mark.parametrize("option, message", [
    ("1x3x224x224", "expected NAME=DIMS"), ("x=1x3xfoo", "expected NAME=DIMS"), ("x=", "expected NAME=DIMS"),
    ("x=1x0x4", "at least 1"),
])
def test_bad_input_shape_options(option: str, message: str) -> None:
    with pytest.raises(InputFileError, match=message):
        parse_input_shapes([option])


def test_duplicate_name() -> None:
    with pytest.raises(InputFileError, match="given twice"):
        parse_input_shapes(["x=1x2", "x=1x3"])
