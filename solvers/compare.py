"""Run the methods of one registered decision problem on one instance and tabulate them against the best bound."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chipdse.core.solution import Solution
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.registry import problem_record


def validate_methods(problem_name: str, methods: Sequence[str] | None, option: str = "--methods") -> list[str]:
    """Return the methods to run (the problem's defaults when none are given), each once, in the given order.

    ``option`` is the command-line option the methods came from, for the message (``--method`` for solve).

    Raises
    ------
    ValueError
        Unknown problem or method; the message lists the valid ones.
    """
    record = problem_record(problem_name)
    chosen = list(dict.fromkeys(methods)) if methods else list(record.default_methods)
    bad = [m for m in chosen if m not in record.methods]
    if bad:
        what = f"method {bad[0]!r}" if len(bad) == 1 else f"methods {bad}"
        msg = f"{option}: unknown {problem_name} {what}; valid: {list(record.methods)}"
        raise ValueError(msg)
    return chosen


def run_methods(problem_name: str, instance: Any, methods: Sequence[str] | None, config: SolverConfig
                ) -> list[Solution]:
    """Solve ``instance`` with each method of a registered problem (:mod:`solvers.registry`).

    Exact methods of a ``warm_start`` problem (the placements) get the best decision found so far as their start;
    heuristics always start from scratch (their rows show what they find alone).

    Parameters
    ----------
    problem_name : str
        A name in :data:`solvers.registry.PROBLEMS`.
    instance : Any
        The problem's instance (e.g. from the record's ``build``).
    methods : sequence of str, optional
        Default: the record's ``default_methods``.
    config : SolverConfig
        Work limit, wall cap, gap, threads; ``config.seed`` seeds the randomized heuristics.

    Returns
    -------
    list[Solution]
        In the order given.

    Raises
    ------
    ValueError
        Unknown problem or method (the message lists the valid ones).
    """
    record = problem_record(problem_name)
    sols: list[Solution] = []
    sign = 1 if record.sense == "min" else -1
    for m in validate_methods(problem_name, methods):
        found = [s for s in sols if s.objective is not None]
        start = record.warm_start and found and m not in record.heuristics
        hint = min(found, key=lambda s: sign * s.objective).decision if start else None
        sols.append(record.solve(instance, m, config, config.seed, hint))
    return sols


def comparison_rows(sols: list[Solution]) -> list[dict[str, Any]]:
    """Rows with keys method, exact, objective, bound, gap, gap_to_best_bound, status, termination, wall_s.

    ``gap`` is the solve's proven gap (:data:`chipdse.core.solution.PROVEN_GAP`); ``gap_to_best_bound`` is the
    excess over the tightest bound of any exact method (:data:`chipdse.core.solution.EXCESS_OVER_BOUND`), the
    report's "excess over bound" column.
    """
    sign = 1 if sols and sols[0].sense == "min" else -1
    bounds = [s.bound for s in sols if s.exact and s.bound is not None]
    best_bound = max(bounds, key=lambda v: sign * v) if bounds else None
    return [s.row(best_bound) for s in sols]
