"""Random sparse cases for the tests and benchmarks (test-only): a random case of tests/support/random_cases.py
(conv or matmul) with a random ``sparsity`` block on its architecture and a real weight tensor, either N:M
structured along a reduction dimension of the weights under the exactness condition of docs/sparse.md
(``exact=True``), or unstructured."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec, Sparsity
from dnnmap.mapping.mapping import Mapping
from dnnmap.sim.sparse import random_pattern, structured_pattern
from dnnmap.workload.ir import Operator
from dnnmap.workload.sparsity import with_densities
from random_cases import random_arch, random_arch_options, random_mapping, random_op


@dataclass(frozen=True)
class SparseCase:
    op: Operator  # carries the weights' density
    arch: ArchSpec  # with a sparsity block
    mapping: Mapping
    nonzero: np.ndarray  # the weights' non-zero mask
    structure: str  # "N:M along D" or "random"


def _with_sparsity(rng: np.random.Generator, arch: ArchSpec) -> ArchSpec:
    names = [lv.name for lv in arch.levels]
    below = None if rng.random() < 0.6 else str(rng.choice(names))
    fmt = "bitmap" if rng.random() < 0.5 else "csr"
    sparsity = Sparsity(format=fmt, index_bits=int(rng.integers(2, 9)), pointer_bits=int(rng.integers(4, 17)),
                        decompress_below=below)
    mac = arch.mac.model_copy(update={"operand_registers": ()})  # registers under zero-skipping: an expectation
    return arch.model_copy(update={"sparsity": sparsity, "mac": mac})


def _kept_from(mapping: Mapping, op: Operator, arch: ArchSpec, name: str) -> int:
    return min(i for i in range(len(arch.levels)) if name in mapping.kept_tensors(i, op, arch))


def exactness_holds(op: Operator, arch: ArchSpec, mapping: Mapping, dim: str) -> bool:
    """The condition of docs/sparse.md besides the N:M pattern: a perfect factorization; the structured
    dimension ``dim`` split only temporally; and no lanes that merge a dense operand's reads or updates
    under one instance (spatial factors at levels up to that operand's innermost level) differ in the
    weights they use (a spatial factor on a dimension of the weights)."""
    if any(mapping.total(d) != b for d, b in op.dims):
        return False
    if any(lm.s(dim) > 1 for lm in mapping.levels):
        return False
    weight_dims = op.tensor("W").dims
    for t in op.tensors:
        if t.name == "W":
            continue
        top = _kept_from(mapping, op, arch, t.name)
        if any(mapping.levels[i].s(d) > 1 for i in range(top + 1) for d in weight_dims):
            return False
    return True


def random_sparse_case(rng: np.random.Generator, exact: bool, options: bool = True) -> SparseCase:
    """A conv or matmul case with sparse weights W: ``exact``: N:M along a reduction dimension whose level-0
    factor M divides, with :func:`exactness_holds`; else unstructured at a random density."""
    while True:
        op = random_op(rng)
        if op.kind not in ("conv2d", "depthwise", "pointwise", "matmul", "fc") or op.macs < 8:
            continue
        arch = random_arch(rng)
        mapping = random_mapping(rng, op, arch)
        arch = random_arch_options(rng, arch) if options else arch
        arch = _with_sparsity(rng, arch)
        w = op.tensor("W")
        shape = w.shape(op.bounds)
        if not exact:
            density = float(rng.choice([0.1, 0.25, 0.5, 0.75]))
            mask = random_pattern(shape, density, rng)
            if mask.all():  # a tensor too small to hold a zero
                continue
            return SparseCase(with_densities(op, {"W": float(mask.mean())}), arch, mapping, mask, "random")
        reduction = [a.name for a in w.axes if a.name in op.reduction_dims and len(a.terms) == 1
                     and mapping.levels[0].t(a.name) > 1]
        if not reduction:
            continue
        dim = str(rng.choice(reduction))
        if not exactness_holds(op, arch, mapping, dim):
            continue
        t0 = mapping.levels[0].t(dim)
        m = int(rng.choice([f for f in range(2, t0 + 1) if t0 % f == 0]))
        n = int(rng.integers(1, m))
        axis = [a.name for a in w.axes].index(dim)
        mask = structured_pattern(shape, axis, n, m, rng)
        return SparseCase(with_densities(op, {"W": n / m}), arch, mapping, mask, f"{n}:{m} along {dim}")
