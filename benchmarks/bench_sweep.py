"""Sweep speed: the vectorized estimator over the default scenario's whole design space, against a per-point loop,
and with energy (issue 17: J/token, power, tokens/J, power limits) against without, in the same run.

Prints points/s for both and their ratio (the loop is timed on a random sample of points and extrapolated), and
points/s of the score alone and of the score with energy and the 3-objective front (wall and CPU time).
Run: python benchmarks/bench_sweep.py
"""

from __future__ import annotations

import platform
import time

import numpy as np

from chipdse.core.design_space import DesignPoints, enumerate_points
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.energy import load_energy_table
from chipdse.evaluators.energy_hydra import apply_power_limits, sweep_energy
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.selection import pareto_mask_3


def subset(pts: DesignPoints, idx: np.ndarray) -> DesignPoints:
    """Return the points at ``idx``."""
    return DesignPoints(pts.types, pts.counts[idx], pts.n_hbm[idx], pts.d2d_GBps[idx], pts.max_batch[idx])


def main() -> None:
    sc = load_scenario()
    t0 = time.perf_counter()
    pts, _ = enumerate_points(sc)
    t_enum = time.perf_counter() - t0
    screen = Screen(sc)
    t0, c0 = time.perf_counter(), time.process_time()
    df = screen.score(pts)
    t_vec, c_vec = time.perf_counter() - t0, time.process_time() - c0
    table = load_energy_table()
    t0, c0 = time.perf_counter(), time.process_time()
    energy = apply_power_limits(df.join(sweep_energy(screen, pts, df, table)), sc.spec.energy)
    energy["pareto_energy"] = pareto_mask_3(energy["throughput_tps"].to_numpy(), energy["ttft_s"].to_numpy(),
                                            energy["tokens_per_J"].to_numpy())
    t_energy, c_energy = time.perf_counter() - t0, time.process_time() - c0
    rng = np.random.default_rng(0)
    sample = rng.choice(len(pts), 300, replace=False)
    t0 = time.perf_counter()
    loop = [screen.score(subset(pts, np.array([i]))).iloc[0] for i in sample]
    t_loop = (time.perf_counter() - t0) / len(sample)
    same = all(np.isclose(r["throughput_tps"], df.loc[i, "throughput_tps"]) for r, i in zip(loop, sample, strict=True))
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}")
    print(f"points: {len(pts):,}  enumerate: {t_enum:.2f} s  vectorized score: {t_vec:.2f} s "
          f"({len(pts) / t_vec:,.0f} points/s)")
    n = len(energy)
    print(f"with energy: score {n / t_vec:,.0f} points/s (CPU {n / c_vec:,.0f}); score + energy "
          f"{n / (t_vec + t_energy):,.0f} points/s (CPU {n / (c_vec + c_energy):,.0f}); energy adds "
          f"{t_energy:.2f} s wall, {c_energy:.2f} s CPU: {(t_vec + t_energy) / t_vec:.2f}x the score's wall time, "
          f"{(c_vec + c_energy) / c_vec:.2f}x its CPU time (done when <= 1.5x)")
    print(f"per-point loop: {t_loop * 1e3:.2f} ms/point ({1 / t_loop:,.0f} points/s); "
          f"speed-up {t_loop * len(pts) / t_vec:,.0f}x; loop results equal: {same}")


if __name__ == "__main__":
    main()
