"""hbm-bnb, the branch and bound over HBM ring layouts (solvers/placement_bnb.py).

Oracles: brute-force enumeration (small grids), the ring enumeration ``hbm-enum`` (a different exact algorithm)
and every heuristic's objective (an exact result is never worse), the orbits of the ring's rotations counted by
brute force, and a second run of the same solve (work limits are deterministic).
"""

from __future__ import annotations

import multiprocessing as mp
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.solution import SolutionStatus, TerminationCondition
from chipdse.formulations.placement import PlacementProblem, check_placement, grid_ring_cells
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import HEURISTIC_METHODS, _solve_fixed_layout, brute_force_placement, solve_placement
from chipdse.solvers.placement_bnb import _Tree

CONFIG = SolverConfig(work_limit=20)


def ring_problem(side: int, counts: dict[str, int], volumes: dict, name: str = "bnb") -> PlacementProblem:
    """A side x side grid whose ``hbm:*`` types may only use the outer ring."""
    ring = grid_ring_cells(side, side)
    return PlacementProblem(side, side, counts, volumes, allowed={t: ring for t in counts if t.startswith("hbm:")},
                            ring_cells=ring, name=name)


@st.composite
def ring_instances(draw: st.DrawFn) -> PlacementProblem:
    """A 4x4 instance: 1-2 hbm:a and one hbm:m on the ring, 1-2 A and 0-1 M anywhere, integer volumes."""
    counts = {"hbm:a": draw(st.integers(1, 2)), "hbm:m": 1, "A": draw(st.integers(1, 2)), "M": draw(st.integers(0, 1))}
    types = list(counts)
    pairs = [(t, u) for k, t in enumerate(types) for u in types[k:]]
    volumes = {pair: float(draw(st.integers(0, 30))) for pair in pairs if draw(st.booleans())}
    return ring_problem(4, counts, volumes, "bnb-hypothesis")


@settings(max_examples=8, deadline=None)
@given(problem=ring_instances())
def test_property_equals_brute_force_on_4x4(problem: PlacementProblem) -> None:
    """On random 4x4 instances hbm-bnb proves the brute-force optimum, and its bound is at it."""
    best = check_placement(problem, brute_force_placement(problem)[0])[0]
    sol = solve_placement(problem, "hbm-bnb", CONFIG)
    assert sol.status == SolutionStatus.OPTIMAL and sol.exact
    assert sol.objective == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert sol.bound <= sol.objective + 1e-9 and sol.bound >= best * (1 - 1e-6) - 1e-9


@st.composite
def full_grid_instances(draw: st.DrawFn, side: int) -> PlacementProblem:
    """A full side x side grid: 1-2 hbm:a and 1-2 hbm:m on the ring, 1-2 M and A on every other cell; every
    compute type sends to every group (so the common volume charged to the stacks is positive), other pairs at
    random."""
    counts = {"hbm:a": draw(st.integers(1, 2)), "hbm:m": draw(st.integers(1, 2)), "M": draw(st.integers(1, 2))}
    counts["A"] = side * side - sum(counts.values())
    volumes = {(t, g): float(draw(st.integers(1, 30))) for t in ("A", "M") for g in ("hbm:a", "hbm:m")}
    for pair in (("A", "M"), ("M", "M"), ("A", "A"), ("hbm:a", "hbm:m")):
        if draw(st.booleans()):
            volumes[pair] = float(draw(st.integers(0, 10)))
    return ring_problem(side, counts, volumes, f"bnb-full-{side}x{side}")


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(problem=full_grid_instances(3))
def test_property_full_3x3_grid_equals_brute_force(problem: PlacementProblem) -> None:
    """On a full 3x3 grid (the bound charges each stack its common volume's hops to the compute chiplets) hbm-bnb
    proves the brute-force optimum."""
    assert _Tree(problem, _solve_fixed_layout).common.all()
    best = check_placement(problem, brute_force_placement(problem)[0])[0]
    sol = solve_placement(problem, "hbm-bnb", CONFIG)
    assert sol.status == SolutionStatus.OPTIMAL and sol.exact
    assert sol.objective == pytest.approx(best, rel=1e-9, abs=1e-9)


@pytest.mark.slow
@settings(max_examples=4, deadline=None)
@given(problem=full_grid_instances(4))
def test_property_full_4x4_grid_equals_ring_enumeration(problem: PlacementProblem) -> None:
    """On a full 4x4 grid (brute force would take minutes) hbm-bnb proves the optimum the ring enumeration
    ``hbm-enum`` proves (a different exact algorithm: every ring layout, each solved exactly)."""
    enum = solve_placement(problem, "hbm-enum", CONFIG)
    sol = solve_placement(problem, "hbm-bnb", CONFIG)
    assert enum.status == sol.status == SolutionStatus.OPTIMAL
    assert sol.objective == pytest.approx(enum.objective, rel=1e-9, abs=1e-9)


def test_full_grid_with_a_group_no_compute_type_spares_equals_brute_force() -> None:
    """A full 3x3 grid where M sends nothing to hbm:m: that group's common volume is 0 (the other's is 3), and
    hbm-bnb still proves the brute-force optimum (a pool with no stacks left has an infinite hop on its own cells,
    which a zero common volume must not turn into NaN)."""
    problem = ring_problem(3, {"hbm:a": 1, "hbm:m": 1, "A": 4, "M": 3},
                           {("A", "hbm:a"): 5.0, ("M", "hbm:a"): 3.0, ("A", "hbm:m"): 4.0}, "3x3-mixed-common")
    assert _Tree(problem, _solve_fixed_layout).common.tolist() == [3.0, 0.0]
    best = check_placement(problem, brute_force_placement(problem)[0])[0]
    sol = solve_placement(problem, "hbm-bnb", CONFIG)
    assert sol.status == SolutionStatus.OPTIMAL
    assert sol.objective == pytest.approx(best, rel=1e-9)


