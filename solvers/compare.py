"""Run every method of one decision problem on one instance and tabulate them against the best proven bound."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chipdse.core.solution import Solution
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.hbm_packing import HBM_PACKING_METHODS, solve_hbm_packing
from chipdse.solvers.hbm_partition import HBM_PARTITION_METHODS, solve_hbm_partition
from chipdse.solvers.link_load import MAX_LINK_METHODS, solve_max_link_placement
from chipdse.solvers.mapping import MAPPING_METHODS, solve_mapping
from chipdse.solvers.placement import HEURISTIC_METHODS, PLACEMENT_METHODS, solve_placement

#: problem name -> (all methods, methods run by default, solve function)
PROBLEMS: dict[str, tuple[tuple[str, ...], tuple[str, ...], Callable[..., Solution]]] = {
    "placement": (PLACEMENT_METHODS, tuple(m for m in PLACEMENT_METHODS if m != "brute-force"), solve_placement),
    "hbm-partition": (HBM_PARTITION_METHODS, HBM_PARTITION_METHODS, solve_hbm_partition),
    "hbm-packing": (HBM_PACKING_METHODS, ("first-fit", "milp-highs"), solve_hbm_packing),
    "placement-max-link": (MAX_LINK_METHODS, (*HEURISTIC_METHODS, "layout-bnb", "milp-highs"),
                           solve_max_link_placement),
    "mapping": (MAPPING_METHODS, tuple(m for m in MAPPING_METHODS if m != "brute-force"), solve_mapping),
}


def validate_methods(problem_name: str, methods: Sequence[str] | None) -> list[str]:
    """Return the methods to run (the defaults when none are given).

    Raises
    ------
    ValueError
        Unknown problem or method; the message lists the valid ones.
    """
    if problem_name not in PROBLEMS:
        msg = f"PROBLEM must be one of {sorted(PROBLEMS)}, got {problem_name!r}"
        raise ValueError(msg)
    valid, default, _ = PROBLEMS[problem_name]
    chosen = list(dict.fromkeys(methods)) if methods else list(default)  # each method once, in the given order
    bad = [m for m in chosen if m not in valid]
    if bad:
        msg = f"unknown {problem_name} method(s) {bad}; valid: {list(valid)}"
        raise ValueError(msg)
    return chosen


def run_methods(problem_name: str, instance: Any, methods: Sequence[str] | None, config: SolverConfig
                ) -> list[Solution]:
    """Solve ``instance`` with each method; exact placement methods get the best decision found so far as their
    start, heuristics always start from scratch (their rows show what they find alone).

    Parameters
    ----------
    problem_name : str
        ``"placement"`` (HYDRA Eq. 2), ``"placement-max-link"`` (busiest NoI link under XY routing),
        ``"hbm-partition"`` or ``"mapping"``.
    instance : PlacementProblem | HbmPartitionProblem | MappingProblem
    methods : sequence of str, optional
        Default: every method except brute force.
    config : SolverConfig

    Returns
    -------
    list[Solution]
        In the order given.

    Raises
    ------
    ValueError
        Unknown problem or method (the message lists the valid ones).
    """
    chosen = validate_methods(problem_name, methods)
    solve = PROBLEMS[problem_name][2]
    sols: list[Solution] = []
    for m in chosen:
        if problem_name in ("placement", "placement-max-link"):
            found = [s for s in sols if s.objective is not None]
            heuristic = m in HEURISTIC_METHODS  # heuristics always from scratch: their rows show what they find
            hint = min(found, key=lambda s: s.objective).decision if found and not heuristic else None
            sols.append(solve(instance, m, config, seed=config.seed, hint=hint))
        else:
            sols.append(solve(instance, m, config))
    return sols


def comparison_rows(sols: list[Solution]) -> list[dict[str, Any]]:
    """Rows with keys method, exact, objective, bound, gap (own MILP gap), gap_to_best_bound, status, wall_s.

    ``gap_to_best_bound`` is |objective - tightest bound of any exact method| / |objective|.
    """
    sign = 1 if sols and sols[0].sense == "min" else -1
    bounds = [s.bound for s in sols if s.exact and s.bound is not None]
    best_bound = max(bounds, key=lambda v: sign * v) if bounds else None
    return [s.row(best_bound) for s in sols]
