"""Exact placement by enumerating ring-restricted chiplets (HBM stacks) and solving the rest per layout.

For a fixed placement H of the ring-restricted types (HBM groups), the cost of every other chiplet toward the
stacks is linear in its own cell: a chiplet of type t on cell i costs c_H(i, t) = sum_g v(t, g) * sum_{h in H_g}
d(i, h). What remains is a small QAP among the compute chiplets. Three steps make the search exact:

1. **Symmetry.** Grid automorphisms (mirror images and, on square grids, rotations) that keep every type's
   allowed cells and the distances map optimal placements onto optimal placements, so only one layout per orbit
   (the lexicographically smallest code) is kept: about 8x fewer on a square package.
2. **Bounds.** Per layout, the Gilmore-Lawler bound: the optimal assignment of compute chiplets to free cells with
   cost c_H(i, t) + 1/2 * (minimal scalar product of the type's partner volumes, sorted down, and the hops from
   i to the other free cells, sorted up). A vectorized relaxation of it (each type takes its cheapest cells,
   ignoring competition) orders the layouts; they are processed until that relaxation reaches the incumbent.
   Each processed layout's assignment is also a full placement, scored by the checker.
3. **Closing.** A layout whose bound is still below the incumbent (beyond the relative gap) is solved exactly:
   the RLT-1 MILP with the restricted chiplets fixed (Pyomo + HiGHS, every volume kept). Its optimum replaces
   the layout's bound.

The bound returned is min over layouts of their (exact or lower) values; it equals the incumbent when the search
finishes. This is chipdse's exact version of the paper's two-stage idea (HYDRA Sec. IV-A: HBM placement, then
compute placement).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from itertools import combinations

import numpy as np
from scipy.optimize import linear_sum_assignment

from chipdse.core.solution import Solution, TerminationCondition
from chipdse.formulations.placement import PlacementProblem, active_types, allowed_cells, check_placement, volume_table
from chipdse.solvers.config import RING_ASSIGNMENTS_PER_UNIT, RING_RELAXATIONS_PER_UNIT, SolverConfig, WorkBudget
from chipdse.solvers.placement_heuristics import local_search_placement

CHUNK = 4_000
MAX_KEY_STATES = 2**62
"""Layout codes must fit an int64 for the symmetry test; larger instances skip the reduction."""


SolveFixed = Callable[[PlacementProblem, SolverConfig, "dict[int, str] | None"], Solution]
"""The exact solve of one complete layout (its restricted chiplets fixed through ``allowed``): problem, config and
an optional hint in, a Solution out (the dispatcher passes its RLT-1 MILP method)."""


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


def cell_distances(problem: PlacementProblem) -> np.ndarray:
    """Cell-to-cell distance matrix, shape (cells, cells): ``problem.distance`` when given (QAP mode), else
    Manhattan hops on the grid (as :func:`formulations.placement.manhattan`)."""
    if problem.distance is not None:
        return np.array(problem.distance, dtype=float)
    r, c = np.divmod(np.arange(problem.rows * problem.cols), problem.cols)
    return (np.abs(r[:, None] - r[None, :]) + np.abs(c[:, None] - c[None, :])).astype(float)


def grid_symmetries(problem: PlacementProblem) -> list[np.ndarray]:
    """Cell permutations (arrays of length rows * cols, sigma[i] = image of cell i) other than the identity that
    preserve the distances and every type's allowed cells: the problem's objective is invariant under them.

    Candidates are the grid's mirror images and rotation by 180 degrees, plus the quarter turns and diagonal
    mirrors when the grid is square (the dihedral group D4)."""
    rows, cols = problem.rows, problem.cols
    r, c = np.divmod(np.arange(rows * cols), cols)
    maps = [(r, cols - 1 - c), (rows - 1 - r, c), (rows - 1 - r, cols - 1 - c)]
    if rows == cols:
        maps += [(c, r), (cols - 1 - c, rows - 1 - r), (c, rows - 1 - r), (cols - 1 - c, r)]
    n = rows * cols
    dist = cell_distances(problem)
    out = []
    for rr, cc in maps:
        sigma = rr * cols + cc
        if not np.array_equal(dist[np.ix_(sigma, sigma)], dist):
            continue
        if all(set(sigma[list(allowed_cells(problem, t))].tolist()) == set(allowed_cells(problem, t))
               for t in problem.allowed):
            out.append(sigma)
    return out if n > 1 else []


def canonical_layouts(layouts: np.ndarray, ring: tuple[int, ...], symmetries: list[np.ndarray],
                      n_types: int) -> np.ndarray:
    """Keep one layout per orbit of ``symmetries`` (the one with the smallest code); rows of ``layouts`` hold
    the restricted type index per ring position, -1 for none."""
    base = n_types + 1
    if not symmetries or len(layouts) == 0 or not ring or base ** len(ring) >= MAX_KEY_STATES:
        return layouts
    pos = {cell: k for k, cell in enumerate(ring)}
    weights = base ** np.arange(len(ring) - 1, -1, -1, dtype=np.int64)
    codes = (layouts.astype(np.int64) + 1) @ weights
    keep = np.ones(len(layouts), dtype=bool)
    for sigma in symmetries:
        perm = np.array([pos[int(sigma[cell])] for cell in ring])  # ring position k moves to perm[k]
        image = np.empty_like(layouts)
        image[:, perm] = layouts
        keep &= codes <= (image.astype(np.int64) + 1) @ weights
    return layouts[keep]


def solve_by_ring_enumeration(problem: PlacementProblem, config: SolverConfig, max_layouts: int = 3_000_000, *,
                              solve_fixed: SolveFixed,
                              t0: float | None = None) -> dict:
    """Run the exact decomposition; return decision, bound, proven flag and counters.

    Parameters
    ----------
    problem : PlacementProblem
        One-cell chiplets; any types with restricted cells (HBM groups: the ring) are enumerated.
    config : SolverConfig
        ``work_limit`` (deterministic: layouts bounded by relaxation cost 1 / RING_RELAXATIONS_PER_UNIT units each,
        by assignment 1 / RING_ASSIGNMENTS_PER_UNIT, and each per-layout MILP what HiGHS reports), ``time_limit_s``
        (the wall cap), ``rel_gap`` (a layout within it of the incumbent needs no exact solve, and the search counts
        as proven) and ``threads`` (HiGHS threads of the per-layout MILPs). On either limit the bound is the least
        bound of the layouts not yet closed.
    max_layouts : int
        Refuse (DecompositionNotApplicable) when there are more ring layouts than this (before symmetry).
    solve_fixed : callable(problem, config, hint) -> Solution
        The exact solve of one open layout (its restricted chiplets fixed through ``allowed``); the dispatcher
        passes its RLT-1 MILP method, so this module does not import the dispatcher. Its ``extra["work_units"]``
        is charged to the budget.
    t0 : float, optional
        ``time.perf_counter()`` at which the wall cap started (default now).

    Returns
    -------
    dict
        ``decision`` (best placement, full objective), ``bound`` (valid lower bound), ``proven``, ``stopped``
        (None, or the TerminationCondition of the limit that cut the search short), ``work_units`` (spent),
        ``layouts`` (enumerated), ``canonical`` (kept after symmetry), ``assignments`` (layouts bounded by an
        assignment problem), ``subproblems`` (layouts solved by the MILP).

    Raises
    ------
    DecompositionNotApplicable
        Too many layouts, or none.
    """
    budget = WorkBudget.of(config, t0)
    rel_gap = config.rel_gap
    restricted, free, ring = _restricted_split(problem)
    if not restricted and not free:
        return {"decision": {}, "bound": 0.0, "proven": True, "stopped": None, "work_units": 0.0, "layouts": 1,
                "canonical": 1, "assignments": 0, "subproblems": 0}
    n_layouts = count_ring_layouts(len(ring), [problem.counts[g] for g in restricted])  # an upper bound
    if n_layouts > max_layouts:
        msg = f"hbm-enum: {n_layouts:,} ring layouts exceed the limit of {max_layouts:,}"
        raise DecompositionNotApplicable(msg)
    all_layouts = _ring_layouts(problem, restricted, ring)
    if len(all_layouts) == 0:  # restricted chiplets cannot be placed at all
        msg = "hbm-enum: the restricted chiplets have no feasible layout"
        raise DecompositionNotApplicable(msg)
    layouts = canonical_layouts(all_layouts, ring, grid_symmetries(problem), len(restricted))
    ctx = _Context(problem, restricted, free, ring, solve_fixed)
    lbs = np.zeros(len(layouts))  # 0 is a valid (weak) bound where a limit stops the relaxation
    stopped = None
    for s in range(0, len(layouts), CHUNK):
        stopped = budget.stop()
        if stopped:
            break
        lbs[s:s + CHUNK] = ctx.relaxation(layouts[s:s + CHUNK])
        budget.spend(len(lbs[s:s + CHUNK]) / RING_RELAXATIONS_PER_UNIT)
    order = np.argsort(lbs, kind="stable")
    best, best_dec = math.inf, None
    closed: dict[int, float] = {}  # layout -> bound of its assignment problem (or exact value)
    processed = 0
    for k in order:
        if lbs[k] >= best * (1 - rel_gap):
            break
        stopped = stopped or budget.stop()
        if stopped:
            break
        closed[int(k)], decision = ctx.assignment(layouts[k])
        budget.spend(1 / RING_ASSIGNMENTS_PER_UNIT)
        processed += 1
        full = check_placement(problem, decision)[0]
        if full < best:
            best, best_dec = full, decision
    sub_solved = 0
    for k in sorted(closed, key=closed.get):  # close the layouts whose bound is still below the incumbent
        if closed[k] >= best * (1 - rel_gap) or stopped:
            continue
        stopped = budget.stop()
        if stopped:
            break
        sol = ctx.exact_layout(layouts[k], budget.sub_config(config), best_dec)
        budget.spend(float(sol.extra.get("work_units", 0.0)))
        if sol.termination == TerminationCondition.TIME_LIMIT:
            stopped = TerminationCondition.TIME_LIMIT
        sub_solved += 1
        closed[k] = max(closed[k], -math.inf if sol.bound is None else float(sol.bound))
        if sol.decision is not None and sol.objective < best:
            best, best_dec = float(sol.objective), sol.decision
    if best_dec is not None:

        polished = local_search_placement(problem, best_dec)
        value = check_placement(problem, polished)[0]
        if value < best:
            best, best_dec = value, polished
    open_bounds = [b for b in closed.values() if b < best * (1 - rel_gap)]
    if processed < len(order):
        open_bounds.append(float(lbs[order[processed]]))
    bound = min([best, *open_bounds])
    proven = bound >= best * (1 - rel_gap) - 1e-12 * abs(best)
    return {"decision": best_dec, "bound": bound, "proven": proven, "stopped": None if proven else stopped,
            "work_units": budget.used, "layouts": len(all_layouts), "canonical": len(layouts),
            "assignments": processed, "subproblems": sub_solved}


class _Context:
    """Arrays shared by the relaxation, the per-layout assignment bound and the per-layout exact solve."""

    def __init__(self, problem: PlacementProblem, restricted: list[str], free: list[str],
                 ring: tuple[int, ...], solve_fixed: Callable[..., Solution]) -> None:
        self.problem, self.restricted, self.free = problem, restricted, free
        self.solve_fixed = solve_fixed
        vol = volume_table(problem)
        dist = cell_distances(problem)
        self.n, self.dist = problem.rows * problem.cols, dist
        self.ring_arr = np.array(ring, dtype=int)
        self.d_ring = dist[:, self.ring_arr]
        self.d_rr = dist[np.ix_(self.ring_arr, self.ring_arr)]
        self.v_fg = np.array([[vol.get((t, g), 0.0) for g in restricted] for t in free]).reshape(
            len(free), len(restricted))
        self.v_gg = np.array([[vol.get((g, h), 0.0) for h in restricted] for g in restricted]).reshape(
            len(restricted), len(restricted))
        self.counts_free = np.array([problem.counts[t] for t in free], dtype=int)
        self.rows_type = np.repeat(np.arange(len(free)), self.counts_free)
        n_c = len(self.rows_type)
        partners = []  # per free type: volumes to every other compute chiplet, sorted down
        for a, t in enumerate(free):
            v: list[float] = []
            for b, u in enumerate(free):
                v += [vol.get((t, u), 0.0)] * (problem.counts[u] - (a == b))
            partners.append(sorted(v, reverse=True))
        self.partners = np.array(partners, dtype=float).reshape(len(free), max(n_c - 1, 0))

    def _costs(self, lay: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(restricted-pair constants (L,), Gilmore-Lawler cell x type costs (L, cells, free types))."""
        n_g = self.v_gg.shape[0]
        member = (lay[:, None, :] == np.arange(n_g)[None, :, None]).astype(float)  # (L, G, ring)
        dsum = np.einsum("lgr,cr->lgc", member, self.d_ring)  # (L, G, cells): sum of hops to each group's stacks
        cost = np.einsum("tg,lgc->lct", self.v_fg, dsum)  # (L, cells, free types)
        occupied = np.zeros((len(lay), self.n), dtype=bool)
        occupied[:, self.ring_arr] = lay >= 0
        cost = np.where(occupied[:, :, None], np.inf, cost)  # occupied ring cells are closed to free types
        pair = np.einsum("lgr,rs,lhs->lgh", member, self.d_rr, member)  # hops between groups g and h
        const = 0.5 * np.einsum("gh,lgh->l", self.v_gg, pair)
        k = self.partners.shape[1]
        if k and self.partners.any():
            blocked = occupied[:, None, :] | np.eye(self.n, dtype=bool)[None]
            hops = np.sort(np.where(blocked, np.inf, self.dist[None]), axis=2)[:, :, :k]
            hops = np.where(np.isinf(hops), 0.0, hops)
            cost = cost + 0.5 * np.einsum("lcs,ts->lct", hops, self.partners)
        return const, cost

    def relaxation(self, lay: np.ndarray) -> np.ndarray:
        """Bound per layout: each free type takes its cheapest cells (a relaxation of the assignment)."""
        const, cost = self._costs(lay)
        lb = const.copy()
        for t, k in enumerate(self.counts_free):
            if k > 0:
                lb += np.sort(cost[:, :, t], axis=1)[:, :k].sum(axis=1)
        return lb

    def assignment(self, lay: np.ndarray) -> tuple[float, dict[int, str]]:
        """Gilmore-Lawler bound of one layout and the placement its optimal assignment gives."""
        const, cost = self._costs(lay[None])
        cells = np.setdiff1d(np.arange(self.n), self.ring_arr[lay >= 0])  # the cells no stack holds
        # (open cells, chiplets): with as many chiplets as open cells (a full grid), scipy's solver runs twice as
        # fast with the cells as rows as with the chiplets, many rows alike, as rows (same optimum)
        matrix = cost[0][cells][:, self.rows_type]
        c_idx, r_idx = linear_sum_assignment(matrix)
        decision = self._fixed(lay)
        decision.update({int(cells[c]): self.free[self.rows_type[r]] for r, c in zip(r_idx, c_idx, strict=True)})
        return float(const[0] + matrix[c_idx, r_idx].sum()), decision

    def _fixed(self, lay: np.ndarray) -> dict[int, str]:
        return {int(self.ring_arr[j]): self.restricted[g] for j, g in enumerate(lay) if g >= 0}

    def exact_layout(self, lay: np.ndarray, config: SolverConfig, incumbent: dict[int, str] | None) -> Solution:
        """Solve one layout exactly (RLT-1 MILP, restricted chiplets fixed, every volume kept) under ``config``;
        the solver's Solution (its bound is the layout's lower bound)."""
        fixed = self._fixed(lay)
        cells: dict[str, list[int]] = {}
        for cell, t in fixed.items():
            cells.setdefault(t, []).append(cell)
        rest = tuple(c for c in range(self.n) if c not in fixed)
        allowed = {**{t: tuple(cs) for t, cs in cells.items()}, **dict.fromkeys(self.free, rest)}
        sub = dataclasses.replace(self.problem, allowed=allowed, model_volume_floor=0.0,
                                  name=f"{self.problem.name} (fixed layout)")
        hint = None
        if incumbent is not None and all(incumbent.get(c) == t for c, t in fixed.items()):
            hint = incumbent
        return self.solve_fixed(sub, config, hint)
