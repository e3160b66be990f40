"""Placement (HYDRA Eq. 2): every method on tiny instances with known answers.

Oracles: brute-force enumeration (``solvers.placement.brute_force_placement``) and hand calculation.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.solution import SolutionStatus, TerminationCondition
from chipdse.formulations.placement import (
    PlacementProblem,
    check_placement,
    grid_ring_cells,
    manhattan,
    placement_infeasibility,
)
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import (
    EXACT_METHODS,
    HEURISTIC_METHODS,
    PLACEMENT_METHODS,
    PlacementInputError,
    brute_force_placement,
    count_placements,
    solve_placement,
)

CONFIG = SolverConfig(time_limit_s=20)


def ring_problem(rows: int, cols: int, counts: dict[str, int], volumes: dict, name: str) -> PlacementProblem:
    """Return a problem whose ``hbm:*`` types may only use the grid's outer ring."""
    ring = grid_ring_cells(rows, cols)
    allowed = {t: ring for t in counts if t.startswith("hbm:")}
    return PlacementProblem(rows, cols, counts, volumes, allowed=allowed, ring_cells=ring, name=name)


SMALL = [
    ring_problem(
        3,
        3,
        {"hbm:a": 2, "hbm:m": 2, "A": 1, "M": 2},
        {("A", "hbm:a"): 7, ("M", "hbm:m"): 5, ("A", "M"): 2, ("M", "M"): 1},
        "3x3-two-empty",
    ),
    ring_problem(
        3,
        3,
        {"hbm:a": 3, "hbm:m": 3, "Ap": 1, "Ad": 1, "Mp": 1},
        {("Ap", "hbm:a"): 4, ("hbm:a", "Ad"): 9, ("Mp", "hbm:m"): 6, ("Ap", "Ad"): 3, ("Mp", "Ap"): 1},
        "3x3-full",
    ),
    ring_problem(
        4,
        4,
        {"hbm:a": 2, "hbm:m": 2, "A": 1, "M": 1},
        {("A", "hbm:a"): 30, ("M", "hbm:m"): 20, ("A", "M"): 5, ("hbm:a", "hbm:m"): 1},
        "4x4-six",
    ),
    ring_problem(
        4,
        4,
        {"hbm:a": 2, "hbm:m": 2, "A": 1, "M": 2},
        {("A", "hbm:a"): 7, ("M", "hbm:m"): 5, ("A", "M"): 2, ("M", "M"): 1},
        "4x4-seven",
    ),
]


@pytest.mark.parametrize("problem", SMALL, ids=lambda p: p.name)
def test_exact_methods_match_brute_force(problem: PlacementProblem) -> None:
    """MILP and CP-SAT reach the brute-force optimum, prove it, and report a bound at the objective."""
    brute = solve_placement(problem, "brute-force", CONFIG)
    assert brute.status == SolutionStatus.OPTIMAL
    assert brute.termination == TerminationCondition.ENUMERATED
    for method in ("milp-highs", "cpsat"):
        sol = solve_placement(problem, method, CONFIG)
        assert sol.status == SolutionStatus.OPTIMAL, (method, sol.log_summary)
        assert sol.exact
        assert sol.objective == pytest.approx(brute.objective, rel=1e-9)
        assert check_placement(problem, sol.decision) == (pytest.approx(sol.objective), [])
        assert sol.bound <= sol.objective
        assert sol.gap <= CONFIG.rel_gap
        assert sol.build_s > 0 and sol.wall_s >= sol.build_s


@pytest.mark.parametrize("problem", SMALL, ids=lambda p: p.name)
def test_heuristics_are_feasible_and_not_better_than_optimum(problem: PlacementProblem) -> None:
    """Heuristics return checked placements, no bound, and never beat the optimum."""
    optimum = solve_placement(problem, "brute-force", CONFIG).objective
    for method in HEURISTIC_METHODS:
        sol = solve_placement(problem, method, CONFIG, seed=3)
        assert sol.status == SolutionStatus.FEASIBLE and not sol.exact and sol.bound is None
        assert sol.termination == TerminationCondition.HEURISTIC_DONE
        assert check_placement(problem, sol.decision)[1] == []
        assert sol.objective >= optimum - 1e-9


