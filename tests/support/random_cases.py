"""Seeded generator of random small (operator, architecture, legal mapping) triples for the tests (test-only: not part of the package).

Operators: conv2d (stride 1-2, dilation 1-2, padding, groups incl. depthwise), pointwise,
matmul, max/avg pooling, element-wise add, concat, the MTTKRP einsum ``ikl,kj,lj->ij``, the
transformer kinds (softmax, layer/RMS norm, GELU, SiLU, SwiGLU, rotary) and attention's batched
matmuls (multi-head and grouped-query). Architectures: 2-4 levels with unbounded capacities, random 1-D/2-D
fan-outs (on any level, DRAM included) with multicast/reduction on or off, random
roles kept by the inner levels. Mappings: every bound split into spatial factors that fit
the fan-out axes and temporal factors per level, mostly exact divisors but sometimes
imperfect (product above the bound), random loop orders, sometimes a per-level tensor
bypass choice, and in about two cases of three a random DRAM layout (a permutation of each
tensor's axes). Operators stay below ~1500 iterations so a case simulates in milliseconds.

``mid=True`` draws mid-size cases instead: operators with wider ranges and more than
``MAX_ITERATIONS``, at most ``MID_ITERATIONS`` iterations, and half of the time a preset
architecture with its real fan-outs (``tpu_like``: 32x32, ``nmp``: 8 per tile and 4x8
tiles) in place of a random one.
"""

from __future__ import annotations

import math

import numpy as np

from dnnmap.arch.spec import ALL_ROLES, ArchSpec, Fanout, Level, load_arch
from dnnmap.mapping.mapping import LevelMapping, Mapping, validate_mapping
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator

MAX_ITERATIONS = 1500
MID_ITERATIONS = 20_000
IMPERFECT_PROBABILITY = 0.15
LAYOUT_PROBABILITY = 0.65
MID_PRESETS = ("tpu_like", "nmp")


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def _conv(rng: np.random.Generator, grow: int) -> Operator:
    """A random conv2d; ``grow`` multiplies the upper ends of the channel and feature-map ranges."""
    style = rng.choice(["dense", "grouped", "depthwise", "pointwise"])
    groups = {"dense": 1, "pointwise": 1, "grouped": _int(rng, 2, 3), "depthwise": _int(rng, 2, 4 * grow)}[style]
    cin = groups * (1 if style == "depthwise" else _int(rng, 1, 3 * grow))
    cout = cin if style == "depthwise" else groups * _int(rng, 1, 3 * grow)
    kernel = 1 if style == "pointwise" else (_int(rng, 1, 3), _int(rng, 1, 3))
    stride = (_int(rng, 1, 2), _int(rng, 1, 2))
    dilation = 1 if style == "pointwise" else (_int(rng, 1, 2), _int(rng, 1, 2))
    padding = 0 if style == "pointwise" else (_int(rng, 0, 2), _int(rng, 0, 2))
    hw = (_int(rng, 3, 7 * grow), _int(rng, 3, 7 * grow))
    return ops.conv2d("conv", cin, cout, hw, kernel, stride, padding, dilation, groups, batch=_int(rng, 1, 2))


