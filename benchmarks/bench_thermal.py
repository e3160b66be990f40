"""Compact thermal model and thermally constrained placement (issue 17 item 3): accuracy, speed, cost.

Prints three tables:

1. the analytic check: a uniform heat source over the 5 x 5 package vs the closed-form rise of a slab stack
   (q'' sum t/k + Q R_sink), relative error of every cell;
2. solve times of one temperature map and of the resistance matrix on n x n grids (median of 5, wall and CPU);
3. per finalist of the default scenario (B*, M_T) and per limit: the exact unconstrained placement (hbm-enum) and
   the thermally constrained MILP: peak temperature, Eq. 2, solve wall / CPU time and status, the serving
   estimator's throughput of both layouts (LPT mapping on both) and one short simulation of each.

Run: python benchmarks/bench_thermal.py [WORK_LIMIT] [LIMIT_C ...]   (defaults: 20 work units; 90 and 85 degC)
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time

import numpy as np

from chipdse.core.scenario import LoadedScenario, load_scenario
from chipdse.evaluators.thermal import package_grid, solve_temperature, thermal_resistance_matrix
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.artifacts import FinalistResult, ThermalFinalist
from chipdse.studies.hydra.simstudy import SimJob, placement_rate_rps
from chipdse.studies.hydra.stages import estimator, finalist_of, screen_and_pick
from chipdse.studies.hydra.thermal import thermal_finalist

SIZES = (5, 8, 16)
"""Grid sides timed (the package spec allows at most 16 x 16)."""
SIM_DURATION_S, SIM_WARMUP_S = 60.0, 10.0
"""The short simulation of each layout: window and warm-up, s."""


def analytic_check(per_cell_W: float = 30.0) -> float:  # noqa: N803
    """Return the largest relative error of the rise over ambient against the slab closed form, 5 x 5 package."""
    grid = package_grid(5, 5, 11.0)
    s = grid.stack
    flux = per_cell_W / (grid.cell_pitch_mm * 1e-3) ** 2
    closed = (per_cell_W * grid.n_cells * s.heat_sink_K_per_W
              + flux * (s.die_thickness_m / s.die_k_W_per_mK + s.tim_thickness_m / s.tim_k_W_per_mK
                        + s.spreader_thickness_m / s.spreader_k_W_per_mK))
    rise = solve_temperature(grid, np.full((5, 5), per_cell_W)).die_C - s.ambient_C
    return float(np.max(np.abs(rise - closed)) / closed)


def build_grid(n: int) -> tuple[object, np.ndarray]:
    """An n x n package of 11 mm cells and a seeded random power map (0..50 W per cell)."""
    return package_grid(n, n, 11.0), np.random.default_rng(0).uniform(0, 50, (n, n))


def timed(fn: object, reps: int = 5) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn()`` over ``reps`` runs."""
    walls, cpus = [], []
    for _ in range(reps):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def with_limit(sc: LoadedScenario, limit_C: float | None) -> LoadedScenario:  # noqa: N803
    """The scenario with ``thermal.limit_C`` replaced."""
    thermal = sc.spec.thermal.model_copy(update={"limit_C": limit_C})
    return dataclasses.replace(sc, spec=sc.spec.model_copy(update={"thermal": thermal}))


def simulate_both(sc: LoadedScenario, role: str, t: ThermalFinalist) -> dict[str, float]:
    """One short simulation of each served layout at the placement study's offered rate; throughput tok/s."""
    caps = [v.served.capacity_rps for v in t.served.values()]
    rate = placement_rate_rps("M_T" if role == "m-t" else "B*", sc.spec.simulation.load, caps)
    return {k: SimJob(sc, v.layout, rate, SIM_DURATION_S, SIM_WARMUP_S).run()["sim_throughput_tps"]
            for k, v in t.served.items()}


def main() -> None:
    work = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    limits = [float(x) for x in sys.argv[2:]] or [90.0, 85.0]
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"\n1. uniform source on the 5 x 5 slab stack: max relative error vs closed form {analytic_check():.2e}")

    print("\n2. solve times, median of 5 (wall / CPU, ms)")
    print(f"{'grid':>7s} {'map wall':>9s} {'map CPU':>8s} {'R wall':>8s} {'R CPU':>7s}")
    for n in SIZES:
        grid, power = build_grid(n)
        mw, mc = timed(lambda grid=grid, power=power: solve_temperature(grid, power))
        rw, rc = timed(lambda grid=grid: thermal_resistance_matrix(grid))
        print(f"{n:>3d}x{n:<3d} {1e3 * mw:9.2f} {1e3 * mc:8.2f} {1e3 * rw:8.2f} {1e3 * rc:7.2f}")

    base = load_scenario()
    cfg = SolverConfig(work_limit=work)
    print(f"\n3. default scenario, work limit {work:g} units; power at full load; LPT mapping on both layouts; "
          f"simulated {SIM_DURATION_S:g} s ({SIM_WARMUP_S:g} s warm-up)")
    print(f"{'finalist':9s} {'limit C':>7s} {'peak C':>7s} {'Eq.2 x':>7s} {'status':>10s} {'gap %':>6s} {'wall s':>7s} "
          f"{'CPU s':>6s} {'est TP x':>8s} {'sim TP free':>11s} {'sim TP lim':>10s} {'sim x':>6s}")
    picks = screen_and_pick(base)[2]
    for role in ("b-star", "m-t"):
        fin = finalist_of(picks, role)
        row = fin.row
        free = solve_placement(placement_problem(base, fin.design.point, fin.design.capacity_rps), "hbm-enum", cfg)
        f = FinalistResult(fin, [], [free], [], [])
        t0 = thermal_finalist(base, estimator(base), f, cfg)
        print(f"{role:9s} {'-':>7s} {t0.exact.thermal.peak_C:7.2f} {1.0:7.3f} {free.status.value:>10s} "
              f"{'-':>6s} {free.wall_s:7.2f}   ({row['label']}, {np.sum(t0.exact.thermal.power_W):.0f} W)")
        for limit in limits:
            sc = with_limit(base, limit)
            w, c = time.perf_counter(), time.process_time()
            t = thermal_finalist(sc, estimator(sc), f, cfg)
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            con = t.constrained
            if t.limited is None:
                print(f"{role:9s} {limit:7.1f} {'-':>7s} {'-':>7s} {con.status.value:>10s} {'-':>6s} {wall:7.2f} "
                      f"{cpu:6.2f}   {con.reason}")
                continue
            gap = "-" if con.gap is None else f"{100 * con.gap:6.2f}"
            est = t.served["thermal-limit"].served.throughput_tps / t.served["unconstrained"].served.throughput_tps
            sim = simulate_both(sc, role, t)
            print(f"{role:9s} {limit:7.1f} {t.limited.thermal.peak_C:7.2f} {t.limited.objective / free.objective:7.3f} "
                  f"{con.status.value:>10s} {gap:>6s} {wall:7.2f} {cpu:6.2f} {est:8.3f} {sim['unconstrained']:11.1f} "
                  f"{sim['thermal-limit']:10.1f} {sim['thermal-limit'] / sim['unconstrained']:6.3f}")


if __name__ == "__main__":
    main()
