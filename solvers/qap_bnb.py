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

:func:`qap_rlt_bnb` is the stronger search (the RLT-1 dual ascent bound, best first). Both symmetries of a QAP
that leave every cost unchanged are used there: interchangeable facilities are fixed in increasing location order,
and automorphisms of the distance matrix (:func:`location_automorphisms`: the grid's mirror images, the
hypercube's 384 maps in QAPLIB's esc16 instances) restrict the next facility to one location per orbit of the
automorphisms that fix the locations already used (orbital branching; F. Margot, "Symmetry in integer linear
programming", 50 Years of Integer Programming, 2010; J. Ostrowski et al., "Orbital branching", Math. Prog. 126,
2011).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass
from functools import cache
from itertools import permutations

import numpy as np
from scipy.optimize import linear_sum_assignment, quadratic_assignment

from chipdse.core.solution import TerminationCondition
from chipdse.solvers.config import (
    QAP_BNB_OPS_PER_UNIT,
    QAP_FAQ_OPS_PER_UNIT,
    QAP_RLT_OPS_PER_UNIT,
    WorkBudget,
    wall_cap_s,
)
from chipdse.solvers.qap_rlt import ReducedQap, lap_ops

INCUMBENT_DEPTH = 3
"""Nodes up to this depth turn their assignment into a full permutation and try it as the incumbent."""
RLT_ROOT_ROUNDS = 60
"""Dual ascent rounds at the root of :func:`qap_rlt_bnb` (nug20: 2057 after one, 2134 after 60)."""
RLT_NODE_ROUNDS = 2
"""Dual ascent rounds at every other node (warm-started from the parent's reduced costs)."""
BEST_FIRST_BYTES = 1.0e9
"""Bytes of parents' rewritings the open nodes of :func:`qap_rlt_bnb` may hold; beyond it the rewritings of the
least promising parents are dropped and rebuilt on demand (nug20 best first: about 0.35 GB per 1,000 expanded
nodes)."""
DIVE_EVERY = 200
"""Every this many nodes :func:`qap_rlt_bnb` dives depth first (up to n nodes) from the node it just expanded, whose
subtree's leaves and assignments give incumbents that best-first order alone reaches late."""
AUTOMORPHISMS_MAX = 5_000
"""Most automorphisms of the distance matrix the search collects (the hypercube of QAPLIB's esc16 has 384)."""
AUTOMORPHISM_STEPS_MAX = 300_000
"""Most candidate images the automorphism search tries (deterministic; any subset found is valid): about 1.5 CPU-s
on a rigid regular matrix that has almost none (esc16's hypercube needs 75,024)."""
FAQ_RESTARTS = 8
"""FAQ runs of the root incumbent (:func:`faq_two_opt`)."""


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
    return _result(best_perm, best, stack, stopped, slack, integral, nodes, budget)


def _result(best_perm: np.ndarray, best: float, stack: list, stopped: TerminationCondition | None, slack: float,
            integral: bool, nodes: int, budget: WorkBudget, extra: dict | None = None) -> dict:
    """The result dict of a search that ended with open entries ``stack`` (each starting with its bound)."""
    open_bounds = [entry[0] for entry in stack if entry[0] <= best - slack]
    if stopped and open_bounds:
        lower = max(min(open_bounds), (extra or {}).get("root_bound") or -math.inf)
        lower = math.ceil(lower - 1e-6) if integral else lower
        bound, proven = min(best, float(lower)), False
    else:
        bound, proven, stopped = best, True, None
    return {"perm": best_perm, "cost": best, "bound": bound, "proven": proven, "stopped": stopped, "nodes": nodes,
            "work_units": budget.used, "wall_s": time.perf_counter() - budget.t0, **(extra or {})}


@dataclass
class _Parent:
    """An expanded node of :func:`qap_rlt_bnb` with open children: its rewriting (None once evicted), the bytes
    it holds, how many children are open and their entry keys."""

    red: ReducedQap | None
    nbytes: int
    open: int
    keys: list[int]


