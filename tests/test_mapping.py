"""Bottleneck mapping (HYDRA Eqs. 4-5): every method against brute force written here independently."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.errors import SpecError
from chipdse.core.solution import SolutionStatus, TerminationCondition
from chipdse.formulations.mapping import (
    MappingProblem,
    build_mapping_cpsat,
    build_mapping_milp,
    check_mapping,
    decode_mapping_milp,
    identical_chiplet_groups,
    mapping_infeasibility,
    mapping_lower_bound,
    restrict_to_upper_bound,
    stage_times,
)
from chipdse.solvers.backends import solve_pyomo
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import MAPPING_METHODS, lpt_greedy_mapping, solve_mapping
from tests.solution_checks import CONFIG, assert_checked, assert_identifies, assert_infeasible

EXACT = ("milp-highs", "cpsat", "brute-force")
HEURISTICS = ("lpt-greedy", "round-robin", "round-robin-balanced", "contiguous-dp")
REL = (
    1e-5  # MILP gap 1e-6 and CP-SAT ticks of 1e-6 of the largest time's power of ten, summed over <= 7 tasks
)


def oracle(problem: MappingProblem) -> float | None:
    """Least bottleneck over every assignment of tasks to compatible chiplets; ``None`` when there is none."""
    choices = [[c for c in problem.chiplets if (k, c) in problem.time_s] for k in problem.tasks]
    best = None
    for assignment in itertools.product(*choices):
        loads = dict.fromkeys(problem.chiplets, 0.0)
        for k, c in zip(problem.tasks, assignment, strict=True):
            loads[c] += problem.time_s[k, c]
        value = max(loads.values())
        best = value if best is None else min(best, value)
    return best


def contiguous_oracle(problem: MappingProblem) -> float | None:
    """Least bottleneck over mappings non-decreasing along the chain (contiguous runs in chiplet order)."""
    best = None
    m = len(problem.chiplets)
    for idx in itertools.combinations_with_replacement(range(m), len(problem.tasks)):
        pairs = [(k, problem.chiplets[i]) for k, i in zip(problem.tasks, idx, strict=True)]
        if any(p not in problem.time_s for p in pairs):
            continue
        loads = dict.fromkeys(problem.chiplets, 0.0)
        for k, c in pairs:
            loads[c] += problem.time_s[k, c]
        value = max(loads.values())
        best = value if best is None else min(best, value)
    return best


def random_problem(seed: int, n_tasks: int, n_chiplets: int, p_incompatible: float = 0.3) -> MappingProblem:
    """Times 0.1-2 ms; each pair incompatible with probability p, but every task keeps a chiplet."""
    rng = np.random.default_rng(seed)
    tasks = tuple(f"k{i}" for i in range(n_tasks))
    chiplets = tuple(f"c{j}" for j in range(n_chiplets))
    time_s: dict[tuple[str, str], float] = {}
    for k in tasks:
        keep = rng.random(n_chiplets) >= p_incompatible
        keep[rng.integers(n_chiplets)] = True
        for c, ok in zip(chiplets, keep, strict=True):
            if ok:
                time_s[k, c] = float(rng.uniform(0.1e-3, 2e-3))
    return MappingProblem(tasks, chiplets, time_s, name=f"random-{seed}")


def assert_consistent(problem: MappingProblem, method: str, expected: float | None) -> None:
    """Check one method's Solution against the brute-force optimum (``None`` = infeasible)."""
    sol = solve_mapping(problem, method, CONFIG)
    assert_identifies(sol, "mapping", "min", method)
    if expected is None:
        assert_infeasible(sol)
        return
    if sol.status == SolutionStatus.NO_SOLUTION:  # contiguous-dp on a problem with no contiguous split
        assert method == "contiguous-dp" and sol.decision is None and sol.objective is None
        return
    assert_checked(sol, check_mapping, problem)
    if method in EXACT:
        assert sol.exact and sol.status == SolutionStatus.OPTIMAL
        assert sol.objective == pytest.approx(expected, rel=REL, abs=1e-12)
        assert sol.bound is not None and sol.bound <= expected * (1 + 1e-9) + 1e-15
    else:
        assert not sol.exact and sol.bound is None and sol.status == SolutionStatus.FEASIBLE
        assert sol.objective >= expected * (1 - 1e-9)


