"""Run independent jobs in-process, on a local process pool or on Dask, with a results store to resume from.

DESIGN.md "Scale": locally jobs run in a process pool; for more than one machine they run on Dask
(``dask.distributed``): the same code, a scheduler address instead of a worker count.

Only the calling process writes to the store: workers return results, and each is committed as soon as it
arrives, so an interrupted run keeps every finished job and a rerun computes only the rest.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Literal

from chipdse.core.errors import ChipdseError
from chipdse.core.io import canonical_json
from chipdse.runtime.store import ResultsStore

BackendKind = Literal["in-process", "processes", "dask"]
Progress = Callable[[float, float], None]

DASK_HINT = 'pip install "dask[distributed]"'
DASK_CONNECT_TIMEOUT_S = 10
"""Seconds to wait for a remote Dask scheduler before giving up."""


@dataclass(frozen=True)
class Backend:
    """Where jobs run.

    Attributes
    ----------
    kind : {"in-process", "processes", "dask"}
        ``in-process``: a plain loop in the calling process. ``processes``: a local
        ``concurrent.futures.ProcessPoolExecutor``. ``dask``: a ``dask.distributed`` client, either connected to
        ``scheduler`` or to a new ``LocalCluster`` of ``workers`` workers.
    workers : int or None
        Worker count (process pool or Dask LocalCluster); None for in-process or a remote scheduler.
    scheduler : str or None
        Dask scheduler address (e.g. ``"tcp://10.0.0.5:8786"``); None starts a LocalCluster.
    dask_processes : bool
        LocalCluster only: workers are processes (True) or threads of this process (False).
    start_method : str
        Process pool only: the multiprocessing start method (``spawn`` is safe with threads on every platform).
    """

    kind: BackendKind = "in-process"
    workers: int | None = None
    scheduler: str | None = None
    dask_processes: bool = True
    start_method: str = "spawn"

    def __post_init__(self) -> None:
        if self.kind not in ("in-process", "processes", "dask"):
            msg = f"backend kind must be in-process, processes or dask, got {self.kind!r}"
            raise ChipdseError(msg)
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)):
            msg = f"backend workers must be a whole number >= 1, got {self.workers!r}"
            raise ChipdseError(msg)
        if self.workers is not None and self.workers < 1:
            msg = f"backend workers must be >= 1, got {self.workers}"
            raise ChipdseError(msg)
        if self.kind == "processes" and self.workers is None:
            msg = "a process-pool backend needs a worker count (workers >= 1)"
            raise ChipdseError(msg)

    @classmethod
    def in_process(cls) -> Backend:
        """Run jobs one after another in the calling process."""
        return cls("in-process")

    @classmethod
    def processes(cls, workers: int, start_method: str = "spawn") -> Backend:
        """Run jobs on a local process pool of ``workers`` processes."""
        return cls("processes", workers=workers, start_method=start_method)

    @classmethod
    def dask_local(cls, workers: int, processes: bool = True) -> Backend:
        """Run jobs on a new Dask ``LocalCluster`` of ``workers`` single-threaded workers."""
        return cls("dask", workers=workers, dask_processes=processes)

    @classmethod
    def dask(cls, scheduler: str) -> Backend:
        """Run jobs on the Dask cluster whose scheduler listens at ``scheduler``."""
        return cls("dask", scheduler=scheduler)

    def describe(self) -> str:
        """One line for logs, e.g. ``"process pool (4 workers)"``."""
        if self.kind == "processes":
            return f"process pool ({self.workers} workers)"
        if self.kind == "dask":
            return f"Dask at {self.scheduler}" if self.scheduler else f"Dask LocalCluster ({self.workers} workers)"
        return "in-process"


def _import_distributed() -> Any:
    """Return the ``distributed`` module, or raise a ChipdseError saying how to install it."""
    try:
        import distributed  # deferred on purpose: an optional extra (chipdse[dask]), heavy to import
    except ImportError:
        msg = f"the Dask backend needs dask.distributed, which is not installed: {DASK_HINT}"
        raise ChipdseError(msg) from None
    return distributed


def _normalize(result: Any) -> Any:
    """Return ``result`` as it reads back from the store (JSON round trip), so fresh and stored runs agree."""
    return json.loads(canonical_json(result))


def run_jobs(fn: Callable[[Any], Any], jobs: Sequence[Any], backend: Backend | None = None,
             store: ResultsStore | None = None, key_fn: Callable[[Any], str] | None = None,
             progress: Progress | None = None, fresh: bool = False,
             weights: Sequence[float] | None = None) -> list[Any]:
    """Run ``fn(job)`` for every job and return the results in job order.

    Parameters
    ----------
    fn : callable(job) -> dict
        A module-level (picklable) function for the process and Dask backends. With a store, its results must be
        JSON-encodable dicts.
    jobs : sequence
        Job descriptions (picklable for the process and Dask backends).
    backend : Backend, optional
        Where to run; default in-process.
    store : ResultsStore, optional
        Results store: jobs whose key it holds are not run (their stored result is returned), and every finished
        job is written as soon as it completes.
    key_fn : callable(job) -> str, optional
        Store key of a job (e.g. built with :func:`chipdse.runtime.store.job_key`); required with a store.
    progress : callable(done, total), optional
        Called once with the number of jobs found in the store, then after each finished job.
    fresh : bool
        Recompute every job even when the store holds its result (and overwrite it).
    weights : sequence of float, optional
        Work per job (e.g. its design points); ``progress`` then counts weight instead of jobs.

    Returns
    -------
    list
        One result per job, in job order. With a store, results are returned as they read back from it (a JSON
        round trip), so a resumed run returns exactly what an uninterrupted run does.

    Raises
    ------
    ChipdseError
        A store without ``key_fn``, or the Dask backend without ``dask.distributed`` installed.
    Exception
        Whatever a job raises (including KeyboardInterrupt); jobs finished before it stay in the store.
    """
    backend = backend or Backend.in_process()
    if store is not None and key_fn is None:
        msg = "run_jobs: a results store needs key_fn (the store key of each job)"
        raise ChipdseError(msg)
    if backend.kind == "dask":
        distributed = _import_distributed()  # fail before any work, and before touching the store
    total = len(jobs)
    results: list[Any] = [None] * total
    keys = [key_fn(j) for j in jobs] if store is not None and key_fn is not None else [None] * total
    todo: list[int] = []
    for i, key in enumerate(keys):
        stored = store.get(key) if (store is not None and not fresh) else None
        if stored is None:
            todo.append(i)
        else:
            results[i] = stored
    weight = [1.0] * total if weights is None else [float(w) for w in weights]
    if len(weight) != total:
        msg = f"run_jobs: {len(weight)} weights for {total} jobs"
        raise ChipdseError(msg)
    work = sum(weight)
    done = work - sum(weight[i] for i in todo)
    if progress is not None:
        progress(done, work)

    def finish(i: int, value: Any) -> None:
        nonlocal done
        if store is not None:
            store.put(keys[i], value)
            value = _normalize(value)
        results[i] = value
        done += weight[i]
        if progress is not None:
            progress(done, work)

    if not todo:
        return results
    if backend.kind == "in-process":
        for i in todo:
            finish(i, fn(jobs[i]))
    elif backend.kind == "processes":
        _run_pool(fn, jobs, todo, backend, finish)
    else:
        _run_dask(distributed, fn, jobs, todo, backend, finish)
    return results


def _ignore_sigint() -> None:
    """Pool worker initializer: Ctrl-C reaches the whole process group; only the parent handles it (it cancels
    the pool and keeps every finished job), so workers ignore it instead of each printing a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_pool(fn: Callable[[Any], Any], jobs: Sequence[Any], todo: list[int], backend: Backend,
              finish: Callable[[int, Any], None]) -> None:
    """Run the ``todo`` jobs on a process pool, calling ``finish`` in the caller as each completes."""
    ctx = multiprocessing.get_context(backend.start_method)
    pool = ProcessPoolExecutor(max_workers=backend.workers, mp_context=ctx, initializer=_ignore_sigint)
    try:
        pending: dict[Future[Any], int] = {pool.submit(fn, jobs[i]): i for i in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                finish(pending.pop(fut), fut.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_dask(distributed: Any, fn: Callable[[Any], Any], jobs: Sequence[Any], todo: list[int],
              backend: Backend, finish: Callable[[int, Any], None]) -> None:
    """Run the ``todo`` jobs on Dask, calling ``finish`` in the caller as each completes."""
    cluster = None
    try:
        if backend.scheduler is not None:
            client = distributed.Client(backend.scheduler, timeout=DASK_CONNECT_TIMEOUT_S)
        else:
            cluster = distributed.LocalCluster(n_workers=backend.workers or 1, threads_per_worker=1,
                                               processes=backend.dask_processes, dashboard_address=None)
            client = distributed.Client(cluster)
    except (OSError, ValueError, TypeError) as exc:
        if cluster is not None:
            cluster.close()
        where = f"--scheduler {backend.scheduler}" if backend.scheduler else "--dask-local"
        msg = f"{where}: cannot connect to the Dask scheduler: {exc}"
        raise ChipdseError(msg) from None
    try:
        futures = [client.submit(fn, jobs[i], pure=False) for i in todo]
        index: dict[Hashable, int] = {f.key: i for f, i in zip(futures, todo, strict=True)}
        for fut in distributed.as_completed(futures):
            finish(index[fut.key], fut.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
