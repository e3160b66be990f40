"""Explore's power / thermal stage: power map, temperature map and peak of each finalist's placements, and, when
the scenario sets a limit, the thermally constrained exact placement and what it costs (issue 17 items 3 and 5).

Per finalist (B*, M_T): the power of one chiplet of each type at the scenario's utilization
(:func:`chipdse.evaluators.energy_hydra.hydra_power_by_type_W`), the steady-state temperature map of every placement the
finalist stage solved (:func:`chipdse.evaluators.thermal.solve_temperature`), and with ``thermal.limit_C`` set the
MILP with the per-cell temperature limit (:mod:`chipdse.solvers.placement_thermal`; not solved when the proven Eq. 2
optimum already meets the limit, as it is then the constrained optimum too), its Eq. 2 cost against the best exact
unconstrained placement, and both layouts re-scored by the serving model under the same LPT mapping.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from chipdse.core.layout import LayoutKind
from chipdse.core.scenario import LoadedScenario
from chipdse.core.solution import Solution, SolutionStatus
from chipdse.evaluators.energy import scenario_energy_table
from chipdse.evaluators.energy_hydra import hydra_power_by_type_W
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.thermal import (
    ThermalGrid,
    package_grid,
    placement_power_map,
    solve_temperature,
    thermal_resistance_matrix,
)
from chipdse.evaluators.thermal_stack import load_thermal_stack
from chipdse.formulations.placement_thermal import ThermalPlacementProblem
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement_thermal import KIND as THERMAL_KIND
from chipdse.solvers.placement_thermal import solve_thermal_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.artifacts import FinalistResult, ServedLayout, ThermalFinalist, ThermalLayout
from chipdse.studies.hydra.simstudy import map_placement
from chipdse.studies.hydra.stages import _objective, served_layout

SERVE_MAPPING = "lpt-greedy"
"""Mapping both layouts of the throughput comparison get (one heuristic for both, so only the placement differs)."""


def scenario_grid(sc: LoadedScenario) -> ThermalGrid:
    """The package's thermal grid with the scenario's heat-sink and ambient overrides."""
    th = sc.spec.thermal
    stack = load_thermal_stack(heat_sink_K_per_W=th.heat_sink_K_per_W, ambient_C=th.ambient_C, values=th.stack)
    return package_grid(sc.package.rows, sc.package.cols, sc.package.cell_pitch_mm, stack)


def _layout(grid: ThermalGrid, name: str, sol: Solution, power: dict[str, float]) -> ThermalLayout:
    assert sol.decision is not None and sol.objective is not None
    return ThermalLayout(name, dict(sol.decision), float(sol.objective),
                         solve_temperature(grid, placement_power_map(grid, sol.decision, power)))


def _serve(sc: LoadedScenario, screen: Screen, f: FinalistResult, decision: dict[int, str], name: str,
           kind: LayoutKind, objective: float, cfg: SolverConfig) -> ServedLayout | None:
    """Map ``decision`` with :data:`SERVE_MAPPING` and re-score it (None when a phase has no mapping)."""
    lay = map_placement(sc, f.finalist.design.point, decision, name, cfg, SERVE_MAPPING, kind)
    return None if lay is None else served_layout(screen, f.finalist, lay, objective)


def thermal_finalist(sc: LoadedScenario, screen: Screen, f: FinalistResult, cfg: SolverConfig) -> ThermalFinalist:
    """Power and temperature of one finalist's placements, and its thermally constrained placement.

    Parameters
    ----------
    sc : LoadedScenario
    screen : Screen
        The estimator the layouts are re-scored with (:func:`chipdse.evaluators.serving.serve_layout`).
    f : FinalistResult
        The finalist with its placement solutions (exact and heuristic).
    cfg : SolverConfig
        Limits of the constrained MILP (and the mapping heuristic).

    Returns
    -------
    ThermalFinalist
    """
    th = sc.spec.thermal
    point = f.finalist.design.point
    pp = placement_problem(sc, point, f.finalist.design.capacity_rps)
    power = hydra_power_by_type_W(sc.library, [t for t, c in pp.counts.items() if c > 0], scenario_energy_table(sc),
                                  point.d2d_GBps, th.utilization)
    grid = scenario_grid(sc)
    res = ThermalFinalist(f.role, f.label, power, th.utilization, limit_C=th.limit_C)
    solved = [s for s in f.placement if s.decision is not None and s.objective is not None]
    exact = sorted((s for s in solved if s.exact), key=_objective)
    res.layouts = [_layout(grid, s.method, s, power) for s in exact[:1] + [s for s in solved if not s.exact]]
    if th.limit_C is None or not exact:
        return res
    if exact[0].status is SolutionStatus.OPTIMAL and res.layouts[0].thermal.peak_C <= th.limit_C:
        # the Eq. 2 optimum meets the limit, so it is the constrained optimum too: nothing to solve
        res.constrained = dataclasses.replace(exact[0], problem=THERMAL_KIND.name, log_summary=(
            f"{exact[0].method}'s Eq. 2 optimum already meets the limit: optimal with the limit too"))
    else:
        problem = ThermalPlacementProblem(pp, power, thermal_resistance_matrix(grid), grid.stack.ambient_C,
                                          th.limit_C)
        res.constrained = solve_thermal_placement(problem, "milp-highs", cfg, hint=exact[0].decision)
    if res.constrained.decision is not None:
        res.layouts.append(_layout(grid, "thermal-limit", res.constrained, power))
        served = {"unconstrained": _serve(sc, screen, f, exact[0].decision, exact[0].method, LayoutKind.EXACT,
                                          _objective(exact[0]), cfg),
                  "thermal-limit": _serve(sc, screen, f, res.constrained.decision, "thermal-limit",
                                          LayoutKind.THERMAL_LIMIT, res.layouts[-1].objective, cfg)}
        res.served = {k: v for k, v in served.items() if v is not None}
    return res


def thermal_stage(sc: LoadedScenario, screen: Screen, finalists: list[FinalistResult], cfg: SolverConfig
                  ) -> list[ThermalFinalist]:
    """Explore's power / thermal stage over its finalists: one :func:`thermal_finalist` each."""
    return [thermal_finalist(sc, screen, f, cfg) for f in finalists]


def thermal_summary(t: ThermalFinalist) -> dict[str, Any]:
    """Headline numbers of one finalist: peak of the exact layout (degC, cell), total power (W), and with a limit
    the constrained layout's peak, Eq. 2 cost ratio and throughput ratio."""
    ex, lim = t.exact, t.limited
    out: dict[str, Any] = {"label": t.label, "utilization": t.utilization, "limit_C": t.limit_C}
    if ex is not None:
        out.update(peak_C=ex.thermal.peak_C, hottest_cell=ex.thermal.hottest_cell,
                   total_power_W=float(np.sum(ex.thermal.power_W)))
    if t.constrained is not None:
        out["constrained_status"] = t.constrained.status.value
        out["constrained_reason"] = t.constrained.reason
    if ex is not None and lim is not None:
        out.update(constrained_peak_C=lim.thermal.peak_C, eq2_ratio=lim.objective / ex.objective)
        a, b = t.served.get("unconstrained"), t.served.get("thermal-limit")
        if a is not None and b is not None and a.served.throughput_tps > 0:
            out["throughput_ratio"] = b.served.throughput_tps / a.served.throughput_tps
    return out