@pytest.mark.parametrize("method", EXACT)
@pytest.mark.parametrize(
    ("seed", "n_tasks", "n_chiplets"),
    [(0, 3, 2), (1, 4, 2), (2, 5, 3), (3, 6, 2), (4, 6, 3), (5, 7, 3), (6, 7, 2), (7, 5, 3)],
)
def test_exact_methods_equal_brute_force(seed: int, n_tasks: int, n_chiplets: int, method: str) -> None:
    problem = random_problem(seed, n_tasks, n_chiplets)
    assert_consistent(problem, method, oracle(problem))


@pytest.mark.parametrize("method", MAPPING_METHODS)
def test_identical_chiplets_with_symmetry_breaking(method: str) -> None:
    """Chiplets c0, c1 have identical columns (ordered loads in the models); c2 is different."""
    tasks = tuple(f"k{i}" for i in range(6))
    base = [1.0, 2.0, 3.0, 2.5, 1.5, 0.5]
    time_s = {(k, c): b for k, b in zip(tasks, base, strict=True) for c in ("c0", "c1")}
    time_s |= {(k, "c2"): 1.5 * b for k, b in zip(tasks, base, strict=True) if b > 1.0}
    problem = MappingProblem(tasks, ("c0", "c1", "c2"), time_s)
    assert identical_chiplet_groups(problem) == [("c0", "c1")]
    assert_consistent(problem, method, oracle(problem))


@pytest.mark.parametrize("seed", range(4))
def test_milp_symmetry_breaking_keeps_the_optimum(seed: int) -> None:
    """With load ordering on (off by default for HiGHS) the MILP still reaches the brute-force optimum."""
    rng = np.random.default_rng(seed)
    tasks = tuple(f"k{i}" for i in range(7))
    time_s = {(k, c): float(rng.uniform(1.0, 3.0)) for k in tasks for c in ("c2",)}
    base = {k: float(rng.uniform(1.0, 3.0)) for k in tasks}
    time_s |= {(k, c): base[k] for k in tasks for c in ("c0", "c1")}
    problem = MappingProblem(tasks, ("c0", "c1", "c2"), time_s)
    m = build_mapping_milp(problem, symmetry_breaking=True)
    assert list(m.chiplet_load_order) == ["c1"]
    res = solve_pyomo(m, CONFIG)
    decision = decode_mapping_milp(m)
    loads = stage_times(problem, decision)
    assert loads["c0"] >= loads["c1"] - 1e-9
    assert check_mapping(problem, decision)[0] == pytest.approx(oracle(problem), rel=REL)
    assert res.objective * pyo.value(m.time_unit_s) == pytest.approx(oracle(problem), rel=REL)


HAND = MappingProblem(
    tasks=("a", "b", "c", "d"),
    chiplets=("X", "Y"),
    time_s={
        ("a", "X"): 4.0, ("a", "Y"): 6.0,
        ("b", "X"): 3.0, ("b", "Y"): 2.0,
        ("c", "X"): 2.0,  # c cannot run on Y
        ("d", "X"): 5.0, ("d", "Y"): 3.0,
    },
)  # fmt: skip