def _random_op(rng: np.random.Generator, grow: int) -> Operator:
    kind = rng.choice(["conv", "conv", "conv", "matmul", "pool", "add", "concat", "mttkrp", "vector", "rotary",
                       "attention"])
    if kind == "conv":
        return _conv(rng, grow)
    if kind == "matmul":
        return ops.matmul("mm", _int(rng, 1, 6 * grow), _int(rng, 1, 6 * grow), _int(rng, 1, 6 * grow),
                          batch=_int(rng, 1, 2))
    if kind == "pool":
        kernel = _int(rng, 2, 3)
        return ops.pool("pool", _int(rng, 1, 3 * grow), (_int(rng, kernel, 7 * grow), _int(rng, kernel, 7 * grow)),
                        kernel, stride=_int(rng, 1, 2), padding=_int(rng, 0, 1), mode=str(rng.choice(["max", "avg"])))
    if kind == "add":
        return ops.eltwise("add", _int(rng, 1, 4 * grow), (_int(rng, 1, 5 * grow), _int(rng, 1, 5 * grow)),
                           n_inputs=_int(rng, 2, 3))
    if kind == "concat":
        return ops.concat("concat", _int(rng, 1, 4 * grow), (_int(rng, 1, 5 * grow), _int(rng, 1, 5 * grow)))
    if kind == "vector":
        vector_kind = str(rng.choice(["softmax", "layernorm", "rmsnorm", "gelu", "silu", "swiglu"]))
        return ops.vector(vector_kind, vector_kind, _int(rng, 1, 5 * grow), _int(rng, 1, 6 * grow),
                          _int(rng, 1, 3), _int(rng, 1, 2))
    if kind == "rotary":
        return ops.rotary("rope", _int(rng, 1, 5 * grow), _int(rng, 1, 3), 2 * _int(rng, 1, 3 * grow), _int(rng, 1, 2))
    if kind == "attention":
        kv_heads = _int(rng, 1, 2)
        return ops.attention("attn", str(rng.choice(["scores", "values"])), _int(rng, 1, 2),
                             kv_heads * _int(rng, 1, 2), _int(rng, 1, 4 * grow), _int(rng, 1, 4 * grow),
                             _int(rng, 1, 3 * grow), kv_heads)
    sizes = {c: _int(rng, 1, 4 * grow) for c in "iklj"}
    return ops.einsum("mttkrp", "ikl,kj,lj->ij", sizes)


def random_op(rng: np.random.Generator, mid: bool = False) -> Operator:
    """A random small operator (at most ``MAX_ITERATIONS`` iterations), or with ``mid`` a mid-size one
    (ranges three times wider, more than ``MAX_ITERATIONS`` and at most ``MID_ITERATIONS``)."""
    low, high = (MAX_ITERATIONS + 1, MID_ITERATIONS) if mid else (1, MAX_ITERATIONS)
    while True:
        try:
            op = _random_op(rng, 3 if mid else 1)
        except ValueError:  # the window does not fit the input: draw again
            continue
        if low <= op.iterations <= high:
            return op


def random_arch(rng: np.random.Generator, mid: bool = False) -> ArchSpec:
    """A random 2-4 level architecture with unbounded capacities; with ``mid``, half of the time one
    of ``MID_PRESETS`` (its capacities kept: the simulator does not enforce them)."""
    if mid and rng.random() < 0.5:
        return load_arch(str(rng.choice(MID_PRESETS)))
    n_levels = _int(rng, 2, 4)
    levels = []
    for i in range(n_levels):
        is_dram = i == n_levels - 1
        keeps = ALL_ROLES if is_dram else tuple(r for r in ALL_ROLES if rng.random() < 0.7)
        fanout = None
        if rng.random() < (0.3 if is_dram else 0.6):
            shape = (_int(rng, 2, 4),) if rng.random() < 0.5 else (_int(rng, 1, 3), _int(rng, 2, 3))
            fanout = Fanout(shape=shape, multicast=bool(rng.random() < 0.6), reduction=bool(rng.random() < 0.6))
        levels.append(Level(name="DRAM" if is_dram else f"L{i}", keeps=keeps, fanout=fanout))
    return ArchSpec(name=f"random{n_levels}", clock_mhz=100.0, levels=tuple(levels))


def _divisors(n: int) -> list[int]:
    return [f for f in range(1, n + 1) if n % f == 0]


def _factor(rng: np.random.Generator, remaining: int, cap: int) -> int:
    """A factor <= cap for ``remaining`` iterations: mostly a divisor, sometimes any value (imperfect)."""
    cap = max(1, min(cap, remaining))
    if rng.random() < IMPERFECT_PROBABILITY:
        return _int(rng, 1, cap)
    return int(rng.choice([f for f in _divisors(remaining) if f <= cap]))