# 1x4 line: hbm:a fixed at cell 0, hbm:m at cell 3, one A (5 bytes to hbm:a) and one M (3 bytes to hbm:m),
# 1 byte between A and M. A at 1, M at 2: 5*1 + 3*1 + 1*1 = 9; swapped: 5*2 + 3*2 + 1*1 = 17. Optimum 9.
LINE = PlacementProblem(
    1,
    4,
    {"hbm:a": 1, "hbm:m": 1, "A": 1, "M": 1},
    {("A", "hbm:a"): 5.0, ("M", "hbm:m"): 3.0, ("A", "M"): 1.0},
    allowed={"hbm:a": (0,), "hbm:m": (3,)},
    name="line-1x4",
)
# 1x3 line: the HBM is fixed at cell 0 and one compute chiplet talks to it with 10 bytes: it goes next to it.
SHORT = PlacementProblem(1, 3, {"hbm:x": 1, "C": 1}, {("C", "hbm:x"): 10.0}, allowed={"hbm:x": (0,)}, name="1x3")
HAND = [
    (LINE, 9.0, {0: "hbm:a", 1: "A", 2: "M", 3: "hbm:m"}),
    (SHORT, 10.0, {0: "hbm:x", 1: "C"}),
]


@pytest.mark.parametrize("method", PLACEMENT_METHODS)
@pytest.mark.parametrize(("problem", "objective", "decision"), HAND, ids=[h[0].name for h in HAND])
def test_hand_calculated_optimum(problem: PlacementProblem, objective: float, decision: dict, method: str) -> None:
    """Every method finds the hand-calculated unique optimum."""
    sol = solve_placement(problem, method, CONFIG)
    assert sol.objective == pytest.approx(objective)
    assert sol.decision == decision
    expected = SolutionStatus.OPTIMAL if method in EXACT_METHODS else SolutionStatus.FEASIBLE
    assert sol.status == expected
    assert sol.problem == "placement" and sol.method == method


INFEASIBLE = [
    (ring_problem(3, 3, {"hbm:a": 9}, {}, "ring-9"), "hbm:a needs 9 ring cells, 8 are free"),
    (ring_problem(3, 3, {"hbm:a": 5, "hbm:m": 4}, {}, "ring-5+4"), "hbm:a + hbm:m need 9 ring cells, 8 are free"),
    (
        ring_problem(3, 3, {"hbm:a": 2, "A": 8}, {("A", "hbm:a"): 1}, "grid-10"),
        "10 chiplets need 10 cells, the grid has 9",
    ),
]


@pytest.mark.parametrize("method", PLACEMENT_METHODS)
@pytest.mark.parametrize(("problem", "reason"), INFEASIBLE, ids=[p.name for p, _ in INFEASIBLE])
def test_infeasible(problem: PlacementProblem, reason: str, method: str) -> None:
    """Too many chiplets for the ring or the grid: INFEASIBLE, the capacity named, every field None."""
    assert placement_infeasibility(problem) == reason
    sol = solve_placement(problem, method, CONFIG)
    assert sol.status == SolutionStatus.INFEASIBLE
    assert sol.termination == TerminationCondition.INFEASIBLE
    assert sol.reason == reason
    assert sol.decision is None and sol.objective is None and sol.bound is None


def test_check_placement_lists_every_violation() -> None:
    """Out-of-range cell, unknown type, disallowed cell and wrong counts are each reported."""
    problem = SMALL[0]
    _, violations = check_placement(problem, {4: "hbm:a", 9: "A", 0: "X", 1: "M"})
    text = "\n".join(violations)
    assert "cell 9 is outside the 3x3 grid" in text
    assert "unknown type 'X'" in text
    assert "cell 4 holds hbm:a" in text
    assert "hbm:m: 0 placed, 2 required" in text and "M: 1 placed, 2 required" in text


def test_check_placement_objective_by_hand() -> None:
    """Objective sums volume x hops over unordered chiplet pairs, same-type pairs included."""
    problem = SMALL[0]
    decision = {0: "hbm:a", 1: "A", 2: "hbm:a", 3: "hbm:m", 4: "M", 6: "hbm:m", 7: "M"}
    # A-hbm:a: 7*(1+1); M-hbm:m: 5*(1+2 + 2+1); A-M: 2*(1+2); M-M: 1*1
    assert check_placement(problem, decision) == (pytest.approx(14 + 30 + 6 + 1), [])
    assert manhattan(problem, 0, 8) == 4


