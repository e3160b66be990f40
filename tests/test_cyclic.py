"""The decode round of the estimator against outside truths: the max-plus recursion of a closed cyclic line of
FIFO servers with deterministic service, exact enumeration and Monte Carlo of static batches, Clark's formula
against sampling, and the event simulator on hand-built pipelines (no ports or links, so the stage times are
exactly the costs given)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from chipdse.core.workloads import LengthSample
from chipdse.evaluators.markov import (
    active_count_pmf,
    clark_expected_max,
    deterministic_cycle_s,
    max_and_sum_moments,
)
from chipdse.evaluators.sim_arrivals import TraceArrivalConfig
from chipdse.evaluators.sim_policies import DynamicBatcherConfig, StaticBatcherConfig
from chipdse.evaluators.simulator import (
    ChipletSpec,
    MemoryGroup,
    NoiSpec,
    PhaseTable,
    SimConfig,
    TaskCost,
    simulate,
)


def max_plus_round_s(service: np.ndarray, rounds: int = 60) -> float:
    """Round time of a closed cyclic line by the departure recursion, service[i, k] = customer i at station k.

    Customers keep their order (FIFO, no overtaking); x[i, k] = max(x[i, k - 1], x[i - 1, k]) + s[i, k], where
    customer i's arrival at station 0 is its own departure from the last station one round earlier and the
    station's previous customer is customer N - 1 of the previous round for i = 0.
    """
    n, k = service.shape
    prev_last = np.zeros(n)  # departure of each customer from the last station in the previous round
    prev_station = np.zeros(k)  # departure of customer N - 1 from each station in the previous round
    ends = []
    for _ in range(rounds):
        x = np.zeros((n, k))
        for i in range(n):
            for j in range(k):
                ready = x[i, j - 1] if j > 0 else prev_last[i]
                free = x[i - 1, j] if i > 0 else prev_station[j]
                x[i, j] = max(ready, free) + service[i, j]
        prev_last, prev_station = x[:, -1].copy(), x[-1].copy()
        ends.append(x[-1, -1])
    half = rounds // 2
    return (ends[-1] - ends[half]) / (rounds - 1 - half)


@pytest.mark.parametrize(("n", "stages"), [(1, 4), (3, 3), (5, 3), (2, 6)])
def test_round_of_equal_micro_batches_is_the_max_plus_cycle(n: int, stages: int) -> None:
    rng = np.random.default_rng(n * 10 + stages)
    d = rng.uniform(0.1, 1.0, stages)
    got = deterministic_cycle_s(np.array([d.sum()]), np.array([d.max()]), np.array([float(n)]))[0]
    assert got == pytest.approx(max_plus_round_s(np.tile(d, (n, 1))), rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_round_of_unequal_micro_batches_is_slowest_trip_or_station_total(seed: int) -> None:
    """Balanced stages, customer i taking d_i at every one: the round is max(K max_i d_i, sum_i d_i)."""
    rng = np.random.default_rng(seed)
    n, k = 4, 5
    d = rng.uniform(0.1, 1.0, n)
    got = deterministic_cycle_s(np.array([k * d.max()]), np.array([d.mean()]), np.array([float(n)]))[0]
    assert got == pytest.approx(max_plus_round_s(np.tile(d[:, None], (1, k))), rel=1e-9)


def test_active_count_pmf_against_monte_carlo_of_batches() -> None:
    """Draw batches of b lengths, record the still-decoding count at each of their max L iterations."""
    lengths = np.array([1, 2, 2, 5, 9, 20])
    b = 4
    rng = np.random.default_rng(0)
    draws = rng.choice(lengths, size=(40_000, b))
    hist = np.zeros(b + 1)
    for j in range(lengths.max()):
        hist += np.bincount((draws > j).sum(axis=1), minlength=b + 1)
    hist[0] = 0
    np.testing.assert_allclose(active_count_pmf(lengths, b), hist / hist.sum(), atol=3e-3)
    # its mean is b E[L] / E[max L] (every request decodes L iterations, the batch max L)
    pmf = active_count_pmf(lengths, b)
    e_max = np.mean([max(c) for c in itertools.product(lengths, repeat=b)])
    assert pmf @ np.arange(b + 1) == pytest.approx(b * lengths.mean() / e_max, rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_and_sum_moments_by_enumeration(n: int) -> None:
    pmf = np.array([0.0, 0.5, 0.2, 0.3])
    outcomes = list(itertools.product(range(4), repeat=n))
    prob = np.array([math.prod(pmf[v] for v in o) for o in outcomes])
    mx = np.array([max(o) for o in outcomes], dtype=float)
    sm = np.array([sum(o) for o in outcomes], dtype=float)
    m = max_and_sum_moments(pmf, np.array([float(n)]))
    e_max, e_sum = prob @ mx, prob @ sm
    assert m["mean_max"][0] == pytest.approx(e_max)
    assert m["var_max"][0] == pytest.approx(prob @ mx**2 - e_max**2, abs=1e-12)
    assert m["mean_sum"][0] == pytest.approx(e_sum)
    assert m["var_sum"][0] == pytest.approx(prob @ sm**2 - e_sum**2)
    assert m["cov"][0] == pytest.approx(prob @ (mx * sm) - e_max * e_sum, abs=1e-12)


def test_clark_against_sampling_and_closed_form() -> None:
    # two independent standard normals: E max = 1 / sqrt(pi)
    assert clark_expected_max(np.zeros(1), np.ones(1), np.zeros(1), np.ones(1), np.zeros(1))[0] == pytest.approx(
        1 / math.sqrt(math.pi))
    rng = np.random.default_rng(1)
    cov = np.array([[2.0, 0.6], [0.6, 0.5]])
    xy = rng.multivariate_normal([1.0, 1.5], cov, size=400_000)
    got = clark_expected_max(np.array([1.0]), np.array([2.0]), np.array([1.5]), np.array([0.5]), np.array([0.6]))
    assert got[0] == pytest.approx(xy.max(axis=1).mean(), abs=5e-3)
    # equal variables: no spread, the max of the means
    assert clark_expected_max(np.ones(1), np.ones(1), np.ones(1), np.ones(1), np.ones(1))[0] == 1.0


# --- against the event simulator --------------------------------------------------------------------------------

D1, D2, D3 = (0.3, 0.1), (0.2, 0.05), (0.1, 0.0)
"""Decode stage costs (seconds per iteration, seconds per request in it) of the hand-built pipeline."""


def pipeline(batcher: object, slots: int, n_requests: int, outputs: np.ndarray,
             costs: tuple[tuple[float, float], ...] = (D1, D2, D3)) -> tuple[SimConfig, LengthSample]:
    """A fast prefill chiplet P and a three-stage decode pipeline D1 -> D2 -> D3 (``costs``), no bytes moved;
    every request arrives at 0 (saturated)."""
    chips = (ChipletSpec("P", "prefill", "x", 0), ChipletSpec("D1", "decode", "x", 1),
             ChipletSpec("D2", "decode", "x", 2), ChipletSpec("D3", "decode", "x", 3))
    pre = PhaseTable(("p",), {("p", "P"): TaskCost((0.0, 1e-6, 0.0, 0.0))}, {"p": "P"})
    dec = PhaseTable(("d1", "d2", "d3"), {(f"d{i}", f"D{i}"): TaskCost((*c, 0.0)) for i, c in enumerate(costs, 1)},
                     {"d1": "D1", "d2": "D2", "d3": "D3"})
    cfg = SimConfig(chips, pre, dec, (MemoryGroup("m", 1e15, 1.0, 0.0),), NoiSpec(1, 4, 100.0, 100.0),
                    TraceArrivalConfig(), batcher, duration_s=1500.0, pipeline_batches=slots)
    idx = np.arange(n_requests)
    sample = LengthSample(np.full(n_requests, 4), outputs[idx % len(outputs)], np.zeros(n_requests), "hand")
    return cfg, sample


def stage_s(cost: tuple[float, float], m: float) -> float:
    return cost[0] + cost[1] * m


def test_simulated_equal_micro_batches_run_at_the_deterministic_round() -> None:
    """Dynamic batching refills every slot: 3 slots of 2 requests each; a token per request every max(W, N t_bn)."""
    b, slots = 2, 3
    cfg, sample = pipeline(DynamicBatcherConfig(b, math.inf), slots, 2000, np.array([400]))
    res = simulate(cfg, sample)
    w = sum(stage_s(c, b) for c in (D1, D2, D3))
    t_bn = max(stage_s(c, b) for c in (D1, D2, D3))
    want = deterministic_cycle_s(np.array([w]), np.array([t_bn]), np.array([float(slots)]))[0]
    assert res.tbt.p50_s == pytest.approx(want, rel=1e-6)


def test_simulated_static_batches_run_at_the_slowest_micro_batch() -> None:
    """Static batches of 4 with spread output lengths on three balanced stages (0.1 s + 0.1 s per request each):
    three slots carry unequal micro-batches, and the round is set by the largest one's trip. The simulated token
    rate is within 6% of E[sum of actives] / E[round] (Clark on the active-count moments); the same formula at the
    mean active count (every micro-batch of average size) overrates it by more than 25%."""
    b, slots = 4, 3
    costs = ((0.1, 0.1), (0.1, 0.1), (0.1, 0.1))
    outputs = np.array([20, 40, 60, 120, 300])
    cfg, sample = pipeline(StaticBatcherConfig(b), slots, 2000, outputs, costs)
    res = simulate(cfg, sample)
    m = max_and_sum_moments(active_count_pmf(outputs - 1, b), np.array([float(slots)]))  # first token: prefill
    w0, slope_w = sum(c[0] for c in costs), sum(c[1] for c in costs)
    t0, slope_t = costs[0]
    round_s = clark_expected_max(w0 + slope_w * m["mean_max"], slope_w**2 * m["var_max"],
                                 slots * t0 + slope_t * m["mean_sum"], slope_t**2 * m["var_sum"],
                                 slope_w * slope_t * m["cov"])[0]
    sim_tps = res.output_tokens / cfg.duration_s
    assert sim_tps == pytest.approx(m["mean_sum"][0] / round_s, rel=0.06)
    mean_a = m["mean_sum"][0] / slots
    at_mean = deterministic_cycle_s(np.array([w0 + slope_w * mean_a]), np.array([t0 + slope_t * mean_a]),
                                    np.array([float(slots)]))[0]
    assert m["mean_sum"][0] / at_mean > 1.25 * sim_tps
