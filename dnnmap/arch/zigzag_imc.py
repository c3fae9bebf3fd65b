"""ZigZag's in-memory-computing arrays (``operational_array: is_imc``) as energies per MAC, per array row and
per array column, and cycles per MAC (docs/zigzag.md "In-memory computing arrays").

ZigZag prices an analog (``imc_type: analog``) or digital macro per *activation* (one step of the array, its
``activation / bit_serial`` bit-serial passes) from gate-level constants of a 28 nm node: DACs, ADCs, 1-bit
multipliers, bit-line addition, adder trees, place-value adders and accumulators, each scaled by the array
rows or columns the layer's spatial mapping fills. The wordline dimension (the first of the array's dimension
names in sorted order; the input register serves it) broadcasts one input across the columns; the bitline
dimension (the second; the output register serves it) sums a column's products. So every term ZigZag scales
by the mapped rows is a cost of one input word entering a row (charged on the reads of the input register),
every term scaled by the mapped columns one of one output word leaving a column (charged on the updates of
the output register), and the digital array's terms that scale with the whole array are charged per MAC at
full rows and columns. The weight cells (ZigZag's ``cells`` memory) are an ordinary level: writing a weight
costs its ``w_cost``; reading it costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dnnmap.workload.importers.timeloop_yaml import Where, integer

VDD = 0.9  # V, ZigZag's 28 nm constants
NAND2_CAP = 0.7e-3  # pF
XOR2_CAP = 1.5 * NAND2_CAP
DFF_CAP = 3 * NAND2_CAP
BITLINE_CAP = NAND2_CAP / 2  # per SRAM cell
ADDER_1B = (3 * NAND2_CAP + 2 * XOR2_CAP) * VDD ** 2  # pJ, one full adder (3 NAND2 + 2 XOR2)
MULTIPLIER_1B = 0.5 * NAND2_CAP * VDD ** 2  # one NOR gate, half of it switching (the weight stays)
REGISTER_1B = DFF_CAP * VDD ** 2
IMC_TYPES = ("analog", "digital")


@dataclass(frozen=True)
class ImcArray:
    """One ZigZag in-memory-computing macro: its type, precisions and the sizes of its two dimensions."""

    analog: bool
    act_bits: int  # input (activation) precision
    weight_bits: int
    serial_bits: int  # input bits fed per cycle
    adc_bits: int
    wordline: str  # array dimension the input register serves (inputs broadcast along a row)
    bitline: str  # array dimension the output register serves (products summed along a column)
    rows: int  # size of the bitline dimension: rows of a column (adder tree inputs)
    columns: int  # size of the wordline dimension: columns a row reaches

    @property
    def passes(self) -> int:
        """Bit-serial passes per MAC: the cycles one MAC takes."""
        return self.act_bits // self.serial_bits

    def dac(self) -> float:
        """Energy of one DAC conversion (0 for 1-bit inputs)."""
        return 0.0 if self.serial_bits == 1 else 50e-3 * self.serial_bits * VDD ** 2

    def adc(self) -> float:
        """Energy of one ADC conversion."""
        return (100 * self.adc_bits + 0.001 * 4 ** self.adc_bits) * VDD ** 2 / 1000 if self.adc_bits else 0.0

    def _place_value_adders(self) -> float:
        """1-bit adders of a column's place-value adder tree (weight bits of ADC outputs in the analog array,
        bit-serial partial sums in the digital one)."""
        inputs = self.weight_bits if self.analog else self.serial_bits
        width = self.adc_bits if self.analog else self.weight_bits + int(math.log2(self.rows))
        return 0.0 if inputs == 1 else width * (inputs - 1) + inputs * (math.log2(inputs) - 0.5)

    def _accumulator_bits(self) -> float:
        if self.serial_bits == self.act_bits:
            return 0.0
        return self.act_bits + self.weight_bits + (self.adc_bits if self.analog else math.log2(self.rows))

    def _tree_adders(self) -> int:
        """1-bit adders of the digital array's adder tree over a whole column."""
        depth = int(math.log2(self.rows))
        return self.rows * (self.weight_bits + 1) - (self.weight_bits + depth + 1)

    def per_row(self) -> dict[str, float]:
        """Energy per input word entering one row, per component (every bit-serial pass)."""
        if not self.analog:
            return {}
        return {"DAC": self.passes * self.dac(),
                "multipliers": self.passes * MULTIPLIER_1B * self.weight_bits * self.columns}

    def per_column(self) -> dict[str, float]:
        """Energy per output word leaving one column, per component (every bit-serial pass)."""
        out: dict[str, float] = {}
        if self.analog:
            out["ADC"] = self.passes * self.adc() * self.weight_bits
            out["bit-line addition"] = self.passes * BITLINE_CAP * VDD ** 2 * self.weight_bits * self.rows
        out["place-value adders"] = self.passes * ADDER_1B * self._place_value_adders()
        out["accumulator"] = self.passes * (ADDER_1B + REGISTER_1B) * self._accumulator_bits()
        return {k: v for k, v in out.items() if v}

    def per_mac(self) -> dict[str, float]:
        """Energy per MAC of the digital array's multipliers and adder trees with every row and column used."""
        if self.analog:
            return {}
        return {"multipliers": self.passes * MULTIPLIER_1B * self.serial_bits * self.weight_bits,
                "adder trees": self.passes * ADDER_1B * self._tree_adders() * self.serial_bits / self.rows}


def _bits(value: object, at: Where, low: int = 1) -> int:
    return integer(value, at, low=low, high=64)


def imc_array(oa: dict[str, Any], shape: dict[str, int], at: Where) -> ImcArray:
    """The in-memory-computing macro of an ``operational_array`` with ``is_imc``; ``shape``: its dimensions."""
    kind = oa.get("imc_type")
    if kind not in IMC_TYPES:
        raise (at / "imc_type").error(f"must be one of {', '.join(IMC_TYPES)}, got {kind!r}")
    precision = oa.get("input_precision")
    if not isinstance(precision, list) or len(precision) != 2:
        raise (at / "input_precision").error(f"expected [activation bits, weight bits], got {precision!r}")
    act, weight = (_bits(p, at / "input_precision" / i) for i, p in enumerate(precision))
    serial = _bits(oa.get("bit_serial_precision"), at / "bit_serial_precision")
    if act % serial:
        raise (at / "bit_serial_precision").error(f"{serial} does not divide the activation precision {act}: "
                                                  "a MAC would take a fractional number of cycles")
    adc = _bits(oa.get("adc_resolution", 0), at / "adc_resolution", low=0) if kind == "analog" else 0
    if len(shape) < 2:
        raise (at / "dimensions").error("an in-memory-computing array needs a wordline and a bitline dimension")
    wordline, bitline = sorted(shape)[:2]
    if len(shape) > 2:
        raise (at / "dimensions").error(f"{sorted(shape)[2:]}: several macros (banks) beside the wordline "
                                        f"{wordline} and bitline {bitline} dimensions are not read")
    imc = ImcArray(kind == "analog", act, weight, serial, adc, wordline, bitline, shape[bitline], shape[wordline])
    powers = ({"weight precision (place-value adder inputs)": weight} if imc.analog
              else {"bitline size (adder tree inputs)": imc.rows, "bit-serial precision": serial})
    bad = [f"{k} {v}" for k, v in powers.items() if v & (v - 1)]
    if bad:
        raise at.error(f"ZigZag's adder trees need powers of two: {', '.join(bad)}")
    return imc
