"""Placement solve time and gap vs size: grids 5x5 to 8x8, 12 to 64 chiplets, sparse and dense traffic.

Instances: compute types Ap, Ad, Mp, Md in the default B*'s proportions and two HBM groups on the ring (6 types),
with the B* pair volumes per type pair. Sparse traffic keeps only compute <-> HBM pairs; dense keeps every pair B*
has (also prefill -> decode hand-off and stage-to-stage activations). For each instance and method: objective,
proven bound, gap, Pyomo / CP-SAT build time, wall time and CPU time (the machine may be shared: CPU-s is what the
solve used), each warm-started from swap local search. Methods: the layout branch and bound (``hbm-bnb``), the
ring enumeration (``hbm-enum``; it refuses above 3,000,000 ring layouts), the type-count RLT-1 MILP through
Pyomo + HiGHS (``milp-highs``) and CP-SAT (``cpsat``).
Run: python benchmarks/bench_placement_scaling.py [WORK_LIMIT (work units per exact solve)] [METHOD ...] [--skip=N
(leave out the first N sizes)]
"""

from __future__ import annotations

import os
import platform
import sys
import time

from chipdse.core.scenario import load_scenario
from chipdse.formulations.placement import PlacementProblem, grid_ring_cells
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.stages import screen_and_pick

SIZES = [(5, 8, 4), (5, 16, 5), (6, 16, 6), (6, 24, 8), (7, 24, 8), (7, 24, 16), (7, 32, 10), (8, 32, 12),
         (8, 40, 12), (8, 36, 12), (8, 48, 16)]
"""(grid side, compute chiplets, HBM stacks)."""
CAP_S_PER_UNIT = 100.0
"""Wall cap per work unit: generous, so that the work limit (deterministic) ends each solve on a shared machine."""
SHARE = {"Ap": 1, "Ad": 2, "Mp": 3, "Md": 2}
"""Compute chiplets per type, in eighths."""


def instance(side: int, n_compute: int, n_hbm: int, volumes: dict, dense: bool) -> PlacementProblem:
    counts = {t: max(1, n_compute * k // 8) for t, k in SHARE.items()}
    counts["Md"] += n_compute - sum(counts.values())
    counts["hbm:attention"] = max(1, n_hbm // 3)
    counts["hbm:mamba"] = n_hbm - counts["hbm:attention"]
    vol = {k: v for k, v in volumes.items() if dense or k[0].startswith("hbm:") or k[1].startswith("hbm:")}
    ring = grid_ring_cells(side, side)
    name = f"{side}x{side}-{n_compute}c-{n_hbm}h-{'dense' if dense else 'sparse'}"
    return PlacementProblem(side, side, counts, vol, allowed={t: ring for t in counts if t.startswith("hbm:")},
                            ring_cells=ring, name=name)


def b_star_placement() -> PlacementProblem:
    """The default scenario's B* placement instance (its pair volumes seed every instance here)."""
    sc = load_scenario()
    b_star = screen_and_pick(sc)[2].b_star  # B*, picked as explore picks it
    row = dict(b_star.row)
    return placement_problem(sc, b_star.design.point, row["capacity_rps"])


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    skip = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--skip=")), 0)
    limit = float(args[0]) if args else 20.0
    methods = args[1:] or ["hbm-bnb", "hbm-enum", "milp-highs", "cpsat"]
    base = b_star_placement()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}; work limit "
          f"{limit:g} units per exact solve, 2 threads; objective in byte-hops/s; load {os.getloadavg()[0]:.1f}")
    print(f"{'instance':26s} {'chiplets':>8s} {'method':10s} {'objective':>11s} {'bound':>11s} {'gap':>8s} "
          f"{'build s':>8s} {'wall s':>8s} {'CPU s':>8s}  status")
    cfg = SolverConfig(work_limit=limit, time_limit_s=CAP_S_PER_UNIT * limit, seed=0)
    for side, n_compute, n_hbm in SIZES[skip:]:
        for dense in (False, True):
            problem = instance(side, n_compute, n_hbm, dict(base.pair_volume), dense)
            start = solve_placement(problem, "local-search", cfg)
            for method in methods:
                cpu0 = time.process_time()
                sol = solve_placement(problem, method, cfg, hint=start.decision)
                cpu_s = time.process_time() - cpu0
                gap = "-" if sol.gap is None else f"{100 * sol.gap:.2f}%"
                bound = "-" if sol.bound is None else f"{sol.bound:.4e}"
                obj = "-" if sol.objective is None else f"{sol.objective:.4e}"
                note = f" ({sol.reason})" if sol.reason and sol.objective is None else ""
                print(f"{problem.name:26s} {n_compute + n_hbm:8d} {method:10s} {obj:>11s} {bound:>11s} {gap:>8s} "
                      f"{sol.build_s:8.2f} {sol.wall_s:8.2f} {cpu_s:8.2f}  {sol.status.value}{note}", flush=True)


if __name__ == "__main__":
    main()
