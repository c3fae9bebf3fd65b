"""Timeloop architecture YAML (v0.2/v0.3 ``subtree``/``local`` trees, v0.4 ``nodes`` lists) -> :class:`ArchSpec`.

What is read (docs/timeloop.md has the full correspondence and what differs):

- storage levels: size (``entries``, ``depth`` x block size, ``sizeKB``), ``word-bits``/``datawidth``,
  ``block-size``/``n_words``, instances (``instances``, ``name[0..N]`` ranges, v0.4 ``spatial``),
  ``meshX``/``meshY``, ``read_bandwidth``/``write_bandwidth``, ``multiple-buffering``; the outermost
  level is the backing store (a DRAM is unbounded);
- instance counts become fan-outs: a level's fan-out is its child's instances over its own, as
  ``[x, y]`` from the meshes; Timeloop's network multicasts only identical data
  (``multicast_rule: identical``) and reduces spatially;
- keep/bypass: ``architecture_constraints`` targets of type ``bypass``/``datatype``/``dataspace``
  and v0.4 node ``constraints.dataspace``;
- energies: an Accelergy ERT (``ERT.tables``) gives per-action energies per vector access (block);
  dnnmap charges per word, so each is divided by the block size. ``read`` -> read, ``write`` -> fill
  and update, ``update`` (if present) -> update; actions with argument sets take the largest energy.
  ``ert_energy="max"`` charges every action the level's largest energy, as Timeloop 2020 did with its
  single vector access energy. Without an ERT entry a ``vector-access-energy`` attribute is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dnnmap import limits
from dnnmap.arch.spec import ALL_ROLES, ArchSpec, parse_arch
from dnnmap.errors import InputFileError
from dnnmap.workload.importers.timeloop_yaml import (
    TAG_KEY,
    Where,
    base_name,
    integer,
    leaf_name,
    list_at,
    load_timeloop_files,
    mapping_at,
    names_at,
    number,
    role_from_name,
)
from dnnmap.workload.ir import Role

ErtMode = Literal["per-action", "max"]
_STORAGE_WORDS = ("dram", "sram", "regfile", "reg", "buffer", "buffet", "storage", "memory", "cache", "fifo")
_COMPUTE_WORDS = ("mac", "compute", "adder", "multiplier")
_SIZE_KEYS = ("entries", "depth", "memory_depth", "sizeKB")
_MAC_ACTIONS = ("mac_random", "compute", "mac", "multiply_add")
DUMMY_CLASS = "dummy_storage"  # Timeloop's stand-in storage above a container's fan-out
_KEEP_TYPES = ("bypass", "datatype", "dataspace")
_OTHER_CONSTRAINT_TYPES = ("temporal", "spatial", "utilization", "parallelism", "max_overbooked_proportion")
MAX_WORD_BITS = 1024
PASS_THROUGH = "PassThrough"


@dataclass(frozen=True)
class Component:
    """One storage or compute component of the flattened hierarchy (outermost first)."""

    name: str
    cls: str
    attrs: dict[str, Any]
    instances: int
    mesh_x: int
    where: Where
    compute: bool
    keep: tuple[str, ...] = ()
    bypass: tuple[str, ...] = ()

    @property
    def dummy(self) -> bool:
        """Timeloop's ``dummy_storage`` placeholder above a container's fan-out: it holds nothing."""
        return self.cls == DUMMY_CLASS


@dataclass(frozen=True)
class ImportedArch:
    """An imported architecture and the notes on what could not be carried over."""

    spec: ArchSpec
    notes: tuple[str, ...]


def _kind(name: str, cls: str, attrs: dict[str, Any], where: Where) -> bool:
    """True for a compute component, False for storage; other classes are refused."""
    low = cls.lower()
    if any(w in low for w in _COMPUTE_WORDS):
        return True
    if any(w in low for w in _STORAGE_WORDS) or any(k in attrs for k in _SIZE_KEYS):
        return False
    raise where.error(f"component {name!r} has class {cls!r}, which is neither storage nor compute; "
                      "networks and other components are not supported")


def _component(raw: object, where: Where, instances: int, mesh_x: int, scope: dict[str, Any]) -> Component:
    """One component; ``scope`` holds the variables and inherited container attributes its own override."""
    node = mapping_at(raw, where)
    name = node.get("name")
    if not isinstance(name, str) or not name:
        raise (where / "name").error("a component needs a name")
    base, count = base_name(name)
    attrs = {**scope, **mapping_at(node.get("attributes") or {}, where / "attributes")}
    cls = str(node.get("class") or node.get("subclass") or "")
    compute = _kind(base, cls, attrs, where)
    at = where / "attributes"
    total = integer(attrs["instances"], at / "instances", attrs) if "instances" in attrs else instances * count
    if "meshX" in attrs:
        local_x = integer(attrs["meshX"], at / "meshX", attrs)
    else:  # Timeloop lays instances given without a mesh along X
        local_x = total if "instances" in attrs else mesh_x * count
    if total < 1 or local_x < 1 or total % local_x:
        raise where.error(f"{base}: {total} instances cannot be laid out with meshX {local_x}")
    keep, bypass = _node_constraints(node.get("constraints"), where / "constraints")
    return Component(base, cls, attrs, total, local_x, where, compute, keep, bypass)


def _node_constraints(raw: object, where: Where) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if raw is None:
        return (), ()
    dataspace = mapping_at(raw, where).get("dataspace")
    if dataspace is None:
        return (), ()
    ds = mapping_at(dataspace, where / "dataspace")
    return (names_at(ds.get("keep") or [], where / "dataspace" / "keep"),
            names_at(ds.get("bypass") or [], where / "dataspace" / "bypass"))


def _tree(node: dict[str, Any], where: Where, instances: int, mesh_x: int, scope: dict[str, Any],
          out: list[Component]) -> None:
    """v0.2/v0.3 and Timeloop's flattened (processed) input: a ``local`` list holds its storage
    outermost first, as Timeloop reads it (its processed input lists DRAM first and the MAC last);
    ``subtree`` nests inside."""
    base, count = base_name(str(node.get("name", "")))
    instances, mesh_x = instances * count, mesh_x * count
    scope = {**scope, **mapping_at(node.get("attributes") or {}, where / "attributes")}
    local = list_at(node.get("local") or [], where / "local")
    comps = [_component(c, where / "local" / i, instances, mesh_x, scope) for i, c in enumerate(local)]
    out.extend(c for c in comps if not c.compute)
    subtrees = list_at(node.get("subtree") or [], where / "subtree")
    if len(subtrees) > 1:
        raise (where / "subtree").error(f"{base or 'architecture'} has {len(subtrees)} subtrees; only a "
                                        "linear hierarchy (one subtree per level) is supported")
    if subtrees:
        _tree(mapping_at(subtrees[0], where / "subtree" / 0), where / "subtree" / 0, instances, mesh_x, scope, out)
    out.extend(c for c in comps if c.compute)


def spatial_placeholder(container: str) -> str:
    """The name of the placeholder level Timeloop puts above a v0.4 container's fan-out."""
    return f"inter_{container}_spatial"


