"""Assertions shared by the formulation tests: a method's Solution against an oracle written in the test.

Each helper asserts one truth every problem's Solution must satisfy, whatever the problem: an infeasible
instance carries no decision, objective or bound; a returned decision passes the problem's own checker, and
the Solution reports the checker's objective.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chipdse.core.solution import Solution, SolutionStatus
from chipdse.solvers.config import SolverConfig

CONFIG = SolverConfig(time_limit_s=10)
"""Solver settings of the formulation tests: 10 s is far more than any of their tiny instances needs."""


def assert_identifies(sol: Solution, problem: str, sense: str, method: str) -> None:
    """Assert that ``sol`` names its problem, objective sense (``"min"`` / ``"max"``) and method."""
    assert sol.problem == problem and sol.sense == sense and sol.method == method


def assert_infeasible(sol: Solution) -> None:
    """Assert that ``sol`` reports an infeasible instance and carries no decision, objective or bound."""
    assert sol.status == SolutionStatus.INFEASIBLE
    assert sol.decision is None and sol.objective is None and sol.bound is None


def assert_checked(sol: Solution, check: Callable[[Any, Any], tuple[float, list[str]]], problem: Any) -> None:
    """Assert that ``sol.decision`` passes ``check(problem, decision)`` and ``sol.objective`` is its objective.

    Parameters
    ----------
    sol : Solution
        A Solution with a decision.
    check : callable
        The problem's solver-independent checker, returning ``(objective, violations)``.
    problem : object
        The problem instance ``sol`` solves.
    """
    objective, violations = check(problem, sol.decision)
    assert violations == []
    assert sol.objective == objective
