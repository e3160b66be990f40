"""Exact min-max link load under XY routing by branching on HBM stack layouts (``"layout-bnb"``).

With every stack fixed, the load of each directed link is linear in where the compute chiplets sit (pair traffic
compute <-> stack follows a known route once both cells are known), except the small compute <-> compute part.
Dropping that part (volumes are >= 0, so loads only fall) gives, per stack layout H, the linear model

    min M  s.t.  fixed_e(H) + sum_{c, t} a_e(c, t; H) z[c, t] <= M  for every link e,
                 sum_t z[c, t] <= 1,  sum_c z[c, t] = n_t,

whose LP is a lower bound for every placement with layout H and whose MILP (scipy / HiGHS, about 0.1 s) is an exact
bound without the compute <-> compute traffic and a good placement. Two levels keep the LP count low: the stacks of
the heaviest group first, with the other groups' traffic dropped and their cells left to compute (a relaxation, so
again a valid bound), then every completion of a promising level-1 layout. Layouts are reduced by the grid
symmetries that keep XY routes (mirrors and the 180-degree turn; never the diagonal mirrors, which turn XY into
YX routing). The few layouts still below the incumbent after their MILP are solved with all traffic: compute <->
compute pairs are added exactly (y >= z + z' - 1, y >= 0) on the busiest link of each solution, one link at a
time, until the busiest link is one already modelled.

The bound returned is the least of: the incumbent, the next unprocessed level-1 bound, and the bounds of the
layouts left open. Source: chipdse (issue 4); objective as in ``formulations.link_load``.

The search is deterministic under ``SolverConfig.work_limit``: every LP and MILP is charged its simplex iterations
(:mod:`solvers.config`), the layouts of one level-1 layout are solved in parallel against the
incumbent as it was before them and merged in their fixed order, and the work limit is checked between level-1
layouts and between closing solves. The wall cap ``time_limit_s`` stops it too (then the result depends on load).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from chipdse.formulations.link_load import link_loads, max_link_load, pair_links
from chipdse.formulations.placement import PlacementProblem, allowed_cells, volume_table
from chipdse.solvers.backends import _highs_threads, solve_dense_highs
from chipdse.solvers.config import (
    SolverConfig,
    WorkBudget,
)
from chipdse.solvers.placement_decomp import _restricted_split, canonical_layouts, grid_symmetries


@dataclass(frozen=True)
class _Limit:
    """Limits of one direct HiGHS solve: work units (LP: simplex iterations, MILP: nodes) and a wall cap, s."""

    work: float
    wall_s: float


def xy_symmetries(problem: PlacementProblem) -> list[np.ndarray]:
    """Grid symmetries (see :func:`solvers.placement_decomp.grid_symmetries`) that map every XY route onto the XY
    route of the image cells, so that they preserve every link load."""
    n = problem.rows * problem.cols
    keep = []
    for sigma in grid_symmetries(problem):
        ok = True
        for i in range(n):
            for j in range(i + 1, n):
                image = {(int(sigma[a]), int(sigma[b])): s for (a, b), s in pair_links(problem, i, j).items()}
                if image != dict(pair_links(problem, int(sigma[i]), int(sigma[j]))):
                    ok = False
                    break
            if not ok:
                break
        if ok:
            keep.append(sigma)
    return keep


class _LinkModel:
    """Route shares S[i, j, e] of every cell pair on every directed link, and the per-layout linear models."""

    def __init__(self, problem: PlacementProblem, restricted: list[str], free: list[str]) -> None:
        self.problem, self.restricted, self.free = problem, restricted, free
        n = problem.rows * problem.cols
        self.n = n
        links: dict[tuple[int, int], int] = {}
        entries = []
        for i in range(n):
            for j in range(i + 1, n):
                for link, s in pair_links(problem, i, j).items():
                    entries.append((i, j, links.setdefault(link, len(links)), s))
        self.link_index = links
        self.share = np.zeros((n, n, max(len(links), 1)))
        for i, j, e, s in entries:
            self.share[i, j, e] += s
            self.share[j, i, e] += s
        self.vol = volume_table(problem)
        self.scale = max(self.vol.values(), default=1.0)
        self.counts = np.array([problem.counts[t] for t in free])
        self._rows_cache: dict[int, np.ndarray] = {}

    def exact(self, stacks: dict[int, str], best: float, budget: WorkBudget, rel_gap: float
              ) -> tuple[float, float, dict[int, str] | None, bool]:
        """Solve one stack layout with every volume by adding compute <-> compute traffic exactly on the links whose
        true load exceeds the model's bound at each solution, until the busiest link is already modelled (lazy
        constraints).

        Returns (busiest link of the best decision or inf, lower bound for the layout, decision or None, closed:
        True when the layout is solved or proven no better than ``best``). Each MILP is charged to ``budget``."""
        links: frozenset[int] = frozenset()
        cutoff = best * (1 - rel_gap)
        bound, found, found_value = -math.inf, None, math.inf
        while True:
            if budget.stop():
                return found_value, bound, found, False
            value, decision, work = self.bound(stacks, True, _Limit(budget.left, budget.wall_left_s), cutoff, links)
            budget.spend(work)
            if decision is None:
                if value == cutoff:  # nothing in this layout beats the cutoff
                    return found_value, max(bound, cutoff), found, True
                return found_value, bound, found, False
            bound = max(bound, value)
            loads = link_loads(self.problem, decision)
            worst_link = max(loads, key=loads.get)
            full = loads[worst_link]
            if full < found_value:
                found, found_value = decision, full
            if self.link_index[worst_link] in links:  # modelled exactly: the model's optimum is this layout's
                return found_value, bound, found, True
            links = links | {self.link_index[worst_link]} | {self.link_index[e] for e, load in loads.items()
                                                              if load > value}

    def _products(self, cells: list[int], cc_links: frozenset[int]) -> list[tuple[int, int, int, int, float]]:
        """(cell index i, type t, cell index j, type u, volume) for i < j whose pair route uses a link of
        ``cc_links`` and whose compute types exchange traffic."""
        if not cc_links:
            return []
        links = sorted(cc_links)
        out = []
        for i in range(len(cells)):
            for j in range(i + 1, len(cells)):
                if not self.share[cells[i], cells[j], links].any():
                    continue
                for t, tn in enumerate(self.free):
                    for u, un in enumerate(self.free):
                        v = self.vol.get((tn, un), 0.0)
                        if v:
                            out.append((i, t, j, u, v))
        return out

    def _assignment_rows(self, n_cells: int) -> np.ndarray:
        """Cell-capacity rows then type-count rows over z (cell-major) and M (cached per cell count)."""
        if n_cells not in self._rows_cache:
            n_t = len(self.free)
            nz = n_cells * n_t
            cap = np.zeros((n_cells, nz + 1))
            for k in range(n_cells):
                cap[k, k * n_t:(k + 1) * n_t] = 1.0
            cnt = np.zeros((n_t, nz + 1))
            for t in range(n_t):
                cnt[t, t:nz:n_t] = 1.0
            self._rows_cache[n_cells] = np.vstack([cap, cnt])
        return self._rows_cache[n_cells]

    def bound(self, stacks: dict[int, str], integral: bool, limit: _Limit,
              cutoff_bytes: float | None = None, cc_links: frozenset[int] = frozenset()
              ) -> tuple[float, dict[int, str] | None, float]:
        """LP (or MILP) bound of the linear model for the given fixed stacks, in bytes; compute <-> compute traffic
        and the traffic of stacks not in ``stacks`` are left out, except on the links ``cc_links``, where
        compute <-> compute pairs enter exactly through y >= z + z' - 1, y >= 0 (exact at binary z: the link
        rows push y down). Returns (bound, decision or None, work units used); with a cutoff, a MILP that proves
        nothing below it returns (cutoff, None, work)."""
        cells = [c for c in range(self.n) if c not in stacks]
        items = list(stacks.items())
        n_links = self.share.shape[2]
        fixed = np.zeros(n_links)
        for a in range(len(items)):
            for b in range(a + 1, len(items)):
                v = self.vol.get((items[a][1], items[b][1]), 0.0)
                if v:
                    fixed += v * self.share[items[a][0], items[b][0]]
        w = np.array([[self.vol.get((t, g), 0.0) for _, g in items] for t in self.free]).reshape(
            len(self.free), len(items))  # (types, stacks)
        h_cells = np.array([h for h, _ in items], dtype=int)
        # a[e, c, t] = sum_h w[t, h] share[c, h, e]
        a = np.einsum("th,che->ect", w, self.share[np.ix_(cells, h_cells)] if len(items) else
                      np.zeros((len(cells), 0, n_links)))
        n_t = len(self.free)
        nz = len(cells) * n_t
        products = self._products(cells, cc_links)
        ny = len(products)
        link_rows = np.hstack([a.reshape(n_links, nz) / self.scale, np.zeros((n_links, ny)), -np.ones((n_links, 1))])
        prod_rows = np.zeros((ny, nz + ny + 1))
        for k, (ci, t, cj, u, v) in enumerate(products):
            for e in cc_links:
                link_rows[e, nz + k] = v * self.share[cells[ci], cells[cj], e] / self.scale
            prod_rows[k, [ci * n_t + t, cj * n_t + u]] = -1.0
            prod_rows[k, nz + k] = 1.0
        assign = self._assignment_rows(len(cells))
        assign = np.hstack([assign[:, :nz], np.zeros((assign.shape[0], ny)), assign[:, nz:]])
        rows = np.vstack([link_rows, assign, prod_rows])
        lo = np.r_[np.full(n_links, -np.inf), np.zeros(len(cells)), self.counts, np.full(ny, -1.0)]
        hi = np.r_[-fixed / self.scale, np.ones(len(cells)), self.counts, np.full(ny, np.inf)]
        cutoff = None if cutoff_bytes is None else cutoff_bytes / self.scale
        status, value, x, work = solve_dense_highs(rows, lo, hi, nz, integral, cutoff, limit.work, limit.wall_s,
                                                   n_continuous=ny)
        if status == "pruned":
            return cutoff_bytes, None, work
        if x is None:
            return -math.inf, None, work
        value *= self.scale
        if not integral:
            return value, None, work
        z = x[:nz].reshape(len(cells), n_t)
        decision = dict(stacks)
        for k, c in enumerate(cells):
            t = int(np.argmax(z[k]))
            if z[k, t] > 0.5:
                decision[c] = self.free[t]
        return value, decision, work




def solve_max_link_by_layouts(problem: PlacementProblem, config: SolverConfig, start: dict[int, str] | None = None,
                              t0: float | None = None) -> dict:
    """Run the two-level layout search; return decision, bound, proven flag and counters.

    Parameters
    ----------
    problem : PlacementProblem
        A grid instance (no ``distance`` matrix) whose restricted types (HBM groups) have allowed cells.
    config : SolverConfig
        ``work_limit`` for the whole search (LP simplex iterations and MILP nodes, see the module docstring),
        ``time_limit_s`` (the wall cap), ``rel_gap`` (a layout within it of the incumbent needs no further work, and
        the search counts as proven) and ``threads`` (layouts solved in parallel; HiGHS releases the GIL).
    start : dict[int, str], optional
        A placement used as the first incumbent.
    t0 : float, optional
        ``time.perf_counter()`` at which the wall cap started (default now).

    Returns
    -------
    dict
        ``decision``, ``objective`` (its max link load), ``bound``, ``proven``, ``stopped`` (None, or the
        TerminationCondition of the limit that cut the search short), ``work_units``, ``level1`` (stack layouts
        of the heaviest group bounded), ``layouts`` (full layouts bounded by LP), ``milps`` (per-layout MILPs),
        ``closed`` (layouts solved with all traffic).
    """
    budget = WorkBudget.of(config, t0)
    rel_gap = config.rel_gap
    _highs_threads(1)  # one-thread solves: HiGHS's global scheduler must match (set once, before any thread runs)
    restricted, free, ring = _restricted_split(problem)
    model = _LinkModel(problem, restricted, free)
    best_dec = start
    best = max_link_load(problem, start) if start is not None else math.inf
    counters = {"level1": 0, "layouts": 0, "milps": 0, "closed": 0}
    weight = {g: sum(model.vol.get((t, g), 0.0) * problem.counts[t] for t in free) * problem.counts[g]
              for g in restricted}
    order = sorted(restricted, key=lambda g: -weight[g])
    head, tail = (order[0], order[1:]) if order else (None, [])
    sym = xy_symmetries(problem)
    if head is None:
        level1 = [{}]
    else:
        cells = allowed_cells(problem, head)
        combos = combinations(cells, problem.counts[head])
        picks = np.array([[0 if c in combo else -1 for c in cells] for combo in combos],
                         dtype=np.int8).reshape(-1, len(cells))  # 0 = a stack of ``head``, -1 = free
        picks = canonical_layouts(picks, tuple(cells), sym, 1)
        level1 = [{int(cells[k]): head for k in np.flatnonzero(p >= 0)} for p in picks]
    bounds1 = []
    stopped = None
    for stacks in level1:
        stopped = stopped or budget.stop()
        if stopped or not tail:
            bounds1.append(0.0 if stopped else -math.inf)
            continue
        value, _, work = model.bound(stacks, False, _Limit(budget.left, budget.wall_left_s))
        budget.spend(work)
        bounds1.append(value)
        counters["level1"] += 1
    open_layouts: list[tuple[float, dict[int, str]]] = []
    next_bound = None
    n_chiplets = sum(problem.counts.values())

    def evaluate(stacks: dict[int, str], cutoff: float, limit: _Limit
                 ) -> tuple[float, float, dict[int, str] | None, float, bool]:
        """LP, then (unless the LP reaches ``cutoff``) MILP with ``cutoff``: (LP bound, MILP bound, decision,
        work units, MILP run)."""
        lp, _, work = model.bound(stacks, False, limit)
        if lp >= cutoff:
            return lp, lp, None, work, False
        value, decision, milp_work = model.bound(stacks, True, limit, cutoff_bytes=cutoff)
        return lp, value, decision, work + milp_work, True

    with ThreadPoolExecutor(max(1, config.threads)) as pool:  # HiGHS releases the GIL: threads run solves at once
        for k in np.argsort(bounds1, kind="stable"):  # level-1 layouts, most promising first
            if bounds1[k] >= best * (1 - rel_gap):
                break
            stopped = stopped or budget.stop()
            if stopped:
                next_bound = bounds1[k]
                break
            layouts = list(_completions(problem, level1[int(k)], tail))
            cutoff, limit = best * (1 - rel_gap), _Limit(budget.left, budget.wall_left_s)
            results = list(pool.map(evaluate, layouts, [cutoff] * len(layouts), [limit] * len(layouts)))
            for stacks, (lp, value, decision, work, milp) in zip(layouts, results, strict=True):  # in fixed order
                budget.spend(work)
                counters["layouts"] += 1
                counters["milps"] += milp
                if not milp:
                    continue
                if decision is not None and len(decision) == n_chiplets:
                    full = max_link_load(problem, decision)
                    if full < best:
                        best, best_dec = full, decision
                if value < best * (1 - rel_gap):
                    open_layouts.append((max(value, lp), stacks))
    still_open = []
    for value, stacks in sorted(open_layouts, key=lambda x: x[0]):
        if value >= best * (1 - rel_gap):
            continue
        stopped = stopped or budget.stop()
        if stopped:
            still_open.append(value)
            continue
        exact_value, exact_bound, decision, proven_layout = model.exact(stacks, best, budget, rel_gap)
        counters["closed"] += 1
        if decision is not None and exact_value < best:
            best, best_dec = exact_value, decision
        if proven_layout:  # solved, or proven no better than the incumbent
            exact_bound = max(exact_bound, min(exact_value, best) * (1 - rel_gap))
        if max(value, exact_bound) < best * (1 - rel_gap) * (1 - 1e-9):
            still_open.append(max(value, exact_bound))
    candidates = [best, *still_open] + ([next_bound] if next_bound is not None else [])
    bound = max(0.0, min(candidates))
    proven = bound >= best * (1 - rel_gap) * (1 - 1e-9) - 1e-12 * abs(best)
    stopped = None if proven else stopped or budget.stop()
    return {"decision": best_dec, "objective": best, "bound": bound, "proven": proven, "stopped": stopped,
            "work_units": budget.used, **counters}


def _completions(problem: PlacementProblem, stacks: dict[int, str], groups: list[str]):
    """Every way to add the stacks of ``groups`` to ``stacks`` on their allowed free cells."""
    if not groups:
        yield dict(stacks)
        return
    g, rest = groups[0], groups[1:]
    cells = [c for c in allowed_cells(problem, g) if c not in stacks]
    for combo in combinations(cells, problem.counts[g]):
        yield from _completions(problem, {**stacks, **dict.fromkeys(combo, g)}, rest)
