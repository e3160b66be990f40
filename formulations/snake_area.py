"""How should a SNAKE core split its area between PEs and buffer? (SNAKE Sec. 3.2, Fig. 4a.)

Under a fixed core area, a larger PE array cuts compute cycles, while the smaller buffer left over can keep fewer
DRAM requests in flight: by Little's law a buffer whose refill half holds ``b / 2`` bytes sustains at most
``(b / 2) / L`` bytes/s against a DRAM access latency ``L``, so the core streams at
``min(B_core, b / (2 L))``. An operator takes ``max(compute, bytes / streaming rate)``; past some array size the
buffer starves it (SNAKE Fig. 4a: stall cycles rise sharply at 8 x 640 and 8 x 768).

**Sets.** PE configurations ``i`` (rows x cols of the core's array), buffer sizes ``j``.

**Parameters.** ``L[i, j]``: decode latency of the workload with configuration ``(i, j)``, s; ``a[i]``, ``b[j]``:
PE and buffer area, mm^2; ``A``: the core's area budget.

**MILP.** min sum_ij L[i, j] w[i, j] s.t. sum_i z[i] = 1; sum_j u[j] = 1; w[i, j] >= z[i] + u[j] - 1,
w[i, j] <= z[i], w[i, j] <= u[j]; sum_i a[i] z[i] + sum_j b[j] u[j] <= A; z, u binary, w in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from chipdse.core.errors import SpecError
from chipdse.formulations.snake_shapes import AREA_TOL_MM2


@dataclass(frozen=True)
class AreaSplitProblem:
    """An area-split instance.

    Attributes
    ----------
    pe_configs : tuple of (int, int)
        Array shapes (rows, cols) of one core.
    pe_area_mm2 : numpy.ndarray, shape (n_pe,)
    buffer_kb : tuple of int
        Buffer capacities, KiB.
    buffer_area_mm2 : numpy.ndarray, shape (n_buf,)
    area_budget_mm2 : float
        Core area for PEs and buffer, mm^2.
    latency_s : numpy.ndarray, shape (n_pe, n_buf)
        Decode latency of the workload with each pair, s.
    name : str
    """

    pe_configs: tuple[tuple[int, int], ...]
    pe_area_mm2: np.ndarray
    buffer_kb: tuple[int, ...]
    buffer_area_mm2: np.ndarray
    area_budget_mm2: float
    latency_s: np.ndarray
    name: str = "area-split"

    def area_mm2(self, i: int, j: int) -> float:
        """Area of PE configuration ``i`` with buffer ``j``, mm^2."""
        return float(self.pe_area_mm2[i] + self.buffer_area_mm2[j])


def validate_area_split(p: AreaSplitProblem) -> None:
    """Raise :class:`SpecError` naming the field when the instance is malformed."""
    shape = (len(p.pe_configs), len(p.buffer_kb))
    if p.latency_s.shape != shape:
        raise SpecError(p.name, "latency_s", f"shape {shape}, got {p.latency_s.shape}")
    if p.pe_area_mm2.shape != shape[:1] or p.buffer_area_mm2.shape != shape[1:]:
        raise SpecError(p.name, "pe_area_mm2", "one area per PE configuration and per buffer size")
    if not np.all(np.isfinite(p.latency_s)) or np.any(p.latency_s <= 0):
        raise SpecError(p.name, "latency_s", "finite positive latencies")


def area_split_infeasibility(p: AreaSplitProblem) -> str | None:
    """Why no pair fits the budget (smallest array with the smallest buffer), or None."""
    need = float(p.pe_area_mm2.min() + p.buffer_area_mm2.min())
    if need > p.area_budget_mm2:
        return (f"the smallest array and buffer need {need:.3f} mm^2, the core has {p.area_budget_mm2:.3f} mm^2")
    return None


def check_area_split(p: AreaSplitProblem, decision: tuple[int, int]) -> tuple[float, list[str]]:
    """Objective (decode latency, s) and violations of a (PE configuration, buffer) pair."""
    i, j = decision
    if not (0 <= i < len(p.pe_configs) and 0 <= j < len(p.buffer_kb)):
        return float("inf"), [f"unknown choice {decision}"]
    area = p.area_mm2(i, j)
    violations = []
    if area > p.area_budget_mm2 + AREA_TOL_MM2:
        violations.append(f"{p.pe_configs[i]} with {p.buffer_kb[j]} KiB needs {area:.4f} mm^2, the core has "
                          f"{p.area_budget_mm2:.4f} mm^2")
    return float(p.latency_s[i, j]), violations


def build_area_split_milp(p: AreaSplitProblem) -> pyo.ConcreteModel:
    """Build the MILP of the module docstring (latencies in microseconds)."""
    validate_area_split(p)
    m = pyo.ConcreteModel(name=p.name)
    m.I = pyo.RangeSet(0, len(p.pe_configs) - 1)
    m.J = pyo.RangeSet(0, len(p.buffer_kb) - 1)
    m.z = pyo.Var(m.I, domain=pyo.Binary)
    m.u = pyo.Var(m.J, domain=pyo.Binary)
    m.w = pyo.Var(m.I, m.J, bounds=(0, 1))
    us = p.latency_s * 1e6
    m.obj = pyo.Objective(expr=sum(float(us[i, j]) * m.w[i, j] for i in m.I for j in m.J), sense=pyo.minimize)
    m.one_pe = pyo.Constraint(expr=sum(m.z[i] for i in m.I) == 1)
    m.one_buf = pyo.Constraint(expr=sum(m.u[j] for j in m.J) == 1)
    m.lo = pyo.Constraint(m.I, m.J, rule=lambda m, i, j: m.w[i, j] >= m.z[i] + m.u[j] - 1)
    m.hi_z = pyo.Constraint(m.I, m.J, rule=lambda m, i, j: m.w[i, j] <= m.z[i])
    m.hi_u = pyo.Constraint(m.I, m.J, rule=lambda m, i, j: m.w[i, j] <= m.u[j])
    m.area = pyo.Constraint(expr=sum(float(p.pe_area_mm2[i]) * m.z[i] for i in m.I)
                            + sum(float(p.buffer_area_mm2[j]) * m.u[j] for j in m.J) <= p.area_budget_mm2)
    return m


def decode_area_split_milp(m: pyo.ConcreteModel) -> tuple[int, int]:
    """The chosen (PE configuration, buffer) indices of a solved model."""
    i = max(m.I, key=lambda i: pyo.value(m.z[i]))
    j = max(m.J, key=lambda j: pyo.value(m.u[j]))
    return int(i), int(j)
