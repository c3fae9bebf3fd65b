"""Semantic checks of operators and networks, whatever their source (network file, importer, mapping file).

A schema only says that a layer has dims, tensors and attributes; it does not say that they
describe the operation the ``kind`` names. :func:`operator_problem` rebuilds an operator from
its kind and attributes with the constructors of :mod:`dnnmap.workload.ops` and compares the
loop nest (a convolution relabelled ``pool_max`` would cost a convolution's cycles with 0 MACs;
a convolution without its weight tensor would not read weights). :func:`validate_network`
then follows the shapes through the graph: every layer must read what its producers write
(channels, feature-map size, element-wise operands, FC input features) and write the shape it
declares. What a kind's constructed form is (loop dimensions, attributes, weights, inputs) comes
from the kind table, :data:`dnnmap.workload.kinds.KINDS`: an operator that carries constructor
attributes must have its kind's dimensions and attributes (a convolution relabelled ``matmul`` is
refused, naming the layer). Operators without constructor attributes (Timeloop problems,
hand-written einsums) get the generic checks: known kind, weights for MAC kinds, tensor sizes
equal to their producers'.
"""

from __future__ import annotations

import math

from dnnmap import limits
from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.workload import ops, training
from dnnmap.workload.ir import Network, Operator
from dnnmap.workload.kinds import CONSTRUCTOR_ATTRS, KINDS, OperatorKind, kind_of
from dnnmap.workload.sparsity import DENSITIES, check_tensor_density

ALL_KINDS = (*KINDS, *training.DERIVED_KINDS)


class _Bad(ValueError):
    pass


def _ints(value: object, n: int, what: str, minimum: int | None = 1) -> tuple[int, ...]:
    """``value`` as ``n`` integers (a single int is accepted for n == 1), each >= ``minimum``."""
    items = (value,) if n == 1 and not isinstance(value, tuple) else value
    if not isinstance(items, tuple) or len(items) != n or any(type(x) is not int for x in items):
        raise _Bad(f"attribute {what} must be {'an integer' if n == 1 else f'{n} integers'}, got {value!r:.60}")
    if any(abs(x) > limits.MAX_DIM for x in items) or (minimum is not None and min(items) < minimum):
        raise _Bad(f"attribute {what} = {value!r:.60} must be {'>= ' + str(minimum) if minimum is not None else ''} "
                   f"and at most {limits.MAX_DIM:,} in magnitude")
    return items


def _constructed(op: Operator) -> bool:
    """True when ``op`` carries constructor attributes (of any kind): it claims to be a layer built by
    :mod:`dnnmap.workload.ops`, so it must have the form its kind's constructor gives."""
    return any(op.attr(a) is not None for a in CONSTRUCTOR_ATTRS)


def _form_problem(op: Operator, kind: OperatorKind) -> str | None:
    """Why a constructed ``op`` does not have its kind's loop dimensions and attributes, or None."""
    if not _constructed(op):
        return None
    if kind.dims is not None and set(op.dim_names) != set(kind.dims):
        return (f"kind {op.kind!r} has dimensions {', '.join(kind.dims)}, this layer has "
                f"{', '.join(op.dim_names)} (its kind does not match its loop nest and attributes)")
    missing = [a for a in kind.attrs if op.attr(a) is None]
    if missing:
        return f"attributes {', '.join(missing)} missing (a {op.kind} layer gives {', '.join(kind.attrs)})"
    return None


def _in_form(op: Operator, kind: OperatorKind) -> bool:
    """True when ``op`` has the loop dimensions and attributes its kind's constructor gives: the kind-specific
    checks apply. Other operators (Timeloop problems, hand-written einsums) get the generic checks."""
    return (kind.dims is None or set(op.dim_names) == set(kind.dims)) and all(op.attr(a) is not None
                                                                               for a in kind.attrs)


def _family(kind: str) -> str:
    """The constructor that builds ``kind`` (kinds one constructor builds are interchangeable labels)."""
    return KINDS[kind].constructor if kind in KINDS else kind


