"""Tier / expert split (NOVA Sec. VI-E): problem type, checker, exact models.

Each MoE expert of one layer runs whole on NOVA's Tier-1 (peri-die) or Tier-2 (base-die) in one decode step;
both tiers run concurrently, so Tier-1 is at its cross-tier (halved) rate. Minimize the makespan. This is a
two-machine unrelated-machines scheduling problem (``R2 || C_max``).

Build / solve / decode are separate: :func:`build_expert_split_milp` and :func:`build_expert_split_cpsat`
build models, ``solvers.backends`` solves them, :func:`decode_expert_split_milp` and
:func:`decode_expert_split_cpsat` read the assignment back. :func:`check_expert_split` is the
solver-independent checker every method's decision goes through.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from chipdse.core.errors import SpecError
from chipdse.evaluators.nmp import NOVA_TIERS, NovaTiers, tier1_cross_throughput_flops, tier2_throughput_flops
from chipdse.formulations import common

TIER1 = 1
"""Decision value of the peri-die NMP (cold experts in NOVA)."""
TIER2 = 2
"""Decision value of the base-die NMP (hot experts in NOVA)."""


@dataclass(frozen=True)
class ExpertSplitProblem:
    """Assign each expert of one MoE layer to Tier-1 or Tier-2 to minimize the decode-step makespan.

    Attributes
    ----------
    weight_bytes : tuple[float, ...]
        ``W_e``, bytes of expert e's weights (all its projections), ``> 0``.
    tokens : tuple[int, ...]
        ``n_e``, tokens routed to expert e in this step, ``>= 0`` (same length as ``weight_bytes``).
    tiers : NovaTiers
        Tier rooflines and the cross-tier derating (NOVA Sec. VI-E defaults).
    bytes_per_param : float
        Bytes per weight (2 for BF16), so expert e has ``P_e = W_e / bytes_per_param`` parameters.
    name : str
        Label for reports.

    Notes
    -----
    Exact definition used by every method (:func:`expert_times_s`):

    * work ``F_e = 2 P_e n_e`` FLOPs, bytes ``W_e`` (weights read once; activations neglected), intensity
      ``I_e = F_e / W_e = 2 n_e / bytes_per_param`` (``= n_e`` in BF16, NOVA's ``I_e ~ n_e``);
    * time on Tier-1 ``t1_e = F_e / T_1'(I_e)`` with the halved roofline ``T_1'(I) = min(C_1/2, I B_1/2)``,
      and on Tier-2 ``t2_e = F_e / T_2(I_e)``, ``T_2(I) = min(C_2, I B_2)``; an expert with ``n_e = 0`` is
      not run and takes 0 s on either tier;
    * makespan ``max(sum_{e on Tier-1} t1_e, sum_{e on Tier-2} t2_e)``: both tiers run concurrently and each
      runs its experts back to back. Tier-1 is at the cross-tier rate even when Tier-2 gets no expert (the
      split problem models the cross-tier mode only, as NOVA's Sec. VI-E formalization does).

    References
    ----------
    NOVA Sec. VI-E "Data Assignment Policy"; Sec. V-C "MoE Execution" (cold experts on the peri-die, hot on
    the base-die).
    """

    weight_bytes: tuple[float, ...]
    tokens: tuple[int, ...]
    tiers: NovaTiers = NOVA_TIERS
    bytes_per_param: float = 2.0
    name: str = "expert-split"

    @property
    def n_experts(self) -> int:
        """Number of experts."""
        return len(self.weight_bytes)


def validate_expert_split(problem: ExpertSplitProblem) -> None:
    """Check that the problem data are well formed.

    Raises
    ------
    SpecError
        Lengths differ, a non-positive or non-finite weight size, a negative or non-integer token count, or a
        non-positive ``bytes_per_param``.
    """
    src = problem.name
    if len(problem.weight_bytes) != len(problem.tokens):
        msg = f"one token count per expert, got {len(problem.tokens)} counts for {len(problem.weight_bytes)} experts"
        raise SpecError(src, "tokens", msg)
    for e, w in enumerate(problem.weight_bytes):
        if not math.isfinite(w) or w <= 0:
            msg = f"positive finite bytes for expert {e}, got {w!r}"
            raise SpecError(src, "weight_bytes", msg)
    for e, n in enumerate(problem.tokens):
        if int(n) != n or n < 0:
            msg = f"a non-negative integer token count for expert {e}, got {n!r}"
            raise SpecError(src, "tokens", msg)
    if not math.isfinite(problem.bytes_per_param) or problem.bytes_per_param <= 0:
        msg = f"positive bytes per parameter, got {problem.bytes_per_param!r}"
        raise SpecError(src, "bytes_per_param", msg)


def expert_flops(problem: ExpertSplitProblem) -> NDArray[np.float64]:
    """Return ``F_e = 2 (W_e / bytes_per_param) n_e``, FLOPs per expert (see :class:`ExpertSplitProblem`)."""
    w = np.asarray(problem.weight_bytes, dtype=float)
    n = np.asarray(problem.tokens, dtype=float)
    return 2.0 * w / problem.bytes_per_param * n


def expert_times_s(problem: ExpertSplitProblem) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return each expert's seconds on Tier-1 (cross-tier rate) and on Tier-2.

    Returns
    -------
    (ndarray, ndarray), each shape ``(n_experts,)``
        ``t1_e = F_e / T_1'(I_e)`` and ``t2_e = F_e / T_2(I_e)``; 0 where ``n_e = 0``.

    Raises
    ------
    SpecError
        Lengths differ, or a weight size, token count or ``bytes_per_param`` is invalid (:func:`validate_expert_split`).

    References
    ----------
    NOVA Sec. VI-E (``T_k(I) = min(C_k, I B_k)``, ``T_1'`` halved, ``I_e ~ n_e``).
    """
    validate_expert_split(problem)
    flops = expert_flops(problem)
    w = np.asarray(problem.weight_bytes, dtype=float)
    intensity = flops / w
    t1 = tier1_cross_throughput_flops(intensity, problem.tiers)
    t2 = tier2_throughput_flops(intensity, problem.tiers)
    active = flops > 0
    out1 = np.where(active, flops / np.where(active, t1, 1.0), 0.0)
    out2 = np.where(active, flops / np.where(active, t2, 1.0), 0.0)
    return out1, out2


def active_experts(problem: ExpertSplitProblem) -> list[int]:
    """Return the experts with routed tokens (``n_e > 0``), in index order; the others take no time."""
    return [e for e, n in enumerate(problem.tokens) if n > 0]


def tier_loads_s(problem: ExpertSplitProblem, decision: dict[int, int]) -> dict[str, float]:
    """Return ``{"tier1_s", "tier2_s"}``: each tier's busy time under ``decision`` (valid entries only)."""
    t1, t2 = expert_times_s(problem)
    load1 = sum(float(t1[e]) for e, k in decision.items() if k == TIER1 and 0 <= e < problem.n_experts)
    load2 = sum(float(t2[e]) for e, k in decision.items() if k == TIER2 and 0 <= e < problem.n_experts)
    return {"tier1_s": load1, "tier2_s": load2}


def check_expert_split(problem: ExpertSplitProblem, decision: dict[int, int]) -> tuple[float, list[str]]:
    """Recompute the makespan of an expert -> tier decision and list its violations.

    Parameters
    ----------
    problem : ExpertSplitProblem
    decision : dict[int, int]
        Expert index -> tier (1 = Tier-1 peri-die, 2 = Tier-2 base-die); every expert must appear.

    Returns
    -------
    (float, list[str])
        Makespan ``max(sum_{Tier-1} t1_e, sum_{Tier-2} t2_e)`` in seconds over the valid entries, and the
        violations (missing or unknown experts, tiers other than 1 and 2); empty when feasible.

    Raises
    ------
    SpecError
        The problem data are malformed (the times come from :func:`expert_times_s`).

    References
    ----------
    NOVA Sec. VI-E.
    """
    violations: list[str] = []
    missing = [e for e in range(problem.n_experts) if e not in decision]
    if missing:
        violations.append(f"experts without a tier: {missing[:10]}")
    unknown = [e for e in decision if not (isinstance(e, int | np.integer) and 0 <= e < problem.n_experts)]
    if unknown:
        violations.append(f"unknown experts: {unknown[:10]}")
    bad = {e: k for e, k in decision.items() if k not in (TIER1, TIER2)}
    if bad:
        violations.append(f"tiers other than 1 and 2: {dict(list(bad.items())[:10])}")
    loads = tier_loads_s(problem, decision)
    return max(loads["tier1_s"], loads["tier2_s"]), violations


# ----------------------------------------------------------------------------------------------------- MILP


def expert_split_time_unit_s(problem: ExpertSplitProblem) -> float:
    """Return the MILP time unit: the largest single-expert time, seconds (1.0 when no expert has work).

    Keeps every coefficient of the model in (0, 1] so that HiGHS's absolute tolerances are small against it.
    """
    t1, t2 = expert_times_s(problem)
    biggest = float(max(np.max(t1, initial=0.0), np.max(t2, initial=0.0)))
    return biggest if biggest > 0 else 1.0


def add_expert_split_variables(m: pyo.ConcreteModel, problem: ExpertSplitProblem) -> None:
    """Add ``expert_on_tier2[e]`` (binary, 1 = Tier-2, 0 = Tier-1) over active experts and ``makespan >= 0``."""
    common.add_choice_and_makespan_variables(m, m.experts, "expert_on_tier2", "makespan")


def add_tier1_load_constraints(m: pyo.ConcreteModel, problem: ExpertSplitProblem) -> None:
    """Add ``tier1_load_ub``: ``sum_e t1_e (1 - x_e) <= T`` (Tier-1 at the halved rate; NOVA Sec. VI-E)."""
    if not m.experts:
        return
    m.tier1_load = pyo.Expression(expr=sum(m.expert_tier1_time[e] * (1 - m.expert_on_tier2[e]) for e in m.experts))
    m.tier1_load_ub = pyo.Constraint(expr=m.tier1_load <= m.makespan)


def add_tier2_load_constraints(m: pyo.ConcreteModel, problem: ExpertSplitProblem) -> None:
    """Add ``tier2_load_ub``: ``sum_e t2_e x_e <= T`` (NOVA Sec. VI-E)."""
    if not m.experts:
        return
    m.tier2_load = pyo.Expression(expr=sum(m.expert_tier2_time[e] * m.expert_on_tier2[e] for e in m.experts))
    m.tier2_load_ub = pyo.Constraint(expr=m.tier2_load <= m.makespan)


def add_makespan_bound_constraints(m: pyo.ConcreteModel, problem: ExpertSplitProblem) -> None:
    """Add ``makespan_expert_lb``: ``T >= max_e min(t1_e, t2_e)``.

    Every expert runs whole on one tier (the LP relaxation may split it, so it does not imply this bound).
    """
    if not m.experts:
        return
    lb = max(min(pyo.value(m.expert_tier1_time[e]), pyo.value(m.expert_tier2_time[e])) for e in m.experts)
    m.makespan_expert_lb = pyo.Constraint(expr=m.makespan >= lb)


def build_expert_split_milp(problem: ExpertSplitProblem, hint: dict[int, int] | None = None) -> pyo.ConcreteModel:
    """Build the expert split MILP.

    Parameters
    ----------
    problem : ExpertSplitProblem
    hint : dict[int, int], optional
        A feasible expert -> tier decision; its values are set as the variables' starting values (passed to
        HiGHS as a MIP start by ``solve_pyomo(..., warm_start=True)``).

    Returns
    -------
    pyomo ConcreteModel
        Set ``experts`` (active experts only, ``n_e > 0``); params ``time_unit_s`` (seconds per model unit),
        ``expert_tier1_time``, ``expert_tier2_time`` (model units); variables ``expert_on_tier2``,
        ``makespan``; constraints ``tier1_load_ub``, ``tier2_load_ub``, ``makespan_expert_lb``; objective
        ``makespan_obj`` (minimize T).

    Raises
    ------
    SpecError
        Lengths differ or a weight size / token count is invalid (:func:`validate_expert_split`).

    Notes
    -----
    ``min T  s.t.  sum_e t1_e (1 - x_e) <= T,  sum_e t2_e x_e <= T,  T >= max_e min(t1_e, t2_e),
    x binary``. Experts without routed tokens take no time and are left out (decoded to Tier-1).

    References
    ----------
    NOVA Sec. VI-E.
    """
    t1, t2 = expert_times_s(problem)
    unit = expert_split_time_unit_s(problem)
    m = pyo.ConcreteModel(name=problem.name)
    m.experts = pyo.Set(initialize=active_experts(problem), ordered=True)
    m.time_unit_s = pyo.Param(initialize=unit)
    m.expert_tier1_time = pyo.Param(m.experts, initialize=lambda _m, e: float(t1[e]) / unit)
    m.expert_tier2_time = pyo.Param(m.experts, initialize=lambda _m, e: float(t2[e]) / unit)
    add_expert_split_variables(m, problem)
    add_tier1_load_constraints(m, problem)
    add_tier2_load_constraints(m, problem)
    add_makespan_bound_constraints(m, problem)
    m.makespan_obj = pyo.Objective(expr=m.makespan, sense=pyo.minimize)
    if hint is not None:
        for e in m.experts:
            m.expert_on_tier2[e].set_value(1 if hint.get(e) == TIER2 else 0)
        loads = tier_loads_s(problem, hint)
        m.makespan.set_value(max(loads.values()) / unit)
    return m


def decode_expert_split_milp(m: pyo.ConcreteModel, problem: ExpertSplitProblem) -> dict[int, int]:
    """Return expert -> tier from a solved MILP (``x_e > 0.5`` is Tier-2; inactive experts on Tier-1)."""
    decision = dict.fromkeys(range(problem.n_experts), TIER1)
    for e in m.experts:
        if common.binary_value(m.expert_on_tier2[e]) > 0.5:
            decision[e] = TIER2
    return decision


# --------------------------------------------------------------------------------------------------- CP-SAT


@dataclass
class ExpertSplitCpsat(common.TickedCpsat):
    """A built CP-SAT model of the expert split and the handles its decoder needs.

    Attributes
    ----------
    model : CpModel
    on_tier2 : dict[int, IntVar]
        ``tier2_<e>`` Booleans over active experts.
    makespan : IntVar
        T in ticks (minimized).
    resolution_s : float
        Seconds per tick.
    ticks1, ticks2 : dict[int, int]
        ``floor(t / resolution_s)`` per active expert on Tier-1 and Tier-2.
    """

    model: cp_model.CpModel
    on_tier2: dict[int, cp_model.IntVar]
    makespan: cp_model.IntVar
    resolution_s: float
    ticks1: dict[int, int]
    ticks2: dict[int, int]


def expert_split_resolution_s(problem: ExpertSplitProblem) -> float:
    """Return the CP-SAT tick: ``1e-9`` of the sum over experts of their slower tier time (1 s when zero).

    The floor rounding then costs at most ``n_experts * 1e-9`` of that horizon per tier.
    """
    t1, t2 = expert_times_s(problem)
    horizon = float(np.sum(np.maximum(t1, t2)))
    return horizon * 1e-9 if horizon > 0 else 1.0


def build_expert_split_cpsat(problem: ExpertSplitProblem, resolution_s: float | None = None,
                             hint: dict[int, int] | None = None) -> ExpertSplitCpsat:
    """Build the expert split CP-SAT model with times in integer ticks.

    Parameters
    ----------
    problem : ExpertSplitProblem
    resolution_s : float, optional
        Seconds per tick; default :func:`expert_split_resolution_s`.
    hint : dict[int, int], optional
        A feasible expert -> tier decision given to CP-SAT as a solution hint.

    Returns
    -------
    ExpertSplitCpsat
        The model (``tier1_load``: ``sum ticks1 (1 - x) <= T``, ``tier2_load``: ``sum ticks2 x <= T``,
        ``makespan_expert_lb``, minimize T) and its handles.

    Raises
    ------
    SpecError
        Malformed problem data (see :func:`build_expert_split_milp`).

    Notes
    -----
    Times are rounded DOWN to ticks (:class:`~chipdse.formulations.common.TickedCpsat`): the bound from
    :meth:`ExpertSplitCpsat.bound_s` is valid for the true optimum, the CP-SAT optimum is within
    ``n_experts * resolution_s`` of it, and :func:`check_expert_split` recomputes the makespan in seconds.

    References
    ----------
    NOVA Sec. VI-E.
    """
    t1, t2 = expert_times_s(problem)
    res = resolution_s if resolution_s is not None else expert_split_resolution_s(problem)
    experts = active_experts(problem)
    ticks1 = {e: common.time_ticks(float(t1[e]), res) for e in experts}
    ticks2 = {e: common.time_ticks(float(t2[e]), res) for e in experts}
    cp = common.new_cpsat_model(problem.name)
    on_tier2 = {e: cp.NewBoolVar(f"tier2_{e}") for e in experts}
    horizon = max(sum(ticks1.values()), sum(ticks2.values()), 0)
    makespan = cp.NewIntVar(0, horizon, "makespan")
    if experts:
        cp.Add(sum(ticks1[e] * (1 - on_tier2[e]) for e in experts) <= makespan).WithName("tier1_load")
        cp.Add(sum(ticks2[e] * on_tier2[e] for e in experts) <= makespan).WithName("tier2_load")
        lb = max(min(ticks1[e], ticks2[e]) for e in experts)
        cp.Add(makespan >= lb).WithName("makespan_expert_lb")
    cp.Minimize(makespan)
    if hint is not None:
        for e, x in on_tier2.items():
            cp.AddHint(x, hint.get(e) == TIER2)
        load1 = sum(ticks1[e] for e in experts if hint.get(e) != TIER2)
        load2 = sum(ticks2[e] for e in experts if hint.get(e) == TIER2)
        cp.AddHint(makespan, max(load1, load2))
    return ExpertSplitCpsat(cp, on_tier2, makespan, res, ticks1, ticks2)


def decode_expert_split_cpsat(built: ExpertSplitCpsat, solver: cp_model.CpSolver,
                              problem: ExpertSplitProblem) -> dict[int, int]:
    """Return expert -> tier from a solved CP-SAT model (inactive experts on Tier-1)."""
    decision = dict.fromkeys(range(problem.n_experts), TIER1)
    for e in common.chosen_keys(solver, built.on_tier2):
        decision[e] = TIER2
    return decision
