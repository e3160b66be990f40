"""Serving simulator (issue 3): queueing closed forms, invariants on random small designs, exact event timelines."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from chipdse.core.design_space import PointSpec
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario, load_scenario
from chipdse.core.workloads import LengthSample
from chipdse.evaluators.sim_arrivals import GammaArrivalConfig, PoissonArrivalConfig, TraceArrivalConfig, make_arrival
from chipdse.evaluators.sim_build import build_sim_config
from chipdse.evaluators.sim_kernel import Event, EventKind, Kernel, SimulationError
from chipdse.evaluators.sim_policies import DynamicBatcherConfig, StaticBatcherConfig
from chipdse.evaluators.sim_schedulers import (
    ElasticSchedulerConfig,
    FcfsSchedulerConfig,
    StaticSchedulerConfig,
    WorkStealingSchedulerConfig,
)
from chipdse.evaluators.simulator import (
    ChipletSpec,
    MemoryGroup,
    NoiSpec,
    PhaseTable,
    ServiceTime,
    SimConfig,
    SimResult,
    TaskCost,
    simulate,
    uncontended_stage_times,
)
from chipdse.formulations.mapping import stage_times
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import mapping_problem, placement_problem

A, S, P, IT = EventKind.ARRIVAL, EventKind.STAGE_DONE, EventKind.PREFILL_DONE, EventKind.ITERATION_DONE


# --------------------------------------------------------------------------------------------------------------
# Queueing truth: one-token requests on c identical chiplets are an M/M/c queue
# --------------------------------------------------------------------------------------------------------------


def mm1_wait(lam: float, mu: float) -> float:
    """M/M/1 mean waiting time in queue, Wq = rho / (mu - lam), rho = lam / mu.

    Kleinrock, Queueing Systems Vol. 1: Theory (1975), Sec. 3.2 (M/M/1: T = 1 / (mu - lam), W = T - 1 / mu).
    """
    return (lam / mu) / (mu - lam)


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """M/M/c mean waiting time in queue, Wq = C(c, a) / (c mu - lam) with a = lam / mu and Erlang's C formula
    C(c, a) = [a^c / c! * c / (c - a)] / [sum_{k<c} a^k / k! + a^c / c! * c / (c - a)].

    Kleinrock, Queueing Systems Vol. 1: Theory (1975), Sec. 3.5 (M/M/m, Erlang's C formula).
    """
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    prob_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return prob_wait / (c * mu - lam)


ONE_TOKEN = LengthSample(np.array([1]), np.array([1]), None, "one-token requests")


def queue_config(c: int, lam: float, mu: float, duration_s: float, seed: int,
                 scheduler: object = WorkStealingSchedulerConfig()) -> SimConfig:
    """c identical prefill chiplets serving one task in Exp(mu) time; no memory, no NoI traffic."""
    chips = tuple(ChipletSpec(f"P{i}", "prefill", "x", i) for i in range(c)) + (ChipletSpec("D", "decode", "x", c),)
    pre = PhaseTable(("p",), {("p", f"P{i}"): TaskCost((1.0 / mu, 0.0, 0.0, 0.0)) for i in range(c)}, {"p": "P0"})
    dec = PhaseTable(("d",), {("d", "D"): TaskCost((1e-3, 0.0, 0.0))}, {"d": "D"})
    return SimConfig(chips, pre, dec, (MemoryGroup("m", 1e18),), NoiSpec(1, c + 1, 100.0, 100.0),
                     PoissonArrivalConfig(lam), DynamicBatcherConfig(10**9, math.inf), scheduler,
                     duration_s=duration_s, seed=seed, service_time=ServiceTime.EXPONENTIAL)


def replication_means(c: int, rho: float, n_requests: int, seeds: range, mu: float = 1.0,
                      scheduler: object = WorkStealingSchedulerConfig()) -> np.ndarray:
    """Mean wait (arrival to service start) of each replication, over arrivals in [4%, 99%) of its window.

    Dropping the first 4% (over two relaxation times, 1 / (mu (1 - sqrt(rho))^2) = 380 s for M/M/1 at rho = 0.9)
    lets the empty start fade. Dropping the last 1% (over 20 mean waits) keeps every counted request from being
    cut off by the window's end, which the assertion checks.
    """
    lam = rho * c * mu
    duration = n_requests / lam
    out = []
    for seed in seeds:
        df = simulate(queue_config(c, lam, mu, duration, seed, scheduler), ONE_TOKEN).requests
        sel = (df["arrival_s"] >= 0.04 * duration) & (df["arrival_s"] < 0.99 * duration)
        assert df.loc[sel, "prefill_start_s"].notna().all()  # nobody counted is censored by the window's end
        out.append(float((df["prefill_start_s"] - df["arrival_s"])[sel].mean()))
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize(("c", "rho", "n_requests", "tight"), [
    (1, 0.5, 5000, 0.10), (1, 0.9, 20000, 0.20), (4, 0.5, 10000, 0.10), (4, 0.9, 20000, 0.20)])
def test_one_token_requests_reproduce_mm1_and_mmc_waits(c: int, rho: float, n_requests: int, tight: float) -> None:
    """The closed form lies in the 99% t-interval of 16 independent replication means, whose half-width is at
    most 10% of the wait at rho = 0.5 and 20% at rho = 0.9 (where waits are far more variable).

    Service is first come, first served from one queue: jobs queue on the preferred chiplet and an idle chiplet
    takes the oldest (work stealing), the M/M/c discipline. (HYDRA's "FCFS" scheduler dispatches round-robin at
    arrival, which is c separate queues; see the next test.)
    """
    truth = erlang_c_wait(rho * c, 1.0, c)
    if c == 1:
        assert truth == pytest.approx(mm1_wait(rho, 1.0), rel=1e-12)
    reps = 16
    base = 1000 * c + int(100 * rho)  # independent seeds per case
    means = replication_means(c, rho, n_requests, range(base, base + reps))
    half = stats.t.ppf(0.995, reps - 1) * means.std(ddof=1) / math.sqrt(reps)
    assert means.mean() - half <= truth <= means.mean() + half
    assert half <= tight * truth


def erlang_gm1_wait(lam: float, mu: float, c: int) -> float:
    """Mean wait of one of c queues fed round-robin from a Poisson(lam) stream: a G/M/1 queue with Erlang-c gaps.

    Wq = sigma / (mu (1 - sigma)), sigma the root in (0, 1) of sigma = A*(mu - mu sigma), with the gaps' Laplace
    transform A*(s) = (lam / (lam + s))^c. Kleinrock, Queueing Systems Vol. 1: Theory (1975), Ch. 6 (G/M/1).
    """
    sigma = optimize.brentq(lambda x: x - (lam / (lam + mu * (1 - x))) ** c, 1e-12, 1 - 1e-12)
    return sigma / (mu * (1 - sigma))


def test_round_robin_dispatch_reproduces_the_erlang_gm1_wait() -> None:
    """FCFS round-robin over 4 chiplets at rho = 0.5: the G/M/1 closed form lies in the 99% t-interval."""
    truth = erlang_gm1_wait(2.0, 1.0, 4)
    reps = 16
    means = replication_means(4, 0.5, 5000, range(7000, 7000 + reps), scheduler=FcfsSchedulerConfig())
    half = stats.t.ppf(0.995, reps - 1) * means.std(ddof=1) / math.sqrt(reps)
    assert means.mean() - half <= truth <= means.mean() + half
    assert half <= 0.08 * truth
    assert truth < mm1_wait(0.5, 1.0)  # round-robin smooths each queue's arrivals


# --------------------------------------------------------------------------------------------------------------
# Event timelines on hand-built tiny cases
# --------------------------------------------------------------------------------------------------------------


def pipeline_config(**overrides: object) -> SimConfig:
    """One prefill chiplet P (0.125 s per prompt token) and a two-stage decode pipeline D1 -> D2.

    D1 takes 0.25 s + 0.125 s per request per iteration, D2 0.125 s; no memory limits, no NoI bytes.
    """
    chips = (ChipletSpec("P", "prefill", "x", 0), ChipletSpec("D1", "decode", "x", 1),
             ChipletSpec("D2", "decode", "x", 2))
    pre = PhaseTable(("p",), {("p", "P"): TaskCost((0.0, 0.125, 0.0, 0.0))}, {"p": "P"})
    dec = PhaseTable(("d1", "d2"), {("d1", "D1"): TaskCost((0.25, 0.125, 0.0)), ("d2", "D2"): TaskCost((0.125, 0, 0))},
                     {"d1": "D1", "d2": "D2"})
    base = SimConfig(chips, pre, dec, (MemoryGroup("m", 1e12, 1.0, 0.0),), NoiSpec(1, 3, 100.0, 100.0),
                     TraceArrivalConfig(), DynamicBatcherConfig(2, math.inf), duration_s=2.0, pipeline_batches=1,
                     record_timeline=True)
    return replace(base, **overrides)


def test_two_request_timeline_is_exact() -> None:
    """A (prompt 2, output 3) at 0 and B (prompt 1, output 2) at 1/16 s, worked out by hand.

    0: A arrives, prefill 2 x 0.125 until 0.25. 1/16: B arrives, queues behind A. 0.25: A's first token; B's
    prefill until 0.375; A's first iteration (b = 1) on D1 until 0.625, on D2 until 0.75 (A's 2nd token).
    0.75: B joins, b = 2: D1 until 1.25, D2 until 1.375: A's 3rd and B's 2nd token, both done.
    """
    sample = LengthSample(np.array([2, 1]), np.array([3, 2]), np.array([0.0, 0.0625]), "hand")
    res = simulate(pipeline_config(), sample)
    assert res.timeline == ((0.0, A), (0.0625, A), (0.25, P), (0.375, P), (0.625, S), (0.75, IT), (1.25, S),
                            (1.375, IT))
    df = res.requests
    assert df["first_token_s"].tolist() == [0.25, 0.375]
    assert df["finish_s"].tolist() == [1.375, 1.375]
    assert df["prefill_start_s"].tolist() == [0.0, 0.25]
    assert (res.arrived, res.finished, res.in_system, res.output_tokens) == (2, 2, 0, 5)
    assert res.ttft.mean_s == pytest.approx((0.25 + 0.3125) / 2)
    assert res.e2e.mean_s == pytest.approx((1.375 + 1.3125) / 2)
    assert res.tbt.count == 3 and res.tbt.mean_s == pytest.approx((0.5 + 0.625 + 1.0) / 3)
    busy = {"P": 0.375, "D1": 0.375 + 0.5, "D2": 0.125 + 0.125}
    assert res.chiplet_utilization == pytest.approx({k: v / 2.0 for k, v in busy.items()})
    assert res.n_events == 8


def test_two_micro_batches_pipeline_their_iterations() -> None:
    """With two slots (the default: one per decode stage) A and B decode in separate micro-batches that overlap."""
    sample = LengthSample(np.array([2, 1]), np.array([2, 2]), np.array([0.0, 0.0625]), "hand")
    res = simulate(pipeline_config(pipeline_batches=None), sample)
    # A: D1 0.25..0.625, D2 ..0.75. B (prefilled at 0.375) waits for D1 until 0.625: D1 ..1.0, D2 ..1.125.
    assert res.timeline == ((0.0, A), (0.0625, A), (0.25, P), (0.375, P), (0.625, S), (0.75, IT), (1.0, S),
                            (1.125, IT))


def test_static_batching_waits_for_a_full_batch_and_never_refills() -> None:
    """Static batches of 2: A and B are prefilled as one job (3 tokens: 0.375 s) and decoded together."""
    sample = LengthSample(np.array([2, 1]), np.array([3, 2]), np.array([0.0, 0.0625]), "hand")
    res = simulate(pipeline_config(batcher=StaticBatcherConfig(2)), sample)
    # batch forms at 1/16; prefill until 0.4375; iteration b=2 (0.5 + 0.125) until 1.0625: A 2nd, B done;
    # then A alone (b=1, 0.375 + 0.125) until 1.5625.
    assert res.timeline == ((0.0, A), (0.0625, A), (0.4375, P), (0.9375, S), (1.0625, IT), (1.4375, S),
                            (1.5625, IT))
    assert res.requests["first_token_s"].tolist() == [0.4375, 0.4375]
    assert res.requests["finish_s"].tolist() == [1.5625, 1.0625]


def test_static_batch_timeout_starts_a_partial_batch_at_arrival_plus_timeout() -> None:
    """Static batches of 3 with a 0.5 s timeout; only A (t = 0) and B (t = 1/16) arrive. Worked by hand: A's
    timer runs out at 0 + 0.5, the pair starts then as one prefill job (3 tokens x 0.125 = 0.375 s, first tokens at
    0.875); one iteration at b = 2 (0.25 + 2 x 0.125 on D1, 0.125 on D2) until 1.5: A's 2nd token, B done; A alone
    (0.375 + 0.125) until 2.0. B's timer (0.5625) finds the pool empty. Without the timeout nothing starts."""
    sample = LengthSample(np.array([2, 1]), np.array([3, 2]), np.array([0.0, 0.0625]), "hand")
    T = EventKind.BATCH_TIMEOUT  # noqa: N806
    res = simulate(pipeline_config(batcher=StaticBatcherConfig(3, timeout_s=0.5), duration_s=2.5), sample)
    assert res.timeline == ((0.0, A), (0.0625, A), (0.5, T), (0.5625, T), (0.875, P), (1.375, S), (1.5, IT),
                            (1.875, S), (2.0, IT))
    assert res.requests["admitted_s"].tolist() == [0.5, 0.5]
    assert res.requests["first_token_s"].tolist() == [0.875, 0.875]
    none = simulate(pipeline_config(batcher=StaticBatcherConfig(3), duration_s=2.5), sample)
    assert none.timeline == ((0.0, A), (0.0625, A)) and none.output_tokens == 0
    with pytest.raises(SimulationError, match="timeout_s"):
        StaticBatcherConfig(3, timeout_s=-1.0)


