"""Run a sweep's tasks serially or on a Dask cluster, storing each result as it arrives.

Only the main process writes the store; workers just compute :func:`~dnnmap.sweep.tasks.run_task`.
Dask reschedules the tasks of a worker that dies on the remaining (or restarted) workers, so a lost
worker costs time, not results; tasks are deterministic, so a rerun gives the same row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dnnmap.errors import DnnmapError
from dnnmap.sweep.store import ResultStore
from dnnmap.sweep.tasks import SweepRow, SweepTask, run_task

if TYPE_CHECKING:
    from distributed import Client

OnDone = Callable[[SweepRow], None]
MAX_WORKERS = 256
# Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536 (to hand freed memory back); setting it turns off
# glibc's adaptive mmap threshold, so every large NumPy temporary of a search is mapped and unmapped anew: the searches
# spent about a third of their time in the kernel (docs/search.md, "Whole networks on several cores"). Unset it.
KEEP_MALLOC_DEFAULTS = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
DASK_HINT = "install it with pip install 'dnnmap[sweep]' (dask[distributed]), or run with --serial"


def pending_tasks(tasks: Sequence[SweepTask], store: ResultStore) -> list[SweepTask]:
    """The tasks whose result is not stored yet, each key once, in order."""
    done = store.keys()
    out: dict[str, SweepTask] = {}
    for t in tasks:
        if t.key not in done:
            out.setdefault(t.key, t)
    return list(out.values())


def run_sweep(tasks: Sequence[SweepTask], store: ResultStore, client: Client | None = None,
              on_done: OnDone | None = None) -> list[SweepRow]:
    """Compute the tasks not yet in ``store`` (serially, or on ``client``'s cluster), storing each result
    at once, then return every task's row in task order."""
    todo = pending_tasks(tasks, store)
    if client is None:
        for task in todo:
            _finish(store, run_task(task), on_done)
    elif todo:
        from distributed import as_completed

        futures = [client.submit(run_task, t, key=f"dnnmap-sweep-{t.key}", retries=2) for t in todo]
        for future in as_completed(futures):
            _finish(store, future.result(), on_done)
            future.release()
    rows = [store.get(t.key) for t in tasks]
    missing = [t for t, r in zip(tasks, rows) if r is None]
    if missing:
        raise DnnmapError(f"{len(missing)} sweep results are missing from {store.path} after the run")
    return [r for r in rows if r is not None]


def _finish(store: ResultStore, row: SweepRow, on_done: OnDone | None) -> None:
    store.add(row)
    if on_done:
        on_done(row)


def check_workers(workers: int) -> None:
    """Refuse a LocalCluster size outside 1..256 (checked before any work)."""
    if not 1 <= workers <= MAX_WORKERS:
        raise DnnmapError(f"--workers {workers}: must be in 1..{MAX_WORKERS}")


def check_dask() -> None:
    """Refuse a cluster sweep when Dask is not installed (checked before any work or store is created)."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DnnmapError(f"dnnmap sweep runs on Dask, which is not installed: {DASK_HINT}") from None


@contextmanager
def dask_client(workers: int, scheduler: str | None) -> Iterator[Client]:
    """A client of the cluster at ``scheduler`` (``tcp://host:port``), else of a new LocalCluster of
    ``workers`` single-threaded worker processes (closed on exit)."""
    check_dask()
    import dask
    from distributed import Client, LocalCluster
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=30)
        except (OSError, TimeoutError, ValueError) as err:
            raise DnnmapError(f"--scheduler {scheduler}: cannot connect ({err})") from None
        with client:
            yield client
        return
    check_workers(workers)
    with dask.config.set(KEEP_MALLOC_DEFAULTS), LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                             dashboard_address=None, silence_logs=logging.ERROR
                                                             ) as cluster, Client(cluster) as client:
        yield client
