"""Chiplet placement on an interposer grid (HYDRA Eq. 2, extended): problem type, checker, exact models."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import reduce
from itertools import combinations
from numbers import Integral

import pyomo.environ as pyo
from ortools.sat.python import cp_model

from chipdse.core.errors import SpecError

HBM_PREFIX = "hbm:"
"""Types whose name starts with this are HBM groups (placed on ring cells by the heuristics)."""
CPSAT_MAX_WEIGHT = 10**9
"""Largest integer pair weight in the CP-SAT objective (keeps the objective well inside int64)."""
FOOTPRINTS = ((1, 1), (1, 2), (2, 1), (2, 2))
"""Chiplet footprints (rows, cols of grid cells) the placement models support."""
PairKey = tuple[int, str, int, str]
"""Key (i, t, j, u), i < j, of the product z[i, t] * z[j, u]."""


@dataclass(frozen=True)
class PlacementProblem:
    """Assign chiplets (by type) to the cells of a rows x cols interposer grid.

    Cells are numbered ``r * cols + c``. Chiplets of one type are interchangeable, so a placement is a
    map cell -> type name; every type t must occupy exactly ``counts[t]`` cells, each cell holds at most one
    chiplet, and a type listed in ``allowed`` may only use those cells (HBM groups: ring cells).

    Objective (HYDRA Eq. 2 generalized to all traffic pairs): the sum over unordered pairs of placed
    chiplets {p, q} of ``pair_volume[type(p), type(q)] * manhattan(cell(p), cell(q))``.

    Attributes
    ----------
    rows, cols : int
        Grid size in cells.
    counts : dict[str, int]
        Chiplets per type; HBM groups are types too (e.g. ``"hbm:attention"``).
    allowed : dict[str, tuple[int, ...]]
        Allowed cells per type; a type not listed may use every cell.
    pair_volume : dict[tuple[str, str], float]
        Traffic volume in bytes between ONE chiplet of the first type and ONE of the second, per unit of
        work (e.g. per decode step); keys are symmetric (either order may be given, not both).
    ring_cells : tuple[int, ...]
        The outer ring of the grid, in clockwise order from cell 0 (used by heuristics and reports).
    name : str
        Label for reports.
    """

    rows: int
    cols: int
    counts: dict[str, int]
    pair_volume: dict[tuple[str, str], float]
    allowed: dict[str, tuple[int, ...]] = field(default_factory=dict)
    ring_cells: tuple[int, ...] = ()
    name: str = "placement"
    distance: tuple[tuple[float, ...], ...] | None = None
    """Cell-to-cell distance matrix replacing the Manhattan hops (QAP mode: the QAPLIB distance matrix,
    symmetrized; ``formulations.qap``). Must be symmetric with a zero diagonal."""
    model_volume_floor: float = 0.0
    footprints: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Cells a chiplet of the type spans, (rows, cols) from its anchor (top-left) cell, which is the cell the
    decision names: one of :data:`FOOTPRINTS`, (1, 1) when not listed. Every covered cell must be inside the grid,
    allowed for the type and covered by no other chiplet; hops between two chiplets are Manhattan hops between
    their footprint centers (half cells for 2-cell footprints). Grid distances only (not with ``distance``)."""
    """Pairs whose volume is below this fraction of the largest are left out of the exact models. The
    objective is still evaluated in full by the checker, and the bound stays valid (volumes are >= 0, so the
    reduced objective is a lower bound of the full one); only the proof may need to close a larger gap."""


# --- grid helpers -------------------------------------------------------------------------------------------


def cell_row_col(problem: PlacementProblem, cell: int) -> tuple[int, int]:
    """Return the (row, col) of ``cell`` (cells are numbered ``row * cols + col``)."""
    return divmod(cell, problem.cols)


def manhattan(problem: PlacementProblem, i: int, j: int) -> float:
    """Return the distance between cells ``i`` and ``j``: Manhattan hops on the grid, or ``problem.distance``."""
    if problem.distance is not None:
        return problem.distance[i][j]
    (ri, ci), (rj, cj) = divmod(i, problem.cols), divmod(j, problem.cols)
    return abs(ri - rj) + abs(ci - cj)


