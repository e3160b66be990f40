"""Sweep speed on HYDRA Table III: Nemotron-H-4B's whole design space on the four bundled datasets.

Runs ``chipdse sweep`` on ``instances/scenarios/hydra-table3-nemotron-h-4b.yaml`` without a store: first the
screen stage alone (every point of the four datasets, about 700,000), then, with ``--simulate``, the same sweep
with the scenario's simulation stage (B* and M_T of each dataset placed exactly, mapped and simulated). Prints
points, counts, wall time and points/s, and the simulation stage's runs and wall time. Scenario loading is kept
out of the timed part.
Run: python benchmarks/bench_sweep_table3.py [--workers N] [--simulate]   (N > 0 uses a local process pool)
"""

from __future__ import annotations

import argparse
import dataclasses
import platform

from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario, load_scenario
from chipdse.runtime.parallel import Backend
from chipdse.studies.hydra.sweep import summary_json, sweep


def with_simulate(sc: LoadedScenario, n: int) -> LoadedScenario:
    """The scenario with ``sweep.simulate`` set to ``n``."""
    spec = sc.spec.model_copy(update={"sweep": sc.spec.sweep.model_copy(update={"simulate": n})})
    return dataclasses.replace(sc, spec=spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=0, help="process-pool workers (0: in-process)")
    parser.add_argument("--simulate", action="store_true", help="also run the scenario's simulation stage")
    args = parser.parse_args()
    backend = Backend.processes(args.workers) if args.workers > 0 else Backend.in_process()
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}; "
          f"backend: {backend.describe()}")
    sc = load_scenario(instances_dir() / "scenarios" / "hydra-table3-nemotron-h-4b.yaml")
    s = summary_json(sweep(with_simulate(sc, 0), backend))
    for wl, c in s["workloads"].items():
        print(f"{wl:11s} points {c['points']:>8,}  feasible {c['feasible']:>7,}  pareto {c['pareto']:>4}")
    rate = s["points"] / s["wall_s"]
    print(f"{'screen':11s} points {s['points']:>8,}  wall {s['wall_s']:.2f} s  {rate:,.0f} points/s ({s['jobs']} jobs)")
    if args.simulate:
        full = summary_json(sweep(sc, backend))
        sim_s = full["wall_s"] - s["wall_s"]
        print(f"{'simulate':11s} runs {full['sim_jobs']}  wall {full['wall_s']:.2f} s in all, ~{sim_s:.1f} s for the "
              f"simulations ({sim_s / max(full['sim_jobs'], 1):.1f} s per run)")
        for r in full["simulated"]:
            print(f"  {r['workload']:11s} {r['role']:6s} {r['label']:36s} estimator TTFT {r['est_ttft_s']:.3f} s, "
                  f"simulated TTFT {r['sim_ttft_s'] if r['sim_ttft_s'] is None else round(r['sim_ttft_s'], 3)} s "
                  f"{r['error']}")


if __name__ == "__main__":
    main()
