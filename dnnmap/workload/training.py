"""Training passes of convolution and FC operators, derived from the forward operator's IR.

A forward operator of a MAC kind is a loop nest whose every iteration does
``Y[y(i)] += X[x(i)] * W[w(i)]`` with affine index maps ``x``, ``w``, ``y``. ``Y`` is linear in
``X`` and ``W``, so with ``dY = dL/dY`` the gradients are

* **weight-update** ``dW[w(i)] += X[x(i)] * dY[y(i)]`` over the *forward* loop nest
  (:func:`weight_update`): the accumulated tensor ``dW`` has single-dimension axes and the
  window stays on the operand ``X``, so the IR expresses it as is::

      forward        for n, g, k, c, p, q, r, s:
                         O [n, g, k, p, q] += I[n, g, c, sh*p + dh*r, sw*q + dw*s] * W [g, k, c, r, s]
      weight-update  for n, g, k, c, p, q, r, s:
                         dW[g, k, c, r, s] += I[n, g, c, sh*p + dh*r, sw*q + dw*s] * dO[n, g, k, p, q]

* **backward-data** ``dX[x(i)] += dY[y(i)] * W[w(i)]`` (:func:`backward_data`). Over the
  forward nest this is a *scatter*: the accumulated ``dI`` would carry the window axes
  ``sh*p + dh*r``, which the cost model does not price (docs/cost-model.md section 4: output
  transfers are exact only for outputs without window axes). It is therefore written as a
  *gather* (transposed convolution) with the stride removed by **phase decomposition** instead
  of zero stuffing. Per axis, with ``g = gcd(s, d)``, ``s' = s/g``, ``d' = d/g``: the taps
  ``r = rho + s'*j`` of one residue ``rho`` (``0 <= rho < s'``) all write the input rows
  ``h = s*m + d*rho``, and those rows receive nothing else, so::

      dI[s*m + d*rho] = sum_j dO[m - d'*j] * W[rho + s'*j]          (j < J = ceil((R - rho) / s'))

  a stride-1 convolution of ``dO`` with dilation ``d'`` and the phase's taps (reversed, so the
  window is a sum of positive terms). One operator per phase pair ``(rho_h, rho_w)``::

      backward-data  for n, g, k, c, p, q, r, s:           (phase rho_h, rho_w; origin m0_h, m0_w)
                         dI_ph[n, g, c, p, q] += dO_ph[n, g, k, p + dh'*r, q + dw'*s] * W_ph[g, k, c, r, s]
      dI_ph[.., p, q] = dI[.., sh*(m0_h + p) + dh*rho_h, sw*(m0_w + q) + dw*rho_w]       (padded coordinates)
      dO_ph[.., u, v] = dO[.., u + m0_h - dh'*(Jh - 1), v + m0_w - dw'*(Jw - 1)]           (0 outside dO)
      W_ph [.., r, s] = W [.., rho_h + sh'*(Jh - 1 - r), rho_w + sw'*(Jw - 1 - s)]

  ``p`` ranges over the phase's rows inside the *real* input (the padding border's gradient
  is never computed) that some tap reaches. Stride 1 gives one phase (``.bwd``); stride 2 and
  dilation 1 four (``.bwd.p0_0`` ... ``.bwd.p1_1``), fewer when the kernel has fewer taps
  than the stride (a 1x1 stride-2 conv has one: the other rows' gradient is zero).

  **MACs.** No zeros are inserted, so none are counted: ``macs`` sums the phases' loop nests,
  which multiply every (``dO``, ``W``) pair of the forward pass once, plus the products with
  ``dO``'s zero border at the edges of the input - the mirror of the forward pass's products
  with the zero padding. A stride-1 "same" convolution's backward-data pass therefore has
  exactly the forward MACs, and so has a 3x3/stride-2/pad-1 or a 1x1/stride-2 layer on an even
  map; a zero-stuffed transposed convolution would count ``sh*sw`` times as many.

FC (a 1x1 convolution on a 1x1 map) and ``matmul`` have no window, so their backward-data
pass is the forward nest with roles exchanged (one operator)::

    fc             O[n, k] += I[n, c] * W[k, c];  dI[n, c] += dO[n, k] * W[k, c];  dW[k, c] += I[n, c] * dO[n, k]

Operand roles (which buffers of an architecture with per-role storage hold a tensor) follow
the report's hardware (seed 003, Fig. 5-6: the same array, "input1/input2 and coordinate
computations suitably changed"): backward-data reads ``dO`` as its input and ``W`` as its
weight; weight-update reads ``I`` as its input and ``dO`` as its *weight* (it plays the
filter: the output coordinates ``p, q`` become the filter coordinates). Derived operators keep
the forward dimension letters (``K``/``C`` stay the forward layer's output/input channels),
attributes (plus ``pass``, ``forward_kind``, ``forward_dims`` and for backward-data ``phase``
and ``phase_origin``; :func:`forward_of` rebuilds the forward operator from them) and connectivity; their kind is the forward kind with ``.bwd`` or ``.wgt``
appended.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from dnnmap.errors import DnnmapError, unknown_name_message
from dnnmap.workload.ir import Axis, Layer, Network, Operator, Tensor
from dnnmap.workload.kinds import KINDS, ConvGeometry

Pass = Literal["forward", "backward", "weight-update"]
PASSES: tuple[Pass, ...] = ("forward", "backward", "weight-update")
PASS_CHOICES = (*PASSES, "all")
SUFFIX = {"backward": ".bwd", "weight-update": ".wgt"}
TRAINABLE_KINDS = tuple(k.name for k in KINDS.values() if k.trainable)
DERIVED_KINDS = tuple(k + s for k in TRAINABLE_KINDS for s in SUFFIX.values())


def is_trainable(op: Operator) -> bool:
    """True for forward operators whose training passes :func:`derive` builds (conv, FC, matmul)."""
    return op.kind in TRAINABLE_KINDS


def _operands(op: Operator) -> tuple[Tensor, Tensor, Tensor]:
    """The forward operator's (input, weight, output) tensors; refuses operators without exactly one each."""
    if not is_trainable(op):
        raise DnnmapError(f"layer {op.name!r}: training passes are derived for {', '.join(TRAINABLE_KINDS)} "
                          f"layers, not {op.kind!r}")
    by_role = {role: [t for t in op.tensors if t.role == role] for role in ("input", "weight", "output")}
    if any(len(ts) != 1 for ts in by_role.values()):
        raise DnnmapError(f"layer {op.name!r}: a trainable layer has one input, one weight and one output tensor, "
                          f"it has {[(t.name, t.role) for t in op.tensors]}")
    return by_role["input"][0], by_role["weight"][0], by_role["output"][0]