def _release(live: dict[int, _Parent], held: list[int], owner: _Parent | None, partial: np.ndarray) -> None:
    """One child of ``owner`` left the open list: forget the parent once none is left."""
    if owner is None:
        return
    owner.open -= 1
    if not owner.open:
        if owner.red is not None:
            held[0] -= owner.nbytes
        del live[id(partial)]


def _two_opt(a: np.ndarray, b: np.ndarray, perm: np.ndarray,
             rng: np.random.Generator | None = None) -> tuple[np.ndarray, float]:
    """Pairwise-exchange local search (``scipy.optimize.quadratic_assignment``, method ``"2opt"``) from ``perm``;
    the better of the two permutations and the work it took (n^3 per sweep). ``rng``: scipy's generator (default
    ``numpy.random.default_rng(0)``)."""
    n = len(perm)
    rng = np.random.default_rng(0) if rng is None else rng
    res = quadratic_assignment(a, b, method="2opt",
                               options={"partial_guess": np.column_stack([np.arange(n), perm]), "rng": rng})
    out = np.asarray(res.col_ind, dtype=np.intp)
    return (out if _cost(a, b, out) < _cost(a, b, perm) else perm), float((res.nit + 1) * n ** 3)


def faq_two_opt(flow: np.ndarray, distance: np.ndarray, restarts: int = FAQ_RESTARTS,
                seed: int = 0) -> tuple[np.ndarray, float, float]:
    """Heuristic QAP incumbent: ``scipy.optimize.quadratic_assignment`` FAQ from the barycenter and from
    ``restarts - 1`` seeded random doubly stochastic starts, then its 2-opt from the best of them.

    Parameters
    ----------
    flow, distance : ndarray, shape (n, n)
        Matrices A and B (any square, non-negative).
    restarts : int
        FAQ runs (the first from the barycenter start).
    seed : int
        Seed of the random starts (``numpy.random.default_rng(seed)``): the result is a function of the inputs.

    Returns
    -------
    (perm, cost, work_units)
        Best permutation (facility -> location), its cost sum_ij A_ij B_perm(i)perm(j), and the work units
        charged (:data:`solvers.config.QAP_FAQ_OPS_PER_UNIT`, n^3 per FAQ iteration and per 2-opt sweep).

    Source: Vogelstein et al., "Fast approximate quadratic programming for graph matching", PLoS ONE (2015);
    scipy.optimize.quadratic_assignment.
    """
    a = np.asarray(flow, dtype=float)
    b = np.asarray(distance, dtype=float)
    n = a.shape[0]
    if n < 2:
        return np.arange(n), _cost(a, b, np.arange(n)), 0.0
    rng = np.random.default_rng(seed)
    best_perm, best, ops = np.arange(n), _cost(a, b, np.arange(n)), 0
    for r in range(max(int(restarts), 1)):
        options = {"P0": "barycenter" if r == 0 else "randomized", "rng": rng}
        res = quadratic_assignment(a, b, method="faq", options=options)
        ops += (res.nit + 1) * n ** 3
        perm = np.asarray(res.col_ind, dtype=np.intp)
        c = _cost(a, b, perm)
        if c < best:
            best, best_perm = c, perm
    best_perm, two_opt_ops = _two_opt(a, b, best_perm, rng)
    return best_perm, _cost(a, b, best_perm), (ops + two_opt_ops) / QAP_FAQ_OPS_PER_UNIT


