"""SNAKE hardware choices solved exactly and by enumeration: the supported shape set
(``formulations.snake_shapes``) and the PE / buffer area split (``formulations.snake_area``).

Methods: ``"milp-highs"`` (exact, Pyomo + HiGHS), ``"enumeration"`` (every shape set / every pair; exact, the test
oracle) and, for the shape set, ``"greedy"`` (add the shape with the largest time saved per mm^2 while the budget
allows; a heuristic).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyomo.environ as pyo

from chipdse.core.solution import Solution
from chipdse.formulations.snake_area import (
    AreaSplitProblem,
    area_split_infeasibility,
    build_area_split_milp,
    check_area_split,
    decode_area_split_milp,
    validate_area_split,
)
from chipdse.formulations.snake_shapes import (
    ShapeSetProblem,
    build_shape_set_milp,
    check_shape_set,
    decode_shape_set_milp,
    validate_shape_set,
)
from chipdse.solvers.backends import solve_pyomo
from chipdse.solvers.common import ProblemKind, infeasible_solution, method_config, settle
from chipdse.solvers.config import SolverConfig

SHAPE_SET_METHODS = ("milp-highs", "enumeration", "greedy")
AREA_SPLIT_METHODS = ("milp-highs", "enumeration")
SHAPE_KIND = ProblemKind("snake-shapes", "min", frozenset({"milp-highs", "enumeration"}), check_shape_set)
AREA_KIND = ProblemKind("snake-area", "min", frozenset({"milp-highs", "enumeration"}), check_area_split)


def _solve_milp(kind: ProblemKind, p: Any, method: str, build: Callable[[Any], pyo.ConcreteModel],
                decode: Callable[[pyo.ConcreteModel], Any], config: SolverConfig, t0: float) -> Solution:
    """Build, solve (HiGHS) and decode one of the two MILPs; objectives are in microseconds, bounds back in s."""
    m = build(p)
    build_s = time.perf_counter() - t0
    res = solve_pyomo(m, config)
    decision = decode(m) if res.has_solution else None
    bound = None if res.bound is None else res.bound / 1e6
    return settle(kind, p, method, decision, config, t0, reported=res, bound=bound, unit=1e-6, build_s=build_s)


def _prune(p: ShapeSetProblem, chosen: frozenset[int]) -> frozenset[int]:
    """Drop supported shapes whose removal leaves the decode time unchanged, largest area first.

    The MILP's area tie-break is far below the solver's tolerances, so an unused shape can stay open; removing it
    keeps the checker's objective and lowers the area, as the enumeration's tie-break does.
    """
    best = check_shape_set(p, chosen)[0]
    for s in sorted(chosen - set(p.always), key=lambda s: (-p.ports[s], -p.config_area_mm2[s])):
        trial = chosen - {s}
        if trial and check_shape_set(p, trial)[0] <= best:
            chosen = trial
    return chosen


def solve_shape_set(p: ShapeSetProblem, method: str, config: SolverConfig | None = None) -> Solution:
    """Choose the supported logical shapes with ``method``.

    Returns
    -------
    Solution
        ``decision`` = frozenset of shape indices; ``objective`` = weighted decode time, s (checker's).

    Raises
    ------
    ValueError
        Unknown method.
    SpecError
        A malformed instance.
    """
    config, t0 = method_config(method, SHAPE_SET_METHODS, "shape-set", config)
    validate_shape_set(p)
    base = frozenset(p.always) or frozenset({int(np.argmin(p.weight @ p.time_s))})
    if p.area_mm2(base) > p.area_budget_mm2:
        return infeasible_solution(SHAPE_KIND, method, "the always-present shapes exceed the area budget", t0)
    if method == "enumeration":
        optional = [s for s in range(len(p.shapes)) if s not in p.always]
        best, best_t = None, float("inf")
        for k in range(len(optional) + 1):
            for extra in itertools.combinations(optional, k):
                cand = frozenset(p.always) | frozenset(extra)
                if not cand:
                    continue
                obj, bad = check_shape_set(p, cand)
                if not bad and (obj, p.area_mm2(cand)) < (best_t, p.area_mm2(best) if best else float("inf")):
                    best, best_t = cand, obj
        return settle(SHAPE_KIND, p, method, best, config, t0,
                      log_summary=f"{2 ** len(optional)} shape sets enumerated")
    if method == "greedy":
        chosen = set(base)
        while True:
            now = check_shape_set(p, frozenset(chosen))[0]
            gains = []
            for s in set(range(len(p.shapes))) - chosen:
                cand = frozenset(chosen | {s})
                extra = p.area_mm2(cand) - p.area_mm2(frozenset(chosen))
                obj, bad = check_shape_set(p, cand)
                if not bad and obj < now:
                    gains.append(((now - obj) / max(extra, 1e-12), s))
            if not gains:
                break
            chosen.add(max(gains)[1])
        return settle(SHAPE_KIND, p, method, frozenset(chosen), config, t0, log_summary="greedy: time saved per mm^2")
    return _solve_milp(SHAPE_KIND, p, method, build_shape_set_milp, lambda m: _prune(p, decode_shape_set_milp(m)),
                       config, t0)


def solve_area_split(p: AreaSplitProblem, method: str, config: SolverConfig | None = None) -> Solution:
    """Choose the core's PE configuration and buffer size with ``method``.

    Returns
    -------
    Solution
        ``decision`` = (PE configuration index, buffer index); ``objective`` = decode latency, s.

    Raises
    ------
    ValueError
        Unknown method.
    SpecError
        A malformed instance.
    """
    config, t0 = method_config(method, AREA_SPLIT_METHODS, "area-split", config)
    validate_area_split(p)
    why = area_split_infeasibility(p)
    if why is not None:
        return infeasible_solution(AREA_KIND, method, why, t0)
    if method == "enumeration":
        pairs = [(i, j) for i in range(len(p.pe_configs)) for j in range(len(p.buffer_kb))
                 if not check_area_split(p, (i, j))[1]]
        best = min(pairs, key=lambda ij: (p.latency_s[ij], ij))
        return settle(AREA_KIND, p, method, best, config, t0, log_summary=f"{len(pairs)} feasible pairs enumerated")
    return _solve_milp(AREA_KIND, p, method, build_area_split_milp, decode_area_split_milp, config, t0)
