"""Sweep speed: the vectorized estimator over the default scenario's whole design space, against a per-point loop.

Prints points/s for both and their ratio (the loop is timed on a random sample of points and extrapolated).
Run: python benchmarks/bench_sweep.py
"""

from __future__ import annotations

import platform
import time

import numpy as np

from chipdse.core.design_space import DesignPoints, enumerate_points
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.estimator import Screen


def subset(pts: DesignPoints, idx: np.ndarray) -> DesignPoints:
    """Return the points at ``idx``."""
    return DesignPoints(pts.types, pts.counts[idx], pts.n_hbm[idx], pts.d2d_GBps[idx], pts.max_batch[idx])


def main() -> None:
    sc = load_scenario()
    t0 = time.perf_counter()
    pts, _ = enumerate_points(sc)
    t_enum = time.perf_counter() - t0
    screen = Screen(sc)
    t0 = time.perf_counter()
    df = screen.score(pts)
    t_vec = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    sample = rng.choice(len(pts), 300, replace=False)
    t0 = time.perf_counter()
    loop = [screen.score(subset(pts, np.array([i]))).iloc[0] for i in sample]
    t_loop = (time.perf_counter() - t0) / len(sample)
    same = all(np.isclose(r["throughput_tps"], df.loc[i, "throughput_tps"]) for r, i in zip(loop, sample, strict=True))
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}")
    print(f"points: {len(pts):,}  enumerate: {t_enum:.2f} s  vectorized score: {t_vec:.2f} s "
          f"({len(pts) / t_vec:,.0f} points/s)")
    print(f"per-point loop: {t_loop * 1e3:.2f} ms/point ({1 / t_loop:,.0f} points/s); "
          f"speed-up {t_loop * len(pts) / t_vec:,.0f}x; loop results equal: {same}")


if __name__ == "__main__":
    main()
