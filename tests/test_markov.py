"""HYDRA's allocation-state Markov estimator (Sec. V, Eqs. 6-8): cross terms by hand, the static special case,
birth-death stationary distributions against closed forms and a linear solve, the hop construction against the
placement heuristic, and monotonicity of the estimator."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import null_space

from chipdse.core.design_space import DesignPoints, PointSpec, enumerate_points
from chipdse.core.grid import xy_route
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.markov import (
    allocation_counts,
    binomial_pmf,
    birth_death_stationary,
    finite_source_throughput,
    fluid_bracket_occupancy,
    state_capacities,
)
from chipdse.evaluators.markov_hops import greedy_type_hops, mean_group_distance, placement_hops, ring_hbm_cells
from chipdse.solvers.placement_heuristics import hydra_greedy_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.simstudy import fidelity_metrics

SC = load_scenario()
PTS, _ = enumerate_points(SC)


def _subset(idx: np.ndarray) -> DesignPoints:
    return DesignPoints(PTS.types, PTS.counts[idx], PTS.n_hbm[idx], PTS.d2d_GBps[idx], PTS.max_batch[idx])


def _sample(n: int, seed: int) -> DesignPoints:
    return _subset(np.random.default_rng(seed).choice(len(PTS), n, replace=False))


# --- Eqs. 6-7: the cross terms on one prefill and one decode chiplet -----------------------------------------


def test_cross_terms_by_hand_on_two_chiplets() -> None:
    """One prefill-optimized chiplet P (400 TFLOP/s, little SRAM) and one decode-optimized D (100 TFLOP/s), one
    HBM stack of 1000 GB/s. Prefill of a 1000-token prompt of a 1e9-parameter model: 2e12 FLOP, 2e9 weight bytes;
    decode iteration of 8 requests: 1.6e10 FLOP, 2e9 bytes. Rates from the roofline max(F / P, V / B) by hand."""
    g_pp = 1000 / max(2e12 / 400e12, 2e9 / 1000e9)  # 1000 tok / max(5 ms, 2 ms) = 200,000 tok/s
    g_pd = 1000 / max(2e12 / 100e12, 2e9 / 1000e9)  # 1000 tok / 20 ms = 50,000 tok/s
    g_dd = 8 / max(1.6e10 / 100e12, 2e9 / 1000e9)  # 8 tok / max(0.16 ms, 2 ms) = 4,000 tok/s
    g_dp = 8 / max(1.6e10 / 400e12, 2e9 / 1000e9)  # memory-bound on either chiplet: 4,000 tok/s
    assert (g_pp, g_pd, g_dd, g_dp) == (200_000, 50_000, 4_000, 4_000)
    s = np.array([0.0, 1.0, 2.0])
    gp, gd = state_capacities(*(np.full(3, g) for g in (g_pp, g_pd, g_dd, g_dp)), np.ones(3), np.ones(3), s)
    # s = 0: P lent to decode; s = 1: the preferred split; s = 2: D lent to prefill
    np.testing.assert_allclose(gp, [0.0, 200_000, 250_000])
    np.testing.assert_allclose(gd, [8_000, 4_000, 0.0])
    np.testing.assert_allclose(np.stack(allocation_counts(1, 1, s)), [[0, 1, 1], [0, 0, 1], [1, 1, 0], [1, 0, 0]])


def test_static_special_case_is_the_pinned_allocation() -> None:
    """At s* = N_P no chiplet is lent: G_p = N_P g_pP and G_d = N_D g_dD whatever the cross rates."""
    rng = np.random.default_rng(3)
    n_p, n_d = rng.integers(1, 12, (2, 40)).astype(float)
    g = rng.uniform(1, 100, (4, 40))
    gp, gd = state_capacities(*g, n_p, n_d, n_p)
    np.testing.assert_allclose(gp, n_p * g[0])
    np.testing.assert_allclose(gd, n_d * g[2])
    with pytest.raises(ValueError, match="outside"):
        allocation_counts(np.array([1.0]), np.array([1.0]), np.array([3.0]))


def test_static_scheduling_scores_the_preferred_split_and_elastic_never_does_worse() -> None:
    """Static scheduling's capacity is min(prefill, decode) of the pinned split; elastic scheduling's chain contains
    that state, so its saturated capacity is at least as high, and with the pinned split's surplus it is higher."""
    pts = _sample(400, 0)
    st_ = Screen(SC, batching="dynamic", scheduling="static").score(pts)
    el = Screen(SC, batching="dynamic", scheduling="elastic").score(pts)
    np.testing.assert_allclose(st_["capacity_rps"], np.minimum(st_["prefill_rps"], st_["decode_rps"]).where(
        st_["feasible"], 0.0))
    # static batching: the slots' coupling through the prefill pipeline never adds capacity
    sb = Screen(SC, batching="static", scheduling="static").score(pts)
    assert np.all(sb["capacity_rps"] <= np.minimum(sb["prefill_rps"], sb["decode_rps"]) * (1 + 1e-12))
    assert np.all(el["capacity_rps"] >= st_["capacity_rps"] * (1 - 1e-9))
    imbalanced = st_["feasible"] & (np.abs(st_["prefill_rps"] / st_["decode_rps"] - 1) > 0.5)
    assert np.mean(el["capacity_rps"][imbalanced] > 1.05 * st_["capacity_rps"][imbalanced]) > 0.5


