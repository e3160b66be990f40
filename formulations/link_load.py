"""Maximum NoI link load of a placement under XY routing: checker, exact MILP, brute force (DESIGN.md item 2).

Traffic model: the volume V of an unordered pair of placed chiplets (``PlacementProblem.pair_volume``) flows
half each way, V/2 along the XY route from the first to the second and V/2 back along the XY route the other
way (columns first, then rows, as the simulator's NoI routes). The load of a directed mesh link is the sum of
the flows crossing it; the objective is the largest link load (bytes per unit of work), alone or weighted with
the hop-weighted volume of HYDRA Eq. 2: ``max_link + hop_weight x sum(V x hops)``.

The MILP reuses the placement model's RLT-1 products y[i,t,j,u] = z[i,t] z[j,u]: each link load is linear in
y, so ``max_link >= load(e)`` for every link e makes the min-max exact at integer z, and the RLT equalities
keep the LP bound tight.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import pyomo.environ as pyo

from chipdse.core.grid import Link, xy_route
from chipdse.formulations.placement import (
    PlacementProblem,
    active_types,
    allowed_cells,
    build_placement_milp,
    check_placement,
    model_volumes,
    volume_table,
)


def pair_links(problem: PlacementProblem, i: int, j: int) -> dict[Link, float]:
    """Fraction of a pair's volume on each directed link when its chiplets sit on cells i and j (0.5 per way)."""
    out: dict[Link, float] = defaultdict(float)
    for link in xy_route(problem.cols, i, j):
        out[link] += 0.5
    for link in xy_route(problem.cols, j, i):
        out[link] += 0.5
    return out


def link_loads(problem: PlacementProblem, decision: dict[int, str]) -> dict[Link, float]:
    """Load of every directed link that carries traffic, bytes per unit of work (the checker)."""
    vol = volume_table(problem)
    placed = sorted((int(c), t) for c, t in decision.items())
    loads: dict[Link, float] = defaultdict(float)
    for (i, t), (j, u) in itertools.combinations(placed, 2):
        v = vol.get((t, u), 0.0)
        if v:
            for link, share in pair_links(problem, i, j).items():
                loads[link] += share * v
    return dict(loads)


def max_link_load(problem: PlacementProblem, decision: dict[int, str]) -> float:
    """Largest directed link load of ``decision`` (0 without traffic)."""
    return max(link_loads(problem, decision).values(), default=0.0)


def objective_value(problem: PlacementProblem, decision: dict[int, str], hop_weight: float = 0.0) -> float:
    """``max_link + hop_weight x hop-weighted volume`` of a decision (the exact model's objective)."""
    hops = check_placement(problem, decision)[0] if hop_weight else 0.0
    return max_link_load(problem, decision) + hop_weight * hops


def build_max_link_milp(problem: PlacementProblem, hop_weight: float = 0.0,
                        hop_limit: float | None = None) -> pyo.ConcreteModel:
    """The placement RLT MILP with the min-max link-load objective (plus ``hop_weight`` x Eq. 2).

    ``hop_limit`` (bytes x hops) adds Eq. 2 <= hop_limit: with the proven Eq. 2 optimum it makes the pair
    lexicographic (least hop-weighted volume first, then the least busy link among those placements). Give it
    only for problems without a ``model_volume_floor``, so that the constraint covers every volume.

    Returns
    -------
    pyomo ConcreteModel
        :func:`formulations.placement.build_placement_milp`'s model with ``max_link`` (>= 0, in units of
        ``volume_unit``), one constraint ``link_load[e]`` per directed link, and objective ``link_cost``.

    References
    ----------
    HYDRA Eq. 2 (hop-weighted volume); XY routing as in HYDRA's NoI model; Adams and Johnson (1994).
    """
    m = build_placement_milp(problem)
    vol = model_volumes(problem)
    unit = pyo.value(m.volume_unit)
    terms: dict[Link, list] = defaultdict(list)
    for i, t, j, u in m.cell_pair:
        for link, share in pair_links(problem, i, j).items():
            terms[link].append((share * vol[t, u] / unit, (i, t, j, u)))
    m.max_link = pyo.Var(domain=pyo.NonNegativeReals)
    m.links = pyo.Set(initialize=sorted(terms), dimen=2, ordered=True)
    m.link_load = pyo.Constraint(
        m.links, rule=lambda m, a, b: m.max_link >= sum(c * m.cell_pair_assign[k] for c, k in terms[a, b]))
    hop_expr = m.traffic_cost.expr
    m.traffic_cost.deactivate()
    if hop_limit is not None:
        m.hop_limit = pyo.Constraint(expr=hop_expr <= hop_limit / unit)
    m.link_cost = pyo.Objective(expr=m.max_link + hop_weight * hop_expr, sense=pyo.minimize)
    return m


def brute_force_max_link(problem: PlacementProblem, hop_weight: float = 0.0, max_placements: int = 500_000,
                         hop_limit: float | None = None) -> tuple[dict[int, str], float]:
    """Enumerate every placement (tiny instances) and return one minimizing the objective, with its value.

    Raises
    ------
    ValueError
        More than ``max_placements`` placements to enumerate.
    """
    types = active_types(problem)
    items = [t for t in types for _ in range(problem.counts[t])]
    cells = sorted(set().union(*(allowed_cells(problem, t) for t in types))) if types else []
    count = math.perm(len(cells), len(items))
    if count > max_placements:
        msg = f"brute force would enumerate {count} placements, more than {max_placements}"
        raise ValueError(msg)
    best: tuple[float, dict[int, str]] = (math.inf, {})
    seen = set()
    for chosen in itertools.permutations(cells, len(items)):
        decision = dict(zip(chosen, items, strict=True))
        key = tuple(sorted(decision.items()))
        if key in seen or any(t in problem.allowed and c not in problem.allowed[t] for c, t in decision.items()):
            continue
        seen.add(key)
        if hop_limit is not None and check_placement(problem, decision)[0] > hop_limit * (1 + 1e-9):
            continue
        value = objective_value(problem, decision, hop_weight)
        if value < best[0]:
            best = (value, decision)
    return best[1], best[0]
