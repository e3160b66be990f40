"""Per-stack HBM packing: a hand-solved instance, brute force on random tiny ones, Eq. 1 as an upper bound."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.formulations.hbm_packing import HbmPackingProblem, PackBlock, check_hbm_packing, eq1_bound
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.hbm_packing import solve_hbm_packing

CONFIG = SolverConfig(time_limit_s=30.0)


def test_hand_solved_packing() -> None:
    """Two stacks of 10 bytes, weights 6, 5, 3 and 1 byte per request each. Pooled (Eq. 1): (20 - 14) / 3 = 2.
    Packings: {6, 3} | {5} gives min(floor(1 / 2), floor(5 / 1)) = 0; {6} | {5, 3} gives min(4, floor(2 / 2)) = 1;
    {6, 5} overflows. So the optimum is 1, half of what Eq. 1 promises."""
    p = HbmPackingProblem({"g": 2}, 10.0, (PackBlock("a", "g", 6, 1), PackBlock("b", "g", 5, 1),
                                            PackBlock("c", "g", 3, 1)))
    assert eq1_bound(p) == 2
    assert check_hbm_packing(p, {"a": 0, "b": 1, "c": 0}) == (0.0, [])
    assert check_hbm_packing(p, {"a": 0, "b": 1, "c": 1}) == (1.0, [])
    assert "stack 0 holds" in check_hbm_packing(p, {"a": 0, "b": 0, "c": 1})[1][0]
    for method in ("milp-highs", "brute-force", "first-fit"):
        sol = solve_hbm_packing(p, method, CONFIG)
        assert sol.objective == 1.0, method
    assert solve_hbm_packing(p, "milp-highs", CONFIG).status.value == "optimal"


@st.composite
def tiny(draw: st.DrawFn) -> HbmPackingProblem:
    groups = {"a": draw(st.integers(1, 3)), "m": draw(st.integers(1, 2))}
    blocks = tuple(PackBlock(f"b{k}", draw(st.sampled_from(["a", "m"])), draw(st.integers(0, 9)),
                             draw(st.integers(0, 3))) for k in range(draw(st.integers(1, 6))))
    return HbmPackingProblem(groups, float(draw(st.integers(8, 20))), blocks, name="tiny")


@settings(max_examples=40, deadline=None)
@given(problem=tiny())
def test_exact_equals_brute_force_and_bounds_hold(problem: HbmPackingProblem) -> None:
    """MILP = brute force; first fit never above it; Eq. 1's pooled value never below it; decisions feasible."""
    brute = solve_hbm_packing(problem, "brute-force", CONFIG)
    milp = solve_hbm_packing(problem, "milp-highs", CONFIG)
    ffd = solve_hbm_packing(problem, "first-fit", CONFIG)
    assert milp.status.value == brute.status.value
    if brute.status.value == "infeasible":
        assert milp.decision is None and milp.reason
        return
    assert milp.status.value == "optimal" and milp.objective == brute.objective
    assert check_hbm_packing(problem, milp.decision)[1] == []
    assert milp.objective <= eq1_bound(problem)
    if ffd.decision is not None:
        assert check_hbm_packing(problem, ffd.decision)[1] == [] and ffd.objective <= milp.objective


def test_infeasible_names_the_capacity() -> None:
    p = HbmPackingProblem({"g": 2}, 10.0, (PackBlock("big", "g", 12e9 / 1e9, 0),))
    sol = solve_hbm_packing(p, "milp-highs", CONFIG)
    assert sol.status.value == "infeasible" and "block big needs" in sol.reason
    p = HbmPackingProblem({"g": 2}, 10.0, (PackBlock("x", "g", 7, 0), PackBlock("y", "g", 7, 0),
                                            PackBlock("z", "g", 7, 0)))
    sol = solve_hbm_packing(p, "milp-highs", CONFIG)
    assert sol.status.value == "infeasible" and "group g needs" in sol.reason
    with pytest.raises(ValueError, match="method"):
        solve_hbm_packing(p, "magic", CONFIG)


@pytest.mark.slow
def test_default_finalist_packing_never_beats_eq1() -> None:
    runner = CliRunner()
    rows = {}
    for problem in ("hbm-packing", "hbm-partition"):
        result = runner.invoke(app, ["compare", problem, "--json"])
        assert result.exit_code == 0, result.output
        rows[problem] = {r["method"]: r for r in json.loads(result.output)}
    packed = rows["hbm-packing"]["milp-highs"]
    assert packed["status"] == "optimal"
    assert packed["objective"] <= rows["hbm-partition"]["enumeration"]["objective"]
    assert rows["hbm-packing"]["first-fit"]["objective"] <= packed["objective"]
