"""Task schedulers of the serving simulator (static, FCFS, work stealing, HYDRA elastic); see ``sim_policies``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from chipdse.core.specs import SchedulerKind
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.evaluators.sim_policies import ClusterView, StageJob


@dataclass(frozen=True)
class StaticSchedulerConfig:
    """Always the mapping's preferred chiplet (HYDRA Sec. VI-E "static"); never another phase's chiplet."""

    kind: SchedulerKind = field(default=SchedulerKind.STATIC, init=False)
    cross_phase: bool = field(default=False, init=False)


@dataclass(frozen=True)
class FcfsSchedulerConfig:
    """Round-robin over the compatible chiplets, ignoring preference and locality (HYDRA Sec. VI-E "FCFS").

    Attributes
    ----------
    cross_phase : bool
        Also cycle over the other phase role's chiplets. Off by default: HYDRA does not describe its FCFS
        baseline as moving work across phases; an option for sensitivity runs.
    """

    cross_phase: bool = False
    kind: SchedulerKind = field(default=SchedulerKind.FCFS, init=False)


@dataclass(frozen=True)
class WorkStealingSchedulerConfig:
    """Preferred chiplet, and idle compatible chiplets take queued jobs (HYDRA Sec. VI-E, ref. [50]).

    Attributes
    ----------
    cross_phase : bool
        Idle chiplets may also steal the other phase's jobs. Off by default: HYDRA's work-stealing baseline is
        not described as crossing phases; an option for sensitivity runs.
    """

    cross_phase: bool = False
    kind: SchedulerKind = field(default=SchedulerKind.WORK_STEALING, init=False)


@dataclass(frozen=True)
class ElasticSchedulerConfig:
    """HYDRA's elastic scheduler (Sec. IV-C).

    Attributes
    ----------
    imbalance_threshold : float
        Keep the preferred chiplet while its estimated finish of the job (queue wait + service estimate) is
        later than the best compatible chiplet's by at most this many service times of the job on the preferred
        chiplet (>= 0). The unit is the job's own service time, not a job count or seconds, so that one value
        means the same for a 0.5 s prefill chunk and a 5 ms decode iteration, and for queues that mix both
        phases' jobs (a job count would weigh a prefill chunk and a decode iteration alike; a fixed number of
        seconds would never move a decode job or always move a prefill one). With identical chiplets 1 is
        the rule "loads differ by at most one job". HYDRA gives no value. The default 0 moves a job whenever
        it is estimated to finish earlier elsewhere: the estimate already charges a move its costs (the Eq. 3
        hop distance to memory, the other chiplet's roofline, the share a lent chiplet keeps for its own
        phase), so a positive threshold would count them twice and keep jobs waiting while compatible
        chiplets idle (measured in benchmarks/bench_elastic.py: 0 beats 1 on all four datasets).
    cross_phase : bool
        A prefill job may run on a decode chiplet and the reverse, at that chiplet's own rate, when it finishes
        there first (HYDRA Sec. IV-C: "decoding chiplets are temporarily reassigned, and vice versa"). On by
        default.
    """

    imbalance_threshold: float = 0
    cross_phase: bool = True
    kind: SchedulerKind = field(default=SchedulerKind.ELASTIC, init=False)

    def __post_init__(self) -> None:
        v = self.imbalance_threshold
        if not (isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < float("inf")):
            msg = f"ElasticSchedulerConfig.imbalance_threshold must be a finite number >= 0, got {v!r}"
            raise SimulationError(msg)


SchedulerConfig = StaticSchedulerConfig | FcfsSchedulerConfig | WorkStealingSchedulerConfig | ElasticSchedulerConfig


class TaskScheduler(ABC):
    """Places each stage job on a compatible chiplet's FIFO queue.

    The compatible chiplets of a stage are the mapping's (preferred) chiplet, the phase role's other chiplets
    with a cost for every task of the stage, then, when the config's ``cross_phase`` is set, the other phase
    role's chiplets with such costs (``ClusterView.compatible``).
    """

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
    """HYDRA Sec. IV-C: keep the preferred chiplet while the imbalance is within the threshold, else move the job
    to the compatible chiplet where it is estimated to finish first.

    On a chiplet of the job's own phase role the estimated finish is the wait for the own-role work ahead of it
    (running remainder + queued own-role jobs; the simulator serves a chiplet's own role first) plus the job's
    uncontended service estimate there, which includes the Eq. 3 NoI time from that chiplet to the job's memory.
    On a chiplet of the other role (``cross_phase``: the chiplet is lent to the other phase, HYDRA's "temporarily
    reassigned") the job gets only the capacity its own role leaves: (queue wait + service estimate at that
    chiplet's own roofline) / (1 - the chiplet's own-role busy fraction so far), the completion time of a
    low-priority job behind a higher-priority load (Kleinrock, Queueing Systems Vol. 2, Sec. 3.7), plus the delay
    the job would impose on the chiplet's own work, per request of the job (``ClusterView.lend_cost_s``: own-role
    jobs arriving during it wait for its remainder, lam S^2 / 2, each carrying its requests). Without these a
    decode chiplet between two iterations looks idle and takes prefill chunks that then stall the decode
    pipeline. The imbalance is finish(preferred) - min finish, in units of the job's service estimate on the
    preferred chiplet (:class:`ElasticSchedulerConfig`). Ties: the preferred chiplet, then same-phase chiplets,
    then the lowest index.
    """

    uses_queue_wait = True

    def choose(self, job: StageJob, cluster: ClusterView) -> int:
        """Return the preferred chiplet under mild imbalance, else the compatible chiplet that finishes first."""
        comp = cluster.compatible(job.template)
        pref = comp[0]
        if len(comp) == 1:
            return pref
        thr = self.config.imbalance_threshold
        est_pref = cluster.estimate_s(job, pref)
        wait_pref = cluster.home_wait_s(pref)
        if wait_pref <= (thr - 1.0) * est_pref:  # no finish is below 0: nothing can beat pref by more
            return pref
        best, best_finish = pref, wait_pref + est_pref
        for c in comp[1:]:  # same-phase chiplets come before the other phase's: the first minimum wins ties
            if cluster.is_guest(job, c):
                w, share = cluster.queue_wait_s(c), cluster.home_share(c)
                if w >= best_finish * share:
                    continue
                e = cluster.estimate_s(job, c)
                f = (w + e) / share + cluster.lend_cost_s(job, c, e)
            else:
                w = cluster.home_wait_s(c)
                if w >= best_finish:
                    continue
                f = w + cluster.estimate_s(job, c)
            if f < best_finish:
                best, best_finish = c, f
        if wait_pref + est_pref - best_finish <= thr * est_pref:
            return pref
        return best