def qap_rlt_bnb(flow: np.ndarray, distance: np.ndarray, work_limit: float, start: np.ndarray | None = None,
                time_limit_s: float | None = None, root_rounds: int = RLT_ROOT_ROUNDS,
                node_rounds: int = RLT_NODE_ROUNDS, best_first_bytes: float = BEST_FIRST_BYTES,
                location_symmetry: bool = True, exchange_roles: bool | None = None) -> dict:
    """Solve a QAP by best-first branch and bound on the RLT-1 dual ascent bound (``solvers.qap_rlt``), to
    optimality or to the work limit (or the wall cap).

    Every node keeps the exact rewriting of its subproblem (constant ``lb``, non-negative linear and quadratic
    costs) and a child starts from its parent's (the warm start): fixing facility i at location k adds c[i, k]
    to the constant, so the parent's reduced costs prune children before any work. A node runs ``node_rounds``
    ascent rounds (the root ``root_rounds``), stopping as soon as its bound reaches the incumbent; it branches on
    the next facility of a static order (most flow first; interchangeable facilities in increasing location
    order; a facility without such a twin only at one location per orbit of the distance matrix's automorphisms
    that fix the used locations) and bounds its children by ``lb' + LAP(c')``. The open node of least bound is
    expanded next (best first: the proven bound, the least open bound, rises with every node); every
    :data:`DIVE_EVERY` nodes the search dives depth first up to n nodes deep for an incumbent. When the rewritings
    that open nodes hold exceed ``best_first_bytes``, those of the parents whose best open child is worst are
    dropped and built again from the root (one child and ascent per level) when one of their children comes up.
    Each node's linear assignment completes its partial permutation into a candidate incumbent. Subproblems of at
    most three facilities are enumerated.

    Parameters
    ----------
    flow, distance : ndarray, shape (n, n)
        Non-negative matrices A and B (either may be asymmetric, diagonals included).
    work_limit : float
        Work units (deterministic): assignment-problem work counted by ``solvers.qap_rlt.lap_ops``,
        :data:`solvers.config.QAP_RLT_OPS_PER_UNIT` per unit, charged before the work is done.
    start : ndarray, shape (n,), optional
        A permutation (facility -> location) used as the first incumbent.
    time_limit_s : float, optional
        Wall-clock cap, s (default ``solvers.config.wall_cap_s(work_limit)``).
    root_rounds, node_rounds : int
        Ascent rounds at the root and at every other node.
    best_first_bytes : float
        Bytes of parents' rewritings the open nodes may hold (:data:`BEST_FIRST_BYTES`); more are dropped and
        rebuilt when needed.
    location_symmetry : bool
        Branch only on orbit representatives of the distance matrix's automorphisms
        (:func:`location_automorphisms`) where the facility has no interchangeable twin (default True).
    exchange_roles : bool, optional
        Solve sum B_kl A_q(k)q(l) over q = p^-1 instead (the same costs), so that the flow matrix's automorphisms
        (QAPLIB's nug instances: the grid's mirror images) become location automorphisms the search can use.
        Default: exchange when the flow matrix has more automorphisms than the distance matrix (both searches
        complete), no interchangeable facilities, and ``location_symmetry`` is on.

    Returns
    -------
    dict
        ``perm``, ``cost``, ``bound`` (proven lower bound: the least bound of the open nodes, rounded up for
        integer data; equals ``cost`` when ``proven``), ``proven``, ``stopped`` (None, or the
        TerminationCondition of the limit that ended the search), ``nodes``, ``work_units``, ``wall_s``,
        ``root_bound`` (the root's bound after its ascent).

    Source: Hahn and Grant (1998), Hahn, Grant and Hall (1998, European J. Oper. Res. 108: branch and bound on
    the dual ascent with inherited reduced costs).
    """
    budget = WorkBudget(work_limit, wall_cap_s(work_limit) if time_limit_s is None else time_limit_s)
    a = np.asarray(flow, dtype=float)
    b = np.asarray(distance, dtype=float)
    n = a.shape[0]
    auts, aut_steps = location_automorphisms(b) if location_symmetry else (np.arange(n)[None], 0)
    budget.spend(aut_steps * n / QAP_RLT_OPS_PER_UNIT)
    if exchange_roles is None:
        auts_a, steps_a = location_automorphisms(a) if location_symmetry else (auts, 0)
        budget.spend(steps_a * n / QAP_RLT_OPS_PER_UNIT)
        exchange_roles = (location_symmetry and len(auts) < len(auts_a) < AUTOMORPHISMS_MAX
                          and not (_static_order(a)[1] >= 0).any())  # twins are kept in order instead
    if exchange_roles:
        res = qap_rlt_bnb(b, a, max(budget.left, 0.0), None if start is None else np.argsort(start),
                          max(budget.wall_left_s, 0.0), root_rounds, node_rounds, best_first_bytes,
                          location_symmetry, exchange_roles=False)
        return {**res, "perm": np.argsort(res["perm"]), "exchanged": True,
                "work_units": res["work_units"] + budget.used}
    integral = bool(np.all(a == np.round(a)) and np.all(b == np.round(b)))
    best_perm = np.arange(n) if start is None else np.asarray(start, dtype=np.intp)
    best = _cost(a, b, best_perm)
    slack = 1.0 - 1e-6 if integral else 1e-9 * max(1.0, abs(best))  # prune when bound > best - slack
    rank, twin = _static_order(a)
    has_twin = (twin >= 0) | np.isin(np.arange(n), twin)
    # open entries by sequence number: (bound, parent rewriting, or None for the root and for a parent whose
    # rewriting was evicted, local facility, local location, facilities and locations of the parent's local
    # indices, partial permutation of the parent); siblings share their parent's ``partial`` array
    root = ReducedQap.of(a, b)
    entries: dict[int, tuple[float, ReducedQap | None, int, int, np.ndarray, np.ndarray, np.ndarray]] = {
        0: (_root_bound(a, b), None, -1, -1, np.arange(n), np.arange(n), np.full(n, -1, dtype=np.intp))}
    heap, lifo, seq = [(entries[0][0], 0)], [0], itertools.count(1)
    live: dict[int, _Parent] = {}  # id(parent's partial) -> its open children and rewriting
    held = [0]  # bytes of the rewritings the open nodes hold

    def node_cost(m: int, rounds: int) -> float:
        return (rounds * (m * m * lap_ops(m - 1) + lap_ops(m)) + m * lap_ops(m - 1) + m ** 4) / QAP_RLT_OPS_PER_UNIT

    def evict() -> None:
        """Drop the rewritings of the parents whose best open child is worst until a quarter of the cap is free."""
        bests = sorted(((min((entries[k][0] for k in p.keys if k in entries), default=math.inf), pid)
                        for pid, p in live.items()
                        if p.red is not None and p.red is not root), reverse=True)
        for _, pid in bests:
            if held[0] <= 0.75 * best_first_bytes:
                break
            p = live[pid]
            for k in p.keys:
                if k in entries:
                    entries[k] = (entries[k][0], None, *entries[k][2:])
            held[0] -= p.nbytes
            p.red = None

    def rebuild(partial: np.ndarray) -> ReducedQap:
        """The rewriting of the node with fixed facilities ``partial`` again: from the root, one level per fixed
        facility in the static order, with the node's ascent rounds (a valid bound whatever the incumbent)."""
        red, fac, loc = root, np.arange(n), np.arange(n)
        for f in sorted(np.flatnonzero(partial >= 0), key=lambda f: -rank[f]):
            i, k = int(np.flatnonzero(fac == f)[0]), int(np.flatnonzero(loc == partial[f])[0])
            red = red.child(i, k)
            fac, loc = np.delete(fac, i), np.delete(loc, k)
            red.ascend(node_rounds, stop_at=best - slack, spread=True)
        return red

    nodes, stopped, root_bound, dive_left = 0, None, None, 0
    while entries:
        # depth first during a dive (an incumbent from the best node's subtree); best first otherwise
        order = lifo if dive_left else None
        dive_left = max(dive_left - 1, 0)
        while True:
            key = order.pop() if order is not None else heapq.heappop(heap)[1]
            if key in entries:
                break
        entry = entries.pop(key)
        bound, parent, i0, k0, fac, loc, partial = entry
        owner = live.get(id(partial))
        if bound > best - slack:
            _release(live, held, owner, partial)
            continue
        m = len(fac) - (i0 >= 0)
        rounds = root_rounds if i0 < 0 else node_rounds
        cost = node_cost(m, rounds)
        if parent is None and i0 >= 0:  # its parent's rewriting was evicted: build it again
            cost += sum(node_cost(n - d, node_rounds) for d in range(1, int((partial >= 0).sum()) + 1))
        stopped = budget.stop() or (TerminationCondition.WORK_LIMIT if cost > budget.left else None)
        if stopped:
            entries[key] = entry
            break
        if parent is None and i0 >= 0:
            parent = rebuild(partial)
            owner.red = parent
            held[0] += owner.nbytes
            for k in owner.keys:
                if k in entries:
                    entries[k] = (entries[k][0], parent, *entries[k][2:])
        _release(live, held, owner, partial)
        nodes += 1
        budget.spend(cost)  # the node, and the rebuild of its parent's rewriting if it had to be built again
        if nodes % DIVE_EVERY == 0:
            dive_left = n
        if i0 < 0:
            red = root
        else:
            red = parent.child(i0, k0)
            partial = partial.copy()
            partial[fac[i0]] = loc[k0]
            fac, loc = np.delete(fac, i0), np.delete(loc, k0)
        if m <= 3:  # enumerate the completions
            for tail in permutations(loc):
                perm = partial.copy()
                perm[fac] = tail
                c = _cost(a, b, perm)
                if c < best:
                    best, best_perm = c, perm
            continue
        cols = red.ascend(rounds, stop_at=best - slack, spread=i0 >= 0)
        if i0 < 0:
            root_bound = red.lb
        perm = partial.copy()
        perm[fac] = loc[cols]
        if nodes % DIVE_EVERY == 0:  # a dive starts here: its completion improved by 2-opt
            perm, ops = _two_opt(a, b, perm)
            budget.spend(ops / QAP_RLT_OPS_PER_UNIT)
        c = _cost(a, b, perm)
        if c < best:
            best, best_perm = c, perm
        if red.lb > best - slack:
            continue
        i = int(np.argmax(rank[fac]))  # the next facility of the static order
        after = partial[twin[fac[i]]] if twin[fac[i]] >= 0 else -1  # an identical facility fixed before it
        keep = _orbit_representatives(auts, partial) if len(auts) > 1 and not has_twin[fac[i]] else None
        pairs = [(i, k) for k in range(m) if red.lb + red.c[i, k] <= best - slack and loc[k] > after
                 and (keep is None or keep[loc[k]])]
        bounds = red.child_bounds(pairs)
        children = [(float(bd), red, i, k, fac, loc, partial) for bd, (i, k) in zip(bounds, pairs, strict=True)
                    if bd <= best - slack]
        if not children:
            continue
        children.sort(key=lambda x: -x[0])  # the best child is the last pushed: the first of a dive
        keys = []
        for child in children:
            key = next(seq)
            keys.append(key)
            entries[key] = child
            heapq.heappush(heap, (child[0], key))
            lifo.append(key)
        live[id(partial)] = _Parent(red, red.q.nbytes + red.c.nbytes, len(children), keys)
        held[0] += live[id(partial)].nbytes
        if held[0] > best_first_bytes:
            evict()
    return _result(best_perm, best, list(entries.values()), stopped, slack, integral, nodes, budget,
                   extra={"root_bound": root_bound})