def _rebuild(op: Operator) -> Operator | None:
    """The operator its kind and attributes define (None for a generic operator without them)."""
    b = op.bounds
    if op.kind in training.DERIVED_KINDS:
        return _rebuild_derived(op)
    kind = KINDS[op.kind]
    if not _in_form(op, kind):
        return None
    if kind.constructor in ("conv2d", "fully_connected"):
        groups = _ints(op.attr("groups"), 1, "groups")[0]
        cin, cout = _ints(op.attr("in_channels"), 1, "in_channels")[0], _ints(op.attr("out_channels"), 1,
                                                                               "out_channels")[0]
        stride, dilation = _ints(op.attr("stride"), 2, "stride"), _ints(op.attr("dilation"), 2, "dilation")
        padding, in_hw = _ints(op.attr("padding"), 4, "padding", None), _ints(op.attr("in_hw"), 2, "in_hw")
        if kind.constructor == "fully_connected":
            return ops.fully_connected(op.name, cin, cout, b.get("N", 1))
        return ops.conv2d(op.name, cin, cout, in_hw, (b["R"], b["S"]), stride, padding, dilation, groups,
                          b.get("N", 1), op.connectivity)
    if kind.constructor == "pool":
        return ops.pool(op.name, b.get("G", 1), _ints(op.attr("in_hw"), 2, "in_hw"), _ints(op.attr("kernel"), 2,
                        "kernel"), _ints(op.attr("stride"), 2, "stride"), _ints(op.attr("padding"), 4, "padding", None),
                        op.kind.removeprefix("pool_"), b.get("N", 1))
    if kind.constructor == "concat":
        return ops.concat(op.name, b["G"], (b["P"], b["Q"]), b["N"])
    if kind.constructor == "eltwise":
        return ops.eltwise(op.name, b["G"], (b["P"], b["Q"]), len(op.inputs), b["N"], op.kind)
    if kind.constructor == "vector":
        return ops.vector(op.name, op.kind, b["P"], b["Q"], b["G"], b["N"])
    if kind.constructor == "rotary":
        return ops.rotary(op.name, b["P"], b["G"], b["Q"], b["N"])
    if kind.constructor == "matmul":
        return ops.matmul(op.name, b["M"], b["K"], b["N"], b["B"])
    if kind.constructor == "einsum" and isinstance(op.attr("expr"), str):
        return ops.einsum(op.name, str(op.attr("expr")), b, tuple(t.name for t in op.tensors))
    return None


def _rebuild_derived(op: Operator) -> Operator | None:
    """A training pass (dnnmap.workload.training): its forward operator rebuilt, then the pass derived."""
    try:
        which, stand_in = training.forward_of(op)
        forward = _rebuild(stand_in)
        if forward is None:
            return None
        derived = training.derive(forward, which)
    except DnnmapError as err:
        raise _Bad(str(err)) from err
    for ref in derived:
        if ref.attr("phase") == op.attr("phase"):
            return ref
    raise _Bad(f"phase {op.attr('phase')!r} is not a phase of the backward-data pass its attributes define")


def _difference(op: Operator, ref: Operator) -> str | None:
    if dict(op.dims) != dict(ref.dims):
        return f"dimensions {dict(op.dims)} differ from {dict(ref.dims)}, which its kind and attributes define"
    if op.tensors != ref.tensors:
        mine = {t.name: t for t in op.tensors}
        for t in ref.tensors:
            if t.name not in mine:
                return f"tensor {t.name} ({t.role}) is missing"
            if mine[t.name] != t:
                return f"tensor {t.name} does not match what its kind and attributes define ({t.role}, axes " \
                       f"{[a.name for a in t.axes]})"
        return f"extra tensor(s) {[n for n in mine if n not in {t.name for t in ref.tensors}]}"
    return None