@pytest.mark.parametrize("method", EXACT)
def test_hand_computed_instance(method: str) -> None:
    """c must go to X (2 s); over the 8 choices for a, b, d the stage times (X, Y) are, in seconds:

    a,b,d on X,X,X: (4+3+2+5, 0) = (14, 0) -> 14     a,b,d on Y,X,X: (3+2+5, 6) = (10, 6)   -> 10
    a,b,d on X,X,Y: (4+3+2, 3)   = (9, 3)  -> 9      a,b,d on Y,X,Y: (3+2, 6+3) = (5, 9)    -> 9
    a,b,d on X,Y,X: (4+2+5, 2)   = (11, 2) -> 11     a,b,d on Y,Y,X: (2+5, 6+2) = (7, 8)    -> 8
    a,b,d on X,Y,Y: (4+2, 2+3)   = (6, 5)  -> 6      a,b,d on Y,Y,Y: (2, 6+2+3) = (2, 11)   -> 11
    The unique optimum maps a, c -> X and b, d -> Y with bottleneck 6 s. The lower bounds of the model are
    max_k min_c t = max(4, 2, 2, 3) = 4 and sum_k min_c t / 2 = (4 + 2 + 2 + 3) / 2 = 5.5.
    """
    assert mapping_lower_bound(HAND) == 5.5
    sol = solve_mapping(HAND, method, CONFIG)
    assert sol.decision == {"a": "X", "b": "Y", "c": "X", "d": "Y"}
    assert sol.objective == 6.0
    assert sol.bound == pytest.approx(6.0, rel=REL)
    assert sol.extra["stage_times_s"] == {"X": 6.0, "Y": 5.0}


def test_hand_computed_heuristics() -> None:
    """LPT: order a (min 4), d (3), b (2), c (2); a -> X (4 < 6), d -> Y (0+3 < 4+5), b -> Y (3+2 < 4+3),
    c -> X: (6, 5) -> 6. Round robin: a -> X, b -> Y, c -> X, d -> Y: (6, 5) -> 6.
    Contiguous DP (X takes a prefix, Y the rest; c forces X to reach c): X = a+b+c = 9, Y = d = 3 -> 9,
    or X takes all: 14 -> 9.
    """
    lpt = solve_mapping(HAND, "lpt-greedy", CONFIG)
    assert lpt.decision == {"a": "X", "b": "Y", "c": "X", "d": "Y"} and lpt.objective == 6.0
    rr = solve_mapping(HAND, "round-robin", CONFIG)
    assert rr.decision == {"a": "X", "b": "Y", "c": "X", "d": "Y"} and rr.objective == 6.0
    dp = solve_mapping(HAND, "contiguous-dp", CONFIG)
    assert dp.decision == {"a": "X", "b": "X", "c": "X", "d": "Y"} and dp.objective == 9.0
    assert dp.status == SolutionStatus.FEASIBLE and dp.termination == TerminationCondition.HEURISTIC_DONE


def test_round_robin_with_grouped_chiplet_order() -> None:
    """Chiplets A1, A2, B1, B2 (types grouped, as a random placement may order them); tasks alternate A-only and
    B-only, 1 s each. The pointer round robin walks A1 -> B1 -> (B2 skipped, wrap) A1 -> B1 ...: A1 and B1 get all
    four of their type's tasks (bottleneck 4 s). Balanced: t0 A1, t1 B1, t2 A2, t3 B2, t4 A1, t5 B1, t6 A2, t7 B2:
    two tasks each (2 s, the optimum)."""
    tasks = tuple(f"t{i}" for i in range(8))
    time_s = {(k, c): 1.0 for i, k in enumerate(tasks) for c in (("A1", "A2") if i % 2 == 0 else ("B1", "B2"))}
    problem = MappingProblem(tasks, ("A1", "A2", "B1", "B2"), time_s)
    pointer = solve_mapping(problem, "round-robin", CONFIG)
    assert set(pointer.decision.values()) == {"A1", "B1"} and pointer.objective == 4.0
    balanced = solve_mapping(problem, "round-robin-balanced", CONFIG)
    assert [balanced.decision[k] for k in tasks] == ["A1", "B1", "A2", "B2"] * 2 and balanced.objective == 2.0
    assert balanced.objective == oracle(problem)


@pytest.mark.parametrize("method", MAPPING_METHODS)
def test_task_without_compatible_chiplet_is_infeasible(method: str) -> None:
    time_s = dict(HAND.time_s)
    problem = MappingProblem((*HAND.tasks, "orphan"), HAND.chiplets, time_s)
    sol = solve_mapping(problem, method, CONFIG)
    assert sol.status == SolutionStatus.INFEASIBLE and sol.termination == TerminationCondition.INFEASIBLE
    assert sol.decision is None and sol.objective is None and sol.bound is None
    assert "'orphan'" in sol.reason
    assert mapping_infeasibility(problem) == sol.reason


