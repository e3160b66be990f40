"""SNAKE's claims against this run: run the SNAKE study on a scenario and print the claims table (Markdown).

Usage: ``python benchmarks/bench_snake_claims.py [scenario.yaml]`` (default: the bundled
``instances/scenarios/snake-stratum.yaml``). The rows come from :func:`chipdse.studies.snake_claims.measure`, the
code the SNAKE report's page "SNAKE's claims, this run" uses; the last line gives the wall and CPU time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chipdse.core.paths import instances_dir  # noqa: E402
from chipdse.studies import snake  # noqa: E402
from chipdse.studies.claims import claim_rows, render_text  # noqa: E402
from chipdse.studies.snake_claims import SNAKE_CLAIMS, context_line, measure  # noqa: E402


def main() -> None:
    """Run the study and print the claims table, the run's context line and its timing."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path, default=instances_dir() / "scenarios" / "snake-stratum.yaml")
    args = parser.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    study = snake.run(snake.load(args.scenario))
    measured, notes = measure(study)
    rows = claim_rows(measured, notes, claims=SNAKE_CLAIMS)
    print(render_text(rows, paper="SNAKE"))
    print()
    print(context_line(study))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(study in {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU, load {load:.1f})")


if __name__ == "__main__":
    main()
