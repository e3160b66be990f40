"""Ctrl-C during an exact solve raises KeyboardInterrupt instead of returning a cut-short result that a resumable
sweep would store as finished (HiGHS through Pyomo and CP-SAT both catch SIGINT themselves by default); Ctrl-C during
``chipdse explore`` keeps the finished stages and a rerun resumes from them (issue 14)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import highspy
import numpy as np
import pytest
from ortools.sat.python import cp_model
from typer.testing import CliRunner

import chipdse.api as api_module
import chipdse.studies.hydra.stages as stages_module
from chipdse.cli import app, from_interrupt
from chipdse.core.io import canonical_json
from chipdse.core.paths import instances_dir
from chipdse.core.qaplib import QapInstance
from chipdse.core.scenario import load_scenario
from chipdse.runtime.store import Checkpoints, ResultsStore
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.qap import solve_qap
from chipdse.studies.hydra.explore import run_identity
from chipdse.studies.registry import STUDIES


def _hard_qap(n: int = 14) -> QapInstance:
    rng = np.random.default_rng(3)
    flow = rng.integers(0, 10, (n, n))
    dist = rng.integers(1, 10, (n, n))
    return QapInstance("random14", np.triu(flow, 1) + np.triu(flow, 1).T, np.triu(dist, 1) + np.triu(dist, 1).T)


@pytest.mark.slow
@pytest.mark.parametrize(("solver", "limit_s"), [("highs", 4.0), ("cpsat", 2.0)])
def test_sigint_during_a_solve_raises_keyboard_interrupt(solver: str, limit_s: float,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = []

    def start_timer_with(run):  # noqa: ANN001, ANN202
        def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            started.append(time.perf_counter())
            timer.start()  # the signal lands 0.5 s into the solver call itself, not in the model build
            return run(*args, **kwargs)
        return wrapped

    if solver == "highs":
        monkeypatch.setattr(highspy.Highs, "run", start_timer_with(highspy.Highs.run))
    else:
        monkeypatch.setattr(cp_model.CpSolver, "Solve", start_timer_with(cp_model.CpSolver.Solve))
    try:
        with pytest.raises(KeyboardInterrupt):
            solve_qap(_hard_qap(), solver, SolverConfig(time_limit_s=limit_s))
    finally:
        timer.cancel()
    assert started, "the solver was never called"
    # The interrupt is raised (CP-SAT with its own SIGINT handler off, HiGHS (highspy >= 1.8) because it runs in the
    # calling thread) and neither returns a result; how soon is measured, not asserted (speed lives in benchmarks)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is restored


# --- chipdse explore: Ctrl-C keeps the finished stages, a rerun resumes from them ---------------------------------

# 12 chiplets, 4 HBM: C(7, 3) = 35 compositions of 8 compute chiplets into 4 types x 2 bandwidths x 2 batches = 140
# points; its finalists' exact placements (hbm-enum) and mappings are proven optimal within the 1 s limit, so an
# uninterrupted run and a resumed one have the same numbers
TINY_SPACE = {"total_chiplets": 12, "hbm_min": 4, "hbm_max": 4, "min_per_type": 1, "d2d_GBps": [256, 512],
              "max_batch": [8, 32]}
TINY_POINTS = 35 * 2 * 2
REPORT_FILES = {"report.pdf", "points.csv", "manifest.json"}


def _tiny_scenario(write_scenario) -> Path:  # noqa: ANN001
    return write_scenario({"name": "tiny", "design_space": TINY_SPACE, "simulation": {"enabled": False},
                           "time_limit_s": 1}, name="tiny.yaml")


def _stored_stages(store_path: Path) -> list[str]:
    """The stage names in the store (read by another process while explore writes it)."""
    if not store_path.exists():
        return []
    with contextlib.closing(sqlite3.connect(store_path, timeout=5)) as conn:
        try:
            return [r[0] for r in conn.execute("SELECT stage FROM stages ORDER BY rowid")]
        except sqlite3.OperationalError:  # the table is not created yet
            return []


def _lines(text: str) -> list[str]:
    """The non-empty lines of ``text`` (rich leaves an empty line where its progress display was)."""
    return [ln for ln in text.splitlines() if ln.strip()]


def _explore_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", "from chipdse.cli import app; app()", "explore", *args]


def _env_without_columns() -> dict[str, str]:
    """The environment of a user whose stderr is a file and who never set COLUMNS (CI runs the tests so)."""
    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


@pytest.mark.slow
def test_sigint_after_the_sweep_stage_then_rerun_skips_it_and_equals_an_uninterrupted_run(
        write_scenario, tmp_path: Path) -> None:
    """Issue 14: Ctrl-C (a real SIGINT) once explore's sweep stage is kept: exit 130, one line per kept stage and
    the resume line, no report file; the rerun reads the kept stages instead of computing them and writes the same
    points.csv bytes and manifest summary as an uninterrupted run."""
    path = _tiny_scenario(write_scenario)
    out = tmp_path / "out"
    store_path = out / "explore.sqlite"
    err_path = tmp_path / "stderr.txt"
    with err_path.open("w") as err_file:
        proc = subprocess.Popen(_explore_cmd(str(path), "--out", str(out)), stdout=subprocess.PIPE, stderr=err_file,
                                text=True, env=_env_without_columns())
        try:
            end = time.monotonic() + 120
            while time.monotonic() < end and proc.poll() is None and "screen" not in _stored_stages(store_path):
                time.sleep(0.02)
            assert proc.poll() is None, "explore finished before it could be interrupted"
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    stderr = err_path.read_text()
    assert proc.returncode == 130, stderr
    kept = _stored_stages(store_path)
    assert kept[0] == "screen" and set(kept) <= {"screen", "finalists", "layouts"}
    lines = _lines(stderr)
    # one unwrapped line per kept stage, naming it and the store, then the resume line
    assert lines[-len(kept) - 1:-1] == [ln for ln in lines if ln.startswith("interrupted: kept ")]
    for stage, line in zip(kept, lines[-len(kept) - 1:-1], strict=True):
        assert line.startswith(f"interrupted: kept {stage} (") and line.endswith(f") in {store_path}")
    assert f"({TINY_POINTS:,} points scored)" in lines[-len(kept) - 1]
    assert lines[-1].startswith("rerun the same command to resume")
    assert {p.name for p in out.iterdir()} <= {"explore.sqlite", "explore.sqlite-wal", "explore.sqlite-shm"}

    rerun = CliRunner().invoke(app, ["explore", str(path), "--out", str(out)])  # the same command, in-process
    assert rerun.exit_code == 0, rerun.output
    prefix = f"read from {store_path}: "
    read = [ln.removeprefix(prefix) for ln in rerun.stderr.splitlines() if ln.startswith(prefix)]
    assert [ln.split(" (")[0] for ln in read] == kept  # every kept stage read, no other
    assert f"screen ({TINY_POINTS:,} points scored); not recomputed" in read[0]
    assert REPORT_FILES <= {p.name for p in out.iterdir()}

    whole = tmp_path / "whole"
    ref = CliRunner().invoke(app, ["explore", str(path), "--out", str(whole)])
    assert ref.exit_code == 0 and "read from" not in ref.stderr, ref.output
    assert (out / "points.csv").read_bytes() == (whole / "points.csv").read_bytes()
    summary = [json.loads((d / "manifest.json").read_text())["summary"] for d in (out, whole)]
    assert summary[0] == summary[1]
    assert summary[0]["points"] == TINY_POINTS


def test_checkpoints_reuse_a_stage_only_for_the_same_identity(tmp_path: Path) -> None:
    """A stage is computed once per (identity, code version); another solver setting, ``fresh`` or a stage cut
    short by Ctrl-C computes it (and a cut-short stage is never stored)."""
    calls: list[str] = []

    def compute(tag: str) -> dict[str, float]:
        calls.append(tag)
        return {"throughput_tps": 1234.5, "tag": tag}

    def identity(limit_s: float) -> dict[str, object]:
        return {"scenario": "s", "solver": SolverConfig(time_limit_s=limit_s).model_dump(mode="json")}

    with ResultsStore(tmp_path / "s.sqlite") as store:
        first = Checkpoints(store, identity(2.0), "m", "w")
        assert first.run("sweep", lambda: compute("a"), lambda v: "one") == {"throughput_tps": 1234.5, "tag": "a"}
        again = Checkpoints(store, identity(2.0), "m", "w")
        assert again.run("sweep", lambda: compute("b"), lambda v: "two")["tag"] == "a"  # read, not computed
        assert again.read == ["sweep"] and again.kept == [("sweep", "one")]
        other = Checkpoints(store, identity(3.0), "m", "w")  # another time limit: another key
        assert other.run("sweep", lambda: compute("c"), lambda v: "three")["tag"] == "c"
        fresh = Checkpoints(store, identity(2.0), "m", "w", fresh=True)
        assert fresh.run("sweep", lambda: compute("d"), lambda v: "four")["tag"] == "d" and fresh.read == []

        def interrupted() -> dict[str, float]:
            raise KeyboardInterrupt

        cut = Checkpoints(store, identity(2.0), "m", "w")
        with pytest.raises(KeyboardInterrupt):
            cut.run("finalist B*", interrupted, lambda v: "never")
        assert cut.kept == []
        assert [s for s, _ in store.stages()] == ["sweep", "sweep"]  # two keys: time limits 2 s and 3 s
        store.conn.execute("UPDATE stages SET value = ?", (b"not a pickle",))  # a damaged value is recomputed
        assert Checkpoints(store, identity(2.0), "m", "w").run("sweep", lambda: compute("e"), str)["tag"] == "e"
    assert calls == ["a", "c", "d", "e"]


def test_run_identity_follows_the_files_and_the_solver_config(write_scenario, tmp_path: Path) -> None:
    path = _tiny_scenario(write_scenario)
    sc = load_scenario(path)
    cfg = SolverConfig(time_limit_s=1.0)
    assert canonical_json(run_identity(sc, cfg)) == canonical_json(run_identity(load_scenario(path), cfg))
    assert run_identity(sc, cfg) != run_identity(sc, SolverConfig(time_limit_s=1.0, seed=1))
    library = tmp_path / "library.yaml"  # the same chiplets with one more comment line: a different file
    library.write_text(Path(sc.named_files["library"]).read_text() + "\n# edited\n")
    edited = write_scenario({"name": "tiny", "design_space": TINY_SPACE, "simulation": {"enabled": False},
                             "time_limit_s": 1, "library": str(library)}, name="edited.yaml")
    assert run_identity(load_scenario(edited), cfg)["files_sha256"]["library"] != \
        run_identity(sc, cfg)["files_sha256"]["library"]


def test_ctrl_c_before_the_first_stage_keeps_nothing_and_leaves_no_folder(write_scenario, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(stages_module, "screen_table", interrupted)
    out = tmp_path / "new" / "out"
    res = CliRunner().invoke(app, ["explore", str(_tiny_scenario(write_scenario)), "--out", str(out)])
    assert res.exit_code == 130, res.output
    assert _lines(res.stderr) == ["interrupted: no stage had finished; nothing kept"]
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
@pytest.mark.parametrize("fresh", [False, True], ids=["resume", "fresh"])
def test_ctrl_c_while_writing_the_report_removes_the_report_files(write_scenario, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  fresh: bool) -> None:
    """... and says how to resume: the same command, or, after --fresh (whose rerun would recompute every stage),
    the command without it."""
    def half_written(_result: object, _pages: object, _summary: object, out_dir: Path, csv: bool = True) -> None:
        (out_dir / "report.pdf").write_bytes(b"%PDF-1.4 cut short")
        raise KeyboardInterrupt

    monkeypatch.setattr(api_module, "write_report", half_written)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["explore", str(_tiny_scenario(write_scenario)), "--out", str(out),
                                   "--time-limit", "0.1", *(["--fresh"] if fresh else [])])
    assert res.exit_code == 130, res.output
    assert {p.name for p in out.iterdir()} <= {"explore.sqlite", "explore.sqlite-wal", "explore.sqlite-shm"}
    lines = _lines(res.stderr)
    assert lines[0].startswith("interrupted: kept screen (") and lines[1].startswith("interrupted: kept finalists")
    assert lines[-1].startswith("rerun the command without --fresh to resume" if fresh
                                else "rerun the same command to resume")


@pytest.mark.parametrize("kind", ["snake", "nova"])
def test_ctrl_c_in_a_snake_or_nova_study_keeps_nothing(kind: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setitem(STUDIES, kind, dataclasses.replace(STUDIES[kind], run=interrupted))
    scenario = instances_dir() / "scenarios" / ("snake-stratum.yaml" if kind == "snake" else "nova-nemotron3-nano.yaml")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["explore", str(scenario), "--out", str(out)])
    assert res.exit_code == 130, res.output
    assert "keeps nothing" in res.stderr and not out.exists()
    res = CliRunner().invoke(app, ["explore", str(scenario), "--out", str(out), "--store", str(tmp_path / "s.db")])
    assert res.exit_code == 2 and len(_lines(res.stderr)) == 1 and "--store" in res.stderr
    assert not out.exists() and not (tmp_path / "s.db").exists()


def test_an_interrupt_a_library_turned_into_another_error_is_still_an_interrupt() -> None:
    """pyomo's configuration casts catch everything and raise ValueError: a Ctrl-C there arrives as a ValueError
    whose context is the KeyboardInterrupt; an ordinary ValueError is not an interrupt."""
    def cast() -> None:
        try:
            raise KeyboardInterrupt
        except BaseException:  # what the library does: a bare except that raises its own error
            raise ValueError("invalid value for configuration 'tee'")  # noqa: B904

    try:
        cast()
    except ValueError as exc:
        assert from_interrupt(exc)
    assert not from_interrupt(ValueError("plain"))
