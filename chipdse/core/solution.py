"""One normalized result type for every method (exact or heuristic) on every decision problem.

As in linopy's ``Result``/``Status``: the termination reason and the solution status are two enums, the
objective and bound are ``None`` when there is none, and infeasible / time-limit outcomes are results,
not exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class SolutionStatus(StrEnum):
    """What is known about the returned decision."""

    OPTIMAL = "optimal"
    """Proven optimal (gap within the configured tolerance)."""
    FEASIBLE = "feasible"
    """A feasible incumbent, optimality not proven (work limit or wall cap, or a heuristic)."""
    INFEASIBLE = "infeasible"
    """Proven infeasible; ``reason`` names the violated capacity."""
    NO_SOLUTION = "no_solution"
    """No feasible solution found within the limit (nothing proven)."""
    UNKNOWN = "unknown"
    """The solver returned a status chipdse does not recognize."""


class TerminationCondition(StrEnum):
    """Why the method stopped."""

    OPTIMAL = "optimal"
    WORK_LIMIT = "work_limit"
    """Stopped on the deterministic work limit (``SolverConfig.work_limit``): reproducible on any load."""
    TIME_LIMIT = "time_limit"
    """Stopped on the wall-clock safety cap (``SolverConfig.time_limit_s``): depends on machine load."""
    INFEASIBLE = "infeasible"
    HEURISTIC_DONE = "heuristic_done"
    ENUMERATED = "enumerated"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Solution:
    """Result of one method on one problem instance (immutable: derive a changed copy with ``dataclasses.replace``).

    Attributes
    ----------
    problem : str
        ``"placement"``, ``"hbm-partition"``, ``"mapping"``, ...
    method : str
        E.g. ``"milp-highs"``, ``"cpsat"``, ``"hydra-greedy"``, ``"round-robin"``, ``"brute-force"``.
    exact : bool
        True for methods that can prove optimality (MILP, CP-SAT, brute force).
    status, termination : SolutionStatus, TerminationCondition
    decision : Any
        The decision in the problem's own decoded form (e.g. ``dict[cell, type]``), ``None`` without one.
    objective : float | None
        Objective of ``decision`` as recomputed by the problem's checker, ``None`` without a decision.
    bound : float | None
        Best proven bound (lower bound for minimization), ``None`` for heuristics.
    wall_s : float
        Wall time of the solve in seconds (model build included, reported separately in ``build_s``).
    build_s : float
        Seconds spent building the model (0 for heuristics).
    sense : str
        ``"min"`` or ``"max"``.
    reason : str
        For infeasible outcomes: which capacity is violated; otherwise a short note.
    log_summary : str
        The solver's own one-line summary.
    """

    problem: str
    method: str
    exact: bool
    status: SolutionStatus
    termination: TerminationCondition
    decision: Any = None
    objective: float | None = None
    bound: float | None = None
    wall_s: float = 0.0
    build_s: float = 0.0
    sense: str = "min"
    reason: str = ""
    log_summary: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """Relative gap |objective - bound| / max(|objective|, 1e-9), ``None`` without both."""
        return relative_gap(self.objective, self.bound)

    def row(self, best_bound: float | None = None) -> dict[str, Any]:
        """Return the comparison-table row: method, exact, objective, bound, gap, gap to ``best_bound``."""
        return {
            "method": self.method,
            "exact": self.exact,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "gap_to_best_bound": relative_gap(self.objective, best_bound),
            "status": self.status.value,
            "wall_s": round(self.wall_s, 4),
        }


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """Return |objective - bound| / max(|objective|, 1e-9), or ``None`` if either is missing."""
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(abs(objective), 1e-9)
