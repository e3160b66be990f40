"""Solve a QAPLIB instance with the placement formulation's exact models (QAP mode; ``formulations.qap``).

``solver="highs"`` is the RLT-1 MILP through Pyomo + HiGHS (``milp-highs``), ``"cpsat"`` the CP-SAT model; both
are warm-started from pairwise-swap local search. ``"bnb"`` is the branch and bound on the RLT-1 dual ascent
bound (``solvers.qap_bnb.qap_rlt_bnb``; the fastest proof here), ``"glb"`` the Gilmore-Lawler branch and bound;
both start from the best of the local search and FAQ with 2-opt (``solvers.qap_bnb.faq_two_opt``), so neither
returns worse than those heuristics.
The returned :class:`~chipdse.core.solution.Solution` carries the
QAP cost recomputed from the permutation (``decision``: facility -> location, 0-based), the solver's proven
bound and the gap.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from chipdse.core.qaplib import QapInstance, qap_cost
from chipdse.core.solution import Solution, TerminationCondition
from chipdse.formulations.qap import decision_to_perm, to_placement_problem
from chipdse.solvers.common import ProblemKind, settle
from chipdse.solvers.config import SolverConfig, WorkBudget, limit_reason
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.qap_bnb import faq_two_opt, qap_glb_bnb, qap_rlt_bnb

QAP_SOLVERS = {"highs": "milp-highs", "cpsat": "cpsat", "bnb": "rlt1-bnb", "glb": "glb-bnb"}
MAX_PRODUCT_VARIABLES = 150_000
"""Largest RLT-1 model built (product variables y; n = 24 with dense flow is about 150,000). Beyond it the Pyomo
build alone takes minutes and gigabytes, outside any solver time limit."""


def solve_qap(inst: QapInstance, solver: str = "highs", config: SolverConfig | None = None) -> Solution:
    """Solve a QAP exactly (or to the work limit) through the placement formulation.

    Parameters
    ----------
    inst : QapInstance
    solver : str
        ``"highs"``, ``"cpsat"``, ``"bnb"`` (RLT-1 dual ascent) or ``"glb"`` (Gilmore-Lawler).
    config : SolverConfig, optional
        Work limit, wall cap, relative gap, threads, seed.

    Returns
    -------
    Solution
        problem ``"qap"``; ``objective`` = the QAP cost of ``decision`` (list: location of each facility);
        ``bound`` the solver's proven lower bound (None when it proved nothing), ``status`` optimal / feasible
        / no_solution; ``wall_s`` includes the local-search warm start.

    Raises
    ------
    ValueError
        An unknown solver name, or an instance whose model would exceed :data:`MAX_PRODUCT_VARIABLES`.
    SpecError
        An instance the unordered-pair formulation cannot express (non-symmetric flow, nonzero diagonal).
    """
    if solver not in QAP_SOLVERS:
        msg = f"--solver: must be one of {sorted(QAP_SOLVERS)}, got {solver!r}"
        raise ValueError(msg)
    config = config or SolverConfig()
    t0 = time.perf_counter()
    if solver in ("bnb", "glb"):
        return _solve_bnb(inst, QAP_SOLVERS[solver], config, t0)
    swapped = not np.array_equal(inst.flow, inst.flow.T) and np.array_equal(inst.distance, inst.distance.T)
    if swapped:  # sum A_ij B_p(i)p(j) = sum B_kl A_q(k)q(l) with q = p^-1: solve with the roles exchanged
        inst = QapInstance(inst.name, inst.distance, inst.flow, inst.source)
    problem = to_placement_problem(inst)
    n_products = inst.n * (inst.n - 1) // 2 * 2 * len(problem.pair_volume)
    if n_products > MAX_PRODUCT_VARIABLES:
        msg = (f"{inst.source or inst.name}: n = {inst.n} gives an RLT-1 model with {n_products:,} product "
               f"variables, more than the {MAX_PRODUCT_VARIABLES:,} chipdse builds (about n = 24 with dense flow)")
        raise ValueError(msg)
    start = solve_placement(problem, "local-search", config, seed=config.seed)
    sol = solve_placement(problem, QAP_SOLVERS[solver], config, seed=config.seed, hint=start.decision)
    if sol.decision is None:
        return replace(sol, problem="qap", wall_s=time.perf_counter() - t0)
    perm = decision_to_perm(inst, sol.decision)
    if swapped:
        perm = np.argsort(perm)
        inst = QapInstance(inst.name, inst.distance, inst.flow, inst.source)
    return replace(sol, problem="qap", objective=float(qap_cost(inst, perm)), decision=[int(x) for x in perm],
                   wall_s=time.perf_counter() - t0)


def _solve_bnb(inst: QapInstance, method: str, config: SolverConfig, t0: float) -> Solution:
    """Branch and bound (``method`` ``"rlt1-bnb"`` or ``"glb-bnb"``) from the best of swap local search (symmetric
    instances) and FAQ + 2-opt; any square matrices, no symmetry needed. The heuristics' work is charged to the
    work limit first; the search gets the rest."""
    budget = WorkBudget.of(config, t0)
    start, cost = None, np.inf
    if np.array_equal(inst.flow, inst.flow.T) and not np.any(np.diag(inst.flow)) and not np.any(
            np.diag(inst.distance)):
        problem = to_placement_problem(inst)
        warm = solve_placement(problem, "local-search", config, seed=config.seed)
        if warm.decision is not None:
            start = decision_to_perm(inst, warm.decision)
            cost = qap_cost(inst, start)
    faq_cost, faq_units = np.inf, 0.0
    if budget.wall_left_s > 0:  # the wall cap (a safety net) may already be spent by the local search
        faq_perm, faq_cost, faq_units = faq_two_opt(inst.flow, inst.distance, seed=config.seed)
        budget.spend(faq_units)
        if faq_cost < cost:
            start = faq_perm
    search = qap_rlt_bnb if method == "rlt1-bnb" else qap_glb_bnb
    res = search(inst.flow, inst.distance, max(budget.left, 0.0), start=start,
                 time_limit_s=max(budget.wall_left_s, 0.0))
    term = TerminationCondition.OPTIMAL if res["proven"] else res["stopped"]
    reason = "" if res["proven"] else limit_reason(config, term, f"after {res['nodes']:,} nodes")
    return settle(QAP_KIND, inst, method, [int(x) for x in res["perm"]], config, t0, bound=float(res["bound"]),
                  termination=term, reason=reason,
                  extra={"nodes": res["nodes"], "work_units": res["work_units"] + faq_units,
                         "start_cost": float(min(cost, faq_cost)), "roles_exchanged": bool(res.get("exchanged"))})


def check_qap(inst: QapInstance, decision: list[int]) -> tuple[float, list[str]]:
    """QAP cost ``sum_ij A_ij B_p(i)p(j)`` of ``decision`` (location of each facility, 0-based) and its violations
    (not a permutation of ``range(n)``)."""
    if sorted(decision) != list(range(inst.n)):
        return float("inf"), [f"not a permutation of 0..{inst.n - 1}: {decision}"]
    return float(qap_cost(inst, np.array(decision))), []


QAP_KIND = ProblemKind("qap", "min", frozenset({"glb-bnb", "rlt1-bnb"}), check_qap, unit="QAP cost")
"""Checker and sense of the QAP (for :func:`solvers.common.settle`)."""