def _tag(node: dict[str, Any]) -> str:
    return str(node.get(TAG_KEY, "Component" if "class" in node else "Container"))


def _placed(node: dict[str, Any], at: Where, instances: int, mesh_x: int, scope: dict[str, Any]) -> Component:
    """A v0.4 component with the instances and mesh of the containers above it."""
    attrs = {**(node.get("attributes") or {}), "instances": instances, "meshX": mesh_x}
    return _component({**node, "attributes": attrs}, at, instances, mesh_x, scope)


def _parallel(node: dict[str, Any], at: Where, instances: int, mesh_x: int, scope: dict[str, Any],
              out: list[Component]) -> None:
    """``!Parallel`` branches side by side become consecutive levels in the order listed, as Timeloop
    flattens them (each branch keeps its own data spaces and bypasses the others); ``!Nothing`` adds none."""
    for j, raw in enumerate(list_at(node.get("nodes") or [], at / "nodes")):
        branch = mapping_at(raw, at / "nodes" / j)
        tag = _tag(branch)
        if tag == "Nothing":
            continue
        if tag != "Component" or "spatial" in branch or "nodes" in branch:
            raise (at / "nodes" / j).error(
                f"a !Parallel branch that is a !{tag} (with its own nodes or fan-out) cannot be expressed: "
                "dnnmap models one chain of levels; only !Component (and !Nothing) branches are supported")
        out.append(_placed(branch, at / "nodes" / j, instances, mesh_x, scope))


