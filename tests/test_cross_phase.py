"""Cross-phase task scheduling (HYDRA Sec. IV-C, Eqs. 6-7's c_p,D / c_d,P terms): prefill jobs on decode chiplets
and the reverse, by hand-computed timelines and by queueing capacity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chipdse.core.workloads import LengthSample
from chipdse.evaluators import sim_schedulers as sched
from chipdse.evaluators.sim_arrivals import PoissonArrivalConfig, TraceArrivalConfig
from chipdse.evaluators.sim_policies import DynamicBatcherConfig
from chipdse.evaluators.simulator import ChipletSpec, MemoryGroup, NoiSpec, PhaseTable, SimConfig, TaskCost, simulate

PREFILL_S = {"P": 1.0, "D0": 2.0, "D1": 2.0}
"""Prefill seconds per prompt token: the decode chiplets have half the prefill chiplet's compute."""
DECODE_S = 1e-3
"""One decode iteration, s, on any chiplet."""


def hand_config(scheduler: object, n_decode: int = 1, **kw: object) -> SimConfig:
    """One prefill chiplet P and ``n_decode`` decode chiplets in a row; no memory limits, no NoI bytes."""
    ids = ["P"] + [f"D{i}" for i in range(n_decode)]
    chips = tuple(ChipletSpec(c, "prefill" if c == "P" else "decode", "x", i) for i, c in enumerate(ids))
    pre = PhaseTable(("p",), {("p", c): TaskCost((0.0, PREFILL_S[c], 0.0, 0.0)) for c in ids}, {"p": "P"})
    dec = PhaseTable(("d",), {("d", c): TaskCost((DECODE_S, 0.0, 0.0)) for c in ids}, {"d": "D0"})
    args = {"arrival": TraceArrivalConfig(), "batcher": DynamicBatcherConfig(8, math.inf), "duration_s": 20.0}
    args.update(kw)
    return SimConfig(chips, pre, dec, (MemoryGroup("m", 1e18),), NoiSpec(1, len(ids), 100.0, 100.0),
                     scheduler=scheduler, **args)


FOUR_AT_ONCE = LengthSample(np.ones(4, dtype=int), np.ones(4, dtype=int), np.zeros(4), "hand")
"""Four one-token prompts at t = 0, one output token each (the prefill's)."""


@pytest.mark.parametrize(("threshold", "first_tokens", "moved"), [
    # threshold 0: A on idle P (done 1). B: P 1 + 1 = 2 vs D0 0 + 2 = 2, a tie keeps P (done 2). C: P 2 + 1 = 3
    # vs D0 2: D0, at its own rate of 2 s per token (done 2). D: P 2 + 1 = 3 vs D0 (2 + 2) / 1 = 4: P (done 3)
    (0, [1.0, 2.0, 2.0, 3.0], 1),
    # threshold 1 (one service time on P, 1 s): B as above; C gains 1 s <= 1 s: P (done 3); D: P 3 + 1 = 4 vs
    # D0 2, a gain of 2 s > 1 s: D0 (done 2)
    (1, [1.0, 2.0, 3.0, 2.0], 1),
    # threshold 3: no gain above 3 s, everything waits for P
    (3, [1.0, 2.0, 3.0, 4.0], 0),
])
def test_saturated_prefill_chiplet_hands_a_prefill_job_to_the_decode_chiplet(threshold: int, first_tokens: list[float],
                                                                             moved: int) -> None:
    """Elastic scheduler; four one-token prompts A..D at t = 0 prefer P (1 s each); D0 has never run a decode
    job, so it lends all its time (a lent chiplet's estimate is divided by 1 - its own-phase busy fraction)."""
    res = simulate(hand_config(sched.ElasticSchedulerConfig(threshold)), FOUR_AT_ONCE)
    assert res.requests["first_token_s"].tolist() == first_tokens
    assert res.cross_phase_jobs == {"prefill_on_decode": moved, "decode_on_prefill": 0}
    assert res.cross_phase_busy_s["prefill_on_decode"] == pytest.approx(2.0 * moved)
    assert res.chiplet_utilization["D0"] == pytest.approx(2.0 * moved / 20.0)


