"""Event-driven serving simulator of a placed and mapped chiplet design (HYDRA Sec. VI-A's simulator, public).

What is modeled
---------------
* **Requests** arrive from a trace replay, a Poisson or a Gamma process (``evaluators.sim_arrivals``) and
  wait in a FCFS request pool. Arrival ``i`` takes the prompt / output lengths of row ``i mod n`` of the
  :class:`~chipdse.core.workloads.LengthSample`. The first output token comes out of prefill (TTFT), the others
  one per decode iteration (TBT); E2E ends with the last one.
* **Batching**: static or dynamic (continuous) batching decides admission (``sim_policies``). Decode runs in
  ``pipeline_batches`` micro-batches ("slots") of at most ``max_batch`` requests each, so that several
  iterations are in the spatial pipeline at once: the assumption behind HYDRA Eq. 5's bottleneck throughput.
  By default there is one slot per decode stage.
* **Pipeline and granularity**: a phase's *stages* are the chiplets of its mapping in order of their first
  task; a stage runs all the tasks the mapping puts on that chiplet (HYDRA Eq. 4's stage time t_c). A prefill
  job (one request under dynamic batching, one batch under static batching) is cut into chunks of
  ``chunk_tokens`` prompt tokens; each chunk, and each decode iteration of a micro-batch, visits the stages in
  order, so consecutive chunks overlap in the pipeline. The first tokens come when the last chunk leaves the
  last stage. There is one event per stage visit: no per-token or per-task events.
* **Task scheduling**: every stage visit is a job that the task scheduler (static, FCFS round-robin, work
  stealing, HYDRA elastic) places on a chiplet that has a cost for every task of the stage: of the phase's role,
  and, for a scheduler with ``cross_phase`` (elastic by default; FCFS and work stealing as an option; never
  static), also of the other role (a prefill job on a decode chiplet and the reverse, at that chiplet's own
  costs; HYDRA Sec. IV-C and the c_p,D / c_d,P terms of Eqs. 6-7). Each chiplet serves its FIFO queue one job at
  a time, whatever the jobs' phases.
* **Stage time**: costs are linear in per-job features (:data:`PREFILL_FEATURES`, :data:`DECODE_FEATURES`),
  one :class:`TaskCost` per (task, chiplet) giving compute seconds and HBM bytes. A stage on chiplet c first
  streams its tasks' bytes from the stacks of their memory groups: one stripe per stack (bytes split evenly,
  stripes one after another), each stripe store-and-forward through the stack's port (HBM bandwidth) and then
  every link of its XY route (link bandwidth plus hop latency). Then it computes for
  ``sum_k max(0, compute_k - bytes_k / B_HBM)``. Without contention the stage therefore takes exactly
  ``sum_k max(compute_k, bytes_k / B_HBM) + mean_hops * bytes / B_NoI``, the mapping's t_comp + t_comm
  (HYDRA Eqs. 3-4, ``chipdse.solvers.problems.mapping_problem``); :func:`uncontended_stage_times` returns it.
* **MoE**: a MoE block's routed experts are read only where a job's tokens touch them: the ``experts_touched``
  feature 1 - (1 - k/E)^n (decode: n = the iteration's requests; prefill: n = each request's tokens in the chunk)
  times the bytes of all routed experts, as ``evaluators.latency`` does.
* **Contention**: HBM ports and directed mesh links are resources with a list of reserved busy intervals.
  A hop takes the earliest idle gap long enough for it, no earlier than the previous hop ended, so transfers
  that share a port or a link wait for each other while idle time is never wasted. A stage holds its
  chiplet while its transfers wait. Activations (``activation_bytes_per_token`` per token) also cross the NoI
  between consecutive stages.
* **Memory**: per HBM group, the capacity left after weights holds per-request state (from admission) and KV in
  paged blocks of ``block_tokens`` tokens, allocated on demand as the context grows. When a block does not fit,
  the admitted request with the fewest generated tokens (the newest among equals) is preempted. Its memory is
  freed and it returns to the head of the pool. On readmission its prompt plus generated tokens are prefilled
  again (recompute), which also yields its next token, as vLLM's recompute preemption does. Admission itself
  never preempts: a request whose prompt does not fit waits.
* **Metrics**: output-token throughput, TTFT / TBT / E2E (mean, p50, p99), utilization of every chiplet, link
  and HBM port, HBM occupancy over time, preemptions, cross-phase jobs and their busy seconds, whether the run
  finished no request at all (``SimResult.empty``), events handled, wall time.

What is not modeled
-------------------
* Timing inside a stage: per-token or per-operator steps, and overlap of a stage's transfers with its compute.
* NoI detail: flow control below whole-stripe granularity (no packets, credits or virtual channels), and the
  direction of HBM traffic (all stage bytes are read towards the chiplet).
* A separate prefill-to-decode KV hand-off: KV is written to and read from HBM within the stages' bytes.
* Chunked prefill interleaved with decode, and the causal order of one prompt's chunks when a scheduler runs
  them on different chiplets of a stage (on one chiplet, FIFO order keeps it).
* Preemption of a running job when the other phase needs its chiplet back: cross-phase work is placed job by
  job and runs to its end.
* Resending activations when work stealing moves a job after they were sent.
* Request cancellation and SLO-aware admission.
* Power and thermals.
* Draining: the run stops at ``duration_s`` (or, with ``stop_after_finished``, once that many requests that
  arrived after the warm-up have finished), and requests still in the system are reported as such.

Determinism: all randomness (arrivals, optional exponential service times) comes from one
``numpy.random.Generator(seed)``, the kernel breaks ties by (time, kind, insertion order), and no result depends
on the iteration order of a set.
"""

