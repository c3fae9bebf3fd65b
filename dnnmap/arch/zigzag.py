"""ZigZag hardware YAML (``memories``, ``operational_array``) -> :class:`ArchSpec`.

What is read (docs/zigzag.md has the full correspondence and what differs):

- ``memories`` in file order (ZigZag lists them lowest first): ``size`` in bits (capacity counted in bits),
  ``operands`` (I1, I2, O; through the operand links I1 -> input, I2 -> weight, O -> output unless a
  mapping file links them otherwise) = what the level keeps, everything else bypasses it;
  ``served_dimensions`` = the array dimensions one instance serves: the memories form one chain, the backing
  store (the last memory) last, the others by served-set size; a level's fan-out is the dimensions it
  serves beyond those served below it. Where a memory does not serve dimensions that only other operands'
  memories below it serve (a weight register over D3 x D4 above an output register over D2), ZigZag has a
  copy of it per position of those dimensions: one dnnmap instance stands for the copies (capacity and
  bandwidth times their number; the same counts while the loops unrolled there index its operands);
- energies: ``r_cost``/``w_cost`` are per access of the port's ``bandwidth_max`` bits. ZigZag counts
  ``ceil(words * bits / bandwidth_min) * bandwidth_min / bandwidth_max`` accesses per transfer, so a word costs
  ``cost * bits / bandwidth_max``; a memory serving one MAC lane (no served dimension) moves one word per
  transfer, which costs whole ``bandwidth_min`` accesses: ``cost * ceil(bits / min) * min / max``.
  Reads take the port allocated to ``tl`` (to the level below), fills ``fh``, updates ``fl``;
- ``force_double_buffering`` (a boolean, default false) acts only in ZigZag's loop allocator, which counts a tile
  twice unless it is the operand's whole remaining tensor there: :attr:`ImportedZigzag.double_buffered`, which
  :mod:`dnnmap.mapping.zigzag_map` allocates by. The spec keeps the whole ``size``: its ``buffers: 2`` would count
  whole tensors twice as well and refuse ZigZag's own allocations (docs/zigzag.md), so dnnmap's own mappers do
  not double-buffer the level (a note says so). On the backing store it does nothing (a note);
- bandwidth: ports' ``bandwidth_max`` bits per cycle in words of the widest operand the level keeps
  (read ports -> read_bandwidth, write ports -> write_bandwidth, read_write ports -> bandwidth);
- ``operational_array``: ``unit_energy`` per MAC, ``dimensions``/``sizes``; array dimensions of size 1 vanish,
  a fan-out over more than two dimensions keeps the first as x and folds the rest into y. An in-memory-computing
  array (``is_imc``) is priced by :mod:`dnnmap.arch.zigzag_imc`: its bit-serial passes become ``mac.cycles``, its
  per-row, per-column and per-MAC energies the input register's reads, the output register's updates and
  ``mac.energy``; its weights sit in the ``cells`` memory, an ordinary level.

Refused with the construct named: CACTI cost extraction
(``auto_cost_extraction``), a memory whose operands have different such dimensions below them, an outermost
memory that does not hold every operand or that leaves an array dimension no memory of some operand serves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnnmap.arch.spec import ALL_ROLES, ArchSpec, parse_arch
from dnnmap.arch.zigzag_imc import ImcArray, imc_array
from dnnmap.fileio import load_data
from dnnmap.workload.importers.timeloop_yaml import (
    Where,
    integer,
    list_at,
    mapping_at,
    names_at,
    number,
)
from dnnmap.workload.ir import Role

DEFAULT_LINKS: dict[str, Role] = {"I1": "input", "I2": "weight", "O": "output"}
DEFAULT_BITS: dict[Role, int] = {"input": 8, "weight": 8, "output": 16}  # ZigZag's shipped workloads
_DIRECTIONS = ("tl", "th", "fh", "fl")
_PORT_TYPES = ("read", "write", "read_write")


@dataclass(frozen=True)
class Port:
    """One memory port: its type and bandwidths in bits per cycle."""

    name: str
    kind: str
    bw_min: int
    bw_max: int


@dataclass(frozen=True)
class Memory:
    """One ZigZag memory as read from the file."""

    name: str
    size: int
    r_cost: float
    w_cost: float
    operands: tuple[str, ...]
    ports: tuple[Port, ...]
    allocation: dict[tuple[str, str], Port]  # (memory operand, direction) -> port
    served: frozenset[str]
    where: Where
    double_buffered: bool = False  # ZigZag's force_double_buffering


@dataclass(frozen=True)
class ImportedZigzag:
    """An imported ZigZag core: the spec, notes on what differs, and where each array dimension went."""

    spec: ArchSpec
    notes: tuple[str, ...]
    array_dims: dict[str, tuple[int, int]]  # array dimension -> (level index, fan-out axis)
    links: dict[str, Role]  # memory operand -> role
    imc: ImcArray | None = None  # the in-memory-computing macro the energies were derived from, if any
    double_buffered: frozenset[str] = frozenset()  # levels whose memory sets force_double_buffering (not the last)


def _port(raw: object, at: Where) -> Port:
    p = mapping_at(raw, at)
    name = p.get("name")
    if not isinstance(name, str) or not name:
        raise (at / "name").error("a port needs a name")
    kind = p.get("type")
    if kind not in _PORT_TYPES:
        raise (at / "type").error(f"port type must be one of {', '.join(_PORT_TYPES)}, got {kind!r}")
    bw_max = integer(p.get("bandwidth_max"), at / "bandwidth_max")
    bw_min = integer(p.get("bandwidth_min", bw_max), at / "bandwidth_min")
    if not 1 <= bw_min <= bw_max:
        raise at.error(f"need 1 <= bandwidth_min ({bw_min}) <= bandwidth_max ({bw_max})")
    return Port(name, kind, bw_min, bw_max)


def _allocation(ports: dict[str, Port], raw_ports: list[Any], operands: tuple[str, ...],
                at: Where) -> dict[tuple[str, str], Port]:
    out: dict[tuple[str, str], Port] = {}
    for i, raw in enumerate(raw_ports):
        p_at = at / i / "allocation"
        for j, alloc in enumerate(list_at(raw.get("allocation", []), p_at)):
            parts = [x.strip() for x in alloc.split(",")] if isinstance(alloc, str) else []
            if len(parts) != 2 or parts[0] not in operands or parts[1] not in _DIRECTIONS:
                raise (p_at / j).error(f"expected 'OPERAND, DIRECTION' with an operand of {list(operands)} and a "
                                       f"direction of {', '.join(_DIRECTIONS)}, got {alloc!r}")
            out[(parts[0], parts[1])] = ports[raw["name"]]
    return out


def _memory(name: str, raw: object, dims: tuple[str, ...], at: Where) -> Memory:
    m = mapping_at(raw, at)
    if m.get("auto_cost_extraction"):
        raise (at / "auto_cost_extraction").error("ZigZag asks CACTI for this memory's energies; dnnmap does not "
                                                  "run CACTI: give r_cost and w_cost (pJ per access)")
    size = integer(m.get("size"), at / "size")
    if size < 1:
        raise (at / "size").error(f"must be >= 1 bit, got {size}")
    costs = [number(m.get(k), at / k) for k in ("r_cost", "w_cost")]
    if any(c < 0 for c in costs):
        raise at.error("r_cost and w_cost must be >= 0")
    operands = names_at(m.get("operands"), at / "operands")
    unknown = [o for o in operands if o not in DEFAULT_LINKS]
    if unknown or not operands:
        raise (at / "operands").error(f"operands must be among I1, I2, O, got {list(operands)}")
    raw_ports = list_at(m.get("ports"), at / "ports")
    ports = {p.name: p for p in (_port(r, at / "ports" / i) for i, r in enumerate(raw_ports))}
    if not ports:
        raise (at / "ports").error("a memory needs at least one port")
    served = names_at(m.get("served_dimensions", []), at / "served_dimensions")
    bad = [d for d in served if d not in dims]
    if bad:
        raise (at / "served_dimensions").error(f"{bad} are not dimensions of the operational array ({list(dims)})")
    double = m.get("force_double_buffering", False)
    if not isinstance(double, bool):
        raise (at / "force_double_buffering").error(
            f"must be true or false, got {'null' if double is None else repr(double)}")
    return Memory(name, size, costs[0], costs[1], operands, tuple(ports.values()),
                  _allocation(ports, raw_ports, operands, at / "ports"), frozenset(served), at, double)


def _array(data: dict[str, Any], at: Where) -> tuple[float, dict[str, int], ImcArray | None]:
    """The MAC energy, the array's dimension sizes, and its in-memory-computing macro (``is_imc``) if any."""
    oa = mapping_at(data.get("operational_array"), at)
    dims = names_at(oa.get("dimensions"), at / "dimensions")
    sizes = list_at(oa.get("sizes"), at / "sizes")
    if len(sizes) != len(dims) or len(set(dims)) != len(dims):
        raise at.error("'dimensions' and 'sizes' must list the same number of distinct dimensions")
    shape = {d: integer(s, at / "sizes" / i) for i, (d, s) in enumerate(zip(dims, sizes))}
    if any(s < 1 for s in shape.values()):
        raise (at / "sizes").error("array sizes must be >= 1")
    if oa.get("is_imc"):
        return 0.0, shape, imc_array(oa, shape, at)
    energy = number(oa.get("unit_energy", 0.0), at / "unit_energy")
    if energy < 0:
        raise (at / "unit_energy").error("must be >= 0")
    return energy, shape, None