def _nodes(nodes: list[Any], where: Where, scope: dict[str, Any], out: list[Component]) -> None:
    """v0.4: nodes outermost first. A container's attributes apply to everything after it; its
    ``spatial`` mesh multiplies their instances, and Timeloop places a placeholder storage level
    ``inter_<container>_spatial`` (keeps nothing) above that fan-out, which mappings may target
    by the container's name."""
    instances, mesh_x = 1, 1
    for i, raw in enumerate(nodes):
        at = where / i
        node = mapping_at(raw, at)
        tag = _tag(node)
        if tag == "Parallel":
            _parallel(node, at, instances, mesh_x, scope, out)
            continue
        if tag == "Nothing":
            continue
        if tag == "Container":
            scope = {**scope, **mapping_at(node.get("attributes") or {}, at / "attributes")}
        spatial = mapping_at(node.get("spatial") or {}, at / "spatial")
        sx = integer(spatial.get("meshX", 1), at / "spatial" / "meshX", scope)
        sy = integer(spatial.get("meshY", 1), at / "spatial" / "meshY", scope)
        if sx < 1 or sy < 1:
            raise (at / "spatial").error("meshX and meshY must be >= 1")
        if tag == "Container" and "spatial" in node:
            name = spatial_placeholder(str(node.get("name", i)))
            out.append(_placed({"name": name, "class": DUMMY_CLASS}, at, instances, mesh_x, {}))
        instances, mesh_x = instances * sx * sy, mesh_x * sx
        if "nodes" in node:
            inner: list[Component] = []
            _nodes(list_at(node["nodes"], at / "nodes"), at / "nodes", scope, inner)
            out.extend(inner)
        elif tag != "Container":
            out.append(_placed(node, at, instances, mesh_x, scope))


def read_components(data: dict[str, Any], origin: str) -> tuple[list[Component], Component]:
    """The storage levels (outermost first) and the compute component of an architecture."""
    where = Where(origin, "architecture")
    arch = mapping_at(data.get("architecture"), where)
    comps: list[Component] = []
    scope = dict(mapping_at(data.get("variables") or {}, Where(origin, "variables")))
    if "nodes" in arch:
        _nodes(list_at(arch["nodes"], where / "nodes"), where / "nodes", scope, comps)
    elif "subtree" in arch:
        subtrees = list_at(arch["subtree"], where / "subtree")
        if len(subtrees) != 1:
            raise (where / "subtree").error("the architecture must have exactly one top-level subtree")
        _tree(mapping_at(subtrees[0], where / "subtree" / 0), where / "subtree" / 0, 1, 1, scope, comps)
    else:
        raise where.error("expected 'nodes' (v0.4) or 'subtree' (v0.2/v0.3)")
    storage = [c for c in comps if not c.compute]
    compute = [c for c in comps if c.compute]
    if len(compute) != 1:
        raise where.error(f"expected one compute component (a MAC), found {len(compute)}")
    if not storage:
        raise where.error("no storage level found")
    return storage, compute[0]


def _ert_energy(entry: object, where: Where) -> float:
    """An action's energy: a number, ``{energy}``, or a list of argument sets (the largest)."""
    if isinstance(entry, list):
        if not entry:
            raise where.error("an action with an empty list of argument sets")
        return max(_ert_energy(e, where / i) for i, e in enumerate(entry))
    if isinstance(entry, dict):
        return number(entry.get("energy"), where / "energy")
    return number(entry, where)


