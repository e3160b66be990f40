"""Per-stack HBM packing (``formulations.hbm_packing``) with every method, one :class:`Solution` each.

``"milp-highs"`` (exact, Pyomo + HiGHS), ``"first-fit"`` (first-fit decreasing by weight + r x state, with a
binary search on r; a heuristic) and ``"brute-force"`` (every assignment; tiny instances and tests).
"""

from __future__ import annotations

import itertools
import time

from chipdse.core.solution import Solution, SolutionStatus
from chipdse.formulations.hbm_packing import (
    HbmPackingProblem,
    build_hbm_packing_milp,
    check_hbm_packing,
    decode_hbm_packing_milp,
    eq1_bound,
    packing_infeasibility,
)
from chipdse.solvers.backends import solve_pyomo
from chipdse.solvers.common import Methods, ProblemKind, enumerate_best, heuristic_runner, infeasible_solution, settle
from chipdse.solvers.config import SolverConfig

PROBLEM = "hbm-packing"
BRUTE_FORCE_MAX = 200_000
KIND = ProblemKind(PROBLEM, "max", frozenset({"milp-highs", "brute-force"}), check_hbm_packing, unit="requests")


def first_fit(problem: HbmPackingProblem, r: int) -> dict[str, int] | None:
    """First-fit decreasing packing that supports ``r`` requests on every stack, or None."""
    groups = problem.stack_groups()
    left = [problem.capacity_bytes] * len(groups)
    decision = {}
    for b in sorted(problem.blocks, key=lambda b: -(b.weight_bytes + r * b.per_request_bytes)):
        need = b.weight_bytes + r * b.per_request_bytes
        fit = next((s for s, g in enumerate(groups) if g == b.group and left[s] >= need), None)
        if fit is None:
            return None
        left[fit] -= need
        decision[b.name] = fit
    return decision


def _first_fit_best(problem: HbmPackingProblem) -> dict[str, int] | None:
    """Binary search on r for the largest r first-fit packs (first fit is not monotone: keep the best seen)."""
    lo, hi, best = 0, max(eq1_bound(problem), 0), None
    while lo <= hi:
        mid = (lo + hi) // 2
        found = first_fit(problem, mid)
        if found is not None and check_hbm_packing(problem, found)[1] == []:
            best, lo = found, mid + 1
        else:
            hi = mid - 1
    return best


def solve_hbm_packing(problem: HbmPackingProblem, method: str, config: SolverConfig | None = None) -> Solution:
    """Pack one partition's blocks into stacks with ``method`` (one of :data:`HBM_PACKING_METHODS`); arguments,
    status rule and errors as :meth:`solvers.common.Methods.solve`.

    Returns
    -------
    Solution
        ``objective`` = concurrent requests of the packing (checker, exact arithmetic), ``bound`` = the MILP's
        (never above Eq. 1's pooled value), ``status`` infeasible with the violated capacity named when a block
        or a group's weights cannot fit; ``"brute-force"`` refuses (ValueError) more than :data:`BRUTE_FORCE_MAX`
        assignments.
    """
    return SOLVERS.solve(problem, method, config)


def _solve_milp(problem: HbmPackingProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Build, solve (HiGHS) and decode the packing MILP."""
    m = build_hbm_packing_milp(problem)
    build_s = time.perf_counter() - t0
    res = solve_pyomo(m, config)
    decision = decode_hbm_packing_milp(m) if res.has_solution else None
    infeasible = decision is None and res.status == SolutionStatus.INFEASIBLE
    return settle(KIND, problem, method, decision, config, t0, reported=res, bound=res.bound, build_s=build_s,
                  reason="no packing keeps every stack within capacity" if infeasible else "")


def _brute_force(problem: HbmPackingProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Score every assignment of blocks to the stacks of their group (at most :data:`BRUTE_FORCE_MAX`)."""
    groups = problem.stack_groups()
    options = [[s for s, g in enumerate(groups) if g == b.group] for b in problem.blocks]
    count = 1
    for o in options:
        count *= len(o)
    if count > BRUTE_FORCE_MAX:
        msg = f"brute force would try {count:,} packings, more than {BRUTE_FORCE_MAX:,}"
        raise ValueError(msg)
    combos = itertools.product(*options)
    packings = ({b.name: s for b, s in zip(problem.blocks, combo, strict=True)} for combo in combos)
    best, _ = enumerate_best(KIND, problem, packings)
    if best is None:
        return infeasible_solution(KIND, method, "no packing keeps every stack within capacity", t0)
    return settle(KIND, problem, method, best, config, t0, log_summary=f"{count:,} packings enumerated")


SOLVERS = Methods(KIND, {
    "milp-highs": _solve_milp,
    "first-fit": heuristic_runner(KIND, _first_fit_best, "first-fit decreasing, binary search on r",
                                  stuck="first fit packs no stack layout with r >= 0"),
    "brute-force": _brute_force,
}, infeasibility=packing_infeasibility, label="hbm-packing")
"""Every packing method behind :func:`solve_hbm_packing`."""

HBM_PACKING_METHODS = SOLVERS.names
"""Method names accepted by :func:`solve_hbm_packing`."""
