"""Simulator speed on the default scenario's B*: 100 s of workload at 80% of the estimator's capacity.

B* comes from the estimator sweep as in bench_layouts.py; its layout is the exact ring-layout placement
(``hbm-enum``, what ``chipdse simulate`` uses) with LPT mappings. Setup is not timed; each run prints its events,
wall time and events/s (target: under 5 s wall for the scenario's own policies; CPU time shows how much of the wall
time other
processes took), and the serving metrics it measured: output tokens/s against the offered tokens/s, TTFT, finished
over arrived requests, preemptions, and the busiest chiplet's and link's utilization.
Run: python benchmarks/bench_simulator.py [DURATION_S]
"""

from __future__ import annotations

import platform
import sys
import time

from chipdse.core.design_space import PointSpec
from chipdse.core.scenario import LoadedScenario, load_scenario
from chipdse.evaluators.sim_build import build_sim_config
from chipdse.evaluators.sim_policies import DynamicBatcherConfig, StaticBatcherConfig
from chipdse.evaluators.sim_schedulers import ElasticSchedulerConfig, StaticSchedulerConfig, WorkStealingSchedulerConfig
from chipdse.evaluators.simulator import SimConfig, simulate
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import mapping_problem, placement_problem
from chipdse.studies.hydra.stages import screen_and_pick

LOAD = 0.8
"""Offered load as a fraction of the estimator's capacity of B*."""
SEED = 0


def build_simulation() -> tuple[LoadedScenario, dict, PointSpec, dict[int, str], dict[str, dict]]:
    """Return the scenario, B*'s estimator row, its point, placement and mappings (prefill, decode)."""
    sc = load_scenario()
    b_star = screen_and_pick(sc)[2].b_star  # B*, picked as explore picks it
    row = dict(b_star.row)
    point = b_star.design.point
    placement = solve_placement(placement_problem(sc, point, row["capacity_rps"]), "hbm-enum",
                                SolverConfig.of(sc.spec, seed=SEED)).decision
    maps = {ph: solve_mapping(mapping_problem(sc, point, placement, ph, point.batch), "lpt-greedy").decision
            for ph in ("prefill", "decode")}
    return sc, row, point, placement, maps


def run(name: str, cfg: SimConfig, sc: LoadedScenario, offered_tps: float) -> float:
    """Simulate once and print one result line; return the wall time, s."""
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(cfg, sc.lengths)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ttft = res.ttft
    p50 = "-" if ttft.p50_s is None else f"{ttft.p50_s:.2f}"
    p99 = "-" if ttft.p99_s is None else f"{ttft.p99_s:.2f}"
    util = max(res.chiplet_utilization.values())
    link = max(res.link_utilization.values())
    print(f"{name:24s} {res.n_events:9,d} {wall:7.2f} {cpu:6.2f} {res.n_events / wall:10,.0f} "
          f"{res.throughput_tps:8.1f} {offered_tps:8.1f} {p50:>7s} {p99:>7s} {res.finished:5d}/{res.arrived:<5d} "
          f"{res.preemptions:5d} {util:6.2f} {link:6.2f}")
    return wall


def main() -> None:
    duration = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    sc, row, point, placement, maps = build_simulation()
    rate = LOAD * row["capacity_rps"]
    offered = rate * sc.lengths.mean_decode
    print(f"machine: {platform.machine()}, python {platform.python_version()}")
    print(f"B* = {row['label']}: estimator capacity {row['capacity_rps']:.3f} req/s, offered {rate:.3f} req/s "
          f"({LOAD:.0%}), {duration:g} s of workload, seed {SEED}; "
          "placement hbm-enum (exact ring layouts), mappings lpt-greedy")
    print(f"{'batcher / scheduler':24s} {'events':>9s} {'wall s':>7s} {'cpu s':>6s} {'events/s':>10s} {'tok/s':>8s} "
          f"{'offered':>8s} {'TTFTp50':>7s} {'TTFTp99':>7s} {'done/arrived':>11s} {'preem':>5s} {'chip':>6s} "
          f"{'link':>6s}")
    variants = [
        ("static / static", StaticBatcherConfig(point.batch), StaticSchedulerConfig()),
        ("dynamic / static", DynamicBatcherConfig(point.batch), StaticSchedulerConfig()),
        ("dynamic / work-stealing", DynamicBatcherConfig(point.batch), WorkStealingSchedulerConfig()),
        ("dynamic / elastic", DynamicBatcherConfig(point.batch), ElasticSchedulerConfig()),
    ]
    walls = []
    for name, batcher, scheduler in variants:
        cfg = build_sim_config(sc, point, placement, maps["prefill"], maps["decode"], batcher=batcher,
                               scheduler=scheduler, arrival_rate_rps=rate, duration_s=duration, seed=SEED)
        walls.append(run(name, cfg, sc, offered))
    own = walls[[name for name, _, _ in variants].index(f"{sc.spec.estimator.batching} / static")]
    print(f"scenario's own policies ({sc.spec.estimator.batching} batching, static scheduler): {own:.2f} s "
          f"wall, target 5 s: {'met' if own < 5.0 else 'missed'}")


if __name__ == "__main__":
    main()