def _connectivity_problem(op: Operator) -> str | None:
    if op.connectivity is None:
        return None
    b = op.bounds
    cin, cout = b.get("C", 1) * b.get("G", 1), b.get("K", 1) * b.get("G", 1)
    if len(op.connectivity) != cout:
        return f"connectivity lists {len(op.connectivity)} output channels, the layer has {cout}"
    for k, chans in enumerate(op.connectivity):
        if not chans or len(set(chans)) != len(chans) or min(chans) < 0 or max(chans) >= cin:
            return f"connectivity[{k}] must list distinct input channels 0..{cin - 1}, got {list(chans)[:8]}"
    return None


def _densities_problem(op: Operator) -> str | None:
    """Why the operator's ``densities`` attribute (docs/sparse.md) is not a list of distinct [input tensor,
    density in (0, 1]] pairs, or None."""
    given = op.attr(DENSITIES)
    if given is None:
        return None
    pairs = given if isinstance(given, tuple) else None
    if pairs is None or any(not isinstance(p, tuple) or len(p) != 2 or not isinstance(p[0], str) for p in pairs):
        return f"attribute densities must be a list of [TENSOR, DENSITY] pairs, got {given!r:.60}"
    inputs = sorted(t.name for t in op.inputs)
    for name, d in pairs:
        if name not in inputs:
            return f"attribute densities: {name!r} is not an input tensor (inputs: {', '.join(inputs)})"
        try:
            check_tensor_density(op, name, d, f"attribute densities: tensor {name!r}")
        except DnnmapError as err:
            return str(err)
    if len({name for name, _ in pairs}) != len(pairs):
        return f"attribute densities: a tensor appears twice in {given!r:.60}"
    return None


def operator_problem(op: Operator) -> str | None:
    """Why ``op`` is not a consistent operator of its kind (or too large to map), or None."""
    problem = limits.operator_problem(op.dims)
    if problem:
        return problem
    if op.kind not in ALL_KINDS:
        return f"unknown kind {op.kind!r}; kinds: {', '.join(ALL_KINDS)}"
    names = [t.name for t in op.tensors]
    if len(set(names)) != len(names):
        return f"tensor names repeat: {names}"
    if any(c > limits.MAX_DIM for t in op.tensors for a in t.axes for _, c in a.terms):
        return f"an axis coefficient exceeds {limits.MAX_DIM:,}"
    weights = [t.name for t in op.tensors if t.role == "weight"]
    kind = kind_of(op)
    expects_weights = True if kind is None else kind.weights  # training passes read a weight-role operand
    if expects_weights is True and not weights:
        return f"a {op.kind} layer multiplies by weights, but no tensor has role 'weight'"
    if expects_weights is False and weights:
        return f"a {op.kind} layer has no weights, but tensor(s) {weights} have role 'weight'"
    if not op.inputs:
        return "no input tensor"
    problem = None if kind is None else _form_problem(op, kind)
    if problem:
        return problem
    try:
        ref = _rebuild(op)
    except (_Bad, ValueError) as err:
        return str(err)
    if ref is not None:
        if _family(ref.kind) != _family(op.kind):  # ops.conv2d names conv2d, pointwise or depthwise by shape
            return f"its attributes and loop nest describe a {ref.kind} layer, not {op.kind}"
        diff = _difference(op, ref)
        if diff:
            return diff
    return _connectivity_problem(op) or _densities_problem(op)


def _stuffed(size: int, want: int, unit_stride: bool) -> bool:
    """A convolution reads ``want`` rows of a ``size``-row input: the same, or (a transposed convolution
    lowered to a direct one, unit stride) the input with ``s - 1`` zeros stuffed between rows."""
    return size == want or (unit_stride and 1 < size < want and (want - 1) % (size - 1) == 0)


def _nchw(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape, 1, 1) if len(shape) == 2 else shape


