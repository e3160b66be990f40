"""Layout solves on the default scenario's B*: every placement and mapping method, time and quality.

Prints, per method: objective, bound, gap, wall time, and the ratio of the objective to the best found in the
same run (1.000 = best). Run: python benchmarks/bench_layouts.py [WORK_LIMIT]
"""

from __future__ import annotations

import sys

from chipdse.core.scenario import load_scenario
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import mapping_problem, placement_problem
from chipdse.studies.hydra.stages import screen_and_pick


def show(title: str, sols: list) -> None:
    """Print one table of solutions with the ratio to the best objective."""
    best = min(s.objective for s in sols if s.objective is not None)
    print(f"\n{title}")
    print(f"{'method':14s} {'objective':>12s} {'bound':>12s} {'gap %':>7s} {'wall s':>7s} {'vs best':>8s}")
    for s in sols:
        obj = "-" if s.objective is None else f"{s.objective:12.4g}"
        bnd = "-" if s.bound is None else f"{s.bound:12.4g}"
        gap = "-" if s.gap is None else f"{100 * s.gap:7.2f}"
        ratio = "-" if s.objective is None else f"{s.objective / best:8.3f}"
        print(f"{s.method:14s} {obj:>12s} {bnd:>12s} {gap:>7s} {s.wall_s:7.2f} {ratio:>8s}")


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    cfg = SolverConfig(work_limit=limit)
    sc = load_scenario()
    b_star = screen_and_pick(sc)[2].b_star  # B*, picked as explore picks it
    row = dict(b_star.row)
    print(f"B* = {row['label']}, time limit {limit:g} s per exact solve, {cfg.threads} threads")
    point = b_star.design.point
    pp = placement_problem(sc, point, row["capacity_rps"])
    heur = [solve_placement(pp, m, cfg) for m in ("hydra-greedy", "round-robin", "random", "local-search")]
    start = min((s for s in heur if s.objective is not None), key=lambda s: s.objective)
    exact = [solve_placement(pp, m, cfg, hint=start.decision) for m in ("hbm-enum", "milp-highs", "cpsat")]
    show("placement (byte-hops/s)", heur + exact)
    best = min((s for s in exact if s.objective is not None), key=lambda s: s.objective)
    mp = mapping_problem(sc, point, best.decision, "decode", point.batch)
    show("decode mapping (bottleneck stage, s)",
         [solve_mapping(mp, m, cfg) for m in ("lpt-greedy", "round-robin", "contiguous-dp", "milp-highs", "cpsat")])


if __name__ == "__main__":
    main()
