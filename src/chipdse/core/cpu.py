"""CPU time of this process and of its finished children: what a stage or a run used on every core, not only the
main process's share (local process pools' workers are children; Dask workers are not and are not counted)."""

from __future__ import annotations

import time

try:
    import resource  # POSIX only: the CPU time of finished child processes
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]


def child_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished child processes: the local process pools' workers,
    once their pool has shut down (``resource.RUSAGE_CHILDREN``; 0.0 where the platform has no ``resource``)."""
    if resource is None:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return float(usage.ru_utime + usage.ru_stime)


def tree_cpu_s() -> float:
    """CPU seconds of the process tree so far: this process since it started (``time.process_time``, imports
    included) plus :func:`child_cpu_s`."""
    return time.process_time() + child_cpu_s()
