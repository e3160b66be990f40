"""The NoI link load two ways on the default scenario's B* (issue 32 item 2): the placement model's traffic (what the
layout page's "busiest link" prints) against the simulator's measured link bytes (what the NoI page's busy fraction
is), on the same exact placement, and what separates them.

The placement model (``solvers.problems.placement_problem``, ``formulations.link_load``) puts each pair's volume at
the design's capacity half each way along the XY routes. The simulator streams every stage's HBM bytes one way,
stack to chiplet, at the offered load, with the batches the batcher actually forms. The script prints, per run:
the busiest link of each (GB/s), the ratio, the same ratio with the model's volumes sent one way (stack to chiplet
for HBM pairs) and scaled to the simulated output rate, and the simulator's mean decode batch against the design's
batch is not printed (the simulator does not report it).
Run: python benchmarks/bench_link_load.py [DURATION_S]
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections import defaultdict
from datetime import date

from chipdse.core.grid import Link, xy_route
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.sim_build import build_sim_config
from chipdse.evaluators.sim_policies import DynamicBatcherConfig, StaticBatcherConfig
from chipdse.evaluators.sim_schedulers import StaticSchedulerConfig
from chipdse.evaluators.simulator import simulate
from chipdse.formulations.link_load import link_loads
from chipdse.formulations.placement import PlacementProblem, volume_table
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import mapping_problem, placement_problem
from chipdse.studies.hydra.stages import screen_and_pick

LOAD = 0.9
"""Offered load as a fraction of B*'s estimated capacity (the scenario's simulation.load)."""
SEED = 0


def one_way_loads(problem: PlacementProblem, decision: dict[int, str]) -> dict[Link, float]:
    """The model's volumes with every HBM pair sent one way, stack to chiplet (as the simulator streams reads);
    other pairs half each way, bytes/s."""
    vol = volume_table(problem)
    placed = sorted((int(c), t) for c, t in decision.items())
    loads: dict[Link, float] = defaultdict(float)
    for i, t in placed:
        for j, u in placed:
            if i >= j and not (t.startswith("hbm:") or u.startswith("hbm:")):
                continue
            v = vol.get((t, u), 0.0)
            if not v or i == j:
                continue
            if t.startswith("hbm:") and not u.startswith("hbm:"):  # stack i -> chiplet j, all of it
                for link in xy_route(problem.cols, i, j):
                    loads[link] += v
            elif not t.startswith("hbm:") and not u.startswith("hbm:"):
                for link in xy_route(problem.cols, i, j):
                    loads[link] += v / 2
                for link in xy_route(problem.cols, j, i):
                    loads[link] += v / 2
    return dict(loads)


def main() -> None:
    duration = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    t0, c0 = time.perf_counter(), time.process_time()
    sc = load_scenario()
    b_star = screen_and_pick(sc)[2].b_star
    row, point = dict(b_star.row), b_star.design.point
    problem = placement_problem(sc, point, row["capacity_rps"])
    placement = solve_placement(problem, "hbm-enum", SolverConfig.of(sc.spec, seed=SEED)).decision
    maps = {ph: solve_mapping(mapping_problem(sc, point, placement, ph, point.batch), "lpt-greedy").decision
            for ph in ("prefill", "decode")}
    model = link_loads(problem, placement)
    oneway = one_way_loads(problem, placement)
    vol = volume_table(problem)
    placed = {int(c): t for c, t in placement.items()}
    hbm_model = sum(vol.get((t, u), 0.0) for t in placed.values() for u in placed.values()
                    if u.startswith("hbm:") and not t.startswith("hbm:"))  # per chiplet and stack
    hbm_GBps = float(sc.library.memory.bandwidth_GBps)
    cap_tps = row["capacity_rps"] * sc.lengths.mean_decode
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, python "
          f"{platform.python_version()}, {date.today()}")
    print(f"B* = {row['label']}: capacity {row['capacity_rps']:.3f} req/s ({cap_tps:.0f} tok/s), link "
          f"{point.d2d_GBps:g} GB/s, batch {point.batch}; offered {LOAD:.0%} of capacity, {duration:g} s from empty")
    print(f"model (half each way, at capacity): busiest link {max(model.values()) / 1e9:.1f} GB/s; one way for HBM "
          f"reads: {max(oneway.values()) / 1e9:.1f} GB/s")
    runs = (("static", StaticBatcherConfig(point.batch, timeout_s=sc.spec.simulation.static_batch_timeout_s), LOAD),
            ("dynamic", DynamicBatcherConfig(point.batch), LOAD),
            ("dyn. 3x", DynamicBatcherConfig(point.batch), 3.0))  # saturated: full batches
    for name, batcher, load in runs:
        rate = load * row["capacity_rps"]
        cfg = build_sim_config(sc, point, placement, maps["prefill"], maps["decode"], batcher=batcher,
                               scheduler=StaticSchedulerConfig(), arrival_rate_rps=rate, duration_s=duration)
        res = simulate(cfg, sc.lengths)
        sim = {k: u * point.d2d_GBps * 1e9 for k, u in res.link_utilization.items()}
        busiest = max(sim, key=lambda k: sim[k])
        scale = res.throughput_tps / cap_tps  # the model's volumes at the simulated output rate
        per_tok_model = max(oneway.values()) * scale
        hbm_sim = sum(res.hbm_port_utilization.values()) * hbm_GBps * 1e9
        total_sim, total_model = sum(sim.values()), sum(oneway.values()) * scale
        print(f"{name:8s} HBM reads {hbm_sim / 1e9:6.1f} GB/s simulated vs {hbm_model * scale / 1e9:6.1f} GB/s "
              f"modelled at the simulated rate ({hbm_sim / (hbm_model * scale):.2f}x); byte-hops/s over all links "
              f"{total_sim / total_model:.2f}x the model's")
        print(f"{name:8s} sim: {res.throughput_tps:6.1f} tok/s, busiest link {sim[busiest] / 1e9:6.1f} GB/s "
              f"({res.link_utilization[busiest]:.0%} busy) on {busiest}; model there at capacity "
              f"{model.get(busiest, 0.0) / 1e9:.1f} GB/s, one way at the simulated rate "
              f"{oneway.get(busiest, 0.0) * scale / 1e9:.1f} GB/s; sim / model-busiest "
              f"{sim[busiest] / max(model.values()):.2f}, sim / one-way-at-rate {sim[busiest] / per_tok_model:.2f} "
              f"({res.finished} of {res.arrived} requests finished)")
    print(f"wall {time.perf_counter() - t0:.1f} s, CPU {time.process_time() - c0:.1f} s")


if __name__ == "__main__":
    main()
