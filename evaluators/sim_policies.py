"""Policies of the serving simulator: the entities they see, and the batchers. Arrival processes live in
``sim_arrivals`` and task schedulers in ``sim_schedulers``; the three families share the conventions below.

Each family is a small ABC with one or two abstract methods, one frozen config per policy carrying its
``kind``, and an enum-keyed registry (STYLE.md item 10; as in Vidur ``scheduler/global_scheduler/`` and
``utils/base_registry.py``): ``sim_arrivals.ARRIVAL_PROCESSES`` for arrivals, and for batchers and schedulers
the one registry ``chipdse.evaluators.policies`` keyed by ``chipdse.core.specs.BatcherKind`` /
``SchedulerKind``. :func:`make_arrival`, ``policies.make_batcher`` and ``policies.make_scheduler`` turn a
config into a policy object. The simulator's entities that policies see (:class:`SimRequest`,
:class:`StageJob`, :class:`DecodeSlot`) are defined here too, so that this module does not import the
simulator; what a policy may ask of the simulator is written down as the protocols :class:`AdmissionState`
and :class:`ClusterView`.

Families
--------
Arrival processes (:class:`ArrivalKind`)
    ``trace``: replay the sample's timestamps, optionally rescaled to a target mean rate; ``poisson``;
    ``gamma`` inter-arrival times with a given coefficient of variation. All draw from the seeded
    ``numpy.random.Generator`` they are given.
Batchers (:class:`BatcherKind`)
    ``static``: fixed batches of ``max_batch`` requests, prefilled together and decoded until the longest
    finishes, never refilled (HYDRA Sec. IV-B, Fig. 5 top); a partial batch starts once its oldest request has
    waited ``timeout_s``. ``dynamic``: continuous batching with a max
    batch and a token budget, requests joining and leaving between iterations (HYDRA Sec. IV-B).
Task schedulers (:class:`SchedulerKind`)
    ``static`` (the mapping's preferred chiplet), ``fcfs`` (round-robin over compatible chiplets),
    ``work-stealing`` (an idle compatible chiplet takes queued work) and ``elastic`` (HYDRA Sec. IV-C: keep
    the preferred chiplet while the imbalance is within a threshold, else the compatible chiplet, of either
    phase role, where the job is estimated to finish first). HYDRA Sec. VI-E compares exactly these four.
    Only ``elastic`` moves work across phase roles by default (``cross_phase``; an option of FCFS and work
    stealing, never of static).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol, TypeVar

from chipdse.core.specs import BatcherKind
from chipdse.evaluators.sim_kernel import SimulationError

# --------------------------------------------------------------------------------------------------------------
# Entities the policies see
# --------------------------------------------------------------------------------------------------------------


class RequestState(IntEnum):
    """Where a request is."""

    WAITING = 0
    """In the request pool (new, or preempted and waiting to be recomputed)."""
    PREFILL = 1
    """Admitted; its prefill job is queued or running."""
    READY = 2
    """Prefilled; waiting for a place in a decode micro-batch (dynamic batching)."""
    DECODE = 3
    """A member of a decode micro-batch."""
    DONE = 4
    """All output tokens generated."""


class SimRequest:
    """One request's progress through the simulator (mutable; one per arrival).

    Attributes
    ----------
    index : int
        Arrival order (0-based); also the tie-break among equals (older first).
    arrival_s : float
    prompt_tokens, output_tokens : int
        Prompt length and total output length, tokens (the first output token comes from prefill).
    generated : int
        Output tokens produced so far (kept across preemptions: they were already delivered).
    state : RequestState
    epoch : int
        Bumped at every preemption, so work started for an earlier admission is recognized and dropped.
    blocks : int
        KV / state memory blocks held (``block_tokens`` tokens each).
    demand_tokens : float
        The token cost the batcher charged at admission (returned at finish or preemption).
    slot : DecodeSlot | None
        The decode micro-batch it belongs to (static batching binds it at admission).
    admitted_s, prefill_start_s, first_token_s, last_token_s, finish_s : float
        Time stamps, s (NaN until they happen; admitted and prefill start are the first occurrence).
    preemptions : int
    """

    __slots__ = ("index", "arrival_s", "prompt_tokens", "output_tokens", "generated", "state", "epoch",
                 "blocks", "demand_tokens", "slot", "admitted_s", "prefill_start_s", "first_token_s",
                 "last_token_s", "finish_s", "preemptions")

    def __init__(self, index: int, arrival_s: float, prompt_tokens: int, output_tokens: int) -> None:
        self.index = index
        self.arrival_s = arrival_s
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens
        self.generated = 0
        self.state = RequestState.WAITING
        self.epoch = 0
        self.blocks = 0
        self.demand_tokens = 0.0
        self.slot: DecodeSlot | None = None
        nan = math.nan
        self.admitted_s = self.prefill_start_s = self.first_token_s = self.last_token_s = self.finish_s = nan
        self.preemptions = 0

    @property
    def context_tokens(self) -> int:
        """Tokens whose KV / state the request holds or needs now: prompt + generated output."""
        return self.prompt_tokens + self.generated


class DecodeSlot:
    """One decode micro-batch: the requests that go through the decode pipeline together.

    Attributes
    ----------
    index : int
    members : list[SimRequest]
        Requests of the current (or next) iteration.
    running : bool
        An iteration of this slot is in the pipeline.
    bound : bool
        Static batching: a batch is bound to the slot (from admission until its last request finishes).
    """

    __slots__ = ("index", "members", "running", "bound")

    def __init__(self, index: int) -> None:
        self.index = index
        self.members: list[SimRequest] = []
        self.running = False
        self.bound = False


class PrefillJob:
    """The prefill of one admitted group (one request, or one static batch), split into prompt chunks.

    Attributes
    ----------
    requests : list[tuple[SimRequest, int]]
        Members and the epoch each had at admission.
    slot : DecodeSlot | None
        Static batching: the slot the group is bound to.
    chunks_left : int
        Chunks that have not yet left the last prefill stage.
    """

    __slots__ = ("requests", "slot", "chunks_left")

    def __init__(self, requests: list[tuple[SimRequest, int]], slot: DecodeSlot | None, chunks: int) -> None:
        self.requests = requests
        self.slot = slot
        self.chunks_left = chunks


class StageJob:
    """The unit the task scheduler places: one pipeline stage of one prefill chunk or one decode iteration.

    A stage is the set of tasks the mapping puts on one chiplet (HYDRA Eq. 4's stage); a job visits the
    stages of its phase in order.

    Attributes
    ----------
    decode : bool
        Decode iteration (True) or prefill job (False).
    stage : int
        Position in the phase's stage list.
    template : int
        Global stage-template id (what the scheduler's compatibility and preference are keyed by).
    features : tuple[float, ...]
        The phase's cost features (see ``evaluators.simulator.PREFILL_FEATURES`` / ``DECODE_FEATURES``).
    requests : list[tuple[SimRequest, int]]
        Members and the epoch each had when the job was made.
    slot : DecodeSlot | None
        Decode iterations: the micro-batch.
    prefill : PrefillJob | None
        Prefill chunks: the prefill they belong to.
    chiplet : int
        Chiplet it is queued on or running on (-1 before dispatch).
    ready_s : float
        When its inputs (activations from the previous stage) are on that chiplet, s.
    est_s : float
        Estimated service time on ``chiplet``, s (only kept when the scheduler uses queue waits).
    """

    __slots__ = ("decode", "stage", "template", "features", "requests", "slot", "prefill", "chiplet", "ready_s",
                 "est_s")

    def __init__(self, decode: bool, template: int, features: tuple[float, ...],
                 requests: list[tuple[SimRequest, int]], slot: DecodeSlot | None, ready_s: float,
                 prefill: PrefillJob | None = None) -> None:
        self.decode = decode
        self.stage = 0
        self.template = template
        self.features = features
        self.requests = requests
        self.slot = slot
        self.prefill = prefill
        self.chiplet = -1
        self.ready_s = ready_s
        self.est_s = 0.0


class AdmissionState(Protocol):
    """What a batcher may ask of the simulator when admitting."""

    now_s: float
    """Current simulated time, s."""
    n_admitted: int
    """Requests admitted and not yet finished or preempted."""
    demand_tokens: float
    """Sum of the admitted requests' token costs."""

    def fits(self, requests: Sequence[SimRequest]) -> bool:
        """Whether the memory the requests need at admission fits in the free HBM of every group."""
        ...

    def free_slots(self) -> list[DecodeSlot]:
        """Decode slots with no bound batch and no members (static batching binds batches to them)."""
        ...


class ClusterView(Protocol):
    """What a task scheduler may read of the chiplets."""

    now_s: float

    def compatible(self, template: int) -> tuple[int, ...]:
        """Chiplets (indices) that can run a stage template: preferred first, then the same phase role's, then
        (cross-phase schedulers only) the other role's."""
        ...

    def preferred(self, template: int) -> int:
        """The mapping's chiplet for a stage template."""
        ...

    def load(self, chiplet: int) -> int:
        """Jobs queued on the chiplet plus the one running (0 or 1)."""
        ...

    def queue(self, chiplet: int) -> deque[StageJob]:
        """The chiplet's FIFO queue (read only; the simulator moves jobs)."""
        ...

    def can_run(self, chiplet: int, template: int) -> bool:
        """Whether the chiplet is compatible with the stage template."""
        ...

    def peers(self, chiplet: int) -> tuple[int, ...]:
        """Chiplets sharing at least one compatible stage template with ``chiplet`` (itself excluded)."""
        ...

    def queue_wait_s(self, chiplet: int) -> float:
        """Estimated time until the chiplet could start a new job: running remainder + queued estimates, s."""
        ...

    def hop_penalty_s(self, job: StageJob, chiplet: int) -> float:
        """Uncontended NoI time of the job's HBM transfers if run on the chiplet (HYDRA Eq. 3), s."""
        ...

    def home_wait_s(self, chiplet: int) -> float:
        """Estimated wait of a job of the chiplet's own phase role: running remainder + queued own-role jobs'
        estimates (the other role's queued jobs come after it), s."""
        ...

    def is_guest(self, job: StageJob, chiplet: int) -> bool:
        """Whether the job is of the other phase than the chiplet's role (cross-phase)."""
        ...

    def lend_cost_s(self, job: StageJob, chiplet: int, service_s: float) -> float:
        """Delay running ``job`` (``service_s`` seconds) on a chiplet of the other role imposes on that chiplet's
        own-role jobs, seconds per request of ``job``."""
        ...

    def home_share(self, chiplet: int) -> float:
        """1 - the busy fraction of the run so far the chiplet spent on its own role's jobs, in [0, 1]."""
        ...

    def estimate_s(self, job: StageJob, chiplet: int) -> float:
        """Uncontended service time of the job on the chiplet, its NoI transfers (HYDRA Eq. 3) included, s."""
        ...


P = TypeVar("P")


def _register(registry: dict[Any, type[P]], kind: Any) -> Callable[[type[P]], type[P]]:
    def deco(cls: type[P]) -> type[P]:
        registry[kind] = cls
        return cls

    return deco


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
        msg = f"{name} must be a positive finite number, got {value!r}"
        raise SimulationError(msg)


def _integer_at_least(name: str, value: object, low: int) -> None:
    """Raise :class:`SimulationError` unless ``value`` is an integer ``>= low`` (``name`` heads the message)."""
    if not (isinstance(value, int) and value >= low):
        msg = f"{name} must be an integer >= {low}, got {value!r}"
        raise SimulationError(msg)


# --------------------------------------------------------------------------------------------------------------
# Batchers
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StaticBatcherConfig:
    """Static batching.

    Attributes
    ----------
    max_batch : int
        Requests per batch; a full batch forms when this many are waiting and a decode slot is free.
    timeout_s : float
        Batch-formation timeout, s: once the oldest waiting request has waited this long, the waiting requests
        (fewer than ``max_batch``) start as a partial batch in the next free slot. ``math.inf`` (the default
        here): no timeout, a batch waits until it is full. HYDRA gives no formation rule; the scenario's
        ``simulation.static_batch_timeout_s`` sets it for the studies.

    Raises
    ------
    SimulationError
        ``max_batch`` below 1, or ``timeout_s`` negative or NaN.
    """

    max_batch: int
    timeout_s: float = math.inf
    kind: BatcherKind = field(default=BatcherKind.STATIC, init=False)

    def __post_init__(self) -> None:
        _integer_at_least("StaticBatcherConfig.max_batch", self.max_batch, 1)
        if not (isinstance(self.timeout_s, int | float) and self.timeout_s >= 0):
            msg = f"StaticBatcherConfig.timeout_s must be a number >= 0 (math.inf: none), got {self.timeout_s!r}"
            raise SimulationError(msg)


@dataclass(frozen=True)
class DynamicBatcherConfig:
    """Continuous batching with a token budget (HYDRA Sec. IV-B).

    Attributes
    ----------
    max_batch : int
        Most requests per decode micro-batch; at most ``max_batch x slots`` requests are admitted at once.
    token_budget_tokens : float | None
        Admission stops while the admitted requests' estimated token demand (prompt + median output each)
        would exceed it. ``None`` derives it as the admission limit times the median per-request token cost
        (prompt + output) of the request sample; ``math.inf`` turns the budget off.
    """

    max_batch: int
    token_budget_tokens: float | None = None
    kind: BatcherKind = field(default=BatcherKind.DYNAMIC, init=False)

    def __post_init__(self) -> None:
        _integer_at_least("DynamicBatcherConfig.max_batch", self.max_batch, 1)
        if self.token_budget_tokens is not None and not self.token_budget_tokens > 0:
            msg = f"DynamicBatcherConfig.token_budget_tokens must be > 0 or None, got {self.token_budget_tokens!r}"
            raise SimulationError(msg)


BatcherConfig = StaticBatcherConfig | DynamicBatcherConfig


class Batcher(ABC):
    """Decides which waiting requests are admitted and which requests form each decode iteration.

    Parameters
    ----------
    config : BatcherConfig
    n_slots : int
        Decode micro-batches the pipeline holds.
    median_prompt_tokens, median_output_tokens : float
        Medians of the request sample, tokens (the offline profile the token budget is derived from).
    """

    def __init__(self, config: BatcherConfig, n_slots: int, median_prompt_tokens: float,
                 median_output_tokens: float) -> None:
        self.config = config
        self.max_batch = config.max_batch
        self.n_slots = n_slots
        self.median_output_tokens = median_output_tokens
        self.median_cost_tokens = median_prompt_tokens + median_output_tokens

    def demand_of(self, request: SimRequest) -> float:
        """Estimated token cost of a request: prompt (and recomputed output) plus the median output, tokens."""
        return request.context_tokens + self.median_output_tokens

    @abstractmethod
    def admit(self, pool: deque[SimRequest], state: AdmissionState) -> list[list[SimRequest]]:
        """Pop the requests to admit now from the head of ``pool``, grouped by prefill job.

        The simulator allocates their memory, starts their prefill and, for static batching, binds each group
        to a free decode slot.
        """

    @abstractmethod
    def fill(self, slot: DecodeSlot, ready: deque[SimRequest]) -> None:
        """Set ``slot.members`` for the slot's next iteration (prefilled requests wait in ``ready``)."""




class StaticBatcher(Batcher):
    """Fixed batches: ``max_batch`` requests admitted together into a free slot, prefilled together and
    decoded until the longest finishes; finished requests are not replaced (HYDRA Fig. 5, top).

    A batch forms when ``max_batch`` requests wait, or, with fewer waiting, when the oldest of them has waited
    ``timeout_s`` (``StaticBatcherConfig.timeout_s``; the simulator wakes the batcher at each request's arrival +
    timeout). If the whole batch does not fit in memory and nothing else is admitted, the longest prefix that
    fits is admitted, so a lone oversized batch cannot stall the system.
    """

    def admit(self, pool: deque[SimRequest], state: AdmissionState) -> list[list[SimRequest]]:
        """Return one group of ``max_batch`` requests per free slot while enough requests wait and fit (fewer
        when the pool head has waited ``timeout_s``)."""
        groups: list[list[SimRequest]] = []
        free = state.free_slots()
        b = self.max_batch
        timeout = getattr(self.config, "timeout_s", math.inf)
        while free and pool and (len(pool) >= b or state.now_s >= pool[0].arrival_s + timeout):
            batch = [pool[i] for i in range(min(b, len(pool)))]
            if not state.fits(batch + [r for g in groups for r in g]):
                if groups or state.n_admitted > 0:
                    break
                while batch and not state.fits(batch):
                    batch.pop()
                if not batch:
                    break
            for _ in batch:
                pool.popleft()
            groups.append(batch)
            free.pop()
        return groups

    def fill(self, slot: DecodeSlot, ready: deque[SimRequest]) -> None:
        """Keep the bound batch's remaining members (no replacement)."""


class DynamicBatcher(Batcher):
    """Continuous batching: admit from the pool head while fewer than ``max_batch x slots`` requests are
    admitted, the token budget holds and the prompt's memory fits; refill each micro-batch from the prefilled
    requests before every iteration (HYDRA Sec. IV-B, Fig. 5 bottom).

    Notes
    -----
    Token budget (HYDRA Sec. IV-B: "the product of the current batch size and median per-request token
    cost"): budget = admission limit x median(prompt + output) unless configured; a request's demand is its
    prompt (plus any recomputed output) plus the median output. An empty system always admits its head
    request, so a long prompt cannot block forever. Admission is first come, first served and never preempts:
    a request that does not fit waits (under the fewest-generated-tokens rule the newcomer, with no output yet,
    would be the victim anyway).
    """

    def __init__(self, config: BatcherConfig, n_slots: int, median_prompt_tokens: float,
                 median_output_tokens: float) -> None:
        super().__init__(config, n_slots, median_prompt_tokens, median_output_tokens)
        self.limit = self.max_batch * n_slots
        budget = getattr(config, "token_budget_tokens", None)
        self.budget_tokens = self.limit * self.median_cost_tokens if budget is None else float(budget)

    def admit(self, pool: deque[SimRequest], state: AdmissionState) -> list[list[SimRequest]]:
        """Return single-request groups popped from the pool head while the admission conditions hold."""
        groups: list[list[SimRequest]] = []
        n, demand = state.n_admitted, state.demand_tokens
        while pool and n < self.limit:
            r = pool[0]
            d = self.demand_of(r)
            if n > 0 and demand + d > self.budget_tokens:
                break
            if not state.fits([r] if not groups else [r] + [g[0] for g in groups]):
                break
            pool.popleft()
            groups.append([r])
            n += 1
            demand += d
        return groups

    def fill(self, slot: DecodeSlot, ready: deque[SimRequest]) -> None:
        """Top the slot up to ``max_batch`` members with the oldest prefilled requests."""
        members = slot.members
        while ready and len(members) < self.max_batch:
            members.append(ready.popleft())