def test_prefill_chunks_pipeline_through_the_stages() -> None:
    """A 4-token prompt in chunks of 2 on two prefill stages of 0.125 s per token: chunk 1 leaves P1 at 0.25,
    both chiplets work until 0.5, chunk 2 leaves P2 at 0.75 = t_stage (1 + (stages - 1) / chunks), the estimator's
    chunk-pipelined prefill latency, instead of 1.0 unchunked. At 0.5 the completion (PREFILL_DONE) is handled
    before the stage hand-over (STAGE_DONE)."""
    chips = (ChipletSpec("P1", "prefill", "x", 0), ChipletSpec("P2", "prefill", "x", 1),
             ChipletSpec("D", "decode", "x", 2))
    per_token = TaskCost((0.0, 0.125, 0.0, 0.0))
    pre = PhaseTable(("p1", "p2"), {("p1", "P1"): per_token, ("p2", "P2"): per_token}, {"p1": "P1", "p2": "P2"})
    cfg = replace(pipeline_config(), chiplets=chips, prefill=pre, decode=PhaseTable(
        ("d",), {("d", "D"): TaskCost((0.25, 0.0, 0.0))}, {"d": "D"}), chunk_tokens=2)
    res = simulate(cfg, LengthSample(np.array([4]), np.array([1]), np.array([0.0]), "hand"))
    assert res.timeline == ((0.0, A), (0.25, S), (0.5, P), (0.5, S), (0.75, P))
    assert res.ttft.mean_s == 0.75
    assert res.chiplet_utilization == {"P1": 0.25, "P2": 0.25, "D": 0.0}