def _imc_levels(imc: ImcArray, memories: list[Memory], chain: list[Memory], roles: dict[str, Role],
                bits: dict[Role, int], notes: list[str]) -> dict[str, dict[Role, dict[str, float]]]:
    """Energy added per word to the levels an in-memory array charges (:mod:`dnnmap.arch.zigzag_imc`): the input
    register's reads (per row), the output register's updates (per column); checks the weight ``cells``."""
    ops = {role: op for op, role in roles.items()}
    cells = next((m for m in memories if m.name == "cells"), None)
    if cells is None or cells.operands != (ops["weight"],) or cells.served:
        raise memories[0].where.error("an in-memory-computing array keeps its weights in a memory named 'cells' "
                                      f"holding only {ops['weight']} with no served dimensions (one per multiplier)")
    if cells.size > imc.weight_bits:
        raise (cells.where / "size").error(
            f"{cells.size} bits hold several {imc.weight_bits}-bit weights per multiplier: ZigZag then charges a "
            "local bit-line precharge that depends on the loop order, which is not expressed")
    extra: dict[str, dict[Role, dict[str, float]]] = {}
    registers = {role: next(m for m in chain if ops[role] in m.operands) for role in ("input", "output")}
    for role, action, dim, parts in (("input", "read", imc.wordline, imc.per_row()),
                                     ("output", "update", imc.bitline, imc.per_column())):
        reg = registers[role]
        if reg.served != {dim}:
            raise (reg.where / "served_dimensions").error(
                f"ZigZag's in-memory array takes the lowest {ops[role]} memory to serve the "
                f"{'wordline' if role == 'input' else 'bitline'} dimension {dim} alone, got {sorted(reg.served)}")
        if parts:
            extra[reg.name] = {role: {action: sum(parts.values())}}
            what = ", ".join(f"{k} {v:.4g}" for k, v in parts.items())
            notes.append(f"{reg.name}: each {role} {action} adds {sum(parts.values()):.4g} pJ of the in-memory array "
                         f"({what}) per {'row an input enters' if role == 'input' else 'column an output leaves'}")
    if registers["input"].size < 2 * bits["input"]:
        notes.append(f"{registers['input'].name} holds one {bits['input']}-bit input: a layer reading two inputs at once (a residual "
                     "add) does not fit it; map the others (--layers); ZigZag skips pooling and add layers on "
                     "in-memory arrays")
    kind = "analog" if imc.analog else "digital"
    per_mac = imc.per_mac()
    notes.append(f"{kind} in-memory array {imc.columns} x {imc.rows} (wordline {imc.wordline}, bitline {imc.bitline}): "
                 f"{imc.passes} cycles per MAC ({imc.act_bits}-bit inputs, {imc.serial_bits} bits a cycle)"
                 + (f"; {sum(per_mac.values()):.4g} pJ per MAC (" + ", ".join(f"{k} {v:.4g}" for k, v in per_mac.items())
                    + ", ZigZag's energy with every row and column used)" if per_mac else ""))
    if bits["weight"] != imc.weight_bits or bits["input"] != imc.act_bits:
        notes.append(f"the array's input_precision ({imc.act_bits}, {imc.weight_bits}) prices it; the workload's "
                     f"input {bits['input']} and weight {bits['weight']} bits size the memories' words")
    return extra


