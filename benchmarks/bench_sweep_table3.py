"""Sweep speed on HYDRA Table III: Nemotron-H-4B's whole design space on each of the four bundled workloads.

Runs :func:`chipdse.sweep.sweep` in-process without a store (one job per HBM count) and prints points, counts,
wall time and points/s per workload, then the total. Scenario loading is kept out of the timed part.
Run: python benchmarks/bench_sweep_table3.py [--workers N]   (N > 0 uses a local process pool)
"""

from __future__ import annotations

import argparse
import platform
import tempfile
from pathlib import Path

import yaml

from chipdse.parallel import Backend
from chipdse.paths import instances_dir
from chipdse.scenario import load_scenario
from chipdse.sweep import summary_json, sweep

WORKLOADS = ("arxiv", "chat", "bwb", "longwriter")


def build_scenario(workload: str, folder: Path) -> Path:
    """Write the Table III Nemotron-H-4B scenario on ``workload`` into ``folder`` (absolute paths) and return it."""
    inst = instances_dir()
    spec = yaml.safe_load((inst / "scenarios" / "hydra-table3-nemotron-h-4b.yaml").read_text())
    spec.update(name=f"hydra-table3-nemotron-h-4b-{workload}", library=str(inst / "chiplets" / "hydra.yaml"),
                package=str(inst / "packages" / "hydra-5x5.yaml"),
                workload=str(inst / "workloads" / f"{workload}.yaml"))
    path = folder / f"{workload}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=0, help="process-pool workers (0: in-process)")
    args = parser.parse_args()
    backend = Backend.processes(args.workers) if args.workers > 0 else Backend.in_process()
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}; "
          f"backend: {backend.describe()}")
    total_pts, total_s = 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for wl in WORKLOADS:
            sc = load_scenario(build_scenario(wl, Path(tmp)))
            s = summary_json(sweep(sc, backend))
            total_pts += s["points"]
            total_s += s["wall_s"]
            print(f"{wl:11s} points {s['points']:>8,}  feasible {s['feasible']:>7,}  pareto {s['pareto']:>4}  "
                  f"wall {s['wall_s']:6.2f} s  {s['points'] / s['wall_s']:>9,.0f} points/s")
    print(f"{'total':11s} points {total_pts:>8,}  wall {total_s:.2f} s  {total_pts / total_s:,.0f} points/s")


if __name__ == "__main__":
    main()
