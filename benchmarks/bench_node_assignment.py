"""The layout branch and bound's node assignment problem: cells as rows against chiplets as rows.

Runs a short ``hbm-bnb`` search (2 work units) on the full 8 x 8 grid (48 compute chiplets of 4 types + 16 HBM
stacks, dense traffic) and on the 8 x 8 grid with 36 compute chiplets, records every 10th node's assignment matrix
(open cells x chiplets and stacks still to place) and solves each with ``scipy.optimize.linear_sum_assignment``
both ways round: as the search builds it (cells as rows) and transposed (chiplets as rows, the baseline: how the
search built it before). Prints per instance the matrices' shape, microseconds per solve (CPU and wall) each way,
the ratio, and the largest relative difference of the two optima (they must agree).
Run: python benchmarks/bench_node_assignment.py
"""

from __future__ import annotations

import os
import platform
import sys
import time

import numpy as np

import chipdse.solvers.placement_bnb as placement_bnb
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import solve_placement

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_placement_scaling import b_star_placement, instance  # noqa: E402

SAMPLE_EVERY = 10
"""Record every 10th node's matrix."""
MAX_MATRICES = 2_000


def record(problem) -> list[np.ndarray]:
    """Node assignment matrices of a 2-unit hbm-bnb search on ``problem``."""
    seen: list[np.ndarray] = []
    calls = [0]
    solve = placement_bnb.linear_sum_assignment

    def spy(matrix: np.ndarray):  # noqa: ANN202
        calls[0] += 1
        if calls[0] % SAMPLE_EVERY == 0 and len(seen) < MAX_MATRICES:
            seen.append(np.array(matrix))
        return solve(matrix)

    placement_bnb.linear_sum_assignment = spy
    try:
        solve_placement(problem, "hbm-bnb", SolverConfig(work_limit=2, seed=0))
    finally:
        placement_bnb.linear_sum_assignment = solve
    return seen


def time_solves(matrices: list[np.ndarray], transpose: bool) -> tuple[float, float, np.ndarray]:
    """(CPU us per solve, wall us per solve, optimum of each matrix)."""
    values = np.empty(len(matrices))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for k, m in enumerate(matrices):
        a = m.T if transpose else m
        r, c = placement_bnb.linear_sum_assignment(a)
        values[k] = a[r, c].sum()
    n = max(len(matrices), 1)
    return 1e6 * (time.process_time() - cpu0) / n, 1e6 * (time.perf_counter() - wall0) / n, values


def main() -> None:
    base = b_star_placement()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}; "
          f"load {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'instance':22s} {'matrices':>8s} {'shape':>9s} {'cells-rows CPU/wall us':>23s} "
          f"{'chiplets-rows CPU/wall us':>26s} {'ratio':>6s} {'max rel diff':>12s}")
    for side, n_compute, n_hbm in ((8, 48, 16), (8, 36, 12)):
        problem = instance(side, n_compute, n_hbm, dict(base.pair_volume), True)
        mats = record(problem)
        cpu_new, wall_new, v_new = time_solves(mats, transpose=False)
        cpu_old, wall_old, v_old = time_solves(mats, transpose=True)
        diff = float(np.max(np.abs(v_new - v_old) / np.maximum(np.abs(v_old), 1.0)))
        shape = f"{mats[0].shape[0]}x{mats[0].shape[1]}" if mats else "-"
        print(f"{problem.name:22s} {len(mats):8d} {shape:>9s} {cpu_new:11.0f} / {wall_new:9.0f} "
              f"{cpu_old:14.0f} / {wall_old:9.0f} {cpu_old / cpu_new:6.2f} {diff:12.1e}", flush=True)


if __name__ == "__main__":
    main()