def noi_config(scheduler: object, **overrides: object) -> SimConfig:
    """Grid 2 x 3: P0 at cell 0, one HBM stack at cell 1, P1 at cell 2 (D below P0); 1 GB/s port and links.

    The prefill task reads 1e9 bytes per prompt token from the stack: port 1 s, then one link 1 s.
    """
    chips = (ChipletSpec("P0", "prefill", "x", 0), ChipletSpec("P1", "prefill", "x", 2),
             ChipletSpec("D", "decode", "x", 3))
    cost = TaskCost((0.0, 0.0, 0.0, 0.0), (0.0, 1e9, 0.0, 0.0), "hbm")
    pre = PhaseTable(("p",), {("p", "P0"): cost, ("p", "P1"): cost}, {"p": "P0"})
    dec = PhaseTable(("d",), {("d", "D"): TaskCost((1.0, 0.0, 0.0))}, {"d": "D"})
    base = SimConfig(chips, pre, dec, (MemoryGroup("hbm", 1e12, 0.0, 0.0, (1,)),), NoiSpec(2, 3, 1.0, 1.0),
                     TraceArrivalConfig(), DynamicBatcherConfig(4, math.inf), scheduler, duration_s=10.0,
                     record_timeline=True)
    return replace(base, **overrides)


def test_transfers_sharing_an_hbm_port_wait_for_each_other() -> None:
    """Two one-token requests at t=0 on P0 and P1 (round-robin) share the stack's port: the second waits 1 s.

    A: port [0, 1], link 1->0 [1, 2]: first token at 2. B: port [1, 2], link 1->2 [2, 3]: first token at 3.
    Alone, each takes 2 s = V / B_HBM + hops x V / B_NoI (the HBM read plus HYDRA Eq. 3).
    """
    sample = LengthSample(np.array([1, 1]), np.array([1, 1]), np.array([0.0, 0.0]), "hand")
    cfg = noi_config(FcfsSchedulerConfig())
    res = simulate(cfg, sample)
    assert res.timeline == ((0.0, A), (0.0, A), (2.0, P), (3.0, P))
    assert res.hbm_port_utilization == {1: pytest.approx(0.2)}
    assert res.link_utilization[(1, 0)] == pytest.approx(0.1)
    assert res.link_utilization[(1, 2)] == pytest.approx(0.1)
    assert sum(res.link_utilization.values()) == pytest.approx(0.2)
    assert res.chiplet_utilization == pytest.approx({"P0": 0.2, "P1": 0.3, "D": 0.0})  # P1 is held while waiting
    assert uncontended_stage_times(cfg, "prefill", (1, 1, 1, 1)) == {"P0": pytest.approx(2.0)}
    # with the static scheduler both run on P0, one after the other: B's read [2, 3] + [3, 4]
    res = simulate(noi_config(StaticSchedulerConfig()), sample)
    assert res.timeline == ((0.0, A), (0.0, A), (2.0, P), (4.0, P))


