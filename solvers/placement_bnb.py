"""Exact placement at package scale: a branch and bound over the layouts of the restricted chiplets (HBM stacks).

``hbm-enum`` (solvers/placement_decomp.py) enumerates every ring layout; at 7 x 7 with 16 stacks that is 5.9e9.
This search builds the layouts coarse to fine and prunes partial layouts by a bound that uses what a package has
and a QAP has not:

* **Type-level branching.** Stacks of one group are interchangeable, so a layout is first decided as counts: the
  ring positions are cut into :data:`SEGMENTS` arcs (the four sides of a square package) and the first levels of
  the tree fix how many stacks of each group each arc holds; the later levels fix the positions inside the arcs,
  one position at a time (a stack of group g, or left to the compute chiplets).
* **Type-level bound.** Compute chiplets of one type are interchangeable, so the bound is an assignment of
  chiplets to cells whose cost is linear in the cell. A compute chiplet of type t on cell i pays ``v(t, g)`` times
  its hops to the placed stacks of group g, plus, for each arc (or the pool of arcs whose counts are still open)
  with r_g stacks of g still to place on its undecided positions, the least ``sum_g v(t, g) * hops`` over disjoint
  choices of r_g positions per group: the nearest positions, the heavier group first (rearrangement inequality),
  never i's own cell. Compute-to-compute traffic adds the Gilmore-Lawler term (half the minimal scalar product of
  t's partner volumes, sorted down, and i's hops to the other cells, sorted up). The node's bound is the optimal
  assignment of the compute chiplets to the cells no stack holds under these costs
  (``scipy.optimize.linear_sum_assignment``), plus the stack-to-stack traffic already fixed: every completion of
  the partial layout costs at least that much. The stacks still to place join the assignment as rows of cost 0
  that may only take their pool's undecided positions, so the compute chiplets cannot crowd the ring cells the
  stacks will need (an arc whose counts put 5 stacks on its 7 positions leaves 2 of them to compute: on a full
  8 x 8 grid the bound with the counts fixed rises from 14.2% to 11.6% below the incumbent). The open cells are
  the assignment's rows: on a full grid the problem is square, and scipy's solver takes 2.2x less time with the
  cells as rows than with the chiplets, whose rows repeat per type (``benchmarks/bench_node_assignment.py``).
* **Common volume on a full grid.** When the chiplets fill every cell, every cell off the stacks holds a compute
  chiplet, so the part of the volumes that every compute type sends to a group, ``m_g = min_t v(t, g)``, costs
  ``m_g`` times the hops from each stack of g to every compute cell: a sum over the stacks alone, with no lateral
  claims. The compute chiplets keep only the rest ``v(t, g) - m_g`` in their costs, and each stack still to place
  joins the assignment with cost ``m_g`` times a lower bound of those hops on its cell: the hops to the cells off
  the ring and to the positions decided empty are known, and of a pool of undecided positions that holds r stacks,
  all but r positions hold compute chiplets, at least the nearest ones. The placed stacks pay the same bound as a
  constant. On the full 8 x 8 grid (48 compute chiplets + 16 stacks) the bound along the incumbent's path with
  the arcs' counts fixed rises from 11.6% to 9.8% below the incumbent, with 16 positions decided from 5.4% to 4.0%.
* **Symmetry.** Grid automorphisms (:func:`solvers.placement_decomp.grid_symmetries`) that map arcs onto arcs
  (the quarter and half turns of the ring) permute the arcs' count vectors; only the lexicographically smallest
  count sequence of each orbit is kept.
* **Decomposition.** A complete layout gets ``hbm-enum``'s per-layout assignment bound and its assignment, scored
  by the checker, is a candidate incumbent; a layout whose bound is still below the incumbent (beyond the
  relative gap) is solved exactly afterwards (the RLT-1 MILP with its stacks fixed), least bound first.
* **Incumbents.** The incumbent starts from swap local search (from the HYDRA greedy placement, and from the given
  hint) and from a depth-first dive at the root (least-bound child first, the complete layout's assignment); every
  :data:`DIVE_EVERY` expanded nodes another dive starts from the node just expanded. Every new incumbent is
  polished by the same local search. Swaps cannot move a whole cluster of chiplets to another part of a package
  with empty cells; the dives follow the bound there (8 x 8, 36 compute + 12 stacks: 1.7% below the swap local
  search's placement).

Best first (least bound; ties: the deeper node). Deterministic: the work is counted in bounded nodes
(:data:`solvers.config.RING_BNB_NODES_PER_UNIT` per unit), never in seconds; on a limit the bound returned is the
least bound of the nodes and layouts still open.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from itertools import product

import numpy as np
from scipy.optimize import linear_sum_assignment

from chipdse.core.solution import TerminationCondition
from chipdse.formulations.placement import PlacementProblem, allowed_cells, check_placement, ring_of
from chipdse.solvers.config import RING_ASSIGNMENTS_PER_UNIT, RING_BNB_NODES_PER_UNIT, SolverConfig, WorkBudget
from chipdse.solvers.placement_decomp import (
    SolveFixed,
    _Context,
    _restricted_split,
    cell_distances,
    grid_symmetries,
)
from chipdse.solvers.placement_heuristics import (
    PlacementHeuristicError,
    hydra_greedy_placement,
    local_search_placement,
)

SEGMENTS = 4
"""Arcs the restricted positions are cut into for the count-level branching (the sides of a square ring)."""
BIG = 1e30
"""Stands for an infinite hop sum (more stacks than open positions; no feasible node reaches it)."""
EMPTY = -1
"""Label of a position left to the compute chiplets."""
DIVE_NODES = 2_000
"""Most nodes a depth-first dive (for an incumbent) may bound."""
DIVE_EVERY = 1_000
"""Expanded nodes between two dives during the best-first search: each dives from the node just expanded, the
least bound the search has open, so the incumbents follow the bound into the part of the tree still open."""


@dataclass
class _Node:
    """A partial layout: ``arcs`` arcs have their counts, ``depth`` positions (in arc order) are decided."""

    arcs: int
    depth: int
    counts: np.ndarray
    """(SEGMENTS, groups) stacks still to place per arc (rows of arcs without counts yet: 0)."""
    pool: np.ndarray
    """(groups,) stacks still to place on the arcs without counts."""
    layout: np.ndarray
    """(positions,) group per decided position, EMPTY otherwise."""
    dfix: np.ndarray
    """(cells, groups) hops from each cell to the placed stacks of each group."""
    const: float
    """Stack-to-stack traffic among the placed stacks, bytes x hops."""


class _Tree:
    """Arrays of the layout search and the bound of a partial layout."""

    def __init__(self, problem: PlacementProblem, solve_fixed: SolveFixed) -> None:
        restricted, free, ring = _restricted_split(problem)
        self.problem, self.restricted, self.free, self.ring = problem, restricted, free, ring
        self.ctx = _Context(problem, restricted, free, ring, solve_fixed)
        dist = cell_distances(problem)
        n, n_g = problem.rows * problem.cols, len(restricted)
        on_ring = [c for c in ring_of(problem) if c in set(ring)]
        cells = on_ring + [c for c in ring if c not in set(on_ring)]  # ring order first, then the rest
        self.n, self.dist, self.n_pos = n, dist, len(cells)
        self.pos_cells = np.array(cells, dtype=int)
        self.to_ctx = np.array([ring.index(c) for c in cells], dtype=int)
        self.ok = np.array([[c in set(allowed_cells(problem, g)) for c in cells] for g in restricted],
                           dtype=bool).reshape(n_g, len(cells))
        m = min(SEGMENTS, max(len(cells), 1))
        self.bounds = [round(s * len(cells) / m) for s in range(m + 1)]
        self.n_arcs = m
        self.arc_of = np.searchsorted(self.bounds, np.arange(len(cells)), side="right") - 1
        self.counts_g = np.array([problem.counts[g] for g in restricted], dtype=int)
        self.v_fg, self.v_gg, self.rows_type = self.ctx.v_fg, self.ctx.v_gg, self.ctx.rows_type
        self.shared = bool((self.ok == self.ok[:1]).all())
        """Every group may use every position: one pool serves all groups, the heavier traffic nearer."""
        full = len(self.rows_type) > 0 and len(self.rows_type) + int(self.counts_g.sum()) == n
        self.common = self.v_fg.min(axis=0) if full else np.zeros(n_g)
        """(groups,) on a full grid, the volume every compute chiplet sends to each stack of a group (the least
        over the free types), charged to the stacks (:meth:`_common_hops`); else 0."""
        self.v_res = self.v_fg - self.common  # (free types, groups) >= 0: the rest, charged to the compute chiplets
        self.group_order = np.argsort(-self.v_res, axis=1, kind="stable").reshape(len(free), n_g)
        self.v_sorted = np.take_along_axis(self.v_res, self.group_order, axis=1)  # (free types, groups), down
        inner = np.ones(n, dtype=bool)
        inner[self.pos_cells] = False
        self.inner_hops = dist[inner].sum(axis=0)  # (cells,) hops from each cell to every cell off the ring
        self.nearest_hops: dict[tuple[str, int, int], np.ndarray] = {}
        # cum_suffix[g][p]: hops from each cell to the positions p.. of p's arc allowed for g (not the cell
        # itself), sorted, cumulative; cum_pool[g][a]: the same over every position of arcs a..
        self.cum_suffix = [[self._cumulative(g, range(p, self.bounds[self.arc_of[p] + 1]))
                            for p in range(len(cells))] for g in range(n_g)]
        self.cum_pool = [[self._cumulative(g, range(self.bounds[a], len(cells))) for a in range(m)]
                         for g in range(n_g)]
        k_partners = self.ctx.partners.shape[1]
        if k_partners and self.ctx.partners.any():  # Gilmore-Lawler compute-to-compute term, every cell open
            hops = np.sort(dist + np.diag(np.full(n, np.inf)), axis=1)[:, :k_partners]
            self.gl_cc = 0.5 * hops @ self.ctx.partners.T  # (cells, free types)
        else:
            self.gl_cc = np.zeros((n, len(free)))
        self.shifts = self._arc_shifts(problem)
        # stack_row[table][index]: the assignment row of one stack of a pool (a suffix of one arc; the arcs from
        # one on): cost 0 on the cells of the pool's undecided positions, where its stacks will stand, inf elsewhere
        cell_mask = np.zeros((len(cells), n), dtype=bool)
        cell_mask[np.arange(len(cells)), self.pos_cells] = True
        self.stack_row = {
            "suffix": [np.where(cell_mask[p:self.bounds[self.arc_of[p] + 1]].any(axis=0), 0.0, np.inf)
                       for p in range(len(cells))],
            "pool": [np.where(cell_mask[self.bounds[a]:].any(axis=0), 0.0, np.inf) for a in range(m)]}
        self.pool_costs: dict[tuple[str, int, bytes], np.ndarray] = {}
        self.nodes = 0

    def _cumulative(self, g: int, positions: range) -> np.ndarray:
        """(cells, k + 1): the m smallest hops from each cell to ``positions`` allowed for group g, summed."""
        cols = [p for p in positions if self.ok[g, p]]
        d = self.dist[:, self.pos_cells[cols]].copy()
        if cols:
            d[self.pos_cells[cols], np.arange(len(cols))] = np.inf  # a chiplet on the cell keeps stacks off it
        cum = np.concatenate([np.zeros((self.n, 1)), np.cumsum(np.sort(d, axis=1), axis=1)], axis=1)
        return np.where(np.isinf(cum), BIG, cum)

    def _arc_shifts(self, problem: PlacementProblem) -> list[int]:
        """Shifts j such that some grid automorphism maps arc a onto arc a + j (mod arcs), for every a."""
        where = {int(c): p for p, c in enumerate(self.pos_cells)}
        arcs = [set(range(self.bounds[a], self.bounds[a + 1])) for a in range(self.n_arcs)]
        shifts = set()
        for sigma in grid_symmetries(problem):
            image = [{where.get(int(sigma[self.pos_cells[p]]), -1) for p in arc} for arc in arcs]
            for j in range(1, self.n_arcs):
                if all(image[a] == arcs[(a + j) % self.n_arcs] for a in range(self.n_arcs)):
                    shifts.add(j)
        return sorted(shifts)

    def canonical_counts(self, counts: np.ndarray) -> bool:
        """True when the arcs' count sequence is the smallest of its images under :attr:`shifts`."""
        code = tuple(counts.ravel().tolist())
        return all(code <= tuple(np.roll(counts, j, axis=0).ravel().tolist()) for j in self.shifts)

    def _all_pools(self, node: _Node) -> list[tuple[str, int, np.ndarray]]:
        """(table, index, stacks still to place per group) of every pool of undecided positions (they cut the
        undecided positions into disjoint sets: a suffix of one arc, whole arcs, the arcs without counts)."""
        if node.arcs < self.n_arcs:
            pools = [("suffix", self.bounds[a], node.counts[a]) for a in range(node.arcs)]
            pools.append(("pool", node.arcs, node.pool))
            return pools
        if node.depth < self.n_pos:
            here = int(self.arc_of[node.depth])
            pools = [("suffix", node.depth, node.counts[here])]
            return pools + [("suffix", self.bounds[a], node.counts[a]) for a in range(here + 1, self.n_arcs)]
        return []

    def _pools(self, node: _Node) -> list[tuple[str, int, np.ndarray, int]]:
        """:meth:`_all_pools` with stacks still to place, each with its total."""
        out = []
        for table, index, rem in self._all_pools(node):
            total = int(rem.sum())
            if total:
                out.append((table, index, rem, total))
        return out

    def _pool_cost(self, table: str, index: int, rem: np.ndarray) -> np.ndarray:
        """(cells, free types): the least hops-times-volume of each cell's chiplet to ``rem`` stacks per group on
        the pool's undecided positions (memoized: a search meets few distinct pools)."""
        key = (table, index, rem.tobytes())
        cost = self.pool_costs.get(key)
        if cost is None:
            tables = self.cum_suffix if table == "suffix" else self.cum_pool
            if self.shared:  # the heavier group takes the nearer positions
                cum, counts = tables[0][index], rem[self.group_order]  # (cells, k + 1), (free types, groups)
                ends = np.cumsum(counts, axis=1)
                cost = ((cum[:, ends] - cum[:, ends - counts]) * self.v_sorted).sum(axis=2)
            else:
                drem = np.stack([tables[g][index][:, rem[g]] for g in range(len(rem))], axis=1)
                cost = drem @ self.v_res.T
            self.pool_costs[key] = cost
        return cost

    def _common_hops(self, node: _Node) -> np.ndarray:
        """(cells,) a lower bound of the hops from a stack on each cell to every compute chiplet, in every
        completion of ``node`` on a full grid: the cells off the ring and the positions decided empty hold compute
        chiplets, and so do all but r of the undecided positions of a pool that holds r stacks still to place (at
        least its nearest ones, the cell itself excluded)."""
        decided_empty = self.pos_cells[:node.depth][node.layout[:node.depth] < 0]
        hops = self.inner_hops + self.dist[decided_empty].sum(axis=0)
        for table, index, rem in self._all_pools(node):
            key = (table, index, int(rem.sum()))
            nearest = self.nearest_hops.get(key)
            if nearest is None:  # the spare smallest hops from each cell to the pool's positions but itself
                if table == "suffix":
                    cells = self.pos_cells[index:self.bounds[self.arc_of[index] + 1]]
                else:
                    cells = self.pos_cells[self.bounds[index]:]
                spare = len(cells) - key[2]
                d = self.dist[cells].copy()  # (pool positions, cells)
                d[np.arange(len(cells)), cells] = np.inf
                nearest = np.sort(d, axis=0)[:spare].sum(axis=0) if spare > 0 else np.zeros(self.n)
                self.nearest_hops[key] = nearest
            hops = hops + nearest
        return hops

    def bound(self, node: _Node) -> float:
        """Lower bound, bytes x hops, of every completion of ``node`` (see the module docstring)."""
        self.nodes += 1
        if len(self.rows_type) == 0:
            return node.const
        cost = node.dfix @ self.v_res.T + self.gl_cc  # (cells, free types)
        pools = self._pools(node)
        for table, index, rem, _ in pools:
            cost += self._pool_cost(table, index, rem)
        open_cells = np.ones(self.n, dtype=bool)
        placed = node.layout >= 0
        open_cells[self.pos_cells[placed]] = False
        # (open cells, chiplets): cells as rows; with as many chiplets as cells (a full grid) scipy's solver runs
        # twice as fast this way round as with the chiplets, many rows alike, as rows (same optimum)
        matrix = cost[open_cells][:, self.rows_type]
        const = node.const
        if self.common.any():  # full grid: each stack pays its common volume's hops to the compute chiplets
            hops = self._common_hops(node)
            const += float(self.common[node.layout[placed]] @ hops[self.pos_cells[placed]])
        if pools:  # the stacks still to place keep their pools' cells from the compute chiplets
            kinds, repeats = [], []
            for table, index, rem, total in pools:
                row = self.stack_row[table][index]
                if self.common.any():  # one column kind per group (a group without common volume: no hops)
                    for g in np.flatnonzero(rem):
                        kinds.append(row + self.common[g] * hops if self.common[g] else row)
                        repeats.append(int(rem[g]))
                else:
                    kinds.append(row)
                    repeats.append(total)
            matrix = np.hstack([matrix, np.repeat(np.array(kinds)[:, open_cells].T, repeats, axis=1)])
        if matrix.shape[1] > matrix.shape[0]:
            return math.inf
        r, c = linear_sum_assignment(matrix)  # children keep enough undecided positions for every pool's stacks
        return const + float(matrix[r, c].sum())

    def children(self, node: _Node) -> list[_Node]:
        """The partial layouts one decision below ``node``: the next arc's counts, or the next position's label."""
        if node.arcs < self.n_arcs:
            return self._count_children(node)
        p, a = node.depth, int(self.arc_of[node.depth])
        end, rem = self.bounds[a + 1], node.counts[a]
        after = self.ok[:, p + 1:end].sum(axis=1)  # positions after p in the arc each group may use
        out = []
        for g in range(len(rem)):
            left = rem - np.eye(len(rem), dtype=int)[g]  # the arc's stacks still to place after a stack of g on p
            if rem[g] and self.ok[g, p] and (after >= left).all():
                counts = node.counts.copy()
                counts[a, g] -= 1
                layout = node.layout.copy()
                layout[p] = g
                cell = int(self.pos_cells[p])
                dfix = node.dfix.copy()
                dfix[:, g] += self.dist[:, cell]
                const = node.const + float(node.dfix[cell] @ self.v_gg[g])
                out.append(_Node(node.arcs, p + 1, counts, node.pool, layout, dfix, const))
        if end - p - 1 >= rem.sum() and (after >= rem).all():
            out.append(_Node(node.arcs, p + 1, node.counts, node.pool, node.layout, node.dfix, node.const))
        return out

    def _count_children(self, node: _Node) -> list[_Node]:
        """Every count vector of arc ``node.arcs`` that leaves a placeable remainder for the later arcs."""
        a = node.arcs
        lo, hi = self.bounds[a], self.bounds[a + 1]
        cap, cap_after = self.ok[:, lo:hi].sum(axis=1), self.ok[:, hi:].sum(axis=1)
        out = []
        for pick in product(*(range(min(int(r), int(c)) + 1) for r, c in zip(node.pool, cap, strict=True))):
            here = np.array(pick, dtype=int)
            rest = node.pool - here
            if here.sum() > hi - lo or (rest > cap_after).any() or rest.sum() > self.n_pos - hi:
                continue
            counts = node.counts.copy()
            counts[a] = here
            if a + 1 == self.n_arcs and not self.canonical_counts(counts):
                continue
            out.append(_Node(a + 1, node.depth, counts, rest, node.layout, node.dfix, node.const))
        return out

    def complete(self, node: _Node) -> bool:
        """True when every stack of ``node`` is placed (the undecided positions are left to compute)."""
        return node.arcs == self.n_arcs and not node.counts.any()

    def ctx_layout(self, node: _Node) -> np.ndarray:
        """``node.layout`` in the position order of :class:`solvers.placement_decomp._Context`."""
        lay = np.full(self.n_pos, EMPTY, dtype=np.int8)
        lay[self.to_ctx] = node.layout
        return lay