def test_a_busy_decode_chiplet_lends_only_its_spare_time() -> None:
    """D0 decodes a long request first (its own role), so prefill jobs see it through 1 / (1 - busy fraction).

    One request R (prompt 1, 2001 output tokens) at t = 0: P prefills it [0, 1]; D0 then decodes 2000 iterations
    of 1 ms back to back, [1, 3] (nothing else wants D0). At t = 2 s, four one-token prompts A..D arrive. D0 has
    spent 1 s of the 2 s on decode: share 1/2. A on idle P (done 3). B: P 1 + 1 = 2 vs D0 (1 ms remainder + 2 s)
    / 0.5 > 4 s: P (done 4); C: P 3 s vs D0 > 4 s: P (done 5); D: P 4 s vs D0 > 4 s: P (done 6). Without the
    factor D would go to D0 (1 ms + 2 s < 4 s), as in the idle case. (The delay D0's decode jobs would suffer,
    ``lend_cost_s``, only adds to D0's estimate.)
    """
    sample = LengthSample(np.array([1, 1, 1, 1, 1]), np.array([2001, 1, 1, 1, 1]),
                          np.array([0.0, 2.0, 2.0, 2.0, 2.0]), "hand")
    res = simulate(hand_config(sched.ElasticSchedulerConfig()), sample)
    assert res.requests["first_token_s"].tolist()[1:] == [3.0, 4.0, 5.0, 6.0]
    assert res.cross_phase_jobs["prefill_on_decode"] == 0


@pytest.mark.parametrize("scheduler", [
    sched.StaticSchedulerConfig(), sched.FcfsSchedulerConfig(), sched.WorkStealingSchedulerConfig(),
    sched.ElasticSchedulerConfig(cross_phase=False)])
def test_without_cross_phase_the_prefill_chiplet_serves_every_prompt(scheduler: object) -> None:
    """Static never crosses; FCFS and work stealing do not by default; elastic can be told not to. P then serves
    A..D one after another: first tokens at 1, 2, 3, 4 s."""
    res = simulate(hand_config(scheduler), FOUR_AT_ONCE)
    assert res.requests["first_token_s"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert res.cross_phase_jobs == {"prefill_on_decode": 0, "decode_on_prefill": 0}
    assert res.chiplet_utilization["D0"] == 0.0


def test_static_scheduler_cannot_be_made_cross_phase() -> None:
    assert sched.StaticSchedulerConfig().cross_phase is False
    with pytest.raises(TypeError):
        sched.StaticSchedulerConfig(cross_phase=True)  # type: ignore[call-arg]


@pytest.mark.parametrize(("scheduler", "first_tokens"), [
    (sched.FcfsSchedulerConfig(cross_phase=True), [1.0, 2.0, 2.0, 4.0]),  # P, D0, P, D0 in turn: D0 at 2 and 2 + 2
    # idle D0 takes B at 0; P takes C at 1. At 2 both free; B's completion was scheduled first (the kernel's
    # tie order), so D0 frees first and steals D from P's queue: 2 + 2 s
    (sched.WorkStealingSchedulerConfig(cross_phase=True), [1.0, 2.0, 2.0, 4.0]),
])
def test_fcfs_and_work_stealing_cross_phases_as_an_option(scheduler: object, first_tokens: list[float]) -> None:
    """With ``cross_phase`` the baselines use D0 too, each by its own rule."""
    res = simulate(hand_config(scheduler), FOUR_AT_ONCE)
    assert res.requests["first_token_s"].tolist() == first_tokens
    assert res.cross_phase_jobs["prefill_on_decode"] > 0


def test_cross_phase_elastic_serves_an_overloaded_prefill_phase() -> None:
    """Prefill-heavy load at 1.6 req/s (one-token prompts, two output tokens) on P (1 req/s) and two decode
    chiplets (0.5 req/s of prefill each): P alone saturates at 1 req/s = 2 tokens/s; P plus both decode chiplets
    serve 2 req/s, so what arrives in the measured window comes out (2 tokens per arrival; the arrivals counted from
    the run's request table, about 1.6 x 2 = 3.2 tokens/s)."""
    sample = LengthSample(np.array([1]), np.array([2]), None, "hand")
    kw = {"arrival": PoissonArrivalConfig(1.6), "duration_s": 400.0, "warmup_s": 50.0, "n_decode": 2, "seed": 5}
    rates = {}
    for cross in (False, True):
        res = simulate(hand_config(sched.ElasticSchedulerConfig(cross_phase=cross), **kw), sample)
        rates[cross] = res.throughput_tps
        assert (res.cross_phase_jobs["prefill_on_decode"] > 0) == cross
    offered = 2.0 * int((res.requests["arrival_s"] >= 50.0).sum()) / 350.0
    assert offered == pytest.approx(3.2, rel=0.1)
    assert rates[False] == pytest.approx(2.0, rel=0.02)
    assert rates[True] == pytest.approx(offered, rel=0.03)
