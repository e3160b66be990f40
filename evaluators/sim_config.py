"""Frozen, validated configuration of the serving simulator (see evaluators/simulator.py)."""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from chipdse.evaluators.sim_arrivals import ArrivalConfig
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.evaluators.sim_policies import BatcherConfig
from chipdse.evaluators.sim_schedulers import SchedulerConfig, StaticSchedulerConfig

PREFILL_FEATURES = ("requests", "tokens", "tokens_squared", "chunks", "experts_touched")
"""Features of a prefill job over its requests of L tokens each: (sum 1, sum L, sum L^2, sum ceil(L / chunk),
sum over the chunks of 1 - (1 - p)^n with n the chunk's tokens of that request and p = ``SimConfig.expert_touch_p``)."""
DECODE_FEATURES = ("iteration", "requests", "context_tokens", "experts_touched")
"""Features of a decode iteration: (1, batch size b, sum of the members' context tokens, 1 - (1 - p)^b with
p = ``SimConfig.expert_touch_p``: the fraction of a MoE layer's routed experts the iteration reads)."""
OPTIONAL_FEATURES = 1
"""Trailing features (``experts_touched``) a :class:`TaskCost` may leave out: their coefficients are then 0."""

Phase = Literal["prefill", "decode"]
_FEATURES = {"prefill": PREFILL_FEATURES, "decode": DECODE_FEATURES}
_mul = operator.mul


class ServiceTime(StrEnum):
    """How the compute part of a stage is drawn."""

    DETERMINISTIC = "deterministic"
    """As the cost table says."""
    EXPONENTIAL = "exponential"
    """Multiplied by an Exp(1) draw per stage visit (mean kept); for queueing checks and sensitivity runs."""


# --------------------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChipletSpec:
    """One placed compute chiplet.

    Attributes
    ----------
    id : str
        Unique id, e.g. ``"Md@12"``.
    phase : {"prefill", "decode"}
        Phase role: the mappings put only this phase's tasks on it; a scheduler with ``cross_phase`` may also
        run the other phase's jobs on it (where the other phase's table has a cost for it).
    family : str
        Block family it is built for (``"attention"``, ``"mamba"``); informational, compatibility comes from
        the cost tables.
    cell : int
        Grid cell ``row * cols + col``.
    """

    id: str
    phase: Phase
    family: str
    cell: int


@dataclass(frozen=True)
class TaskCost:
    """Cost of one task on one chiplet, linear in the phase's features.

    Attributes
    ----------
    compute_s : tuple[float, ...]
        Seconds per unit of each feature (length = number of the phase's features, or that minus
        :data:`OPTIONAL_FEATURES`: the MoE feature's coefficient is then 0).
    hbm_bytes : tuple[float, ...]
        Bytes moved from the task's HBM group per unit of each feature (empty: none; same length rule).
    group : str
        Name of the :class:`MemoryGroup` holding the task's weights, KV and state (needed when it moves bytes).
    """

    compute_s: tuple[float, ...]
    hbm_bytes: tuple[float, ...] = ()
    group: str = ""


@dataclass(frozen=True)
class PhaseTable:
    """A phase's tasks, their costs and the mapping (HYDRA Eqs. 4-5's Omega).

    Attributes
    ----------
    tasks : tuple[str, ...]
        Task ids in model (pipeline) order.
    cost : Mapping[tuple[str, str], TaskCost]
        (task, chiplet id) -> cost, for compatible pairs only.
    mapping : Mapping[str, str]
        Task -> preferred chiplet id.
    """

    tasks: tuple[str, ...]
    cost: Mapping[tuple[str, str], TaskCost]
    mapping: Mapping[str, str]


