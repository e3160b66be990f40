"""NOVA's near-memory stack model and the tier / expert split (NOVA Secs. IV-A, V-B, VI-E), issue 7."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.errors import SpecError
from chipdse.core.solution import SolutionStatus
from chipdse.evaluators.nmp import (
    NOVA_TIERS,
    ExecutionMode,
    NovaTiers,
    best_mode,
    cross_tier_fraction,
    gqa_decode_intensity,
    mean_tokens_per_expert,
    mode_times_s,
    moe_expert_intensity,
    ssm_decode_intensity,
    tier1_cross_throughput_flops,
    tier_throughput_flops,
)
from chipdse.formulations.expert_split import (
    TIER1,
    TIER2,
    ExpertSplitProblem,
    build_expert_split_cpsat,
    build_expert_split_milp,
    check_expert_split,
    expert_times_s,
)
from chipdse.solvers.backends import solve_cpsat
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.expert_split import (
    EXPERT_SPLIT_METHODS,
    nova_kstar_split,
    routing_counts,
    solve_expert_split,
    static_split,
)

CFG = SolverConfig(time_limit_s=20.0, threads=1)
TOL = 1e-6


# ------------------------------------------------------------------------------------------- rooflines


@pytest.mark.parametrize(("intensity", "tier1", "tier2"), [
    (1.0, 16e12, 4e12),      # Tier-1: min(32, 1 x 16); Tier-2: min(64, 1 x 4) TFLOPS
    (2.0, 32e12, 8e12),      # Tier-1 ridge at 2 Op/B
    (16.0, 32e12, 64e12),    # Tier-2 ridge at 16 Op/B
    (1000.0, 32e12, 64e12),  # both compute-bound
])
def test_tier_rooflines_match_nova(intensity: float, tier1: float, tier2: float) -> None:
    """T_k(I) = min(C_k, I B_k) with (32 TFLOPS, 16 TB/s) and (64 TFLOPS, 4 TB/s) (NOVA Sec. VI-E)."""
    t = NOVA_TIERS
    assert tier_throughput_flops(intensity, t.tier1_peak_flops, t.tier1_bandwidth_Bps) == pytest.approx(tier1)
    assert tier_throughput_flops(intensity, t.tier2_peak_flops, t.tier2_bandwidth_Bps) == pytest.approx(tier2)


def test_rooflines_vectorized_and_halved_tier1() -> None:
    """The roofline is elementwise over arrays; Tier-1' is (16 TFLOPS, 8 TB/s)."""
    i = np.array([[0.5, 1.0], [2.0, 100.0]])
    assert tier_throughput_flops(i, 32e12, 16e12) == pytest.approx(np.array([[8e12, 16e12], [32e12, 32e12]]))
    assert tier1_cross_throughput_flops(i) == pytest.approx(np.array([[4e12, 8e12], [16e12, 16e12]]))


@pytest.mark.parametrize(("intensity", "alpha"), [
    (1.0, 8 / (8 + 4)),       # T1' = 8, T2 = 4 TFLOPS
    (2.0, 16 / (16 + 8)),     # T1' = 16 (its ridge), T2 = 8
    (4.0, 16 / (16 + 16)),    # T2 = 16
    (16.0, 16 / (16 + 64)),   # T2 at its peak
    (1000.0, 16 / (16 + 64)),
])
def test_alpha_star_by_hand(intensity: float, alpha: float) -> None:
    """alpha* = T1'(I) / (T1'(I) + T2(I)) (NOVA Sec. VI-E), values worked out by hand."""
    assert float(cross_tier_fraction(intensity)) == pytest.approx(alpha)


def test_mode_times_and_best_mode() -> None:
    """F / T1, F / T2, F / (T1' + T2); Tier-1 wins below 4 Op/B, cross-tier above (NOVA Sec. V-B)."""
    flops = 1e12
    times = mode_times_s(flops, np.array([1.0, 16.0]))
    assert times[0] == pytest.approx([flops / 16e12, flops / 4e12, flops / 12e12])
    assert times[1] == pytest.approx([flops / 32e12, flops / 64e12, flops / 80e12])
    modes, best = best_mode(flops, np.array([1.0, 3.0, 8.0, 16.0]))
    assert list(modes) == [ExecutionMode.TIER1, ExecutionMode.TIER1, ExecutionMode.CROSS, ExecutionMode.CROSS]
    assert best[3] == pytest.approx(flops / 80e12)
    assert mode_times_s(0.0, 0.0) == pytest.approx([0.0, 0.0, 0.0])
    with pytest.raises(SpecError, match="positive intensity"):
        mode_times_s(1.0, 0.0)