# --- birth-death chains -------------------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [0.3, 0.9, 1.5])
def test_birth_death_is_the_truncated_mm1_geometric(rho: float) -> None:
    """M/M/1/K: pi_k = rho^k (1 - rho) / (1 - rho^(K+1)) (Kleinrock Vol. 1, Sec. 3.6)."""
    k = 12
    pi = birth_death_stationary(np.full(k, rho), np.ones(k))
    want = rho ** np.arange(k + 1) * (1 - rho) / (1 - rho ** (k + 1))
    np.testing.assert_allclose(pi, want, rtol=1e-12)


def test_birth_death_is_erlang_b_for_a_loss_system() -> None:
    """M/M/c/c: pi_c = (a^c / c!) / sum_k a^k / k! (Erlang B, Kleinrock Vol. 1, Eq. 3.46)."""
    a, c = 7.5, 10
    pi = birth_death_stationary(np.full(c, a), np.arange(1, c + 1, dtype=float))
    erlang_b = (a**c / math.factorial(c)) / sum(a**k / math.factorial(k) for k in range(c + 1))
    assert pi[-1] == pytest.approx(erlang_b, rel=1e-12)


def test_birth_death_equals_the_generator_null_space() -> None:
    """pi Q = 0 of the full generator, solved by linear algebra, for random rates."""
    rng = np.random.default_rng(7)
    birth, death = rng.uniform(0.1, 3, (2, 3, 9))
    pis = birth_death_stationary(birth, death)
    for b, d, pi in zip(birth, death, pis, strict=True):
        q = np.zeros((10, 10))
        q[np.arange(9), np.arange(1, 10)] = b
        q[np.arange(1, 10), np.arange(9)] = d
        q -= np.diag(q.sum(axis=1))
        ref = null_space(q.T)[:, 0]
        np.testing.assert_allclose(pi, ref / ref.sum(), rtol=1e-9)


def test_finite_source_throughput_is_the_machine_repairman_closed_form() -> None:
    """M/M/1//m: p0 = 1 / sum_k m! / (m - k)! (S / D)^k, throughput (1 - p0) / S (Kleinrock Vol. 1, Eq. 3.43),
    and its two limits: m / (D + S) with a fast server, 1 / S with a slow one."""
    for m, think, service in ((1, 3.0, 1.0), (5, 10.0, 2.0), (12, 1.0, 0.5)):
        r = service / think
        p0 = 1.0 / sum(math.factorial(m) / math.factorial(m - k) * r**k for k in range(m + 1))
        got = finite_source_throughput(np.array([m]), np.array([think]), np.array([service]))[0]
        assert got == pytest.approx((1 - p0) / service, rel=1e-12)
    fast = finite_source_throughput(np.array([4.0]), np.array([100.0]), np.array([1e-4]))[0]
    slow = finite_source_throughput(np.array([4.0]), np.array([1e-4]), np.array([2.0]))[0]
    assert fast == pytest.approx(4 / 100.0, rel=1e-4) and slow == pytest.approx(0.5, rel=1e-4)
    # a fractional population lies between its neighbours
    mid = finite_source_throughput(np.array([2.0, 2.5, 3.0]), np.full(3, 4.0), np.full(3, 1.0))
    assert mid[0] < mid[1] < mid[2]


