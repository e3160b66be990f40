"""Estimator fidelity against the event simulator over the default scenario's design points.

Sample: the estimator's 8 highest-throughput points plus N points spread evenly over the estimator's throughput
ranking of all feasible points (N = 24 by default). Each is placed with the exact ``hbm-enum`` method (HYDRA
greedy when that finds nothing in 5 s), mapped with LPT, and simulated with dynamic batching and static task
scheduling: saturated for throughput, at the offered load for TTFT (``chipdse.studies.simstudy``). Prints one line per
point, the simulator's events/s, and the metrics against their targets: cosine >= 0.95, Spearman >= 0.9,
max-throughput recovery >= 0.97. Runs the simulations on 2 worker processes.
Run: python benchmarks/bench_fidelity.py [N_SPREAD] [WORKERS]
"""

from __future__ import annotations

import platform
import sys
import time

import numpy as np

from chipdse.core.design_space import enumerate_points
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.estimator import Screen
from chipdse.solvers.config import SolverConfig
from chipdse.studies.parallel import Backend, run_jobs
from chipdse.studies.simstudy import (
    FIDELITY_THRESHOLDS,
    fidelity_jobs,
    fidelity_metrics,
    fidelity_table,
    make_layout,
    run_job,
)

N_TOP = 8


def main() -> None:
    n_spread = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    sc = load_scenario()
    t0 = time.perf_counter()
    pts, _ = enumerate_points(sc)
    df = Screen(sc).score(pts)
    print(f"machine: {platform.machine()}, python {platform.python_version()}; scenario {sc.spec.name}, "
          f"{len(df):,} points scored in {time.perf_counter() - t0:.1f} s")
    feas = df[df["feasible"] & (df["capacity_rps"] > 0)].sort_values("throughput_tps", ascending=False)
    picks = list(feas.index[:N_TOP]) + list(feas.index[np.linspace(N_TOP, len(feas) - 1, n_spread).astype(int)])
    rows = df.loc[sorted(set(picks))]
    t1 = time.perf_counter()
    layouts = {}
    cfg = SolverConfig(work_limit=5.0, seed=0)
    for pid, row in rows.iterrows():
        lay = make_layout(sc, row.to_dict(), "hbm-enum", cfg) or make_layout(sc, row.to_dict(), "hydra-greedy", cfg)
        if lay is not None:
            layouts[int(pid)] = lay
    print(f"{len(layouts)} layouts in {time.perf_counter() - t1:.1f} s")
    jobs = fidelity_jobs(sc, rows, layouts, batching=sc.spec.estimator.batching)
    t2 = time.perf_counter()
    results = run_jobs(run_job, jobs, Backend.processes(workers) if workers > 1 else Backend.in_process())
    wall = time.perf_counter() - t2
    events = sum(r["events"] for r in results)
    sim_cpu = sum(r["wall_s"] for r in results)
    table = fidelity_table(rows, results).sort_values("est_throughput_tps", ascending=False)
    print(f"{len(jobs)} simulations: {events:,} events in {sim_cpu:.1f} s of simulator time "
          f"({events / sim_cpu:,.0f} events/s), {wall:.1f} s wall on {workers} worker(s)")
    print(f"{'point':>7s} {'label':40s} {'est tok/s':>10s} {'sim tok/s':>10s} {'ratio':>6s} {'est TTFT':>9s} "
          f"{'sim TTFT':>9s}")
    for _, r in table.iterrows():
        print(f"{r['point']:7d} {r['label']:40s} {r['est_throughput_tps']:10.1f} {r['sim_throughput_tps']:10.1f} "
              f"{r['sim_throughput_tps'] / r['est_throughput_tps']:6.2f} {r['est_ttft_s']:9.3f} {r['sim_ttft_s']:9.3f}")
    m = fidelity_metrics(table)
    for k, v in m.items():
        target = FIDELITY_THRESHOLDS.get(k)
        verdict = "" if target is None else f"  (target >= {target}: {'met' if v >= target else 'NOT met'})"
        print(f"{k:26s} {v:.4f}{verdict}")


if __name__ == "__main__":
    main()
