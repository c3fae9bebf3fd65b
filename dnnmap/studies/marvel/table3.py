"""Marvel Table 3: the 15 evaluated layers (MobileNetV2, ResNet-50) and their published off-chip mappings.

The rows are the paper's data (layer sizes, level-3 tiles T_K..T_Q, the number of level-3
iterators shown, the innermost W/I/O dimensions); :func:`table3_op` builds each layer as a core
operator. Marvel's letters: P/Q output width/height, so the IR's P (rows) is Marvel's Q
(docs/ir.md). Two readings the paper leaves open are arguments:

* ``radd``: a residual add is "a depthwise layer with R = S = 1" (Marvel Sec. 2.1), i.e.
  ``depthwise`` (one weight per channel, outputs per channel), or the literal ``reduction``
  Table 3's K = 1 suggests (one 7x7 output plane summed over C).
* ``stride``: the listed P, Q are the output sizes and the stride the listed one (``True``), or
  the layer is taken with stride 1 (``False``: what the DB model sees under ``stride="ignore"``).
  L6 lists 224 x 224, the *input* size of MobileNetV2's first layer (digest gap 5): with its
  stride the operator is a 447 x 447-input layer that does not exist in the network.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.workload.ir import Operator
from dnnmap.workload.ops import conv2d, depthwise, fully_connected

MARVEL_LETTERS = ("K", "C", "R", "S", "P", "Q")


@dataclass(frozen=True)
class Table3Row:
    """One row of Marvel Table 3."""

    id: str
    kind: str  # RAdd, DSCONV, PWCONV, SPWCONV, FC, REGULAR
    name: str
    K: int
    C: int
    R: int
    S: int
    P: int
    Q: int
    stride: int
    tiles: tuple[int, int, int, int, int, int]  # T_K, T_C, T_R, T_S, T_P, T_Q
    iterators: int  # level-3 iterators the table shows (1: "t", 2: "tt")
    layout: str  # innermost dimension of W/I/O


TABLE3: tuple[Table3Row, ...] = (
    Table3Row("L1", "RAdd", "MBv2 residual", 1, 16, 1, 1, 112, 112, 1, (1, 2, 1, 1, 112, 112), 1, "C/X/P"),
    Table3Row("L2", "DSCONV", "Bottleneck1_1_2", 1, 32, 3, 3, 110, 110, 1, (1, 1, 3, 3, 110, 110), 1, "S/X/P"),
    Table3Row("L3", "DSCONV", "Bottleneck4_3_2", 1, 192, 3, 3, 12, 12, 1, (1, 64, 3, 3, 12, 12), 1, "C/C/K"),
    Table3Row("L4", "DSCONV", "Bottleneck6_2_2", 1, 576, 3, 3, 5, 5, 1, (1, 64, 3, 3, 5, 5), 1, "C/C/K"),
    Table3Row("L5", "PWCONV", "Bottleneck1_1_3", 16, 32, 1, 1, 112, 112, 1, (16, 32, 1, 1, 56, 16), 2, "C/X/P"),
    Table3Row("L6", "SPWCONV", "CONV1", 32, 32, 1, 1, 224, 224, 2, (32, 32, 1, 1, 56, 14), 2, "K/X/P"),
    Table3Row("L7", "FC", "CONV2D_3", 1000, 1280, 1, 1, 1, 1, 1, (125, 320, 1, 1, 1, 1), 2, "C/C/K"),
    Table3Row("L8", "REGULAR", "CONV2_2_2", 64, 64, 3, 3, 54, 54, 1, (64, 32, 3, 3, 54, 6), 2, "K/X/K"),
    Table3Row("L9", "REGULAR", "CONV5_3_2", 512, 512, 3, 3, 5, 5, 1, (64, 64, 3, 3, 5, 5), 2, "K/C/K"),
    Table3Row("L10", "RAdd", "CONV5_3_Residual", 1, 2048, 1, 1, 7, 7, 1, (1, 1024, 1, 1, 7, 7), 1, "C/C/P"),
    Table3Row("L11", "PWCONV", "CONV2_1_2", 64, 64, 1, 1, 56, 56, 1, (64, 64, 1, 1, 7, 56), 1, "K/C/K"),
    Table3Row("L12", "PWCONV", "CONV3_4_1", 128, 256, 1, 1, 28, 28, 1, (64, 256, 1, 1, 4, 28), 1, "K/C/K"),
    Table3Row("L13", "PWCONV", "CONV5_1_3", 2048, 512, 1, 1, 7, 7, 1, (128, 256, 1, 1, 7, 7), 2, "K/C/K"),
    Table3Row("L14", "SPWCONV", "CONV5_1_1", 512, 1024, 1, 1, 7, 7, 2, (128, 256, 1, 1, 7, 7), 2, "K/C/K"),
    Table3Row("L15", "FC", "FC1000", 1000, 2048, 7, 7, 1, 1, 1, (500, 2, 7, 7, 1, 1), 2, "K/X/K"),
)


def row(layer_id: str) -> Table3Row:
    for r in TABLE3:
        if r.id == layer_id:
            return r
    raise KeyError(f"no Table 3 layer {layer_id!r}; layers are {', '.join(r.id for r in TABLE3)}")


def table3_op(r: Table3Row, radd: str = "depthwise", stride: bool = True) -> Operator:
    """Layer ``r`` as a core operator (IR P = Marvel Q, IR Q = Marvel P)."""
    if radd not in ("depthwise", "reduction"):
        raise ValueError(f"radd must be 'depthwise' or 'reduction', got {radd!r}")
    st = r.stride if stride else 1
    in_hw = ((r.Q - 1) * st + r.R, (r.P - 1) * st + r.S)
    name = f"{r.id}_{r.name}"
    if r.kind == "DSCONV" or (r.kind == "RAdd" and radd == "depthwise"):
        return depthwise(name, r.C, in_hw, (r.R, r.S), st)
    if r.kind == "FC" and r.R == r.S == 1:
        return fully_connected(name, r.C, r.K)
    return conv2d(name, r.C, r.K, in_hw, (r.R, r.S), st)


def paper_tile(r: Table3Row, op: Operator) -> dict[str, int]:
    """Table 3's level-3 tile of ``r`` as IR dimension sizes of ``op`` (a depthwise channel tile is IR ``G``)."""
    t = dict(zip(MARVEL_LETTERS, r.tiles))
    tile = {"R": t["R"], "S": t["S"], "P": t["Q"], "Q": t["P"], "N": 1}
    if op.bound("G") > 1:
        tile.update(G=t["C"], K=1, C=1)
    else:
        tile.update(G=1, K=t["K"], C=t["C"])
    return tile
