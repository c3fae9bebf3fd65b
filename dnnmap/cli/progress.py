"""Progress of long commands, one implementation for all of them.

On a terminal: a bar with the count done, the elapsed time, an ETA and the current item (a layer, a
figure, a task). Otherwise (CI logs, pipes, ``nohup``, notebooks): a plain line every
``DNNMAP_PROGRESS_SECONDS`` seconds (default 10) with the count, the share done, the elapsed time and
an ETA, and one summary line at the end."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from dnnmap.report.summary import counted, plural

INTERVAL_ENV = "DNNMAP_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 10.0


def interval_seconds() -> float:
    """Seconds between two plain progress lines (``DNNMAP_PROGRESS_SECONDS``, default 10)."""
    try:
        return max(float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL)), 0.1)
    except ValueError:
        return DEFAULT_INTERVAL


def duration(seconds: float) -> str:
    """``4.2 s``, ``42 s`` or ``3 min 05 s``."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


class _PlainLines:
    """State of an off-terminal display: counts updated by the work, lines printed by a heartbeat thread."""

    def __init__(self, console: Console, action: str, noun: str, total: int | None) -> None:
        self.console, self.action, self.noun = console, action, noun
        self.done, self.total, self.current = 0, total, ""
        self.start = time.perf_counter()
        self.lines = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(interval_seconds()):
            self.console.print(self.status(), highlight=False, soft_wrap=True, markup=False)
            self.lines += 1

    def status(self) -> str:
        elapsed = time.perf_counter() - self.start
        if not self.total:
            done = f"{counted(self.done, self.noun)}, " if self.done or self.total is not None else ""
            text = f"{self.action}: {done}{duration(elapsed)} elapsed"
        else:
            text = f"{self.action}: {self.done:,} of {counted(self.total, self.noun)} ({self.done / self.total:.0%}), " \
                   f"{duration(elapsed)} elapsed"
            if self.done:
                text += f", ETA {duration(elapsed / self.done * (self.total - self.done))}"
        return text + (f" - {self.current}" if self.current else "")

    def __enter__(self) -> _PlainLines:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def track(console: Console, action: str, noun: str, total: int | None = None,
          summary: bool = True) -> Iterator[Callable[[int, int | None, str], None]]:
    """Yields ``update(done, total, current)``: ``done`` items of ``total`` (None: unknown) finished,
    ``current`` the item in work. ``action`` names the work (``mapping resnet50``), ``noun`` one item
    (``layer``: counts print it in the right number). Off a terminal the last line is ``ACTION: DONE of TOTAL
    NOUNS in S s`` (with ``summary``; without it, only when periodic lines were printed)."""
    if not console.is_terminal:
        with _PlainLines(console, action, noun, total) as state:

            def record(done: int, new_total: int | None, current: str) -> None:
                state.done, state.current = done, current
                if new_total is not None:
                    state.total = new_total

            yield record
        if summary or state.lines:
            finished = (f"{state.done:,} of {counted(state.total, noun)}" if state.total else
                        counted(state.done, noun) if state.done else "done")
            console.print(f"{action}: {finished} in {time.perf_counter() - state.start:.1f} s", highlight=False,
                          soft_wrap=True, markup=False)
        return
    counts = (BarColumn(), MofNCompleteColumn(), TextColumn(plural(noun))) if noun else ()
    eta = (TextColumn("ETA"), TimeRemainingColumn()) if noun else ()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), *counts, TimeElapsedColumn(), *eta,
               TextColumn("[dim]{task.fields[current]}"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(action, total=total, current="")

        def update(done: int, new_total: int | None, current: str) -> None:
            progress.update(task, completed=done, total=new_total if new_total is not None else total,
                            current=current)
            progress.refresh()  # show the new count and item now, not at the next timed refresh

        yield update


@contextmanager
def item_progress(console: Console, action: str, items: Sequence[str], noun: str) -> Iterator[Callable[[str], None]]:
    """Yields ``done(item)``, to be called as each of ``items`` (in order) finishes; the display shows
    the next item as the one in work."""
    with track(console, action, noun, len(items)) as update:
        update(0, None, items[0] if items else "")
        count = [0]

        def done(_item: str) -> None:
            count[0] += 1
            update(count[0], None, items[count[0]] if count[0] < len(items) else "")

        yield done


@contextmanager
def count_progress(console: Console, action: str, noun: str) -> Iterator[Callable[[int, int | None, str], None]]:
    """Yields ``update(done, total, current)`` for work whose total is learnt on the way (a search that
    plans more candidates as it goes; None or 0: not known yet)."""
    with track(console, action, noun) as update:
        yield lambda done, total, current: update(done, total or None, current)


@contextmanager
def phase(console: Console, action: str) -> Iterator[None]:
    """One step of unknown length (the first-run kernel compile): a spinner with the elapsed time on a
    terminal, a plain line every interval otherwise (and a last line only if it lasted that long)."""
    with track(console, action, "", summary=False):
        yield
