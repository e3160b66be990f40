"""Task schedulers of the serving simulator (static, FCFS, work stealing, HYDRA elastic); see ``sim_policies``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from chipdse.core.specs import SchedulerKind
from chipdse.evaluators.sim_policies import ClusterView, StageJob, _integer_at_least


@dataclass(frozen=True)
class StaticSchedulerConfig:
    """Always the mapping's preferred chiplet (HYDRA Sec. VI-E "static")."""

    kind: SchedulerKind = field(default=SchedulerKind.STATIC, init=False)


@dataclass(frozen=True)
class FcfsSchedulerConfig:
    """Round-robin over the compatible chiplets, ignoring preference and locality (HYDRA Sec. VI-E "FCFS")."""

    kind: SchedulerKind = field(default=SchedulerKind.FCFS, init=False)


@dataclass(frozen=True)
class WorkStealingSchedulerConfig:
    """Preferred chiplet, and idle compatible chiplets take queued jobs (HYDRA Sec. VI-E, ref. [50])."""

    kind: SchedulerKind = field(default=SchedulerKind.WORK_STEALING, init=False)


@dataclass(frozen=True)
class ElasticSchedulerConfig:
    """HYDRA's elastic scheduler (Sec. IV-C).

    Attributes
    ----------
    imbalance_threshold : int
        Keep the preferred chiplet while its load (queued + running jobs) exceeds the least-loaded compatible
        chiplet's by at most this many jobs.
    """

    imbalance_threshold: int = 1
    kind: SchedulerKind = field(default=SchedulerKind.ELASTIC, init=False)

    def __post_init__(self) -> None:
        _integer_at_least("ElasticSchedulerConfig.imbalance_threshold", self.imbalance_threshold, 0)


SchedulerConfig = StaticSchedulerConfig | FcfsSchedulerConfig | WorkStealingSchedulerConfig | ElasticSchedulerConfig


class TaskScheduler(ABC):
    """Places each stage job on a compatible chiplet's FIFO queue."""

    steals: ClassVar[bool] = False
    """The simulator offers idle chiplets queued work through :meth:`steal`."""
    uses_queue_wait: ClassVar[bool] = False
    """The simulator keeps per-job service estimates so :meth:`ClusterView.queue_wait_s` is available."""

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config

    @abstractmethod
    def choose(self, job: StageJob, cluster: ClusterView) -> int:
        """Return the chiplet (index) whose queue gets ``job``."""

    def steal(self, idle: int, cluster: ClusterView) -> StageJob | None:
        """Return a queued job the idle chiplet takes over, or ``None`` (the default: no stealing)."""
        return None




class StaticScheduler(TaskScheduler):
    """The mapping's preferred chiplet, always."""

    def choose(self, job: StageJob, cluster: ClusterView) -> int:
        """Return the preferred chiplet."""
        return cluster.preferred(job.template)


class FcfsScheduler(TaskScheduler):
    """Each stage template's jobs go to its compatible chiplets in round-robin order."""

    def __init__(self, config: SchedulerConfig) -> None:
        super().__init__(config)
        self._next: dict[int, int] = {}

    def choose(self, job: StageJob, cluster: ClusterView) -> int:
        """Return the next compatible chiplet in cyclic order."""
        comp = cluster.compatible(job.template)
        i = self._next.get(job.template, 0)
        self._next[job.template] = i + 1
        return comp[i % len(comp)]


class WorkStealingScheduler(TaskScheduler):
    """Jobs go to the preferred chiplet; an idle chiplet takes the oldest job it can run from the longest queue
    among its peers (ties: lowest index). It is work-conserving: no compatible chiplet idles while a job waits.
    """

    steals = True

    def choose(self, job: StageJob, cluster: ClusterView) -> int:
        """Return the preferred chiplet."""
        return cluster.preferred(job.template)

    def steal(self, idle: int, cluster: ClusterView) -> StageJob | None:
        """Return the oldest runnable job of the longest peer queue, or ``None``."""
        best, best_len = None, 0
        for p in cluster.peers(idle):
            q = cluster.queue(p)
            if len(q) > best_len:
                for job in q:
                    if cluster.can_run(idle, job.template):
                        best, best_len = job, len(q)
                        break
        return best


class ElasticScheduler(TaskScheduler):
    """HYDRA Sec. IV-C: keep the preferred chiplet while load(preferred) - min load(compatible) is within the
    threshold; otherwise move the job to the compatible chiplet with the least queue wait + hop penalty, the
    uncontended Eq. 3 NoI time of the job's HBM traffic from that chiplet (ties: the preferred one, then the
    lowest index)."""

    uses_queue_wait = True

    def choose(self, job: StageJob, cluster: ClusterView) -> int:
        """Return the preferred chiplet under mild imbalance, else the best-scoring compatible chiplet."""
        comp = cluster.compatible(job.template)
        pref = comp[0]
        if len(comp) == 1:
            return pref
        loads = [cluster.load(c) for c in comp]
        if loads[0] - min(loads) <= self.config.imbalance_threshold:
            return pref
        return min(comp, key=lambda c: cluster.queue_wait_s(c) + cluster.hop_penalty_s(job, c))
