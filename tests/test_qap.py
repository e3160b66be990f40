"""QAP mode of the placement formulation: QAPLIB optima (published) and brute force on a tiny instance."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.qaplib import QapInstance, qap_cost, read_qaplib, read_solution
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.qap import solve_qap
from chipdse.solvers.qap_bnb import qap_glb_bnb
from tests.conftest import shared_or_skip

SMALL = ("chr12a", "chr12b", "chr12c", "had12", "nug12", "rou12", "scr12", "tai10a", "tai10b", "tai12a", "tai12b")
"""Every QAPLIB instance with n <= 12 in ../shared/qaplib."""
EXACT_IN_SECONDS = ("chr12a", "chr12b")
"""Proven optimal by the RLT-1 MILP in about half a second each here."""


def _optima(folder: Path) -> dict[str, int]:
    with (folder / "optima.csv").open() as fh:
        return {row["name"]: int(row["optimal_value"]) for row in csv.DictReader(fh)}


def test_published_solutions_cost_the_published_optimum() -> None:
    folder = shared_or_skip("qaplib")
    optima = _optima(folder)
    for name in SMALL:
        inst = read_qaplib(folder / f"{name}.dat")
        n, cost, perm = read_solution(folder / f"{name}.sln")
        assert n == inst.n and cost == optima[name]
        assert qap_cost(inst, perm) == optima[name], name


@pytest.mark.parametrize("name", EXACT_IN_SECONDS)
def test_milp_proves_the_published_optimum(name: str) -> None:
    folder = shared_or_skip("qaplib")
    opt = _optima(folder)[name]
    sol = solve_qap(read_qaplib(folder / f"{name}.dat"), "highs", SolverConfig(time_limit_s=60.0))
    assert sol.status.value == "optimal"
    assert sol.objective == opt
    assert sol.bound == pytest.approx(opt, rel=1e-9)
    assert qap_cost(read_qaplib(folder / f"{name}.dat"), np.array(sol.decision)) == opt


@pytest.mark.parametrize("name", SMALL)
def test_branch_and_bound_proves_every_small_qaplib_optimum(name: str) -> None:
    """RLT-1 dual ascent branch and bound: objective and bound equal to the published optimum (about 1 s each)."""
    folder = shared_or_skip("qaplib")
    opt = _optima(folder)[name]
    inst = read_qaplib(folder / f"{name}.dat")
    sol = solve_qap(inst, "bnb", SolverConfig(time_limit_s=120.0))
    assert sol.status.value == "optimal"
    assert sol.objective == opt and sol.bound == opt
    assert qap_cost(inst, np.array(sol.decision)) == opt


def test_branch_and_bound_time_limit_brackets_the_optimum() -> None:
    folder = shared_or_skip("qaplib")
    opt = _optima(folder)["rou12"]
    inst = read_qaplib(folder / "rou12.dat")
    sol = solve_qap(inst, "bnb", SolverConfig(work_limit=20, time_limit_s=0.2))  # the wall cap ends it
    assert sol.status.value == "feasible" and "wall cap 0.2 s" in sol.reason
    assert sol.termination.value == "time_limit"
    assert sol.objective >= opt >= sol.bound > 0


def test_branch_and_bound_work_limit_brackets_the_optimum_and_repeats() -> None:
    """A work limit too small to finish rou12 ends the search at the same node, with the same bound, every time."""
    folder = shared_or_skip("qaplib")
    opt = _optima(folder)["rou12"]
    inst = read_qaplib(folder / "rou12.dat")
    runs = [solve_qap(inst, "bnb", SolverConfig(work_limit=0.05)) for _ in range(2)]
    for sol in runs:
        assert sol.status.value == "feasible" and "work limit 0.05 units" in sol.reason
        assert sol.termination.value == "work_limit"
        assert sol.objective >= opt >= sol.bound > 0
    assert (runs[0].objective, runs[0].bound, runs[0].extra["nodes"]) == (
        runs[1].objective, runs[1].bound, runs[1].extra["nodes"])


@given(seed=st.integers(0, 10**6), n=st.integers(1, 7), symmetric=st.booleans())
@settings(max_examples=40, deadline=None)
def test_branch_and_bound_equals_brute_force(seed: int, n: int, symmetric: bool) -> None:
    """Any square non-negative matrices, asymmetric ones and nonzero diagonals included."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 12, (n, n)), rng.integers(0, 12, (n, n))
    if symmetric:
        a, b = a + a.T, b + b.T
    inst = QapInstance("random", a, b)
    brute = min(qap_cost(inst, np.array(p)) for p in itertools.permutations(range(n)))
    res = qap_glb_bnb(a, b, 30.0)
    assert res["proven"] and res["cost"] == brute == res["bound"]
    assert qap_cost(inst, res["perm"]) == brute


