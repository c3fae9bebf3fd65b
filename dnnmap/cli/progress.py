"""Progress of long commands: on a terminal a bar with the current item (a layer, a figure) and an
ETA; otherwise (CI logs, pipes) nothing while running and one summary line at the end."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextmanager
def item_progress(console: Console, action: str, items: Sequence[str], noun: str) -> Iterator[Callable[[str], None]]:
    """Yields ``done(item)``, to be called as each of ``items`` (in order) finishes.

    ``action`` names the work (``mapping resnet50``), ``noun`` the items (``layers``)."""
    start = time.perf_counter()
    if not console.is_terminal:
        count = 0

        def count_done(_item: str) -> None:
            nonlocal count
            count += 1

        yield count_done
        console.print(f"{action}: {count} of {len(items)} {noun} in {time.perf_counter() - start:.1f} s",
                      highlight=False, soft_wrap=True)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn(), TextColumn("[dim]{task.fields[current]}"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(action, total=len(items), current=items[0] if items else "")

        def advance(_item: str) -> None:
            finished = int(progress.tasks[0].completed) + 1
            progress.update(task, advance=1, current=items[finished] if finished < len(items) else "")
            progress.refresh()  # show the new current item now, not at the next timed refresh

        yield advance


@contextmanager
def count_progress(console: Console, action: str, noun: str) -> Iterator[Callable[[int, int, str], None]]:
    """Yields ``update(done, total, current)`` for work whose total is learnt on the way (a search that
    plans more candidates as it goes); same display rules as :func:`item_progress`."""
    start = time.perf_counter()
    final = [0]
    if not console.is_terminal:
        def record(done: int, _total: int, _current: str) -> None:
            final[0] = done

        yield record
        console.print(f"{action}: {final[0]} {noun} in {time.perf_counter() - start:.1f} s", highlight=False,
                      soft_wrap=True)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("[dim]{task.fields[current]}"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(action, total=None, current="")

        def update(done: int, total: int, current: str) -> None:
            progress.update(task, completed=done, total=total, current=current)
            progress.refresh()

        yield update
