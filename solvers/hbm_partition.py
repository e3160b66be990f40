"""Solve the HBM partition (HYDRA Eq. 1) with every method and return one :class:`Solution` each.

Methods
-------
``"milp-highs"``
    :func:`formulations.hbm_partition.build_hbm_partition_milp` (exact table form of Eq. 1) through HiGHS.
``"cpsat"``
    :func:`formulations.hbm_partition.build_hbm_partition_cpsat` through CP-SAT.
``"enumeration"``
    Every composition ``(N_g)`` of ``n_hbm`` with ``N_g >= 1`` is scored exactly; this is HYDRA's own method
    (it enumerates candidate partitions ``(N_M, N_A)``), and it is exact.
``"proportional"``
    A heuristic: round the continuous optimum (see :func:`proportional_partition`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from fractions import Fraction

from chipdse.core.solution import Solution
from chipdse.formulations.hbm_partition import (
    HbmPartitionProblem,
    build_hbm_partition_cpsat,
    build_hbm_partition_milp,
    check_hbm_partition,
    decode_hbm_partition_cpsat,
    decode_hbm_partition_milp,
    group_concurrency,
    hbm_groups,
    hbm_partition_infeasibility,
    min_stacks,
)
from chipdse.solvers.backends import solve_cpsat, solve_pyomo
from chipdse.solvers.common import (
    Methods,
    ProblemKind,
    enumerate_best,
    enumeration_runner,
    heuristic_runner,
    settle,
)
from chipdse.solvers.config import SolverConfig

KIND = ProblemKind("hbm-partition", "max", frozenset({"milp-highs", "cpsat", "enumeration"}), check_hbm_partition,
                   extra=lambda p, d: {"requests": {g: group_concurrency(p, g, d[g]) for g in hbm_groups(p)}},
                   unit="requests")
"""Checker, sense and exact methods of HYDRA Eq. 1, for :func:`solvers.common.settle`."""


def solve_hbm_partition(problem: HbmPartitionProblem, method: str = "milp-highs", config: SolverConfig | None = None
                        ) -> Solution:
    """Split the HBM stacks among the groups with ``method`` (one of :data:`HBM_PARTITION_METHODS`; HYDRA Eq. 1 and
    Sec. IV-A Step 1); arguments, status rule and errors as :meth:`solvers.common.Methods.solve`.

    Returns
    -------
    Solution
        ``problem="hbm-partition"``, ``sense="max"``; ``decision`` is ``{group: N_g}``; ``objective`` is
        ``min_g r_g`` in requests, recomputed by :func:`check_hbm_partition`; ``extra["requests"]`` holds each
        ``r_g``. An infeasible instance gives status ``INFEASIBLE`` with ``reason`` and no decision;
        ``"enumeration"`` refuses (ValueError) more than :data:`MAX_COMPOSITIONS` partitions.
    """
    return SOLVERS.solve(problem, method, config)


MAX_COMPOSITIONS = 2_000_000
"""Largest number of partitions ``"enumeration"`` scores before refusing."""


def hbm_compositions(n_hbm: int, n_groups: int) -> Iterator[tuple[int, ...]]:
    """Yield every tuple of ``n_groups`` positive integers summing to ``n_hbm``, lexicographically."""
    if n_groups < 1 or n_hbm < n_groups:
        return
    for cuts in itertools.combinations(range(1, n_hbm), n_groups - 1):
        edges = (0, *cuts, n_hbm)
        yield tuple(b - a for a, b in itertools.pairwise(edges))


def enumerate_hbm_partitions(problem: HbmPartitionProblem) -> tuple[dict[str, int], int]:
    """Score every partition exactly and return the best one (HYDRA's own method).

    Parameters
    ----------
    problem : HbmPartitionProblem
        A feasible instance (see :func:`formulations.hbm_partition.hbm_partition_infeasibility`).

    Returns
    -------
    (dict[str, int], int)
        The best ``{group: N_g}`` (first in lexicographic order among ties) and the number scored.

    Raises
    ------
    ValueError
        More than :data:`MAX_COMPOSITIONS` partitions, or none feasible.

    References
    ----------
    HYDRA Sec. IV-A Step 1 ("for a candidate partition (N_M, N_A) ... we select the partition that
    maximizes min(r_M, r_A)").
    """
    groups = hbm_groups(problem)
    count = math.comb(problem.n_hbm - 1, len(groups) - 1) if problem.n_hbm >= len(groups) else 0
    if count > MAX_COMPOSITIONS:
        msg = (
            f"{count} partitions of {problem.n_hbm} stacks into {len(groups)} groups "
            f"exceed the enumeration limit {MAX_COMPOSITIONS}"
        )
        raise ValueError(msg)
    splits = (dict(zip(groups, parts, strict=True)) for parts in hbm_compositions(problem.n_hbm, len(groups)))
    best, _ = enumerate_best(KIND, problem, splits)
    if best is None:
        msg = f"no feasible partition of {problem.n_hbm} stacks among {groups}"
        raise ValueError(msg)
    return best, count


def proportional_partition(problem: HbmPartitionProblem) -> dict[str, int]:
    """Round the continuous optimum of the partition to whole stacks (a heuristic).

    Parameters
    ----------
    problem : HbmPartitionProblem
        A feasible instance.

    Returns
    -------
    dict[str, int]
        ``{group: N_g}`` with ``N_g >= max(1, ceil(W_g / C))`` and ``sum_g N_g = n_hbm``.

    Notes
    -----
    Without integrality, all groups reach the same concurrency ``r* = (n_hbm C - sum_g W_g) / sum_g S_g``
    when group g gets ``N*_g = (W_g + r* S_g) / C`` stacks, i.e. the stacks split proportionally to
    ``W_g + r* S_g`` (weights plus the state of r* nominal requests). The heuristic floors each N*_g (but
    not below the stacks the weights need) and then hands out or takes back single stacks by largest
    remainder until the counts sum to ``n_hbm``. It ignores the floor of Eq. 1, so it can be one step off.
    """
    groups = hbm_groups(problem)
    c = Fraction(problem.capacity_bytes)
    w = {g: Fraction(problem.weight_bytes[g]) for g in groups}
    s = {g: Fraction(problem.per_request_bytes[g]) for g in groups}
    r_star = (problem.n_hbm * c - sum(w.values())) / sum(s.values())
    target = {g: (w[g] + r_star * s[g]) / c for g in groups}
    lower = {g: min_stacks(problem, g) for g in groups}
    n = {g: max(lower[g], math.floor(target[g])) for g in groups}
    while sum(n.values()) < problem.n_hbm:
        g = max(groups, key=lambda h: target[h] - n[h])
        n[g] += 1
    while sum(n.values()) > problem.n_hbm:
        g = min((h for h in groups if n[h] > lower[h]), key=lambda h: target[h] - n[h])
        n[g] -= 1
    return n


def _solve_milp(problem: HbmPartitionProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Build, solve and decode the MILP; r_g is recomputed exactly from the decoded N_g."""
    m = build_hbm_partition_milp(problem)
    build_s = time.perf_counter() - t0
    res = solve_pyomo(m, config)
    decision = decode_hbm_partition_milp(m) if res.has_solution else None
    # z is an integer at any feasible point, so the floor of the bound (with slack for tolerances) is valid.
    bound = float(math.floor(res.bound + 1e-6)) if res.bound is not None else None
    return settle(KIND, problem, method, decision, config, t0, reported=res, bound=bound, build_s=build_s)


def _solve_cpsat(problem: HbmPartitionProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Build, solve and decode the CP-SAT model; its integer objective must equal the exact checker's."""
    built = build_hbm_partition_cpsat(problem)
    build_s = time.perf_counter() - t0
    res, solver = solve_cpsat(built.model, config)
    decision = decode_hbm_partition_cpsat(built, solver) if res.has_solution else None
    if decision is not None and res.objective is not None:
        exact_obj, _ = check_hbm_partition(problem, decision)
        if round(res.objective) != exact_obj:
            msg = f"CP-SAT objective {res.objective} != exact Eq. 1 value {exact_obj} for {decision}"
            raise RuntimeError(msg)
    bound = float(math.floor(res.bound + 1e-6)) if res.bound is not None else None
    return settle(KIND, problem, method, decision, config, t0, reported=res, bound=bound, build_s=build_s,
                  extra={"unit_bytes": built.unit_bytes})


SOLVERS = Methods(KIND, {
    "milp-highs": _solve_milp, "cpsat": _solve_cpsat,
    "enumeration": enumeration_runner(KIND, enumerate_hbm_partitions, "partitions scored"),
    "proportional": heuristic_runner(KIND, proportional_partition, "proportional: rounded continuous optimum"),
}, infeasibility=hbm_partition_infeasibility, label="HBM partition")
"""Every HBM partition method behind :func:`solve_hbm_partition`."""

HBM_PARTITION_METHODS = SOLVERS.names
"""Method names accepted by :func:`solve_hbm_partition`."""
