"""The thesis's worked 3x3 examples: task graph (§4.2), Fig. 17, Fig. 24, Fig. 26, AGU (Figs. 18-19)."""

from __future__ import annotations

from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.listing import flat_rows, loop_rows
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import Field, Kind, build_task_graph, full_loads

# Fig. 17 (no optimization), transcribed; coefficient words shown with 4 positions.
FIG17 = [
    ["rd [b w0 w1 w2]", "", "", "", "", ""],
    ["rd [s(i+0) w0]", "rd [s(i+0) w1]", "", "", "", ""],
    ["", "rd [s(i+0) w2]", "set rw[b w0 w1 w2]", "", "", ""],
    ["wr [s(i+2) w0]", "", "sh rw", "set ri[0-1]", "set rb", ""],
    ["rd [s(i+1) w0]", "rd [s(i+1) w1]", "sh rw", "setsh ri[2]", "mac", ""],
    ["rd [w3 w4 w5 w6]", "", "sh rw", "sh ri", "mac", ""],
    ["wr [s(i+2) w1]", "rd [s(i+1) w2]", "", "set ri[0-1]", "mac", "act [s(i) w0]"],
    ["wr [s(i+2) w2]", "", "set rw[w3 w4 w5 w6]", "", "", "act [s(i) w1]"],
    ["rd [s(i+2) w0]", "rd [s(i+2) w1]", "sh rw", "setsh ri[2]", "mac", ""],
    ["rd [w7 w8 - -]", "rd [s(i+2) w2]", "sh rw", "sh ri", "mac", ""],
    ["", "", "sh rw", "set ri[0-1]", "mac", ""],
    ["", "", "set rw[w7 w8 - -]", "setsh ri[2]", "mac", ""],
    ["", "", "sh rw", "sh ri", "mac", ""],
    ["", "", "", "", "mac", ""],
]

# Fig. 26 (packed + modulo scheduled steady state). The thesis's MEMA column keeps the stale
# labels [w3 w4 w5 w6]/[w7 w8 - -] of Fig. 17 (NVE §5.2, Fig. 26); the words actually read are the packed ones.
FIG26 = [
    ["wr [s(i+2) w0]", "", "sh rw", "set ri[0-1]", "mac", ""],
    ["rd [b w0 w1 -]", "", "sh rw", "setsh ri[2]", "mac", ""],
    ["rd [s(i+0) w0]", "rd [s(i+0) w1]", "sh rw", "sh ri", "mac", ""],
    ["wr [s(i+2) w1]", "rd [s(i+0) w2]", "set rw[b w0 w1 -]", "", "mac", ""],
    ["rd [w2 w3 w4 -]", "", "sh rw", "set ri[0-1]", "set rb", ""],
    ["rd [s(i+1) w0]", "rd [s(i+1) w1]", "sh rw", "setsh ri[2]", "mac", ""],
    ["wr [s(i+2) w2]", "rd [s(i+1) w2]", "set rw[w2 w3 w4 -]", "sh ri", "mac", ""],
    ["rd [w5 w6 w7 w8]", "", "sh rw", "set ri[0-1]", "mac", "act [s(i) w0]"],
    ["rd [s(i+2) w0]", "rd [s(i+2) w1]", "sh rw", "setsh ri[2]", "mac", "act [s(i) w1]"],
    ["", "rd [s(i+2) w2]", "set rw[w5 w6 w7 w8]", "sh ri", "mac", ""],
]


