"""Calibrate chipdse's deterministic work units: CPU seconds per work unit of each backend.

Runs each exact method on the default scenario's B* instances at a few work limits and prints, per run, the work
limit, the termination, objective, bound, wall and CPU seconds (``resource.getrusage``: every thread of this
process) and CPU seconds per work unit. A well calibrated backend shows about 1 CPU-second per unit (see
solvers/config.py). Run on an idle machine: python benchmarks/bench_work_units.py [WORK_LIMITS (comma-separated)]
"""

from __future__ import annotations

import resource
import sys
import time

from chipdse.core.qaplib import QapInstance
from chipdse.core.scenario import load
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.link_load import solve_max_link_placement
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import design_mapping, design_placement
from chipdse.solvers.qap import solve_qap
from chipdse.studies.hydra.stages import finalist_design


def cpu_s() -> float:
    """CPU seconds of this process so far (user + system, every thread)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _random_qap(n: int) -> QapInstance:
    import numpy as np
    rng = np.random.default_rng(3)
    a = rng.integers(0, 10, (n, n))
    a = np.triu(a, 1) + np.triu(a, 1).T
    r, c = np.divmod(np.arange(n), 4)
    b = np.abs(r[:, None] - r[None, :]) + np.abs(c[:, None] - c[None, :])
    return QapInstance(f"rand{n}", a, b)


def main() -> None:
    limits = [float(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "2,5").split(",")]
    sc = load(None)
    design = finalist_design(sc, "b-star")
    placement, label = design_placement(sc, design)
    mapping, _ = design_mapping(sc, design)
    runs = [
        ("placement milp-highs", lambda cfg: solve_placement(placement, "milp-highs", cfg)),
        ("placement cpsat", lambda cfg: solve_placement(placement, "cpsat", cfg)),
        ("placement hbm-enum", lambda cfg: solve_placement(placement, "hbm-enum", cfg)),
        ("mapping milp-highs", lambda cfg: solve_mapping(mapping, "milp-highs", cfg)),
        ("mapping cpsat", lambda cfg: solve_mapping(mapping, "cpsat", cfg)),
        ("max-link layout-bnb", lambda cfg: solve_max_link_placement(placement, "layout-bnb", cfg)),
        ("qap bnb n=12", lambda cfg: solve_qap(_random_qap(12), "bnb", cfg)),
    ]
    print(f"B* = {label}")
    print(f"{'method':24s} {'work':>6s} {'termination':>12s} {'objective':>12s} {'bound':>12s} {'wall_s':>7s} "
          f"{'cpu_s':>7s} {'cpu/unit':>8s}")
    for name, run in runs:
        for w in limits:
            cfg = SolverConfig(work_limit=w, seed=1)
            c0, w0 = cpu_s(), time.perf_counter()
            sol = run(cfg)
            wall, cpu = time.perf_counter() - w0, cpu_s() - c0
            print(f"{name:24s} {w:6g} {sol.termination.value:>12s} {sol.objective or float('nan'):12.6g} "
                  f"{sol.bound if sol.bound is not None else float('nan'):12.6g} {wall:7.2f} {cpu:7.2f} "
                  f"{cpu / w:8.2f}", flush=True)


if __name__ == "__main__":
    main()
