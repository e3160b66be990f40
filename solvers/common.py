"""The one rule that turns a method's decision into a checked :class:`~chipdse.core.solution.Solution`.

Every method of every decision problem ends in :func:`settle`: the decision goes through the problem's
solver-independent checker (STYLE.md item 8), the objective reported is the checker's, and the status, bound and
gap follow from what kind of method produced the decision:

* a **heuristic** gives FEASIBLE with no bound (NO_SOLUTION with the reason when it found nothing);
* an **enumeration** (``"brute-force"``, ``"enumeration"``) gives OPTIMAL with the bound equal to the objective;
* an **exact solver** (MILP, CP-SAT, a decomposition) gives OPTIMAL only when the relative gap between the checked
  objective and its proven bound is within ``SolverConfig.rel_gap``, else FEASIBLE with the gap; a start (MIP start,
  CP-SAT hint) that the solver did not improve on is returned as the incumbent, never "no solution".

A decision with violations is a bug in the method (``RuntimeError``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from chipdse.core.solution import Solution, SolutionStatus, TerminationCondition
from chipdse.solvers.backends import BackendResult
from chipdse.solvers.config import SolverConfig, limit_reason

ENUMERATION_METHODS = frozenset({"brute-force", "enumeration"})
"""Method names that enumerate every decision: exact by construction, bound = objective."""

BOUND_TOLERANCE = 1e-6
"""Relative amount (of ``max(|objective|, 1)``) by which a solver's bound may sit on the wrong side of the checked
objective (solver feasibility / integrality tolerances); the bound is then clipped to the objective."""


@dataclass(frozen=True)
class ProblemKind:
    """What :func:`settle` needs to know about one decision problem.

    Attributes
    ----------
    name : str
        ``Solution.problem`` value, e.g. ``"mapping"``.
    sense : str
        ``"min"`` or ``"max"``.
    exact_methods : frozenset[str]
        Methods that can prove optimality (solvers and enumerations); every other method is a heuristic.
    check : callable(problem, decision) -> (objective, violations)
        The problem's checker.
    extra : callable(problem, decision) -> dict, optional
        Extra decoded information stored in ``Solution.extra``.
    unit : str
        Unit of the objective (and bound), for tables: ``"s"``, ``"byte-hops/s"``, ``"requests"``, ...
    """

    name: str
    sense: str
    exact_methods: frozenset[str]
    check: Callable[[Any, Any], tuple[float, list[str]]]
    extra: Callable[[Any, Any], dict[str, Any]] | None = None
    unit: str = ""


Runner = Callable[[Any, str, SolverConfig, float], Solution]
"""One method of a problem: ``(problem, method, config, t0) -> Solution`` (``t0`` the solve's start time)."""


@dataclass(frozen=True)
class Methods:
    """Every method of one decision problem behind one entry point, :meth:`solve`.

    Attributes
    ----------
    kind : ProblemKind
        Name, sense, exact methods and checker.
    runners : dict[str, Runner]
        Method name -> the function that runs it and returns :func:`settle`'s Solution; the key order is the
        order the methods are listed in.
    validate : callable(problem) -> Any, optional
        Raises ``SpecError`` on malformed problem data (before any method runs).
    infeasibility : callable(problem) -> str | None, optional
        Why no decision can exist (the violated capacity), or ``None``; checked before any method runs.
    label : str
        The problem's name in error messages (default ``kind.name``).
    """

    kind: ProblemKind
    runners: dict[str, Runner]
    validate: Callable[[Any], Any] | None = None
    infeasibility: Callable[[Any], str | None] | None = None
    label: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The method names, in order."""
        return tuple(self.runners)

    def split(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(exact methods, heuristics), each in :attr:`names` order."""
        exact = self.kind.exact_methods
        return tuple(m for m in self.runners if m in exact), tuple(m for m in self.runners if m not in exact)

    def solve(self, problem: Any, method: str, config: SolverConfig | None = None) -> Solution:
        """Solve ``problem`` with ``method`` and return the checked Solution of :func:`settle`.

        Parameters
        ----------
        problem : Any
            An instance of the problem (its formulation's problem type).
        method : str
            One of :attr:`names`.
        config : SolverConfig, optional
            Work limit, wall cap, relative gap, threads and seed of the exact models (default ``SolverConfig()``).

        Returns
        -------
        Solution
            ``problem=kind.name``; the checker's objective; status, bound and gap by :func:`settle`'s rule; an
            instance :attr:`infeasibility` rejects gives INFEASIBLE with the reason and no decision.

        Raises
        ------
        ValueError
            An unknown method (the message lists them), or a method's own size limit (brute force).
        SpecError
            Malformed problem data.
        RuntimeError
            A method returned a decision the checker rejects (a bug).
        """
        if method not in self.runners:
            msg = f"unknown {self.label or self.kind.name} method {method!r}; expected one of {self.names}"
            raise ValueError(msg)
        config, t0 = config or SolverConfig(), time.perf_counter()
        if self.validate is not None:
            self.validate(problem)
        why = self.infeasibility(problem) if self.infeasibility is not None else None
        if why is not None:
            return infeasible_solution(self.kind, method, why, t0)
        return self.runners[method](problem, method, config, t0)


def enumerate_best(kind: ProblemKind, problem: Any, decisions: Iterable[Any],
                   tie: Callable[[Any], Any] | None = None) -> tuple[Any, int]:
    """Score every decision with the checker and return the best feasible one and the number scored.

    Ties go to the smaller ``tie(decision)`` when given, else to the first in ``decisions``' order; ``None`` is
    returned as the decision when none is feasible. Exact by construction, for instances small enough to list.
    """
    sign = 1 if kind.sense == "min" else -1
    best, best_key, count = None, None, 0
    for decision in decisions:
        count += 1
        objective, violations = kind.check(problem, decision)
        if violations:
            continue
        key = (sign * objective, tie(decision) if tie is not None else 0)
        if best_key is None or key < best_key:
            best, best_key = decision, key
    return best, count


def heuristic_runner(kind: ProblemKind, heuristic: Callable[[Any], Any], note: str = "",
                     stuck: str = "no decision found") -> Runner:
    """A :data:`Runner` for ``heuristic(problem) -> decision | None`` (``stuck`` is the reason of ``None``)."""

    def run(problem: Any, method: str, config: SolverConfig, t0: float) -> Solution:
        decision = heuristic(problem)
        return settle(kind, problem, method, decision, config, t0, log_summary=note or f"{method}: done",
                      reason="" if decision is not None else stuck)

    return run


def enumeration_runner(kind: ProblemKind, enumerate_all: Callable[[Any], tuple[Any, int]], what: str) -> Runner:
    """A :data:`Runner` for ``enumerate_all(problem) -> (best decision, number enumerated)``; ``what`` names the
    enumerated things in the log line (e.g. ``"assignments"``)."""

    def run(problem: Any, method: str, config: SolverConfig, t0: float) -> Solution:
        decision, count = enumerate_all(problem)
        return settle(kind, problem, method, decision, config, t0, log_summary=f"{method}: {count:,} {what}")

    return run


def infeasible_solution(kind: ProblemKind, method: str, reason: str, t0: float) -> Solution:
    """Return the INFEASIBLE result found before solving (``reason`` names the capacity); no decision, no bound."""
    return Solution(problem=kind.name, method=method, exact=method in kind.exact_methods,
                    status=SolutionStatus.INFEASIBLE, termination=TerminationCondition.INFEASIBLE,
                    wall_s=time.perf_counter() - t0, sense=kind.sense, reason=reason,
                    log_summary="infeasible before solving")


def _better(kind: ProblemKind, a: float, b: float) -> bool:
    """True when objective ``a`` is strictly better than ``b`` under the problem's sense."""
    return a < b if kind.sense == "min" else a > b


def _checked(kind: ProblemKind, problem: Any, method: str, decision: Any) -> float:
    """Return the checker's objective of ``decision``; raise ``RuntimeError`` on violations (a bug)."""
    objective, violations = kind.check(problem, decision)
    if violations:
        msg = f"{method} returned an infeasible {kind.name} decision: {'; '.join(violations[:5])}"
        raise RuntimeError(msg)
    return objective


def _settled_bound(kind: ProblemKind, method: str, objective: float, bound: float | None) -> float | None:
    """Clip a bound that sits on the wrong side of the objective within :data:`BOUND_TOLERANCE`.

    Raises
    ------
    RuntimeError
        The bound claims better than the checked objective by more than the tolerance (a bug).
    """
    if bound is None or not _better(kind, objective, bound):  # a valid bound is never better than a decision
        return bound
    if abs(bound - objective) > BOUND_TOLERANCE * max(abs(objective), 1.0):
        msg = f"{method}: bound {bound} exceeds the checked objective {objective}"
        raise RuntimeError(msg)
    return objective


def settle(kind: ProblemKind, problem: Any, method: str, decision: Any, config: SolverConfig, t0: float, *,
           reported: BackendResult | None = None, bound: float | None = None, start: Any = None,
           termination: TerminationCondition | None = None, unit: float = 1.0, resolution: float = 0.0,
           build_s: float = 0.0,
           log_summary: str = "", reason: str = "", extra: dict[str, Any] | None = None) -> Solution:
    """Settle status, bound and gap of one method's outcome by the one rule of this module.

    Parameters
    ----------
    kind : ProblemKind
        Name, sense, exact methods and checker of the problem.
    problem : Any
        The instance ``decision`` is checked against.
    method : str
        The method's name: an enumeration (:data:`ENUMERATION_METHODS`), another exact method, or a heuristic.
    decision : Any
        The decoded decision, ``None`` when the method found none.
    config : SolverConfig
        ``rel_gap`` is the tolerance under which an exact solver's gap counts as optimal; the limit that ended the
        solve (work limit or wall cap, by termination) goes into the no-solution reason.
    t0 : float
        ``time.perf_counter()`` at the start of the solve (``wall_s`` is measured from it).
    reported : BackendResult, optional
        What the solver said (status, termination, log); for exact solvers only.
    bound : float, optional
        The solver's proven bound in the checker's units (lower for ``"min"``, upper for ``"max"``).
    start : Any, optional
        A complete decision given to the solver as its start (MIP start, CP-SAT hint). When it passes the checker
        and the solver returns no decision, or a worse one, the start is the incumbent.
    termination : TerminationCondition, optional
        Termination of an exact method without a ``reported`` result (default OPTIMAL when the gap is closed,
        WORK_LIMIT otherwise).
    unit : float
        Objective units per unit of the solver model's objective (scaled models), so that the solver's absolute
        stopping gap ``reported.abs_gap`` counts in the checker's units.
    resolution : float
        Largest amount, in objective units, by which the model's rounded coefficients (CP-SAT time ticks) can
        hold its proven optimum apart from the true one; 0 for models with exact coefficients.
    build_s : float
        Seconds spent building the model.
    log_summary, reason : str
        The solver's one-line summary and a note (the reason of a missing decision is filled in when empty).
    extra : dict, optional
        Stored in ``Solution.extra`` after the problem's own ``kind.extra`` entries; with ``reported``,
        ``work_units`` (the work units the solver used) comes first.

    Returns
    -------
    Solution
        Heuristic: FEASIBLE, ``bound=None`` (NO_SOLUTION without a decision). Enumeration: OPTIMAL,
        ``bound=objective``. Exact solver: OPTIMAL iff ``|objective - bound| <= config.rel_gap * |objective|
        + reported.abs_gap * unit + resolution`` (the configured relative gap, the solver's absolute stopping gap
        and the model's rounding), otherwise FEASIBLE; without a decision (and no feasible start) the solver's
        status (INFEASIBLE, NO_SOLUTION, UNKNOWN) with the bound it proved.

    Raises
    ------
    RuntimeError
        The decision violates the problem's constraints, or the bound claims better than the
        checked objective beyond :data:`BOUND_TOLERANCE` (bugs, not user errors).
    """
    exact = method in kind.exact_methods
    base = {"problem": kind.name, "method": method, "exact": exact, "sense": kind.sense, "build_s": build_s,
            "log_summary": log_summary or (reported.log_summary if reported else "")}
    solver = exact and method not in ENUMERATION_METHODS
    if reported is not None:
        extra = {"work_units": reported.work, **(extra or {})}
    stopped = reported.termination if reported is not None else termination
    start_obj, start_violations = kind.check(problem, start) if solver and start is not None else (None, [""])
    if not start_violations:
        if decision is None or _better(kind, start_obj, _checked(kind, problem, method, decision)):
            what = "no solution" if decision is None else "a worse solution"
            limit = limit_reason(config, stopped)
            reason = reason or f"{method} found {what} within its {limit}; its start is reported"
            decision = start
    if decision is None:
        status = reported.status if reported is not None else SolutionStatus.NO_SOLUTION
        if not exact:
            term = TerminationCondition.HEURISTIC_DONE
        else:
            term = reported.termination if reported is not None else (termination or TerminationCondition.UNKNOWN)
        if status == SolutionStatus.INFEASIBLE:
            reason, bound = reason or "solver proved the model infeasible", None
        elif not reason and status == SolutionStatus.NO_SOLUTION:
            reason = (f"no feasible solution found within the {limit_reason(config, stopped)}" if solver
                      else "no decision found")
        return Solution(**base, status=status, termination=term, bound=bound if solver else None,
                        wall_s=time.perf_counter() - t0, reason=reason, extra=dict(extra or {}))
    objective = _checked(kind, problem, method, decision)
    if not exact:
        status, term, bound = SolutionStatus.FEASIBLE, TerminationCondition.HEURISTIC_DONE, None
    elif not solver:
        status, term, bound = SolutionStatus.OPTIMAL, TerminationCondition.ENUMERATED, objective
    else:
        bound = _settled_bound(kind, method, objective, bound)
        slack = resolution + (reported.abs_gap * unit if reported is not None else 0.0)
        proven = bound is not None and abs(objective - bound) <= (
            (config.rel_gap + 1e-9) * max(abs(objective), 1e-9) + slack)
        status = SolutionStatus.OPTIMAL if proven else SolutionStatus.FEASIBLE
        if reported is not None:
            term = reported.termination
        else:
            term = termination or (TerminationCondition.OPTIMAL if proven else TerminationCondition.WORK_LIMIT)
    info = kind.extra(problem, decision) if kind.extra else {}
    return Solution(**base, status=status, termination=term, decision=decision, objective=objective, bound=bound,
                    wall_s=time.perf_counter() - t0, reason=reason, extra={**info, **(extra or {})})
