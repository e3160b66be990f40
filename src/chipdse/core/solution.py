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
        """The solve's proven gap (:data:`PROVEN_GAP`): |objective - bound| / max(|objective|, 1e-9), ``None``
        without both."""
        return relative_gap(self.objective, self.bound)

    def row(self, best_bound: float | None = None) -> dict[str, Any]:
        """Return the comparison-table row: method, exact, objective, bound, gap (the proven gap,
        :data:`PROVEN_GAP`), ``gap_to_best_bound`` (the excess over ``best_bound``, :data:`EXCESS_OVER_BOUND`),
        status, ``termination`` (the limit or event that ended the solve), wall_s and ``reason`` (why there is no
        solution, or what limited it; "" when nothing to say)."""
        return {
            "method": self.method,
            "exact": self.exact,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "gap_to_best_bound": excess(self.objective, best_bound, self.sense),
            "status": self.status.value,
            "termination": self.termination.value,
            "wall_s": round(self.wall_s, 4),
            "reason": self.reason,
        }


PROVEN_GAP = "proven gap = |incumbent - bound| / |incumbent| of one exact solve (0 = proven optimal)"
"""The one definition of a solve's own gap (:func:`relative_gap`), quoted wherever it is printed."""
EXCESS_OVER_BEST = ("excess over best = (objective - best incumbent) / |best incumbent|, sign flipped for a "
                    "maximization: how much worse than the best solution any method found")
"""The one definition of a method's loss against the best known solution (:func:`excess`)."""
EXCESS_OVER_BOUND = ("excess over bound = (objective - best proven bound) / |best proven bound|, sign flipped for "
                     "a maximization: at most this much worse than the true optimum")
"""The one definition of a method's loss against the tightest proven bound (:func:`excess`); compare's
``gap_to_best_bound``."""


FLOAT_NOISE = 1e-12
"""Relative differences below this are rounding, not a gap (a few double-precision operations err by ~1e-15 each;
the solvers' own optimality tolerances are 1e-9 and coarser): printed as 0, not e.g. "1.5e-14%"."""


def _denoise(x: float) -> float:
    """``x``, or 0.0 when ``|x| <`` :data:`FLOAT_NOISE` (never -0.0)."""
    return 0.0 if abs(x) < FLOAT_NOISE else x + 0.0


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """The proven gap of one solve (:data:`PROVEN_GAP`).

    Parameters
    ----------
    objective, bound : float or None
        The solve's incumbent objective and its proven bound, in the problem's unit.

    Returns
    -------
    float or None
        |objective - bound| / max(|objective|, 1e-9) (a fraction, 0 = proven optimal), ``None`` if either is
        missing; below :data:`FLOAT_NOISE` it is 0 (the two differ only by rounding).
    """
    if objective is None or bound is None:
        return None
    return _denoise(abs(objective - bound) / max(abs(objective), 1e-9))


def excess(objective: float | None, reference: float | None, sense: str = "min") -> float | None:
    """How much worse ``objective`` is than ``reference`` (:data:`EXCESS_OVER_BEST` when the reference is the best
    incumbent found, :data:`EXCESS_OVER_BOUND` when it is the tightest proven bound).

    Parameters
    ----------
    objective, reference : float or None
        Values in the problem's unit (e.g. byte-hops/s, s, concurrent requests).
    sense : str
        ``"min"`` or ``"max"``: the problem's optimization sense.

    Returns
    -------
    float or None
        (objective - reference) / |reference| for ``"min"``, (reference - objective) / |reference| for ``"max"``
        (a fraction; 0.25 = 25% worse; negative = better than the reference); ``None`` if either is missing or
        the reference is 0; below :data:`FLOAT_NOISE` in magnitude it is 0.
    """
    if objective is None or reference is None or reference == 0:
        return None
    sign = 1.0 if sense == "min" else -1.0
    return _denoise(sign * (objective - reference) / abs(reference))
