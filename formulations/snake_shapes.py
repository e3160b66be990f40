"""Which logical array shapes should a SNAKE core support? (SNAKE Sec. 4.2, a budgeted shape-set choice.)

A 64x64 physical array carved into ``g`` logical slices (e.g. 8 rows x 512 from ``g = 8`` slices of 8 x 64) needs
``g`` weight-injection ports (SNAKE Sec. 4.2: "if the array is partitioned into g logical slices, then g
weight-injection ports are needed"); ports are shared by every supported shape, so the port count is the largest
``g`` among them, and each supported shape adds its own reconfiguration paths (crossbar settings, control).

**Sets.** Operators ``o`` (decode GEMMs of a model mix, weighted by executions), candidate shapes ``s`` (each
usable in both orientations).

**Parameters.** ``t[o, s]``: time of one execution of ``o`` with shape ``s`` (best multi-PU mode,
:func:`evaluators.snake_pu.schedule_op`); ``w[o]``: executions; ``g[s]``: ports; ``a_port``, ``a_cfg[s]``: area of
a port and of a shape's reconfiguration paths, mm^2 per PU; ``A``: area budget; shapes ``s0`` always present (the
physical 64x64).

**MILP.** min sum_o w[o] sum_s t[o, s] x[o, s] + eps * area s.t. sum_s x[o, s] = 1; x[o, s] <= y[s]; P >= g[s] y[s];
a_port P + sum_s a_cfg[s] y[s] <= A; y[s0] = 1; x, y binary, P >= 0.

``eps`` (1e-9 of the time scale per mm^2) only breaks ties: among sets with the same decode time the smallest
area wins, as in the enumeration. A decision is the set of supported shapes; every operator then uses its fastest
supported shape, so the checker needs no assignment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from chipdse.core.errors import SpecError

AREA_TOL_MM2 = 1e-6
"""Area a decision may exceed its budget by, mm^2 (1 um^2: the MILP's feasibility tolerance, not a design margin)."""


@dataclass(frozen=True)
class ShapeSetProblem:
    """A shape-set instance.

    Attributes
    ----------
    shapes : tuple of (int, int)
        Candidate logical shapes (rows, cols), rows <= cols.
    ports : tuple of int
        Weight-injection ports each shape needs (``64 / rows`` on a 64-wide physical array).
    config_area_mm2 : tuple of float
        Reconfiguration area of each shape, mm^2 per PU.
    port_area_mm2 : float
        Area of one weight-injection port, mm^2 per PU (all cores of the PU).
    area_budget_mm2 : float
        Area available for ports and reconfiguration, mm^2 per PU.
    op_names : tuple of str
    weight : numpy.ndarray, shape (n_ops,)
        Executions of each operator over the model mix.
    time_s : numpy.ndarray, shape (n_ops, n_shapes)
        Seconds per execution of each operator with each shape.
    always : tuple of int
        Indices of shapes that are always available (no cost).
    name : str
    """

    shapes: tuple[tuple[int, int], ...]
    ports: tuple[int, ...]
    config_area_mm2: tuple[float, ...]
    port_area_mm2: float
    area_budget_mm2: float
    op_names: tuple[str, ...]
    weight: np.ndarray
    time_s: np.ndarray
    always: tuple[int, ...] = ()
    name: str = "shape-set"

    def area_mm2(self, supported: frozenset[int]) -> float:
        """Port and reconfiguration area of a shape set, mm^2 per PU (the always-present shapes cost nothing)."""
        paid = [s for s in supported if s not in self.always]
        if not paid:
            return 0.0
        return self.port_area_mm2 * max(self.ports[s] for s in paid) + sum(self.config_area_mm2[s] for s in paid)


def validate_shape_set(p: ShapeSetProblem) -> None:
    """Raise :class:`SpecError` naming the field when the instance is malformed."""
    n_ops, n_shapes = len(p.op_names), len(p.shapes)
    if p.time_s.shape != (n_ops, n_shapes):
        raise SpecError(p.name, "time_s", f"shape ({n_ops}, {n_shapes}), got {p.time_s.shape}")
    if p.weight.shape != (n_ops,) or np.any(p.weight < 0):
        raise SpecError(p.name, "weight", f"{n_ops} non-negative executions, got {p.weight}")
    if len(p.ports) != n_shapes or len(p.config_area_mm2) != n_shapes:
        raise SpecError(p.name, "ports", f"one port count and one area per shape ({n_shapes})")
    if not all(0 <= s < n_shapes for s in p.always):
        raise SpecError(p.name, "always", f"shape indices below {n_shapes}, got {p.always}")
    if not np.all(np.isfinite(p.time_s)) or np.any(p.time_s <= 0):
        raise SpecError(p.name, "time_s", "finite positive times")


def check_shape_set(p: ShapeSetProblem, supported: frozenset[int]) -> tuple[float, list[str]]:
    """Objective (weighted decode time, s) and violations of a supported shape set, independently of any solver."""
    violations = []
    missing = [p.shapes[s] for s in p.always if s not in supported]
    if missing:
        violations.append(f"shapes {missing} are always present but missing from the set")
    if not supported:
        return float("inf"), ["no shape supported"]
    if any(not 0 <= s < len(p.shapes) for s in supported):
        return float("inf"), [f"unknown shape index in {sorted(supported)}"]
    area = p.area_mm2(supported)
    if area > p.area_budget_mm2 + AREA_TOL_MM2:
        violations.append(f"ports and reconfiguration need {area:.4f} mm^2, the budget is {p.area_budget_mm2} mm^2")
    cols = sorted(supported)
    return float(p.weight @ p.time_s[:, cols].min(axis=1)), violations


def build_shape_set_milp(p: ShapeSetProblem) -> pyo.ConcreteModel:
    """Build the MILP of the module docstring (times scaled to microseconds for conditioning)."""
    validate_shape_set(p)
    m = pyo.ConcreteModel(name=p.name)
    m.O = pyo.RangeSet(0, len(p.op_names) - 1)
    m.S = pyo.RangeSet(0, len(p.shapes) - 1)
    m.x = pyo.Var(m.O, m.S, domain=pyo.Binary)
    m.y = pyo.Var(m.S, domain=pyo.Binary)
    m.P = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, max(p.ports)))
    us = p.time_s * 1e6
    paid = [s for s in range(len(p.shapes)) if s not in p.always]
    eps = 1e-9 * float(p.weight @ us.min(axis=1))  # per mm^2: a tie-break far below any real time difference
    m.obj = pyo.Objective(expr=sum(float(p.weight[o]) * float(us[o, s]) * m.x[o, s] for o in m.O for s in m.S)
                          + eps * (p.port_area_mm2 * m.P + sum(p.config_area_mm2[s] * m.y[s] for s in paid)),
                          sense=pyo.minimize)
    m.one = pyo.Constraint(m.O, rule=lambda m, o: sum(m.x[o, s] for s in m.S) == 1)
    m.open = pyo.Constraint(m.O, m.S, rule=lambda m, o, s: m.x[o, s] <= m.y[s])
    m.ports = pyo.Constraint(paid, rule=lambda m, s: m.P >= p.ports[s] * m.y[s])
    m.area = pyo.Constraint(expr=p.port_area_mm2 * m.P + sum(p.config_area_mm2[s] * m.y[s] for s in paid)
                            <= p.area_budget_mm2)
    for s in p.always:
        m.y[s].fix(1)
    return m


