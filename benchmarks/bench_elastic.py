"""Task schedulers on the default scenario's B*: static, FCFS, work stealing and elastic with and without
cross-phase reassignment (HYDRA Sec. IV-C, Sec. VI-E), on four datasets.

B* is the estimator's pick on the default scenario; its layout is the exact ring-layout placement (``hbm-enum``,
what ``chipdse simulate`` uses) with LPT mappings, and batching is dynamic (as the scheduler study runs). Per
dataset the static design's capacity is measured by simulation: the static scheduler at twice the estimator's
capacity (saturated), its output tokens/s over the dataset's mean output length. Every scheduler then runs at 90%
of that capacity, Poisson arrivals, for 100 s after a warm-up of 1.5 request lifetimes (mean output tokens x the
saturated run's median token interval; 20 s to 300 s). Prints throughput, mean TTFT, finished requests and the
cross-phase work of each run, and elastic's gain over each baseline; then every scheduler's saturated throughput
(arrivals at twice the estimator's capacity, 60 s warm-up): the most each one serves.
Run: python benchmarks/bench_elastic.py [MEASURE_S]   (about 10 minutes on 2 cores)

Measured (B* = Ap1-Ad2-Mp13-Md5-HBM3-512GBps-B64, seed 0), elastic (threshold 0, cross-phase) over each:
at 90% load static 1.047 / 0.994 / 1.232 / 1.046 (arxiv / chat / bwb / longwriter), work stealing 1.012 / 1.008 /
1.024 / 1.027; saturated static 1.296 / 1.027 / 1.142 / 1.152, FCFS 1.19-1.27, work stealing 1.224 / 1.019 / 1.050 /
1.076, elastic without cross-phase 1.099 / 0.996 / 1.019 / 1.020.
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from chipdse.core.design_space import enumerate_points, subset_points
from chipdse.core.layout import Layout
from chipdse.core.scenario import LoadedScenario, load_scenario, with_workload
from chipdse.evaluators.sim_build import build_sim_config
from chipdse.evaluators.sim_policies import DynamicBatcherConfig
from chipdse.evaluators.sim_schedulers import (
    ElasticSchedulerConfig,
    FcfsSchedulerConfig,
    StaticSchedulerConfig,
    WorkStealingSchedulerConfig,
)
from chipdse.evaluators.simulator import SimResult, simulate
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.simstudy import make_layout
from chipdse.studies.hydra.stages import estimator, screen_and_pick, screen_points

DATASETS = ("arxiv.yaml", "chat.yaml", "bwb.yaml", "longwriter.yaml")
LOAD = 0.9
SCHEDULERS = (
    ("static", StaticSchedulerConfig()),
    ("fcfs", FcfsSchedulerConfig()),
    ("work-stealing", WorkStealingSchedulerConfig()),
    ("elastic, same phase", ElasticSchedulerConfig(cross_phase=False)),
    ("elastic, threshold 1", ElasticSchedulerConfig(imbalance_threshold=1)),
    ("elastic", ElasticSchedulerConfig()),
)
"""The last is the default elastic scheduler (threshold 0, cross-phase); elastic's gains are over the others."""


def run(sc: LoadedScenario, lay: Layout, scheduler: object, rate_rps: float, duration_s: float,
        warmup_s: float) -> SimResult:
    """One simulation of the layout under dynamic batching."""
    cfg = build_sim_config(sc, lay.point, lay.placement, lay.prefill_map, lay.decode_map,
                           batcher=DynamicBatcherConfig(lay.point.batch), scheduler=scheduler,
                           arrival_rate_rps=rate_rps, duration_s=duration_s)
    return simulate(dataclasses.replace(cfg, warmup_s=warmup_s), sc.lengths)


def main() -> None:
    measure = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    sc = load_scenario()
    b_star = screen_and_pick(sc)[2].b_star  # B*, picked as explore picks it
    row = dict(b_star.row)
    lay = make_layout(sc, b_star.design, "hbm-enum", SolverConfig.of(sc.spec, seed=sc.spec.seed))
    one = subset_points(enumerate_points(sc)[0], np.array([b_star.index]))
    assert lay is not None
    print(f"B* = {row['label']}; hbm-enum placement, lpt-greedy mappings, dynamic batching; {LOAD:.0%} of the "
          f"static design's simulated capacity; {measure:g} s measured after the warm-up")
    print(f"{'dataset':11s} {'scheduler':20s} {'tok/s':>8s} {'TTFT s':>8s} {'done':>6s} {'P->D jobs':>9s} "
          f"{'D->P jobs':>9s} {'P->D busy s':>11s}")
    gains: dict[str, list[float]] = {name: [] for name, _ in SCHEDULERS[:-1]}
    sat_gains: dict[str, list[float]] = {name: [] for name, _ in SCHEDULERS[:-1]}
    for ds in DATASETS:
        scd = with_workload(sc, ds)
        cap_est = float(screen_points(estimator(scd), one)["capacity_rps"].iloc[0])
        t0 = time.perf_counter()
        sat = run(scd, lay, StaticSchedulerConfig(), 2.0 * cap_est, 60.0 + measure, 60.0)
        cap = sat.throughput_tps / scd.lengths.mean_decode
        lifetime = scd.lengths.mean_decode * (sat.tbt.p50_s or 0.0)
        warmup = min(max(20.0, 1.5 * lifetime), 300.0)
        print(f"{scd.workload.name}: estimator capacity {cap_est:.3f} req/s, simulated static capacity "
              f"{cap:.3f} req/s ({sat.throughput_tps:.1f} tok/s); offered {LOAD * cap:.3f} req/s; "
              f"warm-up {warmup:.0f} s")
        out = {}
        for name, sched in SCHEDULERS:
            res = run(scd, lay, sched, LOAD * cap, warmup + measure, warmup)
            out[name] = res
            ttft = "-" if res.ttft.mean_s is None else f"{res.ttft.mean_s:.2f}"
            print(f"{scd.workload.name:11s} {name:20s} {res.throughput_tps:8.1f} {ttft:>8s} {res.finished:6d} "
                  f"{res.cross_phase_jobs['prefill_on_decode']:9d} {res.cross_phase_jobs['decode_on_prefill']:9d} "
                  f"{res.cross_phase_busy_s['prefill_on_decode']:11.1f}")
        for name in gains:
            gains[name].append(out["elastic"].throughput_tps / out[name].throughput_tps)
        sat_tps = {"static": sat.throughput_tps}
        for name, sched in SCHEDULERS[1:]:
            sat_tps[name] = run(scd, lay, sched, 2.0 * cap_est, 60.0 + measure, 60.0).throughput_tps
        for name in sat_gains:
            sat_gains[name].append(sat_tps["elastic"] / sat_tps[name])
        print(f"{scd.workload.name:11s} saturated tok/s: " + ", ".join(f"{k} {v:.1f}" for k, v in sat_tps.items()))
        print(f"  ({time.perf_counter() - t0:.0f} s wall)")
    for label, table in (("at 90% load", gains), ("saturated", sat_gains)):
        for name, g in table.items():
            wins = sum(x > 1.0 for x in g)
            print(f"{label}: elastic / {name}: " + ", ".join(f"{x:.3f}" for x in g)
                  + f"; elastic ahead on {wins} of {len(g)}")


if __name__ == "__main__":
    main()
