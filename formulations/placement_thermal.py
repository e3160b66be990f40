"""Thermally constrained placement: HYDRA Eq. 2 with a peak-temperature limit on every cell (issue 17 item 3).

The steady-state compact thermal model is linear (:mod:`chipdse.evaluators.thermal`), so the die temperature of
cell i under a placement z is ``T_i = T_amb + sum_j R_ij p_j`` with ``p_j = sum_t P_t z[j, t]``: a linear function
of the placement variables. The limit ``T_i <= T_max`` for every cell is therefore a family of linear
constraints added to the unconstrained RLT MILP of :mod:`chipdse.formulations.placement`, which is built as is;
the objective (Eq. 2, bytes x hops) is unchanged, so the constrained optimum minus the unconstrained one is what
the limit costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import pyomo.environ as pyo

from chipdse.core.errors import SpecError
from chipdse.formulations.placement import (
    PlacementProblem,
    active_types,
    allowed_cells,
    build_placement_milp,
    check_placement,
)

TEMPERATURE_TOLERANCE_K = 1e-6
"""A cell may exceed the limit by this much (K) and still count as within it (the MILP's feasibility tolerance,
scaled: the constraint rows are in kelvin)."""


@dataclass(frozen=True)
class ThermalPlacementProblem:
    """A placement problem plus a peak-temperature limit through a linear thermal model.

    Attributes
    ----------
    base : PlacementProblem
        Grid, counts, allowed cells and pair volumes (HYDRA Eq. 2).
    power_W : dict[str, float]
        Power of ONE chiplet of each type of ``base.counts``, W (>= 0).
    resistance_K_per_W : numpy.ndarray
        ``(n, n)``, ``n = rows * cols``: rise of cell i's die temperature per W in cell j, K/W
        (:func:`chipdse.evaluators.thermal.thermal_resistance_matrix`).
    ambient_C : float
        Ambient temperature, degC.
    limit_C : float
        Largest die temperature any cell may reach, degC.
    """

    base: PlacementProblem
    power_W: dict[str, float]  # noqa: N815 - unit in name
    resistance_K_per_W: np.ndarray  # noqa: N815
    ambient_C: float  # noqa: N815
    limit_C: float  # noqa: N815

    @property
    def name(self) -> str:
        """Label for reports: the base problem's."""
        return f"{self.base.name}-thermal"


def validate_thermal(problem: ThermalPlacementProblem) -> None:
    """Check the thermal data of ``problem`` (the base problem is checked by the placement checker).

    Raises
    ------
    SpecError
        A resistance matrix that is not ``(n, n)`` finite and >= 0, a type of ``base.counts`` without a power or
        with a negative one, or a non-finite ambient or limit.
    """
    src, n = f"placement problem {problem.name!r}", problem.base.rows * problem.base.cols
    r = np.asarray(problem.resistance_K_per_W)
    if r.shape != (n, n) or not np.all(np.isfinite(r)) or np.any(r < 0):
        raise SpecError(src, "resistance_K_per_W", f"a finite ({n}, {n}) matrix >= 0 K/W, got shape {r.shape}")
    for t in active_types(problem.base):
        p = problem.power_W.get(t)
        if p is None or not math.isfinite(p) or p < 0:
            raise SpecError(src, f"power_W.{t}", f"a finite power >= 0 W per chiplet, got {p!r}")
    if not (math.isfinite(problem.ambient_C) and math.isfinite(problem.limit_C)):
        raise SpecError(src, "limit_C", f"finite temperatures, got {problem.ambient_C!r} / {problem.limit_C!r}")


def cell_temperatures_C(problem: ThermalPlacementProblem, decision: dict[int, str]) -> np.ndarray:  # noqa: N802
    """Return the die temperature of every cell under ``decision``, degC (``ambient + R @ p``).

    Parameters
    ----------
    decision : dict[int, str]
        Cell -> type; cells out of range or with a type without a power are left out (the checker reports them).

    Returns
    -------
    numpy.ndarray
        ``(rows * cols,)``, degC.
    """
    n = problem.base.rows * problem.base.cols
    p = np.zeros(n)
    for cell, t in decision.items():
        if isinstance(cell, Integral) and 0 <= cell < n and t in problem.power_W:
            p[cell] = problem.power_W[t]
    return problem.ambient_C + np.asarray(problem.resistance_K_per_W) @ p