def test_count_placements_by_hand() -> None:
    """3x3-full: 3 + 3 HBMs on 8 ring cells (8! / (3! 3! 2!) = 560 ways), 3 distinct compute on the rest (3!)."""
    assert count_placements(SMALL[1]) == 560 * 6
    assert solve_placement(SMALL[1], "brute-force", CONFIG).extra["assignments"] == 3360


def test_empty_problem() -> None:
    """No chiplets: every method returns the empty placement with objective 0."""
    problem = PlacementProblem(2, 2, {}, {}, name="empty")
    for method in PLACEMENT_METHODS:
        sol = solve_placement(problem, method, CONFIG)
        assert (sol.decision, sol.objective) == ({}, 0.0)


def test_brute_force_refuses_large_instances() -> None:
    """Brute force raises (a ValueError) beyond 2e6 placements."""
    problem = ring_problem(5, 5, {"hbm:a": 4, "hbm:m": 4, "A": 4, "M": 4}, {("A", "hbm:a"): 1}, "5x5")
    with pytest.raises(ValueError, match="brute force"):
        brute_force_placement(problem)


def test_unknown_method_and_bad_hint() -> None:
    """An unknown method or an infeasible hint is a user error."""
    with pytest.raises(PlacementInputError, match="greedy"):
        solve_placement(SMALL[0], "greedy", CONFIG)
    with pytest.raises(PlacementInputError, match="hint"):
        solve_placement(SMALL[0], "cpsat", CONFIG, hint={0: "A"})


def test_cpsat_rounds_fractional_volumes_safely() -> None:
    """With non-integer volumes CP-SAT's bound, corrected for rounding, stays below the checked objective."""
    problem = ring_problem(
        3,
        3,
        {"hbm:a": 2, "hbm:m": 1, "A": 2, "M": 1},
        {("A", "hbm:a"): 1.37, ("M", "hbm:m"): 2.718281828, ("A", "M"): 0.1234567, ("A", "A"): 0.05},
        "fractional",
    )
    brute = solve_placement(problem, "brute-force", CONFIG)
    sol = solve_placement(problem, "cpsat", CONFIG)
    assert sol.extra["rounding_error"] > 0
    assert sol.objective == pytest.approx(brute.objective, rel=1e-6)
    assert sol.bound <= sol.objective


@st.composite
def small_instances(draw: st.DrawFn) -> PlacementProblem:
    """Draw a 3x3 instance: 1-2 hbm:a, 0-2 hbm:m on the ring, 0-2 A, 0-2 B, 0-1 C, integer volumes."""
    counts = {"hbm:a": draw(st.integers(1, 2)), "hbm:m": draw(st.integers(0, 2))}
    for t, most in (("A", 2), ("B", 2), ("C", 1)):
        counts[t] = draw(st.integers(0, most))
    types = list(counts)
    pairs = [(t, u) for k, t in enumerate(types) for u in types[k:]]
    volumes = {pair: draw(st.integers(0, 20)) for pair in pairs if draw(st.booleans())}
    return ring_problem(3, 3, counts, {k: float(v) for k, v in volumes.items()}, "hypothesis")


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(problem=small_instances(), seed=st.integers(0, 2**16))
def test_property_every_method_feasible_and_exact_agree(problem: PlacementProblem, seed: int) -> None:
    """On random 3x3 instances: all decisions check, exact methods equal brute force, heuristics >= it."""
    optimum = brute_force_placement(problem)[0]
    best = check_placement(problem, optimum)[0]
    for method in PLACEMENT_METHODS:
        sol = solve_placement(problem, method, CONFIG, seed=seed)
        assert check_placement(problem, sol.decision)[1] == []
        if method in EXACT_METHODS:
            assert sol.status == SolutionStatus.OPTIMAL
            assert sol.objective == pytest.approx(best, rel=1e-9, abs=1e-9)
        else:
            assert sol.objective >= best - 1e-9