def test_fluid_bracket_balances_the_decode_backlog() -> None:
    """pi_lo f_lo + pi_hi f_hi = 0 (the backlog neither grows nor drains) and pi in [0, 1]."""
    rng = np.random.default_rng(1)
    f_lo, f_hi = -rng.uniform(0, 5, 50), rng.uniform(0.01, 5, 50)
    pi_hi = fluid_bracket_occupancy(f_lo, f_hi)
    np.testing.assert_allclose((1 - pi_hi) * f_lo + pi_hi * f_hi, 0.0, atol=1e-12)
    assert fluid_bracket_occupancy(np.array([0.0]), np.array([0.0]))[0] == 1.0


# --- hop counts ------------------------------------------------------------------------------------------------


def test_vectorized_hops_equal_the_one_point_construction() -> None:
    rng = np.random.default_rng(5)
    ring = SC.package.ring_cells()
    names = ("Ap", "Ad", "Mp", "Md")
    counts = rng.integers(0, 4, (60, 4))  # at most 12 chiplets and 12 stacks: they fit the 25 cells
    stacks = np.stack([rng.integers(1, 7, 60), rng.integers(0, 7, 60)], axis=1)
    weights = rng.uniform(0, 1, (60, 4, 2)).round(3)
    got = placement_hops(5, 5, ring, names, counts, stacks, weights)
    for i in range(60):
        want = greedy_type_hops(5, 5, ring, tuple(stacks[i]), tuple(counts[i]), names, weights[i])
        np.testing.assert_allclose(got[i], want, atol=1e-9)


def test_ring_hbm_cells_by_hand() -> None:
    ring = SC.package.ring_cells()  # 0, 1, 2, 3, 4, 9, 14, 19, 24, 23, ...
    assert ring_hbm_cells(ring, (2, 3)) == [(3, 4), (0, 1, 2)]  # the larger group first, from ring position 0
    assert ring_hbm_cells(ring, (4, 4)) == [(0, 1, 2, 3), (4, 9, 14, 19)]  # a tie: attention (group 0) first
    # from cell 12 (the centre) every ring cell of a 5x5 grid is 2 (edge middles) to 4 (corners) hops away
    d = mean_group_distance(5, 5, [(0,), (2, 24)])
    assert d[0, 12] == 4 and d[1, 12] == 3


@pytest.mark.parametrize("label_idx", [0, 1, 2])
def test_hops_and_link_share_equal_hydra_greedy_placement(label_idx: int) -> None:
    """The construction's HYDRA-greedy variant (most numerous type first, groups from ring position 0) against
    ``solvers`` hydra-greedy on real design points: same cells per type, same hops, and the same share of the HBM
    bytes on the busiest NoI link, summed link by link over the stripes' XY routes (one stripe per stack, bytes
    split evenly)."""
    screen = Screen(SC)
    screen.hop_order, screen.hbm_layout = "count", "greedy"
    pts = _sample(3, 11)
    df = screen.score(pts)
    row = df.iloc[label_idx]
    point = PointSpec.from_row(row.to_dict(), SC.compute_types())
    placement = hydra_greedy_placement(placement_problem(SC, point, float(row["capacity_rps"])))
    stacks = np.array([[int(row["hbm_attention"]), int(row["hbm_mamba"])]])
    counts = pts.counts[label_idx:label_idx + 1]
    batch = np.array([int(row["batch_eff"])])
    w = screen.hop_weights(pts.types, counts, stacks, batch)[0]
    cells = {g: tuple(c for c, t in placement.items() if t == f"hbm:{g}") for g in ("attention", "mamba")}
    dist = mean_group_distance(5, 5, [cells["attention"], cells["mamba"]])
    sub = DesignPoints(pts.types, counts, pts.n_hbm[label_idx:label_idx + 1], pts.d2d_GBps[label_idx:label_idx + 1],
                       batch)
    est, share = screen.geometry(sub, stacks, batch)
    load: dict[tuple[int, int], float] = {}
    for ti, ty in enumerate(pts.types):
        mine = [c for c, t in placement.items() if t == ty]
        real = np.mean([w[ti] @ dist[:, c] for c in mine]) / w[ti].sum()
        assert est[0, ti] == pytest.approx(real, abs=1e-9)
        for c in mine:
            for g, hbm in enumerate((cells["attention"], cells["mamba"])):
                for h in hbm:
                    for hop in xy_route(5, h, c):
                        load[hop] = load.get(hop, 0.0) + w[ti, g] / len(mine) / len(hbm)
    assert share[0] == pytest.approx(max(load.values()) / w.sum(), rel=1e-9)


