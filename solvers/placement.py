"""Every placement method behind one entry point, :func:`solve_placement`, each returning a ``Solution``.

Exact: ``"hbm-bnb"`` (best-first branch and bound over the ring layouts with a type-level assignment bound;
solvers/placement_bnb.py), ``"milp-highs"`` (RLT MILP through HiGHS), ``"cpsat"`` (CP-SAT) and ``"brute-force"``
(enumeration, tiny instances), and ``"hbm-enum"`` (enumerate the layouts of the ring-restricted chiplets up to the
grid's symmetries, bound each by an assignment problem, solve the few still open by MILP; solvers/placement_decomp.py;
it proves the default finalists in about 1.5 s). Heuristics (HYDRA Sec. VI-D baselines and more):
``"hydra-greedy"`` (HYDRA Sec. IV-A, Steps 1-2), ``"round-robin"``, ``"random"`` (best of 32 seeded samples)
and ``"local-search"`` (pairwise swap descent from hydra-greedy).
"""

from __future__ import annotations

import math
import time
from functools import cache

import numpy as np

from chipdse.core.errors import ChipdseError
from chipdse.core.solution import Solution, TerminationCondition
from chipdse.formulations.placement import (
    PlacementProblem,
    active_types,
    allowed_cells,
    build_placement_cpsat,
    build_placement_milp,
    check_placement,
    chiplet_distance,
    covered_cells,
    decode_placement_cpsat,
    decode_placement_milp,
    has_multicell,
    hint_placement_cpsat,
    placement_infeasibility,
    set_placement_start,
    volume_table,
)
from chipdse.formulations.placement_compact import build_placement_compact_milp, set_compact_start
from chipdse.solvers.backends import PyomoModel, model_value, solve_cpsat, solve_pyomo
from chipdse.solvers.common import ProblemKind, infeasible_solution, settle
from chipdse.solvers.config import SolverConfig, limit_reason
from chipdse.solvers.placement_bnb import solve_by_layout_bnb
from chipdse.solvers.placement_decomp import DecompositionNotApplicable, solve_by_ring_enumeration
from chipdse.solvers.placement_heuristics import (
    PlacementHeuristicError,
    best_random_placement,
    hydra_greedy_placement,
    local_search_placement,
    round_robin_placement,
)

EXACT_METHODS = ("hbm-bnb", "hbm-enum", "milp-highs", "milp-compact", "cpsat", "brute-force")
"""Methods that prove optimality given time (exact=True). ``milp-compact`` is the Kaufman-Broeckx linearization
(formulations/placement_compact.py), kept to compare with RLT-1 (``milp-highs``)."""
HEURISTIC_METHODS = ("hydra-greedy", "round-robin", "random", "local-search")
PLACEMENT_METHODS = EXACT_METHODS + HEURISTIC_METHODS
FOOTPRINT_METHODS = ("milp-highs", "milp-compact", "cpsat", "brute-force")
"""Methods that place chiplets spanning 2 or 4 cells (``PlacementProblem.footprints``); the others return no
placement with a reason naming these."""
BRUTE_FORCE_MAX_ASSIGNMENTS = 2_000_000
KIND = ProblemKind("placement", "min", frozenset(EXACT_METHODS), check_placement, unit="byte-hops/s")
"""Checker, sense and exact methods of HYDRA Eq. 2 placement, for :func:`solvers.common.settle`."""


class PlacementInputError(ChipdseError, ValueError):
    """An unknown method, an infeasible hint, or an instance too large for brute force."""


