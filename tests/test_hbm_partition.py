"""HBM partition (HYDRA Eq. 1): every method against an exhaustive enumeration written here independently."""

from __future__ import annotations

import itertools

import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.errors import SpecError
from chipdse.core.solution import SolutionStatus, TerminationCondition
from chipdse.formulations.hbm_partition import (
    HbmPartitionProblem,
    build_hbm_partition_cpsat,
    build_hbm_partition_milp,
    check_hbm_partition,
    cpsat_unit_bytes,
    decode_hbm_partition_milp,
    group_concurrency,
    hbm_partition_infeasibility,
)
from chipdse.solvers.backends import solve_pyomo
from chipdse.solvers.hbm_partition import HBM_PARTITION_METHODS, solve_hbm_partition
from tests.solution_checks import CONFIG, assert_checked, assert_identifies, assert_infeasible

EXACT = ("milp-highs", "cpsat", "enumeration")
GB = 10**9

# Nemotron-H-like group sizes (bytes): Mamba weights ~5 GB with ~45 MB of SSM state per request;
# attention + MLP weights ~4 GB with ~42 MB of KV cache per request at the workload's context length.
NEMOTRON_WEIGHTS = {"mamba": 5 * GB, "attention": 4 * GB}
NEMOTRON_PER_REQUEST = {"mamba": 45 * 10**6, "attention": 42 * 10**6}