def _graph_problem(op: Operator, inputs: list[tuple[str, tuple[int, ...]]], out: tuple[int, ...],
                   views: bool = False) -> str | None:
    """Shapes: what the layer reads from its producers and the output shape it declares. With ``views`` (an
    import that removed layout nodes: reshapes, transposes, splits of heads), a layer other than a convolution or
    pooling (whose inputs include padding) may read its producer through them: each input tensor then holds the
    producer's elements, or an equal part of them (a split), in another order."""
    problem = _shape_problem(op, inputs, out)
    if not problem or not views or _family(op.kind) in ("conv2d", "pool"):
        return problem
    b = op.bounds
    tensors = [t for t in op.tensors if t.role == "input"] or list(op.inputs)
    tensors = list(op.inputs[:len(inputs)]) if len(tensors) < len(inputs) else tensors
    for (src, shape), t in zip(inputs, tensors):
        if math.prod(shape) % t.size(b):
            return (f"reads {src!r} of shape {list(shape)} ({math.prod(shape):,} elements), which is neither a view "
                    f"of its tensor {t.name} {list(t.shape(b))} nor splits into parts of its size")
    if math.prod(out) != op.output.size(b):
        return f"output_shape {list(out)} has {math.prod(out):,} elements, its output tensor {op.output.size(b):,}"
    return None


def _shape_problem(op: Operator, inputs: list[tuple[str, tuple[int, ...]]], out: tuple[int, ...]) -> str | None:
    """The exact shape checks of :func:`_graph_problem`."""
    b, kind = op.bounds, op.kind
    shapes = [s for _, s in inputs]

    def mismatch(i: int, want: object) -> str:
        return f"reads {inputs[i][0]!r} of shape {list(shapes[i])}, but its loop nest needs {want}"

    if kind in training.DERIVED_KINDS:  # reads gradient views (phases) of graph inputs: operator checks only
        return None
    info = KINDS[kind]
    family = info.constructor if _in_form(op, info) else "generic"
    if family != "generic" and info.inputs == 1 and len(inputs) != 1:
        return f"a {kind} layer reads one input, it lists {len(inputs)}"
    if family == "conv2d":
        in_hw = op.attr("in_hw")
        s4 = _nchw(shapes[0])
        if len(s4) != 4 or s4[:2] != (b["N"], op.attr("in_channels")) or not all(
                _stuffed(x, want, op.attr("stride") == (1, 1)) for x, want in zip(s4[2:], in_hw)):  # type: ignore
            return mismatch(0, f"N={b['N']}, C={op.attr('in_channels')}, HxW={in_hw[0]}x{in_hw[1]}")  # type: ignore
        want_out: tuple[int, ...] = (b["N"], b["G"] * b["K"], b["P"], b["Q"])
    elif family == "fully_connected":
        if shapes[0][0] != b["N"] or math.prod(shapes[0][1:]) != b["C"] * b["G"]:
            return mismatch(0, f"N={b['N']} and {b['C'] * b['G']} input features (their product)")
        want_out = (b["N"], b["G"] * b["K"], 1, 1)
    elif family == "pool":
        if _nchw(shapes[0]) != (b["N"], b["G"], *op.attr("in_hw")):  # type: ignore[misc]
            return mismatch(0, [b["N"], b["G"], *op.attr("in_hw")])  # type: ignore[misc]
        want_out = (b["N"], b["G"], b["P"], b["Q"])
    elif family == "eltwise":
        full = (b["N"], b["G"], b["P"], b["Q"])
        if kind != "identity" and len(inputs) < 2:
            return f"an element-wise {kind} needs at least two inputs, it lists {len(inputs)}"
        if len(inputs) != len(op.inputs):
            return f"lists {len(inputs)} inputs but has {len(op.inputs)} input tensors"
        for i, s in enumerate(shapes):
            s4 = _nchw(s)
            if len(s4) != 4 or any(x not in (y, 1) for x, y in zip(s4, full)):
                return mismatch(i, f"{list(full)} (or a broadcast of it)")
        if full not in {_nchw(s) for s in shapes}:
            return f"none of its inputs has its shape {list(full)}"
        want_out = full
    elif family == "concat":
        full = (b["N"], b["G"], b["P"], b["Q"])
        for i, s in enumerate(shapes):
            s4 = _nchw(s)
            if len(s4) != 4 or (s4[0], *s4[2:]) != (b["N"], b["P"], b["Q"]):
                return mismatch(i, f"N={b['N']}, HxW={b['P']}x{b['Q']}")
        if sum(_nchw(s)[1] for s in shapes) != b["G"]:
            return f"its inputs have {sum(_nchw(s)[1] for s in shapes)} channels together, its loop nest {b['G']}"
        want_out = full
    elif family == "matmul":
        s = shapes[0]
        if len(s) < 2 or (s[-2], s[-1]) != (b["M"], b["K"]) or math.prod(s[:-2]) != b["B"]:
            return mismatch(0, f"[..., {b['M']}, {b['K']}] with {b['B']} leading elements")
        want_out = (*s[:-2], b["M"], b["N"])
        return None if tuple(out) == want_out else f"output_shape {list(out)} differs from {list(want_out)}"
    else:  # generic operator or einsum: input tensors match the producers element for element
        tensors = [t for t in op.tensors if t.role == "input"]
        if kind == "einsum" and len(tensors) < len(inputs) <= len(op.inputs):
            tensors = list(op.inputs[:len(inputs)])  # producers feed the leading operands (attention's K, V)
        if len(tensors) != len(inputs):
            return f"lists {len(inputs)} inputs but has {len(tensors)} tensors of role 'input'"
        for i, t in enumerate(tensors):
            if math.prod(shapes[i]) != t.size(b):
                return mismatch(i, f"{t.size(b):,} elements (tensor {t.name} {list(t.shape(b))})")
        if math.prod(out) != op.output.size(b):
            return f"output_shape {list(out)} has {math.prod(out):,} elements, its output tensor {op.output.size(b):,}"
        return None
    if _nchw(tuple(out)) != want_out:
        return f"output_shape {list(out)} differs from {list(want_out)}, which its inputs and attributes give"
    return None