def solve_placement(
    problem: PlacementProblem,
    method: str,
    config: SolverConfig | None = None,
    seed: int = 0,
    hint: dict[int, str] | None = None,
) -> Solution:
    """Solve ``problem`` with ``method`` and return a checked, normalized ``Solution``.

    Parameters
    ----------
    problem : PlacementProblem
    method : str
        One of :data:`PLACEMENT_METHODS`.
    config : SolverConfig, optional
        Work limit, wall cap, gap, threads and solver seed for the exact methods (default ``SolverConfig()``).
    seed : int
        Seed of the ``"random"`` heuristic.
    hint : dict[int, str], optional
        A feasible placement: the MIP start of HiGHS, the hint of CP-SAT and the start of local search.

    Returns
    -------
    Solution
        ``problem="placement"``; ``objective`` is always :func:`check_placement`'s value of ``decision``
        (bytes x hops); exact methods give ``bound`` in the same units and are OPTIMAL when the gap is
        within ``config.rel_gap``; heuristics have ``bound=None``. An instance without any placement
        returns INFEASIBLE with ``reason`` naming the capacity, and a heuristic that gets stuck NO_SOLUTION.

    Raises
    ------
    PlacementInputError
        For an unknown method, a hint with violations, or a brute force over more than
        :data:`BRUTE_FORCE_MAX_ASSIGNMENTS` assignments.
    RuntimeError
        If a method returns a placement the checker rejects (a bug).

    References
    ----------
    HYDRA Eq. 2 (objective), Sec. IV-A (two-stage placement), Sec. VI-D (round-robin and random baselines).
    """
    if method not in PLACEMENT_METHODS:
        msg = f"placement method must be one of {PLACEMENT_METHODS}, got {method!r}"
        raise PlacementInputError(msg)
    config = config or SolverConfig()
    t0 = time.perf_counter()
    if hint is not None and check_placement(problem, hint)[1]:
        msg = f"hint for {problem.name!r} is not a valid placement: {check_placement(problem, hint)[1]}"
        raise PlacementInputError(msg)
    reason = placement_infeasibility(problem)
    if reason is not None:
        return infeasible_solution(KIND, method, reason, t0)
    if has_multicell(problem) and method not in FOOTPRINT_METHODS:
        reason = f"{method} places one-cell chiplets only; multi-cell footprints: {', '.join(FOOTPRINT_METHODS)}"
        return settle(KIND, problem, method, None, config, t0, termination=TerminationCondition.UNKNOWN,
                      reason=reason)
    if method in ("milp-highs", "milp-compact"):
        return _solve_milp(problem, config, hint, method, t0)
    if method == "cpsat":
        return _solve_cpsat(problem, config, hint, t0)
    if method == "hbm-enum":
        return _solve_ring_enumeration(problem, config, t0)
    if method == "hbm-bnb":
        return _solve_layout_bnb(problem, config, hint, t0)
    if method == "brute-force":
        decision, n_assignments = brute_force_placement(problem)
        return settle(KIND, problem, method, decision, config, t0, extra={"assignments": n_assignments})
    try:
        decision, reason = _heuristic_placement(problem, method, seed, hint), ""
    except PlacementHeuristicError as err:
        decision, reason = None, str(err)
    return settle(KIND, problem, method, decision, config, t0, reason=reason)


def _solve_milp(problem: PlacementProblem, config: SolverConfig, hint: dict[int, str] | None, method: str,
                t0: float) -> Solution:
    """Build, solve (HiGHS, warm-started from ``hint`` when given) and decode the RLT-1 (or compact) MILP."""
    compact = method == "milp-compact"
    model = build_placement_compact_milp(problem) if compact else build_placement_milp(problem)
    if hint is not None:
        (set_compact_start if compact else set_placement_start)(model, hint)
    build_s = time.perf_counter() - t0
    if not model.cell_type:  # no chiplets: the empty placement, and HiGHS rejects a model without columns
        return settle(KIND, problem, method, {}, config, t0, bound=0.0, termination=TerminationCondition.OPTIMAL,
                      build_s=build_s)
    return settle_placement_milp(KIND, problem, model, method, config, t0, hint, build_s)


def settle_placement_milp(kind: ProblemKind, problem: object, model: PyomoModel, method: str,
                          config: SolverConfig, t0: float, start: dict[int, str] | None, build_s: float) -> Solution:
    """Solve a built placement-family MILP (``cell_type_assign`` variables, objective in units of the Param
    ``volume_unit``) through HiGHS, warm-started from ``start`` when given (its values already set in ``model``),
    decode it and :func:`~chipdse.solvers.common.settle` it under ``kind`` (bound converted to the checker's
    units)."""
    res = solve_pyomo(model, config, warm_start=start is not None)
    decision = decode_placement_milp(model) if res.has_solution else None
    unit = model_value(model.volume_unit)
    bound = None if res.bound is None else res.bound * unit
    return settle(kind, problem, method, decision, config, t0, reported=res, bound=bound, start=start, unit=unit,
                  build_s=build_s)