def grid_ring_cells(rows: int, cols: int) -> tuple[int, ...]:
    """Return the outer ring of a rows x cols grid, clockwise from cell 0."""
    if rows == 1 or cols == 1:
        return tuple(range(rows * cols))
    top = list(range(cols))
    right = [r * cols + cols - 1 for r in range(1, rows)]
    bottom = [(rows - 1) * cols + c for c in range(cols - 2, -1, -1)]
    left = [r * cols for r in range(rows - 2, 0, -1)]
    return tuple(top + right + bottom + left)


def ring_of(problem: PlacementProblem) -> tuple[int, ...]:
    """Return ``problem.ring_cells``, or the grid's outer ring when none is given."""
    return problem.ring_cells or grid_ring_cells(problem.rows, problem.cols)


def allowed_cells(problem: PlacementProblem, chiplet_type: str) -> tuple[int, ...]:
    """Return the sorted cells ``chiplet_type`` may use (every cell when it is not in ``allowed``): for a
    multi-cell footprint, the anchor cells whose whole footprint is inside the grid and allowed."""
    everywhere = tuple(range(problem.rows * problem.cols))
    ok = set(problem.allowed[chiplet_type]) if chiplet_type in problem.allowed else set(everywhere)
    if footprint(problem, chiplet_type) == (1, 1):
        return tuple(sorted(ok)) if chiplet_type in problem.allowed else everywhere
    return tuple(i for i in everywhere if (cells := covered_cells(problem, i, chiplet_type)) and ok.issuperset(cells))


def footprint(problem: PlacementProblem, chiplet_type: str) -> tuple[int, int]:
    """Return the (rows, cols) of grid cells a chiplet of ``chiplet_type`` spans ((1, 1) unless listed)."""
    return tuple(problem.footprints.get(chiplet_type, (1, 1)))  # type: ignore[return-value]


def has_multicell(problem: PlacementProblem) -> bool:
    """True when some type with chiplets spans more than one cell."""
    return any(footprint(problem, t) != (1, 1) for t in active_types(problem))


def covered_cells(problem: PlacementProblem, anchor: int, chiplet_type: str) -> tuple[int, ...]:
    """Return the cells a chiplet of ``chiplet_type`` anchored (top-left) at ``anchor`` covers, or ``()`` when its
    footprint leaves the grid."""
    (r, c), (h, w) = divmod(anchor, problem.cols), footprint(problem, chiplet_type)
    if r + h > problem.rows or c + w > problem.cols:
        return ()
    return tuple((r + dr) * problem.cols + c + dc for dr in range(h) for dc in range(w))


def chiplet_distance(problem: PlacementProblem, i: int, t: str, j: int, u: str) -> float:
    """Return the hops between a chiplet of type ``t`` anchored at cell ``i`` and one of type ``u`` at ``j``:
    Manhattan hops between footprint centers (:func:`manhattan` for one-cell chiplets)."""
    if not problem.footprints:
        return manhattan(problem, i, j)
    (ri, ci), (rj, cj) = divmod(i, problem.cols), divmod(j, problem.cols)
    (hi, wi), (hj, wj) = footprint(problem, t), footprint(problem, u)
    return abs(ri - rj + (hi - hj) / 2) + abs(ci - cj + (wi - wj) / 2)


def overlapping(problem: PlacementProblem, i: int, t: str, j: int, u: str) -> bool:
    """True when chiplets of type ``t`` at anchor ``i`` and ``u`` at ``j`` would cover a common cell."""
    return i == j or bool(set(covered_cells(problem, i, t)) & set(covered_cells(problem, j, u)))


def active_types(problem: PlacementProblem) -> list[str]:
    """Return the types with a positive count, in the order of ``problem.counts``."""
    return [t for t, c in problem.counts.items() if c > 0]


