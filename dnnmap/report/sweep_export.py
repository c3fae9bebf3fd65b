"""Sweep results as files (``dnnmap sweep --csv FILE --json FILE``): one row per task, every field of
:class:`dnnmap.sweep.tasks.SweepRow` under its own name (latency in seconds, energy in ``energy_unit``)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence

from dnnmap.sweep.tasks import SweepRow

FIELDS = tuple(f.name for f in dataclasses.fields(SweepRow))


def rows_to_csv(rows: Sequence[SweepRow]) -> str:
    """The rows as CSV text with a header line; an unknown area is an empty cell."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in dataclasses.asdict(row).items()})
    return out.getvalue()


def rows_to_json(rows: Sequence[SweepRow]) -> str:
    """The rows as a JSON list of objects (an unknown area is null)."""
    return json.dumps([dataclasses.asdict(row) for row in rows], indent=2) + "\n"