def test_short_time_limit_brackets_the_optimum() -> None:
    """The RLT-1 MILP after a 0.3 s limit on dense instances it cannot prove: incumbent >= published optimum >=
    proven bound (when there is one). (Every instance is proven exactly by the branch and bound above.)"""
    folder = shared_or_skip("qaplib")
    optima = _optima(folder)
    for name in ("had12", "nug12", "tai12a"):
        inst = read_qaplib(folder / f"{name}.dat")
        sol = solve_qap(inst, "highs", SolverConfig(time_limit_s=0.3))
        assert sol.objective is not None and sol.objective >= optima[name], name
        assert qap_cost(inst, np.array(sol.decision)) == sol.objective
        if sol.bound is not None:
            assert sol.bound <= optima[name] * (1 + 1e-9), name


def _tiny(seed: int, n: int = 6) -> QapInstance:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 10, (n, n))
    a = np.triu(a, 1) + np.triu(a, 1).T
    b = rng.integers(1, 9, (n, n))
    np.fill_diagonal(b, 0)
    return QapInstance(f"tiny{seed}", a, b)  # b asymmetric: the formulation symmetrizes it


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_exact_equals_brute_force_on_tiny_instances(solver: str) -> None:
    for seed in range(3):
        inst = _tiny(seed)
        brute = min(qap_cost(inst, np.array(p)) for p in itertools.permutations(range(inst.n)))
        sol = solve_qap(inst, solver, SolverConfig(time_limit_s=30.0))
        assert sol.status.value == "optimal" and sol.objective == brute
        assert sol.bound == pytest.approx(brute, rel=1e-9)


def test_bad_qaplib_files_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.dat"
    bad.write_text("3\n1 2 3\n")
    with pytest.raises(SpecError, match=r"bad\.dat.*19 integers"):
        read_qaplib(bad)
    bad.write_text("2\n0 1 1 0\n0 x 1 0\n")
    with pytest.raises(SpecError, match="integers only"):
        read_qaplib(bad)
    asym = tmp_path / "asym.dat"
    asym.write_text("2\n0 1 2 0\n0 1 3 0\n")
    result = CliRunner().invoke(app, ["solve", "qap", str(asym)])
    assert result.exit_code == 2 and "one symmetric matrix" in result.output
    huge = tmp_path / "huge.dat"
    huge.write_text("1\n99999999999999999999\n0\n")
    with pytest.raises(SpecError, match="at most 2,147,483,648"):
        read_qaplib(huge)
    wraps = tmp_path / "wraps.dat"  # int64 products would wrap around: refused, not mis-solved
    wraps.write_text("2\n0 2000000000 2000000000 0\n0 2000000000 2000000000 0\n")
    with pytest.raises(SpecError, match="2\\^53"):
        read_qaplib(wraps)
    binary = tmp_path / "bin.dat"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SpecError, match="binary"):
        read_qaplib(binary)