def volume_table(problem: PlacementProblem) -> dict[tuple[str, str], float]:
    """Validate ``problem`` and return its pair volumes in both key orders (bytes per chiplet pair).

    Raises
    ------
    SpecError
        On a non-positive grid size, a negative count, an allowed / ring cell outside the grid, a volume key
        naming an unknown type, a negative or non-finite volume, or both key orders with different values.
    """
    src, n = f"placement problem {problem.name!r}", problem.rows * problem.cols
    if problem.rows < 1 or problem.cols < 1:
        raise SpecError(src, "rows/cols", f"a grid of at least 1x1, got {problem.rows}x{problem.cols}")
    for t, c in problem.counts.items():
        if not isinstance(c, Integral) or c < 0:
            raise SpecError(src, f"counts.{t}", f"a non-negative integer, got {c!r}")
    for t, cells in {**problem.allowed, "ring_cells": problem.ring_cells}.items():
        bad = [c for c in cells if not isinstance(c, Integral) or not 0 <= c < n]
        if bad:
            where = f"allowed.{t}" if t != "ring_cells" else t
            raise SpecError(src, where, f"cells in 0..{n - 1}, got {bad}")
    table: dict[tuple[str, str], float] = {}
    for (t, u), v in problem.pair_volume.items():
        if t not in problem.counts or u not in problem.counts:
            raise SpecError(src, f"pair_volume[{t}, {u}]", f"types among {sorted(problem.counts)}")
        if not math.isfinite(v) or v < 0:
            raise SpecError(src, f"pair_volume[{t}, {u}]", f"a finite volume >= 0 bytes, got {v!r}")
        if table.get((t, u), v) != v:
            msg = f"one value for both orders, got {table[t, u]} and {v}"
            raise SpecError(src, f"pair_volume[{t}, {u}]", msg)
        table[t, u] = table[u, t] = float(v)
    for t, shape in problem.footprints.items():
        if t not in problem.counts or tuple(shape) not in FOOTPRINTS:
            raise SpecError(src, f"footprints.{t}", f"a type among {sorted(problem.counts)} with a footprint "
                            f"among {FOOTPRINTS}, got {shape!r}")
        if tuple(shape) != (1, 1) and problem.distance is not None:
            raise SpecError(src, f"footprints.{t}", "one-cell chiplets when a distance matrix is given")
    return {k: v for k, v in table.items() if v > 0}


def model_volumes(problem: PlacementProblem) -> dict[tuple[str, str], float]:
    """Return the volumes the exact models use: :func:`volume_table` without pairs below
    ``model_volume_floor`` times the largest volume."""
    vol = volume_table(problem)
    if not vol or problem.model_volume_floor <= 0:
        return vol
    floor = problem.model_volume_floor * max(vol.values())
    return {k: v for k, v in vol.items() if v >= floor}


# --- feasibility and checker --------------------------------------------------------------------------------


def placement_infeasibility(problem: PlacementProblem) -> str | None:
    """Return why no placement exists (the violated capacity), or ``None`` when one exists.

    Notes
    -----
    Placement is a transportation problem (types with demand ``counts[t]``, cells with capacity 1), so by
    Hall's theorem it is feasible iff every set S of types fits its allowed cells: ``sum_{t in S} counts[t]
    <= |union_{t in S} allowed(t)|``. Sets containing an unrestricted type reduce to the total-cells check;
    all sets of restricted types are checked when there are at most 12 of them (otherwise sets of <= 2). With
    multi-cell footprints (their types count as restricted, to their anchor cells) the checks are necessary only:
    the covered area must fit the grid, and an instance that passes may still have no placement.

    Returns
    -------
    str or None
        E.g. ``"hbm:attention needs 9 ring cells, 8 are free"`` or ``"26 chiplets need 26 cells, the grid
        has 25"``.
    """
    volume_table(problem)
    n, total = problem.rows * problem.cols, sum(problem.counts.values())
    area = sum(c * math.prod(footprint(problem, t)) for t, c in problem.counts.items())
    if area > n:
        return f"{total} chiplets need {area} cells, the grid has {n}"
    restricted = [t for t in active_types(problem) if t in problem.allowed or footprint(problem, t) != (1, 1)]
    ring = set(ring_of(problem))
    max_size = len(restricted) if len(restricted) <= 12 else 2
    for size in range(1, max_size + 1):
        for subset in combinations(restricted, size):
            cells = set().union(*(allowed_cells(problem, t) for t in subset))
            need = sum(problem.counts[t] for t in subset)
            if need > len(cells):
                kind = "ring cells" if cells == ring else "allowed cells"
                verb = "needs" if size == 1 else "need"
                return f"{' + '.join(subset)} {verb} {need} {kind}, {len(cells)} are free"
    return None


