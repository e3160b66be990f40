"""Explore's power / thermal stage: power map, temperature map and peak of each finalist's placements, and, when
the scenario sets a limit, the thermally constrained exact placement and what it costs (issue 17 items 3 and 5).

Per finalist (B*, M_T): the power of one chiplet of each type at the scenario's utilization
(:func:`chipdse.evaluators.thermal.hydra_power_by_type_W`), the steady-state temperature map of every placement the
finalist stage solved (:func:`chipdse.evaluators.thermal.solve_temperature`), and with ``thermal.limit_C`` set the
MILP with the per-cell temperature limit (:mod:`chipdse.solvers.placement_thermal`; not solved when the proven Eq. 2
optimum already meets the limit, as it is then the constrained optimum too), its Eq. 2 cost against the best exact
unconstrained placement, and both layouts re-scored by the serving model under the same LPT mapping.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chipdse.core.design_space import PointSpec
from chipdse.core.scenario import LoadedScenario
from chipdse.core.solution import Solution, SolutionStatus
from chipdse.evaluators.energy import load_energy_table
from chipdse.evaluators.thermal import (
    ThermalGrid,
    ThermalMap,
    hydra_power_by_type_W,
    load_thermal_stack,
    package_grid,
    placement_power_map,
    solve_temperature,
    thermal_resistance_matrix,
)
from chipdse.formulations.placement_thermal import ThermalPlacementProblem
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement_thermal import KIND as THERMAL_KIND
from chipdse.solvers.placement_thermal import solve_thermal_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.simstudy import map_placement

SERVE_MAPPING = "lpt-greedy"
"""Mapping both layouts of the throughput comparison get (one heuristic for both, so only the placement differs)."""


@dataclass
class ThermalLayout:
    """One placement's power and temperature.

    Attributes
    ----------
    name : str
        ``"<method>"`` of the finalist's placement, or ``"thermal-limit"`` for the constrained one.
    decision : dict[int, str]
        Cell -> chiplet type.
    objective : float
        HYDRA Eq. 2, bytes x hops per s (the checker's value).
    thermal : ThermalMap
        Power (W) and temperature (degC) per cell.
    """

    name: str
    decision: dict[int, str]
    objective: float
    thermal: ThermalMap


@dataclass
class ThermalFinalist:
    """The power / thermal results of one finalist.

    Attributes
    ----------
    role, label : str
        ``"B*"`` / ``"M_T"`` and the design's label.
    power_by_type_W : dict[str, float]
        W per chiplet of each placement type at ``utilization``.
    utilization : float
        Busy fraction the powers assume.
    layouts : list[ThermalLayout]
        Every placement the finalist stage solved, best exact first.
    limit_C : float | None
        The scenario's limit, degC (``None``: no constrained placement).
    constrained : Solution | None
        The thermally constrained exact placement (``None`` without a limit).
    served : dict[str, dict[str, Any]]
        Serving re-score (``capacity_rps``, ``throughput_tps``, ``ttft_s``, ``stable``) and the mapped ``layout``
        (:class:`~chipdse.studies.hydra.simstudy.Layout`, for a simulation) of the best exact unconstrained placement
        (``"unconstrained"``) and of the constrained one (``"thermal-limit"``), both mapped by
        :data:`SERVE_MAPPING`; empty without a limit or a constrained placement.
    """

    role: str
    label: str
    power_by_type_W: dict[str, float]  # noqa: N815 - unit in name
    utilization: float
    layouts: list[ThermalLayout] = field(default_factory=list)
    limit_C: float | None = None  # noqa: N815
    constrained: Solution | None = None
    served: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def exact(self) -> ThermalLayout | None:
        """The best exact unconstrained layout (the first), if any."""
        return self.layouts[0] if self.layouts else None

    @property
    def limited(self) -> ThermalLayout | None:
        """The constrained layout, if one was found."""
        return next((lay for lay in self.layouts if lay.name == "thermal-limit"), None)


def scenario_grid(sc: LoadedScenario) -> ThermalGrid:
    """The package's thermal grid with the scenario's heat-sink and ambient overrides."""
    th = sc.spec.thermal
    stack = load_thermal_stack(heat_sink_K_per_W=th.heat_sink_K_per_W, ambient_C=th.ambient_C)
    return package_grid(sc.package.rows, sc.package.cols, sc.package.cell_pitch_mm, stack)


def _layout(grid: ThermalGrid, name: str, sol: Solution, power: dict[str, float]) -> ThermalLayout:
    return ThermalLayout(name, dict(sol.decision), float(sol.objective),
                         solve_temperature(grid, placement_power_map(grid, sol.decision, power)))


def _serve(sc: LoadedScenario, point: PointSpec, decision: dict[int, str], name: str, cfg: SolverConfig,
           serve: Callable[..., dict[str, Any]], screen: Any) -> dict[str, Any]:
    """Map ``decision`` with :data:`SERVE_MAPPING` and re-score it; the mapped ``layout`` is kept for simulation."""
    lay = map_placement(sc, point, decision, name, cfg, SERVE_MAPPING)
    if lay is None:
        return {"capacity_rps": float("nan"), "throughput_tps": float("nan"), "ttft_s": float("nan"), "stable": False,
                "layout": None}
    out = serve(screen, sc, point, lay.placement, lay.prefill_map, lay.decode_map)
    return {**{k: out[k] for k in ("capacity_rps", "throughput_tps", "ttft_s", "stable")}, "layout": lay}


def thermal_finalist(sc: LoadedScenario, role: str, row: dict[str, Any], placements: list[Solution],
                     cfg: SolverConfig, serve: Callable[..., dict[str, Any]], screen: Any) -> ThermalFinalist:
    """Power and temperature of one finalist's placements, and its thermally constrained placement.

    Parameters
    ----------
    sc : LoadedScenario
    role : str
        ``"B*"`` or ``"M_T"``.
    row : dict
        The finalist's screen row (``label``, ``capacity_rps``, counts, ``d2d_GBps``, ...).
    placements : list[Solution]
        The finalist stage's placement solutions (exact and heuristic).
    cfg : SolverConfig
        Limits of the constrained MILP (and the mapping heuristic).
    serve : callable
        ``explore.serve_layout`` (passed in: explore owns it).
    screen : Screen
        The estimator ``serve`` re-scores with.

    Returns
    -------
    ThermalFinalist
    """
    th = sc.spec.thermal
    point = PointSpec.from_row(row, sc.compute_types())
    pp = placement_problem(sc, point, float(row["capacity_rps"]))
    power = hydra_power_by_type_W(sc.library, [t for t, c in pp.counts.items() if c > 0], load_energy_table(),
                                  point.d2d_GBps, th.utilization)
    grid = scenario_grid(sc)
    res = ThermalFinalist(role, row["label"], power, th.utilization, limit_C=th.limit_C)
    solved = [s for s in placements if s.decision is not None and s.objective is not None]
    exact = sorted((s for s in solved if s.exact), key=lambda s: s.objective)
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
        res.served = {"unconstrained": _serve(sc, point, exact[0].decision, exact[0].method, cfg, serve, screen),
                      "thermal-limit": _serve(sc, point, res.constrained.decision, "thermal-limit", cfg, serve,
                                              screen)}
    return res


def thermal_stage(sc: LoadedScenario, finalists: list[Any], cfg: SolverConfig, serve: Callable[..., dict[str, Any]],
                  screen: Any) -> list[ThermalFinalist]:
    """Explore's power / thermal stage over its finalists (``FinalistResult`` with ``role``, ``row``,
    ``placement``): one :func:`thermal_finalist` each."""
    return [thermal_finalist(sc, f.role, f.row, f.placement, cfg, serve, screen) for f in finalists]


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
        if a and b and a["throughput_tps"] > 0 and b["layout"] is not None:
            out["throughput_ratio"] = b["throughput_tps"] / a["throughput_tps"]
    return out