from __future__ import annotations

import math
import time
from collections import deque

import numpy as np
import pandas as pd

from chipdse.core.workloads import LengthSample
from chipdse.evaluators.policies import make_batcher, make_scheduler
from chipdse.evaluators.sim_arrivals import make_arrival
from chipdse.evaluators.sim_config import (
    DECODE_FEATURES,
    PREFILL_FEATURES,
    ChipletSpec,
    MemoryGroup,
    NoiSpec,
    PhaseTable,
    ServiceTime,
    SimConfig,
    TaskCost,
    _mul,
)
from chipdse.evaluators.sim_kernel import Event, EventKind, Kernel, SimulationError
from chipdse.evaluators.sim_noi import _Topology, reserve_routes, uncontended_stage_times, xy_route
from chipdse.evaluators.sim_policies import (
    Batcher,
    BatcherKind,
    DecodeSlot,
    PrefillJob,
    RequestState,
    SimRequest,
    StageJob,
)
from chipdse.evaluators.sim_results import CROSS_PHASE_KEYS, LatencyStats, SimResult
from chipdse.evaluators.sim_schedulers import TaskScheduler

__all__ = [
    "DECODE_FEATURES", "PREFILL_FEATURES", "ChipletSpec", "LatencyStats", "MemoryGroup", "NoiSpec", "PhaseTable",
    "ServiceTime", "SimConfig", "SimResult", "SimulationError", "TaskCost", "simulate", "uncontended_stage_times",
    "xy_route",
]
"""The simulator's public API; the config, results and NoI pieces live in sim_config, sim_results, sim_noi."""


