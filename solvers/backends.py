"""Run built models: Pyomo models through HiGHS (or any solver Pyomo's new interface knows) and CP-SAT.

Only this module calls a solver. Formulations build models and decode values; this module maps each
solver's own codes through one table onto :class:`chipdse.core.solution.SolutionStatus` /
:class:`chipdse.core.solution.TerminationCondition`, and ``SolverConfig.work_limit`` onto each solver's
deterministic limit (HiGHS ``mip_max_nodes``, CP-SAT ``max_deterministic_time``; see :mod:`solvers.config`), with
``SolverConfig.time_limit_s`` as the wall-clock cap.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import highspy
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sparse
from ortools.sat.python import cp_model
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import SolutionStatus as PyoSolStatus
from pyomo.contrib.solver.common.results import TerminationCondition as PyoTerm
from pyomo.contrib.solver.solvers.highs import Highs

from chipdse.core.solution import SolutionStatus, TerminationCondition
from chipdse.solvers.config import (
    CPSAT_DTIME_PER_UNIT,
    HIGHS_ITERATIONS_PER_UNIT,
    HIGHS_MIP_ITERATIONS_PER_UNIT,
    SolverConfig,
    highs_nodes_per_unit,
)

_PYOMO_TERMINATION = {
    PyoTerm.convergenceCriteriaSatisfied: TerminationCondition.OPTIMAL,
    PyoTerm.maxTimeLimit: TerminationCondition.TIME_LIMIT,
    PyoTerm.iterationLimit: TerminationCondition.WORK_LIMIT,  # HiGHS's node limit (kSolutionLimit)
    PyoTerm.provenInfeasible: TerminationCondition.INFEASIBLE,
    PyoTerm.locallyInfeasible: TerminationCondition.INFEASIBLE,
    PyoTerm.infeasibleOrUnbounded: TerminationCondition.INFEASIBLE,
}

_CPSAT_STATUS = {
    cp_model.OPTIMAL: (SolutionStatus.OPTIMAL, TerminationCondition.OPTIMAL),
    cp_model.FEASIBLE: (SolutionStatus.FEASIBLE, TerminationCondition.WORK_LIMIT),
    cp_model.INFEASIBLE: (SolutionStatus.INFEASIBLE, TerminationCondition.INFEASIBLE),
    cp_model.UNKNOWN: (SolutionStatus.NO_SOLUTION, TerminationCondition.WORK_LIMIT),
    cp_model.MODEL_INVALID: (SolutionStatus.UNKNOWN, TerminationCondition.UNKNOWN),
}

HIGHS_ABS_GAP = 1e-6
"""HiGHS's default ``mip_abs_gap``: HiGHS also stops as optimal when incumbent and bound differ by this much, in the
model's own objective units."""


PyomoModel = pyo.ConcreteModel
"""The Pyomo model type the formulations build (for annotations outside this module, which alone imports Pyomo
among the solvers)."""


def model_value(component: object) -> float:
    """The value of a Pyomo expression, parameter or variable of a built model (``pyo.value``)."""
    return float(pyo.value(component))


@dataclass
class BackendResult:
    """What a solver run says, before the formulation decodes the decision."""

    status: SolutionStatus
    termination: TerminationCondition
    objective: float | None
    bound: float | None
    wall_s: float
    log_summary: str
    abs_gap: float = 0.0
    """Absolute gap, in the model's objective units, at which the solver stops as optimal besides ``rel_gap``."""
    work: float = 0.0
    """Work units the solve used (HiGHS nodes, at least one, or CP-SAT deterministic time, converted;
    :mod:`solvers.config`)."""

    @property
    def has_solution(self) -> bool:
        """True when an incumbent exists and its values are loaded / readable."""
        return self.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE)


_HIGHS_THREADS: list[int] = []
"""Thread count HiGHS's process-wide scheduler was started with (empty before the first solve)."""