@dataclass(frozen=True)
class MemoryGroup:
    """One HBM group (HYDRA Step 1: attention or Mamba stacks).

    Attributes
    ----------
    name : str
    capacity_bytes : float
        Capacity left for KV and state after the group's weights, bytes.
    kv_bytes_per_token : float
        KV bytes per context token of a request in this group, bytes.
    state_bytes_per_request : float
        SSM (and conv) state per request in this group, bytes.
    stack_cells : tuple[int, ...]
        Cells of the group's HBM stacks (a group's data are striped evenly over them).
    """

    name: str
    capacity_bytes: float
    kv_bytes_per_token: float = 0.0
    state_bytes_per_request: float = 0.0
    stack_cells: tuple[int, ...] = ()


@dataclass(frozen=True)
class NoiSpec:
    """The network on interposer: a 2D mesh of directed links with XY routing.

    Attributes
    ----------
    rows, cols : int
        Grid size, cells.
    link_GBps : float
        Bandwidth of each directed link, GB/s (1e9 bytes/s).
    hbm_GBps : float
        Bandwidth of one HBM stack's port, GB/s.
    hop_latency_s : float
        Latency added per link traversed, s.
    """

    rows: int
    cols: int
    link_GBps: float
    hbm_GBps: float
    hop_latency_s: float = 0.0


MAX_ARRIVALS = 2_000_000
"""Most arrivals one run may generate (they are drawn up front; each request costs about 1 kB)."""


@dataclass(frozen=True)
class SimConfig:
    """Everything one simulation run needs besides the request sample (frozen, validated at creation).

    Attributes
    ----------
    chiplets : tuple[ChipletSpec, ...]
        Placed compute chiplets.
    prefill, decode : PhaseTable
        Costs and mappings of the two phases (costs over :data:`PREFILL_FEATURES` / :data:`DECODE_FEATURES`).
    memory : tuple[MemoryGroup, ...]
        HBM groups.
    noi : NoiSpec
    arrival : ArrivalConfig
        Arrival process (``sim_arrivals``).
    batcher : BatcherConfig
        Static or dynamic batching (``sim_policies``).
    scheduler : SchedulerConfig
        Task scheduler (``sim_schedulers``), static by default.
    duration_s : float
        Simulated window, s; arrivals and events after it are not simulated.
    seed : int
        Seed of the run's ``numpy.random.Generator``.
    block_tokens : int
        Tokens per paged memory block.
    chunk_tokens : int
        Prefill chunk, tokens. A prefill job is split into chunks of this many prompt tokens per request, which
        flow through the prefill stages one after another (pipelined prefill); each chunk streams the weights
        once (the ``chunks`` feature), and the whole job does the work of its unsplit features.
    activation_bytes_per_token : float
        Bytes passed from one stage to the next per token (prefill: prompt tokens; decode: one per request).
    pipeline_batches : int | None
        Decode micro-batches in flight; ``None`` takes the number of decode stages (keeps every stage busy).
    service_time : ServiceTime
        Deterministic stage compute, or exponential around the table's value.
    record_timeline : bool
        Keep every handled event's (time, kind) in the result.
    warmup_s : float
        Warm-up, s, excluded from the measurements: throughput counts the tokens emitted in
        ``[warmup_s, duration_s]``, and TTFT / TBT / E2E cover the requests that arrived at or after it.
        Must be below ``duration_s``. Utilizations and occupancy cover the whole window.
    expert_touch_p : float
        p = k / E of the model's MoE layers (top-k of E routed experts per token; 0: no MoE), in [0, 1]: the
        ``experts_touched`` feature of a job is 1 - (1 - p)^n over its n tokens (decode: one per request;
        prefill: per chunk and request), the expected fraction of a layer's routed experts it reads
        (``evaluators.latency.touched_fraction``).
    stop_after_finished : int
        0 (default): the run lasts ``duration_s``. n >= 1: the run ends at the first instant, at or after
        ``min_duration_s``, by which n requests that arrived at or after ``warmup_s`` have finished; ``duration_s``
        is then the cap (HYDRA Sec. VI-A measures each configuration over a stated workload; issue 30's protocol:
        no workload's window may close on 0-2 completed requests). ``SimResult.stop`` says which limit ended it.
    min_duration_s : float
        Shortest window when ``stop_after_finished`` is set, s, in ``(warmup_s, duration_s]`` (0: the warm-up).
    """

    chiplets: tuple[ChipletSpec, ...]
    prefill: PhaseTable
    decode: PhaseTable
    memory: tuple[MemoryGroup, ...]
    noi: NoiSpec
    arrival: ArrivalConfig
    batcher: BatcherConfig
    scheduler: SchedulerConfig = field(default_factory=StaticSchedulerConfig)
    duration_s: float = 100.0
    seed: int = 0
    block_tokens: int = 16
    chunk_tokens: int = 512
    activation_bytes_per_token: float = 0.0
    pipeline_batches: int | None = None
    service_time: ServiceTime = ServiceTime.DETERMINISTIC
    record_timeline: bool = False
    warmup_s: float = 0.0
    expert_touch_p: float = 0.0
    stop_after_finished: int = 0
    min_duration_s: float = 0.0

    def __post_init__(self) -> None:
        _validate(self)


