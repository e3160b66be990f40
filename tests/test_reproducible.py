"""Reproducible by default: exact solves end on deterministic work limits, so the same scenario and seed give the
same numbers on an idle machine and on one whose cores are kept busy by other processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.solution import TerminationCondition
from chipdse.formulations.placement import PlacementProblem, grid_ring_cells
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.link_load import solve_max_link_placement
from chipdse.solvers.placement import solve_placement

BURNERS = 2
"""CPU-bound processes started beside the second run: one per core of the 2-core reference machine."""


@contextmanager
def busy_cores(n: int = BURNERS) -> Iterator[None]:
    """Keep ``n`` cores busy with CPU-bound Python loops for the duration of the block (killed afterwards)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _without_times(value: Any) -> Any:
    """``value`` (parsed JSON) without the entries that measure time: keys ``timings`` and any key ending in
    ``wall_s`` or ``cpu_s``."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items()
                if k != "timings" and not k.endswith(("wall_s", "cpu_s"))}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def _ring_problem() -> PlacementProblem:
    """A 4 x 4 ring instance (2 + 2 stacks on the ring, 10 compute chiplets) that no exact method closes within
    the small work limits below: the limit, not the optimum, ends each solve."""
    ring = grid_ring_cells(4, 4)
    counts = {"hbm:a": 2, "hbm:m": 2, "Ap": 2, "Ad": 2, "Mp": 3, "Md": 3}
    volumes = {("Ap", "hbm:a"): 7.0, ("Ad", "hbm:a"): 5.0, ("Mp", "hbm:m"): 6.0, ("Md", "hbm:m"): 4.0,
               ("Ap", "Mp"): 2.0, ("Ad", "Md"): 3.0, ("Ap", "Ad"): 1.0, ("Mp", "Md"): 1.5, ("Ap", "Md"): 0.5}
    allowed = {t: ring for t in counts if t.startswith("hbm:")}
    return PlacementProblem(4, 4, counts, volumes, allowed=allowed, ring_cells=ring, name="4x4-ring")


def _fingerprint(sol: Any) -> tuple:
    return sol.objective, sol.bound, sol.termination, sol.status, sol.decision


@pytest.mark.slow
@pytest.mark.parametrize(("method", "work_limit"), [("cpsat", 0.5), ("milp-highs", 0.3)])
def test_exact_placement_repeats_under_load(method: str, work_limit: float) -> None:
    """CP-SAT (2 interleaved workers, deterministic time) and HiGHS (2 threads, node limit) stop on their work
    limit with the same objective, bound, termination and placement, idle and with both cores busy."""
    problem = _ring_problem()
    cfg = SolverConfig(work_limit=work_limit, threads=2, seed=1)
    hint = solve_placement(problem, "round-robin", cfg).decision  # a start, as explore gives its exact solves
    idle = solve_placement(problem, method, cfg, hint=hint)
    assert idle.termination == TerminationCondition.WORK_LIMIT and idle.bound < idle.objective
    with busy_cores():
        busy = solve_placement(problem, method, cfg, hint=hint)
    assert _fingerprint(idle) == _fingerprint(busy)


def test_layout_bnb_repeats_under_load() -> None:
    """The max-link layout search (LPs and MILPs solved on 2 threads, merged in a fixed order) stops on its work
    limit at the same incumbent and bound, idle and busy."""
    problem = _ring_problem()
    cfg = SolverConfig(work_limit=0.3, threads=2, seed=1)
    idle = solve_max_link_placement(problem, "layout-bnb", cfg)
    with busy_cores():
        busy = solve_max_link_placement(problem, "layout-bnb", cfg)
    assert idle.termination == TerminationCondition.WORK_LIMIT
    assert _fingerprint(idle) == _fingerprint(busy)
    assert idle.log_summary == busy.log_summary  # the same LP / MILP counts and work units


def _explore(path: Path, out: Path) -> Result:
    """``chipdse explore PATH --seed 1 --out OUT`` in this process (typer's CliRunner)."""
    return CliRunner().invoke(app, ["explore", str(path), "--seed", "1", "--out", str(out)])


@pytest.mark.slow
def test_explore_twice_idle_and_busy_gives_the_same_numbers(write_scenario, tmp_path: Path) -> None:
    """``chipdse explore SCEN --seed 1`` on an idle machine and again with both cores kept busy: byte-identical
    points.csv, and the same manifest apart from wall and CPU times (every solve's objective, bound, status and
    the limit that ended it; the simulation stage's numbers, which depend on the layouts the solves chose)."""
    path = write_scenario({  # 336 points; B* = M_T
        "name": "repro", "work_limit": 0.5,
        "design_space": {"total_chiplets": 9, "hbm_min": 3, "hbm_max": 4, "min_per_type": 1,
                         "d2d_GBps": [256, 384, 512, 640], "max_batch": [2, 4, 8, 16, 32, 64]},
        "simulation": {"candidates": 1, "spread": 0, "duration_s": 2, "max_duration_s": 4,
                       "warmup_s": 1, "measure_s": 1,
                       "datasets": ["arxiv.yaml"], "workers": 1}})
    first, second = tmp_path / "idle", tmp_path / "busy"
    run1 = _explore(path, first)
    assert run1.exit_code == 0, run1.output
    with busy_cores():
        run2 = _explore(path, second)
    assert run2.exit_code == 0, run2.output
    assert (first / "points.csv").read_bytes() == (second / "points.csv").read_bytes()
    m1, m2 = (json.loads((d / "manifest.json").read_text()) for d in (first, second))
    solves = m1["solver"]["solves"]
    limits = {s["termination"] for s in solves if s["exact"]}
    assert TerminationCondition.WORK_LIMIT.value in limits  # the test exercises the limit, not just optima
    assert TerminationCondition.TIME_LIMIT.value not in limits
    assert _without_times(m1) == _without_times(m2)
    assert _headline(run1.stdout, first) == _headline(run2.stdout, second)  # the printed headline


def _headline(stdout: str, out: Path) -> list[str]:
    """explore's printed lines without the progress log's time stamps (``[  1.0 s,  0.9 CPU-s] stage``), which
    are wall and CPU times, and with the output folder blanked."""
    return [re.sub(r"^\[\s*[\d.]+ s,\s*[\d.]+ CPU-s\] ", "", ln).replace(str(out), "") for ln in stdout.splitlines()]
