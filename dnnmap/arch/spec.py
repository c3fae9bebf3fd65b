"""Architecture specification: memory levels, spatial fan-outs, MAC array, DRAM transfer model.

Specs are YAML files validated with pydantic (``load_arch``); ``docs/arch-spec.md``
documents every field with a commented example. Levels are listed innermost first and
the last level is the backing store (DRAM). A level's ``fanout`` describes the spatial
array *below* it: each instance of the level feeds ``prod(fanout.shape)`` instances of
the next inner level (or, for the innermost level, of MAC units).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dnnmap import limits
from dnnmap.errors import InputFileError, UnknownNameError, did_you_mean, unknown_name_message
from dnnmap.fileio import as_tuples, at_line, builtin_wins, load_data, yaml_line

Role = Literal["input", "weight", "output"]
ALL_ROLES: tuple[Role, ...] = ("input", "weight", "output")
Action = Literal["read", "fill", "update"]
ACTIONS: tuple[Action, ...] = ("read", "fill", "update")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fanout(_Strict):
    """Spatial array between a level and the instances below it."""

    shape: tuple[int, ...] = Field(description="1-D [n] or 2-D [x, y] array of child instances")
    multicast: bool = Field(True, description="one read from the parent may be delivered to many children")
    multicast_rule: Literal["union", "identical"] = Field(
        "union", description="union: a word read once reaches every child needing it, also children whose "
        "tiles only overlap (sliding windows); identical: fan-out by fan-out, one read serves only the "
        "positions whose subtrees need identical data (Timeloop's rule)")
    no_multicast: tuple[Role, ...] = Field((), description="tensor roles this network never multicasts")
    reduction: bool = Field(True, description="partial sums of children are reduced in the network")
    hop_energy: float = Field(0.0, ge=0, description="energy per word delivered to a child (Eyeriss 'array' cost)")
    ingress_bandwidth: float | None = Field(
        None, gt=0, description="words per cycle per instance of the owning level that the network carries down "
        "to the children (a multicast word once); null = unlimited (docs/cost-model.md section 2b)")
    egress_bandwidth: float | None = Field(
        None, gt=0, description="words per cycle per instance of the owning level that the network carries up "
        "from the children (a reduced word once); null = unlimited")

    @field_validator("shape")
    @classmethod
    def _shape(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not 1 <= len(v) <= 2 or any(x < 1 for x in v):
            raise ValueError("must be [n] or [x, y] with positive integers")
        return v

    @property
    def size(self) -> int:
        return math.prod(self.shape)


class TransferModel(_Strict):
    """DRAM transfer-time model. ``volume``: bytes / bandwidth. ``burst``: TSO Alg. 4."""

    model: Literal["volume", "burst"] = "volume"
    bandwidth_gbps: float = Field(gt=0, description="sustained bandwidth in GB/s (1e9 bytes/s)")
    burst_bytes: int = Field(64, gt=0, description="DRAM burst size in bytes")
    cas_ns: float = Field(14.0, ge=0, description="latency paid per burst (CAS) in ns")


class ActionEnergy(_Strict):
    """Energy per word of each action on one tensor role; an unset action takes the level's
    ``read_energy`` (read) or ``write_energy`` (fill, update)."""

    read: float | None = Field(None, ge=0, description="word read out: to a child or MAC lane, drained to the "
                               "parent, or read for a read-modify-write accumulation")
    fill: float | None = Field(None, ge=0, description="word written from the parent")
    update: float | None = Field(None, ge=0, description="word written from a child or MAC lane (partial sum)")


class Level(_Strict):
    """One memory level (per instance)."""

    name: str
    capacity: int | dict[Role, int] | None = Field(
        None, description="per instance, in capacity_unit; a mapping role->size partitions it; null = unbounded")
    capacity_unit: Literal["words", "bits"] = Field(
        "words", description="words: each tile word counts 1; bits: it counts its tensor's word_bits")
    keeps: tuple[Role, ...] = Field(ALL_ROLES, description="tensor roles stored here; others bypass")
    read_energy: float = Field(0.0, ge=0, description="energy per word read")
    write_energy: float = Field(0.0, ge=0, description="energy per word written")
    energy: dict[Role, ActionEnergy] = Field(
        default_factory=dict, description="per tensor role and action, overriding read_energy/write_energy")
    bandwidth: float | None = Field(None, gt=0, description="words read + written per cycle per instance; "
                                    "null = unlimited")
    read_bandwidth: float | None = Field(None, gt=0, description="words read per cycle per instance")
    write_bandwidth: float | None = Field(None, gt=0, description="words written per cycle per instance")
    fanout: Fanout | None = None
    transfer: TransferModel | None = Field(None, description="DRAM transfer-time model; only on the last level")
    buffers: int = Field(1, ge=1, description="multiple buffering depth: a tile may use capacity / buffers")
    halo_reuse: bool | Literal["innermost"] = Field(
        True, description="false: a tile that changes is refilled whole, the words it shares with the previous "
        "tile (a sliding-window halo) included; innermost: the shared words are kept only across a step of the "
        "innermost loop above the level, a changed tile is refilled whole after outer loops step (Timeloop's rule)")
    read_modify_write: bool = Field(True, description="an accumulation into a word that already holds a "
                                    "partial sum reads it first (charged as a read)")

    @field_validator("keeps")
    @classmethod
    def _keeps(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError("roles listed twice")
        return v

    @model_validator(mode="after")
    def _capacity_roles(self) -> "Level":
        if isinstance(self.capacity, dict):
            extra = set(self.capacity) - set(self.keeps)
            if extra:
                raise ValueError(f"capacity given for roles {sorted(extra)} that the level does not keep")
            if any(c < 0 for c in self.capacity.values()):
                raise ValueError("capacities must be >= 0")
        elif self.capacity is not None and self.capacity < 0:
            raise ValueError("capacity must be >= 0")
        extra = set(self.energy) - set(self.keeps)
        if extra:
            raise ValueError(f"energy given for roles {sorted(extra)} that the level does not keep")
        return self

    def capacity_for(self, role: str) -> float:
        """Capacity (in ``capacity_unit``) one buffer of ``role``'s partition offers: inf when
        unbounded, the capacity divided by the buffering depth otherwise."""
        if self.capacity is None:
            return math.inf
        cap = self.capacity.get(role, 0) if isinstance(self.capacity, dict) else self.capacity
        return cap / self.buffers

    def energy_of(self, role: str, action: Action) -> float:
        """Energy per word of ``action`` on a tensor of ``role`` at this level."""
        given = self.energy.get(role)  # type: ignore[call-overload]
        value = getattr(given, action) if given is not None else None
        if value is not None:
            return value
        return self.read_energy if action == "read" else self.write_energy

    @property
    def fanout_size(self) -> int:
        return self.fanout.size if self.fanout else 1


class Sparsity(_Strict):
    """Hardware support for one compressed sparse operand (RTML section 3.1; docs/sparse.md): the tensor of
    a layer whose density is below 1 (weights in inference and the forward pass, activations in the
    backward passes) is stored compressed - its non-zeros plus metadata - at level ``decompress_below``
    and every level above it; below it (and at the MAC lanes) it is dense. Without ``decompress_below``
    the MACs consume the compressed stream and skip the zeros: only non-zeros are fetched and multiplied."""

    format: Literal["bitmap", "csr"] = Field(
        "bitmap", description="bitmap: one metadata bit per dense element; csr: index_bits per non-zero plus "
        "pointer_bits per row (a row: the tensor's innermost axis)")
    index_bits: int = Field(8, ge=1, le=64, description="csr: bits of one non-zero's coordinate within its row")
    pointer_bits: int = Field(16, ge=1, le=64, description="csr: bits of one row pointer")
    roles: tuple[Role, ...] = Field(("weight", "input"), description="roles whose tensors the hardware can hold "
                                    "compressed; a sparse tensor of another role is processed dense")
    decompress_below: str | None = Field(
        None, description="level name: the operand is compressed at this level and above, decompressed on its "
        "way below it (dense MACs); null: compressed everywhere and the MACs skip its zeros")
    density: dict[Role, float] = Field(
        default_factory=dict, description="default density per role for layers that give none (0 < d <= 1)")

    @field_validator("roles")
    @classmethod
    def _roles(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if "output" in v:
            raise ValueError("the output cannot be compressed (only input operands are sparse)")
        return v

    @field_validator("density")
    @classmethod
    def _density(cls, v: dict[str, float]) -> dict[str, float]:
        for role, d in v.items():
            if not 0 < d <= 1:
                raise ValueError(f"density of {role} must be in (0, 1], got {d}")
        if "output" in v:
            raise ValueError("the output cannot be the sparse operand (only inputs are compressed)")
        return v


class Mac(_Strict):
    energy: float = Field(1.0, ge=0, description="energy per MAC")
    precision_bits: int = Field(16, gt=0)
    cycles: int = Field(1, ge=1, le=1024, description="cycles one MAC takes on a lane: every temporal step of "
                        "a mapping lasts this long (a bit-serial array feeding an 8-bit input 2 bits a cycle: 4)")
    operand_registers: tuple[Role, ...] = Field(
        (), description="roles held in a one-word register per MAC lane: re-read (written) only when the "
        "lane's word changes between consecutive steps")


class VectorUnit(_Strict):
    """The unit that runs the layers whose operations are not MACs (pooling, element-wise, softmax, norms,
    activations, rotary embeddings; docs/arch-spec.md). Without one the MAC array runs them, one operation
    per MAC lane and cycle at the MAC's energy."""

    lanes: int = Field(gt=0, description="operations per cycle")
    energy: float = Field(ge=0, description="energy per operation")
    bandwidth: float | None = Field(None, gt=0, description="words per cycle the unit reads and writes (each "
                                    "input word read once, each output word written once); null = unlimited")