def _highs_threads(threads: int) -> None:
    """Restart HiGHS's process-wide thread scheduler when a solve asks for a different thread count.

    HiGHS starts one global scheduler at its first solve; a later solve with another ``threads`` value fails
    with status 'unknown' ("scheduler has already been initialized") unless the scheduler is reset.
    """
    if _HIGHS_THREADS and _HIGHS_THREADS[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
    _HIGHS_THREADS[:] = [threads]


def highs_node_limit(config: SolverConfig, nonzeros: int) -> int:
    """HiGHS ``mip_max_nodes`` for ``config.work_limit`` on a model with ``nonzeros`` matrix entries (at least 1:
    the root); a node's cost grows with the model's size (:func:`solvers.config.highs_nodes_per_unit`)."""
    return int(min(max(1, round(config.work_limit * highs_nodes_per_unit(nonzeros))), 2**31 - 1))


def _highs_hooks(opt: object, model: pyo.ConcreteModel, config: SolverConfig, warm_start: bool) -> None:
    """Just before Pyomo runs HiGHS: set the node limit from the loaded model's size (unless ``config.native``
    sets ``mip_max_nodes``), and with ``warm_start`` pass the model's current variable values as a MIP start.

    Pyomo's ``highs`` solver keeps the ``highspy.Highs`` object and a map from Pyomo variables to HiGHS
    columns; just before ``run()`` we call ``Highs.setSolution`` with the values the formulation set.
    """
    original = opt._solve  # type: ignore[attr-defined]

    def _solve_hooked() -> object:
        highs = opt._solver_model  # type: ignore[attr-defined]
        options = opt._active_config.solver_options  # type: ignore[attr-defined]
        options.setdefault("mip_max_nodes", highs_node_limit(config, highs.getNumNz()))
        col = opt._pyomo_var_to_solver_var_map  # type: ignore[attr-defined]
        idx, val = [], []
        for v in model.component_data_objects(pyo.Var, active=True) if warm_start else ():
            if v.value is not None and id(v) in col:
                idx.append(col[id(v)])
                val.append(float(v.value))
        if idx:
            highs.setSolution(len(idx), np.array(idx, dtype=np.int32), np.array(val))
        return original()

    opt._solve = _solve_hooked  # type: ignore[attr-defined]


_PYOMO_LOCK = threading.Lock()
"""Pyomo solves are serialized within a process: its output capture (``pyomo.common.tee``) is process-global and
two solves on threads at once (a threaded Dask worker, ``--dask-local`` in-process) deadlock or fail."""


@contextlib.contextmanager
def _sigint_recorder() -> Iterator[list[bool]]:
    """Record Ctrl-C during a Pyomo HiGHS solve, so the caller can re-raise it after the solve returns.

    Pyomo sets ``HandleKeyboardInterrupt`` on highspy, which would turn the interrupt into a normal-looking
    "solve error"; without this record an interrupted sweep would go on and store the cut-short result as if it
    were finished. highspy >= 1.8 runs the solve in the calling thread, where no Python signal handler runs until
    HiGHS returns: the interrupt is then raised when the solve reaches its work limit. (Running the solve on a
    helper thread would stop it at once, but Pyomo's process-global output capture is not safe there: it closed
    the CLI's output stream under test runners.) Signal handlers can only be set in the main thread; elsewhere
    nothing is recorded.
    """
    seen = [False]
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handler(signum: int, frame: object) -> None:
        # Only record: raising here would unwind through Pyomo's output capture (pyomo.common.tee), which turns
        # the interrupt into a RuntimeError ("Deadlock closing ..."), a traceback instead of a clean exit 130.
        seen[0] = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def solve_pyomo(model: pyo.ConcreteModel, config: SolverConfig, solver: str = "highs",
                warm_start: bool = False) -> BackendResult:
    """Solve a Pyomo model and load the incumbent's values into it when there is one.

    Parameters
    ----------
    model : pyomo ConcreteModel
        A built model with exactly one active objective.
    config : SolverConfig
        Work limit (HiGHS: ``mip_max_nodes`` by :func:`highs_node_limit`), wall cap (``time_limit``), gap, threads,
        seed; ``native`` is passed as ``solver_options`` (and overrides these).
    solver : str
        Name in Pyomo's new solver factory (``"highs"`` by default; e.g. ``"gurobi_direct"``).
    warm_start : bool
        Pass the variables' current values as a MIP start (HiGHS only; other solvers ignore it).

    Returns
    -------
    BackendResult
        Status, termination (``WORK_LIMIT`` for the node limit, ``TIME_LIMIT`` for the wall cap), incumbent
        objective and bound (``None`` when there is none), wall time and work used (nodes / HIGHS_NODES_PER_UNIT).
        Infeasible and limit outcomes are results, not exceptions. A solver other than HiGHS gets the wall cap
        only (not reproducible under load).
    """
    # A fresh HiGHS interface per solve: Pyomo's factory hands out one shared instance, and the MIP-start
    # hook below must not outlive this call.
    opt = Highs() if solver == "highs" else SolverFactory(solver)
    if solver == "highs":
        _highs_threads(config.threads)
    if solver == "highs":
        _highs_hooks(opt, model, config, warm_start)
    options = dict(config.native)
    if solver == "highs":
        options.setdefault("random_seed", config.seed)
    t0 = time.perf_counter()
    with _PYOMO_LOCK, _sigint_recorder() as interrupted:
        res = opt.solve(
            model,
            tee=config.log,
            time_limit=config.time_limit_s,
            rel_gap=config.rel_gap,
            threads=config.threads,
            raise_exception_on_nonoptimal_result=False,
            load_solutions=False,
            solver_options=options,
        )
    if interrupted[0]:
        raise KeyboardInterrupt
    wall = time.perf_counter() - t0
    term = _PYOMO_TERMINATION.get(res.termination_condition, TerminationCondition.UNKNOWN)
    has_incumbent = res.solution_status in (PyoSolStatus.optimal, PyoSolStatus.feasible)
    objective = float(res.incumbent_objective) if has_incumbent and res.incumbent_objective is not None else None
    bound = res.objective_bound
    bound = float(bound) if bound is not None and abs(bound) != float("inf") else None
    if has_incumbent:
        res.solution_loader.load_vars()
        status = SolutionStatus.OPTIMAL if term == TerminationCondition.OPTIMAL else SolutionStatus.FEASIBLE
    elif term == TerminationCondition.INFEASIBLE:
        status = SolutionStatus.INFEASIBLE
    elif term in (TerminationCondition.TIME_LIMIT, TerminationCondition.WORK_LIMIT):
        status = SolutionStatus.NO_SOLUTION
    else:
        status = SolutionStatus.UNKNOWN
    if status == SolutionStatus.OPTIMAL and objective is not None and bound is None:
        bound = objective
    work, summary = 0.0, f"{solver}: {res.termination_condition.name}, incumbent={objective}, bound={bound}"
    if solver == "highs":
        highs = opt._solver_model  # type: ignore[attr-defined]
        nodes = max(int(highs.getInfo().mip_node_count), 0)
        work = max(nodes, 1) / highs_nodes_per_unit(highs.getNumNz())  # every solve costs at least its root
        summary += f", {nodes} nodes"
    abs_gap = float(options.get("mip_abs_gap", HIGHS_ABS_GAP)) if solver == "highs" else 0.0
    return BackendResult(status, term, objective, bound, wall, summary, abs_gap, work)


def _solve_cpsat_interruptible(solver: cp_model.CpSolver, model: cp_model.CpModel) -> int:
    """``solver.Solve(model)`` with Ctrl-C left to Python, so that it raises KeyboardInterrupt.

    CP-SAT's own SIGINT handler would stop the search and return a normal-looking FEASIBLE result, so a sweep
    would store a cut-short solve as finished. With it off, Python records the signal and raises
    KeyboardInterrupt as soon as the solve returns (at the latest at its work limit).
    """
    solver.parameters.catch_sigint_signal = False
    return solver.Solve(model)


def solve_cpsat(model: cp_model.CpModel, config: SolverConfig) -> tuple[BackendResult, cp_model.CpSolver]:
    """Solve a CP-SAT model.

    Parameters
    ----------
    model : CpModel
        A built model with an objective (or none, for feasibility).
    config : SolverConfig
        ``work_limit`` -> ``max_deterministic_time`` (x CPSAT_DTIME_PER_UNIT), ``time_limit_s`` ->
        ``max_time_in_seconds`` (the cap), ``rel_gap`` -> ``relative_gap_limit``, ``threads`` -> ``num_workers``
        (with ``interleave_search`` when > 1: a deterministic search, same objective and bound on every run),
        ``seed`` -> ``random_seed``, ``log`` -> ``log_search_progress``; ``native`` entries are set as CP-SAT
        parameters by name (after these).

    Returns
    -------
    (BackendResult, CpSolver)
        The normalized result (objective and bound in the model's own integer units; termination ``WORK_LIMIT``
        when the deterministic time ran out, ``TIME_LIMIT`` when the wall cap did) and the solver, so the
        formulation can read values with ``solver.Value``.
    """
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_deterministic_time = config.work_limit * CPSAT_DTIME_PER_UNIT
    p.max_time_in_seconds = config.time_limit_s
    p.interleave_search = config.threads > 1
    p.relative_gap_limit = config.rel_gap
    p.num_workers = config.threads
    p.random_seed = config.seed
    p.log_search_progress = config.log
    for key, value in config.native.items():
        setattr(p, key, value)
    t0 = time.perf_counter()
    code = _solve_cpsat_interruptible(solver, model)
    wall = time.perf_counter() - t0
    status, term = _CPSAT_STATUS.get(code, (SolutionStatus.UNKNOWN, TerminationCondition.UNKNOWN))
    dtime = solver.response_proto.deterministic_time
    if term == TerminationCondition.WORK_LIMIT and dtime < p.max_deterministic_time * (1 - 1e-9):
        term = TerminationCondition.TIME_LIMIT  # stopped before its deterministic budget: the wall cap
    has = status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE)
    objective = solver.ObjectiveValue() if has and model.HasObjective() else None
    bound = solver.BestObjectiveBound() if has and model.HasObjective() else None
    summary = (f"cp-sat: {solver.StatusName(code)}, incumbent={objective}, bound={bound}, "
               f"{solver.NumBranches()} branches, deterministic time {dtime:.3g}")
    return BackendResult(status, term, objective, bound, wall, summary, work=dtime / CPSAT_DTIME_PER_UNIT), solver


