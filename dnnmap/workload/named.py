"""Named tensor-algebra workloads: ``mttkrp:I=64,J=32,K=64,L=64``, ``ttmc:...`` and ``einsum:EXPR:sizes``.

Each spec resolves to a one-layer :class:`~dnnmap.workload.ir.Network` whose layer is an
``einsum`` operator (:func:`dnnmap.workload.ops.einsum`), so every mapper and the simulator
handle it like any other layer. The kernels (report seed 003, section 3.2, refs [25], [26]):

* **MTTKRP** (matricized tensor times Khatri-Rao product, the bottleneck of CP decomposition)::

      for i, k, l, j:  A[i, j] += B[i, k, l] * C[k, j] * D[l, j]      ("ikl,kj,lj->ij")

* **TTMC** (tensor-times-matrix chain, the bottleneck of Tucker decomposition)::

      for i, j, k, r, s:  A[i, r, s] += B[i, j, k] * C[j, r] * D[k, s]   ("ijk,jr,ks->irs")

* ``einsum:"ikl,kj,lj->ij":i=4,k=5,l=6,j=7`` - any contraction; the first operand has role
  input, the others weight, tensors ``T0, T1, ...`` and ``O``.

Sizes are ``NAME=INT`` pairs separated by commas, names case-insensitive; every index needs
exactly one size and no other name is accepted.
"""

from __future__ import annotations

import re

from dnnmap import limits
from dnnmap.errors import DnnmapError
from dnnmap.workload import ops
from dnnmap.workload.ir import Layer, Network

KERNELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mttkrp": ("ikl,kj,lj->ij", ("B", "C", "D", "A")),
    "ttmc": ("ijk,jr,ks->irs", ("B", "C", "D", "A")),
}
PREFIXES = (*KERNELS, "einsum")
_SPEC = re.compile(r"^\s*([A-Za-z]+)\s*:(.*)$", re.S)
_EINSUM = re.compile(r"^\s*[\"']?([^\"':]*)[\"']?\s*(?::(.*))?$", re.S)
_EXPR = re.compile(r"^[a-z]+(,[a-z]+)*->[a-z]+$")
EXAMPLES = "mttkrp:I=64,J=32,K=64,L=64, ttmc:I=16,J=16,K=16,R=8,S=8 or einsum:\"ik,kj->ij\":i=8,k=8,j=8"


def is_named_workload(model: str) -> bool:
    """True when ``model`` starts with a workload prefix (``mttkrp:``, ``ttmc:``, ``einsum:``)."""
    m = _SPEC.match(model)
    return bool(m) and m.group(1).lower() in PREFIXES


def spec_items(text: str, what: str, example: str) -> list[str]:
    """The comma-separated ``KEY=VALUE`` items of a spec, blanks around each removed; an empty item anywhere
    (a comma first, last or twice in a row, or nothing at all) is refused: ``what`` names the spec in the
    message, ``example`` shows a correct one."""
    items = [p.strip() for p in text.split(",")]
    if not all(items):
        where = "nothing after ':'" if items == [""] else "an empty item (a comma at the start or the end, or two " \
            "commas in a row)"
        raise DnnmapError(f"{what}: {where}; expected KEY=VALUE items separated by single commas, e.g. {example}")
    return items


def size_value(value: str) -> int:
    """The integer of a size written in ASCII digits (``int()`` would also take ``+8``, ``1_000`` and full-width
    digits); 0, which every size check refuses, for anything else."""
    return int(value) if re.fullmatch(r"[0-9]{1,7}", value) else 0


def _sizes(text: str, spec: str) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for item in spec_items(text, f"workload {spec!r}", EXAMPLES):
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not re.fullmatch(r"[A-Za-z]", name or ""):
            raise DnnmapError(f"workload {spec!r}: size {item!r} is not NAME=INT with a one-letter index name "
                              f"(e.g. {EXAMPLES})")
        size = size_value(value)
        if size < 1 or size > limits.MAX_DIM:
            raise DnnmapError(f"workload {spec!r}: size {item!r} must be an integer from 1 to {limits.MAX_DIM:,}")
        if name.lower() in sizes:
            raise DnnmapError(f"workload {spec!r}: index {name.upper()} is given twice")
        sizes[name.lower()] = size
    return sizes


def parse_workload(spec: str) -> Network:
    """The one-layer network of a named workload spec; :class:`DnnmapError` with the reason otherwise."""
    m = _SPEC.match(spec)
    if not m or m.group(1).lower() not in PREFIXES:
        raise DnnmapError(f"workload {spec!r}: expected one of {', '.join(p + ':' for p in PREFIXES)} "
                          f"(e.g. {EXAMPLES})")
    kind, rest = m.group(1).lower(), m.group(2)
    if kind == "einsum":
        e = _EINSUM.match(rest)
        if not e or not e.group(1).strip() or e.group(2) is None:
            raise DnnmapError(f"workload {spec!r}: expected einsum:EXPR:SIZES, e.g. einsum:\"ik,kj->ij\":i=8,k=8,j=8")
        expr, size_text, names, name = e.group(1).strip(), e.group(2), None, "einsum"
    else:
        (expr, names), size_text, name = KERNELS[kind], rest, kind
    compact = re.sub(r"\s", "", expr)
    if not _EXPR.match(compact):
        raise DnnmapError(f"workload {spec!r}: cannot parse the contraction {expr!r}; expected lower-case "
                          "operand indices and an output, e.g. 'ikl,kj,lj->ij'")
    operands, out = compact.split("->")
    if set(out) - set(operands):
        raise DnnmapError(f"workload {spec!r}: output indices {', '.join(sorted(set(out) - set(operands)))} "
                          f"appear in no operand of {expr!r}")
    sizes = _sizes(size_text, spec)
    letters = sorted(set(operands.replace(",", "")))
    missing = [c.upper() for c in letters if c not in sizes]
    unknown = [c.upper() for c in sizes if c not in letters]
    if missing or unknown:
        parts = ([f"missing sizes for {', '.join(missing)}"] if missing else []) + \
                ([f"unknown indices {', '.join(unknown)}"] if unknown else [])
        raise DnnmapError(f"workload {spec!r}: {'; '.join(parts)} (indices of {expr!r}: "
                          f"{', '.join(c.upper() for c in letters)})")
    try:
        op = ops.einsum(name, expr, sizes, names)
    except ValueError as err:
        raise DnnmapError(f"workload {spec!r}: {err}") from err
    if len(set(op.output.dims)) != len(op.output.axes) or any(len(set(t.dims)) != len(t.axes) for t in op.inputs):
        raise DnnmapError(f"workload {spec!r}: an index repeated within one operand (a diagonal) is not an "
                          "affine loop-nest access the IR supports")
    problem = limits.operator_problem(op.dims)
    if problem:
        raise DnnmapError(f"workload {spec!r}: {problem}")
    first = op.inputs[0]
    label = f"{name}({','.join(f'{d}={b}' for d, b in op.dims)})"
    layer = Layer(op, (first.name,), op.tensor_shape(op.output.name))
    return Network(label, (layer,), ((first.name, op.tensor_shape(first.name)),), "named",
                   (f"named workload {spec.strip()}: {op.attr('expr')}",))
