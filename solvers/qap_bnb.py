"""Exact QAP by depth-first branch and bound with the Gilmore-Lawler bound (GLB).

Koopmans-Beckmann QAP: minimize sum_{i,j} A[i][j] B[p(i)][p(j)] over permutations p. A node fixes the locations
of the first d facilities of a static order (largest total flow first). With F the fixed facilities, U the others
(m of them) and L the free locations, every completion costs at least

    GLB = sum_{i,j in F} A_ij B_p(i)p(j) + LAP over (i in U, k in L) of
          [ A_ii B_kk + sum_{j in F} (A_ij B_k,p(j) + A_ji B_p(j),k) + <A_i,U\\i sorted up, B_k,L\\k sorted down> ]

where the last term is the minimal scalar product of facility i's flows to the other unfixed facilities and
location k's distances to the other free locations (Gilmore 1962, Lawler 1963). It is valid for asymmetric
matrices (each ordered pair is counted once, as an out-flow). A node is pruned when its bound is not below the
incumbent; with integer data, bound > incumbent - 1 suffices.

The children of a node (its branching facility at each free location) are bounded together: their reduced
distance rows are gathered into one (m, m-1, m-2) array, sorted, and multiplied with the flow rows in one
einsum; only the m linear assignment problems run one by one (``scipy.optimize.linear_sum_assignment``). Each
node's assignment also gives a full permutation, evaluated as a candidate incumbent near the root.

This is the exact method that closes the dense QAPLIB instances with n <= 12 (nug12, had12, rou12, tai12a/b),
where the RLT-1 MILP gets no dual bound from HiGHS within minutes (``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import math
import time
from functools import cache
from itertools import permutations

import numpy as np
from scipy.optimize import linear_sum_assignment

from chipdse.core.solution import TerminationCondition
from chipdse.solvers.config import QAP_BNB_OPS_PER_UNIT, WorkBudget, wall_cap_s

INCUMBENT_DEPTH = 3
"""Nodes up to this depth turn their assignment into a full permutation and try it as the incumbent."""


@cache
def _others(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays for size m: ``one[k]`` = the m - 1 indices other than k; ``two[k, a]`` = the m - 2 indices
    other than k and ``one[k, a]``."""
    idx = np.arange(m)
    one = np.array([np.delete(idx, k) for k in range(m)], dtype=np.intp).reshape(m, max(m - 1, 0))
    two = np.array([[np.delete(idx, sorted((k, int(one[k, a])))) for a in range(m - 1)] for k in range(m)],
                   dtype=np.intp).reshape(m, max(m - 1, 0), max(m - 2, 0))
    return one, two


def _root_bound(a: np.ndarray, b: np.ndarray) -> float:
    """The Gilmore-Lawler bound with nothing fixed (so a run stopped before its first node still proves one)."""
    n = a.shape[0]
    if n < 2:
        return float((a * b).sum())
    one, _ = _others(n)
    rows = np.arange(n)[:, None]
    msp = np.sort(a[rows, one], axis=1) @ (-np.sort(-b[rows, one], axis=1)).T
    cost = np.diag(a)[:, None] * np.diag(b)[None, :] + msp
    r_idx, c_idx = linear_sum_assignment(cost)
    return float(cost[r_idx, c_idx].sum())


def _cost(a: np.ndarray, b: np.ndarray, perm: np.ndarray) -> float:
    return float((a * b[np.ix_(perm, perm)]).sum())