def test_decode_intensities() -> None:
    """GQA 16:1 gives 16 Op/B, MoE Op/B equals routed tokens in BF16, SSM is low (NOVA Sec. III-A)."""
    assert float(gqa_decode_intensity(16)) == pytest.approx(16.0)
    assert moe_expert_intensity([0, 3, 10]) == pytest.approx([0.0, 3.0, 10.0])
    assert 1.0 <= ssm_decode_intensity() <= 3.0
    assert mean_tokens_per_expert(64, 6, 128) == pytest.approx(3.0)


def test_density_gain() -> None:
    """4F2 cell (6/4 = 1.5x) times POC area 72% (about 1.39x) gives 2.085 ~ 2.09x (NOVA Sec. IV-A)."""
    assert 6 / 4 == 1.5
    assert 1 / 0.72 == pytest.approx(1.39, abs=0.005)
    assert 1.5 * 1.39 == pytest.approx(2.085)
    assert 1.5 * 1.39 == pytest.approx(2.09, abs=0.0051)  # 2.085 rounds half up to the paper's 2.09


def test_bad_tiers_rejected() -> None:
    """A zero peak and a derating above 1 are user errors with the value in the message."""
    with pytest.raises(SpecError, match="tier2_peak_flops"):
        NovaTiers(tier2_peak_flops=0.0)
    with pytest.raises(SpecError, match="1.5"):
        NovaTiers(cross_tier_factor=1.5)
    with pytest.raises(SpecError, match="non-negative"):
        tier_throughput_flops(-1.0, 1.0, 1.0)


# ---------------------------------------------------------------------------------------- expert split

HAND = ExpertSplitProblem(weight_bytes=(1e9,) * 4, tokens=(16, 8, 2, 1))
"""Per-expert times by hand (BF16, I_e = n_e, F_e = 1e9 n_e): Tier-1' = F / min(16e12, 8e12 n) =
[1e-3, 5e-4, 1.25e-4, 1.25e-4] s; Tier-2 = F / min(64e12, 4e12 n) = 2.5e-4 s each (memory-bound, W / B_2)."""


def test_expert_times_by_hand() -> None:
    """Per-expert times on Tier-1' and Tier-2 match the hand values of HAND."""
    t1, t2 = expert_times_s(HAND)
    assert t1 == pytest.approx([1e-3, 5e-4, 1.25e-4, 1.25e-4])
    assert t2 == pytest.approx([2.5e-4] * 4)


def test_kstar_by_hand() -> None:
    """Prefix splits k = 0..4 have (Tier-2, Tier-1') = (0, 1.75), (0.25, 0.75), (0.5, 0.25), (0.75, 0.125),
    (1.0, 0) ms; Tier-2 first reaches Tier-1' at k = 2, which beats k = 1 (0.5 vs 0.75 ms): k* = 2.
    The static 1:9 split takes ceil(0.4) = 1 hot expert: 0.75 ms. The optimum is 0.5 ms (brute force)."""
    decision, k = nova_kstar_split(HAND)
    assert k == 2
    assert decision == {0: TIER2, 1: TIER2, 2: TIER1, 3: TIER1}
    assert check_expert_split(HAND, decision) == (pytest.approx(5e-4), [])
    sdec, sk = static_split(HAND)
    assert sk == 1
    assert check_expert_split(HAND, sdec)[0] == pytest.approx(7.5e-4)
    for method in EXPERT_SPLIT_METHODS:
        sol = solve_expert_split(HAND, method, CFG)
        want = 7.5e-4 if method == "static-1-9" else 5e-4
        assert sol.objective == pytest.approx(want), (method, sol.status, sol.log_summary, sol.reason)


def test_checker_lists_violations() -> None:
    """Missing experts, unknown experts and bad tiers are reported, not raised."""
    _, violations = check_expert_split(HAND, {0: 1, 1: 3, 7: 2})
    text = "; ".join(violations)
    assert "without a tier" in text and "unknown experts" in text and "other than 1 and 2" in text


def _instance(n: int, seed: int, kind: str) -> ExpertSplitProblem:
    """Return ``n`` experts of random sizes (1-20 MB) with routed counts of one step (batch 32, top-4)."""
    rng = np.random.default_rng(seed)
    sizes = tuple(float(x) for x in rng.uniform(1e6, 2e7, size=n))
    tokens = tuple(int(x) for x in routing_counts(n, 32, min(4, n), kind, rng))
    return ExpertSplitProblem(sizes, tokens)


