"""The thermally constrained placement (formulations/placement_thermal.py) through HiGHS, returning a ``Solution``.

One exact method, ``"milp-highs"``: the RLT-1 placement MILP with the per-cell temperature rows, and one heuristic,
``"thermal-repair"``: pairwise swaps from a start (the unconstrained optimum), first bringing the peak under the limit,
then lowering Eq. 2 while keeping it there; its result is the MILP's start when the given hint breaks the limit.
The tests check both against an enumeration of every placement on tiny grids.
"""

from __future__ import annotations

import time

import numpy as np

from chipdse.core.solution import Solution
from chipdse.formulations.placement import (
    active_types,
    allowed_cells,
    manhattan,
    placement_infeasibility,
    set_placement_start,
    volume_table,
)
from chipdse.formulations.placement_thermal import (
    TEMPERATURE_TOLERANCE_K,
    ThermalPlacementProblem,
    build_thermal_placement_milp,
    cell_temperatures_C,
    check_thermal_placement,
    thermal_infeasibility,
)
from chipdse.solvers.common import ProblemKind, infeasible_solution, settle
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import PlacementInputError, settle_placement_milp

THERMAL_PLACEMENT_METHODS = ("milp-highs", "thermal-repair")
KIND = ProblemKind("placement-thermal", "min", frozenset({"milp-highs"}), check_thermal_placement, unit="byte-hops/s")
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
        A complete placement (e.g. the unconstrained optimum): the MIP start when it meets the limit, else the
        start of ``"thermal-repair"``, whose result is then the MIP start. ``"thermal-repair"`` needs it.

    Returns
    -------
    Solution
        ``problem="placement-thermal"``; ``objective`` is the checker's Eq. 2 value in bytes x hops, ``bound`` in
        the same units. INFEASIBLE with a reason when the grid cannot hold the chiplets or a single chiplet already
        breaks the limit (:func:`~chipdse.formulations.placement_thermal.thermal_infeasibility`), or when HiGHS
        proves that no placement meets it; ``"thermal-repair"`` has no bound and NO_SOLUTION when its swaps cannot
        bring the peak under the limit.

    Raises
    ------
    PlacementInputError
        For an unknown method, or ``"thermal-repair"`` without a hint.
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
    if method == "thermal-repair":
        if hint is None:
            msg = "thermal-repair needs a start placement (hint)"
            raise PlacementInputError(msg)
        decision = thermal_repair_placement(problem, hint)
        reason = "" if decision is not None else "swaps from the start could not bring the peak under the limit"
        return settle(KIND, problem, method, decision, config, t0, reason=reason)
    start = hint if hint is None or not check_thermal_placement(problem, hint)[1] else (
        thermal_repair_placement(problem, hint))
    model = build_thermal_placement_milp(problem)
    if start is not None:
        set_placement_start(model, start)
    return settle_placement_milp(KIND, problem, model, method, config, t0, start, time.perf_counter() - t0)


def thermal_repair_placement(problem: ThermalPlacementProblem, start: dict[int, str], max_steps: int = 200,
                             max_moves: int = 20_000) -> dict[int, str] | None:
    """Swap chiplets from ``start`` until the peak temperature meets the limit, then descend on Eq. 2 within it.

    Parameters
    ----------
    problem : ThermalPlacementProblem
    start : dict[int, str]
        A placement (cell -> type) that passes the base problem's checker.
    max_steps : int
        Most swaps made (repair and descent together).
    max_moves : int
        Most candidate swaps scored in all (about 0.3 ms each with 250 chiplets placed: some 6 s on a 16 x 16
        grid, where one step scores n (n - 1) / 2 swaps).

    Returns
    -------
    dict[int, str] or None
        A placement within the limit, or ``None`` when no swap lowers the excess any further.

    Notes
    -----
    A move swaps the contents of two cells (either may be empty) where both moved types are allowed. While the
    peak exceeds the limit, the swap with the least remaining excess (then the least Eq. 2) is made if it lowers
    the excess; afterwards the swap with the least Eq. 2 among those keeping every cell within the limit, while it
    lowers Eq. 2. Temperatures update by superposition, ``T += dp (R[:, i] - R[:, j])``; the Eq. 2 change only
    involves the pairs with the two cells.
    """
    base, d = problem.base, dict(start)
    n, vol, limit = base.rows * base.cols, volume_table(base), problem.limit_C + TEMPERATURE_TOLERANCE_K
    r = np.asarray(problem.resistance_K_per_W)
    dist = np.array([[manhattan(base, i, j) for j in range(n)] for i in range(n)])
    ok = {t: set(allowed_cells(base, t)) for t in active_types(base)}
    temps = cell_temperatures_C(problem, d)

    def power(t: str | None) -> float:
        return 0.0 if t is None else problem.power_W[t]

    def eq2_change(i: int, j: int, a: str | None, b: str | None) -> float:
        """Change of Eq. 2 when a (at i) and b (at j) trade cells; the i-j pair keeps its distance."""
        return sum((vol.get((b, t), 0.0) - vol.get((a, t), 0.0)) * (dist[i, k] - dist[j, k])
                   for k, t in d.items() if k not in (i, j))

    moves = 0
    for _ in range(max_steps):
        if moves > max_moves:
            break
        excess = max(temps.max() - limit, 0.0)
        best: tuple[float, float, int, int] | None = None
        for i in range(n):
            for j in range(i + 1, n):
                a, b = d.get(i), d.get(j)
                if a == b or (b is not None and i not in ok[b]) or (a is not None and j not in ok[a]):
                    continue
                moves += 1
                new_excess = max((temps + (power(b) - power(a)) * (r[:, i] - r[:, j])).max() - limit, 0.0)
                if new_excess > 0.0 and excess == 0.0 or excess > 0.0 and new_excess >= excess:
                    continue
                key = (new_excess, eq2_change(i, j, a, b), i, j)
                if best is None or key < best:
                    best = key
        if best is None or (excess == 0.0 and best[1] >= -1e-9 * max(1.0, max(vol.values(), default=1.0))):
            break
        _, _, i, j = best
        a, b = d.pop(i, None), d.pop(j, None)
        d.update({c: t for c, t in ((i, b), (j, a)) if t is not None})
        temps = temps + (power(b) - power(a)) * (r[:, i] - r[:, j])
    return d if temps.max() <= limit else None
