"""The resumable result store of a sweep: one SQLite table keyed by the task's content hash.

Each finished task is committed at once (a killed sweep loses at most the tasks in flight); a restart
with the same command finds their keys and skips them; ``INSERT OR IGNORE`` on the primary key means a
task finished twice (a Dask retry, two sweeps on one file) is stored once, never counted twice.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, fields
from pathlib import Path
from typing import Any

from dnnmap.errors import InputFileError
from dnnmap.sweep.tasks import SweepRow

_COLUMNS = [f.name for f in fields(SweepRow)]
_TYPES = {"key": "TEXT PRIMARY KEY", "arch": "TEXT", "model": "TEXT", "objective": "TEXT", "mapper": "TEXT", "energy_unit": "TEXT",
          "macs": "INTEGER"}
_SCHEMA = "CREATE TABLE IF NOT EXISTS results ({})".format(
    ", ".join(f"{c} {_TYPES.get(c, 'REAL')}" for c in _COLUMNS))
_OPTIONAL = ("area_mm2",)


def _value_problem(column: str, value: Any) -> str | None:
    """Why a stored ``value`` is not what a sweep writes into ``column`` (an edited or damaged store), or None."""
    kind = _TYPES.get(column, "REAL").split()[0]
    if value is None:
        return None if column in _OPTIONAL else "is NULL"
    if kind == "TEXT":
        return None if isinstance(value, str) and value else f"is {value!r:.40}, not a name"
    if kind == "INTEGER":
        return None if type(value) is int and value >= 0 else f"is {value!r:.40}, not a count"
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        return f"is {value!r:.40}, not a finite non-negative number"
    return None


class ResultStore:
    """Sweep results in the SQLite file ``path`` (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self._sql():
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute(_SCHEMA)
            have = [row[1] for row in self._db.execute("PRAGMA table_info(results)")]
        if have != _COLUMNS:
            self._db.close()
            raise InputFileError(f"{self.path}: not a dnnmap sweep store (its results table has columns {have})")

    @contextmanager
    def _sql(self) -> Iterator[None]:
        """SQLite errors (a damaged file: 'database disk image is malformed') as an error naming the store."""
        try:
            yield
        except sqlite3.Error as err:
            db = getattr(self, "_db", None)
            if db is not None:
                db.close()
            damaged = type(err) is sqlite3.DatabaseError  # not a database, malformed (not: cannot open)
            raise InputFileError(f"{self.path}: cannot use as a sweep store ({err})"
                                 f"{'; delete it to start afresh' if damaged else ''}") from None

    def keys(self) -> set[str]:
        with self._sql():
            return {k for (k,) in self._db.execute("SELECT key FROM results")}

    def add(self, row: SweepRow) -> bool:
        """Store ``row`` unless its key is there already; True if it was new."""
        with self._sql(), self._db:
            cursor = self._db.execute(f"INSERT OR IGNORE INTO results VALUES ({', '.join('?' * len(_COLUMNS))})",
                                      astuple(row))
        return cursor.rowcount == 1

    def get(self, key: str) -> SweepRow | None:
        """The stored row of ``key``, every value checked (an edited store is refused naming key and column)."""
        with self._sql():
            found = self._db.execute("SELECT * FROM results WHERE key = ?", (key,)).fetchone()
        if not found:
            return None
        for column, value in zip(_COLUMNS, found, strict=True):
            problem = _value_problem(column, value)
            if problem:
                raise InputFileError(f"{self.path}: row {key}: column {column} {problem} (the store was edited "
                                     "or damaged; delete the row or the file to recompute)")
        return SweepRow(*found)

    def __len__(self) -> int:
        with self._sql():
            return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        self._db.close()