class _Engine:
    """Run state and event handlers of one simulation (also the ``ClusterView`` / ``AdmissionState``)."""

    def __init__(self, cfg: SimConfig, sample: LengthSample) -> None:
        self.cfg = cfg
        self.topo = topo = _Topology(cfg)
        self.rng = np.random.default_rng(cfg.seed)
        self.duration = float(cfg.duration_s)
        n_chip = len(topo.ids)
        self.running: list[StageJob | None] = [None] * n_chip
        self.busy_until = [0.0] * n_chip
        self.chip_busy = [0.0] * n_chip
        self.decode_role = [c.phase == "decode" for c in cfg.chiplets]
        self.cross_jobs = [0, 0]
        self.cross_busy = [0.0, 0.0]
        self.queues: list[deque[StageJob]] = [deque() for _ in range(n_chip)]
        self.queued_est = [0.0] * n_chip
        self.guest_est = [0.0] * n_chip  # queued estimates of the other phase role's jobs
        self.guests_queued = [0] * n_chip
        self.home_busy = [0.0] * n_chip  # seconds of own-role jobs started so far
        self.home_jobs = [0] * n_chip
        self.home_reqs = [0] * n_chip
        self._est_job: StageJob | None = None  # estimate_s's cache: job, stage template, plan class -> s
        self._est_tid = -1
        self._est_vals: dict[int, float] = {}
        n_res = len(topo.res_keys)
        # per resource: [busy-interval starts, ends, seconds per byte, latency, busy seconds]
        self.res: list[list] = [[[], [], topo.inv_rate[i], topo.latency[i], 0.0] for i in range(n_res)]
        # per stage template and chiplet: (byte coefficients, stripe routes as resource lists) per memory group
        self.transfers = [{c: [(coeffs, [tuple(self.res[r] for r in route) for route in routes])
                               for coeffs, routes, _ in plan.groups] for c, plan in plans.items()}
                          for plans in topo.plans]
        self.act_routes: dict[tuple[int, int], list[tuple[list, ...]]] = {}
        self.n_groups = len(cfg.memory)
        self.cap = [float(g.capacity_bytes) for g in cfg.memory]
        self.state_bytes = [float(g.state_bytes_per_request) for g in cfg.memory]
        self.block_bytes = [float(g.kv_bytes_per_token) * cfg.block_tokens for g in cfg.memory]
        # memory in use in group g is n_admitted * state_bytes[g] + total_blocks * block_bytes[g]: every admitted
        # request holds its state in each group and the same number of blocks (tokens) in each; integer counts
        # keep the accounting exact
        self.total_blocks = 0
        self.mem_groups = [g for g in range(self.n_groups) if self.state_bytes[g] or self.block_bytes[g]]
        self.mem_t: list[float] = [0.0]
        self.mem_used: list[tuple[float, ...]] = [(0.0,) * self.n_groups]
        self.prefill_stages = topo.stages["prefill"]
        self.decode_stages = topo.stages["decode"]
        self.last_prefill = len(self.prefill_stages) - 1
        self.last_decode = len(self.decode_stages) - 1
        n_slots = cfg.pipeline_batches or len(self.decode_stages)
        self.slots = [DecodeSlot(i) for i in range(n_slots)]
        self.static = cfg.batcher.kind == BatcherKind.STATIC
        prompts = np.asarray(sample.prefill_tokens)
        outputs = np.asarray(sample.decode_tokens)
        self.batcher: Batcher = make_batcher(cfg.batcher, n_slots, float(np.median(prompts)),
                                             float(np.median(outputs)))
        self.sched: TaskScheduler = make_scheduler(cfg.scheduler)
        self.steals = self.sched.steals
        self.uses_wait = self.sched.uses_queue_wait
        self.act_bpt = float(cfg.activation_bytes_per_token)
        self.expert_miss = 1.0 - float(cfg.expert_touch_p)  # a token misses a given routed expert
        self.exp_draws = cfg.service_time == ServiceTime.EXPONENTIAL
        self._exp_buf = np.empty(0)
        self._exp_i = 0
        self.arrivals = make_arrival(cfg.arrival).arrival_times_s(self.duration, self.rng, sample)
        n = len(prompts)
        self.prompts = [int(x) for x in prompts[np.arange(len(self.arrivals)) % n]] if n else []
        self.outputs = [int(x) for x in outputs[np.arange(len(self.arrivals)) % n]] if n else []
        self._check_footprints(sample)
        self.requests: list[SimRequest] = []
        self.pool: deque[SimRequest] = deque()
        self.ready: deque[SimRequest] = deque()
        self.admitted: dict[int, SimRequest] = {}
        self.n_admitted = 0
        self.demand_tokens = 0.0
        self.tokens = 0
        self.warmup = float(cfg.warmup_s)
        self.tokens_measured = 0
        self.finished_measured = 0
        self.end = self.duration
        self.stop = "window"
        self.run_start = [0.0] * n_chip
        self.preemptions = 0
        self.tbt: list[float] = []
        self.kernel = Kernel({EventKind.ARRIVAL: self.on_arrival, EventKind.STAGE_DONE: self.on_stage_done,
                              EventKind.PREFILL_DONE: self.on_prefill_done,
                              EventKind.ITERATION_DONE: self.on_iteration_done,
                              EventKind.BATCH_TIMEOUT: self.on_batch_timeout}, record=cfg.record_timeline)
        self.batch_timeout_s = float(getattr(cfg.batcher, "timeout_s", math.inf))

    def _check_footprints(self, sample: LengthSample) -> None:
        """Every simulated request must fit its largest context alone, or preemption could never end."""
        if not self.prompts:
            return
        bt = self.cfg.block_tokens
        tokens = np.asarray(self.prompts) + np.asarray(self.outputs) - 1
        blocks = -(-tokens // bt)
        for g, grp in enumerate(self.cfg.memory):
            need = self.state_bytes[g] + blocks * self.block_bytes[g]
            bad = np.flatnonzero(need > self.cap[g])
            if len(bad):
                i = int(bad[0])
                msg = (f"request {i} (sample row {i % len(sample.prefill_tokens)} of {sample.source!r}: "
                       f"{self.prompts[i]} prompt + {self.outputs[i]} output tokens) needs {need[i]:.4g} bytes in "
                       f"memory group {grp.name!r}, which has {self.cap[g]:.4g} bytes for KV and state")
                raise SimulationError(msg)

    # ---- ClusterView / AdmissionState -------------------------------------------------------------------------

    @property
    def now_s(self) -> float:
        """Current simulated time, s."""
        return self.kernel.now_s

    def compatible(self, template: int) -> tuple[int, ...]:
        """Chiplets that can run the stage template, preferred first."""
        return self.topo.templates[template][3]

    def preferred(self, template: int) -> int:
        """The mapping's chiplet for the stage template."""
        return self.topo.templates[template][2]

    def load(self, chiplet: int) -> int:
        """Queued jobs plus the running one."""
        return len(self.queues[chiplet]) + (self.running[chiplet] is not None)

    def queue(self, chiplet: int) -> deque[StageJob]:
        """The chiplet's FIFO queue."""
        return self.queues[chiplet]

    def can_run(self, chiplet: int, template: int) -> bool:
        """Whether the chiplet is compatible with the template."""
        return chiplet in self.topo.compat_sets[template]

    def peers(self, chiplet: int) -> tuple[int, ...]:
        """Chiplets sharing a compatible template with ``chiplet``."""
        return self.topo.peers[chiplet]

    def queue_wait_s(self, chiplet: int) -> float:
        """Running remainder plus the queued jobs' estimates, s."""
        rem = self.busy_until[chiplet] - self.kernel.now_s if self.running[chiplet] is not None else 0.0
        return max(rem, 0.0) + self.queued_est[chiplet]

    def home_wait_s(self, chiplet: int) -> float:
        """What a job of the chiplet's own phase role waits for: running remainder plus the queued own-role jobs'
        estimates (queued jobs of the other role come after it), s."""
        return self.queue_wait_s(chiplet) - self.guest_est[chiplet]

    def is_guest(self, job: StageJob, chiplet: int) -> bool:
        """Whether ``job`` belongs to the other phase than the chiplet's role."""
        return job.decode != self.decode_role[chiplet]

    def lend_cost_s(self, job: StageJob, chiplet: int, service_s: float) -> float:
        """Delay a guest job of ``service_s`` seconds imposes on the chiplet's own-role jobs, in seconds per
        request of ``job``: own-role jobs arrive at rate lam (jobs so far / elapsed time) and each one arriving
        during the guest waits for its remainder, lam S^2 / 2 job-seconds in all (non-preemptive priority),
        weighted by the own-role jobs' mean requests over the guest's (0 before any own-role job)."""
        n = self.home_jobs[chiplet]
        now = self.kernel.now_s
        if not n or now <= 0.0:
            return 0.0
        return n / now * service_s * service_s / 2.0 * (self.home_reqs[chiplet] / n) / max(len(job.requests), 1)

    def home_share(self, chiplet: int) -> float:
        """1 - the fraction of the run so far the chiplet spent on its own role's jobs (what it can lend)."""
        now = self.kernel.now_s
        return 1.0 - min(self.home_busy[chiplet] / now, 1.0) if now > 0.0 else 1.0

    def hop_penalty_s(self, job: StageJob, chiplet: int) -> float:
        """Uncontended Eq. 3 NoI time of the job's HBM bytes from ``chiplet``, s."""
        f = job.features
        groups = self.topo.plans[job.template][chiplet].groups
        return sum(sum(map(_mul, coeffs, f)) * comm for coeffs, _, comm in groups)

    def estimate_s(self, job: StageJob, chiplet: int) -> float:
        """Uncontended service time of ``job`` on ``chiplet`` (its transfers included), s; kept per plan class
        while the scheduler weighs the chiplets for one job and stage."""
        tid = job.template
        if job is not self._est_job or tid != self._est_tid:
            self._est_job, self._est_tid, self._est_vals = job, tid, {}
        cls = self.topo.plan_class[tid][chiplet]
        v = self._est_vals.get(cls)
        if v is None:
            v = self._est_vals[cls] = self.topo.uncontended_s(self.topo.plans[tid][chiplet], job.features)
        return v

    def fits(self, requests: list[SimRequest]) -> bool:
        """Whether the requests' state and prompt blocks fit the free memory of every group."""
        if not self.mem_groups:
            return True
        bt = self.cfg.block_tokens
        blocks = sum(-(-r.context_tokens // bt) for r in requests)
        n = len(requests)
        n += self.n_admitted
        blocks += self.total_blocks
        st, bb, cap = self.state_bytes, self.block_bytes, self.cap
        return all(n * st[g] + blocks * bb[g] <= cap[g] for g in self.mem_groups)

    def free_slots(self) -> list[DecodeSlot]:
        """Slots with no bound batch (static batching)."""
        return [s for s in self.slots if not s.bound and not s.running and not s.members]

    # ---- memory ----------------------------------------------------------------------------------------------

    def _record_memory(self) -> None:
        if not self.mem_groups:
            return
        now = self.kernel.now_s
        n, blocks = self.n_admitted, self.total_blocks
        used = tuple(n * st + blocks * bb for st, bb in zip(self.state_bytes, self.block_bytes, strict=True))
        if self.mem_t[-1] == now:
            self.mem_used[-1] = used
        else:
            self.mem_t.append(now)
            self.mem_used.append(used)

    def _release(self, r: SimRequest) -> None:
        """Free a request's memory and take it out of the admitted set."""
        self.total_blocks -= r.blocks
        r.blocks = 0
        del self.admitted[r.index]
        self.n_admitted -= 1
        self.demand_tokens -= r.demand_tokens
        self._record_memory()

    def _preempt(self, v: SimRequest) -> None:
        """Preempt ``v``: free its memory, drop it from its batch, put it back at the head of the pool."""
        self._release(v)
        if v.state == RequestState.READY:
            self.ready.remove(v)
        if v.slot is not None and v in v.slot.members:
            v.slot.members.remove(v)
        v.slot = None
        v.epoch += 1
        v.state = RequestState.WAITING
        v.preemptions += 1
        self.preemptions += 1
        self.pool.appendleft(v)

    def _grow(self, r: SimRequest) -> None:
        """Allocate blocks until ``r`` holds its whole context, preempting the fewest-generated request."""
        need = -(-r.context_tokens // self.cfg.block_tokens)
        st, bb, cap = self.state_bytes, self.block_bytes, self.cap
        while r.blocks < need:
            n, blocks = self.n_admitted, self.total_blocks + 1
            if all(n * st[g] + blocks * bb[g] <= cap[g] for g in self.mem_groups):
                self.total_blocks = blocks
                r.blocks += 1
                self._record_memory()
                continue
            victim = min(self.admitted.values(), key=lambda q: (q.generated, -q.index))
            self._preempt(victim)
            if victim is r:
                return

    # ---- jobs on chiplets ------------------------------------------------------------------------------------

    def _exp(self) -> float:
        if self._exp_i >= len(self._exp_buf):
            self._exp_buf = self.rng.standard_exponential(4096)
            self._exp_i = 0
        self._exp_i += 1
        return float(self._exp_buf[self._exp_i - 1])

    def _reserve(self, routes: list[tuple[list, ...]], t: float, nbytes: float) -> float:
        """Send ``nbytes`` over each route in turn from time ``t``; return the arrival time, s
        (:func:`evaluators.sim_noi.reserve_routes`)."""
        return reserve_routes(routes, t, nbytes, self.kernel.now_s)

    def _start(self, job: StageJob, c: int) -> Event:
        """Start ``job`` on idle chiplet ``c``: reserve its transfers, return its completion event."""
        now = self.kernel.now_s
        start = job.ready_s if job.ready_s > now else now
        plan = self.topo.plans[job.template][c]
        f = job.features
        local = self.topo.local_s(plan, f)
        if self.exp_draws:
            local *= self._exp()
        t = start
        for coeffs, routes in self.transfers[job.template][c]:
            per = sum(map(_mul, coeffs, f)) / len(routes)
            if per > 0.0:
                t = self._reserve(routes, t, per)
        done = t + local
        self.running[c] = job
        self.busy_until[c] = done
        self.run_start[c] = start
        end = self.duration
        busy = (done - start) if done <= end else (end - start if start < end else 0.0)
        self.chip_busy[c] += busy
        if job.decode != self.decode_role[c]:  # cross-phase: [prefill on decode, decode on prefill]
            self.cross_jobs[job.decode] += 1
            self.cross_busy[job.decode] += busy
        else:
            self.home_busy[c] += done - start
            self.home_jobs[c] += 1
            self.home_reqs[c] += len(job.requests)
        job.chiplet = c
        if job.decode:
            kind = EventKind.ITERATION_DONE if job.stage == self.last_decode else EventKind.STAGE_DONE
        else:
            if job.stage == 0:
                for r, _ in job.requests:
                    if r.prefill_start_s != r.prefill_start_s:  # NaN: first time
                        r.prefill_start_s = start
            kind = EventKind.PREFILL_DONE if job.stage == self.last_prefill else EventKind.STAGE_DONE
        return Event(done, kind, job)

    def _dispatch(self, job: StageJob, src: int) -> list[Event]:
        """Place ``job`` (coming from chiplet ``src``, -1 for none) and start it if its chiplet is idle."""
        c = self.sched.choose(job, self)
        if self.act_bpt and src >= 0 and src != c:
            routes = self.act_routes.get((src, c))
            if routes is None:
                cells = self.topo.cells
                routes = [tuple(self.res[r] for r in self.topo.link_route(cells[src], cells[c]))]
                self.act_routes[(src, c)] = routes
            job.ready_s = self._reserve(routes, self.kernel.now_s, self.act_bpt * job.features[1])
        if self.running[c] is None:
            return [self._start(job, c)]
        job.chiplet = c
        guest = job.decode != self.decode_role[c]
        if self.uses_wait:
            job.est_s = self.estimate_s(job, c)
            self.queued_est[c] += job.est_s
            if guest:
                self.guest_est[c] += job.est_s
        q = self.queues[c]
        if guest:
            self.guests_queued[c] += 1
            q.append(job)
        elif self.guests_queued[c]:  # own-role jobs go ahead of queued guests
            q.insert(next(i for i, j in enumerate(q) if j.decode != job.decode), job)
        else:
            q.append(job)
        out: list[Event] = []
        if self.steals:
            for d in self.topo.templates[job.template][3]:
                if self.running[d] is None:
                    ev = self._try_steal(d)
                    if ev is not None:
                        out.append(ev)
        return out

    def _try_steal(self, idle: int) -> Event | None:
        job = self.sched.steal(idle, self)
        if job is None:
            return None
        self.queues[job.chiplet].remove(job)
        self._dequeued(job, job.chiplet)
        return self._start(job, idle)

    def _dequeued(self, job: StageJob, c: int) -> None:
        """Account for ``job`` leaving chiplet ``c``'s queue."""
        self.queued_est[c] -= job.est_s
        if job.decode != self.decode_role[c]:
            self.guests_queued[c] -= 1
            self.guest_est[c] -= job.est_s

    def _free(self, c: int) -> list[Event]:
        """Chiplet ``c`` finished its job: start the next queued one (or steal one)."""
        self.running[c] = None
        q = self.queues[c]
        if q:
            job = q.popleft()
            self._dequeued(job, c)
            return [self._start(job, c)]
        if self.steals:
            ev = self._try_steal(c)
            if ev is not None:
                return [ev]
        return []

    # ---- batching --------------------------------------------------------------------------------------------

    def _admit(self) -> list[Event]:
        """Admit what the batcher allows; start the prefill jobs."""
        if not self.pool:
            return []
        groups = self.batcher.admit(self.pool, self)
        if not groups:
            return []
        now = self.kernel.now_s
        bt, size = self.cfg.block_tokens, self.cfg.chunk_tokens
        free = self.free_slots() if self.static else []
        out: list[Event] = []
        for gi, group in enumerate(groups):
            slot = free[gi] if self.static else None
            if slot is not None:
                slot.bound = True
                slot.members = list(group)
            chunks: list[list[float]] = []  # features of chunk k, summed over the group's members
            miss = self.expert_miss
            for r in group:
                L = r.context_tokens  # noqa: N806
                r.blocks = -(-L // bt)
                self.total_blocks += r.blocks
                r.state = RequestState.PREFILL
                r.slot = slot
                r.demand_tokens = self.batcher.demand_of(r)
                self.demand_tokens += r.demand_tokens
                self.admitted[r.index] = r
                self.n_admitted += 1
                if r.admitted_s != r.admitted_s:
                    r.admitted_s = now
                n_chunks = -(-L // size)
                while len(chunks) < n_chunks:
                    chunks.append([0.0, 0.0, 0.0, 0.0, 0.0])
                if n_chunks == 1:
                    f = chunks[0]
                    f[0] += 1.0
                    f[1] += L
                    f[2] += float(L) * L
                    f[3] += 1.0
                    f[4] += 1.0 - miss ** L
                    continue
                for k in range(n_chunks):
                    a, b = k * size, min(L, (k + 1) * size)
                    f = chunks[k]
                    f[1] += b - a
                    f[2] += float(b) * b - float(a) * a
                    f[3] += 1.0
                    f[4] += 1.0 - miss ** (b - a)
                chunks[n_chunks - 1][0] += 1.0  # per-request work (the head's token, the state) in the last chunk
            self._record_memory()
            job = PrefillJob([(r, r.epoch) for r in group], slot, len(chunks))
            for f in chunks:
                out += self._dispatch(StageJob(False, self.prefill_stages[0], tuple(f), job.requests, slot, now,
                                               job), -1)
        return out

    def _emit(self, r: SimRequest) -> bool:
        """Deliver one output token of ``r`` now; finish it after its last. Return whether it finished."""
        now = self.kernel.now_s
        r.generated += 1
        self.tokens += 1
        if now >= self.warmup:
            self.tokens_measured += 1
        if r.first_token_s != r.first_token_s:
            r.first_token_s = now
        elif r.arrival_s >= self.warmup:
            self.tbt.append(now - r.last_token_s)
        r.last_token_s = now
        if r.generated >= r.output_tokens:
            r.state = RequestState.DONE
            r.finish_s = now
            if r.arrival_s >= self.warmup:
                self.finished_measured += 1
            r.slot = None
            self._release(r)
            return True
        return False

    def _start_iteration(self, slot: DecodeSlot) -> list[Event]:
        """Grow the members' memory (maybe preempting), then send the slot's next iteration down the pipeline."""
        for r in slot.members:
            r.state = RequestState.DECODE
            r.slot = slot
        for r in list(slot.members):
            if r.slot is slot:  # not preempted while growing an earlier member
                self._grow(r)
        members = slot.members
        if not members:
            slot.bound = False
            return []
        slot.running = True
        ctx = 0
        for r in members:
            ctx += r.context_tokens
        job = StageJob(True, self.decode_stages[0],
                       (1.0, float(len(members)), float(ctx), 1.0 - self.expert_miss ** len(members)),
                       [(r, r.epoch) for r in members], slot, self.kernel.now_s)
        return self._dispatch(job, -1)

    def _kick(self) -> list[Event]:
        """Dynamic batching: give prefilled requests to idle slots."""
        out: list[Event] = []
        if self.static or not self.ready:
            return out
        for slot in self.slots:
            if not self.ready:
                break
            if not slot.running:
                self.batcher.fill(slot, self.ready)
                if slot.members:
                    out += self._start_iteration(slot)
        return out

    # ---- handlers --------------------------------------------------------------------------------------------

    def on_arrival(self, ev: Event) -> list[Event]:
        """A request arrives: pool it, try admission, schedule the next arrival."""
        i = ev.payload
        r = SimRequest(i, ev.time_s, self.prompts[i], self.outputs[i])
        self.requests.append(r)
        self.pool.append(r)
        out = self._admit()
        if i + 1 < len(self.arrivals):
            out.append(Event(float(self.arrivals[i + 1]), EventKind.ARRIVAL, i + 1))
        if self.batch_timeout_s < math.inf:
            out.append(Event(ev.time_s + self.batch_timeout_s, EventKind.BATCH_TIMEOUT, i))
        return out

    def on_batch_timeout(self, ev: Event) -> list[Event]:
        """A request's static-batch timeout ran out: admission may now start a partial batch."""
        return self._admit()

    def on_stage_done(self, ev: Event) -> list[Event]:
        """An intermediate stage finished: free the chiplet, send the job to its next stage."""
        job: StageJob = ev.payload
        c = job.chiplet
        out = self._free(c)
        job.stage += 1
        job.template = (self.decode_stages if job.decode else self.prefill_stages)[job.stage]
        job.ready_s = ev.time_s
        return out + self._dispatch(job, c)

    def on_prefill_done(self, ev: Event) -> list[Event]:
        """A prefill chunk left the last stage; after a job's last chunk: first tokens, members go on to decode."""
        job: StageJob = ev.payload
        out = self._free(job.chiplet)
        job.prefill.chunks_left -= 1
        if job.prefill.chunks_left:
            return out
        for r, epoch in job.requests:
            if r.epoch != epoch or self._emit(r):
                continue
            if not self.static:
                r.state = RequestState.READY
                self.ready.append(r)
        if self.static and job.slot is not None:
            slot = job.slot
            slot.members = [r for r in slot.members if r.state != RequestState.DONE and r.slot is slot]
            out += self._start_iteration(slot)
        out += self._kick()
        out += self._admit()
        return out

    def on_iteration_done(self, ev: Event) -> list[Event]:
        """A decode iteration finished: one token per member; refill and restart the slot."""
        job: StageJob = ev.payload
        out = self._free(job.chiplet)
        slot = job.slot
        slot.running = False
        keep = [r for r, epoch in job.requests if r.epoch == epoch and not self._emit(r)]
        slot.members = keep
        self.batcher.fill(slot, self.ready)
        out += self._start_iteration(slot)
        out += self._kick()
        out += self._admit()
        return out

    # ---- run -------------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Schedule the first arrival and handle events up to the end of the window: ``duration_s``, or with
        ``stop_after_finished`` = n the first instant at or after ``min_duration_s`` with n measured requests
        finished (``duration_s`` the cap)."""
        if len(self.arrivals):
            self.kernel.schedule(Event(float(self.arrivals[0]), EventKind.ARRIVAL, 0))
        target = self.cfg.stop_after_finished
        if target <= 0:
            self.kernel.run(self.duration)
            return
        floor = max(float(self.cfg.min_duration_s), self.warmup)
        self.kernel.run(floor)
        if self.finished_measured >= target:
            self._close(floor, "window")
            return
        self.kernel.run(self.duration, stop=lambda: self.finished_measured >= target)
        if self.finished_measured >= target:
            self._close(self.kernel.now_s, "completed")
        else:
            self.stop = "cap"

    def _close(self, end_s: float, reason: str) -> None:
        """End the window at ``end_s`` (before ``duration_s``): take the running jobs' time past it out of the
        chiplets' busy seconds (``_start`` counted it up to ``duration_s``)."""
        self.end, self.stop = end_s, reason
        for c, job in enumerate(self.running):
            done = self.busy_until[c]
            if job is None or done <= end_s:
                continue
            over = min(done, self.duration) - max(self.run_start[c], end_s)
            if over > 0.0:
                self.chip_busy[c] -= over
                if job.decode != self.decode_role[c]:
                    self.cross_busy[job.decode] -= over

    def result(self, wall_s: float) -> SimResult:
        """Collect the metrics."""
        cfg, topo, d = self.cfg, self.topo, self.end
        reqs = self.requests
        times = np.array([(r.arrival_s, r.admitted_s, r.prefill_start_s, r.first_token_s, r.finish_s) for r in reqs],
                         dtype=float).reshape(len(reqs), 5)
        counts = np.array([(r.prompt_tokens, r.output_tokens, r.generated, r.preemptions) for r in reqs],
                          dtype=np.int64).reshape(len(reqs), 4)
        names = {s: s.name.lower() for s in RequestState}
        df = pd.DataFrame({
            "arrival_s": times[:, 0], "prompt_tokens": counts[:, 0], "output_tokens": counts[:, 1],
            "generated_tokens": counts[:, 2], "state": [names[r.state] for r in reqs],
            "admitted_s": times[:, 1], "prefill_start_s": times[:, 2], "first_token_s": times[:, 3],
            "finish_s": times[:, 4], "preemptions": counts[:, 3],
        })
        done = df["state"] == "done"
        measured = (df["arrival_s"] >= self.warmup).to_numpy()
        ttft = (df["first_token_s"] - df["arrival_s"]).to_numpy()[measured]  # NaN (ignored) until the first token
        e2e = (df["finish_s"] - df["arrival_s"])[done & measured].to_numpy()
        busy = [rs[4] - sum(e - max(s, d) for s, e in zip(rs[0], rs[1], strict=True) if e > d) for rs in self.res]
        links = {(k[1], k[2]): busy[i] / d for i, k in enumerate(topo.res_keys) if k[0] == "link"}
        ports = {k[1]: busy[i] / d for i, k in enumerate(topo.res_keys) if k[0] == "hbm"}
        mem = np.array(self.mem_used, dtype=float).reshape(len(self.mem_t), self.n_groups)
        timeline = tuple(self.kernel.timeline) if self.kernel.timeline is not None else None
        return SimResult(
            duration_s=d, arrived=len(reqs), finished=int(done.sum()), in_system=int((~done).sum()),
            output_tokens=self.tokens, throughput_tps=self.tokens_measured / (d - self.warmup),
            ttft=LatencyStats.of(ttft), tbt=LatencyStats.of(np.array(self.tbt)), e2e=LatencyStats.of(e2e),
            chiplet_utilization={cid: self.chip_busy[i] / d for i, cid in enumerate(topo.ids)},
            link_utilization=links, hbm_port_utilization=ports,
            hbm_occupancy_s=np.array(self.mem_t), hbm_occupancy_bytes={g.name: mem[:, i] for i, g in
                                                                        enumerate(cfg.memory)},
            hbm_capacity_bytes={g.name: float(g.capacity_bytes) for g in cfg.memory},
            preemptions=self.preemptions, n_events=self.kernel.n_events, wall_s=wall_s, requests=df,
            timeline=timeline, warmup_s=self.warmup,
            cross_phase_jobs=dict(zip(CROSS_PHASE_KEYS, self.cross_jobs, strict=True)),
            cross_phase_busy_s=dict(zip(CROSS_PHASE_KEYS, self.cross_busy, strict=True)),
            empty=not bool(done.any()), finished_measured=self.finished_measured, stop=self.stop,
        )


def simulate(config: SimConfig, requests: LengthSample) -> SimResult:
    """Simulate serving ``requests`` on the design of ``config`` for ``config.duration_s`` seconds.

    Parameters
    ----------
    config : SimConfig
        The placed and mapped design, its memory and NoI, and the policies (see the module docstring).
    requests : LengthSample
        Prompt / output lengths (``n`` rows; arrival ``i`` uses row ``i mod n``) and, for trace replay,
        timestamps.

    Returns
    -------
    SimResult
        Identical for identical inputs (``wall_s`` aside).

    Raises
    ------
    SimulationError
        An empty sample, a trace replay without timestamps, or a request whose full context cannot fit a memory
        group even alone.

    References
    ----------
    HYDRA Sec. IV-B (dynamic batching, token budget, paged memory, preemption), Sec. IV-C (elastic task
    scheduling), Eqs. 3-4 (stage time), Sec. VI-A (100 s of workload per configuration), Sec. VI-E (scheduler
    baselines).
    """
    t0 = time.perf_counter()
    if len(requests.prefill_tokens) == 0 or len(requests.prefill_tokens) != len(requests.decode_tokens):
        msg = (f"requests from {requests.source!r}: at least one row with equal numbers of prompt and output "
               f"lengths, got {len(requests.prefill_tokens)} and {len(requests.decode_tokens)}")
        raise SimulationError(msg)
    engine = _Engine(config, requests)
    engine.run()
    return engine.result(time.perf_counter() - t0)