class ArchSpec(_Strict):
    name: str
    description: str = ""
    source: str = Field("", description="where the numbers come from")
    clock_mhz: float = Field(gt=0)
    word_bits: int | dict[Role, int] = Field(16, description="bits per tensor element, or per role")
    final_output_bits: int | None = Field(
        None, description="bits of a final output element: outputs that leave a level complete (no reduction "
        "left above it, not a partial-sum spill) move at this width, partial sums at the output's word_bits "
        "(docs/cost-model.md section 2b); null = the output's word_bits")
    energy_unit: str = "pJ"
    mac: Mac = Mac()
    overlap: bool = Field(True, description="compute and transfers overlap (latency = max); false: they add (TSO NMP)")
    sparsity: Sparsity | None = Field(None, description="compressed sparse operand support (docs/sparse.md); "
                                      "null: dense hardware, zeros are stored, moved and multiplied")
    vector: VectorUnit | None = Field(None, description="the unit running non-MAC layers; null: the MAC array")
    levels: tuple[Level, ...]

    @field_validator("word_bits")
    @classmethod
    def _word_bits(cls, v: int | dict[str, int]) -> int | dict[str, int]:
        widths = v.values() if isinstance(v, dict) else (v,)
        if any(w < 1 or w > 1024 for w in widths):
            raise ValueError("word widths must be between 1 and 1024 bits")
        if isinstance(v, dict) and set(v) != set(ALL_ROLES):
            raise ValueError(f"per-role word_bits must give all of {list(ALL_ROLES)}")
        return v

    @model_validator(mode="after")
    def _final_output_bits(self) -> "ArchSpec":
        final, partial = self.final_output_bits, self.bits_of("output")
        if final is not None and not 1 <= final <= partial:
            raise ValueError(f"final_output_bits: {final} must be between 1 and the output's word_bits ({partial}): "
                             "final outputs are at most as wide as the partial sums they are summed in")
        return self

    @model_validator(mode="after")
    def _levels(self) -> "ArchSpec":
        if len(self.levels) < 2:
            raise ValueError("levels: need at least one inner level and the backing store (the last level)")
        names = [lv.name for lv in self.levels]
        if len(set(names)) != len(names):
            raise ValueError(f"levels: duplicate level names {names}")
        top = self.levels[-1]
        if set(top.keeps) != set(ALL_ROLES):
            raise ValueError(f"levels: the last level ({top.name}) is the backing store and must keep input, "
                             "weight and output")
        for lv in self.levels[:-1]:
            if lv.transfer is not None:
                raise ValueError(f"levels: {lv.name}: 'transfer' is only allowed on the last (DRAM) level")
        below = self.sparsity.decompress_below if self.sparsity is not None else None
        if below is not None and below not in names:
            raise ValueError(f"sparsity.decompress_below: no level {below!r}; levels: {', '.join(names)}")
        return self

    # ---- derived quantities ------------------------------------------------------
    def bits_of(self, role: str) -> int:
        """Bits of one element of a tensor of ``role``."""
        return self.word_bits[role] if isinstance(self.word_bits, dict) else self.word_bits  # type: ignore[index]

    def bytes_of(self, role: str) -> float:
        return self.bits_of(role) / 8

    @property
    def final_bits(self) -> int:
        """Bits of a final output element (``final_output_bits``, by default the output's ``word_bits``)."""
        return self.final_output_bits if self.final_output_bits is not None else self.bits_of("output")

    def moved_bits(self, role: str, final: bool) -> int:
        """Bits one moved element of ``role`` takes: a final output's (``final``) or the role's word."""
        return self.final_bits if final and role == "output" else self.bits_of(role)

    def capacity_units_of(self, level: Level, role: str) -> int:
        """Capacity units one element of ``role`` takes at ``level``: its bits where the level counts
        capacity in bits (``capacity_unit: bits``), else 1 (a word)."""
        return self.bits_of(role) if level.capacity_unit == "bits" else 1

    @property
    def dram(self) -> Level:
        return self.levels[-1]

    @property
    def num_macs(self) -> int:
        return math.prod(lv.fanout_size for lv in self.levels)

    def instances(self, i: int) -> int:
        """Number of instances of level ``i`` (product of the fan-outs above it)."""
        return math.prod(lv.fanout_size for lv in self.levels[i + 1:])

    def level_index(self, name: str) -> int:
        for i, lv in enumerate(self.levels):
            if lv.name == name:
                return i
        raise UnknownNameError(f"architecture {self.name!r} has no level {name!r};"
                               f"{did_you_mean(name, (lv.name for lv in self.levels))} levels: "
                               f"{', '.join(lv.name for lv in self.levels)}")

    @property
    def peak_macs_per_second(self) -> float:
        return self.num_macs * self.clock_mhz * 1e6


