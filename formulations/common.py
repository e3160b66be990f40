"""Building blocks shared by the formulations' exact models: min-max load MILPs, CP-SAT time ticks, decoding.

The bottleneck mapping (HYDRA Eqs. 4-5) and the expert split (NOVA Sec. VI-E) are both min-max load
(makespan) assignment problems: binary choice variables, a non-negative makespan T in model units, per-machine
load constraints ``load <= T``, minimize T. Their CP-SAT models measure time in integer ticks. The pieces
written once here are what both need: the choice / makespan variables, the float -> tick rounding and the
tick -> seconds bound conversion, a model named after its problem, and reading a solved model's choices back.
No function here runs a solver.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TypeVar

import pyomo.environ as pyo
from ortools.sat.python import cp_model

K = TypeVar("K", bound=Hashable)


# --------------------------------------------------------------------------------------------- MILP (Pyomo)


def add_choice_and_makespan_variables(m: pyo.ConcreteModel, index: pyo.Set, choice: str, makespan: str) -> None:
    """Add the binary choice variables ``m.<choice>[i]`` over ``index`` and the makespan ``m.<makespan> >= 0``.

    Parameters
    ----------
    m : pyomo ConcreteModel
        The model to extend (components are added in this order: choice, then makespan).
    index : pyomo Set
        The index of the choices (e.g. compatible (task, chiplet) pairs, or active experts).
    choice, makespan : str
        Component names (e.g. ``"assign"`` / ``"bottleneck_time"``, ``"expert_on_tier2"`` / ``"makespan"``).
    """
    m.add_component(choice, pyo.Var(index, domain=pyo.Binary))
    m.add_component(makespan, pyo.Var(domain=pyo.NonNegativeReals))


def binary_value(var: pyo.Var) -> float:
    """Return a solved binary variable's value, 0.0 when the solver left it without one."""
    return pyo.value(var, exception=False) or 0.0


# --------------------------------------------------------------------------------------------------- CP-SAT


def new_cpsat_model(name: str) -> cp_model.CpModel:
    """Return an empty CP-SAT model named ``name`` (the problem's label, shown in solver logs)."""
    cp = cp_model.CpModel()
    cp.SetName(name)
    return cp


def time_ticks(time_s: float, resolution_s: float) -> int:
    """Return ``floor(time_s / resolution_s)``, fixed up so that ``ticks * resolution_s <= time_s`` holds.

    Parameters
    ----------
    time_s : float
        A time in seconds, ``>= 0``.
    resolution_s : float
        Seconds per tick, ``> 0``.

    Returns
    -------
    int
        The largest ``ticks >= 0`` with ``ticks * resolution_s <= time_s`` in floating point (0 when
        ``time_s < resolution_s``).
    """
    ticks = math.floor(time_s / resolution_s)
    while (ticks + 1) * resolution_s <= time_s:
        ticks += 1
    while ticks > 0 and ticks * resolution_s > time_s:
        ticks -= 1
    return ticks


class TickedCpsat:
    """Mixin for a built CP-SAT model whose times are integer ticks of ``resolution_s`` seconds.

    Times are rounded DOWN to ticks (:func:`time_ticks`), so every decision's load in ticks times the
    resolution is at most its true load: the CP-SAT bound converted by :meth:`bound_s` is a valid lower bound
    on the true optimum, and the CP-SAT optimum is within ``n_items * resolution_s`` of it (one rounding per
    assigned item). The objective reported to users is always recomputed in seconds by the problem's checker.
    """

    resolution_s: float

    def bound_s(self, bound_ticks: float) -> float:
        """Convert a CP-SAT bound in ticks to a valid lower bound in seconds (rounded down, never up)."""
        return math.nextafter(math.floor(bound_ticks + 1e-9) * self.resolution_s, 0.0)


def chosen_keys(solver: cp_model.CpSolver, choices: Mapping[K, cp_model.IntVar]) -> list[K]:
    """Return the keys of the Booleans that are true in ``solver``'s solution, in ``choices`` order."""
    return [k for k, x in choices.items() if solver.BooleanValue(x)]