def check_thermal_placement(problem: ThermalPlacementProblem, decision: dict[int, str]) -> tuple[float, list[str]]:
    """Recompute the Eq. 2 objective of ``decision`` and list its violations, the temperature limit included.

    Returns
    -------
    (float, list[str])
        :func:`~chipdse.formulations.placement.check_placement`'s objective (bytes x hops) and violations, plus
        one message per cell whose die temperature exceeds ``limit_C`` by more than
        :data:`TEMPERATURE_TOLERANCE_K`.

    Raises
    ------
    SpecError
        Malformed thermal data (:func:`validate_thermal`) or base problem.
    """
    validate_thermal(problem)
    objective, violations = check_placement(problem.base, decision)
    temps = cell_temperatures_C(problem, decision)
    violations += [f"cell {i} reaches {temps[i]:.2f} degC, above the {problem.limit_C:g} degC limit"
                   for i in np.flatnonzero(temps > problem.limit_C + TEMPERATURE_TOLERANCE_K)]
    return objective, violations


def thermal_infeasibility(problem: ThermalPlacementProblem) -> str | None:
    """Return why no placement can meet the limit, when a simple necessary condition already fails, else ``None``.

    Notes
    -----
    Every term of ``R @ p`` is >= 0, so a chiplet heats its own cell by at least ``R_jj P_t``; if even its coolest
    allowed cell j gives ``T_amb + R_jj P_t > T_max``, no placement meets the limit. (Passing this test does not
    prove that one exists; the MILP decides.)
    """
    validate_thermal(problem)
    r = np.asarray(problem.resistance_K_per_W)
    if problem.limit_C < problem.ambient_C:
        return f"the limit {problem.limit_C:g} degC is below the ambient {problem.ambient_C:g} degC"
    for t in active_types(problem.base):
        own = min(problem.ambient_C + r[j, j] * problem.power_W[t] for j in allowed_cells(problem.base, t))
        if own > problem.limit_C + TEMPERATURE_TOLERANCE_K:
            return (f"one {t} chiplet alone ({problem.power_W[t]:.3g} W) reaches {own:.2f} degC on its coolest "
                    f"allowed cell, above the {problem.limit_C:g} degC limit")
    return None


def build_thermal_placement_milp(problem: ThermalPlacementProblem) -> pyo.ConcreteModel:
    """Build the placement MILP (:func:`~chipdse.formulations.placement.build_placement_milp`) with the
    temperature limit on every cell (:func:`add_cell_temperature_constraints`).

    Returns
    -------
    pyomo ConcreteModel
        The unconstrained model's components, objective ``traffic_cost`` (units of ``volume_unit`` bytes x hops)
        and ``cell_temperature_ub``.

    Raises
    ------
    SpecError
        Malformed thermal data (:func:`validate_thermal`).
    """
    validate_thermal(problem)
    m = build_placement_milp(problem.base)
    add_cell_temperature_constraints(m, problem)
    return m


def add_cell_temperature_constraints(m: pyo.ConcreteModel, problem: ThermalPlacementProblem) -> None:
    """Add ``sum_{(j, t)} R_ij P_t z[j, t] <= T_max - T_amb`` for every cell i (K).

    Cells whose largest possible rise (every (j, t) pair at once) stays within the limit are left out.

    References
    ----------
    Superposition in a linear steady-state RC network (HotSpot, Skadron et al. 2004); the thermally constrained
    placement of issue 17 item 3 (TAP-2.5D, Ma et al. DATE 2021, penalizes temperature in an annealer instead).
    """
    r = np.asarray(problem.resistance_K_per_W)
    headroom = problem.limit_C - problem.ambient_C
    keys = list(m.cell_type)
    cells = [i for i in m.cells if sum(r[i, j] * problem.power_W[t] for j, t in keys) > headroom]
    if not cells:
        return

    def cell_temperature_ub(m: pyo.ConcreteModel, i: int) -> pyo.Expression:
        rise = sum(float(r[i, j] * problem.power_W[t]) * m.cell_type_assign[j, t] for j, t in keys
                   if problem.power_W[t] > 0)
        return rise <= headroom

    m.cell_temperature_ub = pyo.Constraint(cells, rule=cell_temperature_ub)