def _solve_cpsat(problem: PlacementProblem, config: SolverConfig, hint: dict[int, str] | None,
                 t0: float) -> Solution:
    """Build, solve and decode the CP-SAT model; convert its integer bound back to bytes x hops."""
    model, cp_vars = build_placement_cpsat(problem)
    if hint is not None:
        hint_placement_cpsat(model, cp_vars, hint)
    build_s = time.perf_counter() - t0
    res, solver = solve_cpsat(model, config)
    decision = decode_placement_cpsat(solver, cp_vars) if res.has_solution else None
    bound = None if res.bound is None else max(0.0, res.bound * cp_vars.volume_unit - cp_vars.rounding_error)
    return settle(KIND, problem, "cpsat", decision, config, t0, reported=res, bound=bound, start=hint,
                  build_s=build_s,
                  extra={"volume_unit": cp_vars.volume_unit, "rounding_error": cp_vars.rounding_error})


def _solve_ring_enumeration(problem: PlacementProblem, config: SolverConfig, t0: float) -> Solution:
    """Ring-layout enumeration + optimal assignment (solvers/placement_decomp.py)."""
    try:
        res = solve_by_ring_enumeration(problem, config, solve_fixed=_solve_fixed_layout, t0=t0)
    except DecompositionNotApplicable as exc:
        return settle(KIND, problem, "hbm-enum", None, config, t0, termination=TerminationCondition.UNKNOWN,
                      reason=str(exc))
    term = TerminationCondition.ENUMERATED if res["proven"] else res["stopped"] or TerminationCondition.WORK_LIMIT
    summary = (f"hbm-enum: {res['layouts']:,} ring layouts ({res['canonical']:,} up to symmetry), "
               f"{res['assignments']:,} bounded by assignment, {res['subproblems']:,} solved by MILP, "
               f"{res['work_units']:.3g} work units")
    reason = "" if res["proven"] else limit_reason(config, term)
    return settle(KIND, problem, "hbm-enum", res["decision"], config, t0, bound=res["bound"], termination=term,
                  log_summary=summary, reason=reason, extra={"work_units": res["work_units"]})


def _solve_layout_bnb(problem: PlacementProblem, config: SolverConfig, hint: dict[int, str] | None,
                      t0: float) -> Solution:
    """Branch and bound over the layouts of the ring-restricted chiplets (solvers/placement_bnb.py)."""
    res = solve_by_layout_bnb(problem, config, solve_fixed=_solve_fixed_layout, hint=hint, t0=t0)
    term = TerminationCondition.OPTIMAL if res["proven"] else res["stopped"] or TerminationCondition.WORK_LIMIT
    summary = (f"hbm-bnb: {res['nodes']:,} partial layouts bounded, {res['leaves']:,} complete layouts scored, "
               f"{res['subproblems']:,} solved by MILP, {res['work_units']:.3g} work units")
    reason = "" if res["proven"] else limit_reason(config, term)
    return settle(KIND, problem, "hbm-bnb", res["decision"], config, t0, bound=res["bound"], termination=term,
                  start=hint, log_summary=summary, reason=reason, extra={"work_units": res["work_units"]})


def _solve_fixed_layout(sub: PlacementProblem, config: SolverConfig, hint: dict[int, str] | None) -> Solution:
    """The exact solve of one open ring layout in ``hbm-enum`` (the RLT-1 MILP, warm-started)."""
    return solve_placement(sub, "milp-highs", config, hint=hint)


def _heuristic_placement(problem: PlacementProblem, method: str, seed: int,
                         hint: dict[int, str] | None) -> dict[int, str]:
    """Run one heuristic (``PlacementHeuristicError`` when it gets stuck)."""
    if method == "hydra-greedy":
        return hydra_greedy_placement(problem)
    if method == "round-robin":
        return round_robin_placement(problem)
    if method == "random":
        return best_random_placement(problem, np.random.default_rng(seed))
    return local_search_placement(problem, hint if hint is not None else hydra_greedy_placement(problem))


# --- brute force --------------------------------------------------------------------------------------------


