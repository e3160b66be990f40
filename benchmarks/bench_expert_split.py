"""Tier / expert split (NOVA Sec. VI-E): every method over routing kinds x expert counts, time and quality.

One MoE layer, one decode step: ``build_expert_split(n, kind)`` draws routed tokens for a batch of 64 with
top-8 routing (seed 42) over ``n`` experts of a fine-grained size (Qwen3-30B-A3B-like: gate, up and down
projections of 2048 x 768, BF16, about 9.4 MB each). Prints makespan (us), solve seconds and the gap of each
method to the best exact makespan of the row. Time-outs are shown as the status, not dropped.
Run: python benchmarks/bench_expert_split.py [WORK_LIMIT (work units per exact solve)]
"""

from __future__ import annotations

import sys

from chipdse.formulations.expert_split import ExpertSplitProblem, active_experts
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.expert_split import MAX_BRUTE_FORCE_EXPERTS, routing_counts, solve_expert_split

SEED = 42
BATCH = 64
TOP_K = 8
EXPERT_BYTES = 3 * 2048 * 768 * 2.0
SIZES = (16, 128, 512)
KINDS = ("uniform", "zipf", "concentrated")
METHODS = ("milp-highs", "cpsat", "brute-force", "nova-kstar", "static-1-9")


def build_expert_split(n: int, kind: str) -> ExpertSplitProblem:
    """Return the ``n``-expert instance with ``kind`` routing (fixed seed)."""
    tokens = routing_counts(n, BATCH, min(TOP_K, n), kind, seed=SEED)
    return ExpertSplitProblem((EXPERT_BYTES,) * n, tuple(int(t) for t in tokens), name=f"{kind}-{n}")


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    cfg = SolverConfig(work_limit=limit, threads=2, seed=0)
    print(f"batch {BATCH}, top-{TOP_K}, expert {EXPERT_BYTES / 1e6:.2f} MB, seed {SEED}, "
          f"time limit {limit:g} s per exact solve, {cfg.threads} threads")
    head = f"{'routing':13s} {'E':>4s} {'method':11s} {'status':9s} {'makespan us':>12s} {'bound us':>10s} "
    print(head + f"{'gap %':>7s} {'solve s':>8s} {'k':>4s}")
    for kind in KINDS:
        for n in SIZES:
            problem = build_expert_split(n, kind)
            sols = [solve_expert_split(problem, m, cfg) for m in METHODS
                    if m != "brute-force" or len(active_experts(problem)) <= MAX_BRUTE_FORCE_EXPERTS]
            exact = [s.objective for s in sols if s.exact and s.objective is not None]
            best = min(exact) if exact else None
            for s in sols:
                obj = "-" if s.objective is None else f"{s.objective * 1e6:12.3f}"
                bnd = "-" if s.bound is None else f"{s.bound * 1e6:10.3f}"
                gap = "-" if best is None or s.objective is None else f"{100 * (s.objective / best - 1):7.2f}"
                k = str(s.extra.get("k", "-"))
                print(f"{kind:13s} {n:4d} {s.method:11s} {s.status.value:9s} {obj:>12s} {bnd:>10s} {gap:>7s} "
                      f"{s.wall_s:8.3f} {k:>4s}")


if __name__ == "__main__":
    main()
