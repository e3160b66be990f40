"""Bottleneck pipeline mapping (HYDRA Eqs. 4-5): problem type, checker, exact models.

Build / solve / decode are separate: :func:`build_mapping_milp` and :func:`build_mapping_cpsat` build models,
``solvers.backends`` solves them, :func:`decode_mapping_milp` and :func:`decode_mapping_cpsat` read the
assignment back. :func:`check_mapping` is the solver-independent checker every method's decision goes through.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pyomo.environ as pyo
from ortools.sat.python import cp_model

from chipdse.core.errors import SpecError
from chipdse.evaluators.latency import stage_times_s
from chipdse.formulations.common import (
    TickedCpsat,
    add_choice_and_makespan_variables,
    binary_value,
    chosen_keys,
    new_cpsat_model,
    time_ticks,
)


@dataclass(frozen=True)
class MappingProblem:
    """Assign each task to one compatible chiplet so that the slowest chiplet (the bottleneck) is fastest.

    Stage time of chiplet c: ``t_c = sum over tasks k mapped to c of time_s[(k, c)]`` (HYDRA Eq. 4, where
    ``time_s`` is t_comp(k, c) + t_comm(k, c), Eq. 3). Objective: minimize ``max_c t_c`` (HYDRA Eq. 5).
    A (task, chiplet) pair missing from ``time_s`` is incompatible and never assigned.

    Attributes
    ----------
    tasks : tuple[str, ...]
        Task ids, in model (pipeline) order.
    chiplets : tuple[str, ...]
        Chiplet ids.
    time_s : dict[tuple[str, str], float]
        Seconds task k takes on chiplet c, for compatible pairs only.
    name : str
        Label for reports.
    home : Mapping[str, tuple[str, ...]] | None
        Task -> the chiplets of its own phase role, for a cross-phase problem (:func:`joint_mapping`); the
        exact models ignore it, the LPT heuristic starts from a home-only mapping. ``None``: every compatible
        chiplet is home.
    """

    tasks: tuple[str, ...]
    chiplets: tuple[str, ...]
    time_s: dict[tuple[str, str], float]
    name: str = "mapping"
    home: Mapping[str, tuple[str, ...]] | None = None


def validate_mapping(problem: MappingProblem) -> None:
    """Check that the problem data are well formed (not that a mapping exists).

    Raises
    ------
    SpecError
        Duplicate task or chiplet ids, a ``time_s`` key naming an unknown task or chiplet, or a negative or
        non-finite time.
    """
    src = problem.name
    if len(set(problem.tasks)) != len(problem.tasks):
        msg = f"unique task ids, got duplicates in {problem.tasks}"
        raise SpecError(src, "tasks", msg)
    if len(set(problem.chiplets)) != len(problem.chiplets):
        msg = f"unique chiplet ids, got duplicates in {problem.chiplets}"
        raise SpecError(src, "chiplets", msg)
    tasks, chiplets = set(problem.tasks), set(problem.chiplets)
    for (k, c), t in problem.time_s.items():
        if k not in tasks or c not in chiplets:
            msg = f"(task, chiplet) keys from tasks and chiplets, got ({k!r}, {c!r})"
            raise SpecError(src, "time_s", msg)
        if not math.isfinite(t) or t < 0:
            msg = f"a non-negative finite time in seconds for ({k!r}, {c!r}), got {t!r}"
            raise SpecError(src, "time_s", msg)
    for k, cs in (problem.home or {}).items():
        bad = [c for c in cs if (k, c) not in problem.time_s]
        if k not in tasks or bad:
            msg = f"task -> compatible chiplets, got {k!r} -> {bad or cs!r}"
            raise SpecError(src, "home", msg)


PHASE_SEPARATOR = ":"
"""Joins a phase and a block name into a task id of a cross-phase problem (``"prefill:attn_0"``)."""


@dataclass(frozen=True)
class PhasePart:
    """One phase's share of a cross-phase mapping (:func:`joint_mapping`).

    Attributes
    ----------
    phase : str
        Phase name (``"prefill"`` / ``"decode"``); prefixes the task ids.
    problem : MappingProblem
        The phase's tasks on every chiplet that may run them (its own role's and the other role's), seconds per
        unit of the phase's work (one prefill of a mean request, one decode iteration).
    weight : float
        Units of the phase's work per unit of the joint objective (e.g. decode iterations per request), >= 0.
    home : tuple[str, ...]
        The chiplets of the phase's own role.
    """

    phase: str
    problem: MappingProblem
    weight: float
    home: tuple[str, ...]


def joint_mapping(parts: Sequence[PhasePart], cross_phase: bool = True, name: str = "joint-mapping"
                  ) -> MappingProblem:
    """Return one mapping problem over every phase's tasks, with ONE stage time per chiplet shared by the phases.

    Task ``"<phase>:<block>"`` takes ``weight * time_s`` on a chiplet; a chiplet's stage time sums every phase's
    tasks on it (HYDRA Eq. 4 with both phases' work), so the bottleneck (Eq. 5) is the busiest chiplet's work per
    unit of the objective (seconds per request when prefill weighs 1 and decode ``mean_decode / batch``) and a
    chiplet lent to the other phase is never booked twice. ``cross_phase=False`` keeps each task on its phase's
    home chiplets: the phases then decouple into the per-phase problems, scaled.

    Parameters
    ----------
    parts : sequence of PhasePart
        One per phase, distinct phase names.
    cross_phase : bool
        Let a task run on the other role's chiplets at their own rate (HYDRA Sec. IV-C, the c_p,D / c_d,P terms
        of Eqs. 6-7).
    name : str
        Label of the joint problem.

    Returns
    -------
    MappingProblem
        Tasks in part order then block order; chiplets in order of first appearance over the parts; ``home`` set
        (every task's home chiplets that are compatible).

    Raises
    ------
    SpecError
        A repeated phase name, a negative or non-finite weight, or a home chiplet unknown to its part.
    """
    phases = [p.phase for p in parts]
    if len(set(phases)) != len(phases):
        raise SpecError(name, "parts", f"distinct phase names, got {phases}")
    tasks: list[str] = []
    chiplets: dict[str, None] = {}
    time_s: dict[tuple[str, str], float] = {}
    home: dict[str, tuple[str, ...]] = {}
    for part in parts:
        validate_mapping(part.problem)
        if not (math.isfinite(part.weight) and part.weight >= 0):
            raise SpecError(name, f"{part.phase}.weight", f"a non-negative finite number, got {part.weight!r}")
        unknown = set(part.home) - set(part.problem.chiplets)
        if unknown:
            raise SpecError(name, f"{part.phase}.home", f"chiplets of the part, got {sorted(unknown)}")
        chiplets.update(dict.fromkeys(part.problem.chiplets))
        own = set(part.home)
        for k in part.problem.tasks:
            task = f"{part.phase}{PHASE_SEPARATOR}{k}"
            tasks.append(task)
            home[task] = tuple(c for c in part.problem.chiplets if c in own and (k, c) in part.problem.time_s)
            for c in part.problem.chiplets:
                if (k, c) in part.problem.time_s and (cross_phase or c in own):
                    time_s[task, c] = part.weight * part.problem.time_s[k, c]
    return MappingProblem(tuple(tasks), tuple(chiplets), time_s, name=name, home=home)


def split_joint_decision(decision: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Return phase -> (block -> chiplet) from a :func:`joint_mapping` decision (task ids ``"<phase>:<block>"``)."""
    out: dict[str, dict[str, str]] = {}
    for task, c in decision.items():
        phase, _, block = task.partition(PHASE_SEPARATOR)
        out.setdefault(phase, {})[block] = c
    return out


def restrict_to_home(problem: MappingProblem) -> MappingProblem:
    """Keep only each task's home pairs (the problem unchanged without ``home``); a task without home keeps all."""
    if problem.home is None:
        return problem
    kept = {(k, c): t for (k, c), t in problem.time_s.items() if c in problem.home.get(k, ()) or not
            problem.home.get(k)}
    return replace(problem, time_s=kept) if len(kept) < len(problem.time_s) else problem


def compatible_chiplets(problem: MappingProblem, task: str) -> tuple[str, ...]:
    """Return the chiplets ``task`` may run on, in ``problem.chiplets`` order."""
    return tuple(c for c in problem.chiplets if (task, c) in problem.time_s)


def compatible_pairs(problem: MappingProblem) -> list[tuple[str, str]]:
    """Return every compatible (task, chiplet) pair, tasks in order, then chiplets in order."""
    return [(k, c) for k in problem.tasks for c in problem.chiplets if (k, c) in problem.time_s]


def min_task_times(problem: MappingProblem) -> dict[str, float]:
    """Return ``min_c time_s[k, c]`` for every task with at least one compatible chiplet, seconds."""
    out: dict[str, float] = {}
    for k in problem.tasks:
        times = [problem.time_s[k, c] for c in compatible_chiplets(problem, k)]
        if times:
            out[k] = min(times)
    return out


def mapping_lower_bound(problem: MappingProblem) -> float:
    """Return ``max(max_k min_c t[k,c], sum_k min_c t[k,c] / n_chiplets)``, a lower bound on Eq. 5, seconds.

    Every task runs somewhere, at least as long as on its fastest chiplet, and all this work is shared by at
    most ``n_chiplets`` stages, so the slowest stage takes at least the average.
    """
    mins = min_task_times(problem)
    if not mins or not problem.chiplets:
        return 0.0
    return max(max(mins.values()), sum(mins.values()) / len(problem.chiplets))


def identical_chiplet_groups(problem: MappingProblem) -> list[tuple[str, ...]]:
    """Group chiplets whose time columns are identical (same compatible tasks, same times).

    Returns
    -------
    list[tuple[str, ...]]
        Groups of two or more interchangeable chiplets, each in ``problem.chiplets`` order.
    """
    by_column: dict[tuple[tuple[str, float], ...], list[str]] = {}
    for c in problem.chiplets:
        column = tuple((k, problem.time_s[k, c]) for k in problem.tasks if (k, c) in problem.time_s)
        by_column.setdefault(column, []).append(c)
    return [tuple(cs) for column, cs in by_column.items() if len(cs) > 1 and column]


def mapping_infeasibility(problem: MappingProblem) -> str | None:
    """Explain why no mapping exists, or return ``None`` when one does.

    A mapping exists iff every task has at least one compatible chiplet.

    Returns
    -------
    str | None
        A sentence naming the tasks without a compatible chiplet, or ``None``.

    Raises
    ------
    SpecError
        Duplicate ids or a bad ``time_s`` entry (see :func:`validate_mapping`).

    References
    ----------
    HYDRA Eq. 5 (Omega maps every task k to one chiplet).
    """
    validate_mapping(problem)
    orphans = [k for k in problem.tasks if not compatible_chiplets(problem, k)]
    if not orphans:
        return None
    shown = ", ".join(repr(k) for k in orphans[:10]) + (" ..." if len(orphans) > 10 else "")
    n_chiplets = len(problem.chiplets)
    return f"{len(orphans)} task(s) have no compatible chiplet among the {n_chiplets} chiplets: {shown}"


def stage_times(problem: MappingProblem, decision: dict[str, str]) -> dict[str, float]:
    """Return each chiplet's stage time ``t_c`` under a mapping (HYDRA Eq. 4), seconds.

    Parameters
    ----------
    problem : MappingProblem
    decision : dict[str, str]
        Task -> chiplet. Incompatible or unknown pairs contribute nothing (the checker reports them).

    Returns
    -------
    dict[str, float]
        Every chiplet of ``problem.chiplets`` (0.0 when idle) -> summed task time in seconds
        (:func:`chipdse.evaluators.latency.stage_times_s`, the serving re-score's own rule).

    References
    ----------
    HYDRA Eq. 4.
    """
    return stage_times_s(problem, decision)


def check_mapping(problem: MappingProblem, decision: dict[str, str]) -> tuple[float, list[str]]:
    """Recompute the bottleneck of a mapping and list the constraints it violates.

    Parameters
    ----------
    problem : MappingProblem
    decision : dict[str, str]
        Task -> chiplet.

    Returns
    -------
    (float, list[str])
        ``max_c t_c`` in seconds (0.0 without chiplets) over the compatible part of the mapping, and one
        message per violation: an unmapped task, an unknown task or chiplet, an incompatible pair. An empty
        list means feasible.

    References
    ----------
    HYDRA Eqs. 4-5.
    """
    validate_mapping(problem)
    violations: list[str] = []
    tasks, chiplets = set(problem.tasks), set(problem.chiplets)
    for k, c in decision.items():
        if k not in tasks:
            violations.append(f"unknown task {k!r}")
        elif c not in chiplets:
            violations.append(f"task {k!r} is mapped to unknown chiplet {c!r}")
        elif (k, c) not in problem.time_s:
            violations.append(f"task {k!r} is mapped to incompatible chiplet {c!r}")
    violations += [f"task {k!r} is not mapped" for k in problem.tasks if k not in decision]
    loads = stage_times(problem, decision)
    return max(loads.values(), default=0.0), violations


# --------------------------------------------------------------------------------------------- MILP (Pyomo)


def mapping_time_unit_s(problem: MappingProblem) -> float:
    """Return the power of ten (seconds) that brings :func:`mapping_lower_bound` into [1, 10).

    The models measure time in this unit, so the optimum is at least 1 unit: HiGHS's absolute gap (1e-6
    units) is negligible against it, and the CP-SAT tick (1e-6 units) costs at most ``n_tasks * 1e-6`` of the
    objective. Falls back to the largest task time, then to 1 s, when the bound is 0.
    """
    scale = mapping_lower_bound(problem) or max(problem.time_s.values(), default=0.0)
    if scale <= 0:
        return 1.0
    return 10.0 ** math.floor(math.log10(scale))


def restrict_to_upper_bound(problem: MappingProblem, upper_bound_s: float | None) -> MappingProblem:
    """Drop the (task, chiplet) pairs slower than a known feasible bottleneck ``upper_bound_s``.

    A mapping that uses a pair with ``t[k, c] > UB`` has a stage longer than UB >= the optimum, so no optimal
    mapping uses it: the optimum and every optimal mapping are kept. Each task's fastest pair is never
    dropped (it takes at most the optimum). ``None`` returns the problem unchanged.
    """
    if upper_bound_s is None:
        return problem
    kept = {p: t for p, t in problem.time_s.items() if t <= upper_bound_s}
    if len(kept) == len(problem.time_s):
        return problem
    home = None if problem.home is None else \
        {k: tuple(c for c in cs if (k, c) in kept) for k, cs in problem.home.items()}
    return replace(problem, time_s=kept, home=home)


def add_mapping_variables(m: pyo.ConcreteModel, problem: MappingProblem) -> None:
    """Add ``assign[k, c]`` (binary, compatible pairs only) and ``bottleneck_time`` (T >= 0, model units)."""
    add_choice_and_makespan_variables(m, m.pairs, "assign", "bottleneck_time")


def add_assignment_constraints(m: pyo.ConcreteModel, problem: MappingProblem) -> None:
    """Add ``task_assign[k]``: ``sum_c x[k, c] = 1`` over compatible c (Omega is a function; HYDRA Eq. 5)."""
    if not m.tasks:
        return

    def task_assign(_m: pyo.ConcreteModel, k: str) -> pyo.Expression:
        chiplets = compatible_chiplets(problem, k)
        if not chiplets:
            return pyo.Constraint.Infeasible
        return sum(_m.assign[k, c] for c in chiplets) == 1

    m.task_assign = pyo.Constraint(m.tasks, rule=task_assign)


def add_stage_time_constraints(m: pyo.ConcreteModel, problem: MappingProblem) -> None:
    """Add ``chiplet_time_ub[c]``: ``sum_k t[k, c] x[k, c] <= T`` (HYDRA Eqs. 4-5).

    Chiplets without compatible tasks get no constraint.
    """
    busy = [c for c in problem.chiplets if any((k, c) in problem.time_s for k in problem.tasks)]
    if not busy:
        return

    def chiplet_time(_m: pyo.ConcreteModel, c: str) -> pyo.Expression:
        return sum(_m.pair_time[k, c] * _m.assign[k, c] for k in problem.tasks if (k, c) in problem.time_s)

    def chiplet_time_ub(_m: pyo.ConcreteModel, c: str) -> pyo.Expression:
        return _m.chiplet_time[c] <= _m.bottleneck_time

    m.busy_chiplets = pyo.Set(initialize=busy, ordered=True)
    m.chiplet_time = pyo.Expression(m.busy_chiplets, rule=chiplet_time)
    m.chiplet_time_ub = pyo.Constraint(m.busy_chiplets, rule=chiplet_time_ub)


def add_bottleneck_bound_constraints(m: pyo.ConcreteModel, problem: MappingProblem) -> None:
    """Add the valid lower bounds ``bottleneck_task_lb`` and ``bottleneck_avg_lb`` on T.

    ``T >= max_k min_c t[k, c]`` (every task runs whole on one chiplet; the LP relaxation does not imply it,
    since it may split a task) and ``T >= (sum_k min_c t[k, c]) / n_chiplets`` (the average stage; implied by
    the LP relaxation but stated so that presolve sees it at once). Both follow from HYDRA Eqs. 4-5.
    """
    mins = min_task_times(problem)
    if not mins:
        return
    unit = pyo.value(m.time_unit_s)
    m.bottleneck_task_lb = pyo.Constraint(expr=m.bottleneck_time >= max(mins.values()) / unit)
    avg = sum(mins.values()) / len(problem.chiplets) / unit
    m.bottleneck_avg_lb = pyo.Constraint(expr=m.bottleneck_time >= avg)


def add_symmetry_breaking_constraints(m: pyo.ConcreteModel, problem: MappingProblem) -> None:
    """Add ``chiplet_load_order[c]``: ``t_{prev(c)} >= t_c`` within each group of identical chiplets.

    Chiplets with identical time columns are interchangeable, so some optimal mapping lists their stage times
    in non-increasing ``problem.chiplets`` order; requiring it removes the permuted copies of each solution.
    """
    pairs = [(a, b) for grp in identical_chiplet_groups(problem) for a, b in zip(grp, grp[1:], strict=False)]
    if not pairs:
        return
    m.ordered_chiplets = pyo.Set(initialize=[b for _, b in pairs], ordered=True)
    prev = {b: a for a, b in pairs}

    def chiplet_load_order(_m: pyo.ConcreteModel, c: str) -> pyo.Expression:
        return _m.chiplet_time[prev[c]] >= _m.chiplet_time[c]

    m.chiplet_load_order = pyo.Constraint(m.ordered_chiplets, rule=chiplet_load_order)


def build_mapping_milp(
    problem: MappingProblem, symmetry_breaking: bool = False, upper_bound_s: float | None = None
) -> pyo.ConcreteModel:
    """Build the bottleneck mapping MILP.

    Parameters
    ----------
    problem : MappingProblem
    symmetry_breaking : bool
        Order the stage times of chiplets with identical time columns. Off by default: HiGHS detects the
        symmetry itself, and on a 52-task instance with two groups of 5 identical chiplets the explicit
        ordering gave a larger 60 s gap on two seeds (0.85% vs 0.25%, 0.61% vs 0.34%).
    upper_bound_s : float, optional
        The bottleneck of a known feasible mapping, seconds; slower pairs are left out
        (:func:`restrict_to_upper_bound`).

    Returns
    -------
    pyomo ConcreteModel
        Sets ``tasks``, ``chiplets``, ``pairs`` (compatible (task, chiplet) pairs); param ``time_unit_s``
        (seconds per model time unit) and ``pair_time`` (model units); variables ``assign``,
        ``bottleneck_time``; constraints ``task_assign``, ``chiplet_time_ub``, ``bottleneck_task_lb``,
        ``bottleneck_avg_lb``, ``chiplet_load_order``; objective ``bottleneck_obj`` (minimize T).

    Raises
    ------
    SpecError
        A malformed problem, as :func:`validate_mapping` defines it.

    Notes
    -----
    ``min T  s.t.  sum_c x[k,c] = 1 (all k),  sum_k t[k,c] x[k,c] <= T (all c),  x binary`` over compatible
    pairs only, plus the bounds of :func:`add_bottleneck_bound_constraints` and the symmetry breaking of
    :func:`add_symmetry_breaking_constraints`. Times are in units of :func:`mapping_time_unit_s`; the
    objective and bound in seconds are ``value * time_unit_s``.

    References
    ----------
    HYDRA Eqs. 4-5.
    """
    validate_mapping(problem)
    problem = restrict_to_upper_bound(problem, upper_bound_s)
    m = pyo.ConcreteModel(name=problem.name)
    m.tasks = pyo.Set(initialize=list(problem.tasks), ordered=True)
    m.chiplets = pyo.Set(initialize=list(problem.chiplets), ordered=True)
    m.pairs = pyo.Set(initialize=compatible_pairs(problem), dimen=2, ordered=True)
    unit = mapping_time_unit_s(problem)
    m.time_unit_s = pyo.Param(initialize=unit)
    m.pair_time = pyo.Param(m.pairs, initialize=lambda _m, k, c: problem.time_s[k, c] / unit)
    add_mapping_variables(m, problem)
    add_assignment_constraints(m, problem)
    add_stage_time_constraints(m, problem)
    add_bottleneck_bound_constraints(m, problem)
    if symmetry_breaking:
        add_symmetry_breaking_constraints(m, problem)
    m.bottleneck_obj = pyo.Objective(expr=m.bottleneck_time, sense=pyo.minimize)
    return m


def decode_mapping_milp(m: pyo.ConcreteModel) -> dict[str, str]:
    """Return task -> chiplet from a solved MILP (the chiplet with the largest ``assign`` value per task)."""
    best: dict[str, tuple[float, str]] = {}
    for k, c in m.pairs:
        v = binary_value(m.assign[k, c])
        if k not in best or v > best[k][0]:
            best[k] = (v, c)
    return {k: c for k, (_, c) in best.items()}


# --------------------------------------------------------------------------------------------------- CP-SAT


@dataclass
class MappingCpsat(TickedCpsat):
    """A built CP-SAT model of the bottleneck mapping and the handles its decoder needs.

    Attributes
    ----------
    model : CpModel
    assign : dict[tuple[str, str], IntVar]
        ``assign_<k>_<c>`` Booleans over compatible pairs.
    bottleneck : IntVar
        T in units of ``resolution_s`` (minimized).
    resolution_s : float
        Seconds per integer time unit.
    ticks : dict[tuple[str, str], int]
        ``floor(time_s / resolution_s)`` per compatible pair.
    """

    model: cp_model.CpModel
    assign: dict[tuple[str, str], cp_model.IntVar]
    bottleneck: cp_model.IntVar
    resolution_s: float
    ticks: dict[tuple[str, str], int]


def mapping_resolution_s(problem: MappingProblem) -> float:
    """Return the CP-SAT tick: 1e-6 of :func:`mapping_time_unit_s` (1 ns when the bottleneck is in ms)."""
    return mapping_time_unit_s(problem) * 1e-6


def build_mapping_cpsat(
    problem: MappingProblem,
    resolution_s: float | None = None,
    hint: dict[str, str] | None = None,
    symmetry_breaking: bool = True,
    upper_bound_s: float | None = None,
) -> MappingCpsat:
    """Build the bottleneck mapping CP-SAT model with times in integer ticks.

    Parameters
    ----------
    problem : MappingProblem
    resolution_s : float, optional
        Seconds per tick; default :func:`mapping_resolution_s` (1 ns when tasks take milliseconds).
    hint : dict[str, str], optional
        A feasible task -> chiplet mapping (e.g. a heuristic's) given to CP-SAT as a solution hint.
    symmetry_breaking : bool
        Order the stage times of chiplets with identical time columns (on the 52-task instance with two
        groups of 5 identical chiplets, 60 s gap 0.10% vs 0.62% without on one seed, 0.84% vs 0.63% on
        another).
    upper_bound_s : float, optional
        The bottleneck of a known feasible mapping (e.g. the hint's), seconds; slower pairs are left out
        (:func:`restrict_to_upper_bound`).

    Returns
    -------
    MappingCpsat
        The model (``AddExactlyOne`` per task, ``stage_<c>``: ``sum ticks x <= T``, minimize T) and handles.

    Raises
    ------
    SpecError
        Malformed problem data, as for :func:`build_mapping_milp`.

    Notes
    -----
    Times are rounded DOWN to ticks (:class:`~chipdse.formulations.common.TickedCpsat`): the bound from
    :meth:`MappingCpsat.bound_s` is valid for the true optimum, the CP-SAT optimum is within
    ``n_tasks * resolution_s`` of it, and :func:`check_mapping` recomputes the bottleneck in seconds. The bounds of
    :func:`add_bottleneck_bound_constraints` are added in ticks (the average rounded up, as T is integer).

    References
    ----------
    HYDRA Eqs. 4-5.
    """
    validate_mapping(problem)
    problem = restrict_to_upper_bound(problem, upper_bound_s)
    res = resolution_s if resolution_s is not None else mapping_resolution_s(problem)
    pairs = compatible_pairs(problem)
    ticks = {p: time_ticks(problem.time_s[p], res) for p in pairs}
    cp = new_cpsat_model(problem.name)
    chiplet_idx = {c: i for i, c in enumerate(problem.chiplets)}
    task_idx = {k: i for i, k in enumerate(problem.tasks)}
    assign = {(k, c): cp.NewBoolVar(f"assign_{task_idx[k]}_{chiplet_idx[c]}") for k, c in pairs}
    horizon = sum(
        max((ticks[k, c] for c in compatible_chiplets(problem, k)), default=0) for k in problem.tasks
    )
    bottleneck = cp.NewIntVar(0, max(horizon, 0), "bottleneck")
    for k in problem.tasks:
        cp.AddExactlyOne(assign[k, c] for c in compatible_chiplets(problem, k))
    load: dict[str, cp_model.LinearExpr] = {}
    for c in problem.chiplets:
        terms = [(assign[k, c], ticks[k, c]) for k in problem.tasks if (k, c) in assign]
        if terms:
            load[c] = sum(t * x for x, t in terms)
            cp.Add(load[c] <= bottleneck).WithName(f"stage_{chiplet_idx[c]}")
    min_ticks = [
        min(ticks[k, c] for c in compatible_chiplets(problem, k))
        for k in problem.tasks
        if compatible_chiplets(problem, k)
    ]
    if min_ticks and problem.chiplets:
        cp.Add(bottleneck >= max(min_ticks)).WithName("bottleneck_task_lb")
        cp.Add(bottleneck >= -(-sum(min_ticks) // len(problem.chiplets))).WithName("bottleneck_avg_lb")
    if symmetry_breaking:
        for grp in identical_chiplet_groups(problem):
            for a, b in zip(grp, grp[1:], strict=False):
                cp.Add(load[a] >= load[b]).WithName(f"load_order_{chiplet_idx[b]}")
    cp.Minimize(bottleneck)
    if hint is not None:
        for (k, c), x in assign.items():
            cp.AddHint(x, hint.get(k) == c)
        cp.AddHint(bottleneck, max((int(v) for v in _hint_loads(problem, hint, ticks).values()), default=0))
    return MappingCpsat(cp, assign, bottleneck, res, ticks)


def _hint_loads(
    problem: MappingProblem, hint: dict[str, str], ticks: dict[tuple[str, str], int]
) -> dict[str, int]:
    """Return each chiplet's load in ticks under ``hint`` (pairs missing from ``ticks`` are skipped)."""
    loads = dict.fromkeys(problem.chiplets, 0)
    for k, c in hint.items():
        if (k, c) in ticks:
            loads[c] += ticks[k, c]
    return loads


def decode_mapping_cpsat(built: MappingCpsat, solver: cp_model.CpSolver) -> dict[str, str]:
    """Return task -> chiplet from a solved CP-SAT model."""
    return dict(chosen_keys(solver, built.assign))
