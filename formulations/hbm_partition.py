"""HBM partition between block groups (HYDRA Eq. 1): problem type, checker, exact models.

The problem is tiny (one integer per group) but the floor in Eq. 1 makes floating-point models fragile, so
the ground truth is :func:`group_concurrency`, which evaluates Eq. 1 in exact rational arithmetic on the
given byte counts. Every method's decision goes through :func:`check_hbm_partition`, which uses it.

Build / solve / decode are separate: :func:`build_hbm_partition_milp` and :func:`build_hbm_partition_cpsat`
build models, ``solvers.backends`` solves them, :func:`decode_hbm_partition_milp` and
:func:`decode_hbm_partition_cpsat` read the stack counts back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import pyomo.environ as pyo
from ortools.sat.python import cp_model

from chipdse.core.errors import SpecError
from chipdse.formulations.common import new_cpsat_model

GB = 1e9
"""Bytes per GB (decimal, as HBM capacities are quoted); the MILP works in GB."""

_CPSAT_UNITS_BYTES = (10**6, 10**5, 10**4, 10**3, 10**2, 10, 1)
"""Candidate CP-SAT units, coarsest (1 MB) first; the first that divides every byte count exactly is used."""

_CPSAT_MAX_INT = 2**53
"""Largest product of a coefficient and a variable bound the linear CP-SAT model may contain."""


@dataclass(frozen=True)
class HbmPartitionProblem:
    """Split ``n_hbm`` identical HBM stacks among memory groups to maximize the smallest concurrency.

    Group g with N_g stacks supports ``r_g = floor((N_g * capacity_bytes - weight_bytes[g]) /
    per_request_bytes[g])`` concurrent requests (HYDRA Eq. 1: Mamba group with L_M * W_M weights and S_M state
    per request; attention group with its weights and KV cache per request at the workload's context length).
    Maximize ``min_g r_g`` subject to ``sum_g N_g = n_hbm``, ``N_g >= 1`` and every group's weights fitting.

    Attributes
    ----------
    n_hbm : int
        Number of HBM stacks to split.
    capacity_bytes : float
        Capacity of one stack in bytes.
    weight_bytes : dict[str, float]
        Weights each group must hold, bytes.
    per_request_bytes : dict[str, float]
        KV cache or SSM state per request in each group, bytes (> 0).
    name : str
        Label for reports.
    """

    n_hbm: int
    capacity_bytes: float
    weight_bytes: dict[str, float]
    per_request_bytes: dict[str, float]
    name: str = "hbm-partition"


def hbm_groups(problem: HbmPartitionProblem) -> tuple[str, ...]:
    """Return the memory groups in the order of ``problem.weight_bytes``."""
    return tuple(problem.weight_bytes)


def validate_hbm_partition(problem: HbmPartitionProblem) -> None:
    """Check that the problem data are well formed (not that the problem is feasible).

    Raises
    ------
    SpecError
        No groups, groups of ``weight_bytes`` and ``per_request_bytes`` differ, a non-positive capacity or
        per-request size, a negative weight size, a non-finite number, or a negative / non-integer ``n_hbm``.
    """
    src = problem.name
    if not problem.weight_bytes:
        raise SpecError(src, "weight_bytes", "at least one memory group, got none")
    if set(problem.weight_bytes) != set(problem.per_request_bytes):
        msg = (
            f"the same groups as weight_bytes {sorted(problem.weight_bytes)}, "
            f"got {sorted(problem.per_request_bytes)}"
        )
        raise SpecError(src, "per_request_bytes", msg)
    if isinstance(problem.n_hbm, bool) or not isinstance(problem.n_hbm, int) or problem.n_hbm < 0:
        msg = f"a non-negative integer number of stacks, got {problem.n_hbm!r}"
        raise SpecError(src, "n_hbm", msg)
    if not math.isfinite(problem.capacity_bytes) or problem.capacity_bytes <= 0:
        msg = f"a positive finite stack capacity in bytes, got {problem.capacity_bytes!r}"
        raise SpecError(src, "capacity_bytes", msg)
    for g in hbm_groups(problem):
        w, s = problem.weight_bytes[g], problem.per_request_bytes[g]
        if not math.isfinite(w) or w < 0:
            msg = f"non-negative finite bytes, got {w!r}"
            raise SpecError(src, f"weight_bytes.{g}", msg)
        if not math.isfinite(s) or s <= 0:
            msg = f"positive finite bytes per request, got {s!r}"
            raise SpecError(src, f"per_request_bytes.{g}", msg)


def group_concurrency(problem: HbmPartitionProblem, group: str, n_stacks: int) -> int:
    """Return the concurrent requests a group supports with ``n_stacks`` stacks, exactly.

    Parameters
    ----------
    problem : HbmPartitionProblem
    group : str
        A key of ``problem.weight_bytes``.
    n_stacks : int
        Stacks given to the group.

    Returns
    -------
    int
        ``floor((n_stacks * C - W_g) / S_g)``, computed in exact rational arithmetic on the given floats; it
        is negative when the weights do not fit (Eq. 1's ``max(0, .)`` clamp is left to the caller).

    References
    ----------
    HYDRA Eq. 1.
    """
    free = Fraction(n_stacks) * Fraction(problem.capacity_bytes) - Fraction(problem.weight_bytes[group])
    return math.floor(free / Fraction(problem.per_request_bytes[group]))


def min_stacks(problem: HbmPartitionProblem, group: str) -> int:
    """Return the fewest stacks that hold a group's weights (at least 1): ``max(1, ceil(W_g / C))``."""
    need = Fraction(problem.weight_bytes[group]) / Fraction(problem.capacity_bytes)
    return max(1, math.ceil(need))


def max_stacks(problem: HbmPartitionProblem) -> int:
    """Return the most stacks one group can get when every other group gets one: ``n_hbm - (G - 1)``."""
    return problem.n_hbm - (len(problem.weight_bytes) - 1)


def hbm_partition_infeasibility(problem: HbmPartitionProblem) -> str | None:
    """Explain why no partition exists, or return ``None`` when one does.

    A partition exists iff ``sum_g max(1, ceil(W_g / C)) <= n_hbm``: every group needs a stack, and enough
    stacks for its weights so that ``r_g >= 0``.

    Parameters
    ----------
    problem : HbmPartitionProblem

    Returns
    -------
    str | None
        One sentence naming the violated capacity (with GB figures), or ``None``.

    Raises
    ------
    SpecError
        The problem data are malformed (see :func:`validate_hbm_partition`).

    References
    ----------
    HYDRA Eq. 1 (``r_M >= 0`` needs ``N_M * C_HBM >= L_M * W_M``).
    """
    validate_hbm_partition(problem)
    groups = hbm_groups(problem)
    if problem.n_hbm < len(groups):
        return (
            f"{problem.n_hbm} HBM stack(s) cannot give each of the {len(groups)} groups "
            f"({', '.join(groups)}) at least one stack"
        )
    need = {g: min_stacks(problem, g) for g in groups}
    if sum(need.values()) <= problem.n_hbm:
        return None
    cap_gb = problem.capacity_bytes / GB
    parts = [f"{g} weights need {problem.weight_bytes[g] / GB:.1f} GB ({need[g]} stack(s))" for g in groups]
    return (
        f"the weights do not fit: {', '.join(parts)}; that is {sum(need.values())} stacks of "
        f"{cap_gb:.1f} GB, but only {problem.n_hbm} stack(s) ({problem.n_hbm * cap_gb:.1f} GB in all) exist"
    )


def check_hbm_partition(problem: HbmPartitionProblem, decision: dict[str, int]) -> tuple[float, list[str]]:
    """Recompute the objective of a partition and list the constraints it violates.

    Parameters
    ----------
    problem : HbmPartitionProblem
    decision : dict[str, int]
        Stacks per group, ``N_g``.

    Returns
    -------
    (float, list[str])
        ``min_g r_g`` with ``r_g`` from :func:`group_concurrency` (a missing group counts as 0 stacks, so
        its ``r_g`` is negative), and one message per violation: unknown or missing group, non-integer
        count, ``N_g < 1``, ``sum_g N_g != n_hbm``, weights that do not fit. An empty list means feasible.

    References
    ----------
    HYDRA Eq. 1 and the partition constraint ``N_M + N_A = N_HBM``.
    """
    validate_hbm_partition(problem)
    groups = hbm_groups(problem)
    violations: list[str] = []
    for g in decision:
        if g not in problem.weight_bytes:
            violations.append(f"unknown group {g!r}")
    counts: dict[str, int] = {}
    for g in groups:
        if g not in decision:
            violations.append(f"group {g!r} has no stack count")
            counts[g] = 0
            continue
        n = decision[g]
        if isinstance(n, bool) or float(n) != round(float(n)):
            violations.append(f"group {g!r} has a non-integer stack count {n!r}")
        counts[g] = round(float(n))
        if counts[g] < 1:
            violations.append(f"group {g!r} has {counts[g]} stacks, needs at least 1")
        elif counts[g] * Fraction(problem.capacity_bytes) < Fraction(problem.weight_bytes[g]):
            violations.append(
                f"{g} weights need {problem.weight_bytes[g] / GB:.3f} GB but its {counts[g]} stack(s) "
                f"hold {counts[g] * problem.capacity_bytes / GB:.3f} GB"
            )
    total = sum(counts.values())
    if total != problem.n_hbm:
        violations.append(f"stacks sum to {total}, expected n_hbm = {problem.n_hbm}")
    objective = min(group_concurrency(problem, g, counts[g]) for g in groups)
    return float(objective), violations


# --------------------------------------------------------------------------------------------- MILP (Pyomo)


def add_hbm_partition_variables(m: pyo.ConcreteModel, problem: HbmPartitionProblem) -> None:
    """Add ``group_stacks[g]`` (N_g, integer), ``group_requests[g]`` (r_g, integer) and ``min_requests`` (z).

    Bounds: ``1 <= N_g <= n_hbm - (G - 1)``; ``0 <= r_g <= max(0, r_g(N_max))`` (Eq. 1 at the most stacks a
    group can get, exact); ``0 <= z <= min_g ub(r_g)``.
    """
    n_max = max(1, max_stacks(problem))
    r_ub = {g: max(0, group_concurrency(problem, g, n_max)) for g in hbm_groups(problem)}
    m.group_stacks = pyo.Var(m.groups, domain=pyo.Integers, bounds=(1, n_max))
    m.group_requests = pyo.Var(m.groups, domain=pyo.Integers, bounds=lambda _m, g: (0, r_ub[g]))
    m.min_requests = pyo.Var(domain=pyo.Reals, bounds=(0, min(r_ub.values())))


def add_stack_total_constraints(m: pyo.ConcreteModel, problem: HbmPartitionProblem) -> None:
    """Add ``stack_total``: ``sum_g N_g = n_hbm`` (HYDRA Sec. IV-A Step 1, ``N_M + N_A = N_HBM``)."""
    m.stack_total = pyo.Constraint(expr=sum(m.group_stacks[g] for g in m.groups) == problem.n_hbm)


def add_group_capacity_constraints(m: pyo.ConcreteModel, problem: HbmPartitionProblem) -> None:
    """Add ``group_capacity_ub[g]``: ``S_g r_g <= C N_g - W_g``, all in GB (HYDRA Eq. 1, linear form).

    With ``r_g`` integer and maximized (through z), this is ``r_g = floor((N_g C - W_g) / S_g)``; ``r_g >= 0``
    makes it also require the weights to fit. Byte counts are divided by 1e9 so that the coefficients are
    O(0.001 .. 100) instead of O(1e6 .. 1e11). The floor holds only up to the solver's tolerances: when
    ``(N_g C - W_g) / S_g`` lies within the integrality tolerance (1e-6 requests) below an integer, the
    solver rounds r_g up, and tiny weights (below ~1e-9 GB) trip HiGHS's presolve; see
    :func:`add_group_capacity_table_constraints` for the exact form.
    """
    c_gb = problem.capacity_bytes / GB

    def group_capacity_ub(_m: pyo.ConcreteModel, g: str) -> pyo.Expression:
        s_gb = problem.per_request_bytes[g] / GB
        w_gb = problem.weight_bytes[g] / GB
        return s_gb * _m.group_requests[g] <= c_gb * _m.group_stacks[g] - w_gb

    m.group_capacity_ub = pyo.Constraint(m.groups, rule=group_capacity_ub)


def stack_choices(problem: HbmPartitionProblem) -> list[tuple[str, int]]:
    """Return the (group, stack count) pairs a partition can use: ``max(1, ceil(W_g / C)) <= n <= N_max``."""
    n_max = max_stacks(problem)
    return [(g, n) for g in hbm_groups(problem) for n in range(min_stacks(problem, g), n_max + 1)]


def add_group_capacity_table_constraints(m: pyo.ConcreteModel, problem: HbmPartitionProblem) -> None:
    """Add Eq. 1 exactly: ``N_g = sum_n n y[g,n]``, ``sum_n y[g,n] = 1``, ``r_g <= sum_n R_g(n) y[g,n]``.

    ``y[g, n]`` (binary ``stacks_choice``) selects the stack count of group g among the counts that hold
    its weights (``stack_choices``; the others are left out of the index), and ``R_g(n) = floor((n C - W_g) /
    S_g)`` is computed in exact rational arithmetic by :func:`group_concurrency`. Every coefficient is an
    integer, so the floor of HYDRA Eq. 1 holds exactly, whatever the byte counts. Constraints:
    ``group_stacks_def[g]``, ``stacks_choice_one[g]``, ``group_capacity_ub[g]``.
    """
    choices = stack_choices(problem)
    m.stack_choices = pyo.Set(initialize=choices, dimen=2, ordered=True)
    m.stacks_choice = pyo.Var(m.stack_choices, domain=pyo.Binary)
    counts = {g: [n for h, n in choices if h == g] for g in hbm_groups(problem)}
    table = {(g, n): group_concurrency(problem, g, n) for g, n in choices}

    def group_stacks_def(_m: pyo.ConcreteModel, g: str) -> pyo.Expression:
        return _m.group_stacks[g] == sum(n * _m.stacks_choice[g, n] for n in counts[g])

    def stacks_choice_one(_m: pyo.ConcreteModel, g: str) -> pyo.Expression:
        if not counts[g]:
            return pyo.Constraint.Infeasible
        return sum(_m.stacks_choice[g, n] for n in counts[g]) == 1

    def group_capacity_ub(_m: pyo.ConcreteModel, g: str) -> pyo.Expression:
        return _m.group_requests[g] <= sum(table[g, n] * _m.stacks_choice[g, n] for n in counts[g])

    m.group_stacks_def = pyo.Constraint(m.groups, rule=group_stacks_def)
    m.stacks_choice_one = pyo.Constraint(m.groups, rule=stacks_choice_one)
    m.group_capacity_ub = pyo.Constraint(m.groups, rule=group_capacity_ub)


def add_min_requests_constraints(m: pyo.ConcreteModel, problem: HbmPartitionProblem) -> None:
    """Add ``min_requests_ub[g]``: ``z <= r_g``; maximizing z maximizes ``min_g r_g`` (HYDRA Eq. 1)."""

    def min_requests_ub(_m: pyo.ConcreteModel, g: str) -> pyo.Expression:
        return _m.min_requests <= _m.group_requests[g]

    m.min_requests_ub = pyo.Constraint(m.groups, rule=min_requests_ub)


def build_hbm_partition_milp(problem: HbmPartitionProblem, capacity: str = "table") -> pyo.ConcreteModel:
    """Build the HBM partition MILP.

    Parameters
    ----------
    problem : HbmPartitionProblem
    capacity : {"table", "linear"}
        How Eq. 1 enters the model: ``"table"`` (default, exact for any byte counts) through binary stack
        count choices, :func:`add_group_capacity_table_constraints`; ``"linear"`` through the paper's linear
        form ``S_g r_g <= C N_g - W_g`` in GB, :func:`add_group_capacity_constraints` (exact only up to the
        solver's tolerances).

    Returns
    -------
    pyomo ConcreteModel
        Set ``groups``; variables ``group_stacks`` (N_g), ``group_requests`` (r_g), ``min_requests`` (z);
        constraints ``stack_total``, ``group_capacity_ub``, ``min_requests_ub`` (plus ``stacks_choice``,
        ``group_stacks_def``, ``stacks_choice_one`` for ``"table"``); objective ``min_requests_obj``
        (maximize z).

    Raises
    ------
    SpecError
        The problem data are malformed (:func:`validate_hbm_partition`).
    ValueError
        Unknown ``capacity``.

    Notes
    -----
    ``max z  s.t.  sum_g N_g = n_hbm,  r_g <= floor((C N_g - W_g) / S_g),  z <= r_g,  N_g >= 1, r_g >= 0
    integer``. The linear form was the first version; randomized tests against enumeration found the
    tolerance failures described in :func:`add_group_capacity_constraints` (a wrong partition, or HiGHS
    calling a feasible instance infeasible), hence the exact table is the default. Either way the solver
    wrapper recomputes r_g from the decoded N_g with :func:`check_hbm_partition`.

    References
    ----------
    HYDRA Eq. 1 and Sec. IV-A Step 1.
    """
    if capacity not in ("table", "linear"):
        msg = f"capacity must be 'table' or 'linear', got {capacity!r}"
        raise ValueError(msg)
    validate_hbm_partition(problem)
    m = pyo.ConcreteModel(name=problem.name)
    m.groups = pyo.Set(initialize=list(hbm_groups(problem)), ordered=True)
    add_hbm_partition_variables(m, problem)
    add_stack_total_constraints(m, problem)
    if capacity == "table":
        add_group_capacity_table_constraints(m, problem)
    else:
        add_group_capacity_constraints(m, problem)
    add_min_requests_constraints(m, problem)
    m.min_requests_obj = pyo.Objective(expr=m.min_requests, sense=pyo.maximize)
    return m


def decode_hbm_partition_milp(m: pyo.ConcreteModel) -> dict[str, int]:
    """Return ``{group: N_g}`` from a solved MILP (values rounded to the nearest integer)."""
    return {g: round(pyo.value(m.group_stacks[g])) for g in m.groups}


# --------------------------------------------------------------------------------------------------- CP-SAT


@dataclass
class HbmPartitionCpsat:
    """A built CP-SAT model of the HBM partition and the handles its decoder needs.

    Attributes
    ----------
    model : CpModel
    stacks : dict[str, IntVar]
        ``stacks_<g>``: N_g.
    requests : dict[str, IntVar]
        ``requests_<g>``: r_g, in requests (not scaled).
    min_requests : IntVar
        z; the objective (maximized), in requests.
    unit_bytes : int | None
        Bytes per integer unit of the linear capacity constraints, or ``None`` when the byte counts are not
        integer multiples of any unit and the model uses an exact element table instead.
    """

    model: cp_model.CpModel
    stacks: dict[str, cp_model.IntVar]
    requests: dict[str, cp_model.IntVar]
    min_requests: cp_model.IntVar
    unit_bytes: int | None


def cpsat_unit_bytes(problem: HbmPartitionProblem) -> int | None:
    """Return the coarsest unit in (1 MB, 100 kB, ..., 1 B) dividing every byte count exactly, else ``None``.

    ``None`` is also returned when, in that unit, ``n_hbm * C`` would exceed 2**53 (CP-SAT needs products
    of coefficients and bounds to fit in 64-bit integers).
    """
    values = [Fraction(problem.capacity_bytes)]
    values += [Fraction(v) for v in problem.weight_bytes.values()]
    values += [Fraction(v) for v in problem.per_request_bytes.values()]
    for unit in _CPSAT_UNITS_BYTES:
        if all((v / unit).denominator == 1 for v in values):
            if max(1, problem.n_hbm) * problem.capacity_bytes / unit > _CPSAT_MAX_INT:
                return None
            return unit
    return None


def add_hbm_partition_cpsat_capacity(
    cp: cp_model.CpModel,
    problem: HbmPartitionProblem,
    stacks: dict[str, cp_model.IntVar],
    requests: dict[str, cp_model.IntVar],
    unit_bytes: int | None,
) -> None:
    """Add ``capacity_<g>``: ``r_g * S_g <= N_g * C - W_g`` in integer units of ``unit_bytes`` (HYDRA Eq. 1).

    The data are exact integers in that unit, so with r_g maximized this is exactly
    ``r_g = floor((N_g C - W_g) / S_g)``, the checker's floor. When no exact unit exists (``unit_bytes`` is
    ``None``), ``r_g <= table_g[N_g]`` with ``table_g[n] = floor((n C - W_g) / S_g)`` computed exactly by
    :func:`group_concurrency` (an element constraint), which is the same floor.
    """
    n_max = max(1, max_stacks(problem))
    for g in hbm_groups(problem):
        if unit_bytes is not None:
            c = int(Fraction(problem.capacity_bytes) / unit_bytes)
            w = int(Fraction(problem.weight_bytes[g]) / unit_bytes)
            s = int(Fraction(problem.per_request_bytes[g]) / unit_bytes)
            cp.Add(s * requests[g] <= c * stacks[g] - w).WithName(f"capacity_{g}")
        else:
            table = [group_concurrency(problem, g, n) for n in range(n_max + 1)]
            cap = cp.NewIntVar(min(table), max(table), f"capacity_{g}")
            cp.AddElement(stacks[g], table, cap)
            cp.Add(requests[g] <= cap)


def build_hbm_partition_cpsat(problem: HbmPartitionProblem) -> HbmPartitionCpsat:
    """Build the HBM partition CP-SAT model in integer byte units (1 MB when the data allow it).

    Parameters
    ----------
    problem : HbmPartitionProblem

    Returns
    -------
    HbmPartitionCpsat
        The model (maximize ``min_requests``) and its variables. The objective and bound are in requests.

    Raises
    ------
    SpecError
        As for :func:`build_hbm_partition_milp`: malformed problem data.

    Notes
    -----
    ``max z  s.t.  sum_g N_g = n_hbm,  S_g r_g <= C N_g - W_g,  z <= r_g``, integers. Bytes are scaled by the
    coarsest unit from 1 MB down to 1 byte that divides every byte count, so the integer model has exactly
    the checker's floor semantics (no rounding); see :func:`add_hbm_partition_cpsat_capacity` for the
    fallback when the byte counts are fractional.

    References
    ----------
    HYDRA Eq. 1 and Sec. IV-A Step 1.
    """
    validate_hbm_partition(problem)
    groups = hbm_groups(problem)
    n_max = max(1, max_stacks(problem))
    r_ub = {g: max(0, group_concurrency(problem, g, n_max)) for g in groups}
    cp = new_cpsat_model(problem.name)
    stacks = {g: cp.NewIntVar(1, n_max, f"stacks_{g}") for g in groups}
    requests = {g: cp.NewIntVar(0, r_ub[g], f"requests_{g}") for g in groups}
    z = cp.NewIntVar(0, min(r_ub.values()), "min_requests")
    cp.Add(sum(stacks.values()) == problem.n_hbm).WithName("stack_total")
    unit = cpsat_unit_bytes(problem)
    add_hbm_partition_cpsat_capacity(cp, problem, stacks, requests, unit)
    for g in groups:
        cp.Add(z <= requests[g]).WithName(f"min_requests_{g}")
    cp.Maximize(z)
    return HbmPartitionCpsat(cp, stacks, requests, z, unit)


def decode_hbm_partition_cpsat(built: HbmPartitionCpsat, solver: cp_model.CpSolver) -> dict[str, int]:
    """Return ``{group: N_g}`` from a solved CP-SAT model."""
    return {g: int(solver.Value(v)) for g, v in built.stacks.items()}