@pytest.mark.parametrize(("scheduler", "second_done_s"), [
    (StaticSchedulerConfig(), 4.0),  # B waits for the preferred P0
    (FcfsSchedulerConfig(), 3.0),  # round-robin: B on P1
    (WorkStealingSchedulerConfig(), 3.0),  # B queued on P0, idle P1 takes it
    # P0 finishes B at 2 + 2 = 4 s, P1 at 0 + 2 = 2 s (HBM read 1 s + one hop 1 s each): a gain of 2 s, one
    # service time on P0, is within threshold 1 (keep P0) and above threshold 0 (the default: P1)
    (ElasticSchedulerConfig(imbalance_threshold=1), 4.0),
    (ElasticSchedulerConfig(), 3.0),
])
def test_schedulers_place_the_second_request(scheduler: object, second_done_s: float) -> None:
    """Two requests at t=0 whose prefill prefers P0 (2 s each alone); where B runs decides when it is done."""
    sample = LengthSample(np.array([1, 1]), np.array([1, 1]), np.array([0.0, 0.0]), "hand")
    res = simulate(noi_config(scheduler), sample)
    assert res.requests["first_token_s"].tolist() == [2.0, second_done_s]


def test_reservations_backfill_idle_gaps() -> None:
    """A hop takes the earliest idle gap long enough for it, so a transfer issued later can use a link before a
    transfer that reserved it for later; a hop that does not fit the gap waits for the end of the reservation."""
    from chipdse.evaluators.simulator import _Engine

    eng = _Engine(noi_config(FcfsSchedulerConfig()), LengthSample(np.array([1]), np.array([1]), np.array([0.0]), "t"))
    port, link = (eng.res[eng.topo.res_id[key]] for key in (("hbm", 1, 1), ("link", 1, 0)))
    assert eng._reserve([(port, link)], 0.0, 1e9) == 2.0  # port [0, 1], then the link [1, 2]
    assert eng._reserve([(link,)], 0.0, 0.5e9) == 0.5  # fits before [1, 2]
    assert eng._reserve([(link,)], 0.0, 1e9) == 3.0  # [0.5, 1] is too short: after [1, 2]
    assert (link[0], link[1]) == ([0.0, 1.0], [0.5, 3.0])  # touching intervals merged
    assert link[4] == pytest.approx(2.5)


def test_memory_pressure_preempts_the_request_with_fewest_tokens_and_recomputes_it() -> None:
    """KV of 1 byte per token, 4 bytes of capacity, blocks of 1 token. A (prompt 2) and B (prompt 1) fit, and so
    does A's first growth (3 + 1 bytes). When both join the iteration at 0.75, A needs a 4th block next to B's
    one: B, with fewer generated tokens (1 against 2), is preempted. It is recomputed (prompt + 1 generated
    token) once A finishes and still delivers all its tokens."""
    sample = LengthSample(np.array([2, 1]), np.array([3, 3]), np.array([0.0, 0.0625]), "hand")
    cfg = pipeline_config(memory=(MemoryGroup("m", 4.0, 1.0, 0.0),), block_tokens=1, duration_s=20.0)
    res = simulate(cfg, sample)
    df = res.requests
    assert res.preemptions == 1
    assert df["preemptions"].tolist() == [0, 1]
    assert df["state"].tolist() == ["done", "done"]
    assert df["generated_tokens"].tolist() == [3, 3]
    assert res.hbm_occupancy_bytes["m"].max() <= 4.0
    assert (df["first_token_s"] <= df["finish_s"]).all()


