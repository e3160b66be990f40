"""What report.html and figures/ cost beside report.pdf (issue 35 item 2): for the bundled SNAKE and NOVA studies and
a small HYDRA explore (24 chiplets, 4-5 HBM stacks, one D2D bandwidth, batch 64), the wall and CPU seconds of
drawing the PDF alone (``pdf_bytes``, the baseline, in the same run) and of drawing everything in one pass
(``draw_report``: PDF, PNG + SVG of every plot page, report.html), best of N; the ratio; and the sizes written.

    python benchmarks/bench_report.py [--runs 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from chipdse.core.paths import instances_dir
from chipdse.reports.files import draw_report, pdf_bytes
from chipdse.reports.registry import REPORTS
from chipdse.studies.common import Settings
from chipdse.studies.hydra import explore
from chipdse.studies.nova import study as nova
from chipdse.studies.snake import study as snake


def _small_hydra(folder: Path) -> Any:
    inst = instances_dir()
    base = yaml.safe_load((inst / "scenarios" / "default.yaml").read_text())
    base |= {"library": str(inst / "chiplets" / "hydra.yaml"), "package": str(inst / "packages" / "hydra-5x5.yaml"),
             "workload": str(inst / "workloads" / "arxiv.yaml"), "name": "report-small",
             "estimator": {"batching": "dynamic"},
             "design_space": {"total_chiplets": 24, "hbm_min": 4, "hbm_max": 5, "d2d_GBps": [512],
                              "max_batch": [64]},
             "simulation": {"candidates": 2, "spread": 1, "duration_s": 4, "max_duration_s": 6, "warmup_s": 1,
                            "measure_s": 3, "datasets": ["arxiv.yaml"], "workers": 1}}
    base.pop("generality", None)
    path = folder / "small.yaml"
    path.write_text(yaml.safe_dump(base))
    return explore.run(explore.load(path), Settings(time_limit_s=0.5, seed=3)), explore.summary


def _best(fn: Callable[[], Any], runs: int) -> tuple[float, float, Any]:
    """Least wall and least CPU seconds of ``runs`` calls, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"snake": (snake.run(snake.load(instances_dir() / "scenarios" / "snake-stratum.yaml"),
                                     Settings(time_limit_s=5.0, seed=0)), snake.summary),
                 "nova": (nova.run(nova.load(instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml"),
                                   Settings(time_limit_s=5.0, seed=0)), nova.summary),
                 "hydra (small)": _small_hydra(Path(tmp))}
        print(f"{'study':14s} {'PDF wall s':>10s} {'PDF CPU s':>10s} {'all wall s':>10s} {'all CPU s':>10s} "
              f"{'CPU ratio':>9s} {'pdf kB':>8s} {'html kB':>8s} {'figures':>8s} {'fig kB':>8s}")
        for name, (result, summary) in cases.items():
            pages = REPORTS[result.scenario.spec.kind]
            pw, pc, pdf = _best(lambda r=result, p=pages: pdf_bytes(r, p), args.runs)
            aw, ac, drawn = _best(lambda r=result, p=pages, s=summary: draw_report(r, p, s(r)), args.runs)
            fig_kb = sum(len(b) for b in drawn.figures.values()) / 1e3
            print(f"{name:14s} {pw:10.2f} {pc:10.2f} {aw:10.2f} {ac:10.2f} {ac / pc:9.2f} {len(pdf) / 1e3:8.0f} "
                  f"{len(drawn.html.encode()) / 1e3:8.0f} {len(drawn.figures):8d} {fig_kb:8.0f}")


if __name__ == "__main__":
    main()