def oracle(n_hbm: int, capacity: int, weights: dict[str, int], per_request: dict[str, int]) -> int | None:
    """Best min_g r_g over all (N_g) with N_g >= 1 summing to n_hbm, weights fitting; integer bytes only."""
    groups = list(weights)
    best = None
    for counts in itertools.product(range(1, n_hbm + 1), repeat=len(groups)):
        if sum(counts) != n_hbm:
            continue
        free = [n * capacity - weights[g] for n, g in zip(counts, groups, strict=True)]
        if min(free) < 0:
            continue
        value = min(f // per_request[g] for f, g in zip(free, groups, strict=True))
        best = value if best is None else max(best, value)
    return best


def assert_consistent(problem: HbmPartitionProblem, method: str, expected: int | None) -> None:
    """Check one method's Solution against the oracle value (``None`` = infeasible)."""
    sol = solve_hbm_partition(problem, method, CONFIG)
    assert_identifies(sol, "hbm-partition", "max", method)
    if expected is None:
        assert_infeasible(sol)
        assert sol.reason
        return
    assert_checked(sol, check_hbm_partition, problem)
    if method in EXACT:
        assert sol.exact
        assert sol.status == SolutionStatus.OPTIMAL
        assert sol.objective == expected
        assert sol.bound == expected
    else:
        assert not sol.exact and sol.bound is None
        assert sol.status == SolutionStatus.FEASIBLE
        assert sol.objective <= expected


def assert_hand_computed(
    problem: HbmPartitionProblem, method: str, stacks: dict[str, int], objective: int, requests: dict[str, int]
) -> None:
    """Check one method's Solution against a partition worked out by hand (stacks N_g, min r_g, each r_g)."""
    sol = solve_hbm_partition(problem, method, CONFIG)
    assert sol.decision == stacks
    assert sol.objective == objective
    assert sol.extra["requests"] == requests


@pytest.mark.parametrize("capacity_gb", [8, 16, 24])
@pytest.mark.parametrize("n_hbm", [2, 5, 9, 16])
@pytest.mark.parametrize("method", HBM_PARTITION_METHODS)
def test_methods_match_enumeration_on_nemotron_like_groups(capacity_gb: int, n_hbm: int, method: str) -> None:
    """MILP and CP-SAT equal exhaustive enumeration of (N_M, N_A); the heuristic never beats it."""
    problem = HbmPartitionProblem(
        n_hbm=n_hbm,
        capacity_bytes=float(capacity_gb * GB),
        weight_bytes={g: float(w) for g, w in NEMOTRON_WEIGHTS.items()},
        per_request_bytes={g: float(s) for g, s in NEMOTRON_PER_REQUEST.items()},
    )
    expected = oracle(n_hbm, capacity_gb * GB, NEMOTRON_WEIGHTS, NEMOTRON_PER_REQUEST)
    assert expected is not None
    assert_consistent(problem, method, expected)


@pytest.mark.parametrize("capacity_gb", [8, 16, 24])
@pytest.mark.parametrize("n_hbm", [2, 5, 9, 16])
def test_linear_milp_form_matches_enumeration_on_nemotron_like_groups(capacity_gb: int, n_hbm: int) -> None:
    """The paper's linear form S_g r_g <= C N_g - W_g (in GB) is right on realistic, MB-round data."""
    problem = HbmPartitionProblem(
        n_hbm, float(capacity_gb * GB), dict(NEMOTRON_WEIGHTS), dict(NEMOTRON_PER_REQUEST)
    )
    m = build_hbm_partition_milp(problem, capacity="linear")
    res = solve_pyomo(m, CONFIG)
    assert res.status == SolutionStatus.OPTIMAL
    objective, violations = check_hbm_partition(problem, decode_hbm_partition_milp(m))
    assert violations == []
    assert objective == oracle(n_hbm, capacity_gb * GB, NEMOTRON_WEIGHTS, NEMOTRON_PER_REQUEST)


@pytest.mark.parametrize("method", EXACT)
@pytest.mark.parametrize(
    ("n_hbm", "weights", "expected"),
    [
        # 1-byte weights: the linear form's RHS of 1e-9 GB made HiGHS presolve report "infeasible".
        # (1, 2) or (2, 1): r = floor((8e9 - 1) / 1e6) = 7999 on the 1-stack group.
        (3, (1, 1), 7999),
        # (2, 2): (16e9 - 1) / 1e6 = 15999.999999, within HiGHS's integrality tolerance of 16000; floor 15999.
        (4, (0, 1), 15999),
    ],
)
def test_floor_edge_cases_found_by_hypothesis(
    method: str, n_hbm: int, weights: tuple[int, int], expected: int
) -> None:
    problem = HbmPartitionProblem(
        n_hbm, 8e9, {"g0": float(weights[0]), "g1": float(weights[1])}, {"g0": 1e6, "g1": 1e6}
    )
    sol = solve_hbm_partition(problem, method, CONFIG)
    assert sol.status == SolutionStatus.OPTIMAL
    assert sol.objective == expected == sol.bound


@pytest.mark.parametrize("method", HBM_PARTITION_METHODS)
def test_hand_computed_instance(method: str) -> None:
    """Five 16 GB stacks; Mamba W = 5 GB, S = 45 MB; attention W = 4 GB, KV = 42 MB per request.

    (N_M, N_A) = (1, 4): r_M = floor(11e9 / 45e6) = 244,  r_A = floor(60e9 / 42e6) = 1428  -> min 244
                 (2, 3): r_M = floor(27e9 / 45e6) = 600,  r_A = floor(44e9 / 42e6) = 1047  -> min 600
                 (3, 2): r_M = floor(43e9 / 45e6) = 955,  r_A = floor(28e9 / 42e6) = 666   -> min 666
                 (4, 1): r_M = floor(59e9 / 45e6) = 1311, r_A = floor(12e9 / 42e6) = 285   -> min 285
    The optimum is (3, 2) with 666 concurrent requests.
    """
    problem = HbmPartitionProblem(
        5, 16e9, {"mamba": 5e9, "attention": 4e9}, {"mamba": 45e6, "attention": 42e6}
    )
    assert_hand_computed(problem, method, {"mamba": 3, "attention": 2}, 666, {"mamba": 955, "attention": 666})


@pytest.mark.parametrize("method", EXACT)
def test_floor_at_an_exact_quotient(method: str) -> None:
    """Eq. 1's floor when the quotient is an exact integer (no rounding slack either way).

    Four 16 GB stacks; group a: W = 4 GB, S = 40 MB; group b: W = 8 GB, S = 60 MB.
    (1, 3): r_a = 12e9 / 40e6 = 300,  r_b = floor(40e9 / 60e6) = 666 -> 300
    (2, 2): r_a = 28e9 / 40e6 = 700,  r_b = 24e9 / 60e6 = 400       -> 400 (both quotients exact)
    (3, 1): r_a = 44e9 / 40e6 = 1100, r_b = floor(8e9 / 60e6) = 133  -> 133
    """
    problem = HbmPartitionProblem(4, 16e9, {"a": 4e9, "b": 8e9}, {"a": 40e6, "b": 60e6})
    assert_hand_computed(problem, method, {"a": 2, "b": 2}, 400, {"a": 700, "b": 400})


@pytest.mark.parametrize("method", HBM_PARTITION_METHODS)
def test_weights_that_do_not_fit_are_infeasible(method: str) -> None:
    """Two 16 GB stacks: attention weights of 18.2 GB need 2 stacks, Mamba needs 1: 3 > 2."""
    problem = HbmPartitionProblem(
        2, 16e9, {"mamba": 5e9, "attention": 18.2e9}, {"mamba": 45e6, "attention": 42e6}
    )
    sol = solve_hbm_partition(problem, method, CONFIG)
    assert sol.status == SolutionStatus.INFEASIBLE
    assert sol.termination == TerminationCondition.INFEASIBLE
    assert sol.decision is None and sol.objective is None and sol.bound is None
    assert "attention weights need 18.2 GB" in sol.reason
    assert "16.0 GB" in sol.reason


def test_fewer_stacks_than_groups_is_infeasible() -> None:
    problem = HbmPartitionProblem(1, 16e9, {"mamba": 1e9, "attention": 1e9}, {"mamba": 1e6, "attention": 1e6})
    reason = hbm_partition_infeasibility(problem)
    assert reason is not None and "at least one stack" in reason
    assert solve_hbm_partition(problem, "cpsat", CONFIG).status == SolutionStatus.INFEASIBLE


def test_checker_lists_violations() -> None:
    problem = HbmPartitionProblem(
        3, 16e9, {"mamba": 5e9, "attention": 20e9}, {"mamba": 45e6, "attention": 42e6}
    )
    objective, violations = check_hbm_partition(problem, {"mamba": 2, "attention": 1})
    assert objective == group_concurrency(problem, "attention", 1) < 0
    assert any("attention weights need 20.000 GB" in v for v in violations)
    _, violations = check_hbm_partition(problem, {"mamba": 0, "attention": 2, "kv": 1})
    assert any("unknown group 'kv'" in v for v in violations)
    assert any("'mamba' has 0 stacks" in v for v in violations)
    assert any("stacks sum to 2" in v for v in violations)
    _, violations = check_hbm_partition(problem, {"mamba": 1})
    assert any("'attention' has no stack count" in v for v in violations)
    objective, violations = check_hbm_partition(problem, {"mamba": 1, "attention": 2})
    assert violations == [] and objective == min(244, 285)


def test_malformed_problem_and_unknown_method_raise() -> None:
    with pytest.raises(SpecError, match="per_request_bytes"):
        hbm_partition_infeasibility(HbmPartitionProblem(2, 16e9, {"a": 1e9}, {"b": 1e6}))
    with pytest.raises(SpecError, match="positive finite bytes per request"):
        hbm_partition_infeasibility(HbmPartitionProblem(2, 16e9, {"a": 1e9}, {"a": 0.0}))
    problem = HbmPartitionProblem(2, 16e9, {"a": 1e9}, {"a": 1e6})
    with pytest.raises(ValueError, match="unknown HBM partition method"):
        solve_hbm_partition(problem, "simulated-annealing", CONFIG)


def test_model_components_are_named_by_entity_and_quantity() -> None:
    problem = HbmPartitionProblem(
        5, 16e9, {"mamba": 5e9, "attention": 4e9}, {"mamba": 45e6, "attention": 42e6}
    )
    m = build_hbm_partition_milp(problem)
    for name in ("group_stacks", "group_requests", "min_requests", "stack_total", "group_capacity_ub"):
        assert isinstance(m.component(name), pyo.Component)
    # Only stack counts that hold the weights are indexed: mamba needs 1 of 5 - 1 = 4 at most.
    assert list(m.stack_choices) == [(g, n) for g in ("mamba", "attention") for n in range(1, 5)]
    with pytest.raises(ValueError, match="capacity must be"):
        build_hbm_partition_milp(problem, capacity="quadratic")
    built = build_hbm_partition_cpsat(problem)
    assert built.unit_bytes == 10**6
    assert built.model.Proto().variables[0].name == "stacks_mamba"


@pytest.mark.parametrize("method", EXACT)
def test_three_groups_and_fractional_bytes(method: str) -> None:
    """Fractional byte counts have no exact integer unit: CP-SAT falls back to the exact element table."""
    problem = HbmPartitionProblem(
        7,
        24e9,
        {"mamba": 5e9 + 0.5, "attention": 3e9 + 0.25, "moe": 30e9},
        {"mamba": 45e6, "attention": 42e6 + 0.5, "moe": 7e6},
    )
    assert cpsat_unit_bytes(problem) is None
    best = max(
        min(
            group_concurrency(problem, g, n)
            for g, n in zip(("mamba", "attention", "moe"), counts, strict=True)
        )
        for counts in itertools.product(range(1, 8), repeat=3)
        if sum(counts) == 7 and counts[2] >= 2
    )
    sol = solve_hbm_partition(problem, method, CONFIG)
    assert sol.status == SolutionStatus.OPTIMAL
    assert sol.objective == best


group_data = st.tuples(
    st.integers(0, 40 * GB),  # weights
    st.one_of(
        st.integers(10**6, 200 * 10**6), st.integers(1, 4000).map(lambda mb: mb * 10**6)
    ),  # per request
)


@settings(max_examples=30, deadline=None)
@given(
    n_hbm=st.integers(1, 12),
    capacity=st.one_of(st.sampled_from([8 * GB, 16 * GB, 24 * GB, 36 * GB]), st.integers(GB, 48 * GB)),
    groups=st.lists(group_data, min_size=2, max_size=3),
)
@pytest.mark.slow
def test_exact_methods_equal_enumeration_property(
    n_hbm: int, capacity: int, groups: list[tuple[int, int]]
) -> None:
    """Random capacities and group sizes in bytes: exact = enumeration >= heuristic, or all infeasible."""
    names = [f"g{i}" for i in range(len(groups))]
    weights = {g: w for g, (w, _) in zip(names, groups, strict=True)}
    per_request = {g: s for g, (_, s) in zip(names, groups, strict=True)}
    problem = HbmPartitionProblem(
        n_hbm,
        float(capacity),
        {g: float(w) for g, w in weights.items()},
        {g: float(s) for g, s in per_request.items()},
    )
    expected = oracle(n_hbm, capacity, weights, per_request)
    for method in HBM_PARTITION_METHODS:
        assert_consistent(problem, method, expected)
