"""The stage runner (issue 29): stages name what they need and make, a missing input fails with the stage's name, a
kept stage is read back instead of run, every stage that runs is timed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chipdse.runtime.parallel import Backend, run_jobs
from chipdse.runtime.store import Checkpoints, ResultsStore
from chipdse.studies.pipeline import Context, Key, MissingArtifactError, Stage, Timings, run_stages

A: Key[int] = Key("a")
B: Key[int] = Key("b")
C: Key[int] = Key("c")


def _double(ctx: Context) -> None:
    ctx.put(B, 2 * ctx.get(A))


def _add(ctx: Context) -> None:
    ctx.put(C, ctx.get(A) + ctx.get(B))


DOUBLE = Stage("double", (A,), (B,), _double, keep=True, note=lambda ctx: f"b = {ctx.get(B)}")
ADD = Stage("add", (A, B), (C,), _add)


def test_stages_run_in_order_and_are_timed() -> None:
    timings = Timings()
    ctx = run_stages((DOUBLE, ADD), Context(a=3), timings=timings)
    assert (ctx.get(B), ctx.get(C)) == (6, 9)
    assert set(timings.wall_s) == set(timings.cpu_s) == {"double_s", "add_s"}


def test_a_missing_input_names_the_stage_and_the_artifact() -> None:
    with pytest.raises(MissingArtifactError, match="stage 'add' needs b, which no earlier stage made"):
        run_stages((ADD,), Context(a=3))


def test_a_stage_that_does_not_make_what_it_declares_fails() -> None:
    lazy = Stage("lazy", (A,), (B,), lambda ctx: None)
    with pytest.raises(MissingArtifactError, match="stage 'lazy' did not make b"):
        run_stages((lazy,), Context(a=3))


def test_a_disabled_stage_is_skipped_and_not_timed() -> None:
    timings = Timings()
    off = Stage("double", (A,), (B,), _double, when=lambda ctx: False)
    ctx = run_stages((off,), Context(a=3), timings=timings)
    assert not ctx.has(B) and timings.wall_s == {}


def test_a_kept_stage_is_read_back_not_run(tmp_path: Path) -> None:
    runs: list[int] = []

    def counted(ctx: Context) -> None:
        runs.append(1)
        _double(ctx)

    stage = Stage("double", (A,), (B,), counted, keep=True, note=lambda ctx: f"b = {ctx.get(B)}")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        first = Checkpoints(store, {"run": 1}, "m", "w")
        run_stages((stage, ADD), Context(a=3), checkpoints=first)
        again = Checkpoints(store, {"run": 1}, "m", "w")
        ctx = run_stages((stage, ADD), Context(a=3), checkpoints=again)
    assert runs == [1] and again.read == ["double"] and again.kept == [("double", "b = 6")]
    assert ctx.get(C) == 9


def _burn(seconds: float) -> dict:
    """Spin for ``seconds`` of this process's CPU time; return the CPU seconds it measured on itself."""
    t0 = time.process_time()
    x = 0
    while time.process_time() - t0 < seconds:
        x += 1
    return {"cpu_s": time.process_time() - t0}


def test_stage_cpu_counts_the_workers() -> None:
    """A stage's ``cpu_s`` is the process tree's, not the main process's (issue 32): the CPU a pool worker measured
    on itself (time.process_time in the worker) is in it, though the main process only waited."""
    t = Timings()
    with t.stage("sim_s"):
        c0 = time.process_time()
        out = run_jobs(_burn, [0.6, 0.6], backend=Backend.processes(2))
        main_cpu_s = time.process_time() - c0
    workers_cpu_s = sum(r["cpu_s"] for r in out)
    assert workers_cpu_s >= 1.2
    assert main_cpu_s < 0.5 * workers_cpu_s
    assert t.cpu_s["sim_s"] >= workers_cpu_s