def check_placement(problem: PlacementProblem, decision: dict[int, str]) -> tuple[float, list[str]]:
    """Recompute the objective of ``decision`` and list the constraints it violates.

    Parameters
    ----------
    problem : PlacementProblem
    decision : dict[int, str]
        Cell -> type; cells not listed are empty.

    Returns
    -------
    (float, list[str])
        Objective in bytes x hops (sum over unordered pairs of placed chiplets of volume x Manhattan
        distance between footprint centers; entries with an unknown type or an out-of-range cell are left out)
        and one message per violation: cell out of range, unknown type, footprint leaving the grid, type on a
        disallowed cell, a cell covered twice, wrong count per type.

    References
    ----------
    HYDRA Eq. 2 (extended to compute <-> compute traffic).
    """
    vol, n = volume_table(problem), problem.rows * problem.cols
    violations: list[str] = []
    placed: list[tuple[int, str]] = []
    cover: dict[int, int] = {}  # cell -> anchor of the chiplet covering it
    for cell, t in decision.items():
        if not isinstance(cell, Integral) or isinstance(cell, bool) or not 0 <= cell < n:
            violations.append(f"cell {cell!r} is outside the {problem.rows}x{problem.cols} grid")
        elif t not in problem.counts:
            violations.append(f"cell {cell} holds unknown type {t!r}")
        else:
            cells = covered_cells(problem, int(cell), t)
            if not cells:
                violations.append(f"cell {cell} holds {t}, whose {footprint(problem, t)} footprint leaves the grid")
            elif t in problem.allowed and not set(problem.allowed[t]).issuperset(cells):
                ok = allowed_cells(problem, t)
                violations.append(f"cell {cell} holds {t}, which may only use cells {ok}")
            for c in cells:
                if c in cover:
                    violations.append(f"cell {c} is covered by the chiplets at cells {cover[c]} and {cell}")
                cover[c] = int(cell)
            placed.append((int(cell), t))
    got = Counter(t for _, t in placed)
    violations += [f"{t}: {got[t]} placed, {c} required" for t, c in problem.counts.items() if got[t] != c]
    placed.sort()
    terms = (vol.get((t, u), 0.0) * chiplet_distance(problem, i, t, j, u)
             for (i, t), (j, u) in combinations(placed, 2))
    return math.fsum(terms), violations


# --- MILP (Pyomo) -------------------------------------------------------------------------------------------


def _assign_keys(problem: PlacementProblem) -> list[tuple[int, str]]:
    """Return the keys (i, t) of z: every active type t with each of its allowed cells i."""
    return [(i, t) for t in active_types(problem) for i in allowed_cells(problem, t)]


def _pair_keys(problem: PlacementProblem, vol: dict[tuple[str, str], float]) -> list[PairKey]:
    """Return keys (i, t, j, u), i < j, of products z[i,t] * z[j,u] with nonzero volume between t and u."""
    assign = _assign_keys(problem)
    multi = has_multicell(problem)
    return [(i, t, j, u) for i, t in assign for j, u in assign
            if i < j and (t, u) in vol and not (multi and overlapping(problem, i, t, j, u))]


def _pair_groups(keys: list[PairKey]) -> tuple[dict, dict]:
    """Group product keys by (i, t, u) (RLT count sums) and by (i, t, j) (RLT cell-capacity sums)."""
    by_type: dict[tuple[int, str, str], list] = defaultdict(list)
    by_cell: dict[tuple[int, str, int], list] = defaultdict(list)
    for key in keys:
        i, t, j, u = key
        by_type[i, t, u].append(key)
        by_type[j, u, t].append(key)
        by_cell[i, t, j].append(key)
        by_cell[j, u, i].append(key)
    return by_type, by_cell


