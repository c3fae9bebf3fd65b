"""Small builders for hand-written simulator test cases."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec, Fanout, Level
from dnnmap.mapping.mapping import LevelMapping, Mapping


def arch_of(*levels: Level) -> ArchSpec:
    """An architecture with the given levels (innermost first, the last one is DRAM)."""
    return ArchSpec(name="hand", clock_mhz=100.0, levels=levels)


def level(name: str, keeps: tuple[str, ...] = ("input", "weight", "output"), fanout: int | None = None,
          multicast: bool = True, reduction: bool = True) -> Level:
    fan = Fanout(shape=(fanout,), multicast=multicast, reduction=reduction) if fanout else None
    return Level(name=name, keeps=keeps, fanout=fan)


def mapping_of(*levels: dict) -> Mapping:
    """Levels innermost first, each a dict with optional temporal/order/spatial/keeps entries."""
    return Mapping(levels=tuple(
        LevelMapping(temporal=tuple(lv.get("temporal", {}).items()), order=tuple(lv.get("order", ())),
                     spatial=tuple(lv.get("spatial", {}).items()), keeps=lv.get("keeps"))
        for lv in levels))
