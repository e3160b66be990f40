"""Solve the tier / expert split (NOVA Sec. VI-E) with every method and return one :class:`Solution` each.

Methods
-------
``"milp-highs"``
    :func:`formulations.expert_split.build_expert_split_milp` through HiGHS (exact), MIP-started from
    ``"nova-kstar"``.
``"cpsat"``
    :func:`formulations.expert_split.build_expert_split_cpsat` through CP-SAT, hinted with ``"nova-kstar"``
    (exact up to the tick resolution, see the builder).
``"brute-force"``
    Every assignment of the active experts (exact; at most :data:`MAX_BRUTE_FORCE_EXPERTS` of them).
``"nova-kstar"``
    NOVA's adaptive policy: experts sorted by routed tokens, the hottest ``k*`` to Tier-2, ``k*`` found by
    binary search for the balance point (heuristic), :func:`nova_kstar_split`.
``"static-1-9"``
    NOVA's static split used in its Figs. 11-15: the hottest 10% of experts to Tier-2 (heuristic),
    :func:`static_split`.

Routing generators for experiments: :func:`routing_counts`.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numpy.typing import NDArray

from chipdse.core.errors import SpecError
from chipdse.core.solution import Solution, TerminationCondition
from chipdse.formulations.expert_split import (
    TIER1,
    TIER2,
    ExpertSplitProblem,
    active_experts,
    build_expert_split_cpsat,
    build_expert_split_milp,
    check_expert_split,
    decode_expert_split_cpsat,
    decode_expert_split_milp,
    expert_times_s,
    tier_loads_s,
)
from chipdse.solvers.backends import solve_cpsat, solve_pyomo
from chipdse.solvers.common import Methods, ProblemKind, Runner, enumeration_runner, settle
from chipdse.solvers.config import SolverConfig

MAX_BRUTE_FORCE_EXPERTS = 20
"""Most active experts ``"brute-force"`` enumerates (2**20 assignments)."""

STATIC_HOT_SHARE = 0.1
"""Share of experts NOVA's static split sends to Tier-2 ("top 10% most-selected experts as hot", Sec. III-A)."""

ROUTING_KINDS = ("uniform", "zipf", "concentrated")
"""Routing distributions accepted by :func:`routing_counts`."""

KIND = ProblemKind("expert-split", "min", frozenset({"milp-highs", "cpsat", "brute-force"}), check_expert_split,
                   extra=tier_loads_s, unit="s")
"""Checker, sense and exact methods of the tier split (NOVA Sec. VI-E), for :func:`solvers.common.settle`."""


def solve_expert_split(problem: ExpertSplitProblem, method: str = "milp-highs",
                       config: SolverConfig | None = None) -> Solution:
    """Assign experts to NOVA's tiers with ``method`` (one of :data:`EXPERT_SPLIT_METHODS`), minimizing the
    decode-step makespan (NOVA Sec. VI-E); arguments, status rule and errors as :meth:`solvers.common.Methods.solve`.

    Returns
    -------
    Solution
        ``problem="expert-split"``, ``sense="min"``; ``decision`` is expert -> tier (1 or 2); ``objective`` the
        makespan in seconds recomputed by :func:`formulations.expert_split.check_expert_split`; ``bound`` a
        lower bound in seconds (exact methods); ``extra`` holds ``tier1_s`` and ``tier2_s`` (each tier's busy
        time), plus ``k`` (experts on Tier-2) for the sorted heuristics. An instance without routed tokens
        (no experts, or all ``n_e = 0``) has makespan 0: exact methods return it as OPTIMAL without calling a
        solver. Every assignment is feasible, so there is no INFEASIBLE outcome; ``"brute-force"`` refuses
        (ValueError) more than :data:`MAX_BRUTE_FORCE_EXPERTS` active experts.
    """
    return SOLVERS.solve(problem, method, config)


