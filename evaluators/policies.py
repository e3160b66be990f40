"""The registry of the serving simulator's task schedulers and batchers, keyed by the spec enums.

Every list of policy names (the CLI's ``--scheduler`` / ``--batching`` choices and help, the simulation study's
scheduler comparison, the name -> config lookup of ``chipdse simulate``) derives from :data:`SCHEDULER_POLICIES`
and :data:`BATCHER_POLICIES`; the simulator builds its policy objects through :func:`make_scheduler` and
:func:`make_batcher`. The keys are :class:`chipdse.core.specs.SchedulerKind` and
:class:`chipdse.core.specs.BatcherKind` (the scenario's ``estimator.batching`` is a ``BatcherKind``).

References
----------
HYDRA Sec. IV-B (static and dynamic batching), Sec. IV-C (elastic scheduling), Sec. VI-E (the static, FCFS,
work-stealing and elastic schedulers it compares).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from chipdse.core.specs import BatcherKind, SchedulerKind
from chipdse.evaluators.sim_policies import (
    Batcher,
    BatcherConfig,
    DynamicBatcher,
    DynamicBatcherConfig,
    StaticBatcher,
    StaticBatcherConfig,
)
from chipdse.evaluators.sim_schedulers import (
    ElasticScheduler,
    ElasticSchedulerConfig,
    FcfsScheduler,
    FcfsSchedulerConfig,
    SchedulerConfig,
    StaticScheduler,
    StaticSchedulerConfig,
    TaskScheduler,
    WorkStealingScheduler,
    WorkStealingSchedulerConfig,
)


@dataclass(frozen=True)
class Policy:
    """One registered policy.

    Attributes
    ----------
    kind : SchedulerKind or BatcherKind
        Its key; ``str(kind)`` is the name users type (``"work-stealing"``).
    config : type
        Its frozen config dataclass (the ``kind`` field is fixed by the class).
    implementation : type
        The :class:`TaskScheduler` or :class:`Batcher` subclass the simulator runs.
    summary : str
        One line for help texts.
    """

    kind: SchedulerKind | BatcherKind
    config: Callable[..., Any]
    implementation: type
    summary: str


SCHEDULER_POLICIES: Mapping[SchedulerKind, Policy] = MappingProxyType({
    SchedulerKind.STATIC: Policy(SchedulerKind.STATIC, StaticSchedulerConfig, StaticScheduler,
                                 "the mapping's preferred chiplet"),
    SchedulerKind.FCFS: Policy(SchedulerKind.FCFS, FcfsSchedulerConfig, FcfsScheduler,
                               "round-robin over the compatible chiplets"),
    SchedulerKind.WORK_STEALING: Policy(SchedulerKind.WORK_STEALING, WorkStealingSchedulerConfig,
                                        WorkStealingScheduler, "idle compatible chiplets take queued jobs"),
    SchedulerKind.ELASTIC: Policy(SchedulerKind.ELASTIC, ElasticSchedulerConfig, ElasticScheduler,
                                  "HYDRA's elastic scheduler (earliest estimated finish, across phases)"),
})
"""Task schedulers by kind, in HYDRA Sec. VI-E's order."""

BATCHER_POLICIES: Mapping[BatcherKind, Policy] = MappingProxyType({
    BatcherKind.STATIC: Policy(BatcherKind.STATIC, StaticBatcherConfig, StaticBatcher,
                               "fixed batches of max-batch requests decoded until the longest finishes"),
    BatcherKind.DYNAMIC: Policy(BatcherKind.DYNAMIC, DynamicBatcherConfig, DynamicBatcher,
                                "continuous batching under a max batch and a token budget"),
})
"""Batchers by kind."""

SCHEDULER_NAMES: tuple[str, ...] = tuple(str(k) for k in SCHEDULER_POLICIES)
"""Scheduler names as users type them: ``("static", "fcfs", "work-stealing", "elastic")``."""
BATCHER_NAMES: tuple[str, ...] = tuple(str(k) for k in BATCHER_POLICIES)
"""Batcher names as users type them: ``("static", "dynamic")``."""


def names_text(names: tuple[str, ...]) -> str:
    """Return ``"a, b, c or d"`` for help texts."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def scheduler_config(name: str) -> SchedulerConfig:
    """Return the default config of the scheduler called ``name``.

    Raises
    ------
    ValueError
        An unknown name (the message lists :data:`SCHEDULER_NAMES`).
    """
    if name not in SCHEDULER_NAMES:
        msg = f"scheduler must be one of {list(SCHEDULER_NAMES)}, got {name!r}"
        raise ValueError(msg)
    return SCHEDULER_POLICIES[SchedulerKind(name)].config()


def batcher_config(name: str, max_batch: int) -> BatcherConfig:
    """Return the config of the batcher called ``name`` with ``max_batch`` requests per batch.

    Raises
    ------
    ValueError
        An unknown name (the message lists :data:`BATCHER_NAMES`).
    SimulationError
        A ``max_batch`` the config rejects.
    """
    if name not in BATCHER_NAMES:
        msg = f"batching must be one of {list(BATCHER_NAMES)}, got {name!r}"
        raise ValueError(msg)
    return BATCHER_POLICIES[BatcherKind(name)].config(max_batch)


def make_scheduler(config: SchedulerConfig) -> TaskScheduler:
    """Return the task scheduler of ``config`` (its class looked up by ``config.kind``)."""
    return SCHEDULER_POLICIES[config.kind].implementation(config)


def make_batcher(config: BatcherConfig, n_slots: int, median_prompt_tokens: float,
                 median_output_tokens: float) -> Batcher:
    """Return the batcher of ``config`` (its class looked up by ``config.kind``) for ``n_slots`` decode slots."""
    return BATCHER_POLICIES[config.kind].implementation(config, n_slots, median_prompt_tokens,
                                                        median_output_tokens)
