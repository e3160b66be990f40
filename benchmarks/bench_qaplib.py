"""QAPLIB instances against their published optima: per instance and solver the incumbent, proven bound, gap,
status, the limit that ended the solve, nodes, CPU seconds and wall seconds.

Needs ../shared/qaplib (optima.csv + .dat files). Every limit is a work limit (deterministic, about one CPU-second
per unit): objective, bound and status are the same on a busy and an idle machine; CPU-s and wall-s are not.
Run: python benchmarks/bench_qaplib.py [WORK_LIMIT] [SOLVERS (comma-separated: bnb,glb,highs,cpsat)] [MAX_N]
[NAMES (comma-separated; default all with n <= MAX_N)] [MIN_N]
Default: 300 work units, bnb (RLT-1 dual ascent branch and bound), n <= 12.
"""

from __future__ import annotations

import csv
import os
import platform
import sys
import time

from chipdse.core.paths import shared_dir
from chipdse.core.qaplib import read_qaplib
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.qap import solve_qap

WALL_CAP_PER_UNIT_S = 60.0
"""Wall cap per work unit: generous, so that on a machine shared by many processes the work limit (the same on
any machine) ends every solve, not the wall clock."""


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    solvers = sys.argv[2].split(",") if len(sys.argv) > 2 else ["bnb"]
    max_n = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    names = set(sys.argv[4].split(",")) if len(sys.argv) > 4 and sys.argv[4] != "all" else None
    min_n = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    folder = shared_dir() / "qaplib"
    with (folder / "optima.csv").open() as fh:
        rows = [r for r in csv.DictReader(fh)
                if min_n <= int(r["n"]) <= max_n and (names is None or r["name"] in names)]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, load "
          f"{os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}; work limit {limit:g} units per solve")
    head = ("instance", "n", "solver", "optimum", "incumbent", "bound", "gap %", "status", "ended by", "nodes", "CPU s",
            "wall s")
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    proven = 0
    for r in sorted(rows, key=lambda r: (int(r["n"]), r["name"])):
        inst = read_qaplib(folder / f"{r['name']}.dat")
        opt = int(r["optimal_value"])
        for solver in solvers:
            c0, t0 = time.process_time(), time.perf_counter()
            config = SolverConfig(work_limit=limit, time_limit_s=WALL_CAP_PER_UNIT_S * limit + 60)
            sol = solve_qap(inst, solver, config)
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            ok = sol.objective == opt and sol.bound is not None and abs(sol.bound - opt) <= 1e-6 * max(opt, 1)
            proven += ok
            bound = "-" if sol.bound is None else f"{sol.bound:.0f}"
            gap = "-" if sol.bound is None else f"{100 * (sol.objective - sol.bound) / max(sol.objective, 1):.1f}"
            ended = "proof" if ok else sol.termination.value
            print(f"| {r['name']} | {inst.n} | {solver} | {opt} | {sol.objective:.0f} | {bound} | {gap} | "
                  f"{sol.status.value} | {ended} | {sol.extra.get('nodes', '')} | {cpu:.1f} | {wall:.1f} |", flush=True)
    print(f"proven optimal: {proven} of {len(rows) * len(solvers)} solves")


if __name__ == "__main__":
    main()
