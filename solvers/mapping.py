"""Solve the bottleneck mapping (HYDRA Eqs. 4-5) with every method and return one :class:`Solution` each.

Methods
-------
``"milp-highs"``
    :func:`formulations.mapping.build_mapping_milp` through HiGHS (exact); pairs slower than the
    ``"lpt-greedy"`` bottleneck are left out of the model, which keeps every optimal mapping.
``"cpsat"``
    :func:`formulations.mapping.build_mapping_cpsat` through CP-SAT, hinted with ``"lpt-greedy"`` and
    pruned by its bottleneck like the MILP (exact up to the tick resolution, see the builder).
``"brute-force"``
    Every assignment of tasks to compatible chiplets (exact; tiny instances only).
``"lpt-greedy"``
    Longest processing time first (heuristic), :func:`lpt_greedy_mapping`.
``"round-robin"``
    Tasks in order to compatible chiplets in cyclic order (heuristic), :func:`round_robin_mapping`.
``"round-robin-balanced"``
    Round robin within each task's compatible chiplets, whatever their order (heuristic),
    :func:`balanced_round_robin_mapping`.
``"contiguous-dp"``
    The exact dynamic program for contiguous chain splits, a heuristic for the general problem,
    :func:`contiguous_dp_mapping`.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace
from functools import partial

from chipdse.core.solution import Solution
from chipdse.formulations.mapping import (
    MappingProblem,
    build_mapping_cpsat,
    build_mapping_milp,
    check_mapping,
    compatible_chiplets,
    decode_mapping_cpsat,
    decode_mapping_milp,
    mapping_infeasibility,
    min_task_times,
    restrict_to_home,
    stage_times,
)
from chipdse.solvers.backends import solve_cpsat, solve_pyomo
from chipdse.solvers.common import Methods, ProblemKind, enumeration_runner, heuristic_runner, settle
from chipdse.solvers.config import SolverConfig

MAX_BRUTE_FORCE = 2_000_000
"""Most assignments ``"brute-force"`` enumerates before refusing."""

KIND = ProblemKind("mapping", "min", frozenset({"milp-highs", "cpsat", "brute-force"}), check_mapping,
                   extra=lambda p, d: {"stage_times_s": stage_times(p, d)}, unit="s")
"""Checker, sense and exact methods of the bottleneck mapping, for :func:`solvers.common.settle`."""


def solve_mapping(problem: MappingProblem, method: str = "milp-highs", config: SolverConfig | None = None
                  ) -> Solution:
    """Map tasks to chiplets with ``method`` (one of :data:`MAPPING_METHODS`), minimizing the bottleneck stage
    time (HYDRA Eqs. 4-5); arguments, status rule and errors as :meth:`solvers.common.Methods.solve`.

    Returns
    -------
    Solution
        ``problem="mapping"``, ``sense="min"``; ``decision`` is task -> chiplet; ``objective`` is the
        bottleneck stage time in seconds recomputed by :func:`formulations.mapping.check_mapping`; ``bound``
        a lower bound in seconds (exact methods); ``extra["stage_times_s"]`` every chiplet's stage time. A
        task without a compatible chiplet gives status ``INFEASIBLE`` with ``reason`` naming it and no
        decision. When ``"contiguous-dp"`` finds no contiguous split, the status is ``NO_SOLUTION``;
        ``"brute-force"`` refuses (ValueError) more than :data:`MAX_BRUTE_FORCE` assignments.
    """
    return SOLVERS.solve(problem, method, config)


def brute_force_mapping(problem: MappingProblem) -> tuple[dict[str, str], int]:
    """Enumerate every assignment of tasks to compatible chiplets and return the best (tiny instances only).

    Returns
    -------
    (dict[str, str], int)
        The first assignment (in ``itertools.product`` order over ``problem.chiplets`` order) with the least
        bottleneck, and the number of assignments enumerated.

    Raises
    ------
    ValueError
        More than :data:`MAX_BRUTE_FORCE` assignments, or a task without a compatible chiplet.
    """
    choices = [compatible_chiplets(problem, k) for k in problem.tasks]
    count = math.prod(len(c) for c in choices)
    if count > MAX_BRUTE_FORCE:
        msg = f"brute force over {count} assignments exceeds the limit of {MAX_BRUTE_FORCE}"
        raise ValueError(msg)
    if count == 0:
        msg = "brute force: some task has no compatible chiplet"
        raise ValueError(msg)
    times = [[problem.time_s[k, c] for c in cs] for k, cs in zip(problem.tasks, choices, strict=True)]
    best_obj, best_idx = math.inf, None
    for idx in itertools.product(*(range(len(c)) for c in choices)):
        loads: dict[str, float] = {}
        for cs, ts, i in zip(choices, times, idx, strict=True):
            loads[cs[i]] = loads.get(cs[i], 0.0) + ts[i]
        obj = max(loads.values(), default=0.0)
        if obj < best_obj:
            best_obj, best_idx = obj, idx
    assert best_idx is not None
    return {k: cs[i] for k, cs, i in zip(problem.tasks, choices, best_idx, strict=True)}, count


def lpt_greedy_mapping(problem: MappingProblem) -> dict[str, str]:
    """Map tasks longest first, each to the compatible chiplet where it would finish earliest.

    Two task orders are tried and the mapping with the smaller bottleneck kept: plain LPT (minimum time over
    compatible chiplets, descending) and eligibility-first LPT (tasks with fewer compatible chiplets first,
    e.g. attention-only blocks before the MLPs any chiplet can run; then longest first). Each task goes to the
    compatible chiplet minimizing its stage time after adding the task (ties in task and chiplet order).

    A cross-phase problem (``problem.home`` set, :func:`formulations.mapping.joint_mapping`) gets two more steps:
    LPT on the home chiplets only (the same-phase mapping), relieved (:func:`relieve_bottleneck`) first within
    the home chiplets, then across both roles; and LPT on every compatible chiplet, relieved. The better is
    kept, so the cross-phase mapping is never worse than the same-phase one LPT finds.

    Returns
    -------
    dict[str, str]
        Task -> chiplet; every task with a compatible chiplet is mapped.

    References
    ----------
    Graham's LPT rule (1969), here for unrelated machines with eligibility; DESIGN.md item 3 ("greedy LPT
    by affinity"); least-flexible-first ordering for restricted assignment (Pinedo, Scheduling, Sec. 5.1).
    """
    if problem.home is None:
        return _lpt(problem)
    home = restrict_to_home(problem)
    start = relieve_bottleneck(problem, relieve_bottleneck(home, _lpt(home)))
    plain = relieve_bottleneck(problem, _lpt(problem))
    return min((start, plain), key=lambda d: max(stage_times(problem, d).values(), default=0.0))


def _lpt(problem: MappingProblem) -> dict[str, str]:
    """The better of plain and eligibility-first LPT (see :func:`lpt_greedy_mapping`)."""
    mins = min_task_times(problem)
    compat = {k: compatible_chiplets(problem, k) for k in mins}
    orders = (sorted(mins, key=lambda k: -mins[k]), sorted(mins, key=lambda k: (len(compat[k]), -mins[k])))
    best: tuple[float, dict[str, str]] | None = None
    for order in orders:
        loads = dict.fromkeys(problem.chiplets, 0.0)
        decision: dict[str, str] = {}
        for k in order:
            c = min(compat[k], key=lambda c: loads[c] + problem.time_s[k, c])
            decision[k] = c
            loads[c] += problem.time_s[k, c]
        bottleneck = max(loads.values(), default=0.0)
        if best is None or bottleneck < best[0]:
            best = (bottleneck, decision)
    decision = best[1] if best is not None else {}
    return {k: decision[k] for k in problem.tasks if k in decision}


def relieve_bottleneck(problem: MappingProblem, decision: dict[str, str]) -> dict[str, str]:
    """Move tasks off the busiest chiplet while a move shortens it without making another chiplet as busy.

    Each step takes a chiplet with the largest stage time and moves the one task (to a compatible chiplet) that
    minimizes ``max(t_src - t[k, src], t_dst + t[k, dst])``, provided that is below ``t_src``; it stops when no
    such move exists (or after ``10 * n_tasks`` moves). Every move lowers the sorted stage-time vector
    lexicographically, so the bottleneck never grows. On a cross-phase problem (:func:`formulations.mapping.
    joint_mapping`) this is the elastic reassignment of HYDRA Sec. IV-C done once, at mapping time: work leaves a
    saturated phase's chiplet for an idle one of the other role.

    Parameters
    ----------
    problem : MappingProblem
    decision : dict[str, str]
        A feasible task -> chiplet mapping (left unchanged).

    Returns
    -------
    dict[str, str]
        The improved mapping, tasks in ``problem.tasks`` order.
    """
    out = dict(decision)
    loads = stage_times(problem, out)
    compat = {k: compatible_chiplets(problem, k) for k in out}
    for _ in range(10 * len(problem.tasks)):
        src = max(problem.chiplets, key=lambda c: loads[c])
        moves = [(max(loads[src] - problem.time_s[k, src], loads[c] + problem.time_s[k, c]), k, c)
                 for k in problem.tasks if out.get(k) == src for c in compat[k] if c != src]
        if not moves:
            break
        after, k, dst = min(moves)
        if after >= loads[src]:
            break
        loads[src] -= problem.time_s[k, src]
        loads[dst] += problem.time_s[k, dst]
        out[k] = dst
    return {k: out[k] for k in problem.tasks if k in out}


def round_robin_mapping(problem: MappingProblem) -> dict[str, str]:
    """Map tasks in order to compatible chiplets in cyclic order (a naive baseline).

    A pointer walks ``problem.chiplets`` cyclically; each task goes to the first compatible chiplet at or
    after the pointer, and the pointer moves past that chiplet.

    Returns
    -------
    dict[str, str]
        Task -> chiplet; every task with a compatible chiplet is mapped.
    """
    n = len(problem.chiplets)
    pointer = 0
    decision: dict[str, str] = {}
    for k in problem.tasks:
        for offset in range(n):
            i = (pointer + offset) % n
            if (k, problem.chiplets[i]) in problem.time_s:
                decision[k] = problem.chiplets[i]
                pointer = i + 1
                break
    return decision


def balanced_round_robin_mapping(problem: MappingProblem) -> dict[str, str]:
    """Map tasks in order, each to the compatible chiplet with the fewest tasks so far (a naive baseline that is
    round robin within each set of compatible chiplets, whatever the order of ``problem.chiplets``).

    Ties go to the first chiplet in cyclic order after the one used last. :func:`round_robin_mapping`'s single
    pointer is balanced only when the chiplet order alternates the types (as round-robin placement lays them
    out): with chiplets ``A1, A2, B1, B2`` and tasks alternating A-only and B-only it puts every task on A1 or
    B1; this one alternates A1, A2 and B1, B2 (benchmarks/bench_random_placement.py measures what that does to
    HYDRA Fig. 10's random baseline).

    Returns
    -------
    dict[str, str]
        Task -> chiplet; every task with a compatible chiplet is mapped.
    """
    n = len(problem.chiplets)
    count = dict.fromkeys(problem.chiplets, 0)
    pointer = 0
    decision: dict[str, str] = {}
    for k in problem.tasks:
        order = [problem.chiplets[(pointer + o) % n] for o in range(n)]
        ok = [(count[c], o) for o, c in enumerate(order) if (k, c) in problem.time_s]
        if not ok:
            continue
        c = order[min(ok)[1]]
        decision[k] = c
        count[c] += 1
        pointer = (problem.chiplets.index(c) + 1) % n
    return decision


def contiguous_dp_mapping(problem: MappingProblem) -> dict[str, str] | None:
    """Split the task chain into contiguous runs, one per chiplet in chiplet order, minimizing the bottleneck.

    Parameters
    ----------
    problem : MappingProblem
        Tasks in pipeline order ``problem.tasks``; chiplets in ``problem.chiplets`` order.

    Returns
    -------
    dict[str, str] | None
        The best contiguous mapping, or ``None`` when no contiguous split avoids incompatible pairs.

    Notes
    -----
    The restricted problem: chiplet j takes tasks ``l_j .. l_{j+1} - 1`` with ``0 = l_0 <= l_1 <= ... <= l_m
    = n`` (a run may be empty), i.e. the mapping is non-decreasing along the chain. The DP
    ``f[j][i] = min_{l <= i} max(f[j-1][l], sum_{k=l}^{i-1} t[k, c_j])`` with ``f[0][0] = 0`` solves it
    exactly in O(m n^2); a run containing an incompatible pair costs infinity and is skipped. This is the
    classic linear-partition / chain-to-chain mapping (Bokhari 1988) and is exact for the restricted problem,
    hence a test oracle, but only a heuristic (``exact=False``) for the general mapping, which may interleave.
    """
    tasks, chiplets = problem.tasks, problem.chiplets
    n, m = len(tasks), len(chiplets)
    inf = math.inf
    f = [[inf] * (n + 1) for _ in range(m + 1)]
    arg = [[0] * (n + 1) for _ in range(m + 1)]
    f[0][0] = 0.0
    for j in range(1, m + 1):
        c = chiplets[j - 1]
        for i in range(n + 1):
            best, best_start = f[j - 1][i], i  # empty run
            run = 0.0
            for start in range(i - 1, -1, -1):  # run start .. i-1, grown leftwards
                t = problem.time_s.get((tasks[start], c))
                if t is None:
                    break  # every longer run contains this incompatible pair too
                run += t
                if run >= best:
                    break  # runs only grow leftwards
                cand = max(f[j - 1][start], run)
                if cand < best:
                    best, best_start = cand, start
            f[j][i], arg[j][i] = best, best_start
    if f[m][n] == inf:
        return None
    decision: dict[str, str] = {}
    i = n
    for j in range(m, 0, -1):
        start = arg[j][i]
        for k in tasks[start:i]:
            decision[k] = chiplets[j - 1]
        i = start
    return {k: decision[k] for k in tasks}


def _solve_milp(kind: ProblemKind, problem: MappingProblem, method: str, config: SolverConfig, t0: float
                ) -> Solution:
    """Build (pairs slower than the LPT bottleneck left out), solve and decode the MILP; bound in seconds."""
    lpt = lpt_greedy_mapping(problem)
    m = build_mapping_milp(problem, upper_bound_s=check_mapping(problem, lpt)[0])
    build_s = time.perf_counter() - t0
    res = solve_pyomo(m, config)
    unit = float(m.time_unit_s.value)
    decision = decode_mapping_milp(m) if res.has_solution else None
    bound = res.bound * unit if res.bound is not None else None
    return settle(kind, problem, method, decision, config, t0, reported=res, bound=bound, unit=unit,
                  build_s=build_s)


def _solve_cpsat(kind: ProblemKind, problem: MappingProblem, method: str, config: SolverConfig, t0: float
                 ) -> Solution:
    """Build (hinted with LPT, slower pairs left out), solve and decode the CP-SAT model; bound in seconds."""
    lpt = lpt_greedy_mapping(problem)
    built = build_mapping_cpsat(problem, hint=lpt, upper_bound_s=check_mapping(problem, lpt)[0])
    build_s = time.perf_counter() - t0
    res, solver = solve_cpsat(built.model, config)
    decision = decode_mapping_cpsat(built, solver) if res.has_solution else None
    bound = built.bound_s(res.bound) if res.bound is not None else None
    return settle(kind, problem, method, decision, config, t0, reported=res, bound=bound, start=lpt,
                  resolution=len(problem.tasks) * built.resolution_s, build_s=build_s,
                  extra={"resolution_s": built.resolution_s})


def _methods(kind: ProblemKind) -> Methods:
    """Every mapping method, settled as ``kind`` (the same methods serve the same-phase and cross-phase problems)."""
    return Methods(kind, {
        "milp-highs": partial(_solve_milp, kind), "cpsat": partial(_solve_cpsat, kind),
        "brute-force": enumeration_runner(kind, brute_force_mapping, "assignments"),
        "lpt-greedy": heuristic_runner(kind, lpt_greedy_mapping),
        "round-robin": heuristic_runner(kind, round_robin_mapping),
        "round-robin-balanced": heuristic_runner(kind, balanced_round_robin_mapping),
        "contiguous-dp": heuristic_runner(kind, contiguous_dp_mapping, stuck="no split of the task chain into "
                                          "contiguous runs in chiplet order is compatible"),
    }, infeasibility=mapping_infeasibility)


SOLVERS = _methods(KIND)
"""Every mapping method behind :func:`solve_mapping`."""

MAPPING_METHODS = SOLVERS.names
"""Method names accepted by :func:`solve_mapping`."""

CROSS_PHASE_KIND = replace(KIND, name="mapping-cross-phase")
"""The cross-phase mapping (:func:`solvers.problems.joint_mapping_problem`): same checker, its own name."""

CROSS_PHASE_SOLVERS = _methods(CROSS_PHASE_KIND)
"""Every mapping method behind :func:`solve_cross_phase_mapping`."""


def solve_cross_phase_mapping(problem: MappingProblem, method: str = "milp-highs",
                              config: SolverConfig | None = None) -> Solution:
    """Map both phases' blocks onto one capacity per chiplet (a :func:`formulations.mapping.joint_mapping`
    problem) with ``method``; as :func:`solve_mapping`, with ``problem="mapping-cross-phase"``. The objective is
    the busiest chiplet's work per unit of the joint problem (seconds per request for
    :func:`solvers.problems.joint_mapping_problem`); :func:`formulations.mapping.split_joint_decision` gives the
    per-phase mappings."""
    return CROSS_PHASE_SOLVERS.solve(problem, method, config)