def _skipped_nodes(network: Network) -> bool:
    """An import with ``--skip-unsupported`` bridged over dropped nodes (its notes say so): the shapes along
    those edges legitimately differ, so only the operators themselves are checked."""
    return any(note.startswith("skipped ") and "unsupported node" in note for note in network.notes)


def _folded_layouts(network: Network) -> bool:
    """An import removed layout nodes (its notes say so): layers may read their producers through them."""
    return any(note.startswith("removed ") and "layout/no-op node(s)" in note for note in network.notes)


def network_problem(network: Network) -> str | None:
    """Why ``network`` is not consistent (naming the layer and field), or None."""
    check_edges = not _skipped_nodes(network)
    views = _folded_layouts(network)
    if not network.layers:
        return "the network has no layers"
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in network.inputs:
        if not 1 <= len(shape) <= 8 or min(shape) < 1 or math.prod(shape) > limits.MAX_ITERATIONS:
            return f"input {name!r}: shape {list(shape)} must have 1-8 positive sizes within the limits"
        shapes[name] = tuple(shape)
    for i, layer in enumerate(network.layers):
        where = f"layers[{i}] ({layer.name}, {layer.op.kind})"
        out = tuple(layer.output_shape)
        if not 1 <= len(out) <= 8 or min(out) < 1 or math.prod(out) > limits.MAX_ITERATIONS:
            return f"{where}: output_shape {list(out)} must have 1-8 positive sizes within the limits"
        problem = operator_problem(layer.op)
        if check_edges and not problem:
            problem = _graph_problem(layer.op, [(s, shapes[s]) for s in layer.inputs], out, views)
        if problem:
            return f"{where}: {problem}"
        shapes[layer.name] = out
    return None


def validate_network(network: Network, origin: str) -> Network:
    """``network`` when consistent, else an InputFileError naming ``origin``, the layer and the field."""
    problem = network_problem(network)
    if problem:
        raise InputFileError(f"{origin}: {problem}")
    return network