# --------------------------------------------------------------------------------------------------------------
# Invariants on random small designs (Hypothesis)
# --------------------------------------------------------------------------------------------------------------


@st.composite
def small_cases(draw: st.DrawFn) -> tuple[SimConfig, LengthSample]:
    """A random small design (1-3 prefill and 1-3 decode chiplets, 1-3 tasks each, 1-2 HBM groups) and sample."""
    n_pre, n_dec = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n_groups = draw(st.integers(1, 2))
    cells = draw(st.permutations(range(12)))
    chips = tuple(ChipletSpec(f"P{i}", "prefill", "x", cells[i]) for i in range(n_pre)) + tuple(
        ChipletSpec(f"D{i}", "decode", "x", cells[n_pre + i]) for i in range(n_dec))
    stacks = [cells[n_pre + n_dec + g] for g in range(n_groups)]
    fast = st.floats(1e-4, 2e-3)

    def table(phase: str, ids: list[str], n_feat: int) -> PhaseTable:
        tasks = tuple(f"{phase}{k}" for k in range(draw(st.integers(1, 3))))
        cost, mapping = {}, {}
        for k in tasks:
            allowed = [c for c in ids if draw(st.booleans())] or [ids[0]]
            mapping[k] = draw(st.sampled_from(allowed))
            for c in allowed:
                comp = tuple(draw(fast) if draw(st.booleans()) else 0.0 for _ in range(n_feat))
                by = tuple(draw(st.floats(0, 1e5)) for _ in range(n_feat)) if draw(st.booleans()) else ()
                cost[(k, c)] = TaskCost(comp, by, f"g{draw(st.integers(0, n_groups - 1))}")
        return PhaseTable(tasks, cost, mapping)

    pre = table("p", [c.id for c in chips[:n_pre]], 4)
    dec = table("d", [c.id for c in chips[n_pre:]], 3)
    n_rows = draw(st.integers(1, 12))
    prompts = np.array(draw(st.lists(st.integers(1, 40), min_size=n_rows, max_size=n_rows)))
    outputs = np.array(draw(st.lists(st.integers(1, 40), min_size=n_rows, max_size=n_rows)))
    block = draw(st.integers(1, 8))
    memory = []
    for g in range(n_groups):
        kv, state = draw(st.floats(0.0, 100.0)), draw(st.floats(0.0, 500.0))
        footprint = state + math.ceil((prompts + outputs - 1).max() / block) * block * kv
        capacity = footprint * draw(st.floats(1.0, 3.0)) * (1 + 1e-9) + 1e-9
        memory.append(MemoryGroup(f"g{g}", capacity, kv, state, (stacks[g],)))
    rate = draw(st.floats(2.0, 60.0))
    arrival = draw(st.sampled_from([PoissonArrivalConfig(rate), GammaArrivalConfig(rate, draw(st.floats(0.3, 3.0)))]))
    max_batch = draw(st.integers(1, 4))
    batcher = draw(st.sampled_from([StaticBatcherConfig(max_batch), DynamicBatcherConfig(max_batch)]))
    scheduler = draw(st.sampled_from([StaticSchedulerConfig(), FcfsSchedulerConfig(), WorkStealingSchedulerConfig(),
                                      ElasticSchedulerConfig(draw(st.integers(0, 2)))]))
    cfg = SimConfig(chips, pre, dec, tuple(memory), NoiSpec(3, 4, draw(st.floats(1.0, 100.0)), 50.0, 1e-6),
                    arrival, batcher, scheduler, duration_s=draw(st.floats(0.2, 4.0)), seed=draw(st.integers(0, 99)),
                    block_tokens=block, chunk_tokens=draw(st.integers(1, 64)),
                    activation_bytes_per_token=draw(st.floats(0.0, 1e3)),
                    pipeline_batches=draw(st.none() | st.integers(1, 3)),
                    service_time=draw(st.sampled_from(list(ServiceTime))))
    return cfg, LengthSample(prompts, outputs, None, "hypothesis")


def assert_same(a: SimResult, b: SimResult) -> None:
    """Every field but the wall time is identical."""
    for name in SimResult.__dataclass_fields__:
        if name == "wall_s":
            continue
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, pd.DataFrame):
            pd.testing.assert_frame_equal(x, y)
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        elif isinstance(x, dict) and x and isinstance(next(iter(x.values())), np.ndarray):
            assert x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
        else:
            assert x == y, name