@pytest.mark.parametrize(("seed", "n_tasks"), [(10, 6), (11, 7), (12, 8), (13, 5), (14, 8)])
def test_contiguous_dp_equals_brute_force_over_contiguous_splits(seed: int, n_tasks: int) -> None:
    """A chain of tasks on 3 chiplets (some pairs incompatible): the DP is exact for contiguous splits."""
    problem = random_problem(seed, n_tasks, 3, p_incompatible=0.2)
    expected = contiguous_oracle(problem)
    sol = solve_mapping(problem, "contiguous-dp", CONFIG)
    if expected is None:
        assert sol.status == SolutionStatus.NO_SOLUTION and sol.decision is None
        return
    assert sol.objective == pytest.approx(expected, rel=1e-12)
    idx = [problem.chiplets.index(sol.decision[k]) for k in problem.tasks]
    assert idx == sorted(idx)  # contiguous runs in chiplet order
    assert sol.objective >= oracle(problem) * (1 - 1e-12)


def test_contiguous_dp_without_contiguous_split() -> None:
    """Task 0 only on Y, task 1 only on X: with chiplet order (X, Y) no contiguous split exists."""
    problem = MappingProblem(("t0", "t1"), ("X", "Y"), {("t0", "Y"): 1.0, ("t1", "X"): 1.0})
    sol = solve_mapping(problem, "contiguous-dp", CONFIG)
    assert sol.status == SolutionStatus.NO_SOLUTION
    assert sol.decision is None and sol.objective is None and sol.bound is None
    assert solve_mapping(problem, "milp-highs", CONFIG).objective == 1.0


def test_checker_and_stage_times() -> None:
    decision = {"a": "X", "b": "Y", "c": "Y", "d": "Z", "e": "X"}
    objective, violations = check_mapping(HAND, decision)
    assert objective == 4.0  # max(X: a = 4, Y: b = 2); c is incompatible with Y and not counted
    assert stage_times(HAND, decision) == {"X": 4.0, "Y": 2.0}
    assert "task 'c' is mapped to incompatible chiplet 'Y'" in violations
    assert "task 'd' is mapped to unknown chiplet 'Z'" in violations
    assert "unknown task 'e'" in violations
    _, violations = check_mapping(HAND, {"a": "X"})
    assert "task 'b' is not mapped" in violations


def test_malformed_problem_and_limits_raise() -> None:
    with pytest.raises(SpecError, match="non-negative finite time"):
        mapping_infeasibility(MappingProblem(("a",), ("X",), {("a", "X"): -1.0}))
    with pytest.raises(SpecError, match="keys from tasks and chiplets"):
        mapping_infeasibility(MappingProblem(("a",), ("X",), {("a", "Q"): 1.0}))
    big = random_problem(0, 14, 3, p_incompatible=0.0)  # 3**14 = 4,782,969 assignments
    with pytest.raises(ValueError, match="exceeds the limit"):
        solve_mapping(big, "brute-force", CONFIG)
    with pytest.raises(ValueError, match="unknown mapping method"):
        solve_mapping(HAND, "tabu", CONFIG)


def test_heuristic_hint_is_feasible_in_the_milp() -> None:
    """Fixing the MILP's assignment to the LPT mapping gives a feasible model with LPT's bottleneck."""
    problem = random_problem(3, 7, 3)
    hint = lpt_greedy_mapping(problem)
    m = build_mapping_milp(problem)
    for k, c in m.pairs:
        m.assign[k, c].fix(1 if hint[k] == c else 0)
    res = solve_pyomo(m, CONFIG)
    assert res.status == SolutionStatus.OPTIMAL
    assert res.objective * pyo.value(m.time_unit_s) == pytest.approx(
        check_mapping(problem, hint)[0], rel=1e-9
    )