def _sorted_split(problem: ExpertSplitProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """NOVA's k* or static split: the hottest experts on Tier-2, ``extra["k"]`` of them."""
    decision, k = (nova_kstar_split if method == "nova-kstar" else static_split)(problem)
    return settle(KIND, problem, method, decision, config, t0, extra={"k": k},
                  log_summary=f"{method}: hottest {k} of {problem.n_experts} experts on Tier-2")


def _exact(run: Runner) -> Runner:
    """``run`` on an instance with routed tokens; without any, the all-Tier-1 split of makespan 0 (no solver)."""

    def exact(problem: ExpertSplitProblem, method: str, config: SolverConfig, t0: float) -> Solution:
        if active_experts(problem):
            return run(problem, method, config, t0)
        decision = dict.fromkeys(range(problem.n_experts), TIER1)
        return settle(KIND, problem, method, decision, config, t0, bound=0.0, termination=TerminationCondition.OPTIMAL,
                      log_summary="trivial: no expert has routed tokens, makespan 0")

    return exact


def _solve_milp(problem: ExpertSplitProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Build (MIP start from ``nova-kstar``), solve and decode the MILP; bound in seconds."""
    start, _ = nova_kstar_split(problem)
    m = build_expert_split_milp(problem, hint=start)
    build_s = time.perf_counter() - t0
    res = solve_pyomo(m, config, warm_start=True)
    unit = float(m.time_unit_s.value)
    decision = decode_expert_split_milp(m, problem) if res.has_solution else None
    bound = res.bound * unit if res.bound is not None else None
    return settle(KIND, problem, method, decision, config, t0, reported=res, bound=bound, start=start,
                  unit=unit, build_s=build_s)


def _solve_cpsat(problem: ExpertSplitProblem, method: str, config: SolverConfig, t0: float) -> Solution:
    """Build (hinted with ``nova-kstar``), solve and decode the CP-SAT model; bound in seconds."""
    start, _ = nova_kstar_split(problem)
    built = build_expert_split_cpsat(problem, hint=start)
    build_s = time.perf_counter() - t0
    res, solver = solve_cpsat(built.model, config)
    decision = decode_expert_split_cpsat(built, solver, problem) if res.has_solution else None
    bound = built.bound_s(res.bound) if res.bound is not None else None
    return settle(KIND, problem, method, decision, config, t0, reported=res, bound=bound, start=start,
                  resolution=problem.n_experts * built.resolution_s, build_s=build_s,
                  extra={"resolution_s": built.resolution_s})


def hotness_order(problem: ExpertSplitProblem) -> list[int]:
    """Return experts sorted by routed tokens, descending (ties by index), NOVA's hot-to-cold order."""
    return sorted(range(problem.n_experts), key=lambda e: (-problem.tokens[e], e))


def prefix_split(problem: ExpertSplitProblem, k: int) -> dict[int, int]:
    """Return the decision that sends the ``k`` hottest experts (:func:`hotness_order`) to Tier-2."""
    order = hotness_order(problem)
    decision = dict.fromkeys(range(problem.n_experts), TIER1)
    for e in order[:k]:
        decision[e] = TIER2
    return decision


def nova_kstar_split(problem: ExpertSplitProblem) -> tuple[dict[int, int], int]:
    """Split the sorted experts at NOVA's balance point ``k*`` found by binary search.

    Returns
    -------
    (dict[int, int], int)
        Expert -> tier with the ``k*`` hottest experts on Tier-2 and the rest on Tier-1, and ``k*``.

    Raises
    ------
    SpecError
        Malformed problem data (from :func:`formulations.expert_split.expert_times_s`).

    Notes
    -----
    With experts sorted by ``n_e`` descending, let ``A(k) = sum_{j<k} t2_{(j)}`` (Tier-2 time of the ``k``
    hottest) and ``B(k) = sum_{j>=k} t1_{(j)}`` (Tier-1' time of the rest), with the per-expert times of
    :class:`formulations.expert_split.ExpertSplitProblem` (NOVA writes ``W_e / T``, the bytes-per-throughput
    shorthand of ``W_e I_e / T(I_e)``). ``A`` never decreases and ``B`` never increases in ``k``, so
    ``A(k) - B(k)`` is monotone and a binary search over ``k in [0, E]`` finds the smallest ``k`` with
    ``A(k) >= B(k)`` in ``O(log E)`` steps (on prefix sums). The balance "``A ~ B``" sits between ``k - 1``
    (Tier-1 longer) and ``k`` (Tier-2 longer); ``k*`` is the one of the two with the smaller makespan
    ``max(A, B)`` (ties to ``k``). Since ``max(A, B)`` is minimized where the two cross, ``k*`` is the best of
    the ``E + 1`` prefix splits of the sorted order; it is not optimal in general because an optimal split
    need not send a prefix of the hotness order to Tier-2 (expert sizes and the two rooflines differ).

    References
    ----------
    NOVA Sec. VI-E ("experts sorted by n_e are split at the boundary k* where the two tiers' completion times
    balance (sum_{e<=k*} W_e/T_2 ~ sum_{e>k*} W_e/T_1'), found by binary search").
    """
    t1, t2 = expert_times_s(problem)
    order = hotness_order(problem)
    n = len(order)
    a = np.concatenate([[0.0], np.cumsum(t2[order])])  # a[k] = Tier-2 time of the k hottest
    b = np.concatenate([np.cumsum(t1[order][::-1])[::-1], [0.0]])  # b[k] = Tier-1' time of the rest
    lo, hi = 0, n  # A(n) >= B(n) = 0 always holds
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] >= b[mid]:
            hi = mid
        else:
            lo = mid + 1
    k = lo
    if k > 0 and max(a[k - 1], b[k - 1]) < max(a[k], b[k]):
        k -= 1
    return prefix_split(problem, k), k


def static_split(problem: ExpertSplitProblem, hot_share: float = STATIC_HOT_SHARE) -> tuple[dict[int, int], int]:
    """Send the hottest ``ceil(hot_share * E)`` experts to Tier-2 and the rest to Tier-1 (NOVA's 1:9 split).

    Parameters
    ----------
    problem : ExpertSplitProblem
    hot_share : float
        Share of experts that count as hot, in [0, 1] (0.1: "top 10% most-selected experts as hot").

    Returns
    -------
    (dict[int, int], int)
        Expert -> tier, and the number of experts on Tier-2.

    Raises
    ------
    SpecError
        ``hot_share`` outside [0, 1].

    Notes
    -----
    NOVA profiles hotness offline; here the hot set is the hottest by this step's routed tokens (ties by
    index), i.e. the static split evaluated with perfect hotness knowledge.

    References
    ----------
    NOVA Sec. III-A (hot = top 10%), Sec. VI-C ("hot and cold experts to tier-2 and tier-1 at a 1:9 ratio"),
    Sec. VI-E (static 1:9 split used in Figs. 11-15).
    """
    if not 0 <= hot_share <= 1:
        msg = f"a hot share in [0, 1], got {hot_share!r}"
        raise SpecError(problem.name, "hot_share", msg)
    k = min(problem.n_experts, math.ceil(hot_share * problem.n_experts - 1e-9))
    return prefix_split(problem, k), k


def brute_force_split(problem: ExpertSplitProblem) -> tuple[dict[int, int], int]:
    """Enumerate every tier assignment of the active experts and return the best (tests only).

    Returns
    -------
    (dict[int, int], int)
        The first assignment (bit ``i`` of the mask set = i-th active expert on Tier-2, masks in increasing
        order) with the least makespan, inactive experts on Tier-1; and the number of assignments enumerated.

    Raises
    ------
    ValueError
        More than :data:`MAX_BRUTE_FORCE_EXPERTS` active experts.
    """
    experts = active_experts(problem)
    m = len(experts)
    if m > MAX_BRUTE_FORCE_EXPERTS:
        msg = f"brute force over {m} active experts exceeds the limit of {MAX_BRUTE_FORCE_EXPERTS}"
        raise ValueError(msg)
    t1, t2 = expert_times_s(problem)
    a1, a2 = t1[experts], t2[experts]
    bits = 1 << np.arange(m, dtype=np.int64)
    best_obj, best_mask = math.inf, 0
    chunk = 1 << 16
    for start in range(0, 1 << m, chunk):
        masks = np.arange(start, min(start + chunk, 1 << m), dtype=np.int64)
        on2 = (masks[:, None] & bits[None, :]) != 0
        span = np.maximum(np.where(on2, 0.0, a1).sum(axis=1), np.where(on2, a2, 0.0).sum(axis=1))
        i = int(np.argmin(span))
        if span[i] < best_obj:
            best_obj, best_mask = float(span[i]), int(masks[i])
    decision = dict.fromkeys(range(problem.n_experts), TIER1)
    for i, e in enumerate(experts):
        if best_mask >> i & 1:
            decision[e] = TIER2
    return decision, 1 << m


SOLVERS = Methods(KIND, {
    "milp-highs": _exact(_solve_milp), "cpsat": _exact(_solve_cpsat),
    "brute-force": _exact(enumeration_runner(KIND, brute_force_split, "assignments")),
    "nova-kstar": _sorted_split, "static-1-9": _sorted_split,
}, validate=expert_times_s, label="expert-split")
"""Every expert-split method behind :func:`solve_expert_split`."""

EXPERT_SPLIT_METHODS = SOLVERS.names
"""Method names accepted by :func:`solve_expert_split`."""


def routing_counts(n_experts: int, tokens: int, top_k: int, kind: str = "uniform",
                   seed: int | np.random.Generator = 0, zipf_s: float = 1.0,
                   hot_share: float = 0.05, hot_mass: float = 0.9) -> NDArray[np.int64]:
    """Draw one decode step's routed-token counts per expert.

    Parameters
    ----------
    n_experts : int
        Experts in the layer ``E >= 1``.
    tokens : int
        Tokens in the step (the decode batch), ``>= 0``.
    top_k : int
        Experts per token, ``1 <= top_k <= E``; each token picks ``top_k`` distinct experts.
    kind : str
        ``"uniform"`` (equal popularity), ``"zipf"`` (popularity of the expert of rank r proportional to
        ``r^-zipf_s``, ranks a random permutation of the experts) or ``"concentrated"`` (``hot_mass`` of the
        popularity on ``max(top_k, ceil(hot_share E))`` random experts, the rest spread evenly).
    seed : int or numpy Generator
        Seed of a fresh ``numpy.random.default_rng``, or a Generator to draw from.
    zipf_s, hot_share, hot_mass : float
        Shape parameters of ``"zipf"`` and ``"concentrated"``.

    Returns
    -------
    ndarray of int64, shape ``(n_experts,)``
        ``n_e``; sums to ``tokens * top_k``.

    Raises
    ------
    SpecError
        Bad sizes, unknown ``kind``, or shape parameters out of range.

    Notes
    -----
    Each token draws ``top_k`` experts without replacement with probability proportional to popularity (the
    Gumbel-top-k trick: the ``top_k`` largest ``log p_e + G``, ``G`` standard Gumbel). NOVA evaluates
    "concentrated, uniform, and 3:7-skew" routing (Fig. 16) without giving their parameters; these are
    chipdse's definitions.

    References
    ----------
    NOVA Sec. III-A, Fig. 4(b) (hot experts get about 5x the tokens of cold ones), Sec. VI-E (Fig. 16).
    """
    if n_experts < 1 or tokens < 0 or not 1 <= top_k <= n_experts:
        msg = f"n_experts >= 1, tokens >= 0, 1 <= top_k <= n_experts; got {n_experts}, {tokens}, {top_k}"
        raise SpecError("routing_counts", "sizes", msg)
    if kind not in ROUTING_KINDS:
        msg = f"one of {ROUTING_KINDS}, got {kind!r}"
        raise SpecError("routing_counts", "kind", msg)
    if zipf_s < 0 or not 0 < hot_share <= 1 or not 0 <= hot_mass <= 1:
        msg = f"zipf_s >= 0, 0 < hot_share <= 1, 0 <= hot_mass <= 1; got {zipf_s}, {hot_share}, {hot_mass}"
        raise SpecError("routing_counts", "shape", msg)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if kind == "uniform":
        pop = np.ones(n_experts)
    elif kind == "zipf":
        pop = rng.permutation(np.arange(1, n_experts + 1, dtype=float) ** -zipf_s)
    else:
        n_hot = min(n_experts, max(top_k, math.ceil(hot_share * n_experts)))
        pop = np.full(n_experts, (1 - hot_mass) / max(n_experts - n_hot, 1))
        pop[rng.choice(n_experts, size=n_hot, replace=False)] = hot_mass / n_hot
        pop = np.maximum(pop, 1e-300)
    if tokens == 0:
        return np.zeros(n_experts, dtype=np.int64)
    keys = np.log(pop / pop.sum())[None, :] + rng.gumbel(size=(tokens, n_experts))
    picks = np.argpartition(-keys, top_k - 1, axis=1)[:, :top_k]
    return np.bincount(picks.ravel(), minlength=n_experts).astype(np.int64)
