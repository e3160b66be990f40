"""Placement at 7 x 7: 16 HBM stacks (two groups) on the 24 ring cells and 24 compute chiplets of 4 types.

Traffic: the default scenario's B* pair volumes per chiplet-type pair (compute <-> its HBM group, prefill ->
decode hand-off, stage-to-stage activations), so every type pair that talks in B* talks here (dense). Runs the
methods through the same code as ``chipdse compare placement`` (``solvers.compare.run_methods``: heuristics alone,
exact methods warm-started from the best decision so far) and prints, per method, objective (byte-hops/s), proven
bound, gap, status, wall and CPU seconds within the work limit (default 60 units per exact solve).

With ``--busy`` the table is printed twice: once as the machine is, once with two extra processes spinning on
the CPU (both cores of the reference machine kept busy); the work limits are deterministic, so the two tables must
agree in every column but the times, and the script says whether they do.
With ``--frozen`` the instance is the one measured on 2026-12-01 (``calibration_7x7_2026-12-01.json``) instead of
today's B* volumes.
Run: python benchmarks/bench_placement_7x7.py [WORK_LIMIT] [--busy] [--frozen] [--methods=M1,M2,...]
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path

from chipdse.core.scenario import load_scenario
from chipdse.formulations.placement import PlacementProblem, grid_ring_cells
from chipdse.solvers.compare import comparison_rows, run_methods
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.stages import screen_and_pick

COUNTS = {"Ap": 3, "Ad": 5, "Mp": 6, "Md": 10, "hbm:attention": 6, "hbm:mamba": 10}
FROZEN = Path(__file__).with_name("calibration_7x7_2026-12-01.json")
"""The calibration case's volumes on the day issue 18 measured it (B* has moved since with the estimator)."""
METHODS = ["hydra-greedy", "local-search", "hbm-bnb", "hbm-enum", "milp-highs", "cpsat"]
BUSY_PROCESSES = 2


def calibration_problem() -> PlacementProblem:
    """The 7 x 7 calibration instance (16 HBM + 24 compute, dense B* traffic)."""
    sc = load_scenario()
    b_star = screen_and_pick(sc)[2].b_star  # B*, picked as explore picks it
    row = dict(b_star.row)
    base = placement_problem(sc, b_star.design.point, row["capacity_rps"])
    ring = grid_ring_cells(7, 7)
    return PlacementProblem(7, 7, COUNTS, dict(base.pair_volume),
                            allowed={t: ring for t in COUNTS if t.startswith("hbm:")}, ring_cells=ring,
                            name="7x7-16hbm-24compute", model_volume_floor=base.model_volume_floor)


def frozen_problem() -> PlacementProblem:
    """The calibration instance as measured on 2026-12-01 (its volumes frozen in FROZEN)."""
    d = json.loads(FROZEN.read_text())
    return PlacementProblem(7, 7, d["counts"], {(a, b): v for a, b, v in d["pair_volume"]},
                            allowed={t: tuple(c) for t, c in d["allowed"].items()}, ring_cells=tuple(d["ring"]),
                            name="7x7-16hbm-24compute (2026-12-01)", model_volume_floor=d["floor"])


def table(problem: PlacementProblem, methods: list[str], cfg: SolverConfig) -> list[tuple]:
    """Run the methods; print one line each; return the rows without their times (for the comparison)."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    rows = comparison_rows(run_methods("placement", problem, methods, cfg))
    print(f"  load {os.getloadavg()[0]:.1f}; total {time.perf_counter() - wall0:.1f} wall-s, "
          f"{time.process_time() - cpu0:.1f} CPU-s (this process)")
    out = []
    for r in rows:
        def num(v: float | None) -> str:
            return "-" if v is None else f"{v:.6e}"

        gap = "-" if r["gap"] is None else f"{100 * r['gap']:.4f}%"
        print(f"  {r['method']:13s} objective {num(r['objective']):>13s} bound {num(r['bound']):>13s} gap {gap:>9s} "
              f"{r['status']:>11s} {r['wall_s']:7.1f} wall-s")
        out.append((r["method"], num(r["objective"]), num(r["bound"]), gap, r["status"]))
    return out


def _spin(stop: mp.Event) -> None:  # type: ignore[valid-type]
    """Keep one core busy until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1_103_515_245 + 12_345) % 2**31


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    limit = float(args[0]) if args else 60.0
    methods = METHODS
    for a in sys.argv[1:]:
        if a.startswith("--methods="):
            methods = a.split("=", 1)[1].split(",")
    problem = frozen_problem() if "--frozen" in sys.argv else calibration_problem()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}; "
          f"{problem.name}: {sum(COUNTS.values())} chiplets on 49 cells, {len(problem.pair_volume)} type pairs with "
          f"traffic, work limit {limit:g} units per exact solve; {time.strftime('%Y-%m-%d %H:%M')}")
    cfg = SolverConfig(work_limit=limit, time_limit_s=100.0 * limit, seed=0)  # the work limit ends each solve
    print("run 1 (machine as it is)")
    first = table(problem, methods, cfg)
    if "--busy" not in sys.argv:
        return
    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(BUSY_PROCESSES)]
    for p in spinners:
        p.start()
    try:
        print(f"run 2 ({BUSY_PROCESSES} extra processes spinning)")
        second = table(problem, methods, cfg)
    finally:
        stop.set()
        for p in spinners:
            p.join()
    same = first == second
    print("the two tables agree in objective, bound, gap and status" if same else
          f"the tables differ: {[(a, b) for a, b in zip(first, second, strict=True) if a != b]}")


if __name__ == "__main__":
    main()
