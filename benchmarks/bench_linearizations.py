"""Two linearizations of the placement objective: RLT-1 (``milp-highs``) against the compact Kaufman-Broeckx model
(``milp-compact``).

For each instance: model size (columns, rows), Pyomo build time, root LP bound (integrality relaxed, as a share
of the best known placement) and its solve time, then the MILP within the time limit, warm-started from swap
local search. The best known placement is hbm-enum's proven optimum. Instances: the default B* (24 chiplets on
5 x 5) and smaller sparse / dense ones from bench_placement_scaling.
Run: python benchmarks/bench_linearizations.py [WORK_LIMIT (work units per exact solve)]
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import pyomo.environ as pyo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_placement_scaling import b_star_placement, instance  # noqa: E402

from chipdse.formulations.placement import build_placement_milp  # noqa: E402
from chipdse.formulations.placement_compact import build_placement_compact_milp  # noqa: E402
from chipdse.solvers.backends import solve_pyomo  # noqa: E402
from chipdse.solvers.config import SolverConfig  # noqa: E402
from chipdse.solvers.placement import solve_placement  # noqa: E402

BUILDERS = {"milp-highs": build_placement_milp, "milp-compact": build_placement_compact_milp}


def root_lp(problem, builder, limit: float) -> tuple[int, int, float, float | None, float]:
    """(columns, rows, build s, LP bound in bytes x hops or None, LP solve s)."""
    t0 = time.perf_counter()
    m = builder(problem)
    build_s = time.perf_counter() - t0
    cols = sum(len(v) for v in m.component_objects(pyo.Var, active=True))
    rows = sum(len(c) for c in m.component_objects(pyo.Constraint, active=True))
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(m)
    res = solve_pyomo(m, SolverConfig(work_limit=limit))
    bound = None if res.objective is None else res.objective * pyo.value(m.volume_unit)
    return cols, rows, build_s, bound, res.wall_s


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    base = b_star_placement()
    problems = [base] + [instance(5, 8, 4, dict(base.pair_volume), d) for d in (False, True)] + [
        instance(6, 16, 6, dict(base.pair_volume), d) for d in (False, True)]
    cfg = SolverConfig(work_limit=limit, seed=0)
    print(f"machine: {platform.machine()}, python {platform.python_version()}; time limit {limit:g} s")
    print(f"{'instance':38s} {'model':12s} {'cols':>7s} {'rows':>7s} {'build s':>7s} {'LP/opt':>7s} {'LP s':>6s} "
          f"{'MILP gap':>8s} {'MILP s':>7s} status")
    for problem in problems:
        opt = solve_placement(problem, "hbm-enum", SolverConfig(work_limit=120)).objective
        start = solve_placement(problem, "local-search", cfg).decision
        for method, builder in BUILDERS.items():
            cols, rows, build_s, lp, lp_s = root_lp(problem, builder, limit)
            sol = solve_placement(problem, method, cfg, hint=start)
            share = "-" if lp is None else f"{lp / opt:.3f}"
            gap = "-" if sol.gap is None else f"{100 * sol.gap:.1f}%"
            print(f"{problem.name[:38]:38s} {method:12s} {cols:7d} {rows:7d} {build_s:7.2f} {share:>7s} "
                  f"{lp_s:6.1f} {gap:>8s} {sol.wall_s:7.1f} {sol.status.value}", flush=True)


if __name__ == "__main__":
    main()
