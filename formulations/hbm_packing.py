"""Per-stack packing of an HBM partition: which stack of its group holds each block's weights and KV / state.

HYDRA Eq. 1 treats a group's N_g stacks as one pool: r_g = floor((N_g C - W_g) / S_g). Real stacks are separate
bins: a block's weights and its per-request KV cache or SSM state live in one stack. With x[b, s] = 1 if block b
sits in stack s (a stack of b's group), stack s supports floor((C - sum_b w_b x[b, s]) / sum_b s_b x[b, s])
concurrent requests, and the design supports the minimum over stacks. Maximize it:

    max r  s.t.  sum_s x[b, s] = 1,   sum_b w_b x[b, s] + sum_b s_b q[b, s] <= C,
                 q[b, s] >= r - R (1 - x[b, s]),  q >= 0,  r <= R,  r integer,

where q[b, s] = r x[b, s] (exact at the optimum: the capacity row wants q small) and R = Eq. 1's min_g r_g, which
bounds any packing (summing a group's stack rows gives Eq. 1). Stacks of a group are interchangeable, so their
weight loads are ordered (non-increasing), which removes the N_g! relabellings.

The checker (:func:`check_hbm_packing`) evaluates the floors in exact rational arithmetic; the objective is
min(R, min over stacks with per-request bytes of their floor), and a stack whose weights exceed C is a
violation naming the stack, its load and the capacity. Source: HYDRA Eq. 1 and Step 1 (Sec. IV-A), made
per-stack (issue 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import pyomo.environ as pyo

from chipdse.core.errors import SpecError

GB = 1e9
NO_STATE_LIMIT = 10**9
"""Concurrency reported when no block keeps per-request bytes (nothing limits it)."""


@dataclass(frozen=True)
class PackBlock:
    """One block to pack: its HBM group, weight bytes and per-request bytes (KV cache at the workload's context,
    or SSM + conv state)."""

    name: str
    group: str
    weight_bytes: float
    per_request_bytes: float


@dataclass(frozen=True)
class HbmPackingProblem:
    """Pack ``blocks`` into the stacks of their groups (``stacks[g]`` stacks of ``capacity_bytes`` each).

    Stacks are numbered 0.. in the order of ``stacks`` (group by group); a decision maps block name -> stack.
    """

    stacks: dict[str, int]
    capacity_bytes: float
    blocks: tuple[PackBlock, ...]
    name: str = "hbm-packing"

    def stack_groups(self) -> list[str]:
        """Group of each stack, in stack order."""
        return [g for g, n in self.stacks.items() for _ in range(n)]


def validate_hbm_packing(problem: HbmPackingProblem) -> None:
    """Raise SpecError on a non-positive capacity, negative sizes, duplicate names or a block whose group has no
    stack."""
    src = problem.name
    if not math.isfinite(problem.capacity_bytes) or problem.capacity_bytes <= 0:
        raise SpecError(src, "capacity_bytes", f"a positive stack capacity, got {problem.capacity_bytes!r}")
    names = [b.name for b in problem.blocks]
    if len(set(names)) != len(names):
        raise SpecError(src, "blocks", "unique block names")
    for b in problem.blocks:
        if problem.stacks.get(b.group, 0) < 1:
            raise SpecError(src, f"blocks.{b.name}.group", f"a group with stacks ({problem.stacks}), got {b.group!r}")
        for field_name in ("weight_bytes", "per_request_bytes"):
            v = getattr(b, field_name)
            if not math.isfinite(v) or v < 0:
                raise SpecError(src, f"blocks.{b.name}.{field_name}", f"non-negative finite bytes, got {v!r}")


def eq1_bound(problem: HbmPackingProblem) -> int:
    """Eq. 1's pooled concurrency min_g floor((N_g C - W_g) / S_g): an upper bound of every packing."""
    best = NO_STATE_LIMIT
    for g, n in problem.stacks.items():
        w = sum(Fraction(b.weight_bytes) for b in problem.blocks if b.group == g)
        s = sum(Fraction(b.per_request_bytes) for b in problem.blocks if b.group == g)
        if s > 0:
            best = min(best, math.floor((n * Fraction(problem.capacity_bytes) - w) / s))
    return best


