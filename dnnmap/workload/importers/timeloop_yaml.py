"""Reading Timeloop and Accelergy YAML files: tags kept as data, errors that name the file and field.

Timeloop's inputs are YAML files whose top-level keys (``architecture``, ``problem``, ``mapping``,
``ERT``, ``architecture_constraints``...) may be spread over several files. v0.4 files tag their
nodes (``!Component``, ``!Container``); :func:`load_timeloop_files` keeps a tag as the key ``"!"``
of the tagged mapping. :class:`Where` carries the file and field path into every error message.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dnnmap.errors import InputFileError
from dnnmap.fileio import StrictLoader, parse_yaml, read_text
from dnnmap.workload.ir import Role

TAG_KEY = "!"
_RANGE = re.compile(r"\[\s*(\d+)\s*\.\.\s*(\d+)\s*\]\s*$")
_ANY_RANGE = re.compile(r"\[\s*\d+\s*\.\.\s*\d+\s*\]")
SUPPORTED_VERSIONS = ("0.2", "0.3", "0.4")


class _TaggedLoader(StrictLoader):
    """The strict loader (docs/robustness.md: depth, size, integer and alias limits, duplicate keys) that also
    accepts any ``!Tag`` and records it instead of failing."""


def _construct_tagged(loader: StrictLoader, suffix: str, node: yaml.Node) -> object:
    if isinstance(node, yaml.MappingNode):
        data = loader.construct_mapping(node, deep=True)
        return {**data, TAG_KEY: suffix}
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_TaggedLoader.add_multi_constructor("!", _construct_tagged)


@dataclass(frozen=True)
class Where:
    """A position in an input file, for error messages: ``file: field 'a.b[2].c'``."""

    file: str
    path: str = ""

    def __truediv__(self, key: object) -> "Where":
        if isinstance(key, int):
            return Where(self.file, f"{self.path}[{key}]")
        return Where(self.file, f"{self.path}.{key}" if self.path else str(key))

    def error(self, message: str) -> InputFileError:
        field = f" field '{self.path}':" if self.path else ""
        return InputFileError(f"{self.file}:{field} {message}")


def load_timeloop_files(paths: Sequence[str | Path]) -> tuple[dict[str, Any], dict[str, str]]:
    """Parse ``paths`` and merge their top-level keys; returns the data and, per key, its file."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for raw in paths:
        path = Path(raw)
        text = read_text(path, "Timeloop YAML file")
        try:
            data = parse_yaml(text, str(path), loader=_TaggedLoader)  # the strict loader's limits
        except InputFileError as err:
            if "not valid YAML" in str(err) and ("{%" in text or "{{" in text):
                raise InputFileError(f"{path}: a Jinja2 template ({{% ... %}} / {{{{ ... }}}}), not YAML: render it "
                                     "first, or give Timeloop's parsed-processed-input.yaml from its output "
                                     "directory") from err
            raise
        if data is None:
            continue
        if not isinstance(data, dict):
            raise InputFileError(f"{path}: a Timeloop input file must be a mapping of top-level keys "
                                 "(architecture, problem, mapping, ERT, ...)")
        for key, value in data.items():
            key = str(key)
            if isinstance(value, dict) and "version" in value:
                check_version(value["version"], Where(str(path), f"{key}.version"))
            if key in merged:
                raise InputFileError(f"{path}: top-level key '{key}' is also given in {origin[key]}")
            merged[key], origin[key] = value, str(path)
    return merged, origin


def check_version(value: object, where: Where) -> None:
    """A section's ``version``: one of :data:`SUPPORTED_VERSIONS` (``0.4`` or ``'0.4'``, also ``0.4.2``)."""
    text = str(value) if isinstance(value, (str, float, int)) and not isinstance(value, bool) else ""
    if ".".join(text.split(".")[:2]) not in SUPPORTED_VERSIONS:
        raise where.error(f"unsupported version {value!r}; supported: {', '.join(SUPPORTED_VERSIONS)}")


def mapping_at(value: object, where: Where) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"expected a mapping, got {type(value).__name__}")
    return value


def list_at(value: object, where: Where) -> list[Any]:
    if not isinstance(value, list):
        raise where.error(f"expected a list, got {type(value).__name__}")
    return value


def names_at(value: object, where: Where) -> tuple[str, ...]:
    """A list of names (a single name is accepted too)."""
    if isinstance(value, str):
        return (value,)
    items = list_at(value, where)
    if not all(isinstance(v, str) for v in items):
        raise where.error("expected a list of names")
    return tuple(items)


def leaf_name(path: str) -> str:
    """The last component of a dotted ERT name, index ranges dropped: ``"A.PE[0..15].RF[0..3]"`` -> ``"RF"``."""
    return _ANY_RANGE.sub("", path).split(".")[-1].strip()


def base_name(name: str) -> tuple[str, int]:
    """``"RegisterFile[0..15]"`` -> ``("RegisterFile", 16)``; a name without a range has 1 instance."""
    m = _RANGE.search(name)
    if not m:
        return name.strip(), 1
    lo, hi = int(m.group(1)), int(m.group(2))
    return name[:m.start()].strip(), max(hi - lo + 1, 1)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv}


def number(value: object, where: Where, scope: dict[str, Any] | None = None, depth: int = 0) -> float:
    """A number, or an arithmetic expression over numbers and other attributes of ``scope``
    (Accelergy allows ``width: word_width * n_words``)."""
    if isinstance(value, bool):
        raise where.error(f"expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or depth > 8:
        raise where.error(f"expected a number, got {value!r}")
    try:
        tree = ast.parse(value.strip(), mode="eval")
    except SyntaxError as err:
        raise where.error(f"cannot read {value!r} as a number or arithmetic expression") from err

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            try:
                return float(_OPS[type(node.op)](walk(node.left), walk(node.right)))
            except ZeroDivisionError as err:
                raise where.error(f"division by zero in {value!r}") from err
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.Name) and scope is not None and node.id in scope:
            return number(scope[node.id], where, scope, depth + 1)
        raise where.error(f"cannot evaluate {value!r}: only numbers, + - * / and attribute names are supported")

    return walk(tree.body)


def integer(value: object, where: Where, scope: dict[str, Any] | None = None, low: int | None = None,
            high: int | None = None) -> int:
    """An integer (or an attribute expression worth one, :func:`number`) within ``low``..``high`` when given."""
    x = number(value, where, scope)
    if x != int(x):
        raise where.error(f"expected an integer, got {value!r}")
    if (low is not None and x < low) or (high is not None and x > high):
        bounds = f"at least {low:,}" if high is None else f"in {low if low is not None else '-inf'}..{high:,}"
        raise where.error(f"must be an integer {bounds}, got {value!r}")
    return int(x)


def plain_integer(value: object, where: Where, low: int, high: int) -> int:
    """A YAML integer in ``low``..``high``: no string (``'4'``), float or boolean (problem bounds and
    coefficients, where Timeloop takes integers only)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise where.error(f"expected an integer, got {value!r} ({type(value).__name__})")
    if not low <= value <= high:
        raise where.error(f"must be in {low:,}..{high:,}, got {value:,}")
    return value


_ROLE_WORDS: tuple[tuple[Role, tuple[str, ...]], ...] = (
    ("weight", ("weight", "filter", "kernel")),
    ("output", ("output", "psum", "ofmap", "result")),
    ("input", ("input", "ifmap", "activation")),
)


def role_from_name(name: str) -> Role | None:
    """The role a data-space name suggests (``Weights`` -> weight), None when it suggests none."""
    low = name.lower()
    for role, words in _ROLE_WORDS:
        if any(w in low for w in words):
            return role
    return None