def read_ert(data: dict[str, Any], origin: str) -> dict[str, dict[str, float]]:
    """Accelergy ERT (v0.2-v0.4) -> component base name -> action -> energy per access."""
    where = Where(origin, "ERT")
    tables = mapping_at(data.get("ERT"), where).get("tables")
    if not tables:
        raise (where / "tables").error("the ERT has no tables (an empty or truncated file?); every component "
                                       "needs its action energies")
    out: dict[str, dict[str, float]] = {}
    if isinstance(tables, dict):
        for key, actions in tables.items():
            at = where / "tables" / key
            if not mapping_at(actions, at):
                raise at.error(f"table {key!r} lists no actions (a truncated ERT?)")
            out[leaf_name(str(key))] = {str(a): _ert_energy(e, at / a) for a, e in actions.items()}
    else:
        for i, table in enumerate(list_at(tables, where / "tables")):
            at = where / "tables" / i
            table = mapping_at(table, at)
            energies: dict[str, float] = {}
            actions = list_at(table.get("actions") or [], at / "actions")
            if not actions:
                raise (at / "actions").error(f"table {table.get('name')!r} lists no actions (a truncated ERT?)")
            for j, action in enumerate(actions):
                action = mapping_at(action, at / "actions" / j)
                name = str(action.get("name"))
                value = _ert_energy(action, at / "actions" / j)
                energies[name] = max(value, energies.get(name, value))
            out[leaf_name(str(table.get("name", "")))] = energies
    return out


def read_keeps(data: dict[str, Any], origin: str, levels: Sequence[str]
               ) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """``architecture_constraints`` keep/bypass directives: level name -> (keep, bypass) data spaces. Every
    entry needs a known ``type`` and a ``target``; a keep/bypass target must be one of the storage ``levels``
    (or a v0.4 container, whose placeholder level is above its fan-out), so that no bypass is lost."""
    where = Where(origin, "architecture_constraints")
    raw = data.get("architecture_constraints")
    if raw is None:
        return {}
    targets = mapping_at(raw, where).get("targets", [])
    out: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for i, t in enumerate(list_at(targets, where / "targets")):
        at = where / "targets" / i
        t = mapping_at(t, at)
        kind = t.get("type")
        if kind not in _KEEP_TYPES + _OTHER_CONSTRAINT_TYPES:
            raise (at / "type").error(f"unknown constraint type {kind!r}; expected one of "
                                      f"{', '.join(_KEEP_TYPES + _OTHER_CONSTRAINT_TYPES)}")
        raw_target = t.get("target")
        if not isinstance(raw_target, str) or not base_name(raw_target)[0]:
            raise (at / "target").error(f"a constraint needs the name of its target level, got {raw_target!r}")
        target = base_name(raw_target)[0]
        if kind not in _KEEP_TYPES:
            continue
        if target not in levels and spatial_placeholder(target) not in levels:
            raise (at / "target").error(f"unknown level {target!r} (a keep/bypass would be lost); the storage "
                                        f"levels are {list(levels)}")
        out[target] = (names_at(t.get("keep") or [], at / "keep"), names_at(t.get("bypass") or [], at / "bypass"))
    return out


def _roles_of(names: tuple[str, ...], where: Where) -> set[Role]:
    roles: set[Role] = set()
    for n in names:
        role = role_from_name(n)
        if role is None:
            raise where.error(f"cannot tell the role of data space {n!r}; name it like Weights, Inputs or Outputs")
        roles.add(role)
    return roles


def _keeps(c: Component, extra: tuple[tuple[str, ...], tuple[str, ...]] | None) -> list[Role]:
    keep, bypass = extra if extra is not None else (c.keep, c.bypass)
    kept = set(ALL_ROLES) - _roles_of(bypass, c.where)
    kept |= _roles_of(keep, c.where)
    return [r for r in ALL_ROLES if r in kept]


