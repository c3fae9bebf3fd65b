"""TSO Algorithm 2 (TLESlicing): the OFM rows and filters each TLE computes."""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import MappingError

SLICINGS = ("KS", "KS&OFM", "OFM")  # PART_TLE of Algorithm 1
DATAFLOWS = ("IS", "OS", "WS")  # PART_TLT of Algorithm 1


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class TleSlice:
    """``(TLE_R, TLE_W)`` of Alg. 2 plus how many TLEs split rows and filters (KS&OFM: 2 x 2)."""

    p: str
    rows: int  # TLE_R
    filters: int  # TLE_W
    row_split: int
    filter_split: int


def tle_slicing(p: str, rows: int, filters: int, tle: int) -> TleSlice:
    """TSO Alg. 2: KS splits the filters over the TLEs, OFM the OFM rows, KS&OFM both in halves."""
    if p == "KS":
        return TleSlice(p, rows, _ceil(filters, tle), 1, tle)
    if p == "KS&OFM":
        if tle % 2:
            raise MappingError(f"KS&OFM slicing needs an even number of TLEs, the architecture has {tle}")
        return TleSlice(p, _ceil(rows, tle // 2), _ceil(filters, tle // 2), 2, tle // 2)
    if p == "OFM":
        return TleSlice(p, _ceil(rows, tle), filters, tle, 1)
    raise ValueError(f"unknown TLE slicing {p!r}; choose from {', '.join(SLICINGS)}")
