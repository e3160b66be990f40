"""Exact placement by enumerating ring-restricted chiplets (HBM stacks) and assigning the rest optimally.

For a fixed placement H of the ring-restricted types (HBM groups), the cost of every other chiplet is linear in
its own cell: a chiplet of type t on cell i costs c_H(i, t) = sum_g v(t, g) * sum_{h in H_g} d(i, h). Without
compute-to-compute traffic the remaining problem is an assignment problem (solved exactly by
``scipy.optimize.linear_sum_assignment``), so

    T(H) = cost among restricted chiplets + min over assignments of sum c_H(i, t)

is exact per H. Compute-to-compute traffic is bounded below by assuming every such pair of chiplets one hop
apart (distinct cells are at least one hop apart), so min_H T(H) + that constant is a valid lower bound of the
full objective (HYDRA Eq. 2 plus chiplet-to-chiplet traffic). The H are processed in order of a cheap relaxation
LB(H) <= T(H) (each type takes its cheapest free cells, ignoring that types compete for them); once the next
LB(H) reaches the best T found, the bound is proven. Every evaluated decision is scored in full by the checker
and the best one is polished by swap local search. The remaining gap is at most the compute-to-compute
traffic of the incumbent, which in HYDRA-like instances is ~1e-4 of the total.

This is chipdse's decomposition of the paper's two-stage idea (HYDRA Sec. IV-A: HBM placement, then compute
placement) into an exact algorithm.
"""

from __future__ import annotations

import math
import time
from itertools import combinations

import numpy as np
from scipy.optimize import linear_sum_assignment

from formulations.placement import PlacementProblem, active_types, allowed_cells, check_placement, volume_table

CHUNK = 20_000


class DecompositionNotApplicable(ValueError):
    """The instance has too many layouts of its restricted chiplets to enumerate."""


def _restricted_split(problem: PlacementProblem) -> tuple[list[str], list[str], tuple[int, ...]]:
    """Return (restricted types, free types, the union of the restricted types' allowed cells, sorted)."""
    n = problem.rows * problem.cols
    types = [t for t in active_types(problem) if problem.counts.get(t, 0) > 0]
    restricted = [t for t in types if set(allowed_cells(problem, t)) != set(range(n))]
    free = [t for t in types if t not in restricted]
    ring = tuple(sorted({c for t in restricted for c in allowed_cells(problem, t)}))
    return restricted, free, ring


def _ring_layouts(problem: PlacementProblem, restricted: list[str], ring: tuple[int, ...]) -> np.ndarray:
    """All ways to put the restricted chiplets on their allowed cells: array (n_layouts, len(ring)) holding the
    restricted type index per ring position, or -1 where the cell is left to the free types."""
    layouts = [np.full(len(ring), -1, dtype=np.int8)]
    for g, t in enumerate(restricted):
        ok = np.isin(np.array(ring), allowed_cells(problem, t))
        nxt = []
        for lay in layouts:
            empty = np.flatnonzero((lay < 0) & ok)
            for pick in combinations(empty, problem.counts[t]):
                new = lay.copy()
                new[list(pick)] = g
                nxt.append(new)
        layouts = nxt
    return np.array(layouts, dtype=np.int8).reshape(len(layouts), len(ring))


def count_ring_layouts(ring_size: int, counts: list[int]) -> int:
    """Number of ring layouts when every restricted type may use every ring cell (multinomial coefficient;
    an upper bound otherwise)."""
    total, left = 1, ring_size
    for c in counts:
        total *= math.comb(left, c)
        left -= c
    return total


