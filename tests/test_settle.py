"""The one optimality rule (``solvers.common.settle``) and the solver start kept as the incumbent."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.solution import SolutionStatus, TerminationCondition
from chipdse.formulations.expert_split import ExpertSplitProblem, check_expert_split
from chipdse.formulations.placement import PlacementProblem, check_placement
from chipdse.solvers.backends import BackendResult
from chipdse.solvers.common import ProblemKind, settle
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.expert_split import nova_kstar_split, solve_expert_split
from chipdse.solvers.placement import solve_placement

CONFIG = SolverConfig(rel_gap=1e-4)


def _sum_kind() -> ProblemKind:
    """Decision: a list of numbers; objective: their sum; feasible when none is negative (a toy problem)."""
    return ProblemKind("toy", "min", frozenset({"milp-highs", "brute-force"}),
                       lambda p, d: (float(sum(d)), [f"{x} < 0" for x in d if x < 0]))


def _reported(status: SolutionStatus) -> BackendResult:
    return BackendResult(status, TerminationCondition.TIME_LIMIT, None, None, 0.1, "toy")


def test_heuristic_is_feasible_without_bound_and_enumeration_optimal() -> None:
    kind, t0 = _sum_kind(), time.perf_counter()
    heur = settle(kind, None, "greedy", [1.0, 2.0], CONFIG, t0, bound=2.5)
    assert heur.status == SolutionStatus.FEASIBLE and heur.bound is None and heur.objective == 3.0
    brute = settle(kind, None, "brute-force", [1.0, 1.0], CONFIG, t0)
    assert brute.status == SolutionStatus.OPTIMAL and brute.bound == brute.objective == 2.0
    stuck = settle(kind, None, "greedy", None, CONFIG, t0, reason="stuck")
    assert stuck.status == SolutionStatus.NO_SOLUTION and stuck.reason == "stuck" and not stuck.exact


def test_exact_status_follows_the_gap_alone() -> None:
    kind, t0 = _sum_kind(), time.perf_counter()
    reported_optimal = BackendResult(SolutionStatus.OPTIMAL, TerminationCondition.OPTIMAL, 10.0, 9.0, 0.1, "toy")
    wide = settle(kind, None, "milp-highs", [10.0], CONFIG, t0, reported=reported_optimal, bound=9.0)
    assert wide.status == SolutionStatus.FEASIBLE and wide.gap == pytest.approx(0.1)
    close = settle(kind, None, "milp-highs", [10.0], CONFIG, t0, bound=10.0 * (1 - 0.5e-4))
    assert close.status == SolutionStatus.OPTIMAL
    hair = settle(kind, None, "milp-highs", [10.0], CONFIG, t0, bound=10.0 + 1e-9)  # tolerance: clipped
    assert hair.bound == 10.0 and hair.status == SolutionStatus.OPTIMAL
    with pytest.raises(RuntimeError, match="exceeds the checked objective"):
        settle(kind, None, "milp-highs", [10.0], CONFIG, t0, bound=11.0)
    with pytest.raises(RuntimeError, match="infeasible toy decision"):
        settle(kind, None, "milp-highs", [-1.0], CONFIG, t0, bound=-1.0)


def test_a_start_the_solver_did_not_improve_is_the_incumbent() -> None:
    kind, t0 = _sum_kind(), time.perf_counter()
    none = settle(kind, None, "milp-highs", None, CONFIG, t0, reported=_reported(SolutionStatus.NO_SOLUTION),
                  start=[2.0, 3.0])
    assert none.status == SolutionStatus.FEASIBLE and none.decision == [2.0, 3.0] and none.objective == 5.0
    assert "start is reported" in none.reason
    worse = settle(kind, None, "milp-highs", [4.0, 3.0], CONFIG, t0, start=[2.0, 3.0], bound=1.0)
    assert worse.decision == [2.0, 3.0] and worse.objective == 5.0 and worse.status == SolutionStatus.FEASIBLE
    bad_start = settle(kind, None, "milp-highs", None, CONFIG, t0, reported=_reported(SolutionStatus.NO_SOLUTION),
                       start=[-1.0])
    assert bad_start.decision is None and bad_start.status == SolutionStatus.NO_SOLUTION


def _grid_problem(n: int) -> PlacementProblem:
    """An n x n grid with n*n - 2 chiplets of four types and dense traffic: too big for CP-SAT in a millisecond."""
    types = {"A": (n * n - 2) // 4, "B": (n * n - 2) // 4, "C": (n * n - 2) // 4}
    types["D"] = n * n - 2 - sum(types.values())
    vol = {(a, b): float(1 + i + j) for i, a in enumerate(types) for j, b in enumerate(types) if i <= j}
    return PlacementProblem(n, n, types, vol, name=f"{n}x{n}-dense")


def test_cpsat_with_a_hint_and_almost_no_time_returns_the_hint_or_better() -> None:
    problem = _grid_problem(6)
    hint = solve_placement(problem, "hydra-greedy").decision
    hint_objective = check_placement(problem, hint)[0]
    sol = solve_placement(problem, "cpsat", SolverConfig(time_limit_s=1e-3, threads=1), hint=hint)
    assert sol.decision is not None, (sol.status, sol.reason)
    objective, violations = check_placement(problem, sol.decision)
    assert violations == [] and sol.objective == objective <= hint_objective
    assert sol.status in (SolutionStatus.FEASIBLE, SolutionStatus.OPTIMAL)


def test_expert_split_cpsat_with_almost_no_time_keeps_nova_kstar() -> None:
    tokens = tuple((7 * e) % 23 for e in range(96))
    problem = ExpertSplitProblem((3e6,) * 96, tokens, name="96-experts")
    kstar = check_expert_split(problem, nova_kstar_split(problem)[0])[0]
    for method in ("cpsat", "milp-highs"):
        sol = solve_expert_split(problem, method, SolverConfig(time_limit_s=1e-3, threads=1))
        assert sol.decision is not None, (method, sol.status, sol.reason)
        objective, violations = check_expert_split(problem, sol.decision)
        assert violations == [] and sol.objective == objective <= kstar


@pytest.mark.slow
def test_compare_placement_cpsat_at_a_tenth_of_a_second_has_an_incumbent() -> None:
    result = CliRunner().invoke(app, ["compare", "placement", "--methods", "hydra-greedy", "--methods", "cpsat",
                                      "--time-limit", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["method"]: r for r in json.loads(result.output)}
    assert rows["cpsat"]["objective"] is not None and rows["cpsat"]["status"] in ("feasible", "optimal")
    assert rows["cpsat"]["objective"] <= rows["hydra-greedy"]["objective"]