def build_least_area_milp(p: ShapeSetProblem, time_cap_s: float) -> pyo.ConcreteModel:
    """The shape-set MILP's second, lexicographic stage: the least port and reconfiguration area (mm^2) among shape
    sets whose weighted decode time is at most ``time_cap_s`` (the first stage's optimum).

    The first stage's area term is a tie-break far below the solver's gap tolerance, so it cannot decide between
    shape sets of equal time; this stage does, as the enumeration does (ties to the least area).
    """
    m = build_shape_set_milp(p)
    m.obj.deactivate()
    us = p.time_s * 1e6
    paid = [s for s in range(len(p.shapes)) if s not in p.always]
    m.time_cap = pyo.Constraint(expr=sum(float(p.weight[o]) * float(us[o, s]) * m.x[o, s] for o in m.O for s in m.S)
                                <= time_cap_s * 1e6)
    m.area_obj = pyo.Objective(expr=p.port_area_mm2 * m.P + sum(p.config_area_mm2[s] * m.y[s] for s in paid),
                               sense=pyo.minimize)
    return m


def decode_shape_set_milp(m: pyo.ConcreteModel) -> frozenset[int]:
    """The supported shape set of a solved model."""
    return frozenset(int(s) for s in m.S if pyo.value(m.y[s]) > 0.5)