def solve_by_ring_enumeration(problem: PlacementProblem, time_limit_s: float,
                              max_layouts: int = 3_000_000) -> dict:
    """Run the decomposition; return decision, bound, proven flag and counters.

    Parameters
    ----------
    problem : PlacementProblem
        One-cell chiplets; restricted types share one allowed set (the ring).
    time_limit_s : float
        Wall-clock limit; on expiry the bound is the smallest relaxation bound still unprocessed.
    max_layouts : int
        Refuse (DecompositionNotApplicable) when there are more ring layouts than this.

    Returns
    -------
    dict
        ``decision`` (best full-objective placement), ``bound`` (valid lower bound), ``proven`` (bound is
        min_H T(H)), ``layouts`` (enumerated), ``assignments`` (solved).

    Raises
    ------
    DecompositionNotApplicable
        Restricted types with different allowed sets, or too many layouts.
    """
    t0 = time.perf_counter()
    restricted, free, ring = _restricted_split(problem)
    if not restricted and not free:
        return {"decision": {}, "bound": 0.0, "proven": True, "layouts": 1, "assignments": 0}
    n_layouts = count_ring_layouts(len(ring), [problem.counts[g] for g in restricted])  # an upper bound
    if n_layouts > max_layouts:
        msg = f"hbm-enum: {n_layouts:,} ring layouts exceed the limit of {max_layouts:,}"
        raise DecompositionNotApplicable(msg)
    vol = volume_table(problem)
    n, cols = problem.rows * problem.cols, problem.cols
    rr, cc = np.divmod(np.arange(n), cols)
    dist = np.abs(rr[:, None] - rr[None, :]) + np.abs(cc[:, None] - cc[None, :])
    ring_arr = np.array(ring, dtype=int)
    d_ring = dist[:, ring_arr]  # (cells, ring)
    v_fg = np.array([[vol.get((t, g), 0.0) for g in restricted] for t in free]).reshape(len(free), len(restricted))
    v_gg = np.array([[vol.get((g, h), 0.0) for h in restricted] for g in restricted])
    layouts = _ring_layouts(problem, restricted, ring)
    counts_free = np.array([problem.counts[t] for t in free], dtype=int)
    rows_type = np.repeat(np.arange(len(free)), counts_free)
    lbs = np.zeros(len(layouts))  # 0 is a valid (weak) bound where the time limit stops the relaxation
    for s in range(0, len(layouts), CHUNK):
        if time.perf_counter() - t0 > time_limit_s:
            break
        lbs[s:s + CHUNK] = _layout_costs(layouts[s:s + CHUNK], d_ring, dist[np.ix_(ring_arr, ring_arr)], v_fg, v_gg,
                                         ring_arr, counts_free, n)[0]
    # free-to-free traffic: every pair of distinct cells is >= 1 hop apart
    cc_min = 0.0
    for a, t in enumerate(free):
        for u in free[a:]:
            pairs = math.comb(problem.counts[t], 2) if t == u else problem.counts[t] * problem.counts[u]
            cc_min += vol.get((t, u), 0.0) * pairs
    lbs += cc_min
    order = np.argsort(lbs, kind="stable")
    if len(layouts) == 0:  # restricted chiplets cannot be placed at all
        msg = "hbm-enum: the restricted chiplets have no feasible layout"
        raise DecompositionNotApplicable(msg)
    best_t, best_full, best_dec = math.inf, math.inf, None
    processed = 0
    proven = True
    for k in order:
        if lbs[k] >= best_t * (1 - 1e-12):
            break
        if time.perf_counter() - t0 > time_limit_s:
            proven = False
            break
        const, cost = _layout_costs(layouts[k:k + 1], d_ring, dist[np.ix_(ring_arr, ring_arr)], v_fg, v_gg,
                                    ring_arr, counts_free, n, full=True)
        processed += 1
        matrix = cost[0][:, rows_type].T  # (chiplets, cells)
        r_idx, c_idx = linear_sum_assignment(matrix)
        t_val = float(const[0] + matrix[r_idx, c_idx].sum()) + cc_min
        decision = {int(ring_arr[j]): restricted[g] for j, g in enumerate(layouts[k]) if g >= 0}
        decision.update({int(c): free[rows_type[r]] for r, c in zip(r_idx, c_idx, strict=True)})
        full = check_placement(problem, decision)[0]
        best_t = min(best_t, t_val)
        if full < best_full:
            best_full, best_dec = full, decision
    if best_dec is not None:
        from solvers.placement import local_search_placement  # the swap descent lives with the heuristics

        polished = local_search_placement(problem, best_dec)
        if check_placement(problem, polished)[0] < best_full:
            best_dec = polished
    remaining = lbs[order[processed:]] if not proven else np.array([])
    bound = min(best_t, float(remaining.min())) if len(remaining) else best_t
    return {"decision": best_dec, "bound": bound, "proven": proven, "layouts": len(layouts),
            "assignments": processed}


def _layout_costs(lay: np.ndarray, d_ring: np.ndarray, d_rr: np.ndarray, v_fg: np.ndarray, v_gg: np.ndarray,
                  ring_arr: np.ndarray, counts_free: np.ndarray, n: int, full: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """For a block of ring layouts: (relaxation bound or restricted-pair constant, cell x type costs).

    Returns ``(lb, None)`` by default, or ``(const, cost)`` with ``cost`` shaped (layouts, cells, free types)
    when ``full`` is set; occupied ring cells cost +inf for free types.
    """
    n_g = v_gg.shape[0]
    member = (lay[:, None, :] == np.arange(n_g)[None, :, None]).astype(float)  # (L, G, ring)
    dsum = np.einsum("lgr,cr->lgc", member, d_ring)  # (L, G, cells): sum of hops to each group's stacks
    cost = np.einsum("tg,lgc->lct", v_fg, dsum)  # (L, cells, free types)
    occupied = np.zeros((len(lay), n), dtype=bool)
    occupied[:, ring_arr] = lay >= 0
    cost = np.where(occupied[:, :, None], np.inf, cost)
    pair = np.einsum("lgr,rs,lhs->lgh", member, d_rr, member)  # hops between groups g and h
    const = 0.5 * np.einsum("gh,lgh->l", v_gg, pair)
    if full:
        return const, cost
    lb = const.copy()
    for t, k in enumerate(counts_free):
        if k > 0:
            lb += np.sort(cost[:, :, t], axis=1)[:, :k].sum(axis=1)
    return lb, None
