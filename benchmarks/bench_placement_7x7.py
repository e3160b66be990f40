"""Placement at 7 x 7: 16 HBM stacks (two groups) on the 24 ring cells and 24 compute chiplets of 4 types.

Traffic: the default scenario's B* pair volumes per chiplet-type pair (compute <-> its HBM group, prefill ->
decode hand-off, stage-to-stage activations), so every type pair that talks in B* talks here (dense). Prints, per
method, objective (byte-hops/s), proven bound, gap and wall time within the work limit (default 60 units).
Run: python benchmarks/bench_placement_7x7.py [WORK_LIMIT (work units per exact solve)]
"""

from __future__ import annotations

import platform
import sys

from chipdse.core.design_space import PointSpec, enumerate_points
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.selection import pick_b_star
from chipdse.formulations.placement import PlacementProblem, grid_ring_cells
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import placement_problem

COUNTS = {"Ap": 3, "Ad": 5, "Mp": 6, "Md": 10, "hbm:attention": 6, "hbm:mamba": 10}


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    sc = load_scenario()
    df = Screen(sc).score(enumerate_points(sc)[0])
    row = df.loc[pick_b_star(df)].to_dict()
    base = placement_problem(sc, PointSpec.from_row(row, sc.compute_types()), row["capacity_rps"])
    ring = grid_ring_cells(7, 7)
    problem = PlacementProblem(7, 7, COUNTS, dict(base.pair_volume),
                               allowed={t: ring for t in COUNTS if t.startswith("hbm:")}, ring_cells=ring,
                               name="7x7-16hbm-24compute", model_volume_floor=base.model_volume_floor)
    print(f"machine: {platform.machine()}, python {platform.python_version()}; {problem.name}: "
          f"{sum(COUNTS.values())} chiplets on 49 cells, {len(problem.pair_volume)} type pairs with traffic, "
          f"time limit {limit:g} s")
    cfg = SolverConfig(work_limit=limit, seed=0)
    best, best_obj = None, float("inf")
    for method in ("hydra-greedy", "local-search", "hbm-enum", "milp-highs", "cpsat"):
        sol = solve_placement(problem, method, cfg, seed=0, hint=best)
        if sol.objective is not None and sol.objective < best_obj:
            best, best_obj = sol.decision, sol.objective
        gap = "-" if sol.gap is None else f"{100 * sol.gap:.2f}%"
        bound = "-" if sol.bound is None else f"{sol.bound:.4e}"
        obj = "-" if sol.objective is None else f"{sol.objective:.4e}"
        print(f"{method:13s} objective {obj:>11s} bound {bound:>11s} gap {gap:>8s} {sol.status.value:>11s} "
              f"{sol.wall_s:7.1f} s" + (f"  ({sol.reason})" if sol.reason else ""))


if __name__ == "__main__":
    main()
