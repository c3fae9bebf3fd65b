"""The resumable result store of a sweep: one SQLite table keyed by the task's content hash.

Each finished task is committed at once (a killed sweep loses at most the tasks in flight); a restart
with the same command finds their keys and skips them; ``INSERT OR IGNORE`` on the primary key means a
task finished twice (a Dask retry, two sweeps on one file) is stored once, never counted twice.
"""

from __future__ import annotations

import sqlite3
from dataclasses import astuple, fields
from pathlib import Path

from dnnmap.errors import InputFileError
from dnnmap.sweep.tasks import SweepRow

_COLUMNS = [f.name for f in fields(SweepRow)]
_TYPES = {"key": "TEXT PRIMARY KEY", "arch": "TEXT", "model": "TEXT", "objective": "TEXT", "mapper": "TEXT", "energy_unit": "TEXT",
          "macs": "INTEGER"}
_SCHEMA = "CREATE TABLE IF NOT EXISTS results ({})".format(
    ", ".join(f"{c} {_TYPES.get(c, 'REAL')}" for c in _COLUMNS))


class ResultStore:
    """Sweep results in the SQLite file ``path`` (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute(_SCHEMA)
            have = [row[1] for row in self._db.execute("PRAGMA table_info(results)")]
        except sqlite3.Error as err:
            raise InputFileError(f"{self.path}: cannot use as a sweep store ({err})") from None
        if have != _COLUMNS:
            self._db.close()
            raise InputFileError(f"{self.path}: not a dnnmap sweep store (its results table has columns {have})")

    def keys(self) -> set[str]:
        return {k for (k,) in self._db.execute("SELECT key FROM results")}

    def add(self, row: SweepRow) -> bool:
        """Store ``row`` unless its key is there already; True if it was new."""
        with self._db:
            cursor = self._db.execute(f"INSERT OR IGNORE INTO results VALUES ({', '.join('?' * len(_COLUMNS))})",
                                      astuple(row))
        return cursor.rowcount == 1

    def get(self, key: str) -> SweepRow | None:
        found = self._db.execute("SELECT * FROM results WHERE key = ?", (key,)).fetchone()
        return SweepRow(*found) if found else None

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        self._db.close()
