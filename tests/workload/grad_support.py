"""Helpers of the training-pass tests: derived passes evaluated by the simulator's NumPy reference,
assembled back into the true-shaped gradients, and independent gradients to compare them with."""

from __future__ import annotations

import itertools

import numpy as np

from dnnmap.sim.reference import reference_output
from dnnmap.workload import training
from dnnmap.workload.ir import Operator


def padded_extent(op: Operator) -> tuple[int, int]:
    """Rows and columns of the forward input in padded coordinates (the IR tensor ``I``)."""
    shape = op.tensor_shape("I")
    return shape[3], shape[4]


def phase_tensors(phase: Operator, d_out: np.ndarray, weight: np.ndarray) -> dict[str, np.ndarray]:
    """The views ``dO_ph`` and ``W_ph`` a backward-data phase reads, cut from the true ``dO`` and ``W``."""
    (ph_r, ph_c) = _phases(phase)
    rows, cols = phase.tensor_shape("dO")[3:]
    view = np.zeros(phase.tensor_shape("dO"), dtype=d_out.dtype)
    for u in range(rows):
        for v in range(cols):
            a, b = u + ph_r.grad_offset(), v + ph_c.grad_offset()
            if 0 <= a < d_out.shape[3] and 0 <= b < d_out.shape[4]:
                view[:, :, :, u, v] = d_out[:, :, :, a, b]
    taps_r, taps_c = phase.bound("R"), phase.bound("S")
    w_ph = np.empty(phase.tensor_shape("W"), dtype=weight.dtype)
    for j in range(taps_r):
        for k in range(taps_c):
            w_ph[..., j, k] = weight[..., ph_r.tap(j), ph_c.tap(k)]
    return {"dO": view, "W": w_ph}


def _phases(phase: Operator) -> tuple[training.AxisPhase, training.AxisPhase]:
    (rho_r, rho_c), (m_r, m_c) = phase.attr("phase"), phase.attr("phase_origin")
    step_r, step_c, dil_r, dil_c = _steps(phase)
    return (training.AxisPhase(rho_r, phase.bound("R"), dil_r, step_r, m_r, phase.bound("P")),
            training.AxisPhase(rho_c, phase.bound("S"), dil_c, step_c, m_c, phase.bound("Q")))


def _steps(phase: Operator) -> tuple[int, int, int, int]:
    import math

    (sh, sw), (dh, dw) = phase.attr("stride"), phase.attr("dilation")
    gh, gw = math.gcd(sh, dh), math.gcd(sw, dw)
    return sh // gh, sw // gw, dh // gh, dw // gw


def backward_gradient(op: Operator, d_out: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The input gradient in padded coordinates (shape of ``I``), assembled from the phases' NumPy
    references; rows no phase writes (padding border, unreached rows) stay zero."""
    grad = np.zeros(op.tensor_shape("I"), dtype=np.result_type(d_out, weight))
    (sh, sw), (dh, dw) = op.attr("stride"), op.attr("dilation")
    for phase in training.backward_data(op):
        ph_r, ph_c = _phases(phase)
        part = reference_output(phase, phase_tensors(phase, d_out, weight))
        for p, q in itertools.product(range(ph_r.rows), range(ph_c.rows)):
            grad[:, :, :, ph_r.input_row(p, sh, dh), ph_c.input_row(q, sw, dw)] += part[:, :, :, p, q]
    return grad


def scatter_gradients(op: Operator, x: np.ndarray, w: np.ndarray, d_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dI, dW) by the chain rule applied literally to the forward nest: every iteration adds
    ``dO * W`` to ``dI`` and ``I * dO`` to ``dW`` at the forward index maps (np.add.at; shares no code
    with the derivation)."""
    idx = dict(zip(op.dim_names, np.indices([b for _, b in op.dims]).reshape(len(op.dims), -1)))

    def coords(name: str) -> tuple[np.ndarray, ...]:
        return tuple(sum(c * idx[d] for d, c in a.terms) for a in op.tensor(name).axes)

    ci, cw, co = coords("I"), coords("W"), coords("O")
    d_i, d_w = np.zeros_like(x), np.zeros_like(w)
    np.add.at(d_i, ci, d_out[co] * w[cw])
    np.add.at(d_w, cw, x[ci] * d_out[co])
    return d_i, d_w