def packing_infeasibility(problem: HbmPackingProblem) -> str | None:
    """Why no packing exists with r >= 0 (the violated capacity), or None. Checks each block against one stack
    and each group's weights against its stacks (necessary conditions)."""
    validate_hbm_packing(problem)
    cap = problem.capacity_bytes
    for b in problem.blocks:
        if b.weight_bytes > cap:
            return f"block {b.name} needs {b.weight_bytes / GB:.3f} GB, one stack holds {cap / GB:.3f} GB"
    for g, n in problem.stacks.items():
        w = sum(b.weight_bytes for b in problem.blocks if b.group == g)
        if w > n * cap:
            return f"group {g} needs {w / GB:.3f} GB of weights, its {n} stacks hold {n * cap / GB:.3f} GB"
    return None


def check_hbm_packing(problem: HbmPackingProblem, decision: dict[str, int]) -> tuple[float, list[str]]:
    """Return (concurrency, violations) of a packing, in exact arithmetic."""
    groups = problem.stack_groups()
    violations = []
    load_w = [Fraction(0)] * len(groups)
    load_s = [Fraction(0)] * len(groups)
    for b in problem.blocks:
        s = decision.get(b.name)
        if s is None or not 0 <= s < len(groups):
            violations.append(f"block {b.name} has no stack (got {s!r})")
            continue
        if groups[s] != b.group:
            violations.append(f"block {b.name} of group {b.group} is in stack {s} of group {groups[s]}")
        load_w[s] += Fraction(b.weight_bytes)
        load_s[s] += Fraction(b.per_request_bytes)
    r = eq1_bound(problem)
    cap = Fraction(problem.capacity_bytes)
    for s, (w, q) in enumerate(zip(load_w, load_s, strict=True)):
        if w > cap:
            violations.append(f"stack {s} holds {float(w) / GB:.3f} GB of weights, capacity {float(cap) / GB:.3f} GB")
        elif q > 0:
            r = min(r, math.floor((cap - w) / q))
    return float(r), violations


def build_hbm_packing_milp(problem: HbmPackingProblem) -> pyo.ConcreteModel:
    """The packing MILP of the module docstring (sizes in units of one stack's capacity, so C = 1).

    Variables ``pack[b, s]`` (binary), ``requests`` (integer r), ``pack_requests[b, s]`` (q); objective
    ``concurrency`` (maximize)."""
    groups = problem.stack_groups()
    r_max = max(eq1_bound(problem), 0)
    m = pyo.ConcreteModel(name=problem.name)
    blocks = {b.name: b for b in problem.blocks}
    keys = [(b.name, s) for b in problem.blocks for s, g in enumerate(groups) if g == b.group]
    m.pairs = pyo.Set(dimen=2, ordered=True, initialize=keys)
    m.pack = pyo.Var(m.pairs, domain=pyo.Binary)
    m.requests = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, r_max))
    state_keys = [k for k in keys if blocks[k[0]].per_request_bytes > 0]
    m.state_pairs = pyo.Set(dimen=2, ordered=True, initialize=state_keys)
    m.pack_requests = pyo.Var(m.state_pairs, domain=pyo.NonNegativeReals)
    m.one_stack = pyo.Constraint([b.name for b in problem.blocks],
                                 rule=lambda m, b: sum(m.pack[b, s] for s in range(len(groups)) if (b, s) in keys)
                                 == 1)
    m.link = pyo.Constraint(m.state_pairs,
                            rule=lambda m, b, s: m.pack_requests[b, s] >= m.requests - r_max * (1 - m.pack[b, s]))
    unit = problem.capacity_bytes

    def capacity(m: pyo.ConcreteModel, s: int) -> pyo.Expression:
        if not any(t == s for _, t in keys):
            return pyo.Constraint.Skip
        w = sum(blocks[b].weight_bytes / unit * m.pack[b, t] for b, t in keys if t == s)
        q = sum(blocks[b].per_request_bytes / unit * m.pack_requests[b, t] for b, t in state_keys if t == s)
        return w + q <= 1

    m.capacity = pyo.Constraint(range(len(groups)), rule=capacity)
    order = [s for s in range(len(groups) - 1) if groups[s] == groups[s + 1]
             and any(t == s and blocks[b].weight_bytes > 0 for b, t in keys)]

    def weight(s: int) -> pyo.Expression:
        return sum(blocks[b].weight_bytes / unit * m.pack[b, t] for b, t in keys if t == s)

    m.stack_order = pyo.Constraint(order, rule=lambda m, s: weight(s) >= weight(s + 1))
    m.concurrency = pyo.Objective(expr=m.requests, sense=pyo.maximize)
    return m


def decode_hbm_packing_milp(m: pyo.ConcreteModel) -> dict[str, int]:
    """Block name -> stack from a solved model."""
    return {b: s for b, s in m.pairs if (m.pack[b, s].value or 0) > 0.5}