def build_placement_milp(problem: PlacementProblem) -> pyo.ConcreteModel:
    """Build the placement MILP: binary z[i, t], products y linearized by a level-1 RLT.

    Parameters
    ----------
    problem : PlacementProblem
        A valid problem (see :func:`volume_table`).

    Returns
    -------
    pyomo ConcreteModel
        Variables ``cell_type_assign[i, t]`` (cell i holds a chiplet of type t; disallowed pairs left out)
        and ``cell_pair_assign[i, t, j, u]`` for i < j (= z[i,t] * z[j,u], only for nonzero volume), the
        constraint families below and objective ``traffic_cost`` in units of ``volume_unit`` (a Param: the
        largest volume, in bytes) x hops, so that cost coefficients are O(1) for the LP solver.

    References
    ----------
    HYDRA Eq. 2; Adams and Johnson (1994), level-1 RLT for the quadratic assignment problem.
    """
    vol = model_volumes(problem)
    m = pyo.ConcreteModel(name=problem.name)
    types = active_types(problem)
    m.cells = pyo.Set(initialize=range(problem.rows * problem.cols), ordered=True)
    m.chiplet_types = pyo.Set(initialize=types, ordered=True)
    m.cell_type = pyo.Set(dimen=2, ordered=True, initialize=_assign_keys(problem))
    m.cell_pair = pyo.Set(dimen=4, ordered=True, initialize=_pair_keys(problem, vol))
    m.cell_type_assign = pyo.Var(m.cell_type, domain=pyo.Binary)
    m.cell_pair_assign = pyo.Var(m.cell_pair, domain=pyo.NonNegativeReals, bounds=(0, 1))
    add_cell_capacity_constraints(m, problem)
    add_type_count_constraints(m, problem)
    add_pair_count_constraints(m, problem)
    add_pair_capacity_constraints(m, problem)
    y = m.cell_pair_assign
    m.volume_unit = pyo.Param(initialize=max(vol.values(), default=1.0), domain=pyo.PositiveReals)
    unit = pyo.value(m.volume_unit)
    cost = sum(vol[t, u] / unit * chiplet_distance(problem, i, t, j, u) * y[i, t, j, u] for i, t, j, u in m.cell_pair)
    m.traffic_cost = pyo.Objective(expr=cost, sense=pyo.minimize)
    return m


def add_cell_capacity_constraints(m: pyo.ConcreteModel, problem: PlacementProblem) -> None:
    """Add ``sum_t z[i, t] <= 1`` for every cell i: a cell holds at most one chiplet (HYDRA Sec. IV-A); with
    multi-cell footprints the sum runs over every (anchor, type) whose footprint covers i."""
    by_cell: dict[int, list] = defaultdict(list)
    for i, t in m.cell_type:
        for c in covered_cells(problem, i, t):
            by_cell[c].append((i, t))
    if not by_cell:
        return
    m.cell_capacity_ub = pyo.Constraint(
        sorted(by_cell), rule=lambda m, i: sum(m.cell_type_assign[k] for k in by_cell[i]) <= 1
    )


def add_type_count_constraints(m: pyo.ConcreteModel, problem: PlacementProblem) -> None:
    """Add ``sum_{i in allowed(t)} z[i, t] = counts[t]`` for every type t (the chip's composition)."""
    if not m.chiplet_types:
        return

    def type_count(m: pyo.ConcreteModel, t: str) -> pyo.Expression:
        return sum(m.cell_type_assign[i, t] for i in allowed_cells(problem, t)) == problem.counts[t]

    m.type_count = pyo.Constraint(m.chiplet_types, rule=type_count)


def add_pair_count_constraints(m: pyo.ConcreteModel, problem: PlacementProblem) -> None:
    """Add the RLT count equalities ``sum_{j != i} y[i,t,j,u] = (counts[u] - [t = u]) z[i,t]``.

    Obtained by multiplying type u's count constraint by z[i, t] (z[i,t]^2 = z[i,t]); one per (i, t) and
    each u with nonzero volume to t. With y >= 0 they make y exact at integer z and give a strong LP bound
    (Adams and Johnson 1994).
    """
    by_type, _ = _pair_groups(list(m.cell_pair))
    index = [(i, t, u) for i, t in m.cell_type for u in m.chiplet_types if (i, t, u) in by_type]
    if not index:
        return

    def pair_count(m: pyo.ConcreteModel, i: int, t: str, u: str) -> pyo.Expression:
        lhs = sum(m.cell_pair_assign[k] for k in by_type[i, t, u])
        return lhs == (problem.counts[u] - (t == u)) * m.cell_type_assign[i, t]

    m.pair_count = pyo.Constraint(index, rule=pair_count)


