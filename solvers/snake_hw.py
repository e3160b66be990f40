"""SNAKE hardware choices solved exactly and by enumeration: the supported shape set
(``formulations.snake_shapes``) and the PE / buffer area split (``formulations.snake_area``).

Methods: ``"milp-highs"`` (exact, Pyomo + HiGHS), ``"enumeration"`` (every shape set / every pair; exact, the test
oracle) and, for the shape set, ``"greedy"`` (add the shape with the largest time saved per mm^2 while the budget
allows; a heuristic).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

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
    build_least_area_milp,
    build_shape_set_milp,
    check_shape_set,
    decode_shape_set_milp,
    validate_shape_set,
)
from chipdse.solvers.backends import PyomoModel, solve_pyomo
from chipdse.solvers.common import Methods, ProblemKind, enumerate_best, heuristic_runner, settle
from chipdse.solvers.config import SolverConfig

SHAPE_KIND = ProblemKind("snake-shapes", "min", frozenset({"milp-highs", "enumeration"}), check_shape_set, unit="s")
AREA_KIND = ProblemKind("snake-area", "min", frozenset({"milp-highs", "enumeration"}), check_area_split, unit="s")


def _solve_milp(kind: ProblemKind, p: Any, method: str, build: Callable[[Any], PyomoModel],
                decode: Callable[[PyomoModel], Any], config: SolverConfig, t0: float) -> Solution:
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
    """Choose the supported logical shapes with ``method`` (one of :data:`SHAPE_SET_METHODS`; SNAKE Sec. 4.2);
    arguments, status rule and errors as :meth:`solvers.common.Methods.solve`.

    Returns
    -------
    Solution
        ``decision`` = frozenset of shape indices; ``objective`` = weighted decode time, s (checker's).
    """
    return SHAPE_SET.solve(p, method, config)


def solve_area_split(p: AreaSplitProblem, method: str, config: SolverConfig | None = None) -> Solution:
    """Choose the core's PE configuration and buffer size with ``method`` (one of :data:`AREA_SPLIT_METHODS`;
    SNAKE Sec. 3.2, Fig. 4a); arguments, status rule and errors as :meth:`solvers.common.Methods.solve`.

    Returns
    -------
    Solution
        ``decision`` = (PE configuration index, buffer index); ``objective`` = decode latency, s.
    """
    return AREA_SPLIT.solve(p, method, config)


def _base(p: ShapeSetProblem) -> frozenset[int]:
    """The always-present shapes, or else the single best shape."""
    return frozenset(p.always) or frozenset({int(np.argmin(p.weight @ p.time_s))})


def _shape_infeasibility(p: ShapeSetProblem) -> str | None:
    return "the always-present shapes exceed the area budget" if p.area_mm2(_base(p)) > p.area_budget_mm2 else None


def _enumerate_shapes(p: ShapeSetProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Every superset of the always-present shapes; ties to the least area, then the first found."""
    optional = [s for s in range(len(p.shapes)) if s not in p.always]
    sets = (frozenset(p.always) | frozenset(extra) for k in range(len(optional) + 1)
            for extra in itertools.combinations(optional, k))
    best, _ = enumerate_best(SHAPE_KIND, p, sets, tie=p.area_mm2)
    return settle(SHAPE_KIND, p, method, best, config, t0, log_summary=f"{2 ** len(optional)} shape sets enumerated")


def greedy_shape_set(p: ShapeSetProblem) -> frozenset[int]:
    """Add the shape with the largest decode time saved per mm^2 while one still fits and helps (a heuristic)."""
    chosen = set(_base(p))
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
            return frozenset(chosen)
        chosen.add(max(gains)[1])


def _shape_milp(p: ShapeSetProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Least weighted decode time, then (second MILP) the least area among the shape sets of that time."""
    first = _solve_milp(SHAPE_KIND, p, method, build_shape_set_milp, lambda m: _prune(p, decode_shape_set_milp(m)),
                        config, t0)
    if first.decision is None or first.objective is None:
        return first
    m = build_least_area_milp(p, first.objective * (1 + 1e-12) + 1e-15)
    res = solve_pyomo(m, config)
    if not res.has_solution:
        return first
    decision = _prune(p, decode_shape_set_milp(m))
    objective, violations = check_shape_set(p, decision)
    if violations or p.area_mm2(decision) >= p.area_mm2(first.decision):
        return first
    return dataclasses.replace(first, decision=decision, objective=objective,
                               wall_s=time.perf_counter() - t0,
                               log_summary=f"{first.log_summary}; least area among equal times: {res.log_summary}")


def _enumerate_area(p: AreaSplitProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Every (PE configuration, buffer) pair; ties to the first in row-major order."""
    pairs = itertools.product(range(len(p.pe_configs)), range(len(p.buffer_kb)))
    best, count = enumerate_best(AREA_KIND, p, pairs)
    return settle(AREA_KIND, p, method, best, config, t0, log_summary=f"{count} pairs scored")


def _area_milp(p: AreaSplitProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    return _solve_milp(AREA_KIND, p, method, build_area_split_milp, decode_area_split_milp, config, t0)


_GREEDY = heuristic_runner(SHAPE_KIND, greedy_shape_set, "greedy: time saved per mm^2")
SHAPE_SET = Methods(SHAPE_KIND, {"milp-highs": _shape_milp, "enumeration": _enumerate_shapes, "greedy": _GREEDY},
                    validate=validate_shape_set, infeasibility=_shape_infeasibility, label="shape-set")
"""Every shape-set method behind :func:`solve_shape_set`."""
AREA_SPLIT = Methods(AREA_KIND, {"milp-highs": _area_milp, "enumeration": _enumerate_area},
                     validate=validate_area_split, infeasibility=area_split_infeasibility, label="area-split")
"""Every area-split method behind :func:`solve_area_split`."""
SHAPE_SET_METHODS = SHAPE_SET.names
AREA_SPLIT_METHODS = AREA_SPLIT.names