def count_placements(problem: PlacementProblem) -> int:
    """Return the number of distinct placements (type multiset arrangements respecting allowed cells).

    Counted by dynamic programming over cells with the remaining count per type as state (with multi-cell
    footprints: the product over types of C(anchor cells, count), an upper bound that ignores overlaps); when that
    state space is above 2e6 the multinomial upper bound ``n! / (prod_t c_t! (n - sum c)!)`` is returned instead
    if it is above :data:`BRUTE_FORCE_MAX_ASSIGNMENTS` (the exact count is then not needed).
    """
    n, types = problem.rows * problem.cols, active_types(problem)
    counts = tuple(problem.counts[t] for t in types)
    if sum(counts) > n:
        return 0
    if has_multicell(problem):  # overlaps ignored: an upper bound
        return math.prod(math.comb(len(allowed_cells(problem, t)), c) for t, c in zip(types, counts, strict=True))
    upper = math.factorial(n) // math.prod(math.factorial(c) for c in counts) // math.factorial(n - sum(counts))
    if n * math.prod(c + 1 for c in counts) > 2_000_000 and upper > BRUTE_FORCE_MAX_ASSIGNMENTS:
        return upper
    ok = [set(allowed_cells(problem, t)) for t in types]

    @cache
    def ways(cell: int, left: tuple[int, ...]) -> int:
        need = sum(left)
        if need > n - cell:
            return 0
        if cell == n:
            return 1
        total = ways(cell + 1, left) if need < n - cell else 0
        for k, c in enumerate(left):
            if c and cell in ok[k]:
                total += ways(cell + 1, left[:k] + (c - 1,) + left[k + 1 :])
        return total

    return ways(0, counts)


def brute_force_placement(problem: PlacementProblem) -> tuple[dict[int, str], int]:
    """Enumerate every placement and return an optimal one and the number of placements.

    Chiplets are placed type by type, each on a free allowed anchor cell (its whole footprint free) above the
    previous chiplet of its type (so every distinct placement is enumerated once); partial costs are nondecreasing
    (volumes >= 0), so a branch whose partial cost already reaches the incumbent is cut. The first optimum found is
    returned.

    Raises
    ------
    PlacementInputError
        If :func:`count_placements` exceeds :data:`BRUTE_FORCE_MAX_ASSIGNMENTS`.
    """
    n_assignments = count_placements(problem)
    if n_assignments > BRUTE_FORCE_MAX_ASSIGNMENTS:
        msg = (
            f"brute force on {problem.name!r} would enumerate {n_assignments} placements, "
            f"more than {BRUTE_FORCE_MAX_ASSIGNMENTS}"
        )
        raise PlacementInputError(msg)
    types, vol, n = active_types(problem), volume_table(problem), problem.rows * problem.cols
    items = [k for k, t in enumerate(types) for _ in range(problem.counts[t])]
    weight = [[vol.get((t, u), 0.0) for u in types] for t in types]
    dist = [[[[chiplet_distance(problem, i, t, j, u) for j in range(n)] for u in types] for i in range(n)]
            for t in types]  # dist[k][cell][q][c]: type k at cell to type q at c
    ok = [allowed_cells(problem, t) for t in types]
    cover = [[covered_cells(problem, i, t) for i in range(n)] for t in types]
    occupied = [False] * n
    placed: list[tuple[int, int]] = []
    best: list = [math.inf, None]

    def extend(depth: int, cost: float) -> None:
        if depth == len(items):
            best[:] = [cost, list(placed)]
            return
        k = items[depth]
        low = placed[-1][0] + 1 if depth and items[depth - 1] == k else 0
        for cell in ok[k]:
            if cell < low or any(occupied[c] for c in cover[k][cell]):
                continue
            new = cost + sum(weight[k][q] * dist[k][cell][q][c] for c, q in placed)
            if new >= best[0]:
                continue
            for c in cover[k][cell]:
                occupied[c] = True
            placed.append((cell, k))
            extend(depth + 1, new)
            placed.pop()
            for c in cover[k][cell]:
                occupied[c] = False

    extend(0, 0.0)
    if best[1] is None:
        msg = f"brute force found no placement for {problem.name!r} (placement_infeasibility missed it)"
        raise RuntimeError(msg)
    return {cell: types[k] for cell, k in sorted(best[1])}, n_assignments