_BANNER_LOCK = threading.Lock()
_BANNER_SHOWN = []


def _new_highs() -> highspy.Highs:
    """A ``highspy.Highs``; the first one of the process is created with file descriptor 1 sent to /dev/null,
    because HiGHS prints its banner to stdout from C++ then (it would corrupt ``--json`` output)."""
    with _BANNER_LOCK:
        if _BANNER_SHOWN:
            return highspy.Highs()
        sys.stdout.flush()
        saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _BANNER_SHOWN.append(True)
        return h


def solve_dense_highs(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_binary: int, integral: bool,
                      cutoff: float | None, work_units: float, wall_s: float, n_continuous: int = 0
                      ) -> tuple[str, float, np.ndarray | None, float]:
    """Solve min x[-1] over dense rows with highspy directly (the max-link decomposition's node problems: too small
    and too many for a Pyomo model each).

    Parameters
    ----------
    rows : numpy.ndarray, shape (m, n)
        Constraint matrix; columns: ``n_binary`` binaries (or [0, 1] in the LP), ``n_continuous`` columns in
        [0, 1], then one free continuous column (the objective).
    lo, hi : numpy.ndarray, shape (m,)
        Row bounds (``-inf`` allowed in ``lo``).
    n_binary : int
    integral : bool
        MILP (True) or its LP relaxation.
    cutoff : float, optional
        Prune every node whose bound reaches it (MILP).
    work_units : float
        Deterministic work limit: ``mip_max_nodes`` (MILP) or ``simplex_iteration_limit`` (LP) at the calibrated
        rates of :mod:`chipdse.solvers.config`.
    wall_s : float
        Wall-clock safety cap, s.
    n_continuous : int

    Returns
    -------
    (status, bound, x, work)
        ``"ok"``, ``"pruned"`` or ``"failed"``; the dual bound; the solution (None unless ok); work units used
        (simplex iterations, root included, converted). One thread: deterministic.
    """
    h = _new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", max(wall_s, 0.1))
    h.setOptionValue("mip_rel_gap", 1e-7)
    nodes_per_unit = highs_nodes_per_unit(int(np.count_nonzero(rows)))
    if integral:
        h.setOptionValue("mip_max_nodes", int(min(max(1, round(work_units * nodes_per_unit)), 2**31 - 1)))
    else:
        h.setOptionValue("simplex_iteration_limit",
                         int(min(max(1, round(work_units * HIGHS_ITERATIONS_PER_UNIT)), 2**31 - 1)))
    n_cols = rows.shape[1]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_cols, rows.shape[0]
    lp.col_cost_ = np.r_[np.zeros(n_cols - 1), 1.0]
    lp.col_lower_ = np.zeros(n_cols)
    lp.col_upper_ = np.r_[np.ones(n_binary + n_continuous), highspy.kHighsInf]
    lp.row_lower_ = np.where(np.isinf(lo), -highspy.kHighsInf, lo)
    lp.row_upper_ = hi
    mat = sparse.csc_matrix(rows)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = mat.indptr, mat.indices, mat.data
    if integral:
        lp.integrality_ = ([highspy.HighsVarType.kInteger] * n_binary
                           + [highspy.HighsVarType.kContinuous] * (n_continuous + 1))
        if cutoff is not None:
            h.setOptionValue("objective_bound", float(cutoff))
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    iterations = max(info.simplex_iteration_count, 0)
    work = iterations / (HIGHS_MIP_ITERATIONS_PER_UNIT if integral else HIGHS_ITERATIONS_PER_UNIT)
    if integral and cutoff is not None and status in (highspy.HighsModelStatus.kInfeasible,
                                                     highspy.HighsModelStatus.kObjectiveBound):
        return "pruned", cutoff, None, work
    if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
                      highspy.HighsModelStatus.kSolutionLimit):
        return "failed", -math.inf, None, work
    if info.primal_solution_status != 2:  # no feasible point
        return "failed", -math.inf, None, work
    x = np.array(h.getSolution().col_value)
    value = info.mip_dual_bound if integral else info.objective_function_value
    return "ok", float(value), x, work