def _derived(op: Operator, which: Pass, tensors: tuple[Tensor, ...], name: str | None = None,
             dims: tuple[tuple[str, int], ...] | None = None,
             extra: tuple[tuple[str, object], ...] = ()) -> Operator:
    suffix = SUFFIX[which]
    attrs = (*op.attrs, ("pass", which), ("forward_kind", op.kind), ("forward_dims", op.dims), *extra)
    return Operator(name or op.name + suffix, op.kind + suffix, dims or op.dims, tensors, attrs, op.connectivity)


@dataclass(frozen=True)
class AxisPhase:
    """One phase of backward-data along one spatial axis (see the module docstring).

    ``rho``: the tap residue, ``taps``: ``J``, ``dil``: ``d'``, ``origin``: ``m0`` and ``rows``:
    the phase's output rows ``m0 .. m0 + rows - 1``; input row of phase row ``p``:
    ``stride * (origin + p) + dilation * rho`` (padded coordinates).
    """

    rho: int
    taps: int
    dil: int
    tap_step: int
    origin: int
    rows: int

    def input_row(self, p: int, stride: int, dilation: int) -> int:
        return stride * (self.origin + p) + dilation * self.rho

    def grad_offset(self) -> int:
        """``dO_ph[u] = dO[u + grad_offset]``."""
        return self.origin - self.dil * (self.taps - 1)

    def tap(self, j: int) -> int:
        """Forward filter tap read by phase tap ``j`` (reversed order)."""
        return self.rho + self.tap_step * (self.taps - 1 - j)