@pytest.mark.parametrize("with_compute_traffic", [False, True])
def test_ring_enumeration_on_4x4_against_brute_force(with_compute_traffic: bool) -> None:
    """hbm-enum proves the brute-force optimum, with and without compute-to-compute traffic."""
    volumes = {("A", "hbm:a"): 7.0, ("M", "hbm:m"): 5.0, ("A", "hbm:m"): 1.0}
    if with_compute_traffic:
        volumes.update({("A", "M"): 2.0, ("M", "M"): 1.0})
    problem = ring_problem(4, 4, {"hbm:a": 1, "hbm:m": 2, "A": 1, "M": 2}, volumes, "4x4-enum")
    best = check_placement(problem, brute_force_placement(problem)[0])[0]
    sol = solve_placement(problem, "hbm-enum", CONFIG)
    assert sol.exact and sol.status == SolutionStatus.OPTIMAL
    assert sol.objective == pytest.approx(best) and sol.bound == pytest.approx(best)


def test_mip_start_does_not_leak_between_solves() -> None:
    """Regression: the HiGHS MIP-start hook was installed on Pyomo's shared solver instance, so later solves of
    other models replayed stale starts (a NOVA MILP then returned no solution). Alternate two models."""
    from pyomo.contrib.solver.common.factory import SolverFactory

    for _ in range(3):
        for problem in SMALL[:2]:
            hint = solve_placement(problem, "hydra-greedy", CONFIG).decision
            sol = solve_placement(problem, "milp-highs", CONFIG, hint=hint)
            assert sol.status == SolutionStatus.OPTIMAL
    assert "_solve" not in vars(SolverFactory("highs"))  # the shared instance was never patched


def test_ring_enumeration_honours_a_tiny_time_limit() -> None:
    """With a time limit too short to finish, hbm-enum stops and returns its incumbent with a valid bound, or
    says that no feasible solution was found in that time."""
    volumes = {("A", "hbm:a"): 7.0, ("M", "hbm:m"): 5.0, ("A", "M"): 1.0}
    problem = ring_problem(5, 5, {"hbm:a": 3, "hbm:m": 3, "A": 6, "M": 6}, volumes, "5x5-tight")
    sol = solve_placement(problem, "hbm-enum", SolverConfig(time_limit_s=0.1))
    if sol.decision is None:
        assert sol.status == SolutionStatus.NO_SOLUTION and "wall cap 0.1 s" in sol.reason
    else:
        assert sol.bound <= sol.objective and check_placement(problem, sol.decision)[1] == []
        # either the enumeration finished (proven) or the cap ended it: never a work limit it was not given
        assert (sol.termination.value, sol.status.value) in (("enumerated", "optimal"), ("time_limit", "feasible"))


@pytest.mark.parametrize(("rows", "cols", "group_size"), [(4, 4, 8), (3, 4, 4), (5, 5, 8)])
def test_symmetry_keeps_one_layout_per_orbit(rows: int, cols: int, group_size: int) -> None:
    """The kept layouts are exactly one per orbit of the grid's symmetry group, counted by brute force: apply every
    symmetry to every layout and collect the distinct orbits."""
    from chipdse.solvers.placement_decomp import _restricted_split, _ring_layouts, canonical_layouts, grid_symmetries

    problem = ring_problem(rows, cols, {"hbm:a": 2, "hbm:m": 1, "A": 1}, {("A", "hbm:a"): 1.0}, "orbits")
    sigmas = grid_symmetries(problem)
    assert len(sigmas) + 1 == group_size
    restricted, _, ring = _restricted_split(problem)
    layouts = _ring_layouts(problem, restricted, ring)
    as_cells = [frozenset((ring[k], int(g)) for k, g in enumerate(lay) if g >= 0) for lay in layouts]
    orbits = {frozenset([cells, *(frozenset((int(s[c]), g) for c, g in cells) for s in sigmas)])
              for cells in as_cells}
    kept = canonical_layouts(layouts, ring, sigmas, len(restricted))
    assert len(kept) == len(orbits)
    kept_cells = {frozenset((ring[k], int(g)) for k, g in enumerate(lay) if g >= 0) for lay in kept}
    assert all(len(orbit & kept_cells) == 1 for orbit in orbits)


def test_symmetry_is_not_used_when_allowed_cells_break_it() -> None:
    from chipdse.solvers.placement_decomp import grid_symmetries

    problem = ring_problem(4, 4, {"hbm:a": 2, "A": 1}, {("A", "hbm:a"): 1.0}, "asym")
    problem = dataclasses.replace(problem, allowed={"hbm:a": (0, 1, 2, 3)})
    sigmas = grid_symmetries(problem)  # only the left-right mirror keeps the top row
    assert len(sigmas) == 1 and sorted(sigmas[0][:4]) == [0, 1, 2, 3]