STATES = {"waiting", "prefill", "ready", "decode", "done"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases())
def test_invariants_on_random_small_designs(case: tuple[SimConfig, LengthSample]) -> None:
    """Conservation, memory bound, no loss by preemption, TTFT <= E2E, determinism."""
    cfg, sample = case
    res = simulate(cfg, sample)
    df = res.requests
    # every arrived request is finished or still in the system, in exactly one state
    assert len(df) == res.arrived == res.finished + res.in_system
    assert set(df["state"]) <= STATES
    done = df["state"] == "done"
    assert (df.loc[done, "generated_tokens"] == df.loc[done, "output_tokens"]).all()
    assert (df.loc[~done, "generated_tokens"] < df.loc[~done, "output_tokens"]).all()
    assert res.output_tokens == df["generated_tokens"].sum()
    # no request is lost by preemption: preempted ones are finished or back in the system, counted once
    assert res.preemptions == df["preemptions"].sum()
    assert set(df.loc[df["preemptions"] > 0, "state"]) <= STATES
    # memory never exceeds capacity
    for name, used in res.hbm_occupancy_bytes.items():
        assert used.max() <= res.hbm_capacity_bytes[name] * (1 + 1e-9) + 1e-9
        assert used.min() >= -1e-6 * max(1.0, res.hbm_capacity_bytes[name])
    # time stamps are ordered; TTFT <= E2E for every finished request
    assert (df["admitted_s"].dropna() >= df.loc[df["admitted_s"].notna(), "arrival_s"]).all()
    first = df.loc[done]
    assert (first["arrival_s"] <= first["prefill_start_s"]).all()
    assert (first["prefill_start_s"] <= first["first_token_s"]).all()
    assert (first["first_token_s"] - first["arrival_s"] <= first["finish_s"] - first["arrival_s"]).all()
    assert all(0.0 <= u <= 1.0 + 1e-9 for u in res.chiplet_utilization.values())
    assert all(0.0 <= u <= 1.0 + 1e-9 for u in res.link_utilization.values())
    # same seed => identical results
    assert_same(res, simulate(cfg, sample))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases())
def test_every_request_eventually_finishes(case: tuple[SimConfig, LengthSample]) -> None:
    """Liveness: with arrivals replayed in the first 0.2 s and a long window, dynamic batching finishes every
    request (preempted ones included); static batching leaves at most a partial batch waiting in the pool."""
    cfg, sample = case
    n = len(sample.prefill_tokens)
    replayed = LengthSample(sample.prefill_tokens, sample.decode_tokens, np.linspace(0.0, 0.2, n), "replay")
    res = simulate(replace(cfg, arrival=TraceArrivalConfig(), duration_s=1e4), replayed)
    df = res.requests
    assert res.arrived == n
    if isinstance(cfg.batcher, DynamicBatcherConfig):
        assert res.finished == n
    else:
        assert set(df["state"]) <= {"done", "waiting"}
        assert (df["state"] == "waiting").sum() < cfg.batcher.max_batch


# --------------------------------------------------------------------------------------------------------------
# Kernel, policies, validation
# --------------------------------------------------------------------------------------------------------------


def test_kernel_orders_ties_by_kind_then_insertion() -> None:
    """Events at one time run in EventKind order, equal kinds first in first out; handlers' events are scheduled."""
    seen = []

    def handle(ev: Event) -> list[Event]:
        seen.append((ev.time_s, ev.kind, ev.payload))
        return [Event(2.0, EventKind.STAGE_DONE, "child")] if ev.payload == "a1" else []

    k = Kernel(dict.fromkeys(EventKind, handle), record=True)
    for ev in (Event(1.0, A, "a1"), Event(1.0, IT, "i"), Event(1.0, A, "a2"), Event(0.5, P, "p")):
        k.schedule(ev)
    assert k.run(1.5) == 4
    assert [x[2] for x in seen] == ["p", "i", "a1", "a2"]
    assert k.peek_s() == 2.0 and k.run() == 1 and k.now_s == 2.0
    with pytest.raises(SimulationError, match="before the current time"):
        k.schedule(Event(1.0, A))
    with pytest.raises(SimulationError, match="until_s=1.0"):
        k.run(1.0)


def test_arrival_processes_have_their_rate_and_variability() -> None:
    rng = np.random.default_rng(0)
    sample = LengthSample(np.array([1, 1, 1]), np.array([1, 1, 1]), np.array([5.0, 7.0, 9.0]), "t")
    t = make_arrival(PoissonArrivalConfig(50.0)).arrival_times_s(200.0, rng, sample)
    assert len(t) / 200.0 == pytest.approx(50.0, rel=0.02) and np.all(np.diff(t) > 0) and t[-1] < 200.0
    gaps = np.diff(make_arrival(GammaArrivalConfig(50.0, 2.0)).arrival_times_s(400.0, rng, sample))
    assert gaps.mean() == pytest.approx(1 / 50.0, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.05)
    np.testing.assert_allclose(make_arrival(TraceArrivalConfig()).arrival_times_s(10.0, rng, sample), [0, 2, 4])
    np.testing.assert_allclose(make_arrival(TraceArrivalConfig(2.0)).arrival_times_s(10.0, rng, sample), [0, 0.5, 1])
    with pytest.raises(SimulationError, match="timestamps"):
        make_arrival(TraceArrivalConfig()).arrival_times_s(10.0, rng, ONE_TOKEN)


