"""Estimator checks against closed-form queueing results and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.design_space import DesignPoints, enumerate_points
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load_scenario, model_scenarios
from chipdse.evaluators.estimator import Screen, _balance_times, best_partition, memory_needs
from chipdse.evaluators.latency import (
    FAMILY_ATTENTION,
    FAMILY_MAMBA,
    FAMILY_SHARED,
    GROUP_ATTENTION,
    GROUP_MAMBA,
    ChipletCaps,
    task_time_parts_s,
    task_time_s,
)
from chipdse.evaluators.queueing import MAX_TRANSFER_UTILIZATION, erlang_c_wait, mg1_wait_s, transfer_wait
from chipdse.evaluators.selection import pareto_mask


def erlang_c_wait_reference(lam: float, mu: float, c: int) -> float:
    """Mean M/M/c waiting time Wq = C(c, a) / (c mu - lam) (Erlang C; Kleinrock, Queueing Systems Vol. 1)."""
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    prob_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return prob_wait / (c * mu - lam)


@pytest.mark.parametrize("c", [1, 4])
@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_erlang_c_wait_equals_closed_form(c: int, rho: float) -> None:
    mu1 = 2.0
    lam = rho * c * mu1
    wait = erlang_c_wait(lam, np.array([mu1]), np.array([c]))[0]
    assert wait == pytest.approx(erlang_c_wait_reference(lam, mu1, c), rel=1e-12)
    if c == 1:  # M/M/1: Wq = rho / (mu - lam)
        assert wait == pytest.approx(rho / (mu1 - lam), rel=1e-12)


def test_erlang_c_wait_many_servers_matches_log_space_sum() -> None:
    """Hundreds of servers (the decode places of a big pipeline): the Poisson form against the definition
    C = (a^c / c!) (c / (c - a)) / (sum_{k<c} a^k / k! + (a^c / c!) (c / (c - a))) summed in log space."""
    for c, rho in ((300, 0.5), (300, 0.97), (1024, 0.9)):
        mu1 = 0.01
        lam = rho * c * mu1
        a = lam / mu1
        logs = [k * math.log(a) - math.lgamma(k + 1) for k in range(c + 1)]
        top = logs[c] + math.log(c / (c - a))
        shift = max(max(logs[:c]), top)
        prob_wait = math.exp(top - shift) / (sum(math.exp(x - shift) for x in logs[:c]) + math.exp(top - shift))
        want = prob_wait / (c * mu1 - lam)
        assert erlang_c_wait(lam, np.array([mu1]), np.array([c]))[0] == pytest.approx(want, rel=1e-9)


def test_unstable_queue_has_no_wait() -> None:
    assert np.isnan(erlang_c_wait(2.0, np.array([1.0]), np.array([1]))[0])


def test_fluid_balance_equals_brute_force_split() -> None:
    rng = np.random.default_rng(0)
    a, m, fa, fm = rng.uniform(0.1, 5, (4, 50))
    na, nm = rng.integers(1, 8, (2, 50)).astype(float)
    got = np.maximum(*_balance_times(a, m, fa, fm, na, nm))
    xs = np.linspace(0, 1, 20001)[:, None]
    brute = np.maximum((a + xs * fa) / na, (m + (1 - xs) * fm) / nm).min(axis=0)
    assert np.all(got <= brute + 1e-12) and np.allclose(got, brute, rtol=1e-3)


def test_pareto_mask_equals_quadratic_definition() -> None:
    rng = np.random.default_rng(1)
    tp = rng.integers(0, 30, 400).astype(float)
    tt = rng.integers(1, 30, 400).astype(float)
    tt[rng.random(400) < 0.1] = np.nan
    mask = pareto_mask(tp, tt)
    for i in range(len(tp)):
        if np.isnan(tt[i]):
            assert not mask[i]
            continue
        dominated = np.any((tp >= tp[i]) & (tt <= tt[i]) & ((tp > tp[i]) | (tt < tt[i])))
        assert mask[i] == (not dominated)


def test_partition_by_hand() -> None:
    from chipdse.core.scenario import load_scenario

    sc = load_scenario()
    needs = memory_needs(sc)
    split, r = best_partition(needs, 3)
    # enumerate by hand: N_A in {1, 2}, r_g = floor((N_g C - W_g) / S_g)
    c = needs.capacity_bytes
    cands = []
    for na in (1, 2):
        nm = 3 - na
        ra = math.floor((na * c - needs.weight_bytes[0]) / needs.per_request_bytes[0])
        rm = math.floor((nm * c - needs.weight_bytes[1]) / needs.per_request_bytes[1])
        cands.append(min(ra, rm))
    assert r == max(cands)


def test_mg1_wait_is_the_mm1_and_md1_closed_forms() -> None:
    """Pollaczek-Khinchine: exponential service gives M/M/1's Wq = rho / (mu - lam), deterministic half of it."""
    lam, mu = 3.0, 4.0
    assert mg1_wait_s(lam, 1 / mu, 2 / mu**2) == pytest.approx(0.75 / (mu - lam))
    assert mg1_wait_s(lam, 1 / mu, 1 / mu**2) == pytest.approx(0.5 * 0.75 / (mu - lam))
    assert mg1_wait_s(5.0, 1 / mu, 1 / mu**2) == np.inf
    # transfer_wait is the M/D/1 wait in units of the service time: rho / (2 (1 - rho)), rho capped at 0.95
    np.testing.assert_allclose(transfer_wait(np.array([0.0, 0.5, 2.0])), [0.0, 0.5, 0.95 / 0.1])


