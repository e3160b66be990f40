"""What the exact layout buys at serving time: B*'s layouts side by side, estimator and simulator.

Layouts of the B* finalist as explore solved them (best exact placement + exact mapping, HYDRA greedy + LPT,
round-robin + round-robin), plus the placement minimizing the busiest NoI link under XY routing
(``solvers.link_load``'s ``layout-bnb``, started from the exact placement, LPT mapping: it bounds the busiest link
where the max-link MILP stops at its start with a zero bound). For each: HYDRA Eq. 2's hop-weighted volume and its
gap to the best proven bound, the busiest link's load, the estimator's re-score, and the event simulator (dynamic
batching, static scheduling) with every layout at one offered load all of them sustain: ``simulation.load`` x the
weakest layout's estimated capacity (at a share of the exact layout's, round-robin ran overloaded and its
throughput and TTFT measured the window's length, not the layout).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from chipdse.core.layout import Layout, LayoutKind
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.serving import Served
from chipdse.formulations.link_load import max_link_load
from chipdse.formulations.placement import check_placement
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.link_load import solve_max_link_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.artifacts import FinalistResult
from chipdse.studies.hydra.simstudy import SimJob, map_placement

MAX_LINK_METHOD = "layout-bnb"
"""The max-link method of the layout study: the one that proves the busiest link on the default finalists."""
LAYOUTS = (LayoutKind.EXACT, LayoutKind.HYDRA_GREEDY, LayoutKind.ROUND_ROBIN)
"""B*'s layouts from the finalist stage, in table order (the max-link one follows)."""


@dataclass(frozen=True)
class LayoutCandidate:
    """One of B*'s layouts in the layout study.

    Attributes
    ----------
    name : str
        Its key (the layout kind's value, ``"max-link"`` for the min max-link placement).
    label : str
        Its name in the table.
    layout : Layout
    eq2 : float
        HYDRA Eq. 2 of its placement, byte-hops/s.
    max_link : float
        The busiest directed link's load under XY routing, bytes/s.
    bound : float or None
        The best proven Eq. 2 bound of the finalist's exact placements (for gaps).
    max_link_bound : float or None
        The max-link solve's proven bound, bytes/s (the max-link layout only).
    """

    name: str
    label: str
    layout: Layout
    eq2: float
    max_link: float
    bound: float | None
    max_link_bound: float | None = None


def layout_candidates(sc: LoadedScenario, finalist: FinalistResult, cfg: SolverConfig) -> list[LayoutCandidate]:
    """B*'s layouts with their placement objectives (Eq. 2 byte-hops/s and busiest-link bytes/s): the finalist's
    exact, greedy and round-robin layouts, then the placement minimizing the busiest link (:data:`MAX_LINK_METHOD`,
    started from the exact placement, LPT mapping)."""
    point = finalist.finalist.design.point
    problem = placement_problem(sc, point, finalist.finalist.design.capacity_rps)
    bounds = [s.bound for s in finalist.placement if s.exact and s.bound is not None]
    best_bound = max(bounds) if bounds else None
    lays = finalist.layouts()
    out = [LayoutCandidate(str(kind), kind.label, lays[kind], check_placement(problem, lays[kind].placement)[0],
                           max_link_load(problem, lays[kind].placement), best_bound)
           for kind in LAYOUTS if kind in lays]
    exact = lays.get(LayoutKind.EXACT)
    sol = solve_max_link_placement(problem, MAX_LINK_METHOD, cfg, hint=None if exact is None else exact.placement)
    lay = None if sol.decision is None else map_placement(sc, point, sol.decision, f"max-link {MAX_LINK_METHOD}", cfg,
                                                          kind=LayoutKind.MAX_LINK)
    if lay is not None and sol.decision is not None and sol.objective is not None:
        out.append(LayoutCandidate("max-link", f"min max-link placement ({MAX_LINK_METHOD}) + LPT mapping", lay,
                                   check_placement(problem, sol.decision)[0], float(sol.objective), best_bound,
                                   sol.bound))
    return out


def layout_jobs(sc: LoadedScenario, candidates: list[LayoutCandidate], rate_rps: float, duration_s: float
                ) -> list[SimJob]:
    """One simulation per layout: dynamic batching, static scheduling, ``rate_rps`` (req/s; explore offers
    ``simulation.load`` x the weakest layout's estimated capacity), ``duration_s`` (s) from empty."""
    return [SimJob(sc, c.layout, rate_rps, duration_s, 0.0, "dynamic", "static",
                   tags={"study": "layout", "variant": c.name}) for c in candidates]


def _at_offered(e: Served | None, rate_rps: object) -> float | None:
    """The estimator's throughput at the simulated run's offered rate (tok/s): min(rate, capacity) x tokens per
    request, the number comparable with the simulated throughput at that rate (issue 30; the capacity is not)."""
    if e is None or not isinstance(rate_rps, int | float) or e.capacity_rps <= 0:
        return None
    return min(float(rate_rps), e.capacity_rps) * e.throughput_tps / e.capacity_rps


def layout_table(candidates: list[LayoutCandidate], served: dict[str, Served],
                 results: list[dict[str, object]]) -> pd.DataFrame:
    """One row per layout: objectives, estimator re-score (``served`` by name: capacity, and ``est_offered_tps`` at
    the simulated run's offered rate ``offered_rps``) and the simulator's metrics over ``sim_duration_s``."""
    sims = {r["variant"]: r for r in results if r.get("study") == "layout"}
    rows = []
    for c in candidates:
        s, e = sims.get(c.name, {}), served.get(c.name)
        gap = None if c.bound is None or c.eq2 <= 0 else (c.eq2 - c.bound) / c.eq2
        rows.append({"layout": c.label, "eq2_byte_hops_per_s": c.eq2, "eq2_gap_to_bound": gap,
                     "max_link_GBps": c.max_link / 1e9,
                     "max_link_bound_GBps": None if c.max_link_bound is None else c.max_link_bound / 1e9,
                     "est_throughput_tps": None if e is None else e.throughput_tps,
                     "est_ttft_s": None if e is None else e.ttft_s,
                     "offered_rps": s.get("rate_rps"), "sim_duration_s": s.get("duration_s"),
                     "est_offered_tps": _at_offered(e, s.get("rate_rps")),
                     "sim_throughput_tps": s.get("sim_throughput_tps"), "sim_ttft_s": s.get("sim_ttft_s"),
                     "sim_ttft_p99_s": s.get("sim_ttft_p99_s")})
    return pd.DataFrame(rows)