def random_mapping(rng: np.random.Generator, op: Operator, arch: ArchSpec, placement: bool = False) -> Mapping:
    """A random legal mapping of ``op`` on ``arch`` (validated before it is returned), with a random
    DRAM layout in a share ``LAYOUT_PROBABILITY`` of the draws; ``placement``: then a random per-tensor
    placement (:func:`random_placement`)."""
    n_levels = len(arch.levels)
    temporal: list[dict[str, int]] = [{} for _ in range(n_levels)]
    spatial: list[dict[str, int]] = [{} for _ in range(n_levels)]
    axis_of: list[dict[str, int]] = [{} for _ in range(n_levels)]
    room = [list(lv.fanout.shape) if lv.fanout else [] for lv in arch.levels]  # free instances per axis
    for d in rng.permutation(op.dim_names):
        remaining = op.bound(str(d))
        for level in rng.permutation(n_levels):
            if room[level] and rng.random() < 0.5:
                axis = _int(rng, 0, len(room[level]) - 1)
                f = _factor(rng, remaining, room[level][axis])
                if f > 1:
                    spatial[level][str(d)], axis_of[level][str(d)] = f, axis
                    room[level][axis] //= f
                    remaining = math.ceil(remaining / f)
        order = rng.permutation(n_levels)
        for level in order[:-1]:
            f = _factor(rng, remaining, remaining)
            temporal[level][str(d)] = f
            remaining = math.ceil(remaining / f)
        temporal[order[-1]][str(d)] = remaining
    levels = []
    for i in range(n_levels):
        keeps = None
        if i < n_levels - 1 and rng.random() < 0.2:
            allowed = [t.name for t in op.tensors if t.role in arch.levels[i].keeps]
            keeps = tuple(t for t in allowed if rng.random() < 0.5)
        levels.append(LevelMapping(
            temporal=tuple((d, f) for d, f in temporal[i].items() if f > 1),
            order=tuple(str(d) for d in rng.permutation(op.dim_names)),
            spatial=tuple(spatial[i].items()),
            spatial_axis=tuple(axis_of[i].items()),
            keeps=keeps,
        ))
    layouts = ()
    if rng.random() < LAYOUT_PROBABILITY:  # a DRAM layout: each tensor's axes in a random order
        layouts = tuple((t.name, tuple(str(a) for a in rng.permutation([a.name for a in t.axes])))
                        for t in op.tensors)
    mapping = Mapping(levels=tuple(levels), layouts=layouts, layer=op.name, arch=arch.name)
    if placement:
        mapping = random_placement(rng, op, arch, mapping)
    validate_mapping(mapping, op, arch)
    return mapping


def random_placement(rng: np.random.Generator, op: Operator, arch: ArchSpec, mapping: Mapping) -> Mapping:
    """``mapping`` with each tensor kept at an on-chip level placed, with probability 1/2, below a random
    number (1 .. all) of the level's non-trivial loops (``LevelMapping.loops_above``); levels without
    such loops stay as they are."""
    levels = list(mapping.levels)
    for i, lm in enumerate(levels[:-1]):
        loops = lm.loops(op.dim_names)
        if loops:
            above = tuple((t, _int(rng, 1, len(loops))) for t in mapping.kept_tensors(i, op, arch)
                          if rng.random() < 0.5)
            levels[i] = LevelMapping(lm.temporal, lm.order, lm.spatial, lm.spatial_axis, lm.keeps, above)
    return Mapping(tuple(levels), mapping.layouts, mapping.layer, mapping.arch, mapping.notes)


def random_case(rng: np.random.Generator, mid: bool = False, options: bool = False,
                placement: bool = False) -> tuple[Operator, ArchSpec, Mapping]:
    """A random (operator, architecture, legal mapping) triple drawn from ``rng``; ``mid``: a mid-size
    operator, and half of the time a preset architecture; ``options``: the architecture then gets
    random section 2b options (:func:`random_arch_options`, drawn after the mapping); ``placement``: the
    mapping places tensors inside their levels' loops (:func:`random_placement`, drawn with the mapping)."""
    op = random_op(rng, mid)
    arch = random_arch(rng, mid)
    mapping = random_mapping(rng, op, arch, placement)
    return op, random_arch_options(rng, arch) if options else arch, mapping


WIDTHS = (8, 16, 24, 32)


def _maybe(rng: np.random.Generator, p: float, value: object, default: object = None) -> object:
    """``value`` with probability ``p``, else ``default``."""
    return value if rng.random() < p else default


