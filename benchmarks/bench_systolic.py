"""Evaluations per second of the systolic cycle model (scalar and vectorized) next to SCALE-Sim's.

Run with the project venv (SCALE-Sim's speed then comes from the wall times recorded in the fixture)::

    /tmp/venv/bin/python benchmarks/bench_systolic.py

or, for a live SCALE-Sim timing on the first few fixture cases, with the SCALE-Sim venv::

    PYTHONPATH=. /tmp/scalesim-venv/bin/python benchmarks/bench_systolic.py --live 5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chipdse.evaluators.systolic import compute_cycles, compute_cycles_array  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "scalesim_cycles.json"
KEYS = ("m", "k", "n", "rows", "cols", "dataflow")


def _rate(fn: object, n_evals: int, min_s: float = 0.5) -> float:
    """Return evaluations per second of ``fn()`` (which does ``n_evals`` evaluations), repeated >= ``min_s``."""
    reps, t0 = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        dt = time.perf_counter() - t0
        if dt >= min_s:
            return reps * n_evals / dt


def main() -> None:
    """Time the model and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", type=int, default=0, help="run SCALE-Sim live on this many fixture cases")
    parser.add_argument("--vector-size", type=int, default=1_000_000)
    args = parser.parse_args()

    doc = json.loads(FIXTURE.read_text())
    cases = doc["cases"]
    tuples = [tuple(c[key] for key in KEYS) for c in cases]

    def scalar() -> None:
        for t in tuples:
            compute_cycles(*t)

    scalar_rate = _rate(scalar, len(tuples))

    reps = -(-args.vector_size // len(cases))
    cols = {key: np.tile(np.array([c[key] for c in cases]), reps)[: args.vector_size] for key in KEYS}
    vec_rate = _rate(lambda: compute_cycles_array(*(cols[key] for key in KEYS)), args.vector_size)
    ok = np.array_equal(
        compute_cycles_array(*(cols[key] for key in KEYS))[: len(cases)], [c["compute_cycles"] for c in cases]
    )

    sim_wall = sum(c["wall_s"] for c in cases)
    sim_rate = len(cases) / sim_wall
    print(f"cases: {len(cases)} from {FIXTURE.relative_to(ROOT)} (SCALE-Sim {doc['scalesim_version']})")
    print(f"model equals SCALE-Sim on all recorded cases: {ok}")
    print(f"{'method':<34}{'evals/s':>14}{'speed-up vs SCALE-Sim':>24}")
    print(f"{'SCALE-Sim (recorded wall times)':<34}{sim_rate:>14.3g}{1.0:>24.3g}")
    print(f"{'compute_cycles (scalar)':<34}{scalar_rate:>14.3g}{scalar_rate / sim_rate:>24.3g}")
    print(
        f"{'compute_cycles_array (n=' + format(args.vector_size, ',') + ')':<34}{vec_rate:>14.3g}"
        f"{vec_rate / sim_rate:>24.3g}"
    )

    if args.live:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from scalesim_oracle import run_scalesim

        live = cases[: args.live]
        t0 = time.perf_counter()
        agree = all(run_scalesim(*(c[key] for key in KEYS))["compute_cycles"] == c["compute_cycles"] for c in live)
        live_rate = len(live) / (time.perf_counter() - t0)
        print(f"{'SCALE-Sim (live, ' + str(len(live)) + ' cases)':<34}{live_rate:>14.3g}{live_rate / sim_rate:>24.3g}")
        print(f"live SCALE-Sim agrees with the fixture: {agree}")


if __name__ == "__main__":
    main()