def add_pair_capacity_constraints(m: pyo.ConcreteModel, problem: PlacementProblem) -> None:
    """Add the RLT capacity cuts ``sum_u y[i,t,j,u] <= z[i,t]`` for every (i, t) and cell j != i.

    Obtained by multiplying cell j's capacity ``sum_u z[j,u] <= 1`` by z[i, t]; they imply y <= z.
    """
    _, by_cell = _pair_groups(list(m.cell_pair))
    if not by_cell:
        return

    def pair_capacity_ub(m: pyo.ConcreteModel, i: int, t: str, j: int) -> pyo.Expression:
        return sum(m.cell_pair_assign[k] for k in by_cell[i, t, j]) <= m.cell_type_assign[i, t]

    m.pair_capacity_ub = pyo.Constraint(sorted(by_cell), rule=pair_capacity_ub)


def decode_placement_milp(model: pyo.ConcreteModel) -> dict[int, str]:
    """Return the placement (cell -> type) held in the loaded values of ``model``."""
    z = model.cell_type_assign
    return {int(i): t for i, t in sorted(model.cell_type) if (z[i, t].value or 0.0) > 0.5}


# --- CP-SAT -------------------------------------------------------------------------------------------------


@dataclass
class PlacementCpsatVars:
    """Variables and objective scaling of a CP-SAT placement model.

    Attributes
    ----------
    assign : dict[tuple[int, str], cp_model.IntVar]
        z[i, t]: cell i holds a chiplet of type t.
    pair : dict[tuple[int, str, int, str], cp_model.IntVar]
        y[i, t, j, u] = z[i, t] AND z[j, u], i < j, nonzero volume only.
    volume_unit : float
        Bytes per unit of integer weight: ``weight[t, u] = round(volume[t, u] / volume_unit)``.
    rounding_error : float
        Upper bound, in bytes x hops, on ``|objective - volume_unit * scaled objective|`` over all
        placements (0 when every volume is an integer multiple of ``volume_unit``).
    """

    assign: dict[tuple[int, str], cp_model.IntVar]
    pair: dict[PairKey, cp_model.IntVar]
    volume_unit: float
    rounding_error: float


