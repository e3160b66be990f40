"""The thermally constrained placement (formulations/placement_thermal.py) through HiGHS, returning a ``Solution``.

One exact method, ``"milp-highs"``: the RLT-1 placement MILP with the per-cell temperature rows. The tests check it
against an enumeration of every placement on tiny grids.
"""

from __future__ import annotations

import time

from chipdse.core.solution import Solution
from chipdse.formulations.placement import placement_infeasibility, set_placement_start
from chipdse.formulations.placement_thermal import (
    ThermalPlacementProblem,
    build_thermal_placement_milp,
    check_thermal_placement,
    thermal_infeasibility,
)
from chipdse.solvers.common import ProblemKind, infeasible_solution
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import PlacementInputError, settle_placement_milp

THERMAL_PLACEMENT_METHODS = ("milp-highs",)
KIND = ProblemKind("placement-thermal", "min", frozenset(THERMAL_PLACEMENT_METHODS), check_thermal_placement)
"""Checker (Eq. 2 plus the temperature limit), sense and exact methods, for :func:`solvers.common.settle`."""


def solve_thermal_placement(problem: ThermalPlacementProblem, method: str = "milp-highs",
                            config: SolverConfig | None = None, hint: dict[int, str] | None = None) -> Solution:
    """Solve the thermally constrained placement and return a checked, normalized ``Solution``.

    Parameters
    ----------
    problem : ThermalPlacementProblem
    method : str
        One of :data:`THERMAL_PLACEMENT_METHODS`.
    config : SolverConfig, optional
        Work limit, wall cap, gap, threads and seed (default ``SolverConfig()``).
    hint : dict[int, str], optional
        A placement used as the MIP start when it meets the limit (e.g. the unconstrained optimum; ignored
        otherwise).

    Returns
    -------
    Solution
        ``problem="placement-thermal"``; ``objective`` is the checker's Eq. 2 value in bytes x hops, ``bound`` in
        the same units. INFEASIBLE with a reason when the grid cannot hold the chiplets or a single chiplet already
        breaks the limit (:func:`~chipdse.formulations.placement_thermal.thermal_infeasibility`), or when HiGHS
        proves that no placement meets it.

    Raises
    ------
    PlacementInputError
        For an unknown method.
    SpecError
        Malformed thermal data.

    References
    ----------
    HYDRA Eq. 2 (objective); issue 17 item 3 (peak temperature through a linear model as a constraint).
    """
    if method not in THERMAL_PLACEMENT_METHODS:
        msg = f"thermal placement method must be one of {THERMAL_PLACEMENT_METHODS}, got {method!r}"
        raise PlacementInputError(msg)
    config = config or SolverConfig()
    t0 = time.perf_counter()
    reason = placement_infeasibility(problem.base) or thermal_infeasibility(problem)
    if reason is not None:
        return infeasible_solution(KIND, method, reason, t0)
    start = hint if hint is not None and not check_thermal_placement(problem, hint)[1] else None
    model = build_thermal_placement_milp(problem)
    if start is not None:
        set_placement_start(model, start)
    return settle_placement_milp(KIND, problem, model, method, config, t0, start, time.perf_counter() - t0)