def qap_glb_bnb(flow: np.ndarray, distance: np.ndarray, work_limit: float,
                start: np.ndarray | None = None, time_limit_s: float | None = None) -> dict:
    """Solve a QAP by GLB branch and bound, to optimality or to the work limit (or the wall cap).

    Parameters
    ----------
    flow, distance : ndarray, shape (n, n)
        Non-negative integer (or float) matrices A and B; either may be asymmetric.
    work_limit : float
        Work units (deterministic): a node with m free facilities costs m^4 / QAP_BNB_OPS_PER_UNIT
        (solvers/config.py); when they are spent the best permutation and the least bound of the open nodes are
        returned.
    start : ndarray, shape (n,), optional
        A permutation (facility -> location) used as the first incumbent.
    time_limit_s : float, optional
        Wall-clock cap, s (default ``solvers.config.wall_cap_s(work_limit)``); ends the search as the work limit
        does.

    Returns
    -------
    dict
        ``perm`` (best permutation found), ``cost`` (its QAP cost), ``bound`` (proven lower bound; equals
        ``cost`` when ``proven``), ``proven`` (bool), ``stopped`` (None, or the TerminationCondition of the limit
        that ended the search), ``nodes`` (nodes expanded), ``work_units``, ``wall_s``.

    Source: Gilmore (1962), Lawler (1963); the bound of QAPLIB's early branch-and-bound codes.
    """
    budget = WorkBudget(work_limit, wall_cap_s(work_limit) if time_limit_s is None else time_limit_s)
    t0 = budget.t0
    a = np.asarray(flow, dtype=float)
    b = np.asarray(distance, dtype=float)
    n = a.shape[0]
    integral = bool(np.all(a == np.round(a)) and np.all(b == np.round(b)))
    order = np.argsort(-(a.sum(axis=0) + a.sum(axis=1)), kind="stable")
    best_perm = np.arange(n) if start is None else np.asarray(start, dtype=np.intp)
    best = _cost(a, b, best_perm)
    slack = 1.0 - 1e-9 if integral else 1e-9 * max(1.0, abs(best))  # prune when bound > best - slack
    stack: list[tuple[float, tuple[int, ...]]] = [(_root_bound(a, b), ())]  # (bound, locations of order[:d])
    nodes, stopped = 0, None
    diag_a, diag_b = np.diag(a), np.diag(b)
    while stack:
        bound, locs = stack.pop()
        if bound > best - slack:
            continue
        d = len(locs)
        cost = (n - d) ** 4 / QAP_BNB_OPS_PER_UNIT
        # a node is charged before it runs: one node near the root of a large instance (m^4 / 4e7: 200 units at
        # n = 300) would otherwise overrun a small work limit, and the wall cap with it, before the first check
        stopped = budget.stop() or (TerminationCondition.WORK_LIMIT if cost > budget.left else None)
        if stopped:
            stack.append((bound, locs))
            break
        nodes += 1
        budget.spend(cost)
        fixed_f = order[:d]
        used = np.zeros(n, dtype=bool)
        used[list(locs)] = True
        free_l = np.flatnonzero(~used)
        m = n - d
        if m <= 3:  # enumerate the completions
            rest = order[d:]
            for tail in permutations(free_l):
                perm = np.empty(n, dtype=np.intp)
                perm[fixed_f] = locs
                perm[rest] = tail
                c = _cost(a, b, perm)
                if c < best:
                    best, best_perm = c, perm
            continue
        f, rest = order[d], order[d + 1:]
        lf = np.asarray(locs, dtype=np.intp)
        # linear costs C[i, k] of unfixed facility i at free location k given the fixed ones
        lin = diag_a[:, None] * diag_b[None, :]
        if d:
            lin = lin + a[:, fixed_f] @ b[:, lf].T + a[fixed_f, :].T @ b[lf, :]
        fixed_cost = float((a[np.ix_(fixed_f, fixed_f)] * b[np.ix_(lf, lf)]).sum()) if d else 0.0
        one, two = _others(m)
        bl = b[np.ix_(free_l, free_l)]
        if m - 1 >= 2:
            one_u, _ = _others(m - 1)
            au = a[np.ix_(rest, rest)]
            a_sorted = np.sort(au[np.arange(m - 1)[:, None], one_u], axis=1)  # (m-1, m-2) ascending
            b_rows = bl[one[:, :, None], two]  # (m children k, m-1 locations l, m-2 others)
            b_sorted = -np.sort(-b_rows, axis=2)  # descending
            msp = np.einsum("kas,js->kja", b_sorted, a_sorted)  # (k, facility j, location a)
        else:
            msp = np.zeros((m, m - 1, m - 1))
        lin_rest = lin[np.ix_(rest, free_l)]  # (m-1, m)
        cross = (a[rest, f][None, :, None] * bl[one, np.arange(m)[:, None]][:, None, :]
                 + a[f, rest][None, :, None] * bl[np.arange(m)[:, None], one][:, None, :])
        mats = lin_rest[:, one].transpose(1, 0, 2) + cross + msp  # (k, j, a)
        head = fixed_cost + lin[f, free_l]
        children = []
        for k in range(m):
            r_idx, c_idx = linear_sum_assignment(mats[k])
            child_bound = float(head[k] + mats[k][r_idx, c_idx].sum())
            if d < INCUMBENT_DEPTH:  # the assignment completes the partial permutation
                perm = np.empty(n, dtype=np.intp)
                perm[fixed_f] = lf
                perm[f] = free_l[k]
                perm[rest[r_idx]] = free_l[one[k][c_idx]]
                c = _cost(a, b, perm)
                if c < best:
                    best, best_perm = c, perm
            if child_bound <= best - slack:
                children.append((child_bound, (*locs, int(free_l[k]))))
        children.sort(key=lambda x: -x[0])
        stack.extend(children)
    open_bounds = [bd for bd, _ in stack if bd <= best - slack]
    if stopped and open_bounds:
        lower = min(open_bounds)
        lower = math.ceil(lower - 1e-9) if integral else lower
        bound, proven = min(best, float(lower)), False
    else:
        bound, proven, stopped = best, True, None
    return {"perm": best_perm, "cost": best, "bound": bound, "proven": proven, "stopped": stopped, "nodes": nodes,
            "work_units": budget.used, "wall_s": time.perf_counter() - t0}