def test_bad_configs_name_the_field() -> None:
    cfg = pipeline_config()
    with pytest.raises(SimulationError, match=r"decode\.mapping\['d1'\]"):
        replace(cfg, decode=replace(cfg.decode, mapping={"d1": "P", "d2": "D2"}))
    with pytest.raises(SimulationError, match=r"prefill\.cost\[\('p', 'P'\)\]\.compute_s"):
        replace(cfg, prefill=replace(cfg.prefill, cost={("p", "P"): TaskCost((1.0,))}))
    with pytest.raises(SimulationError, match="chiplets.*cell"):
        replace(cfg, chiplets=(*cfg.chiplets[:2], ChipletSpec("D2", "decode", "x", 1)))
    with pytest.raises(SimulationError, match="duration_s"):
        replace(cfg, duration_s=0.0)
    with pytest.raises(SimulationError, match="max_batch"):
        DynamicBatcherConfig(0)
    tight = replace(cfg, memory=(MemoryGroup("m", 3.0, 1.0, 0.0),), block_tokens=1)
    with pytest.raises(SimulationError, match="request 0 .* needs 4 bytes in memory group 'm'"):
        simulate(tight, LengthSample(np.array([2]), np.array([3]), np.array([0.0]), "hand"))


# --------------------------------------------------------------------------------------------------------------
# The default scenario's design
# --------------------------------------------------------------------------------------------------------------


def placed_and_mapped(sc: LoadedScenario, point: PointSpec) -> tuple:
    """(scenario, point, greedy placement, both mapping problems, their LPT mappings)."""
    placement = solve_placement(placement_problem(sc, point, 1.0), "hydra-greedy").decision
    problems = {ph: mapping_problem(sc, point, placement, ph, point.batch) for ph in ("prefill", "decode")}
    maps = {ph: solve_mapping(p, "lpt-greedy").decision for ph, p in problems.items()}
    return sc, point, placement, problems, maps


@pytest.fixture(scope="module")
def default_design() -> tuple:
    point = PointSpec({"Ap": 1, "Ad": 1, "Mp": 4, "Md": 13}, {"attention": 2, "mamba": 3}, 640.0, 2)
    return placed_and_mapped(load_scenario(), point)


def test_built_config_reproduces_the_mapping_stage_times(default_design: tuple) -> None:
    """Without contention each stage takes the mapping's t_c (HYDRA Eq. 4), up to the hop latencies."""

    sc, point, placement, problems, maps = default_design
    cfg = build_sim_config(sc, point, placement, maps["prefill"], maps["decode"])
    ln = sc.lengths
    feats = {"prefill": (1.0, ln.mean_prefill, ln.second_moment_prefill, math.ceil(ln.mean_prefill / 512)),
             "decode": (1.0, 2.0, 2.0 * (ln.mean_prefill + ln.mean_decode / 2.0))}
    for phase in ("prefill", "decode"):
        expected = {c: t for c, t in stage_times(problems[phase], maps[phase]).items() if t > 0}
        got = uncontended_stage_times(cfg, phase, feats[phase])
        assert got == pytest.approx(expected, rel=1e-3)
    assert {g.name for g in cfg.memory} == {"attention", "mamba"}


def test_default_design_serves_a_short_run(default_design: tuple) -> None:
    """Two seconds of the arXiv workload at 1 req/s with every scheduler: tokens flow, nothing is lost."""

    sc, point, placement, _, maps = default_design
    for scheduler in (StaticSchedulerConfig(), FcfsSchedulerConfig(), WorkStealingSchedulerConfig(),
                      ElasticSchedulerConfig()):
        cfg = build_sim_config(sc, point, placement, maps["prefill"], maps["decode"], scheduler=scheduler,
                               batcher=DynamicBatcherConfig(point.batch), duration_s=3.0, arrival_rate_rps=2.0)
        res = simulate(cfg, sc.lengths)
        assert res.arrived > 0 and res.output_tokens > 0
        assert res.finished + res.in_system == res.arrived
        assert max(res.link_utilization.values()) > 0


