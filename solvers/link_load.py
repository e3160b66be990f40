"""Placement for the maximum NoI link load under XY routing (``formulations.link_load``), one entry point.

``"layout-bnb"``: exact search over HBM stack layouts with a linear model per layout
(``solvers.link_load_decomp``; proves the default B* in about a minute); ``"milp-highs"``: the RLT MILP with the
min-max objective through Pyomo + HiGHS (exact; warm-started from the best heuristic); ``"brute-force"``:
enumeration (tiny grids); heuristics: the hop-objective placements of ``solvers.placement`` (``hydra-greedy``,
``round-robin``, ``random``, ``local-search``) scored on link load.
"""

from __future__ import annotations

import dataclasses
import time

from chipdse.core.solution import Solution, TerminationCondition
from chipdse.formulations.link_load import brute_force_max_link, build_max_link_milp, objective_value
from chipdse.formulations.placement import (
    PlacementProblem,
    check_placement,
    decode_placement_milp,
    placement_infeasibility,
    set_placement_start,
)
from chipdse.solvers.backends import model_value, solve_pyomo
from chipdse.solvers.common import ProblemKind, infeasible_solution, settle
from chipdse.solvers.config import SolverConfig, limit_reason
from chipdse.solvers.link_load_decomp import solve_max_link_by_layouts
from chipdse.solvers.placement import HEURISTIC_METHODS, PlacementInputError, solve_placement

MAX_LINK_EXACT_METHODS = ("layout-bnb", "milp-highs", "brute-force")
MAX_LINK_METHODS = (*MAX_LINK_EXACT_METHODS, *HEURISTIC_METHODS)
PROBLEM = "placement-max-link"


def check_max_link(problem: PlacementProblem, decision: dict[int, str]) -> tuple[float, list[str]]:
    """The busiest link's load under XY routing (bytes per unit of work, ``hop_weight`` 0) and the placement's
    violations (:func:`formulations.placement.check_placement`): the checker of ``placement-max-link``."""
    return objective_value(problem, decision), check_placement(problem, decision)[1]


KIND = ProblemKind(PROBLEM, "min", frozenset(MAX_LINK_EXACT_METHODS), check_max_link, unit="B/s")
"""Checker, sense and exact methods of ``placement-max-link`` as registered (no ``hop_weight``, no ``hop_limit``)."""


def solve_max_link_placement(problem: PlacementProblem, method: str, config: SolverConfig | None = None, *,
                             hop_weight: float = 0.0, hop_limit: float | None = None, seed: int = 0,
                             hint: dict[int, str] | None = None) -> Solution:
    """Place chiplets minimizing ``max link load + hop_weight x hop-weighted volume`` under XY routing.

    ``problem``, ``config`` and ``seed`` are as in :func:`solvers.placement.solve_placement`; ``method`` is one of
    :data:`MAX_LINK_METHODS`.

    Parameters
    ----------
    hop_weight : float
        Weight of HYDRA Eq. 2's hop-weighted volume next to the max link load (0 = max link load alone).
    hop_limit : float, optional
        Only placements with Eq. 2 <= hop_limit (bytes x hops) are feasible; with the proven Eq. 2 optimum (see
        :func:`solve_lexicographic`) the pair is lexicographic. Exact methods only.
    hint : dict[int, str], optional
        MIP start for ``milp-highs`` (default: the best heuristic placement).

    Returns
    -------
    Solution
        ``objective`` recomputed by :func:`formulations.link_load.objective_value` (bytes per unit of work),
        ``bound`` proven by HiGHS or brute force; ``status`` infeasible with the violated capacity as
        ``reason`` when no placement exists.

    Raises
    ------
    PlacementInputError
        An unknown method, or ``hop_limit`` with a heuristic.
    """
    if method not in MAX_LINK_METHODS:
        msg = f"unknown max-link placement method {method!r}; expected one of {MAX_LINK_METHODS}"
        raise PlacementInputError(msg)
    config = config or SolverConfig()
    if hop_limit is not None:
        if method in HEURISTIC_METHODS:
            msg = f"hop_limit applies to the exact methods (milp-highs, brute-force), not {method!r}"
            raise PlacementInputError(msg)
        problem = dataclasses.replace(problem, model_volume_floor=0.0)

    def checker(p: PlacementProblem, d: dict[int, str]) -> tuple[float, list[str]]:
        hops, violations = check_placement(p, d)
        if hop_limit is not None and hops > hop_limit * (1 + 1e-9):
            violations = [*violations, f"hop-weighted volume {hops:.6g} exceeds the limit {hop_limit:.6g}"]
        return objective_value(p, d, hop_weight), violations

    kind = dataclasses.replace(KIND, check=checker)
    t0 = time.perf_counter()
    why = placement_infeasibility(problem)
    if why is not None:
        return infeasible_solution(kind, method, why, t0)
    if method == "layout-bnb":
        if hop_weight or hop_limit is not None or problem.distance is not None:
            msg = "layout-bnb minimizes the busiest link alone on a grid (no hop_weight, hop_limit or distance)"
            raise PlacementInputError(msg)
        return _solve_layout_bnb(problem, kind, config, seed, hint, t0)
    if method == "brute-force":
        decision, _ = brute_force_max_link(problem, hop_weight, hop_limit=hop_limit)
        return settle(kind, problem, method, decision, config, t0, log_summary="enumerated every placement")
    if method in HEURISTIC_METHODS:
        base = solve_placement(problem, method, config, seed=seed)
        return settle(kind, problem, method, base.decision, config, t0, log_summary=f"{method} (hop objective)",
                      reason="" if base.decision is not None else base.reason or "no placement found")
    if hint is None and hop_limit is None:
        hint = _best_heuristic(problem, config, seed, hop_weight)
    m = build_max_link_milp(problem, hop_weight, hop_limit)
    if hint is not None:
        set_placement_start(m, hint)
    build_s = time.perf_counter() - t0
    res = solve_pyomo(m, config, warm_start=hint is not None)
    decision = decode_placement_milp(m) if res.has_solution else None
    unit = model_value(m.volume_unit)
    bound = None if res.bound is None else res.bound * unit
    if decision is not None and bound is not None:  # the reduced-volume model's bound may sit a hair above
        bound = min(bound, objective_value(problem, decision, hop_weight))
    return settle(kind, problem, method, decision, config, t0, reported=res, bound=bound, start=hint, unit=unit,
                  build_s=build_s)


