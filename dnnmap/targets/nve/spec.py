"""NVE target specification: every size the thesis leaves open, as one validated model.

The thesis (NVE §3.1-3.4) fixes the lane count (16), the number formats (8-bit pixels,
16-bit weights, 32-bit accumulators), the register files (``rw[0-3]``, ``ri[0-22]``),
the latencies (read 2, write-to-read 2, register 1, VMAC-to-ACT 3) and the 1024-entry
activation LUT. It never gives the instruction-buffer size, the local-buffer size, the
word width or the encoding; those are parameters here (defaults documented in
``docs/nve.md``). The default instruction-buffer size (512) is the one that reproduces
the thesis's fusion outcome: speed-sign L3 maps (about 350 instructions each) cannot be
fused, while L1/L2 maps can.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dnnmap.errors import InputFileError


class NveSpec(BaseModel):
    """Parameters of one Neuro Vector Engine instance (frozen; load with :func:`load_spec`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lanes: int = Field(16, description="VMAC lanes = vertically neighbouring outputs per vector")
    pixels_per_word: int = Field(8, description="8-bit pixels per 64-bit local-buffer word")
    coeffs_per_word: int = Field(4, description="16-bit coefficients per word = rw register capacity")
    extra_image_registers: int = Field(7, description="ri[16-22]; bounds kernel rows per phase to 1 + this")
    pixel_bits: int = 8
    weight_bits: int = 16
    acc_bits: int = 32
    read_latency: int = Field(2, description="rd -> matching set register op (NVE §3.1)")
    write_to_read_latency: int = Field(2, description="wr -> rd of the same word (NVE §3.1)")
    register_latency: int = Field(1, description="register op -> consuming mac (NVE §3.1); the ISS models 1")
    vmac_to_act_latency: int = Field(3, description="set rb latch -> act (NVE §3.1)")
    act_lut_entries: int = Field(1024, description="activation LUT entries (10-bit index)")
    act_shift: int = Field(8, description="accumulator >> act_shift, saturated to 10 bits, indexes the LUT")
    act_lut_scale: float = Field(64.0, description="LUT entry i holds round(255*sigmoid((i-512)/scale))")
    instruction_buffer_size: int = Field(512, description="VLIW instructions the buffer holds (init+loop)")
    local_buffer_words: int = Field(4096, description="64-bit words of the dual-ported local buffer")
    agu_modes: int = Field(4, description="AGU mode-table entries, mode 0 = fixed address")
    stage_bits: int = Field(3, description="bits of the per-field stage predicate (modulo stages)")
    max_subsample: int = Field(2, description="largest stride (subsample) the image-register feed supports")
    fusion_requires_shared_inputs: bool = Field(
        True, description="Alg. 2 only merges maps that share an input map (face L3 stays unfused)")

    @model_validator(mode="after")
    def _check(self) -> NveSpec:
        if self.pixels_per_word * self.pixel_bits != self.coeffs_per_word * self.weight_bits:
            raise ValueError("pixels_per_word*pixel_bits must equal coeffs_per_word*weight_bits (one word width)")
        if self.lanes % self.pixels_per_word or self.lanes // self.pixels_per_word != 2:
            raise ValueError("lanes must be two words (ri[0-7] via port A, ri[8-15] via port B)")
        if self.register_latency != 1:
            raise ValueError("register_latency must be 1 (results visible next cycle, NVE §3.1; the ISS models this)")
        if min(self.read_latency, self.write_to_read_latency, self.vmac_to_act_latency) < 1:
            raise ValueError("read_latency, write_to_read_latency and vmac_to_act_latency must be >= 1")
        if self.act_lut_entries & (self.act_lut_entries - 1):
            raise ValueError("act_lut_entries must be a power of two")
        if self.extra_image_registers >= self.pixels_per_word:
            raise ValueError("extra_image_registers must be below pixels_per_word (one set-shift word)")
        if self.agu_modes < 2 or self.local_buffer_words < 16 or self.instruction_buffer_size < 8:
            raise ValueError("agu_modes >= 2, local_buffer_words >= 16 and instruction_buffer_size >= 8 required")
        return self

    @property
    def word_bits(self) -> int:
        return self.pixels_per_word * self.pixel_bits

    @property
    def address_bits(self) -> int:
        return max(1, (self.local_buffer_words - 1).bit_length())

    @property
    def max_stages(self) -> int:
        return 1 << self.stage_bits

    @property
    def max_rows_per_phase(self) -> int:
        """Kernel rows one image-register load can serve: ri[0-15] plus the shifted-in ri[16-22]."""
        return 1 + self.extra_image_registers


DEFAULT_SPEC = NveSpec()


_BOUNDS = {"local_buffer_words": 2**24, "stage_bits": 8, "pixel_bits": 32, "weight_bits": 32, "acc_bits": 64,
           "act_lut_entries": 2**16, "act_lut_scale": 1e6}  # others: at most 2**12
_MAY_BE_ZERO = ("act_shift", "extra_image_registers")


def spec_from_data(data: object, origin: str) -> NveSpec:
    """Validate parsed data (any subset of the fields) as an :class:`NveSpec`: strict types (``true`` is not 1,
    ``'16'`` is not a number) and sizes within what the compiler and the ISS can hold."""
    if not isinstance(data, dict):
        raise InputFileError(f"{origin}: an NVE spec must be a mapping of field: value")
    try:
        spec = NveSpec.model_validate(data, strict=True)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "spec"
        raise InputFileError(f"{origin}: invalid NVE spec field {field!r}: {err['msg']} (got {err['input']!r:.40}); "
                             f"allowed fields: {', '.join(NveSpec.model_fields)}") from e
    for name, value in spec.model_dump().items():
        if isinstance(value, bool):
            continue
        low, high = (0 if name in _MAY_BE_ZERO else 1), _BOUNDS.get(name, 2**12)
        if not low <= value <= high:
            raise InputFileError(f"{origin}: invalid NVE spec field {name!r}: {value} is outside {low}..{high}")
    return spec


def load_spec(path: str | Path) -> NveSpec:
    """Read a YAML spec file (any subset of the :class:`NveSpec` fields)."""
    from dnnmap.fileio import load_data

    data = load_data(path, "NVE spec")
    return spec_from_data({} if data is None else data, str(path))