def _chain(memories: list[Memory], shape: dict[str, int], notes: list[str]) -> list[Memory]:
    """The memories innermost first as one chain: the backing store (the last memory, holding every operand)
    last, the others stable by served-set size; each operand keeps its file order."""
    top = memories[-1]
    if set(top.operands) != set(DEFAULT_LINKS):
        raise (top.where / "operands").error("the outermost memory is the backing store and must hold I1, I2 and O")
    chain = sorted(memories[:-1], key=lambda m: len(m.served)) + [top]
    for op in DEFAULT_LINKS:
        in_file = [m.name for m in memories if op in m.operands]
        if in_file != [m.name for m in chain if op in m.operands]:
            raise memories[0].where.error(f"operand {op}: its memories {in_file} would change order")
    if top.served != set(shape):
        for op in DEFAULT_LINKS:
            missing = set(shape) - set().union(*(m.served for m in memories if op in m.operands))
            if missing:
                raise (top.where / "served_dimensions").error(
                    f"the outermost memory serves {sorted(top.served)} of the array's {list(shape)} and no memory of "
                    f"operand {op} serves {sorted(missing)}: it would have {_instances(top, shape)} instances; "
                    "dnnmap's backing store is one")
        notes.append(f"{top.name}: serves {sorted(top.served)} of {list(shape)}; every operand's lower memories "
                     "serve the rest, so it is the one backing store")
    return chain


