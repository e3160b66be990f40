"""What cross-phase tasks buy in the mapping: the default scenario's B* and M_T, with and without.

For each finalist (placed by ``hbm-enum``, as ``chipdse solve mapping`` does) the joint mapping of both phases
(``solvers.problems.joint_mapping_problem``: one capacity per chiplet, seconds of work per request on the busiest
chiplet) is solved same-phase and cross-phase by LPT, the MILP and CP-SAT. The estimated throughput is
``mean_decode / bottleneck`` output tokens/s (Eq. 5's bottleneck as the request rate the mapped design sustains).
Run: python benchmarks/bench_cross_phase_mapping.py [WORK_LIMIT]
"""

from __future__ import annotations

import os
import sys
import time

from chipdse.core.scenario import load_scenario
from chipdse.formulations.mapping import split_joint_decision
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import solve_cross_phase_mapping
from chipdse.solvers.problems import design_layout, joint_mapping_problem
from chipdse.studies.hydra.stages import finalist_design

METHODS = ("lpt-greedy", "milp-highs", "cpsat")


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    cfg = SolverConfig(work_limit=limit, threads=1)
    sc = load_scenario()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} load {os.getloadavg()[0]:.1f}; work limit {limit:g} per exact solve")
    print(f"{'point':5s} {'mapping':11s} {'method':11s} {'s/request':>10s} {'bound':>10s} {'tok/s':>8s} "
          f"{'x same':>7s} {'crossed':>8s} {'wall s':>7s} {'cpu s':>7s}")
    for role in ("b-star", "m-t"):
        design = finalist_design(sc, role)
        spec, cells = design.point, design_layout(sc, design)
        print(f"{role}: {design.label}")
        same_best = None
        for cross in (False, True):
            problem = joint_mapping_problem(sc, spec, cells, spec.batch, cross_phase=cross)
            for m in METHODS:
                c0 = time.process_time()
                sol = solve_cross_phase_mapping(problem, m, cfg)
                cpu = time.process_time() - c0
                if not cross:
                    same_best = sol.objective if same_best is None else min(same_best, sol.objective)
                maps = split_joint_decision(sol.decision)
                crossed = sum(c not in problem.home[f"{ph}:{k}"] for ph, mp in maps.items() for k, c in mp.items())
                bound = "-" if sol.bound is None else f"{sol.bound:10.4f}"
                print(f"{role:5s} {'cross' if cross else 'same-phase':11s} {m:11s} {sol.objective:10.4f} "
                      f"{bound:>10s} {sc.lengths.mean_decode / sol.objective:8.1f} "
                      f"{same_best / sol.objective:7.3f} {crossed:8d} {sol.wall_s:7.2f} {cpu:7.2f}")


if __name__ == "__main__":
    main()
