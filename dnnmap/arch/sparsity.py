"""The sparse operand of a layer on an architecture (docs/sparse.md): which tensor is compressed, where,
at what cost in words, and whether the MACs skip its zeros.

Shared by the cost model (:class:`dnnmap.cost.model.CostModel`) and the reference simulator
(:mod:`dnnmap.sim.sparse`), so both read one definition of the format's metadata cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import DnnmapError
from dnnmap.workload.ir import Operator
from dnnmap.workload.sparsity import check_tensor_density, op_densities


@dataclass(frozen=True)
class SparseOperand:
    """The compressed sparse operand of one operator on one architecture.

    A compressed run of ``dense`` element positions holding ``nonzero`` non-zeros costs
    ``nonzero * word_per_nonzero + dense * metadata_per_element`` words (:meth:`compressed_words`):
    ``bitmap``: 1 + 0 per non-zero and one bit per element (``1 / word_bits`` words); ``csr``:
    ``1 + index_bits / word_bits`` per non-zero and one ``pointer_bits`` row pointer per row of the
    tensor's innermost axis (``pointer_bits / (row_length * word_bits)`` per element). At density
    ``d`` the expected words per dense element are ``word_factor = d * word_per_nonzero +
    metadata_per_element``."""

    tensor: str
    index: int  # position in op.tensors
    density: float
    compressed: tuple[bool, ...]  # per architecture level: stored compressed
    skip_zeros: bool  # the MAC lanes read the compressed stream: only non-zero products are executed
    word_per_nonzero: float
    metadata_per_element: float

    @property
    def word_factor(self) -> float:
        """Expected compressed words (non-zeros plus metadata) per dense element."""
        return self.density * self.word_per_nonzero + self.metadata_per_element

    def compressed_words(self, dense: float, nonzero: float) -> float:
        """Words of a compressed set of ``dense`` element positions holding ``nonzero`` non-zeros."""
        return nonzero * self.word_per_nonzero + dense * self.metadata_per_element


def layer_densities(op: Operator, arch: ArchSpec) -> dict[str, float]:
    """Density of every input tensor of ``op``: given on the operator, else the architecture's default for
    its role (``sparsity.density``), else 1."""
    given = op_densities(op)
    defaults = arch.sparsity.density if arch.sparsity is not None else {}
    return {t.name: given.get(t.name, defaults.get(t.role, 1.0)) for t in op.inputs}  # type: ignore[call-overload]


def sparse_operand(op: Operator, arch: ArchSpec) -> SparseOperand | None:
    """The compressed operand of ``op`` on ``arch``, or None when the layer is processed dense: no input has
    a density below 1, the architecture has no ``sparsity`` support, or the sparse tensor's role is not one
    it compresses. Two sparse inputs are an error: the hardware supports one sparse operand (RTML 3.1)."""
    sparse = {name: d for name, d in layer_densities(op, arch).items() if d < 1}
    if not sparse or arch.sparsity is None:
        return None
    if len(sparse) > 1:
        raise DnnmapError(f"layer {op.name!r}: tensors {', '.join(sorted(sparse))} all have a density below 1; "
                          "the hardware compresses one sparse operand (RTML section 3.1), give the others 1")
    name, density = next(iter(sparse.items()))
    check_tensor_density(op, name, density, f"layer {op.name!r}, tensor {name!r}")  # e.g. sparsity.density's
    index = next(i for i, t in enumerate(op.tensors) if t.name == name)
    tensor = op.tensors[index]
    sp = arch.sparsity
    if tensor.role not in sp.roles:
        return None
    bits = arch.bits_of(tensor.role)
    if sp.format == "bitmap":
        per_nonzero, per_element = 1.0, 1.0 / bits
    else:
        row = tensor.shape(op.bounds)[-1] if tensor.axes else 1
        per_nonzero, per_element = 1.0 + sp.index_bits / bits, sp.pointer_bits / (row * bits)
    first = 0 if sp.decompress_below is None else arch.level_index(sp.decompress_below)
    compressed = tuple(i >= first for i in range(len(arch.levels)))
    return SparseOperand(name, index, density, compressed, sp.decompress_below is None, per_nonzero, per_element)