def _displaced(m: Memory, lower: list[Memory], below: frozenset[str]) -> frozenset[str]:
    """Array dimensions the chain's fan-outs put below ``m`` that ZigZag puts above it: those served by
    lower memories of other operands only (``m`` is replicated over them in ZigZag). Refused when they
    differ between the operands ``m`` holds."""
    out = {op: below - m.served - set().union(*(n.served for n in lower if op in n.operands))
           for op in m.operands}
    sets = set(map(frozenset, out.values()))
    if len(sets) > 1:
        raise (m.where / "served_dimensions").error(
            f"its operands {list(m.operands)} have different array dimensions served below them "
            f"({ {op: sorted(d) for op, d in out.items()} }): the served dimensions do not nest for one level "
            "shared by these operands")
    return sets.pop()


def _instances(m: Memory, shape: dict[str, int]) -> int:
    return math.prod(s for d, s in shape.items() if d not in m.served)


def _per_word(cost: float, port: Port, bits: int, one_lane: bool) -> float:
    """ZigZag's energy of moving one ``bits``-bit word through ``port`` (module docstring)."""
    moved = math.ceil(bits / port.bw_min) * port.bw_min if one_lane else bits
    return cost * moved / port.bw_max


def _port_for(m: Memory, op: str, directions: tuple[str, ...], kinds: tuple[str, ...]) -> Port | None:
    for d in directions:
        if (op, d) in m.allocation:
            return m.allocation[(op, d)]
    return next((p for p in m.ports if p.kind in kinds), None)


def _energies(m: Memory, roles: dict[str, Role], bits: dict[Role, int],
              extra: dict[Role, dict[str, float]] | None = None) -> dict[Role, dict[str, float]]:
    """Energy per word of each action on each role ``m`` keeps (final outputs: the spec's
    ``final_output_bits`` scales the output's words); ``extra``: energy added per word and action (an
    in-memory array's rows and columns)."""
    extra = extra or {}
    out: dict[Role, dict[str, float]] = {}
    one_lane = not m.served
    for op in m.operands:
        role = roles[op]
        read = _port_for(m, op, ("tl", "th"), ("read", "read_write"))
        fill = _port_for(m, op, ("fh",), ("write", "read_write"))
        update = _port_for(m, op, ("fl", "fh"), ("write", "read_write"))
        if read is None or fill is None or update is None:
            raise (m.where / "ports").error(f"no read or write port for operand {op}")
        out[role] = {"read": _per_word(m.r_cost, read, bits[role], one_lane),
                     "fill": _per_word(m.w_cost, fill, bits[role], one_lane),
                     "update": _per_word(m.w_cost, update, bits[role], one_lane)}
        for action, e in extra.get(role, {}).items():
            out[role][action] += e
    return out