def _fail(field_name: str, expected: str) -> None:
    msg = f"SimConfig.{field_name}: {expected}"
    raise SimulationError(msg)


def _check_number(field_name: str, value: object, minimum: float = 0.0, strict: bool = False) -> None:
    ok = isinstance(value, int | float) and math.isfinite(value) and (value > minimum if strict else
                                                                      value >= minimum)
    if not ok:
        _fail(field_name, f"a finite number {'>' if strict else '>='} {minimum:g}, got {value!r}")


def _validate_phase(cfg: SimConfig, phase: Phase) -> None:
    table: PhaseTable = getattr(cfg, phase)
    feats = _FEATURES[phase]
    if not table.tasks or len(set(table.tasks)) != len(table.tasks):
        _fail(f"{phase}.tasks", f"a non-empty tuple of unique task ids, got {table.tasks!r}")
    roles = {c.id: c.phase for c in cfg.chiplets}
    groups = {g.name: g for g in cfg.memory}
    tasks = set(table.tasks)
    for (k, c), cost in table.cost.items():
        where = f"{phase}.cost[({k!r}, {c!r})]"
        if k not in tasks or c not in roles:
            _fail(where, "a key of a known task and a known chiplet id")
        lengths = (len(feats), len(feats) - OPTIONAL_FEATURES)
        if len(cost.compute_s) not in lengths:
            _fail(f"{where}.compute_s", f"{lengths[0]} coefficients {feats} (or the first {lengths[1]}), got "
                  f"{cost.compute_s!r}")
        if cost.hbm_bytes and len(cost.hbm_bytes) not in lengths:
            _fail(f"{where}.hbm_bytes", f"empty or {lengths[0]} coefficients {feats} (or the first {lengths[1]}), "
                  f"got {cost.hbm_bytes!r}")
        for v in (*cost.compute_s, *cost.hbm_bytes):
            _check_number(f"{where}", v)
        if any(cost.hbm_bytes) and (cost.group not in groups or not groups[cost.group].stack_cells):
            _fail(f"{where}.group", f"a memory group with stack cells (tasks that move bytes need one), "
                  f"got {cost.group!r}")
    for k in table.tasks:
        c = table.mapping.get(k)
        if c is None or (k, c) not in table.cost:
            _fail(f"{phase}.mapping[{k!r}]", f"a chiplet with a cost for the task, got {c!r}")
        if roles[c] != phase:
            _fail(f"{phase}.mapping[{k!r}]", f"a {phase} chiplet, got {c!r} whose phase role is {roles[c]!r}")


