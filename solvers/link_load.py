"""Placement for the maximum NoI link load under XY routing (``formulations.link_load``), one entry point.

``"milp-highs"``: the RLT MILP with the min-max objective through Pyomo + HiGHS (exact; warm-started from the
best heuristic); ``"brute-force"``: enumeration (tiny grids); heuristics: the hop-objective placements of
``solvers.placement`` (``hydra-greedy``, ``round-robin``, ``random``, ``local-search``) scored on link load.
"""

from __future__ import annotations

import time

import pyomo.environ as pyo

from chipdse.solution import Solution, SolutionStatus, TerminationCondition, relative_gap
from formulations.link_load import brute_force_max_link, build_max_link_milp, objective_value
from formulations.placement import PlacementProblem, decode_placement_milp, placement_infeasibility, set_placement_start
from solvers.backends import solve_pyomo
from solvers.config import SolverConfig
from solvers.placement import HEURISTIC_METHODS, PlacementInputError, solve_placement

MAX_LINK_METHODS = ("milp-highs", "brute-force", *HEURISTIC_METHODS)
PROBLEM = "placement-max-link"


def solve_max_link_placement(problem: PlacementProblem, method: str, config: SolverConfig | None = None, *,
                             hop_weight: float = 0.0, seed: int = 0,
                             hint: dict[int, str] | None = None) -> Solution:
    """Place chiplets minimizing ``max link load + hop_weight x hop-weighted volume`` under XY routing.

    Parameters
    ----------
    problem : PlacementProblem
    method : str
        One of :data:`MAX_LINK_METHODS`.
    config : SolverConfig, optional
    hop_weight : float
        Weight of HYDRA Eq. 2's hop-weighted volume next to the max link load (0 = max link load alone).
    seed : int
        Seed of the randomized heuristics.
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
        An unknown method.
    """
    if method not in MAX_LINK_METHODS:
        msg = f"unknown max-link placement method {method!r}; expected one of {MAX_LINK_METHODS}"
        raise PlacementInputError(msg)
    config = config or SolverConfig()
    exact = method in ("milp-highs", "brute-force")
    t0 = time.perf_counter()
    why = placement_infeasibility(problem)
    if why is not None:
        return Solution(PROBLEM, method, exact, SolutionStatus.INFEASIBLE, TerminationCondition.INFEASIBLE,
                        reason=why, wall_s=time.perf_counter() - t0)
    if method == "brute-force":
        decision, value = brute_force_max_link(problem, hop_weight)
        sol = Solution(PROBLEM, method, True, SolutionStatus.OPTIMAL, TerminationCondition.ENUMERATED,
                       decision=decision, objective=value, bound=value)
    elif method in HEURISTIC_METHODS:
        base = solve_placement(problem, method, config, seed=seed)
        sol = Solution(PROBLEM, method, False, base.status, base.termination, decision=base.decision,
                       objective=None if base.decision is None else objective_value(problem, base.decision,
                                                                                    hop_weight))
    else:
        if hint is None:
            starts = [solve_placement(problem, m, config, seed=seed).decision for m in HEURISTIC_METHODS]
            hint = min((d for d in starts if d is not None), key=lambda d: objective_value(problem, d, hop_weight))
        m = build_max_link_milp(problem, hop_weight)
        set_placement_start(m, hint)
        build_s = time.perf_counter() - t0
        res = solve_pyomo(m, config, warm_start=True)
        decision = decode_placement_milp(m) if res.has_solution else None
        bound = None if res.bound is None else res.bound * pyo.value(m.volume_unit)
        if decision is None:
            return Solution(PROBLEM, method, True, res.status, res.termination, wall_s=time.perf_counter() - t0,
                            build_s=build_s, reason=f"no feasible solution found in {config.time_limit_s:g} s")
        value = objective_value(problem, decision, hop_weight)
        if bound is not None:
            bound = min(bound, value)
        gap = relative_gap(value, bound)
        proven = res.termination == TerminationCondition.OPTIMAL or (gap is not None and gap <= config.rel_gap)
        status = SolutionStatus.OPTIMAL if proven else SolutionStatus.FEASIBLE  # HiGHS also stops at its
        # absolute gap (1e-6), which on loads below 1 is a relative gap above rel_gap
        sol = Solution(PROBLEM, method, True, status, res.termination, decision=decision, objective=value,
                       bound=bound, build_s=build_s)
    sol.wall_s = time.perf_counter() - t0
    return sol
