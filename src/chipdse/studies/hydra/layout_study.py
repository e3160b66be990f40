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

from typing import Any

import pandas as pd

from chipdse.core.design_space import PointSpec
from chipdse.core.scenario import LoadedScenario
from chipdse.formulations.link_load import max_link_load
from chipdse.formulations.placement import check_placement
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.link_load import solve_max_link_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.simstudy import Layout, SimJob, map_placement

MAX_LINK_METHOD = "layout-bnb"
"""The max-link method of the layout study: the one that proves the busiest link on the default finalists."""
LAYOUTS = (
    ("exact placement + exact mapping", "exact"),
    ("HYDRA greedy placement + LPT mapping", "hydra-greedy"),
    ("round-robin placement + round-robin mapping", "round-robin"),
)


def layout_candidates(sc: LoadedScenario, finalist: Any, cfg: SolverConfig) -> list[dict[str, Any]]:
    """B*'s layouts with their placement objectives (Eq. 2 byte-hops/s and busiest-link bytes/s).

    Returns one dict per layout: ``name``, ``layout`` (:class:`Layout`), ``eq2``, ``max_link``, ``bound``
    (the best proven Eq. 2 bound, for gaps), ``max_link_bound`` (only for the max-link layout).
    """

    row = finalist.row
    point = PointSpec.from_row(row, sc.compute_types())
    problem = placement_problem(sc, point, float(row["capacity_rps"]))
    bounds = [s.bound for s in finalist.placement if s.exact and s.bound is not None]
    best_bound = max(bounds) if bounds else None
    served = {s["layout"]: s for s in finalist.serving if "layout_data" in s}
    out = []
    for label, key in LAYOUTS:
        if label not in served:
            continue
        lay: Layout = served[label]["layout_data"]
        out.append({"name": key, "label": label, "layout": lay, "eq2": check_placement(problem, lay.placement)[0],
                    "max_link": max_link_load(problem, lay.placement), "bound": best_bound,
                    "max_link_bound": None})
    exact = next((c for c in out if c["name"] == "exact"), None)
    sol = solve_max_link_placement(problem, MAX_LINK_METHOD, cfg, hint=None if exact is None else
                                   exact["layout"].placement)
    lay = None if sol.decision is None else map_placement(sc, point, sol.decision, f"max-link {MAX_LINK_METHOD}", cfg)
    if lay is not None:
        out.append({"name": "max-link", "label": f"min max-link placement ({MAX_LINK_METHOD}) + LPT mapping",
                    "layout": lay,
                    "eq2": check_placement(problem, sol.decision)[0], "max_link": sol.objective,
                    "bound": best_bound, "max_link_bound": sol.bound})
    return out


def layout_jobs(sc: LoadedScenario, candidates: list[dict[str, Any]], rate_rps: float, duration_s: float
                ) -> list[SimJob]:
    """One simulation per layout: dynamic batching, static scheduling, ``rate_rps`` (req/s; explore offers
    ``simulation.load`` x the weakest layout's estimated capacity), ``duration_s`` (s) from empty."""
    return [SimJob(sc, c["layout"], rate_rps, duration_s, 0.0, "dynamic", "static",
                   tags={"study": "layout", "variant": c["name"]}) for c in candidates]


def layout_table(candidates: list[dict[str, Any]], served: dict[str, dict[str, float]],
                 results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per layout: objectives, estimator re-score (``served`` by name) and the simulator's metrics."""
    sims = {r["variant"]: r for r in results if r.get("study") == "layout"}
    rows = []
    for c in candidates:
        s, e = sims.get(c["name"], {}), served.get(c["name"], {})
        gap = None if c["bound"] is None or c["eq2"] <= 0 else (c["eq2"] - c["bound"]) / c["eq2"]
        rows.append({"layout": c["label"], "eq2_byte_hops_per_s": c["eq2"], "eq2_gap_to_bound": gap,
                     "max_link_GBps": c["max_link"] / 1e9,
                     "max_link_bound_GBps": None if c["max_link_bound"] is None else c["max_link_bound"] / 1e9,
                     "est_throughput_tps": e.get("throughput_tps"), "est_ttft_s": e.get("ttft_s"),
                     "sim_throughput_tps": s.get("sim_throughput_tps"), "sim_ttft_s": s.get("sim_ttft_s"),
                     "sim_ttft_p99_s": s.get("sim_ttft_p99_s")})
    return pd.DataFrame(rows)
