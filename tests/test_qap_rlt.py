"""RLT-1 dual ascent bound and its branch and bound: brute force and QAPLIB's published optima are the truth."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.qaplib import QapInstance, qap_cost, read_qaplib
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.qap import solve_qap
from chipdse.solvers.qap_bnb import _static_order, faq_two_opt, location_automorphisms, qap_rlt_bnb
from chipdse.solvers.qap_rlt import ReducedQap, lap_duals, rlt1_dual_bound
from tests.conftest import shared_or_skip

PROVEN_IN_SECONDS = ("had14", "chr15a", "scr15", "esc16i")
"""QAPLIB instances with n >= 14 the dual ascent branch and bound proves in a few seconds each (esc16i through
the hypercube's automorphisms: 81 nodes)."""


def _optimum(name: str) -> tuple[QapInstance, int]:
    folder = shared_or_skip("qaplib")
    with (folder / "optima.csv").open() as fh:
        optima = {row["name"]: int(row["optimal_value"]) for row in csv.DictReader(fh)}
    return read_qaplib(Path(folder) / f"{name}.dat"), optima[name]


def _random(seed: int, n: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 12, (n, n)), rng.integers(0, 12, (n, n))
    return (a + a.T, b + b.T) if symmetric else (a, b)


def _brute(a: np.ndarray, b: np.ndarray) -> int:
    """min over all n! permutations p of sum_ij a_ij b_p(i)p(j), vectorized."""
    perms = np.array(list(itertools.permutations(range(a.shape[0]))))
    return int((a[None] * b[perms[:, :, None], perms[:, None, :]]).sum(axis=(1, 2)).min())


def test_lap_duals_are_feasible_and_sum_to_the_brute_force_assignment_value() -> None:
    rng = np.random.default_rng(3)
    cost = rng.integers(0, 50, (6, 5, 5)).astype(float)
    cols = np.array([min(itertools.permutations(range(5)), key=lambda p, m=m: sum(m[i, p[i]] for i in range(5)))
                     for m in cost])
    u, v = lap_duals(cost, cols)
    assert np.all(cost - u[:, :, None] - v[:, None, :] >= -1e-9)
    for m, ub, vb in zip(cost, u, v, strict=True):
        best = min(sum(m[i, p[i]] for i in range(5)) for p in itertools.permutations(range(5)))
        assert ub.sum() + vb.sum() == pytest.approx(best)


@given(seed=st.integers(0, 10**6), n=st.integers(2, 6), symmetric=st.booleans(), rounds=st.integers(1, 6))
@settings(max_examples=30, deadline=None)
def test_rewriting_is_exact_for_every_permutation_and_its_constant_a_bound(seed: int, n: int, symmetric: bool,
                                                                          rounds: int) -> None:
    """After the ascent, lb + sum_i c[i, p(i)] + sum_{i != j} Q[i, p(i), j, p(j)] is the cost of every permutation
    p (brute force), with non-negative c and Q, so lb <= the optimum; the ascent never lowers lb below
    Gilmore-Lawler's (its first round)."""
    a, b = _random(seed, n, symmetric)
    red = ReducedQap.of(a, b)
    red.ascend(rounds, spread=False)
    inst = QapInstance("random", a, b)
    assert red.c.min() >= -1e-9 and red.q.min() >= -1e-9
    for p in itertools.permutations(range(n)):
        q = sum(red.q[i, p[i], j - (j > i), p[j] - (p[j] > p[i])] for i in range(n) for j in range(n) if i != j)
        assert red.lb + sum(red.c[i, p[i]] for i in range(n)) + q == pytest.approx(qap_cost(inst, np.array(p)))
    assert rlt1_dual_bound(a, b, 1) <= red.lb + 1e-9 <= _brute(a, b) + 1e-6


@given(seed=st.integers(0, 10**6), n=st.integers(1, 8), symmetric=st.booleans(),
       cap=st.sampled_from([0.0, 2e4, 1e9]))
@settings(max_examples=30, deadline=None)
def test_branch_and_bound_equals_brute_force(seed: int, n: int, symmetric: bool, cap: float) -> None:
    """Any square non-negative matrices, asymmetric ones and nonzero diagonals included; best first, depth first
    (memory cap 0) and switching between them (a cap of a few rewritings)."""
    a, b = _random(seed, n, symmetric)
    brute = _brute(a, b)
    res = qap_rlt_bnb(a, b, 30.0, best_first_bytes=cap)
    assert res["proven"] and res["cost"] == brute == res["bound"]
    assert qap_cost(QapInstance("random", a, b), res["perm"]) == brute


def test_dual_ascent_beats_gilmore_lawler_on_nug12() -> None:
    """The root bound climbs above Gilmore-Lawler's (its first round) and stays below the published optimum."""
    inst, opt = _optimum("nug12")
    glb = rlt1_dual_bound(inst.flow, inst.distance, 1)
    assert glb < rlt1_dual_bound(inst.flow, inst.distance, 30) <= opt


@pytest.mark.parametrize("name", PROVEN_IN_SECONDS)
def test_branch_and_bound_proves_qaplib_optima_with_n_at_least_14(name: str) -> None:
    inst, opt = _optimum(name)
    assert inst.n >= 14
    sol = solve_qap(inst, "bnb", SolverConfig(work_limit=60.0))
    assert sol.status.value == "optimal" and sol.termination.value == "optimal"
    assert sol.objective == opt and sol.bound == opt
    assert qap_cost(inst, np.array(sol.decision)) == opt


def test_work_limit_ends_the_search_at_the_same_point_every_time() -> None:
    """nug15 under a work limit far below its proof: the same incumbent, bound and node count twice, the bound
    below the published optimum and the incumbent above it, the work limit named as the reason."""
    inst, opt = _optimum("nug15")
    runs = [solve_qap(inst, "bnb", SolverConfig(work_limit=0.3)) for _ in range(2)]
    for sol in runs:
        assert sol.status.value == "feasible" and sol.termination.value == "work_limit"
        assert "work limit 0.3 units" in sol.reason
        assert sol.objective >= opt >= sol.bound > 0
        assert sol.extra["nodes"] > 0
    assert (runs[0].objective, runs[0].bound, runs[0].extra["nodes"]) == (
        runs[1].objective, runs[1].bound, runs[1].extra["nodes"])


@pytest.mark.parametrize("name", ["nug15", "rou12"])
def test_solve_is_never_worse_than_faq_and_two_opt(name: str) -> None:
    inst, opt = _optimum(name)
    perm, cost, units = faq_two_opt(inst.flow, inst.distance)
    assert qap_cost(inst, perm) == cost >= opt and units > 0
    sol = solve_qap(inst, "bnb", SolverConfig(work_limit=0.5))
    assert sol.objective <= cost and sol.extra["start_cost"] <= cost


@given(seed=st.integers(0, 10**6), n=st.integers(2, 7), copies=st.integers(1, 6), symmetric=st.booleans())
@settings(max_examples=20, deadline=None)
def test_interchangeable_facilities_keep_the_brute_force_optimum(seed: int, n: int, copies: int,
                                                                  symmetric: bool) -> None:
    """Facilities 0..copies with identical flows (the symmetry the search breaks: each such facility only above its
    predecessor's location) still give the brute-force optimum."""
    a, b = _random(seed, n, symmetric)
    k = min(copies, n - 1)
    for j in range(1, k + 1):  # facility j a copy of facility 0: same flows to all others, same diagonal
        a[j, :], a[:, j] = a[0, :], a[:, 0]
    a[: k + 1, : k + 1] = a[0, 1]
    np.fill_diagonal(a[: k + 1, : k + 1], a[0, 0] if k == 0 else a[1, 1])
    assert (_static_order(a)[1] >= 0).sum() >= k  # the copies are recognized as interchangeable
    res = qap_rlt_bnb(a, b, 30.0)
    assert res["proven"] and res["cost"] == _brute(a, b) == res["bound"]


def _grid_hops(rows: int, cols: int) -> np.ndarray:
    r, c = np.divmod(np.arange(rows * cols), cols)
    return np.abs(r[:, None] - r[None, :]) + np.abs(c[:, None] - c[None, :])


@pytest.mark.slow
@given(seed=st.integers(0, 10**6), shape=st.sampled_from([(2, 2), (2, 3), (2, 4), (1, 7), (3, 3)]),
       copies=st.integers(0, 3), cube=st.booleans())
@settings(max_examples=30, deadline=None)
def test_symmetric_distances_keep_the_brute_force_optimum(seed: int, shape: tuple[int, int], copies: int,
                                                          cube: bool) -> None:
    """Distances with automorphisms (grid hops: mirror images and turns; the 3-cube's Hamming distance: 48), the
    symmetry the search breaks by branching only on orbit representatives, with interchangeable facilities beside
    it: the brute-force optimum, and every automorphism found preserves the distances."""
    b = (np.array([[bin(i ^ j).count("1") for j in range(8)] for i in range(8)]) if cube
         else _grid_hops(*shape))
    n = b.shape[0]
    a, _ = _random(seed, n, True)
    k = min(copies, n - 1)
    for j in range(1, k + 1):  # facility j a copy of facility 0
        a[j, :], a[:, j] = a[0, :], a[:, 0]
    a[: k + 1, : k + 1] = 0
    np.fill_diagonal(a, 0)
    assert (_static_order(a)[1] >= 0).sum() >= k
    auts, _ = location_automorphisms(b)
    assert all(np.array_equal(b[np.ix_(s, s)], b) for s in auts)
    assert len({tuple(s) for s in auts}) == len(auts) == {8: 48 if cube else 4, 4: 8, 6: 4, 7: 2, 9: 8}[n]
    res = qap_rlt_bnb(a, b, 30.0)
    assert res["proven"] and res["cost"] == _brute(a, b) == res["bound"]
    assert qap_rlt_bnb(a, b, 30.0, location_symmetry=False)["cost"] == res["cost"]


@pytest.mark.slow
@given(seed=st.integers(0, 10**6), shape=st.sampled_from([(2, 3), (2, 4), (3, 3)]), symmetric=st.booleans())
@settings(max_examples=15, deadline=None)
def test_flow_automorphisms_are_used_with_the_roles_exchanged(seed: int, shape: tuple[int, int],
                                                              symmetric: bool) -> None:
    """Grid hops as the flow matrix (QAPLIB's nug layout): the search exchanges the roles (sum B_kl A_q(k)q(l),
    q = p^-1) and still returns a permutation p of the brute-force cost."""
    a = _grid_hops(*shape)
    _, b = _random(seed, a.shape[0], symmetric)
    res = qap_rlt_bnb(a, b, 30.0)
    assert res.get("exchanged") is True
    assert res["proven"] and res["cost"] == _brute(a, b) == res["bound"]
    assert qap_cost(QapInstance("grid flow", a, b), res["perm"]) == res["cost"]