def axis_phases(out: int, kernel: int, stride: int, dilation: int, lo: int, hi: int) -> list[AxisPhase]:
    """The phases of one axis whose rows meet the real input rows ``[lo, hi)`` (padded coordinates).

    ``out`` is the forward output extent (``P``), ``kernel`` the taps (``R``).
    """
    g = math.gcd(stride, dilation)
    step, dil = stride // g, dilation // g
    phases = []
    for rho in range(min(step, kernel)):
        taps = -(-(kernel - rho) // step)
        # rows m = p + d'*j reached by some tap: 0 .. out - 1 + d'*(taps - 1); inside [lo, hi)
        first = max(0, -(-(lo - dilation * rho) // stride))
        last = min(out - 1 + dil * (taps - 1), (hi - 1 - dilation * rho) // stride)
        if last >= first:
            phases.append(AxisPhase(rho, taps, dil, step, first, last - first + 1))
    return phases


def _conv_backward(op: Operator, x: Tensor, w: Tensor, y: Tensor) -> tuple[Operator, ...]:
    b, geometry = op.bounds, ConvGeometry.of(op)
    (sh, sw), (dh, dw) = geometry.stride, geometry.dilation
    pt, pl, _, _ = geometry.padding
    h, wd = geometry.in_hw
    extent_h, extent_w = x.shape(b)[3], x.shape(b)[4]
    rows = axis_phases(b["P"], b["R"], sh, dh, max(0, pt), min(extent_h, pt + h))
    cols = axis_phases(b["Q"], b["S"], sw, dw, max(0, pl), min(extent_w, pl + wd))
    several = len(rows) * len(cols) > 1
    result = []
    for ph_r in rows:
        for ph_c in cols:
            dims = (("N", b["N"]), ("G", b["G"]), ("K", b["K"]), ("C", b["C"]), ("P", ph_r.rows), ("Q", ph_c.rows),
                    ("R", ph_r.taps), ("S", ph_c.taps))
            d_o = Tensor("dO", "input", (*y.axes[:3], Axis("P", (("P", 1), ("R", ph_r.dil))),
                                         Axis("Q", (("Q", 1), ("S", ph_c.dil)))))
            d_i = Tensor("d" + x.name, "output", (*x.axes[:3], Axis("H", (("P", 1),)), Axis("W", (("Q", 1),))))
            name = op.name + SUFFIX["backward"] + (f".p{ph_r.rho}_{ph_c.rho}" if several else "")
            extra = (("phase", (ph_r.rho, ph_c.rho)), ("phase_origin", (ph_r.origin, ph_c.origin)))
            result.append(_derived(op, "backward", (d_o, Tensor(w.name, "weight", w.axes), d_i), name, dims, extra))
    return tuple(result)  # empty when every window reads padding only: the input gradient is all zero


def backward_data(op: Operator) -> tuple[Operator, ...]:
    """The backward-data pass of ``op``: one operator per phase (see the module docstring); none when
    no window of the forward pass reads a real (non-padding) input element.

    Convolutions: tensors ``dO`` (role input, the phase's view of the output gradient), ``W``
    (role weight, the phase's reversed taps) and ``dI`` (role output, the phase's rows and
    columns of the input gradient). FC and matmul: the forward nest with ``dO`` (input), ``W``
    (weight) and ``dI`` (output).
    """
    x, w, y = _operands(op)
    windowed = any(len(a.terms) > 1 or a.terms[0][1] != 1 for a in x.axes)
    if KINDS[op.kind].conv and op.attr("in_hw") is not None:
        return _conv_backward(op, x, w, y)
    if windowed:
        raise DnnmapError(f"layer {op.name!r}: a {op.kind} layer with window axes needs its convolution attributes "
                          "(stride, padding, dilation, in_hw) to derive backward-data")
    return (_derived(op, "backward", (Tensor("dO", "input", y.axes), Tensor(w.name, "weight", w.axes),
                                      Tensor("d" + x.name, "output", x.axes))),)


def weight_update(op: Operator) -> Operator:
    """The weight-update pass of ``op``: ``dW[w(i)] += I[x(i)] * dO[y(i)]`` over the forward loop nest.

    Tensors ``I`` (role input), ``dO`` (role weight: it plays the filter) and ``dW`` (role output,
    the weight's axes); see the module docstring for the loop nests.
    """
    x, w, y = _operands(op)
    return _derived(op, "weight-update", (Tensor(x.name, "input", x.axes), Tensor("dO", "weight", y.axes),
                                          Tensor("d" + w.name, "output", w.axes)))


DERIVED_ATTRS = ("pass", "forward_kind", "forward_dims", "phase", "phase_origin")


def forward_of(op: Operator) -> tuple[Pass, Operator]:
    """The pass of a derived operator and a stand-in of its forward operator: the forward kind, dims,
    attributes and connectivity (what the forward constructors need), tensors left out (a bare output).
    Raises :class:`DnnmapError` when the attributes do not describe a training pass of ``op.kind``."""
    which, kind, dims = op.attr("pass"), op.attr("forward_kind"), op.attr("forward_dims")
    if which not in SUFFIX or not isinstance(kind, str) or op.kind != kind + SUFFIX[str(which)]:
        raise DnnmapError(f"a {op.kind} layer needs the attributes pass and forward_kind of its kind, got "
                          f"pass={which!r}, forward_kind={kind!r}")
    if not isinstance(dims, tuple) or not all(isinstance(d, tuple) and len(d) == 2 for d in dims):
        raise DnnmapError(f"a {op.kind} layer needs the attribute forward_dims (pairs of name and bound)")
    attrs = tuple((k, v) for k, v in op.attrs if k not in DERIVED_ATTRS)
    try:
        stand_in = Operator(op.name, kind, tuple((str(d), b) for d, b in dims), (Tensor("O", "output", ()),), attrs,
                            op.connectivity)
    except ValueError as err:
        raise DnnmapError(f"forward_dims: {err}") from err
    return which, stand_in  # type: ignore[return-value]


def derive(op: Operator, which: Pass) -> tuple[Operator, ...]:
    """The operators of the ``which`` pass of the forward operator ``op`` (``(op,)`` for ``forward``)."""
    if which == "forward":
        return (op,)
    if which == "backward":
        return backward_data(op)
    if which == "weight-update":
        return (weight_update(op),)
    raise DnnmapError(unknown_name_message("training pass", which, PASS_CHOICES))


def parse_passes(value: str | Sequence[str] | None) -> tuple[Pass, ...]:
    """``"all"`` / ``"forward"`` / ``"backward,weight-update"`` -> the passes in training order."""
    if value is None:
        return ("forward",)
    items = [v.strip() for v in (value.split(",") if isinstance(value, str) else value)]
    items = [v for v in items if v]
    aliases = {"fwd": "forward", "bwd": "backward", "backward-data": "backward", "wgt": "weight-update",
               "weight_update": "weight-update", "wu": "weight-update"}
    chosen: set[str] = set()
    for v in items:
        v = aliases.get(v.lower(), v.lower())
        if v == "all":
            chosen.update(PASSES)
        elif v in PASSES:
            chosen.add(v)
        else:
            raise DnnmapError(f"unknown training pass {v!r}; choose from {', '.join(PASS_CHOICES)} "
                              "(comma-separated for several)")
    if not chosen:
        raise DnnmapError(f"no training pass given; choose from {', '.join(PASS_CHOICES)}")
    return tuple(p for p in PASSES if p in chosen)


def _weight_shape(op: Operator) -> tuple[int, ...]:
    """Logical shape of the weight gradient: (out, in/groups, R, S) for convolutions, (out, in) for FC."""
    b = op.bounds
    if op.kind == "fc":
        return (b["G"] * b["K"], b["C"])
    if op.kind == "matmul":
        return (b["K"], b["N"])
    return (b["G"] * b["K"], b["C"], b["R"], b["S"])


def with_derived_passes(network: Network, names: Sequence[str]) -> list[str]:
    """``names`` (as given to ``--layers``), each followed by the training passes ``network`` derived from it:
    ``conv1`` also selects ``conv1.bwd`` (or its phases ``conv1.bwd.p0_0`` ...) and ``conv1.wgt``. A name that
    is itself absent (``--pass backward`` maps no ``conv1``) stands for its passes alone; a name with neither
    is kept, so the layer selection refuses it as unknown."""
    present = {layer.name for layer in network.layers}
    chosen: list[str] = []
    for name in names:
        own = {name + suffix for suffix in SUFFIX.values()}
        passes = [layer.name for layer in network.layers if layer.op.attr("pass") in SUFFIX
                  and (layer.name in own or layer.name.rsplit(".", 1)[0] in own)]
        chosen += [n for n in ([name] if name in present or not passes else []) + passes if n not in chosen]
    return chosen


def training_network(network: Network, passes: Iterable[Pass]) -> Network:
    """``network`` with the chosen passes of every layer, each layer's passes next to each other.

    Forward layers keep their inputs. Derived layers (``NAME.bwd``, ``NAME.wgt``) exist for the
    :data:`TRAINABLE_KINDS` only (pooling, element-wise and concat layers have no derived pass
    here) and read graph inputs named ``NAME.dO`` (the gradient of the layer's output) and, for
    weight-update, the forward layer's inputs (or a graph input ``NAME.I`` when the forward pass
    is not mapped). The dataflow *between* gradient layers is not modelled: each derived layer is
    mapped on its own, like every layer of ``dnnmap map``.
    """
    chosen = tuple(passes)
    if chosen == ("forward",):
        return network
    shapes = dict(network.inputs)
    for layer in network.layers:
        shapes[layer.name] = layer.output_shape
    inputs = list(network.inputs) if "forward" in chosen else []
    layers: list[Layer] = []
    for layer in network.layers:
        if "forward" in chosen:
            layers.append(layer)
        if not is_trainable(layer.op):
            continue
        in_shape = shapes[layer.inputs[0]]  # conv, FC and matmul layers read one input
        grad = f"{layer.name}.dO"
        inputs.append((grad, layer.output_shape))
        if "backward" in chosen:
            layers.extend(Layer(phase, (grad,), in_shape) for phase in backward_data(layer.op))
        if "weight-update" in chosen:
            if "forward" in chosen:
                reads = (*layer.inputs, grad)
            else:
                inputs.append((f"{layer.name}.I", in_shape))
                reads = (f"{layer.name}.I", grad)
            layers.append(Layer(weight_update(layer.op), reads, _weight_shape(layer.op)))
    if not layers:
        raise DnnmapError(f"network {network.name!r} has no convolution, FC or matmul layer: no "
                          f"{' or '.join(p for p in chosen if p != 'forward')} pass to map")
    label = "+".join(chosen)
    notes = (*network.notes, f"training passes {label} derived by dnnmap.workload.training")
    return Network(f"{network.name}[{label}]", tuple(layers), tuple(inputs), network.source, notes,
                   network.phase)