@pytest.mark.parametrize(("n", "seed", "kind"), [(6, 0, "uniform"), (10, 1, "zipf"), (13, 2, "concentrated"),
                                                 (16, 3, "zipf"), (16, 4, "uniform")])
def test_exact_methods_agree_with_brute_force(n: int, seed: int, kind: str) -> None:
    """MILP and CP-SAT reach the brute-force optimum; CP-SAT's floor-rounded bound stays below it."""
    problem = _instance(n, seed, kind)
    brute = solve_expert_split(problem, "brute-force", CFG)
    for method in ("milp-highs", "cpsat"):
        sol = solve_expert_split(problem, method, CFG)
        assert sol.status == SolutionStatus.OPTIMAL, method
        assert sol.objective == pytest.approx(brute.objective, rel=TOL), method
        assert sol.bound is not None and sol.bound <= brute.objective * (1 + TOL), method


def test_hint_is_feasible_when_fixed() -> None:
    """The nova-kstar hint, with CP-SAT told to fix the hinted values, is a feasible model solution."""
    problem = _instance(12, 7, "zipf")
    hint, _ = nova_kstar_split(problem)
    built = build_expert_split_cpsat(problem, hint=hint)
    cfg = SolverConfig(time_limit_s=10.0, threads=1, native={"fix_variables_to_their_hinted_value": True})
    res, _ = solve_cpsat(built.model, cfg)
    assert res.has_solution
    m = build_expert_split_milp(problem, hint=hint)
    assert all(m.expert_on_tier2[e].value in (0, 1) for e in m.experts)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.floats(1e6, 5e7), st.integers(0, 40)), min_size=1, max_size=12))
def test_exact_never_worse_than_heuristics(experts: list[tuple[float, int]]) -> None:
    """MILP and CP-SAT are never worse than NOVA's k* split, which is never worse than the static 1:9 split."""
    problem = ExpertSplitProblem(tuple(w for w, _ in experts), tuple(n for _, n in experts))
    kstar = solve_expert_split(problem, "nova-kstar", CFG).objective
    static = solve_expert_split(problem, "static-1-9", CFG).objective
    assert kstar <= static * (1 + 1e-12)
    for method in ("milp-highs", "cpsat", "brute-force"):
        sol = solve_expert_split(problem, method, CFG)
        assert sol.objective <= kstar * (1 + TOL), method


@pytest.mark.parametrize("method", EXPERT_SPLIT_METHODS)
@pytest.mark.parametrize("tokens", [(), (0, 0, 0)])
def test_degenerate_instances(method: str, tokens: tuple[int, ...]) -> None:
    """No experts, or no routed tokens: makespan 0 from every method, exact ones OPTIMAL with bound 0."""
    problem = ExpertSplitProblem((1e7,) * len(tokens), tokens)
    sol = solve_expert_split(problem, method, CFG)
    assert sol.objective == 0.0
    assert set(sol.decision) == set(range(len(tokens)))
    if sol.exact:
        assert sol.status == SolutionStatus.OPTIMAL and sol.bound == 0.0


def test_bad_problems_rejected() -> None:
    """Negative tokens, a length mismatch and an unknown method are errors naming the value."""
    with pytest.raises(SpecError, match="-1"):
        solve_expert_split(ExpertSplitProblem((1e6,), (-1,)), "nova-kstar")
    with pytest.raises(SpecError, match="2 experts"):
        solve_expert_split(ExpertSplitProblem((1e6, 1e6), (1,)), "nova-kstar")
    with pytest.raises(ValueError, match="unknown expert-split method"):
        solve_expert_split(HAND, "greedy")


@pytest.mark.parametrize("kind", ["uniform", "zipf", "concentrated"])
def test_routing_counts_seeded(kind: str) -> None:
    """Counts sum to tokens x top_k, no expert exceeds the token count, and a seed fixes the draw."""
    a = routing_counts(64, 32, 6, kind, seed=5)
    b = routing_counts(64, 32, 6, kind, seed=5)
    assert a.sum() == 32 * 6 and a.max() <= 32 and np.array_equal(a, b)
    if kind == "concentrated":
        top = np.sort(a)[::-1][: math.ceil(0.05 * 64)]
        assert top.min() > np.median(a)