def test_task_graph_operation_counts(filter3x3: ConvLayer, spec: NveSpec) -> None:
    """NVE §4.2: 1 set rb + 9 mac; 3 set/3 set-shift/3 shift ri; 3 set + 7 shift rw; 12 reads; 3 writes."""
    g = build_task_graph(filter3x3, (0,), {0: full_loads(10, 4)}, spec)
    kinds = [o.kind for o in g.ops]
    assert kinds.count(Kind.SET_RB) == 1 and kinds.count(Kind.MAC) == 9
    assert (kinds.count(Kind.SET_RI), kinds.count(Kind.SETSH_RI), kinds.count(Kind.SHIFT_RI)) == (3, 3, 3)
    assert (kinds.count(Kind.SET_RW), kinds.count(Kind.SHIFT_RW)) == (3, 7)
    assert kinds.count(Kind.READ) == 12 and kinds.count(Kind.WRITE) == 3 and kinds.count(Kind.ACT) == 2
    assert g.count(Field.MEMA) == 9 and g.count(Field.MEMB) == 6


def test_fig17_unoptimized_schedule(programs3x3: dict, spec: NveSpec) -> None:
    flat = programs3x3[0].loop.flat
    assert flat.length == 14
    assert flat_rows(flat, spec.coeffs_per_word) == FIG17
    assert flat.vmac_stalls() == 1  # cycle 8: the port-A conflict of Table 3/4
    assert len(flat.conflicts) == 1
    g = flat.graph
    c = flat.conflicts[0]
    assert g.ops[c.op].kind == Kind.SET_RI and g.ops[c.blocker].kind == Kind.SET_RW
    assert programs3x3[0].loop.ii == 14  # level 0 runs iterations back to back


def test_fig24_packed_schedule(programs3x3: dict, spec: NveSpec) -> None:
    flat = programs3x3[1].loop.flat
    assert flat.graph.chains[0].loads == (3, 3, 4)
    assert flat.length == 14 and flat.vmac_stalls() == 0 and not flat.conflicts
    rows = flat_rows(flat, spec.coeffs_per_word)
    wreg = {i + 1: r[2] for i, r in enumerate(rows) if r[2].startswith("set rw")}
    assert list(wreg) == [4, 7, 10]
    vmac = [i + 1 for i, r in enumerate(rows) if r[4] == "mac"]
    assert vmac == list(range(6, 15)) and rows[4][4] == "set rb"
    assert [i + 1 for i, r in enumerate(rows) if r[5]] == [8, 9]
    assert rows[0][0] == "wr [s(i+2) w0]"  # the prepended write cycle that cancels the gain
    # Fig. 24's cycles 1-10 are Fig. 26 without the operations Fig. 26 wraps in from cycles 11-14
    wrapped = {(i - 10, c) for i in range(10, 14) for c in range(6) if rows[i][c]}
    assert rows[:10] == [["" if (r, c) in wrapped else FIG26[r][c] for c in range(6)] for r in range(10)]


def test_fig26_modulo_schedule(programs3x3: dict, spec: NveSpec) -> None:
    loop = programs3x3[2].loop
    assert loop.mii == 10 and loop.ii == 10
    assert loop_rows(loop, spec.coeffs_per_word) == FIG26
    assert 16 * loop.macs_per_iteration / loop.ii == 14.4


def test_agu_circular_addressing_fig18(programs3x3: dict) -> None:
    """Fig. 18: the repetitive write of column i+2 and the reads of i, i+1, i+2 rotate through 3 slots."""
    cp = programs3x3[2]
    s = cp.program.settings
    assert s.modes == ((9, 3),)  # 3 slots of 3 words: toggle 9, inc 3 (Fig. 19 with one word per column: 3, 1)
    body = cp.program.instructions[s.loop_start: s.loop_end + 1]
    write_w0 = body[0].mema
    read_i0_w0 = body[2].mema
    assert (write_w0.offset, write_w0.update, write_w0.mode) == (3, 6, 1)  # column 2 -> slot 2
    assert (read_i0_w0.offset, read_i0_w0.update, read_i0_w0.mode) == (3, 0, 1)  # column 0 -> slot 0
    seq, u = [], write_w0.update
    for _ in range(4):
        seq.append(write_w0.offset + u)
        u = u + 3 if u + 3 != 9 else 0  # Eq. 3.2
    assert seq == [9, 3, 6, 9]  # slot 2, 0, 1, 2: "writes address 5, then 3, then 4" in word-per-column units