def test_asymmetric_flow_with_symmetric_distance_is_solved_with_roles_exchanged() -> None:
    """Like QAPLIB's lipa instances: the first matrix asymmetric, the second symmetric; brute force is the truth."""
    rng = np.random.default_rng(11)
    n = 6
    a = rng.integers(0, 9, (n, n))
    np.fill_diagonal(a, 0)
    b = np.triu(rng.integers(1, 9, (n, n)), 1)
    b = b + b.T
    inst = QapInstance("lipa-like", a, b)
    brute = min(qap_cost(inst, np.array(p)) for p in itertools.permutations(range(n)))
    sol = solve_qap(inst, "highs", SolverConfig(time_limit_s=30.0))
    assert sol.status.value == "optimal" and sol.objective == brute
    assert qap_cost(inst, np.array(sol.decision)) == brute


@pytest.mark.parametrize("solver", ["cpsat", "bnb"])
def test_cli_solve_qap_json(tmp_path: Path, solver: str) -> None:
    inst = _tiny(7, 5)
    path = tmp_path / "tiny.dat"
    path.write_text(f"{inst.n}\n" + "\n".join(" ".join(map(str, r)) for r in inst.flow) + "\n"
                    + "\n".join(" ".join(map(str, r)) for r in inst.distance) + "\n")
    result = CliRunner().invoke(app, ["solve", "qap", str(path), "--solver", solver, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    brute = min(qap_cost(inst, np.array(p)) for p in itertools.permutations(range(inst.n)))
    assert {"objective", "bound", "status", "wall_s"} <= set(out)
    assert out["objective"] == brute and out["status"] == "optimal"


def test_cli_solve_qap_text_prints_the_permutation(tmp_path: Path) -> None:
    """Without --json: the objective with its unit, what ended the solve, and the permutation, whose cost is the
    printed objective and the brute-force optimum (n = 5)."""
    inst = _tiny(7, 5)
    path = tmp_path / "tiny.dat"
    path.write_text(f"{inst.n}\n" + "\n".join(" ".join(map(str, r)) for r in inst.flow) + "\n"
                    + "\n".join(" ".join(map(str, r)) for r in inst.distance) + "\n")
    result = CliRunner().invoke(app, ["solve", "qap", str(path), "--solver", "bnb"])
    assert result.exit_code == 0, result.output
    head, perm_line = result.output.strip().splitlines()
    brute = min(qap_cost(inst, np.array(p)) for p in itertools.permutations(range(inst.n)))
    assert f"objective {brute:g} QAP cost" in head and "ended by " in head
    assert perm_line.startswith("permutation")
    perm = [int(x) for x in perm_line.split(":", 1)[1].split()]
    assert sorted(perm) == list(range(inst.n)) and qap_cost(inst, np.array(perm)) == brute


def test_oversized_instance_is_refused_before_building(tmp_path: Path) -> None:
    n = 30
    rng = np.random.default_rng(0)
    a = np.triu(rng.integers(1, 9, (n, n)), 1)
    a = a + a.T
    b = rng.integers(1, 9, (n, n))
    np.fill_diagonal(b, 0)
    path = tmp_path / "big.dat"
    path.write_text(f"{n}\n" + " ".join(map(str, a.ravel())) + "\n" + " ".join(map(str, b.ravel())) + "\n")
    result = CliRunner().invoke(app, ["solve", "qap", str(path), "--time-limit", "1"])
    assert result.exit_code == 2 and "378,450 product variables" in result.output


def test_bnb_does_not_start_a_node_its_work_limit_cannot_pay_for() -> None:
    """n = 150: the root's children alone cost 150^4 / 4e7 = 12.7 work units; with a limit of 1 the search stops
    before them (quickly, with the root bound and the start permutation) instead of overrunning the limit."""
    rng = np.random.default_rng(0)
    n = 150
    a = np.triu(rng.integers(0, 10, (n, n)), 1)
    b = np.triu(rng.integers(0, 10, (n, n)), 1)
    res = qap_glb_bnb(a + a.T, b + b.T, 1.0)
    assert res["nodes"] == 0 and not res["proven"] and res["work_units"] <= 1.0