def _static_order(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Branching order of :func:`qap_rlt_bnb` and its symmetry classes.

    Facilities are fixed in decreasing order of total flow; interchangeable facilities (i and j with the same
    flows to every other facility in both directions, A_ij = A_ji and A_ii = A_jj: swapping them leaves every
    permutation's cost unchanged) come one after another, and each may only take a location above its
    predecessor's in the class, which keeps one of every g! equivalent placements of a class of g (for example
    the facilities without any flow in QAPLIB's esc instances).

    Returns
    -------
    (rank, twin) : ndarrays of int, shape (n,)
        ``rank[i]``: higher is fixed first; ``twin[i]``: the interchangeable facility fixed just before i, or -1.
    """
    n = a.shape[0]
    cls = np.arange(n)
    for i in range(n):
        for j in range(i):
            if cls[j] == j and _interchangeable(a, i, j):
                cls[i] = j
                break
    weight = a.sum(axis=0) + a.sum(axis=1)
    order = sorted(range(n), key=lambda i: (-weight[i], cls[i], i))
    rank = np.empty(n, dtype=float)
    rank[order] = -np.arange(n, dtype=float)
    twin = np.full(n, -1, dtype=np.intp)
    for prev, cur in itertools.pairwise(order):
        if cls[prev] == cls[cur]:
            twin[cur] = prev
    return rank, twin


def location_automorphisms(b: np.ndarray, max_count: int = AUTOMORPHISMS_MAX,
                           max_steps: int = AUTOMORPHISM_STEPS_MAX) -> tuple[np.ndarray, int]:
    """Permutations s of the locations with ``b[s[k], s[l]] == b[k, l]`` for all k, l (diagonal included): a
    solution p and s o p cost the same for every flow matrix.

    Depth-first search over images, locations with the fewest candidates first; a candidate image must have the
    same sorted row, sorted column and diagonal entry, and agree with every image already chosen. The search
    stops after ``max_count`` automorphisms or ``max_steps`` candidates tried (deterministic); what it found is
    a valid set either way (each member is an automorphism), only a smaller one.

    Parameters
    ----------
    b : ndarray, shape (n, n)
        Distance matrix (any square matrix).

    Returns
    -------
    (auts, steps) : ndarray of int, shape (k, n), and int
        The automorphisms found, the identity first (k >= 1), and the candidates tried.
    """
    n = b.shape[0]
    sig = [(b[k, k], *np.sort(b[k]).tolist(), *np.sort(b[:, k]).tolist()) for k in range(n)]
    cand = [[l_ for l_ in range(n) if sig[l_] == sig[k]] for k in range(n)]
    order = sorted(range(n), key=lambda k: (len(cand[k]), k))
    image, used = np.full(n, -1, dtype=np.intp), np.zeros(n, dtype=bool)
    found: list[np.ndarray] = []
    steps = 0
    # explicit stack of (depth, next candidate index); the identity is found first (candidates in index order)
    stack = [0]
    while stack and len(found) < max_count and steps < max_steps:
        d = len(stack) - 1
        if d == n:
            found.append(image.copy())
            stack.pop()
            _unassign(stack, order, image, used)
            continue
        k, c = order[d], stack[-1]
        done = np.array(order[:d], dtype=np.intp)
        while c < len(cand[k]):
            l_ = cand[k][c]
            c += 1
            steps += 1
            if used[l_] or (d and (np.any(b[done, k] != b[image[done], l_])
                                    or np.any(b[k, done] != b[l_, image[done]]))):
                continue
            break
        else:
            stack.pop()
            _unassign(stack, order, image, used)
            continue
        stack[-1] = c
        image[k], used[l_] = l_, True
        stack.append(0)
    if not found:  # the step cap hit before the identity completed (n beyond any QAPLIB size)
        found.append(np.arange(n))
    return np.array(found, dtype=np.intp).reshape(len(found), n), steps


def _unassign(stack: list[int], order: list[int], image: np.ndarray, used: np.ndarray) -> None:
    """Undo the image chosen at the depth the search returns to."""
    if stack:
        k = order[len(stack) - 1]
        if image[k] >= 0:
            used[image[k]] = False
            image[k] = -1


def _orbit_representatives(auts: np.ndarray, partial: np.ndarray) -> np.ndarray | None:
    """Which locations the next facility may take: the least of each orbit of the free locations under the
    automorphisms in ``auts`` that fix every location ``partial`` uses (None when only the identity does).

    Valid when the facility to branch on has no interchangeable twin: any completion with the facility at k maps,
    by such an automorphism, to one of equal cost with the facility at k's representative and the fixed part
    unchanged (interchangeable facilities of a class not yet fixed are re-sorted afterwards; a class is fixed
    either wholly or not at all, since the static order keeps it together)."""
    used = partial[partial >= 0]
    stab = auts[(auts[:, used] == used).all(axis=1)] if used.size else auts
    if len(stab) <= 1:
        return None
    rep = np.arange(auts.shape[1])
    while True:  # least location of each orbit of the group the stabilizing automorphisms generate
        nxt = np.minimum(rep, rep[stab].min(axis=0))
        nxt = nxt[nxt]
        if np.array_equal(nxt, rep):
            break
        rep = nxt
    return rep == np.arange(auts.shape[1])


def _interchangeable(a: np.ndarray, i: int, j: int) -> bool:
    """Whether facilities i and j of flow matrix ``a`` can swap places without changing any cost."""
    rest = np.ones(a.shape[0], dtype=bool)
    rest[[i, j]] = False
    return bool(a[i, i] == a[j, j] and a[i, j] == a[j, i] and np.array_equal(a[i, rest], a[j, rest])
                and np.array_equal(a[rest, i], a[rest, j]))
