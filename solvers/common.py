"""Turning a decision into a checked :class:`~chipdse.core.solution.Solution`, shared by every problem's solver module.

Every method's decision goes through the problem's solver-independent checker (STYLE.md item 8): the
objective reported is the checker's, and a decision with violations is a bug (``RuntimeError``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chipdse.core.solution import Solution, SolutionStatus, TerminationCondition
from chipdse.solvers.backends import BackendResult


@dataclass(frozen=True)
class ProblemKind:
    """What the shared wrappers need to know about one decision problem.

    Attributes
    ----------
    name : str
        ``Solution.problem`` value, e.g. ``"mapping"``.
    sense : str
        ``"min"`` or ``"max"``.
    exact_methods : frozenset[str]
        Methods that can prove optimality.
    check : callable(problem, decision) -> (objective, violations)
        The problem's checker.
    extra : callable(problem, decision) -> dict, optional
        Extra decoded information stored in ``Solution.extra``.
    """

    name: str
    sense: str
    exact_methods: frozenset[str]
    check: Callable[[Any, Any], tuple[float, list[str]]]
    extra: Callable[[Any, Any], dict[str, Any]] | None = None


def infeasible_solution(kind: ProblemKind, method: str, reason: str, t0: float) -> Solution:
    """Return the INFEASIBLE result found before solving; every solution field stays ``None``."""
    return Solution(problem=kind.name, method=method, exact=method in kind.exact_methods,
                    status=SolutionStatus.INFEASIBLE, termination=TerminationCondition.INFEASIBLE,
                    wall_s=time.perf_counter() - t0, sense=kind.sense, reason=reason,
                    log_summary="infeasible before solving")


def no_solution(kind: ProblemKind, method: str, reason: str, t0: float) -> Solution:
    """Return a NO_SOLUTION result of a heuristic that found nothing (with the reason)."""
    return Solution(problem=kind.name, method=method, exact=method in kind.exact_methods,
                    status=SolutionStatus.NO_SOLUTION, termination=TerminationCondition.HEURISTIC_DONE,
                    wall_s=time.perf_counter() - t0, sense=kind.sense, reason=reason,
                    log_summary=f"{method}: {reason}")


def checked_solution(kind: ProblemKind, problem: Any, method: str, decision: Any, status: SolutionStatus,
                     termination: TerminationCondition, *, bound: float | str | None, t0: float,
                     log_summary: str, build_s: float = 0.0) -> Solution:
    """Check ``decision`` and wrap it; ``bound="objective"`` means the bound equals the objective.

    Raises
    ------
    RuntimeError
        The decision violates the problem's constraints (a bug in the method, not a user error).
    """
    objective, violations = kind.check(problem, decision)
    if violations:
        msg = f"{method} returned an infeasible {kind.name} decision: {'; '.join(violations[:5])}"
        raise RuntimeError(msg)
    return Solution(problem=kind.name, method=method, exact=method in kind.exact_methods, status=status,
                    termination=termination, decision=decision, objective=objective,
                    bound=objective if bound == "objective" else bound, wall_s=time.perf_counter() - t0,
                    build_s=build_s, sense=kind.sense, log_summary=log_summary,
                    extra=kind.extra(problem, decision) if kind.extra else {})


def backend_solution(kind: ProblemKind, problem: Any, method: str, res: BackendResult, decision: Any,
                     bound: float | None, build_s: float, t0: float) -> Solution:
    """Turn a solver run into a Solution: checked decision and objective, or the status with no decision.

    For a maximization, an OPTIMAL claim whose checked objective is below the solver's bound (integrality
    tolerances) is downgraded to FEASIBLE with the reason recorded.
    """
    if decision is None:
        infeasible = res.status == SolutionStatus.INFEASIBLE
        return Solution(problem=kind.name, method=method, exact=True, status=res.status,
                        termination=res.termination, bound=None if infeasible else bound,
                        wall_s=time.perf_counter() - t0, build_s=build_s, sense=kind.sense,
                        reason="solver proved the model infeasible" if infeasible else "",
                        log_summary=res.log_summary)
    sol = checked_solution(kind, problem, method, decision, res.status, res.termination, bound=bound, t0=t0,
                           log_summary=res.log_summary, build_s=build_s)
    if (kind.sense == "max" and sol.status == SolutionStatus.OPTIMAL and bound is not None
            and sol.objective is not None and sol.objective < bound):
        sol.status = SolutionStatus.FEASIBLE
        sol.reason = f"exact objective {sol.objective} below the solver's bound {bound} (tolerance)"
    return sol


def enumerated_solution(kind: ProblemKind, problem: Any, method: str, decision: Any, t0: float,
                        log_summary: str) -> Solution:
    """Wrap the result of an exhaustive enumeration: OPTIMAL, bound equal to the checked objective."""
    return checked_solution(kind, problem, method, decision, SolutionStatus.OPTIMAL,
                            TerminationCondition.ENUMERATED, bound="objective", t0=t0, log_summary=log_summary)


def heuristic_solution(kind: ProblemKind, problem: Any, method: str, decision: Any, t0: float,
                       log_summary: str) -> Solution:
    """Wrap a heuristic's decision: FEASIBLE, no bound."""
    return checked_solution(kind, problem, method, decision, SolutionStatus.FEASIBLE,
                            TerminationCondition.HEURISTIC_DONE, bound=None, t0=t0, log_summary=log_summary)