def _size(c: Component, word_bits: int, block: int) -> int | None:
    """The level's capacity in its words (None: not given); a size below one word is refused (a level that
    can hold nothing is not a storage level; leave it out of the design instead)."""
    a, at = c.attrs, c.where / "attributes"
    if "entries" in a:
        return integer(a["entries"], at / "entries", a, 1, limits.MAX_CAPACITY)
    for key in ("depth", "memory_depth"):
        if key in a:
            return integer(a[key], at / key, a, 1, limits.MAX_CAPACITY) * block
    if "sizeKB" in a:
        size_kb = number(a["sizeKB"], at / "sizeKB", a)
        if not 0 < size_kb * 1024 * 8 / word_bits <= limits.MAX_CAPACITY:
            raise (at / "sizeKB").error(f"must hold 1..{limits.MAX_CAPACITY:,} words, got {a['sizeKB']!r}")
        return max(1, int(size_kb * 1024 * 8 // word_bits))
    return None


def _word_bits(c: Component, default: int = 16) -> int:
    """The component's own word width (Timeloop counts its capacity, bandwidth and accesses in these words)."""
    for key in ("word-bits", "word_width", "datawidth"):
        if key in c.attrs:
            return integer(c.attrs[key], c.where / "attributes" / key, c.attrs, 1, MAX_WORD_BITS)
    return default


def _block(c: Component, word_bits: int, v4: bool) -> int:
    a, at = c.attrs, c.where / "attributes"
    width = integer(a["width"], at / "width", a, 1, MAX_WORD_BITS * 2**16) if "width" in a else None
    for key in ("block-size", "n_words", "block_size"):
        if key in a:
            block = integer(a[key], at / key, a)
            break
    else:
        block = width // word_bits if v4 and width is not None else 1
    if block < 1:
        raise at.error(f"block size must be >= 1, got {block}" + (f" (width {width} bits < one {word_bits}-bit word)"
                                                                  if width is not None and width < word_bits else ""))
    return block


def _is_dram(c: Component) -> bool:
    return "dram" in c.cls.lower() or str(c.attrs.get("technology", "")).upper() == "DRAM"


def _level_energy(c: Component, ert: dict[str, dict[str, float]], ert_file: str | None, block: int, mode: ErtMode,
                  notes: list[str]) -> dict[str, float]:
    """Per-word read/fill/update energies of a storage level. A given ERT must price every level (its
    read and its write or fill and update actions): a missing entry or action is a truncated ERT."""
    actions = ert.get(c.name)
    if actions:
        pick = {"read": ("random_read", "read"), "fill": ("random_fill", "fill", "write"),
                "update": ("random_update", "update", "write")}
        energies = {}
        for kind, names in pick.items():
            found = [actions[n] for n in names if n in actions]
            if not found:
                raise InputFileError(f"{ert_file}: field 'ERT.tables': the table of {c.name} has none of the "
                                     f"actions {', '.join(names)} (a truncated ERT?); it lists {sorted(actions)}")
            energies[kind] = found[0]
        if mode == "max":
            energies = dict.fromkeys(energies, max(energies.values()))
    elif "vector-access-energy" in c.attrs:
        e = number(c.attrs["vector-access-energy"], c.where / "attributes" / "vector-access-energy", c.attrs)
        energies = dict.fromkeys(("read", "fill", "update"), e)
    elif ert_file is not None:
        raise InputFileError(f"{ert_file}: field 'ERT.tables': no table for storage level {c.name} (a truncated "
                             f"ERT?); it has tables for {sorted(ert)}")
    else:
        notes.append(f"{c.name}: no ERT entry or vector-access-energy; its accesses cost 0")
        energies = dict.fromkeys(("read", "fill", "update"), 0.0)
    return {k: v / block for k, v in energies.items()}


def _fanout(parent: Component, child: Component) -> dict[str, Any] | None:
    if child.instances % parent.instances:
        raise child.where.error(f"{child.name} has {child.instances} instances, not a multiple of "
                                f"{parent.name}'s {parent.instances}")
    if child.instances == parent.instances:
        return None
    my, cy = parent.instances // parent.mesh_x, child.instances // child.mesh_x
    if child.mesh_x % parent.mesh_x or cy % my:
        raise child.where.error(f"the mesh of {child.name} ({child.mesh_x} x {cy}) does not subdivide "
                                f"{parent.name}'s ({parent.mesh_x} x {my})")
    x, y = child.mesh_x // parent.mesh_x, cy // my
    return {"shape": [x] if y == 1 else [x, y], "multicast": True, "multicast_rule": "identical",
            "reduction": True}


def _level(c: Component, child: Component, keeps: dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
           ert: dict[str, dict[str, float]], ert_file: str | None, mode: ErtMode, word_bits: int, v4: bool, last: bool,
           notes: list[str]) -> dict[str, Any]:
    if c.dummy:
        return {"name": c.name, "keeps": [], "capacity": 0, **({"fanout": f} if (f := _fanout(c, child)) else {})}
    word_bits = _word_bits(c, word_bits)
    block = _block(c, word_bits, v4)
    size = _size(c, word_bits, block)
    at = c.where / "attributes"
    level: dict[str, Any] = {"name": c.name}
    if last:
        level["keeps"] = list(ALL_ROLES)
        if size is not None and not _is_dram(c):
            level["capacity"] = size
    else:
        level["keeps"] = _keeps(c, keeps.get(c.name))
        if size is not None:
            level["capacity"] = size
    e = _level_energy(c, ert, ert_file, block, mode, notes)
    level["read_energy"], level["write_energy"] = e["read"], e["fill"]
    if e["update"] != e["fill"] and "output" in level["keeps"]:
        level["energy"] = {"output": {"update": e["update"]}}
    bandwidth = c.attrs.get("bandwidth")
    if bandwidth is not None:  # Timeloop splits a shared bandwidth evenly (its deprecated form)
        half = number(bandwidth, at / "bandwidth", c.attrs) / 2
        level["read_bandwidth"] = level["write_bandwidth"] = half
    for key in ("read_bandwidth", "write_bandwidth"):
        if key in c.attrs:
            level[key] = number(c.attrs[key], at / key, c.attrs)
    if "multiple-buffering" in c.attrs or "multiple_buffering" in c.attrs:
        key = "multiple-buffering" if "multiple-buffering" in c.attrs else "multiple_buffering"
        buffers = number(c.attrs[key], at / key, c.attrs)
        if buffers != int(buffers) or buffers < 1:
            raise (at / key).error(f"only whole buffering depths are supported, got {buffers}")
        level["buffers"] = int(buffers)
    level["halo_reuse"] = "innermost"
    level["read_modify_write"] = True
    fanout = _fanout(c, child)
    if fanout is not None:
        level["fanout"] = fanout
    return level


def _fanout_field(level: dict[str, Any]) -> dict[str, Any]:
    """Move ``level``'s fan-out out of it (for the empty level inserted below it)."""
    fanout = level.pop("fanout", None)
    return {"fanout": fanout} if fanout is not None else {}


def _boundary_registers(levels: list[dict[str, Any]]) -> list[str]:
    """Every role when the innermost level keeps nothing and fans out to the MACs (a ``dummy_storage``
    placeholder), else none. Timeloop counts a read per iteration only for the innermost storage level's own
    loops; a level above counts what changed at the storage boundary below it (nest analysis: the deltas of
    the child's working set). The placeholder has no loops of its own, so across a loop of the buffer above
    it a word the lanes already got is not read again: dnnmap's one-word operand registers per lane."""
    first = levels[0]
    return list(ALL_ROLES) if not first["keeps"] and "fanout" in first and len(levels) > 2 else []


def arch_from_timeloop(data: dict[str, Any], origin: dict[str, str], ert_energy: ErtMode = "per-action",
                       clock_mhz: float = 1000.0, name: str | None = None) -> ImportedArch:
    """The :class:`ArchSpec` of merged Timeloop inputs (``origin``: top-level key -> file)."""
    if "architecture" not in data:
        raise InputFileError(f"{', '.join(sorted(set(origin.values()))) or 'input'}: no top-level "
                             "'architecture' key")
    arch_file = origin["architecture"]
    storage, mac = read_components(data, arch_file)
    ert_file = origin.get("ERT")
    ert = read_ert(data, ert_file) if ert_file is not None else {}
    keeps = read_keeps(data, origin["architecture_constraints"], [c.name for c in storage]) \
        if "architecture_constraints" in data else {}
    word_bits = _word_bits(storage[0])
    notes: list[str] = [
        f"{c.name} holds {_word_bits(c, word_bits)}-bit words: its capacity and bandwidth are counted in its own words, "
        f"as Timeloop counts them; the spec's word width ({word_bits} bits, the backing store's) sizes "
        "memory traffic in bytes" for c in storage if not c.dummy and _word_bits(c, word_bits) != word_bits]
    version = str(mapping_at(data["architecture"], Where(arch_file, "architecture")).get("version", "0.2"))
    v4 = "nodes" in data["architecture"] or version.startswith("0.4")
    inner_first = list(reversed(storage))
    children = [mac, *inner_first[:-1]]
    levels = [_level(c, child, keeps, ert, ert_file, ert_energy, word_bits, v4, i == len(inner_first) - 1, notes)
              for i, (c, child) in enumerate(zip(inner_first, children))]
    if len(levels) == 1:  # dnnmap needs an inner level beside the backing store: an empty one
        levels.insert(0, {"name": PASS_THROUGH, "keeps": [], "capacity": 0, **_fanout_field(levels[0])})
        notes.append(f"one storage level: an empty level {PASS_THROUGH!r} (keeps nothing, no loops) sits "
                     "between it and the MACs")
    mac_actions = ert.get(mac.name, {})
    if ert_file is not None and not mac_actions:
        raise InputFileError(f"{ert_file}: field 'ERT.tables': no table for the compute component {mac.name} "
                             f"(a truncated ERT?); it has tables for {sorted(ert)}")
    found = [mac_actions[a] for a in _MAC_ACTIONS if a in mac_actions]
    mac_energy = found[0] if found else max(mac_actions.values(), default=0.0)
    if not mac_actions:
        notes.append(f"{mac.name}: no ERT entry; MACs cost 0")
    mac_bits = _word_bits(mac) if any(k in mac.attrs for k in ("word-bits", "word_width", "datawidth")) else word_bits
    registers = _boundary_registers(levels)
    if registers:
        notes.append(f"{levels[0]['name']} keeps nothing above the MACs' fan-out: Timeloop reads into it only the "
                     "words that change (its storage boundary remembers the last ones), as one-word operand "
                     "registers per MAC lane do (mac.operand_registers)")
    spec = {
        "name": name or Path(arch_file).stem.removesuffix(".arch"),
        "description": "imported from Timeloop",
        "source": f"timeloop import of {', '.join(sorted(set(origin.values())))}",
        "clock_mhz": clock_mhz,
        "word_bits": word_bits,
        "mac": {"energy": mac_energy, "precision_bits": mac_bits, "operand_registers": registers},
        "levels": levels,
    }
    return ImportedArch(parse_arch(spec, f"{arch_file} (imported)"), tuple(notes))


def import_timeloop_arch(paths: Sequence[str | Path], ert_energy: ErtMode = "per-action",
                         clock_mhz: float = 1000.0, name: str | None = None) -> ImportedArch:
    """Read a Timeloop architecture with its companion files (ERT, constraints) into an :class:`ArchSpec`."""
    data, origin = load_timeloop_files(paths)
    return arch_from_timeloop(data, origin, ert_energy, clock_mhz, name)