PRESET_DIR = Path(__file__).parent / "presets"


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


_TYPE_TAGS = ("int", "float", "str", "bool", "none", "tuple", "list", "dict")


def _field_path(loc: tuple[object, ...]) -> str:
    """``('levels', 0, 'capacity', 'dict[str,int]', 'input')`` -> ``levels.0.capacity.input`` (union tags dropped)."""
    parts = [str(p) for p in loc if isinstance(p, int) or (str(p) not in _TYPE_TAGS and "[" not in str(p))]
    return ".".join(parts) or "(top level)"


def _format_validation_error(path: str, err: ValidationError) -> str:
    lines = [f"{path}: invalid architecture spec"]
    seen = set()
    for e in err.errors():
        loc = _field_path(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check spelling; see docs/arch-spec.md for the allowed fields)"
        elif e["type"] in ("int_type", "float_type", "bool_type", "string_type", "tuple_type", "dict_type"):
            shown = list(e["input"]) if isinstance(e["input"], tuple) else e["input"]
            msg = f"{msg}, got {type(shown).__name__} {shown!r:.40}"
        if (loc, msg) not in seen:
            seen.add((loc, msg))
            lines.append(f"  field '{loc}'{at_line(yaml_line(path, e['loc']))}: {msg}")
    return "\n".join(lines)