@st.composite
def group_cell_instances(draw: st.DrawFn) -> PlacementProblem:
    """A 3x4 grid whose two stack groups may each use their own random subset of the 10 ring cells (so an arc may
    have room for one group's stacks and not the other's), 1-2 stacks each, 1-4 A and 1-4 M anywhere."""
    ring = grid_ring_cells(3, 4)
    counts = {"hbm:a": draw(st.integers(1, 2)), "hbm:b": draw(st.integers(1, 2)),
              "A": draw(st.integers(1, 4)), "M": draw(st.integers(1, 4))}
    allowed = {g: tuple(sorted(draw(st.sets(st.sampled_from(ring), min_size=counts[g] + 1, max_size=7))))
               for g in ("hbm:a", "hbm:b")}
    volumes = {(t, g): float(draw(st.integers(0, 30))) for t in ("A", "M") for g in ("hbm:a", "hbm:b")}
    volumes[("A", "M")] = float(draw(st.integers(0, 5)))
    return PlacementProblem(3, 4, counts, volumes, allowed=allowed, ring_cells=ring, name="bnb-group-cells")


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(problem=group_cell_instances())
def test_property_groups_with_their_own_ring_cells_equal_brute_force(problem: PlacementProblem) -> None:
    """When the stack groups may use different ring cells, hbm-bnb proves the brute-force optimum (a stack child
    that leaves its arc too few cells for another group's stacks is not generated)."""
    best = check_placement(problem, brute_force_placement(problem)[0])[0]
    sol = solve_placement(problem, "hbm-bnb", CONFIG)
    assert sol.status == SolutionStatus.OPTIMAL
    assert sol.objective == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_equals_ring_enumeration_and_beats_every_heuristic_on_5x5() -> None:
    """5x5, 6 stacks in two groups, 10 compute chiplets with dense traffic (brute force is out of reach): hbm-bnb
    proves the optimum hbm-enum proves, and no heuristic finds a better placement."""
    volumes = {("A", "hbm:a"): 70.0, ("A", "hbm:m"): 10.0, ("M", "hbm:m"): 50.0, ("M", "hbm:a"): 5.0,
               ("A", "M"): 2.0, ("M", "M"): 1.0, ("A", "A"): 3.0}
    problem = ring_problem(5, {"hbm:a": 2, "hbm:m": 4, "A": 4, "M": 6}, volumes, "5x5-dense")
    enum = solve_placement(problem, "hbm-enum", CONFIG)
    sol = solve_placement(problem, "hbm-bnb", CONFIG)
    assert enum.status == sol.status == SolutionStatus.OPTIMAL
    assert sol.objective == pytest.approx(enum.objective, rel=1e-9)
    for method in HEURISTIC_METHODS:
        assert solve_placement(problem, method, CONFIG, seed=1).objective >= sol.objective - 1e-9, method


def _spin(stop: mp.Event) -> None:  # type: ignore[valid-type]
    """Keep one core busy until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        x = (x * 1_103_515_245 + 12_345) % 2**31


def test_work_limit_gives_the_same_answer_on_a_busy_machine() -> None:
    """A solve stopped by its work limit returns the same objective, bound and status twice, the second time with
    two other processes spinning; the bound stays below the objective."""
    volumes = {("A", "hbm:a"): 70.0, ("M", "hbm:m"): 50.0, ("A", "hbm:m"): 9.0, ("A", "M"): 1.0}
    problem = ring_problem(7, {"hbm:a": 6, "hbm:m": 8, "A": 10, "M": 12}, volumes, "7x7-limited")
    cfg = SolverConfig(work_limit=0.3, time_limit_s=600)  # the work limit, not the wall cap, must end both
    first = solve_placement(problem, "hbm-bnb", cfg)
    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(2)]
    for p in spinners:
        p.start()
    try:
        second = solve_placement(problem, "hbm-bnb", cfg)
    finally:
        stop.set()
        for p in spinners:
            p.join()
    assert first.termination == TerminationCondition.WORK_LIMIT and "work limit 0.3" in first.reason
    assert (first.objective, first.bound, first.status) == (second.objective, second.bound, second.status)
    assert first.bound < first.objective


def test_rotation_rule_keeps_one_count_sequence_per_orbit() -> None:
    """On a square ring the arcs are the four sides; the kept count sequences are one per orbit of the quarter
    turns, counted by brute force over every sequence of per-side counts."""
    problem = ring_problem(5, {"hbm:a": 1, "hbm:m": 1, "A": 1}, {("A", "hbm:a"): 1.0})
    tree = _Tree(problem, _solve_fixed_layout)
    assert tree.shifts == [1, 2, 3]
    seqs = [np.array(s, dtype=int).reshape(4, 2) for s in product(range(2), repeat=8)]
    orbits = {frozenset(tuple(np.roll(s, j, axis=0).ravel()) for j in range(4)) for s in seqs}
    kept = {tuple(s.ravel()) for s in seqs if tree.canonical_counts(s)}
    assert len(kept) == len(orbits)
    assert all(len(orbit & kept) == 1 for orbit in orbits)


def test_rectangle_keeps_only_the_half_turn() -> None:
    """A 4x6 ring (16 positions, 4 arcs of 4) maps onto itself by the half turn only: shift 2 and no other."""
    problem = PlacementProblem(4, 6, {"hbm:a": 2, "A": 1}, {("A", "hbm:a"): 1.0},
                               allowed={"hbm:a": grid_ring_cells(4, 6)}, ring_cells=grid_ring_cells(4, 6))
    assert _Tree(problem, _solve_fixed_layout).shifts == [2]