def _bandwidths(m: Memory, widest: int, copies: int) -> dict[str, float]:
    """Words per cycle of one dnnmap instance standing for ``copies`` ZigZag instances."""
    total = {k: sum(p.bw_max for p in m.ports if p.kind == k) * copies for k in _PORT_TYPES}
    if total["read_write"]:
        return {"bandwidth": sum(total.values()) / widest}
    return {"read_bandwidth": total["read"] / widest, "write_bandwidth": total["write"] / widest}


def _displaced_note(m: Memory, roles: dict[str, Role], dims: list[str], copies: int) -> str:
    kept = ", ".join(roles[o] for o in m.operands)
    return (f"{m.name} ({kept}): ZigZag has one per position of {' x '.join(dims)} (served by memories of other "
            f"operands below it); dnnmap puts {' x '.join(dims)} below it, one instance with the capacity and "
            f"bandwidth of {copies}: the same counts when the loops unrolled over {' x '.join(dims)} index the "
            f"{kept} (each copy holds other words); a loop that does not is read once and multicast where ZigZag "
            "reads every copy")


def _double_buffering_note(name: str, last: bool) -> str:
    """The import note on memory ``name``'s ``force_double_buffering`` (``last``: it is the backing store)."""
    if last:
        return (f"{name}: force_double_buffering has no effect on the backing store (it takes every loop left, and "
                "ZigZag counts a whole tensor once)")
    return (f"{name}: force_double_buffering: the imported mappings allocate loops as ZigZag does (a tile counts "
            "twice unless it is the operand's whole remaining tensor there); the spec keeps the whole capacity, so "
            "dnnmap's own mappers do not double-buffer it")


def _fanout(dims: list[str], shape: dict[str, int]) -> tuple[dict[str, Any] | None, dict[str, int]]:
    """The fan-out over ``dims`` (size-1 dimensions dropped; a third and further fold into y) and each
    dimension's axis."""
    dims = [d for d in dims if shape[d] > 1]
    if not dims:
        return None, {}
    sizes = [shape[dims[0]]] + ([math.prod(shape[d] for d in dims[1:])] if len(dims) > 1 else [])
    return {"shape": sizes}, {d: min(i, 1) for i, d in enumerate(dims)}


def _level(m: Memory, roles: dict[str, Role], bits: dict[Role, int], last: bool, copies: int,
           extra: dict[Role, dict[str, float]] | None) -> dict[str, Any]:
    """The level of memory ``m``; one instance stands for ``copies`` of ZigZag's (its capacity and bandwidth
    times ``copies``; :func:`_displaced`); ``extra``: :func:`_energies`."""
    kept = [roles[o] for o in m.operands]
    energies = _energies(m, roles, bits, extra)
    base = energies[kept[0]]
    level: dict[str, Any] = {"name": m.name, "keeps": [r for r in ALL_ROLES if r in kept]}
    if not last:
        level.update(capacity=m.size * copies, capacity_unit="bits")
    level.update(read_energy=base["read"], write_energy=base["fill"])
    overrides = {role: {a: e[a] for a in ("read", "fill", "update") if e[a] != base["read" if a == "read" else "fill"]}
                 for role, e in energies.items()}
    overrides = {role: e for role, e in overrides.items() if e}
    if overrides:
        level["energy"] = overrides
    level.update(_bandwidths(m, max(bits[r] for r in kept), copies))
    return level