def _limits_problem(spec: ArchSpec) -> tuple[str, str] | None:
    """(field, why) of the first resource limit (dnnmap.limits) ``spec`` exceeds, or None."""
    if len(spec.levels) > limits.MAX_LEVELS:
        return "levels", (f"{len(spec.levels)} levels exceed the limit {limits.MAX_LEVELS} (the map space grows "
                          "exponentially with the level count)")
    if spec.num_macs > limits.MAX_MACS:
        return "levels", f"{spec.num_macs:,} MAC lanes (product of the fan-outs) exceed the limit {limits.MAX_MACS:,}"
    rates = [("clock_mhz", spec.clock_mhz)]
    energies = [("mac.energy", spec.mac.energy)]
    if spec.vector is not None:
        energies.append(("vector.energy", spec.vector.energy))
        rates.append(("vector.bandwidth", spec.vector.bandwidth))
        if spec.vector.lanes > limits.MAX_MACS:
            return "vector.lanes", f"{spec.vector.lanes:,} lanes exceed the limit {limits.MAX_MACS:,}"
    for i, lv in enumerate(spec.levels):
        at = f"levels.{i}"
        caps = lv.capacity.values() if isinstance(lv.capacity, dict) else [lv.capacity or 0]
        if max(caps, default=0) > limits.MAX_CAPACITY:
            return f"{at}.capacity", f"exceeds the limit {limits.MAX_CAPACITY:,} (2**48)"
        if lv.buffers > 1024:
            return f"{at}.buffers", "exceeds the limit 1,024"
        energies += [(f"{at}.read_energy", lv.read_energy), (f"{at}.write_energy", lv.write_energy)]
        energies += [(f"{at}.energy.{role}.{a}", getattr(e, a)) for role, e in lv.energy.items() for a in ACTIONS]
        rates += [(f"{at}.{f}", getattr(lv, f)) for f in ("bandwidth", "read_bandwidth", "write_bandwidth")]
        if lv.fanout is not None:
            energies.append((f"{at}.fanout.hop_energy", lv.fanout.hop_energy))
            rates += [(f"{at}.fanout.{f}", getattr(lv.fanout, f)) for f in ("ingress_bandwidth", "egress_bandwidth")]
        if lv.transfer is not None:
            rates.append((f"{at}.transfer.bandwidth_gbps", lv.transfer.bandwidth_gbps))
            if lv.transfer.cas_ns > limits.MAX_RATE or lv.transfer.burst_bytes > 2**30:
                return f"{at}.transfer", f"cas_ns above {limits.MAX_RATE:g} or burst_bytes above 2**30"
    for field, value in energies:
        if value is not None and value > limits.MAX_ENERGY:
            return field, f"{value:g} exceeds the limit {limits.MAX_ENERGY:g} (energies must stay finite)"
    for field, value in rates:
        if value is not None and not limits.MIN_RATE <= value <= limits.MAX_RATE:
            return field, (f"{value:g} is outside {limits.MIN_RATE:g}..{limits.MAX_RATE:g} (transfer and compute "
                           "times divide by it and must stay finite)")
    if spec.mac.precision_bits > 1024:
        return "mac.precision_bits", "exceeds the limit 1,024"
    return None


