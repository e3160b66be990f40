"""How much of "greedy CP over random placement" is the random draw? (issue 30; HYDRA Sec. VI-D, Fig. 10).

HYDRA reports that random placement "behaves similarly to" round-robin and that CP beats it by 1.07-1.22x in
throughput (M_T). The policy studies run one random draw (the scenario's seed). This script places the default
scenario's M_T finalist by round-robin, by the paper's greedy (LPT mapping) and by ``--draws`` random placements
(seeds 0, 1, ...; round-robin mapping, as the placement study), simulates each saturated (arrivals at twice the
estimated capacity, 20 s warm-up, 60 s window, dynamic batching) and prints throughput, the three busiest NoI links'
utilization and the mean compute-chiplet utilization, so the spread over draws is measured beside the one the
policy studies use. The last column maps the same placement with ``round-robin-balanced`` (round robin within each
task's compatible chiplets, :func:`chipdse.solvers.mapping.balanced_round_robin_mapping`) instead of the pointer
round robin, which is balanced only when the cell order alternates the chiplet types.

    python benchmarks/bench_random_placement.py [--draws 3] [--role M_T|B*]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from chipdse.core.layout import Layout, LayoutKind
from chipdse.core.scenario import load_scenario
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.simstudy import SimJob, make_layout, map_placement, random_layout
from chipdse.studies.hydra.stages import screen_and_pick


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--role", default="M_T", choices=["M_T", "B*"])
    a = ap.parse_args()
    t0, c0 = time.perf_counter(), _cpu_s()
    sc = load_scenario()
    _, _, picks = screen_and_pick(sc)
    f = picks.m_t if a.role == "M_T" else picks.b_star
    d = f.design
    cfg = SolverConfig(work_limit=3, time_limit_s=60, seed=sc.spec.seed)
    lays = {"round-robin": make_layout(sc, d, "round-robin", cfg, "round-robin", LayoutKind.ROUND_ROBIN),
            "greedy CP": make_layout(sc, d, "hydra-greedy", cfg, kind=LayoutKind.HYDRA_GREEDY)}
    lays |= {f"random seed {s}": random_layout(sc, d.point, d.capacity_rps, cfg, s) for s in range(a.draws)}
    print(f"{a.role} {d.label} on {sc.workload.name}, saturated at {2 * d.capacity_rps:.3g} req/s, 60 s after 20 s")
    print("| layout | throughput tok/s | busiest links (utilization) | mean chiplet utilization | "
          "tok/s, round-robin-balanced mapping |")
    print("| --- | --- | --- | --- | --- |")

    def run(lay: Layout) -> dict:
        return SimJob(sc=sc, layout=lay, rate_rps=2 * d.capacity_rps, duration_s=60.0, warmup_s=20.0).run()

    for name, lay in lays.items():
        if lay is None:
            print(f"| {name} | no layout | | | |")
            continue
        r = run(lay)
        links = sorted(r["link_utilization"].values())[-3:][::-1]
        chip = r["chiplet_utilization"]
        bal = ("-" if name == "greedy CP" or (b := map_placement(sc, d.point, lay.placement, lay.placement_method, cfg,
                                                                "round-robin-balanced", lay.kind)) is None
               else f"{run(b)['sim_throughput_tps']:.0f}")
        print(f"| {name} | {r['sim_throughput_tps']:.0f} | {', '.join(f'{x:.2f}' for x in links)} | "
              f"{sum(chip.values()) / len(chip):.2f} | {bal} |", flush=True)
    print(f"{time.perf_counter() - t0:.0f} s wall, {_cpu_s() - c0:.0f} s CPU; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