def _options_of_level(rng: np.random.Generator, lv: Level, last: bool) -> Level:
    """``lv`` with random docs/cost-model.md 2b options (see :func:`random_arch_options`)."""
    update: dict[str, object] = {
        "read_energy": round(float(rng.uniform(0, 4)), 2), "write_energy": round(float(rng.uniform(0, 4)), 2),
        "bandwidth": _maybe(rng, 0.4, float(rng.choice([0.5, 1.0, 2.0, 4.0]))),
        "read_bandwidth": _maybe(rng, 0.3, float(rng.choice([0.5, 1.0, 2.0]))),
        "write_bandwidth": _maybe(rng, 0.3, float(rng.choice([0.5, 1.0, 2.0]))),
        "buffers": _int(rng, 1, 3), "halo_reuse": [True, False, "innermost"][int(rng.choice(3, p=[0.5, 0.25, 0.25]))],
        "read_modify_write": bool(rng.random() < 0.7),
        "capacity_unit": "bits" if rng.random() < 0.3 else "words",
    }
    if rng.random() < 0.5:  # per-role/action energies, some actions left to the level's defaults
        update["energy"] = {role: {a: round(float(rng.uniform(0, 8)), 2) for a in ("read", "fill", "update")
                                   if rng.random() < 0.7} for role in lv.keeps if rng.random() < 0.7}
    unit = 16 if update["capacity_unit"] == "bits" else 1
    if rng.random() < (0.2 if last else 0.45):  # small enough to bind on some mappings
        high = 4000 if last else 64
        if rng.random() < 0.5 and not last:
            update["capacity"] = {role: _int(rng, 1, high) * unit for role in lv.keeps if rng.random() < 0.85}
        else:
            update["capacity"] = _int(rng, 1, high) * unit
    if lv.fanout is not None:
        update["fanout"] = lv.fanout.model_copy(update={
            "multicast_rule": "identical" if rng.random() < 0.4 else "union",
            "no_multicast": tuple(r for r in ALL_ROLES if rng.random() < 0.2),
            "hop_energy": _maybe(rng, 0.5, round(float(rng.uniform(0, 2)), 2), 0.0),
            "ingress_bandwidth": _maybe(rng, 0.4, float(rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]))),
            "egress_bandwidth": _maybe(rng, 0.4, float(rng.choice([0.25, 0.5, 1.0, 2.0, 4.0])))})
    if last and rng.random() < 0.6:
        update["transfer"] = {"model": str(rng.choice(["volume", "burst"])),
                              "bandwidth_gbps": float(rng.choice([0.05, 0.2, 1.0])),
                              "burst_bytes": int(rng.choice([2, 4, 8, 16, 64])), "cas_ns": float(rng.choice([0, 14]))}
    return Level.model_validate({**lv.model_dump(), **update})


def random_arch_options(rng: np.random.Generator, arch: ArchSpec) -> ArchSpec:
    """``arch`` with every option of docs/cost-model.md section 2b drawn at random: per-role/action
    energies, per-role word widths (8-32 bits), capacities in words or bits (per role or shared,
    sometimes small enough to make a mapping invalid, also on the backing store), shared and
    read/write bandwidths, buffering depth 1-3, halo reuse and read-modify-write switches, the
    multicast rule, per-role no-multicast and ingress/egress bandwidths of every fan-out, hop and MAC
    energies, operand registers, overlap, a volume or burst transfer model on the backing store, half
    of the time a vector unit (lanes, energy, sometimes a bandwidth) for the non-MAC kinds, and most of
    the time a final output width (1 bit up to the output's width)."""
    word_bits = ({role: int(rng.choice(WIDTHS)) for role in ALL_ROLES} if rng.random() < 0.6
                 else int(rng.choice(WIDTHS)))
    levels = tuple(_options_of_level(rng, lv, i == len(arch.levels) - 1) for i, lv in enumerate(arch.levels))
    mac = arch.mac.model_copy(update={"energy": round(float(rng.uniform(0.5, 3)), 2),
                                      "operand_registers": tuple(r for r in ALL_ROLES if rng.random() < 0.4)})
    vector = _maybe(rng, 0.5, {"lanes": _int(rng, 1, 8), "energy": round(float(rng.uniform(0.1, 2)), 2),
                               "bandwidth": _maybe(rng, 0.5, float(rng.choice([0.5, 1.0, 4.0])))})
    output_bits = word_bits["output"] if isinstance(word_bits, dict) else word_bits
    return ArchSpec.model_validate({**arch.model_dump(), "word_bits": word_bits, "mac": mac.model_dump(),
                                    "overlap": bool(rng.random() < 0.6), "vector": vector,
                                    "levels": [lv.model_dump() for lv in levels],
                                    "final_output_bits": _maybe(rng, 0.6, _int(rng, 1, output_bits))})
