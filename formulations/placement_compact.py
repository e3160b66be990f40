"""Compact linearization of the placement objective (Kaufman-Broeckx style), to compare with RLT-1.

Same sets, parameters and assignment constraints as :func:`formulations.placement.build_placement_milp`
(z[i, t] = 1 if cell i holds a chiplet of type t; cell capacity; type counts), but the quadratic objective
sum_{pairs} W[t, u] d(i, j) z[i, t] z[j, u] is linearized with one continuous variable per (i, t) instead of one
per product:

    w[i, t] >= sum_{(j, u) != (i, t)} c[i, t, j, u] z[j, u] - M[i, t] (1 - z[i, t]),   w >= 0,
    c[i, t, j, u] = W[t, u] d(i, j),   M[i, t] = the largest value the sum can take,
    minimize 1/2 sum_{i, t} w[i, t]

(each unordered pair is counted from both ends). At integer z, w[i, t] is the traffic cost of the chiplet on
cell i and the objective is HYDRA Eq. 2 exactly. The model has |cells| x |types| extra columns against
O(|cells|^2 |type pairs|) for RLT-1, so it builds in a fraction of the time, but its LP bound is weak: with
fractional z the big-M term lets every w drop to 0. ``benchmarks/bench_linearizations.py`` measures both.

Source: Kaufman and Broeckx (1978), "An algorithm for the quadratic assignment problem using Benders'
decomposition"; the per-(cell, type) aggregation follows chipdse's type-count variables (DESIGN.md item 2).
"""

from __future__ import annotations

from collections import defaultdict

import pyomo.environ as pyo

from chipdse.formulations.placement import (
    PlacementProblem,
    _assign_keys,
    active_types,
    add_cell_capacity_constraints,
    add_type_count_constraints,
    chiplet_distance,
    model_volumes,
    overlapping,
)


def build_placement_compact_milp(problem: PlacementProblem) -> pyo.ConcreteModel:
    """Build the compact (Kaufman-Broeckx) placement MILP.

    Returns
    -------
    pyomo ConcreteModel
        ``cell_type_assign[i, t]`` (binary), ``chiplet_cost[i, t]`` (>= 0, in ``volume_unit`` x hops), the
        constraints ``cell_capacity_ub``, ``type_count``, ``chiplet_cost_lb`` and objective ``traffic_cost``
        (same units as the RLT-1 model, so bounds compare directly). Decode with
        :func:`formulations.placement.decode_placement_milp`.
    """
    vol = model_volumes(problem)
    m = pyo.ConcreteModel(name=f"{problem.name} (compact)")
    keys = _assign_keys(problem)
    m.cells = pyo.Set(initialize=range(problem.rows * problem.cols), ordered=True)
    m.chiplet_types = pyo.Set(initialize=active_types(problem), ordered=True)
    m.cell_type = pyo.Set(dimen=2, ordered=True, initialize=keys)
    m.cell_type_assign = pyo.Var(m.cell_type, domain=pyo.Binary)
    add_cell_capacity_constraints(m, problem)
    add_type_count_constraints(m, problem)
    m.volume_unit = pyo.Param(initialize=max(vol.values(), default=1.0), domain=pyo.PositiveReals)
    unit = pyo.value(m.volume_unit)
    partners: dict[tuple[int, str], list[tuple[float, tuple[int, str]]]] = defaultdict(list)
    for i, t in keys:
        for j, u in keys:
            if (t, u) in vol and not overlapping(problem, i, t, j, u):
                partners[i, t].append((vol[t, u] / unit * chiplet_distance(problem, i, t, j, u), (j, u)))
    big_m = {}
    for (i, t), terms in partners.items():  # the n_u costliest cells of each partner type (z[i, t] may be 0)
        by_type: dict[str, list[float]] = defaultdict(list)
        for c, (_, u) in terms:
            by_type[u].append(c)
        big_m[i, t] = sum(sum(sorted(cs, reverse=True)[:problem.counts[u]]) for u, cs in by_type.items())
    m.costed = pyo.Set(dimen=2, ordered=True, initialize=sorted(partners))
    m.chiplet_cost = pyo.Var(m.costed, domain=pyo.NonNegativeReals)
    z = m.cell_type_assign
    m.chiplet_cost_lb = pyo.Constraint(
        m.costed, rule=lambda m, i, t: m.chiplet_cost[i, t] >= sum(c * z[k] for c, k in partners[i, t])
        - big_m[i, t] * (1 - z[i, t]))
    m.compact_partners, m.compact_big_m = dict(partners), big_m  # for set_compact_start
    m.traffic_cost = pyo.Objective(expr=0.5 * sum(m.chiplet_cost[k] for k in m.costed), sense=pyo.minimize)
    return m


def set_compact_start(m: pyo.ConcreteModel, decision: dict[int, str]) -> None:
    """Set z from ``decision`` and each w to its chiplet's cost (a feasible MIP start)."""
    z = m.cell_type_assign
    for key in m.cell_type:
        z[key].set_value(1 if decision.get(key[0]) == key[1] else 0)
    for i, t in m.costed:
        rhs = sum(c * z[k].value for c, k in m.compact_partners[i, t]) - m.compact_big_m[i, t] * (1 - z[i, t].value)
        m.chiplet_cost[i, t].set_value(max(0.0, rhs))