def parse_arch(data: object, origin: str = "<spec>") -> ArchSpec:
    """Validate a parsed YAML/JSON object as an :class:`ArchSpec`: strict types (``true`` is not 1, ``'200'``
    is not a number, 2.5 is not an integer) and the resource limits of :mod:`dnnmap.limits`."""
    if not isinstance(data, dict):
        raise InputFileError(f"{origin}: an architecture spec must be a mapping with 'name', 'clock_mhz', 'levels'")
    try:
        spec = ArchSpec.model_validate(as_tuples(data), strict=True)
    except ValidationError as err:
        raise InputFileError(_format_validation_error(origin, err)) from err
    problem = _limits_problem(spec)
    if problem:
        raise InputFileError(f"{origin}: invalid architecture spec\n  field '{problem[0]}': {problem[1]}")
    return spec


def _check_complete(data: object, origin: str) -> None:
    """A file whose backing store gives no energy at all is most likely truncated: refuse it."""
    levels = data.get("levels") if isinstance(data, dict) else None
    top = levels[-1] if isinstance(levels, list) and levels else None
    if isinstance(top, dict) and not {"read_energy", "write_energy", "energy"} & set(top):
        raise InputFileError(f"{origin}: invalid architecture spec\n  field 'levels.{len(levels) - 1}' "
                             f"({top.get('name', '?')}): the backing store gives no energy (read_energy, "
                             "write_energy or energy); is the file truncated? Write read_energy: 0 to declare it free")


def load_arch(name_or_path: str | Path) -> ArchSpec:
    """A preset by name (``eyeriss``) or a YAML file path. A preset's name is the preset even when a file or
    folder of that name is in the current directory (``./eyeriss`` reads that; :func:`fileio.builtin_wins`)."""
    p = Path(name_or_path)
    preset = PRESET_DIR / f"{str(name_or_path).lower()}.yaml"
    if builtin_wins(name_or_path, preset.is_file(), "architecture preset"):
        p = preset
    elif not (p.suffix.lower() in (".yaml", ".yml", ".json") or p.exists()):
        p = preset
        if not p.is_file():
            raise UnknownNameError(unknown_name_message("architecture", str(name_or_path), preset_names(), "presets:")
                                   + " (or give a path to a .yaml spec)")
    data = load_data(p, "architecture file")
    _check_complete(data, str(p))
    return parse_arch(data, str(p))