@pytest.fixture(scope="module")
def moe_design(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """Qwen3-30B-A3B (128 routed experts, top-8) on the default library and package: 4 attention stacks."""
    inst = instances_dir()
    base = yaml.safe_load((inst / "scenarios" / "default.yaml").read_text())
    for key in ("library", "package", "workload"):
        base[key] = str((inst / "scenarios" / base[key]).resolve())
    base["model"] = "qwen3-30b-a3b"
    path = tmp_path_factory.mktemp("moe") / "qwen.yaml"
    path.write_text(yaml.safe_dump(base))
    point = PointSpec({"Ap": 2, "Ad": 4, "Mp": 1, "Md": 1}, {"attention": 4, "mamba": 0}, 512.0, 8)
    return placed_and_mapped(load_scenario(path), point)


def test_moe_stages_reproduce_the_mapping_stage_times(moe_design: tuple) -> None:
    """A MoE model's stages take the mapping's t_c, with the routed experts a batch of b touches
    (1 - (1 - k/E)^b of them per decode iteration, per chunk in prefill)."""

    sc, point, placement, problems, maps = moe_design
    cfg = build_sim_config(sc, point, placement, maps["prefill"], maps["decode"])
    assert cfg.expert_touch_p == 8 / 128  # Qwen3-30B-A3B: top-8 of 128 routed experts
    ln, b, miss = sc.lengths, point.batch, 1.0 - 8 / 128
    chunks = math.ceil(ln.mean_prefill / 512)
    feats = {"prefill": (1.0, ln.mean_prefill, ln.second_moment_prefill, chunks,
                         chunks * (1.0 - miss ** (ln.mean_prefill / chunks))),
             "decode": (1.0, b, b * (ln.mean_prefill + ln.mean_decode / 2.0), 1.0 - miss ** b)}
    for phase in ("prefill", "decode"):
        expected = {c: t for c, t in stage_times(problems[phase], maps[phase]).items() if t > 0}
        assert uncontended_stage_times(cfg, phase, feats[phase]) == pytest.approx(expected, rel=1e-3)


def test_moe_decode_iteration_reads_the_touched_experts(moe_design: tuple) -> None:
    """One request's decode iteration of Qwen3-30B-A3B reads 6,083,735,552 weight bytes (issue 15: active
    weights in bf16, the embedding a row lookup), within 2%; at batch b the routed experts read are
    E (1 - (1 - k/E)^b) of E, the closed form of uniform top-k routing."""

    sc, point, placement, _, maps = moe_design
    cfg = build_sim_config(sc, point, placement, maps["prefill"], maps["decode"])
    mapping = cfg.decode.mapping

    def weight_bytes(b: int) -> float:
        f = (1.0, 0.0, 0.0, 1.0 - (1.0 - 8 / 128) ** b)  # weights only: no request terms, no context
        return sum(sum(x * y for x, y in zip(cfg.decode.cost[(k, mapping[k])].hbm_bytes, f, strict=True))
                   for k in cfg.decode.tasks)

    assert weight_bytes(1) == pytest.approx(6_083_735_552, rel=0.02)
    blocks = [blk for blk in sc.model.blocks if blk.routed_experts]
    one_expert = sum(blk.expert_params for blk in blocks) * sc.model.dtype_bytes
    for b in (1, 4, 64):
        touched = 128 * (1.0 - (1.0 - 8 / 128) ** b)
        assert weight_bytes(b) - weight_bytes(1) == pytest.approx(one_expert * (touched - 8), rel=1e-9)


# --------------------------------------------------------------------------------------------------------------
# Stop rule: a run measured until n requests that arrived after the warm-up have finished (issue 30)
# --------------------------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases(), st.floats(0.0, 0.5), st.floats(0.0, 1.0), st.integers(1, 40))
def test_stop_after_finished_ends_at_the_nth_measured_finish_of_the_fixed_run(
        case: tuple[SimConfig, LengthSample], warm_frac: float, floor_frac: float, n: int) -> None:
    """Brute force: the fixed-window run to the cap is the truth. Stopping changes no history, so the stopped run
    ends at max(min_duration_s, the n-th measured finish of the fixed run), finishes exactly the fixed run's
    requests up to then, and is the fixed run itself when fewer than n measured requests finish by the cap."""
    cfg, sample = case
    cap = 4.0 * cfg.duration_s
    warm = warm_frac * cap
    floor = warm + floor_frac * (cap - warm)
    full = simulate(replace(cfg, duration_s=cap, warmup_s=warm), sample)
    df = full.requests
    measured = (df["state"] == "done") & (df["arrival_s"] >= warm)
    assert full.finished_measured == int(measured.sum()) and full.stop == "window"
    finishes = np.sort(df.loc[measured, "finish_s"].to_numpy())
    res = simulate(replace(cfg, duration_s=cap, warmup_s=warm, stop_after_finished=n, min_duration_s=floor), sample)
    if n > len(finishes):
        assert res.stop == "cap" and res.duration_s == cap
        pd.testing.assert_frame_equal(res.requests, df)
        assert res.throughput_tps == full.throughput_tps
        return
    end = max(floor, float(finishes[n - 1]))
    assert res.duration_s == end
    assert res.stop == ("completed" if finishes[n - 1] > floor else "window")
    assert res.finished_measured >= n
    got = res.requests  # the same arrivals in the same order: a prefix of the fixed run's rows
    assert len(got) <= len(df) and (got["arrival_s"].to_numpy() == df["arrival_s"].to_numpy()[:len(got)]).all()
    want = df.iloc[:len(got)]
    done_got, done_want = got["state"] == "done", want["state"] == "done"
    assert (got.loc[done_got, "finish_s"].to_numpy() == want.loc[done_got.to_numpy(), "finish_s"].to_numpy()).all()
    assert (got.loc[done_got, "finish_s"] <= end).all()
    assert not (done_want.to_numpy() & (want["finish_s"].to_numpy() < end) & ~done_got.to_numpy()).any()
    assert ((df["state"] == "done") & (df["finish_s"] < end)).sum() <= done_got.sum()
    assert all(0.0 <= u <= 1.0 + 1e-9 for u in res.chiplet_utilization.values())
    assert all(0.0 <= u <= 1.0 + 1e-9 for u in res.link_utilization.values())


def test_stop_after_finished_on_the_hand_timeline() -> None:
    """The two-request timeline above, stopped after one finished request: both finish at 1.375 s in the same
    decode iteration, so the run ends there with both done; chiplet busy time is the fixed run's (nothing runs
    past 1.375 s) over a 1.375 s window."""
    sample = LengthSample(np.array([2, 1]), np.array([3, 2]), np.array([0.0, 0.0625]), "hand")
    res = simulate(pipeline_config(stop_after_finished=1), sample)
    assert (res.stop, res.duration_s, res.finished, res.finished_measured) == ("completed", 1.375, 2, 2)
    busy = {"P": 0.375, "D1": 0.375 + 0.5, "D2": 0.125 + 0.125}
    assert res.chiplet_utilization == pytest.approx({k: v / 1.375 for k, v in busy.items()})
    assert res.throughput_tps == pytest.approx(5 / 1.375)
    with pytest.raises(SimulationError, match="min_duration_s"):
        pipeline_config(stop_after_finished=1, min_duration_s=3.0)
    with pytest.raises(SimulationError, match="stop_after_finished"):
        pipeline_config(stop_after_finished=-1)
