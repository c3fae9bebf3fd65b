"""The DB model (Marvel Sec. 3.1) against hand formulas, enumerated index sets and finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.search.marvel.db_model import DbSettings, axis_count, axis_span, db_tables
from dnnmap.search.marvel.order import dmc_gradient
from dnnmap.search.marvel.view import layout_space
from dnnmap.workload.ops import conv2d, depthwise, eltwise, pool

ARCH = load_arch("marvel_platform1")
B = 64  # 64-byte blocks of 8-bit elements


def _conv_tile(op, K, C, R, S, P_w, Q_h):
    """IR tile row from Marvel letters (P width = IR Q, Q height = IR P)."""
    t = {"N": 1, "G": 1, "K": K, "C": C, "R": R, "S": S, "P": Q_h, "Q": P_w}
    return np.array([[t[d] for d in op.dim_names]], dtype=np.int64)


def test_marvel_example_layouts_give_the_papers_formulas():
    # Marvel Sec. 3.1 example: layouts SRCK / XYCN / PQKN (leftmost innermost), i.e. innermost S, X, P
    op = conv2d("c", 64, 128, 58, 3)
    space = layout_space(op)
    choice = space.index_of("S/X/P")
    K, C, R, S, P, Q = 32, 16, 3, 3, 28, 14
    tab = db_tables(op, ARCH, space, _conv_tile(op, K, C, R, S, P, Q), DbSettings(stride="ignore"))
    got = [int(b[0, i]) for b, i in zip(tab.blocks, choice)]
    assert got == [math.ceil(S / B) * R * C * K, math.ceil((P + S - 1) / B) * (Q + R - 1) * C,
                   math.ceil(P / B) * Q * K]
    assert int(tab.iterations[0]) == K * C * R * S * P * Q
    lay = space.choices.index(choice)
    assert int(tab.numerators(space)[0, lay]) == got[0] + got[1] + 2 * got[2]


def test_conv_has_36_layouts_and_marvel_labels():
    space = layout_space(conv2d("c", 8, 8, 10, 3))
    assert len(space.choices) == 36
    assert [t.labels for t in space.tensors] == [("K", "C", "R", "S"), ("C", "X", "Y"), ("K", "P", "Q")]
    assert space.core_layouts(space.index_of("K/X/P")) == (
        ("W", ("G", "C", "R", "S", "K")), ("I", ("N", "G", "C", "H", "W")), ("O", ("N", "G", "K", "P", "Q")))
    dw = layout_space(depthwise("d", 8, 10, 3))  # the depthwise channel is the IR G, also for O's "K"
    assert [t.axes for t in dw.tensors] == [("K", "G", "R", "S"), ("G", "W", "H"), ("G", "Q", "P")]
    with pytest.raises(ValueError, match="has no dimension"):
        space.index_of("K/Z/P")


def test_other_layers_use_their_non_trivial_axes():
    add = layout_space(eltwise("a", 16, 7))
    assert [t.axes for t in add.tensors] == [("G", "P", "Q")] * 3 and len(add.choices) == 27
    mp = layout_space(pool("p", 4, 8, 2))
    assert [t.axes for t in mp.tensors] == [("G", "H", "W"), ("G", "P", "Q")]


@pytest.mark.parametrize("stride,kernel", [(1, 3), (2, 1), (2, 3), (3, 2), (2, 2)])
def test_axis_count_is_the_size_of_the_enumerated_index_set(stride, kernel):
    op = conv2d("c", 2, 2, 40, kernel, stride)
    h = op.tensor("I").axes[3]  # stride * P + R
    dims = op.dim_names
    rng = np.random.default_rng(stride * 10 + kernel)
    for _ in range(20):
        tp, tr = int(rng.integers(1, op.bound("P") + 1)), int(rng.integers(1, kernel + 1))
        row = np.ones((1, len(dims)), dtype=np.int64)
        row[0, dims.index("P")], row[0, dims.index("R")] = tp, tr
        exact = {stride * p + r for p in range(tp) for r in range(tr)}
        assert axis_count(h, row, dims, unit=False)[0] == len(exact)
        assert axis_span(h, row, dims, unit=False)[0] == max(exact) + 1
        assert axis_count(h, row, dims, unit=True)[0] == tp + tr - 1  # stride ignored: Marvel's T_P + T_S - 1


def _relaxed_dmc(tile: dict[str, float], inner: dict[str, str]) -> float:
    """The DMC of a stride-1 conv with the block ceiling relaxed to span / B (an independent formula)."""
    ext = {"W": {"K": tile["K"], "C": tile["C"], "R": tile["R"], "S": tile["S"]},
           "I": {"C": tile["C"], "Y": tile["Q"] + tile["R"] - 1, "X": tile["P"] + tile["S"] - 1},
           "O": {"K": tile["K"], "Q": tile["Q"], "P": tile["P"]}}
    total = 0.0
    for t, axes in ext.items():
        total += (2 if t == "O" else 1) * math.prod(v for a, v in axes.items() if a != inner[t]) * axes[inner[t]] / B
    return total / math.prod(tile.values())


@pytest.mark.parametrize("layout", ["S/X/P", "K/C/K", "C/Y/Q", "R/X/K"])
def test_gradient_matches_finite_differences_of_the_relaxed_dmc(layout):
    op = conv2d("c", 64, 64, 30, 3)
    space = layout_space(op)
    choice = space.index_of(layout)
    marvel = {"K": 32, "C": 16, "R": 3, "S": 3, "P": 14, "Q": 7}  # P width = IR Q
    row = _conv_tile(op, marvel["K"], marvel["C"], marvel["R"], marvel["S"], marvel["P"], marvel["Q"])[0]
    grad = dmc_gradient(op, ARCH, space, choice, row, DbSettings(stride="ignore"))
    inner = dict(zip("WIO", layout.split("/")))
    # inside the derivative only the ceiling is relaxed: scale the relaxed slope to the exact blocks' level
    ir = {"K": "K", "C": "C", "R": "R", "S": "S", "P": "Q", "Q": "P"}
    for letter in ("K", "C", "P", "Q"):
        h = 1e-4
        up, dn = dict(marvel), dict(marvel)
        up[letter] += h
        dn[letter] -= h
        numeric = (_relaxed_dmc(up, inner) - _relaxed_dmc(dn, inner)) / (2 * h)
        got = grad[op.dim_names.index(ir[letter])]
        # the exact model keeps ceil() on the innermost spans: same sign, and equal when no span is below B
        assert np.sign(got) == np.sign(numeric) or abs(numeric) < 1e-12


def test_gradient_equals_relaxed_slope_when_the_ceiling_is_exact():
    # every innermost span a multiple of B: ceil(s/B) = s/B, so the relaxed and exact models coincide
    op = conv2d("c", 128, 128, 64, 1)
    space = layout_space(op)
    inner = {"W": "K", "I": "C", "O": "K"}
    choice = space.index_of("K/C/K")
    marvel = {"K": 64, "C": 128, "R": 1, "S": 1, "P": 8, "Q": 4}
    row = _conv_tile(op, *[marvel[x] for x in ("K", "C", "R", "S", "P", "Q")])[0]
    grad = dmc_gradient(op, ARCH, space, choice, row, DbSettings(stride="ignore"))
    for letter, ir in (("K", "K"), ("C", "C"), ("P", "Q"), ("Q", "P")):
        up, dn = dict(marvel), dict(marvel)
        up[letter] += 1e-4
        dn[letter] -= 1e-4
        numeric = (_relaxed_dmc(up, inner) - _relaxed_dmc(dn, inner)) / 2e-4
        assert grad[op.dim_names.index(ir)] == pytest.approx(numeric, rel=1e-6)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="stride"):
        DbSettings(stride="half")
    with pytest.raises(ValueError, match="tiles"):
        DbSettings(tiles="some")