def cpsat_weights(problem: PlacementProblem) -> tuple[float, dict[tuple[str, str], int], float]:
    """Scale the pair volumes to integers for CP-SAT.

    If every volume is an integer (bytes) and ``max / gcd <= CPSAT_MAX_WEIGHT``, the unit is their gcd and
    the scaling is exact. Otherwise the unit is ``min_volume / 1e6`` (six digits below the smallest volume),
    raised until the largest weight is at most ``CPSAT_MAX_WEIGHT``, and weights are rounded.

    Returns
    -------
    (float, dict[tuple[str, str], int], float)
        ``volume_unit`` in bytes, integer weight per type pair (both orders), and the rounding error bound
        ``sum_{t <= u} |volume - unit * weight| * pairs(t, u) * max_distance`` in bytes x hops.
    """
    vol = model_volumes(problem)
    if not vol:
        return 1.0, {}, 0.0
    values = sorted(set(vol.values()))
    unit = float(reduce(math.gcd, (int(v) for v in values))) if all(v.is_integer() for v in values) else 0.0
    if unit == 0.0 or values[-1] / unit > CPSAT_MAX_WEIGHT:
        unit = max(values[0] / 1e6, values[-1] / CPSAT_MAX_WEIGHT)
    weights = {k: round(v / unit) for k, v in vol.items()}
    c = problem.counts
    max_d = problem.rows + problem.cols - 2 if problem.distance is None else max(max(r) for r in problem.distance)
    error = math.fsum(
        abs(vol[t, u] - unit * weights[t, u]) * (c[t] * c[u] if t != u else c[t] * (c[t] - 1) // 2) * max_d
        for t, u in vol
        if t <= u
    )
    return unit, weights, error


def build_placement_cpsat(problem: PlacementProblem) -> tuple[cp_model.CpModel, PlacementCpsatVars]:
    """Build the placement CP-SAT model: booleans z[i, t] and y = z AND z, with the RLT count sums.

    Returns
    -------
    (CpModel, PlacementCpsatVars)
        The model (objective in integer units of ``vars.volume_unit`` bytes x hops, see
        :func:`cpsat_weights`; halved when some footprint spans two or four cells, the objective then counting
        half hops) and its variables.

    References
    ----------
    HYDRA Eq. 2; the RLT sums are those of :func:`add_pair_count_constraints`.
    """
    unit, weights, error = cpsat_weights(problem)
    vol = model_volumes(problem)
    model = cp_model.CpModel()
    z = {(i, t): model.new_bool_var(f"assign_{i}_{t}") for i, t in _assign_keys(problem)}
    full = sum(c * math.prod(footprint(problem, t)) for t, c in problem.counts.items()) == problem.rows * problem.cols
    covering: dict[int, list] = defaultdict(list)
    for (i, t), v in z.items():
        for c in covered_cells(problem, i, t):
            covering[c].append(v)
    for i in range(problem.rows * problem.cols):
        at_cell = covering[i]
        if at_cell:
            (model.add_exactly_one if full else model.add_at_most_one)(at_cell)
    for t in active_types(problem):
        model.add(sum(z[i, t] for i in allowed_cells(problem, t)) == problem.counts[t])
    keys = _pair_keys(problem, vol)
    y = {key: model.new_bool_var("pair_{}_{}_{}_{}".format(*key)) for key in keys}
    for (i, t, j, u), v in y.items():
        model.add_bool_or([z[i, t].Not(), z[j, u].Not(), v])
        model.add_implication(v, z[i, t])
        model.add_implication(v, z[j, u])
    by_type, _ = _pair_groups(keys)
    for (i, t, u), group in by_type.items():
        model.add(sum(y[k] for k in group) == (problem.counts[u] - (t == u)) * z[i, t])
    scale = 2 if has_multicell(problem) else 1  # footprint centers are half cells apart: count half hops

    def hops(i: int, t: str, j: int, u: str) -> float:
        return round(2 * chiplet_distance(problem, i, t, j, u)) if scale == 2 else manhattan(problem, i, j)

    model.minimize(sum(weights[t, u] * hops(i, t, j, u) * y[i, t, j, u] for i, t, j, u in keys))
    return model, PlacementCpsatVars(z, y, unit / scale, error)


def hint_placement_cpsat(model: cp_model.CpModel, cp_vars: PlacementCpsatVars, decision: dict[int, str]) -> None:
    """Add ``decision`` (cell -> type) as a complete hint for every z and y of the model."""
    for (i, t), v in cp_vars.assign.items():
        model.add_hint(v, decision.get(i) == t)
    for (i, t, j, u), v in cp_vars.pair.items():
        model.add_hint(v, decision.get(i) == t and decision.get(j) == u)


def decode_placement_cpsat(solver: cp_model.CpSolver, cp_vars: PlacementCpsatVars) -> dict[int, str]:
    """Return the placement (cell -> type) of the solver's incumbent."""
    cells = sorted(cp_vars.assign.items(), key=lambda kv: kv[0])
    return {i: t for (i, t), v in cells if solver.boolean_value(v)}


def set_placement_start(m: pyo.ConcreteModel, decision: dict[int, str]) -> None:
    """Set the MILP's variables to a feasible placement (a MIP start): z from the decision, y = z_i * z_j.

    Parameters
    ----------
    m : ConcreteModel
        Built by :func:`build_placement_milp`.
    decision : dict[int, str]
        A placement that passes :func:`check_placement`.
    """
    for key in m.cell_type:
        m.cell_type_assign[key].set_value(1 if decision.get(key[0]) == key[1] else 0)
    for i, t, j, u in m.cell_pair:
        m.cell_pair_assign[i, t, j, u].set_value(1 if decision.get(i) == t and decision.get(j) == u else 0)