def solve_by_layout_bnb(problem: PlacementProblem, config: SolverConfig, *, solve_fixed: SolveFixed,
                        hint: dict[int, str] | None = None, t0: float | None = None) -> dict:
    """Run the layout branch and bound; return decision, bound, proven flag and counters.

    Parameters
    ----------
    problem : PlacementProblem
        One-cell chiplets; the restricted types (allowed cells a strict subset of the grid; HBM groups on the
        ring) are branched on, the other types are assigned.
    config : SolverConfig
        ``work_limit`` (deterministic: bounded nodes, :data:`solvers.config.RING_BNB_NODES_PER_UNIT` per unit;
        complete layouts, :data:`solvers.config.RING_ASSIGNMENTS_PER_UNIT`; per-layout MILPs what HiGHS
        reports), ``time_limit_s`` (wall cap), ``rel_gap`` (a node within it of the incumbent is pruned) and
        ``threads`` (HiGHS threads of the per-layout MILPs).
    solve_fixed : callable(problem, config, hint) -> Solution
        The exact solve of one complete layout (stacks fixed through ``allowed``), as in ``hbm-enum``.
    hint : dict[int, str], optional
        A feasible placement, polished by local search and used as the first incumbent.
    t0 : float, optional
        ``time.perf_counter()`` at which the wall cap started.

    Returns
    -------
    dict
        ``decision`` (best placement), ``bound`` (valid lower bound, bytes x hops), ``proven``, ``stopped`` (None,
        or the TerminationCondition of the limit), ``work_units``, ``nodes`` (partial layouts bounded),
        ``leaves`` (complete layouts scored), ``subproblems`` (layouts solved by the MILP).
    """
    budget = WorkBudget.of(config, t0)
    tree = _Tree(problem, solve_fixed)
    if not tree.restricted and not tree.free:
        return {"decision": {}, "bound": 0.0, "proven": True, "stopped": None, "work_units": 0.0, "nodes": 0,
                "leaves": 0, "subproblems": 0}
    best, best_dec = math.inf, None

    def offer(decision: dict[int, str]) -> None:
        nonlocal best, best_dec
        value = check_placement(problem, decision)[0]
        if value < best * (1 - 1e-12):
            polished = local_search_placement(problem, decision)
            p_value = check_placement(problem, polished)[0]
            best, best_dec = (p_value, polished) if p_value < value else (value, decision)

    for start in (hint, _greedy(problem)):
        if start is not None:
            offer(start)
    n_g = len(tree.restricted)
    root = _Node(0, 0, np.zeros((tree.n_arcs, n_g), dtype=int), tree.counts_g.copy(),
                 np.full(tree.n_pos, EMPTY, dtype=np.int8), np.zeros((tree.n, n_g)), 0.0)
    dived = _dive(tree, root, budget)
    if dived is not None:
        offer(dived)
    heap = [(tree.bound(root), 0, 0, root)]  # (bound, -level, serial, node): ties go to the deeper node
    serial, n_leaves, expanded, stopped = 0, 0, 0, None
    leaves: list[tuple[float, int, np.ndarray]] = []
    while heap and heap[0][0] < best * (1 - config.rel_gap):
        stopped = budget.stop()
        if stopped:
            break
        lb, _, _, node = heapq.heappop(heap)
        if tree.complete(node):
            n_leaves += 1
            lay = tree.ctx_layout(node)
            leaf_lb, decision = tree.ctx.assignment(lay)
            budget.spend(1 / RING_ASSIGNMENTS_PER_UNIT)
            offer(decision)
            if max(leaf_lb, lb) < best * (1 - config.rel_gap):
                leaves.append((max(leaf_lb, lb), n_leaves, lay))
            continue
        expanded += 1
        if expanded % DIVE_EVERY == 0:
            dived = _dive(tree, node, budget)
            if dived is not None:
                offer(dived)
        for child in tree.children(node):
            child_lb = max(tree.bound(child), lb)
            budget.spend(1 / RING_BNB_NODES_PER_UNIT)
            if child_lb < best * (1 - config.rel_gap):
                serial += 1
                heapq.heappush(heap, (child_lb, -(child.arcs + child.depth), serial, child))
    open_bounds = [item[0] for item in heap if item[0] < best * (1 - config.rel_gap)]
    sub_solved = 0
    leaves.sort(key=lambda item: item[:2])
    for k, (leaf_lb, _, lay) in enumerate(leaves):
        if leaf_lb >= best * (1 - config.rel_gap):
            break
        stopped = stopped or budget.stop()
        if stopped:
            open_bounds += [item[0] for item in leaves[k:]]
            break
        sol = tree.ctx.exact_layout(lay, budget.sub_config(config), best_dec)
        budget.spend(float(sol.extra.get("work_units", 0.0)))
        sub_solved += 1
        if sol.termination == TerminationCondition.TIME_LIMIT:
            stopped = TerminationCondition.TIME_LIMIT
        if sol.decision is not None:
            offer(sol.decision)
        open_bounds.append(max(leaf_lb, -math.inf if sol.bound is None else float(sol.bound)))
    open_bounds = [b for b in open_bounds if b < best * (1 - config.rel_gap)]
    bound = min([best, *open_bounds])
    proven = best_dec is not None and not open_bounds
    return {"decision": best_dec, "bound": bound, "proven": proven, "stopped": None if proven else stopped,
            "work_units": budget.used, "nodes": tree.nodes, "leaves": n_leaves, "subproblems": sub_solved}


def _dive(tree: _Tree, root: _Node, budget: WorkBudget, max_nodes: int = DIVE_NODES) -> dict[int, str] | None:
    """Depth first from ``root``, least-bound child first, to the first complete layout; return its assignment's
    placement (an incumbent guided by the bound), or None after ``max_nodes`` bounded nodes without one."""
    stack, spent = [root], 0
    while stack and spent < max_nodes:
        node = stack.pop()
        if tree.complete(node):
            budget.spend(1 / RING_ASSIGNMENTS_PER_UNIT)
            return tree.ctx.assignment(tree.ctx_layout(node))[1]
        kids = tree.children(node)
        spent += len(kids)
        budget.spend(len(kids) / RING_BNB_NODES_PER_UNIT)
        stack += sorted(kids, key=tree.bound, reverse=True)
    return None


def _greedy(problem: PlacementProblem) -> dict[int, str] | None:
    """HYDRA's greedy placement polished by swap local search, or None when the greedy gets stuck."""
    try:
        return local_search_placement(problem, hydra_greedy_placement(problem))
    except PlacementHeuristicError:
        return None