def _best_heuristic(problem: PlacementProblem, config: SolverConfig, seed: int, hop_weight: float = 0.0,
                    also: dict[int, str] | None = None) -> dict[int, str] | None:
    """The placement of least ``objective_value`` among the hop-objective heuristics (and ``also``), or None."""
    starts = [solve_placement(problem, m, config, seed=seed).decision for m in HEURISTIC_METHODS]
    starts = [d for d in [*starts, also] if d is not None]
    return min(starts, key=lambda d: objective_value(problem, d, hop_weight)) if starts else None


def solve_lexicographic(problem: PlacementProblem, config: SolverConfig | None = None) -> tuple[Solution, Solution]:
    """Lexicographic pair: the least hop-weighted volume (HYDRA Eq. 2, proven by ``hbm-enum``), then the least
    busy link among the placements that keep it.

    Returns
    -------
    (Solution, Solution)
        The Eq. 2 solution, and the max-link solution under ``hop_limit`` = its objective (``milp-highs``,
        started from the Eq. 2 placement). When Eq. 2 is not proven, the limit is its incumbent and the second
        stage is lexicographic only relative to that placement.
    """
    config = config or SolverConfig()
    first = solve_placement(problem, "hbm-enum", config)
    if first.decision is None:
        return first, first
    second = solve_max_link_placement(problem, "milp-highs", config, hop_limit=first.objective,
                                      hint=first.decision)
    return first, second


def _solve_layout_bnb(problem: PlacementProblem, kind: ProblemKind, config: SolverConfig, seed: int,
                      hint: dict[int, str] | None, t0: float) -> Solution:
    """Run ``solvers.link_load_decomp`` from the best heuristic (or ``hint``) and settle its result."""
    start = _best_heuristic(problem, config, seed, also=hint)
    res = solve_max_link_by_layouts(problem, config, start=start, t0=t0)
    summary = (f"layout-bnb: {res['level1']} level-1 layouts, {res['layouts']} LPs, {res['milps']} MILPs, "
               f"{res['closed']} closed with every volume, {res['work_units']:.3g} work units")
    if res["decision"] is None:
        return settle(kind, problem, "layout-bnb", None, config, t0, log_summary=summary)
    term = TerminationCondition.OPTIMAL if res["proven"] else res["stopped"] or TerminationCondition.WORK_LIMIT
    reason = "" if res["proven"] else limit_reason(config, term, summary)
    return settle(kind, problem, "layout-bnb", res["decision"], config, t0, bound=min(res["bound"], res["objective"]),
                  termination=term, log_summary=summary, reason=reason, extra={"work_units": res["work_units"]})