def arch_from_zigzag(data: object, origin: str, links: dict[str, Role] | None = None,
                     word_bits: dict[Role, int] | None = None, clock_mhz: float = 1000.0,
                     notes: list[str] | None = None, final_output_bits: int | None = None) -> ImportedZigzag:
    """The :class:`ArchSpec` of a parsed ZigZag hardware file (``origin``: its path, for messages).
    ``final_output_bits``: the width of the final outputs (the workload's ``O_final``), the spec's
    ``final_output_bits``: ZigZag moves outputs at that width from a memory above the last reduction up."""
    notes = list(notes or [])
    where = Where(origin)
    top = mapping_at(data, where)
    roles = dict(links or DEFAULT_LINKS)
    bits = dict(word_bits or DEFAULT_BITS)
    mac_energy, shape, imc = _array(top, where / "operational_array")
    raw = mapping_at(top.get("memories"), where / "memories")
    memories = [_memory(str(n), m, tuple(shape), where / "memories" / str(n)) for n, m in raw.items()]
    if not memories:
        raise (where / "memories").error("no memories")
    chain = _chain(memories, shape, notes)
    extra = _imc_levels(imc, memories, chain, roles, bits, notes) if imc is not None else {}
    final = final_output_bits is not None and final_output_bits != bits["output"]
    if final:
        notes.append(f"final outputs (O_final) move at {final_output_bits} bits, partial sums at "
                     f"{bits['output']} (final_output_bits)")
    levels: list[dict[str, Any]] = []
    array_dims: dict[str, tuple[int, int]] = {}
    below: frozenset[str] = frozenset()
    for i, m in enumerate(chain):
        last = i == len(chain) - 1
        displaced = frozenset() if last else _displaced(m, chain[:i], below)
        copies = math.prod(shape[d] for d in displaced)
        level = _level(m, roles, bits, last, copies, extra.get(m.name))
        if m.double_buffered:
            notes.append(_double_buffering_note(m.name, last))
        if copies > 1:
            notes.append(_displaced_note(m, roles, sorted(displaced, key=list(shape).index), copies))
        served = frozenset(shape) if last else m.served
        new = [d for d in shape if d in served and d not in below]
        fanout, axes = _fanout(new, shape)
        if fanout is not None:
            level["fanout"] = fanout
            array_dims.update({d: (i, a) for d, a in axes.items()})
            if len(new) > 2:
                notes.append(f"{m.name}: its fan-out over {new} is [x, y] = [{new[0]}, {' x '.join(new[1:])}]")
        levels.append(level)
        below = below | served
    if len(levels) == 1:
        raise (where / "memories").error("only one memory: dnnmap needs an inner level beside the backing store")
    name = top.get("name")
    spec = {
        "name": name if isinstance(name, str) and name else Path(origin).stem,
        "description": "imported from ZigZag",
        "source": f"zigzag import of {origin}",
        "clock_mhz": clock_mhz,
        "word_bits": bits["input"] if len(set(bits.values())) == 1 else bits,
        "mac": {"energy": sum(imc.per_mac().values()) if imc else mac_energy,
                "precision_bits": max(bits["input"], bits["weight"]), "cycles": imc.passes if imc else 1},
        "levels": levels,
    }
    if final:
        spec["final_output_bits"] = final_output_bits
    doubled = frozenset(m.name for m in chain[:-1] if m.double_buffered)
    return ImportedZigzag(parse_arch(spec, f"{origin} (imported)"), tuple(notes), array_dims, roles, imc, doubled)


def import_zigzag_arch(path: str | Path, links: dict[str, Role] | None = None,
                       word_bits: dict[Role, int] | None = None, clock_mhz: float = 1000.0,
                       final_output_bits: int | None = None) -> ImportedZigzag:
    """Read a ZigZag hardware YAML file. Duplicate keys keep the last value, as ZigZag's YAML reader does
    (the published ``tpu_like.yaml`` gives its SRAM's ``ports`` twice), each with a note.
    ``final_output_bits``: :func:`arch_from_zigzag`."""
    duplicates: list[str] = []
    data = load_data(path, "ZigZag hardware file", duplicates=duplicates)
    notes = [f"{path}: {d}" for d in duplicates]
    if word_bits is None:
        notes.append("word widths: input 8, weight 8, output 16 bits (ZigZag's shipped workloads); "
                     "give the workload file to take its operand precisions")
    return arch_from_zigzag(data, str(path), links, word_bits, clock_mhz, notes, final_output_bits)