def _machine_repairman_wait(sources: int, think_mean: float, n: int, seed: int) -> tuple[float, float]:
    """Monte Carlo of ``sources`` sources, each alternating an exponential think time and a unit deterministic
    transfer at one FIFO server: (mean wait in queue, server utilization)."""
    rng = np.random.default_rng(seed)
    arrive = rng.exponential(think_mean, sources)
    free, waits = 0.0, []
    for _ in range(n):
        i = int(np.argmin(arrive))
        start = max(arrive[i], free)
        waits.append(start - arrive[i])
        free = start + 1.0
        arrive[i] = free + rng.exponential(think_mean)
    return float(np.mean(waits[n // 20:])), n / free


@pytest.mark.parametrize(("sources", "rho"), [(2, 0.6), (4, 0.6), (16, 0.6), (4, 0.35)])
def test_transfer_wait_with_few_sources_matches_a_closed_queue(sources: int, rho: float) -> None:
    """m sources sharing one port (the machine-repairman queue, a closed network): a transfer waits behind the
    other m - 1 sources only; the estimator's wait at the measured utilization is within 15% of the simulated one,
    where the open M/D/1 wait is off by up to 2x at m = 2. One source never waits."""
    wait, util = _machine_repairman_wait(sources, sources / rho - 1.0, 30_000, seed=sources)
    assert transfer_wait(util, sources) == pytest.approx(wait, rel=0.15)
    if sources == 2:
        assert transfer_wait(util) > 1.8 * wait
    assert transfer_wait(np.array([0.9]), 1) == 0.0


def _tagged_source_wait(think_means: list[float], n: int, seed: int) -> tuple[float, float, float]:
    """Monte Carlo of sources with unequal exponential think times (means ``think_means``), each followed by a unit
    deterministic transfer at one FIFO server: (mean wait in queue of source 0, its share of the transfers, server
    utilization)."""
    rng = np.random.default_rng(seed)
    think = np.asarray(think_means, dtype=float)
    arrive = rng.exponential(think)
    free, waits, own = 0.0, [], 0
    for _ in range(n):
        i = int(np.argmin(arrive))
        start = max(arrive[i], free)
        if i == 0:
            waits.append(start - arrive[i])
            own += 1
        free = start + 1.0
        arrive[i] = free + rng.exponential(think[i])
    return float(np.mean(waits[len(waits) // 20:])), own / n, n / free


@pytest.mark.parametrize("think", [[10.0] + [30.0] * 7, [3.0] + [60.0] * 4, [4.0] + [12.0] * 6, [1.5] + [10.0] * 3,
                                   [6.0] + [40.0] * 15])
def test_transfer_wait_of_a_source_with_its_share_of_the_load(think: list[float]) -> None:
    """Unequal sources at one port: a source carrying a share s of the transfers waits as the M/D/1 queue at the
    others' load rho (1 - s) (``sources=1/s``), within 25% of the simulated wait, and closer than both the open
    wait and the wait behind the other m - 1 sources counted as equals (the estimator's model before
    :meth:`Screen.transfer_sources`)."""
    wait, share, util = _tagged_source_wait(think, 60_000, seed=len(think))
    est = float(transfer_wait(util, 1.0 / share))
    assert est == pytest.approx(wait, rel=0.25)
    for other in (float(transfer_wait(util)), float(transfer_wait(util, len(think)))):
        assert abs(est - wait) < abs(other - wait)


def test_transfer_sources_by_hand_on_jamba() -> None:
    """Jamba-tiny on Ap1-Ad16-Mp2-Md2-HBM3 (B64): the Mamba group holds the Mamba mixers and the MLP / MoE blocks of
    the Mamba layers; the decode phase spreads shared blocks over its 18 chiplets by count, so each Md chiplet
    reads (Mamba-family bytes + 2/18 shared bytes) / 2 of the group's decode bytes: m = their sum over that. The
    attention group: the Ad chiplets' attention blocks plus 16/18 of its shared blocks, over 16 chiplets."""
    sc = model_scenarios(load_scenario(instances_dir() / "scenarios" / "hydra-table4-chat.yaml"),
                         ["jamba-tiny-dev"])[0]
    scr = Screen(sc)
    types = ["Ap", "Ad", "Mp", "Md"]
    counts = np.array([[1, 16, 2, 2]])
    stacks = np.array([[1, 2]])
    t = scr.table
    by = scr.dec_costs.bytes_at(64.0)
    want = []
    for g, fam, n_own in ((GROUP_ATTENTION, FAMILY_ATTENTION, 16), (GROUP_MAMBA, FAMILY_MAMBA, 2)):
        in_g = t.group == g
        own = by[in_g & (t.family == fam)].sum() + n_own / 18 * by[in_g & (t.family == FAMILY_SHARED)].sum()
        want.append(by[in_g].sum() / (own / n_own))
    got = scr.transfer_sources(types, counts, stacks, np.array([64]))[0]
    np.testing.assert_allclose(got, want, rtol=1e-9)
    assert got[GROUP_MAMBA] == pytest.approx(7.2, abs=0.05)  # not the 2 Md chiplets


def test_capacity_never_loads_the_stacks_beyond_the_cap() -> None:
    """Every chiplet's Eq. 3 task time counts a whole stack's bandwidth for its own reads, so with slow stacks many
    chiplets per stack would together move more bytes than the stacks carry. The ports' utilization at the
    capacity, capacity x (prefill bytes + L_d decode iterations' bytes / k) / (stacks x B_HBM), summed by hand
    from the blocks' byte costs (dynamic batching, k requests per micro-batch, no NoI links: fixed hops), stays
    at or below the planning cap, and the cap is reached (before it was applied, up to 1.36x on these points)."""
    sc = load_scenario()
    pts, _ = enumerate_points(sc)
    keep = np.flatnonzero((pts.n_hbm == 3) & (pts.max_batch == 64) & (pts.d2d_GBps == 256))
    sub = DesignPoints(pts.types, pts.counts[keep], pts.n_hbm[keep], pts.d2d_GBps[keep], pts.max_batch[keep])
    scr = Screen(sc, batching="dynamic", scheduling="static", hop_model="fixed")
    scr.fixed_hops = 0.0
    scr.hbm_GBps = 200.0
    df = scr.score(sub)
    ok = df["feasible"].to_numpy() & (df["capacity_rps"].to_numpy() > 0)
    k = np.ceil(df["decode_concurrency"].to_numpy() / df["decode_stages"].to_numpy())
    per_req = scr.pre_costs.bytes0.sum() + scr.mean_ld * np.array([scr.dec_costs.bytes_at(float(x)).sum() / x
                                                                    for x in k])
    port_s = per_req / (df["n_hbm"].to_numpy() * scr.hbm_GBps * 1e9)
    load = df["capacity_rps"].to_numpy() * port_s
    assert ok.sum() > 20
    assert load[ok].max() <= MAX_TRANSFER_UTILIZATION * (1 + 1e-9)
    assert load[ok].max() >= 0.99 * MAX_TRANSFER_UTILIZATION


def test_static_batch_work_is_max_iterations_plus_request_iterations() -> None:
    """Work affine in the active requests, summed over a static batch's iterations (Monte Carlo over batches drawn
    from the workload sample), equals V0 E[max L_d] + V1 b E[L_d], the estimator's per-batch decode work."""
    screen = Screen(load_scenario(), batching="static")
    lengths = np.asarray(screen.sc.lengths.decode_tokens)
    rng = np.random.default_rng(3)
    b, v0, v1 = 16, 2.0, 0.5
    draws = rng.choice(lengths, size=(20_000, b))
    mc = (v0 * draws.max(axis=1) + v1 * draws.sum(axis=1)).mean()
    closed = v0 * screen.serving.expected_max_decode(np.array([b]))[0] + v1 * b * lengths.mean()
    assert mc == pytest.approx(closed, rel=0.01)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(1, 8),
                          st.sampled_from([256.0, 512.0, 640.5, 1024.0]), st.sampled_from([1, 16, 64])),
                min_size=1, max_size=30))
def test_vectorized_labels_equal_the_one_point_label(rows: list[tuple[int, int, int, float, int]]) -> None:
    """DesignPoints.labels() is DesignPoints.label(i) for every point (the score's label column)."""
    a = np.array(rows, dtype=float)
    pts = DesignPoints(["Ap", "Md"], a[:, :2].astype(int), a[:, 2].astype(int), a[:, 3], a[:, 4].astype(int))
    assert list(pts.labels()) == [pts.label(i) for i in range(len(pts))]


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1e12), st.floats(0, 1e10), st.floats(0, 1e9), st.floats(0, 6), st.floats(64, 2048),
       st.floats(0, 20), st.floats(0, 1e-6))
def test_task_time_is_its_uncontended_part_plus_the_wait_times_its_transfer(
        mat: float, vec: float, by: float, hops: float, d2d: float, wait: float, hop_s: float) -> None:
    """task_time_s(wait) = base + wait x transfer with HYDRA Eq. 3's terms (compute/port roofline + d V / B_NoI),
    bit for bit, as the contention fixed point evaluates it."""
    caps = ChipletCaps(*(np.float64(v) for v in (2e14, 1e13, 0.0, 0.0, 0.0)))
    base, transfer = task_time_parts_s(mat, vec, by, caps, 819.0, hops, d2d, hop_s)
    port = by / 819e9
    comm = hops * (by / (d2d * 1e9) + (hop_s if by > 0 else 0.0))
    assert base == pytest.approx(max(mat / 2e14 + vec / 1e13, port) + comm, rel=1e-12)
    assert transfer == pytest.approx(port + comm, rel=1e-12)
    assert task_time_s(mat, vec, by, caps, 819.0, hops, d2d, wait, hop_s) == base + wait * transfer
