"""Thermally constrained exact placement (issue 17 item 3): brute force on a tiny grid, a hot design whose
unconstrained optimum breaks the limit, infeasible limits."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from chipdse.core.solution import SolutionStatus
from chipdse.evaluators.thermal import package_grid, solve_temperature, thermal_resistance_matrix
from chipdse.formulations.placement import PlacementProblem, grid_ring_cells
from chipdse.formulations.placement_thermal import ThermalPlacementProblem, check_thermal_placement
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import PlacementInputError, solve_placement
from chipdse.solvers.placement_thermal import solve_thermal_placement

ROWS, COLS, PITCH_MM = 3, 3, 11.0
POWER_W = {"H": 45.0, "C": 5.0, "hbm:x": 20.0}
"""Two hot compute chiplets that trade heavily with each other, two cool ones and two stacks on the ring."""
COUNTS = {"H": 2, "C": 2, "hbm:x": 2}
VOLUMES = {("H", "H"): 10.0, ("H", "hbm:x"): 3.0, ("C", "hbm:x"): 1.0, ("H", "C"): 1.0}
CFG = SolverConfig(work_limit=50.0)


def _base() -> PlacementProblem:
    ring = grid_ring_cells(ROWS, COLS)
    return PlacementProblem(ROWS, COLS, COUNTS, VOLUMES, allowed={"hbm:x": ring}, ring_cells=ring, name="hot")


def _eq2(decision: dict[int, str]) -> float:
    """HYDRA Eq. 2 by hand: volume x Manhattan hops over unordered pairs of placed chiplets."""
    vol = {**VOLUMES, **{(u, t): v for (t, u), v in VOLUMES.items()}}
    return sum(vol.get((decision[i], decision[j]), 0.0) * (abs(i // COLS - j // COLS) + abs(i % COLS - j % COLS))
               for i, j in combinations(sorted(decision), 2))


def _unit_responses() -> np.ndarray:
    """Die temperature rise of every cell per W in each cell, one full solve of the network per cell (not the
    resistance matrix the MILP's rows come from)."""
    grid = package_grid(ROWS, COLS, PITCH_MM)
    return np.column_stack([solve_temperature(grid, np.eye(ROWS * COLS)[j]).die_C.reshape(-1) - grid.stack.ambient_C
                            for j in range(ROWS * COLS)])


UNIT_K_PER_W = _unit_responses()
AMBIENT_C = package_grid(ROWS, COLS, PITCH_MM).stack.ambient_C


def _peak_C(decision: dict[int, str]) -> float:  # noqa: N802
    """Peak die temperature by superposing the unit responses."""
    power = np.zeros(ROWS * COLS)
    for cell, t in decision.items():
        power[cell] = POWER_W[t]
    return float(AMBIENT_C + (UNIT_K_PER_W @ power).max())


def _all_placements() -> list[dict[int, str]]:
    """Every placement: the stacks on two ring cells, then H, then C on the free cells."""
    n, ring = ROWS * COLS, grid_ring_cells(ROWS, COLS)
    out = []
    for stacks in combinations(ring, 2):
        free = [c for c in range(n) if c not in stacks]
        for hot in combinations(free, 2):
            for cool in combinations([c for c in free if c not in hot], 2):
                out.append({**dict.fromkeys(stacks, "hbm:x"), **dict.fromkeys(hot, "H"), **dict.fromkeys(cool, "C")})
    return out


PLACEMENTS = _all_placements()
PEAKS = [_peak_C(d) for d in PLACEMENTS]
COSTS = [_eq2(d) for d in PLACEMENTS]


def _problem(limit_C: float) -> ThermalPlacementProblem:  # noqa: N803
    grid = package_grid(ROWS, COLS, PITCH_MM)
    return ThermalPlacementProblem(_base(), POWER_W, thermal_resistance_matrix(grid), grid.stack.ambient_C, limit_C)


def test_hot_design_unconstrained_optimum_breaks_the_limit_constrained_respects_it_issue_17() -> None:
    """The limit halfway between the coolest placement's peak and the unconstrained optimum's peak: the
    unconstrained MILP breaks it, the constrained one stays within it, and costs more in Eq. 2."""
    free = solve_placement(_base(), "milp-highs", CFG)
    assert free.status is SolutionStatus.OPTIMAL
    assert free.objective == pytest.approx(min(COSTS), rel=1e-9)
    assert _peak_C(free.decision) - min(PEAKS) > 1.0  # the instance is hot enough to matter
    limit = (min(PEAKS) + _peak_C(free.decision)) / 2
    sol = solve_thermal_placement(_problem(limit), "milp-highs", CFG)
    assert sol.status is SolutionStatus.OPTIMAL
    assert _peak_C(sol.decision) <= limit + 1e-6
    assert sol.objective > free.objective * (1 + 1e-6)


@pytest.mark.parametrize("quantile", [0.1, 0.5, 0.9])
def test_constrained_placement_equals_brute_force_on_a_tiny_grid(quantile: float) -> None:
    """Every placement of the 3 x 3 instance enumerated: the least Eq. 2 cost among those whose full thermal solve
    stays within the limit equals the MILP's objective."""
    limit = float(np.quantile(PEAKS, quantile))
    best = min(c for c, p in zip(COSTS, PEAKS, strict=True) if p <= limit)
    sol = solve_thermal_placement(_problem(limit), "milp-highs", CFG)
    assert sol.status is SolutionStatus.OPTIMAL
    assert sol.objective == pytest.approx(best, rel=1e-6)
    assert _peak_C(sol.decision) <= limit + 1e-6
    assert _eq2(sol.decision) == pytest.approx(sol.objective, rel=1e-9)


def test_limit_below_every_placement_is_infeasible() -> None:
    """Just below the coolest placement's peak: no placement exists, which HiGHS proves."""
    sol = solve_thermal_placement(_problem(min(PEAKS) - 0.05), "milp-highs", CFG)
    assert sol.status is SolutionStatus.INFEASIBLE
    assert sol.decision is None and sol.objective is None and sol.bound is None


def test_limit_one_chiplet_alone_breaks_is_infeasible_with_the_reason() -> None:
    grid = package_grid(ROWS, COLS, PITCH_MM)
    r = thermal_resistance_matrix(grid)
    alone = grid.stack.ambient_C + float(np.min(np.diag(r))) * POWER_W["H"]
    sol = solve_thermal_placement(_problem(alone - 0.5), "milp-highs", CFG)
    assert sol.status is SolutionStatus.INFEASIBLE
    assert "one H chiplet alone" in sol.reason


def test_checker_lists_the_hot_cells() -> None:
    d = PLACEMENTS[int(np.argmax(PEAKS))]
    _, violations = check_thermal_placement(_problem(max(PEAKS) - 1.0), d)
    assert violations and all("above the" in v for v in violations)
    assert check_thermal_placement(_problem(max(PEAKS) + 1.0), d)[1] == []


def test_unknown_method_is_refused() -> None:
    with pytest.raises(PlacementInputError, match="milp-highs"):
        solve_thermal_placement(_problem(100.0), "cpsat")


@pytest.mark.parametrize("quantile", [0.1, 0.5])
def test_thermal_repair_meets_the_limit_and_is_no_better_than_brute_force(quantile: float) -> None:
    """From the unconstrained optimum (which breaks these limits), swaps reach a placement within the limit whose
    Eq. 2 is at least the enumerated constrained optimum."""
    limit = float(np.quantile(PEAKS, quantile))
    free = solve_placement(_base(), "milp-highs", CFG)
    assert _peak_C(free.decision) > limit
    sol = solve_thermal_placement(_problem(limit), "thermal-repair", CFG, hint=free.decision)
    assert sol.status is SolutionStatus.FEASIBLE and sol.bound is None
    assert _peak_C(sol.decision) <= limit + 1e-6
    assert sol.objective >= min(c for c, p in zip(COSTS, PEAKS, strict=True) if p <= limit) * (1 - 1e-9)
    with pytest.raises(PlacementInputError, match="hint"):
        solve_thermal_placement(_problem(limit), "thermal-repair", CFG)
