"""QAPLIB instances (n <= 12 by default) through the placement formulation's QAP mode, against published optima.

Prints per instance and solver: published optimum, incumbent, proven bound, status and wall time, and whether
the optimum is proven (objective and bound equal to it). Needs ../shared/qaplib (optima.csv + .dat files).
Run: python benchmarks/bench_qaplib.py [WORK_LIMIT] [SOLVERS (comma-separated: bnb,highs,cpsat)] [MAX_N]
Default: 300 work units, bnb (Gilmore-Lawler branch and bound), n <= 12.
"""

from __future__ import annotations

import csv
import platform
import sys
import time

from chipdse.core.paths import shared_dir
from chipdse.formulations.qap import read_qaplib
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.qap import solve_qap


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    solvers = sys.argv[2].split(",") if len(sys.argv) > 2 else ["bnb"]
    max_n = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    folder = shared_dir() / "qaplib"
    with (folder / "optima.csv").open() as fh:
        rows = [r for r in csv.DictReader(fh) if int(r["n"]) <= max_n]
    print(f"machine: {platform.machine()}, python {platform.python_version()}; time limit {limit:g} s per solve")
    print(f"{'instance':9s} {'n':>3s} {'solver':7s} {'optimum':>10s} {'incumbent':>10s} {'bound':>10s} "
          f"{'status':>9s} {'wall s':>7s}  proven nodes")
    proven = 0
    for r in sorted(rows, key=lambda r: (int(r["n"]), r["name"])):
        inst = read_qaplib(folder / f"{r['name']}.dat")
        opt = int(r["optimal_value"])
        for solver in solvers:
            t0 = time.perf_counter()
            sol = solve_qap(inst, solver, SolverConfig(work_limit=limit))
            wall = time.perf_counter() - t0
            ok = sol.objective == opt and sol.bound is not None and abs(sol.bound - opt) <= 1e-6 * opt
            proven += ok
            bound = "-" if sol.bound is None else f"{sol.bound:.0f}"
            nodes = sol.extra.get("nodes", "")
            print(f"{r['name']:9s} {inst.n:3d} {solver:7s} {opt:10d} {sol.objective:10.0f} {bound:>10s} "
                  f"{sol.status.value:>9s} {wall:7.1f}  {'yes' if ok else 'no':3s} {nodes}", flush=True)
    print(f"proven optimal: {proven} of {len(rows) * len(solvers)} solves")


if __name__ == "__main__":
    main()