def _validate(cfg: SimConfig) -> None:
    """Check a :class:`SimConfig`; raise :class:`SimulationError` naming the field and the bad value."""
    noi = cfg.noi
    for name in ("rows", "cols"):
        v = getattr(noi, name)
        if not (isinstance(v, int) and v >= 1):
            _fail(f"noi.{name}", f"an integer >= 1, got {v!r}")
    _check_number("noi.link_GBps", noi.link_GBps, strict=True)
    _check_number("noi.hbm_GBps", noi.hbm_GBps, strict=True)
    _check_number("noi.hop_latency_s", noi.hop_latency_s)
    n_cells = noi.rows * noi.cols
    if not cfg.chiplets:
        _fail("chiplets", "at least one chiplet")
    ids = [c.id for c in cfg.chiplets]
    if len(set(ids)) != len(ids):
        _fail("chiplets", f"unique ids, got {ids}")
    used_cells: set[int] = set()
    for c in cfg.chiplets:
        if c.phase not in ("prefill", "decode"):
            _fail(f"chiplets[{c.id!r}].phase", f"'prefill' or 'decode', got {c.phase!r}")
        if not (isinstance(c.cell, int) and 0 <= c.cell < n_cells) or c.cell in used_cells:
            _fail(f"chiplets[{c.id!r}].cell", f"a free cell in 0..{n_cells - 1}, got {c.cell!r}")
        used_cells.add(c.cell)
    names = [g.name for g in cfg.memory]
    if not names or len(set(names)) != len(names):
        _fail("memory", f"at least one group, with unique names, got {names}")
    for g in cfg.memory:
        _check_number(f"memory[{g.name!r}].capacity_bytes", g.capacity_bytes)
        _check_number(f"memory[{g.name!r}].kv_bytes_per_token", g.kv_bytes_per_token)
        _check_number(f"memory[{g.name!r}].state_bytes_per_request", g.state_bytes_per_request)
        for cell in g.stack_cells:
            if not (isinstance(cell, int) and 0 <= cell < n_cells) or cell in used_cells:
                _fail(f"memory[{g.name!r}].stack_cells", f"free cells in 0..{n_cells - 1}, got {g.stack_cells!r}")
            used_cells.add(cell)
    for phase in ("prefill", "decode"):
        _validate_phase(cfg, phase)
    _check_number("duration_s", cfg.duration_s, strict=True)
    _check_number("warmup_s", cfg.warmup_s)
    rate = getattr(cfg.arrival, "rate_rps", None)
    if rate is not None and rate * cfg.duration_s > MAX_ARRIVALS:
        _fail("arrival.rate_rps", f"rate x duration at most {MAX_ARRIVALS:,} arrivals per run (memory), got "
              f"{rate:g} req/s x {cfg.duration_s:g} s = {rate * cfg.duration_s:,.0f}; shorten the window or lower "
              "the rate")
    if cfg.warmup_s >= cfg.duration_s:
        _fail("warmup_s", f"below duration_s = {cfg.duration_s:g} s, got {cfg.warmup_s!r}")
    if not (isinstance(cfg.stop_after_finished, int) and cfg.stop_after_finished >= 0):
        _fail("stop_after_finished", f"an integer >= 0 (0: a fixed window), got {cfg.stop_after_finished!r}")
    _check_number("min_duration_s", cfg.min_duration_s)
    if cfg.min_duration_s > cfg.duration_s:
        _fail("min_duration_s", f"at most duration_s = {cfg.duration_s:g} s (the cap), got {cfg.min_duration_s!r}")
    for name in ("seed", "block_tokens", "chunk_tokens"):
        v = getattr(cfg, name)
        if not (isinstance(v, int) and v >= (0 if name == "seed" else 1)):
            _fail(name, f"an integer >= {0 if name == 'seed' else 1}, got {v!r}")
    _check_number("activation_bytes_per_token", cfg.activation_bytes_per_token)
    p = cfg.expert_touch_p
    if not (isinstance(p, int | float) and 0.0 <= p <= 1.0):
        _fail("expert_touch_p", f"a number in [0, 1] (k / E), got {p!r}")
    if cfg.pipeline_batches is not None and not (isinstance(cfg.pipeline_batches, int) and cfg.pipeline_batches >= 1):
        _fail("pipeline_batches", f"None or an integer >= 1, got {cfg.pipeline_batches!r}")
    if cfg.service_time not in tuple(ServiceTime):
        _fail("service_time", f"one of {[s.value for s in ServiceTime]}, got {cfg.service_time!r}")


# --------------------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------------------