def test_pairs_slower_than_a_known_bottleneck_are_left_out() -> None:
    """The 1 s pair can never be used once a 0.3 ms mapping is known; the ticks then follow the ms scale."""
    time_s = {("a", "X"): 1.0, ("a", "Y"): 3e-4, ("b", "X"): 2.4e-4, ("b", "Y"): 2.5e-4}
    time_s |= {("c", "X"): 1.7e-4, ("c", "Y"): 1.3e-6, ("d", "X"): 1.2e-6, ("d", "Y"): 3.3e-6}
    problem = MappingProblem(("a", "b", "c", "d"), ("X", "Y"), time_s)
    upper = check_mapping(problem, lpt_greedy_mapping(problem))[0]
    assert restrict_to_upper_bound(problem, upper).time_s.keys() == time_s.keys() - {("a", "X")}
    assert ("a", "X") not in build_mapping_milp(problem, upper_bound_s=upper).pairs
    built = build_mapping_cpsat(problem, upper_bound_s=upper)
    assert built.resolution_s == pytest.approx(1e-10)  # the bound 2.5e-4 s is in [1, 10) x 1e-4 s
    expected = oracle(problem)
    for method in EXACT:
        sol = solve_mapping(problem, method, CONFIG)
        assert sol.objective == pytest.approx(expected, rel=1e-9)
        assert expected * (1 - 1e-6) <= sol.bound <= expected * (1 + 1e-12)


def test_model_components_and_cpsat_ticks() -> None:
    m = build_mapping_milp(HAND)
    for name in ("assign", "bottleneck_time", "task_assign", "chiplet_time_ub", "bottleneck_task_lb"):
        assert isinstance(m.component(name), pyo.Component)
    assert ("c", "Y") not in m.pairs  # incompatible pairs are left out of the index
    built = build_mapping_cpsat(HAND)
    assert built.resolution_s == pytest.approx(1e-6)
    assert all(t * built.resolution_s <= HAND.time_s[p] for p, t in built.ticks.items())
    assert built.bound_s(6_000_000) <= 6.0


times = st.one_of(
    st.floats(1e-4, 1e-2, allow_nan=False),
    st.integers(1, 20).map(lambda n: n * 1e-4),
    st.floats(-7.0, 0.0).map(lambda e: 10.0**e),  # times spanning seven orders of magnitude
    st.just(0.0),
)


@st.composite
def mapping_problems(draw: st.DrawFn) -> MappingProblem:
    n_tasks = draw(st.integers(1, 6))
    n_chiplets = draw(st.integers(1, 3))
    tasks = tuple(f"k{i}" for i in range(n_tasks))
    chiplets = tuple(f"c{j}" for j in range(n_chiplets))
    time_s = {}
    for k in tasks:
        for c in chiplets:
            if draw(st.integers(0, 9)) < 7:  # about 30% of pairs incompatible; a task may have none
                time_s[k, c] = draw(times)
    return MappingProblem(tasks, chiplets, time_s)


@settings(max_examples=30, deadline=None)
@given(problem=mapping_problems())
def test_exact_equals_brute_force_and_heuristics_never_better(problem: MappingProblem) -> None:
    expected = oracle(problem)
    for method in MAPPING_METHODS:
        assert_consistent(problem, method, expected)
    if expected is not None:
        assert mapping_lower_bound(problem) <= expected * (1 + 1e-12) + 1e-15
        assert not math.isnan(expected)


def test_highs_solves_with_different_thread_counts_in_one_process() -> None:
    """Regression: HiGHS keeps one process-wide thread scheduler; a solve with threads=1 after one with
    threads=2 returned status 'unknown' until the backend resets the scheduler."""
    from chipdse.solvers.mapping import solve_mapping

    problem = MappingProblem(tasks=("a", "b", "c"), chiplets=("x", "y"),
                             time_s={("a", "x"): 1.0, ("b", "x"): 2.0, ("b", "y"): 2.0, ("c", "y"): 1.5})
    for threads in (2, 1, 2):
        sol = solve_mapping(problem, "milp-highs", SolverConfig(time_limit_s=10, threads=threads))
        # optimum: a->x (1), c->y (1.5), b -> x gives max(3, 1.5) = 3, b -> y gives max(1, 3.5) = 3.5: so 3
        assert sol.status.value == "optimal" and sol.objective == pytest.approx(3.0)