# --- monotonicity -----------------------------------------------------------------------------------------------

MONO_PTS = _sample(150, 2)


@settings(max_examples=8, deadline=None)
@given(st.floats(0.5, 6.0), st.floats(0.0, 3.0))
def test_fewer_hops_never_lower_throughput(hops: float, extra: float) -> None:
    def tp(h: float) -> np.ndarray:
        est = SC.spec.estimator.model_copy(update={"screen_hops": h})
        sc = dataclasses.replace(SC, spec=SC.spec.model_copy(update={"estimator": est}))
        return Screen(sc, hop_model="fixed", batching="static").score(MONO_PTS)["throughput_tps"].to_numpy()

    # within the contention fixed point's resolution (utilization steps of 0.015: well under 1% of throughput)
    assert np.all(tp(hops) >= tp(hops + extra) * (1 - 5e-3))


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["static", "dynamic"]), st.sampled_from(["static", "elastic"]), st.floats(1.0, 3.0))
def test_more_hbm_bandwidth_never_lowers_throughput(batching: str, scheduling: str, factor: float) -> None:
    mem = SC.library.memory
    faster = dataclasses.replace(SC, library=SC.library.model_copy(
        update={"memory": mem.model_copy(update={"bandwidth_GBps": mem.bandwidth_GBps * factor})}))
    base = Screen(SC, batching=batching, scheduling=scheduling).score(MONO_PTS)["throughput_tps"].to_numpy()
    more = Screen(faster, batching=batching, scheduling=scheduling).score(MONO_PTS)["throughput_tps"].to_numpy()
    assert np.all(more >= base * (1 - 5e-3))  # within the contention fixed point's resolution


def test_more_d2d_bandwidth_at_no_area_cost_never_lowers_throughput() -> None:
    """With a (near) free PHY, a faster link only shortens Eq. 3's t_comm."""
    lib = SC.library.model_copy(update={"phy": SC.library.phy.model_copy(update={"area_mm2": 1e-9})})
    sc = dataclasses.replace(SC, library=lib)
    base = _sample(150, 4)
    tps = []
    for bw in (256.0, 640.0):
        pts = dataclasses.replace(base, d2d_GBps=np.full(len(base), bw))
        tps.append(Screen(sc, batching="static").score(pts)["throughput_tps"].to_numpy())
    assert np.all(tps[1] >= tps[0] * (1 - 1e-9)) and np.any(tps[1] > tps[0] * 1.001)


def test_mape_by_hand() -> None:
    import pandas as pd

    table = pd.DataFrame({"est_throughput_tps": [110.0, 90.0, 50.0], "sim_throughput_tps": [100.0, 100.0, 100.0],
                          "est_ttft_s": [1.0, np.nan, 3.0], "sim_ttft_s": [2.0, 1.0, 3.0]})
    m = fidelity_metrics(table)
    assert m["mape_throughput"] == pytest.approx((0.1 + 0.1 + 0.5) / 3)
    assert m["mape_ttft"] == pytest.approx((0.5 + 0.0) / 2)



@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 64), p=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_binomial_pmf_equals_scipy(n: int, p: list[float]) -> None:
    """The estimator's log-space binomial pmf is scipy.stats.binom's, point masses at p = 0 and 1 included."""
    from scipy.stats import binom

    probs = np.array([*p, 0.0, 1.0])
    expected = binom.pmf(np.arange(n + 1)[None, :], n, probs[:, None])
    got = binomial_pmf(n, probs)
    assert got.shape == (len(probs), n + 1)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-15)
