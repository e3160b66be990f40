"""Results store, job runner backends and the design-space sweep (issue 5: scale)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from chipdse.core.design_space import enumerate_points
from chipdse.core.errors import ChipdseError
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.estimator import Screen
from chipdse.runtime.parallel import Backend, run_jobs
from chipdse.runtime.store import ResultsStore, code_version, job_key
from chipdse.studies.hydra.stages import screen_points
from chipdse.studies.hydra.sweep import frame_from_record, frame_to_record, summary_json, sweep

SMALL_SPACE = {"total_chiplets": 24, "hbm_min": 4, "hbm_max": 6, "min_per_type": 1,
               "d2d_GBps": [256, 512], "max_batch": [8, 32]}


def _log_run(log: str, x: int) -> None:
    """Append one line per job run (O_APPEND writes are atomic across processes and threads)."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{x}\n".encode())
    finally:
        os.close(fd)


def square_job(job: dict[str, Any]) -> dict[str, Any]:
    """A cheap job (module level, so process and Dask workers can unpickle it)."""
    _log_run(job["log"], job["x"])
    return {"x": job["x"], "y": job["x"] ** 2 + 0.1, "tag": ("a", job["x"])}


def runs(log: Path) -> list[int]:
    """The jobs actually run so far, in completion order."""
    return [int(s) for s in log.read_text().split()] if log.exists() else []


def key_of(job: dict[str, Any]) -> str:
    return job_key("test-square", {"x": job["x"]}, "none", "none")


@pytest.fixture
def small_scenario(write_scenario):
    return load_scenario(write_scenario({"design_space": SMALL_SPACE}, name="small.yaml"))


def test_store_round_trip_wal_and_readers(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.sqlite"
    result = {"a": 1, "b": [1.5, float("nan")], "c": "text", "d": None, "e": True}
    with ResultsStore(path) as store:
        assert store.count() == 0 and store.get("k1") is None
        store.put("k1", result)
        store.put("k2", {"v": 2})
        with ResultsStore(path) as reader:  # a second connection sees committed rows while the writer is open
            assert reader.count() == 2
            got = reader.get("k1")
        assert got["a"] == 1 and got["c"] == "text" and got["d"] is None and got["e"] is True
        assert got["b"][0] == 1.5 and got["b"][1] != got["b"][1]  # NaN survives
        assert store.keys() == ["k1", "k2"] and "k2" in store
        store.put("k2", {"v": 3})
        assert store.get("k2") == {"v": 3} and store.count() == 2
    with pytest.raises(ChipdseError, match="closed"):
        store.count()
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_job_key_depends_on_every_part() -> None:
    base = job_key("k", {"a": 1, "b": 2}, "m", "w")
    assert base == job_key("k", {"b": 2, "a": 1}, "m", "w")  # canonical JSON: key order does not matter
    assert len({base, job_key("k2", {"a": 1, "b": 2}, "m", "w"), job_key("k", {"a": 1, "b": 3}, "m", "w"),
                job_key("k", {"a": 1, "b": 2}, "m2", "w"), job_key("k", {"a": 1, "b": 2}, "m", "w2"),
                job_key("k", {"a": 1, "b": 2}, "m", "w", version="other")}) == 6
    assert code_version().startswith("0.1.0+")


def test_run_jobs_skips_stored_jobs(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    jobs = [{"x": x, "log": str(log)} for x in range(6)]
    expected = [{"x": x, "y": x**2 + 0.1, "tag": ["a", x]} for x in range(6)]
    seen: list[tuple[int, int]] = []
    with ResultsStore(tmp_path / "r.sqlite") as store:
        out = run_jobs(square_job, jobs, store=store, key_fn=key_of, progress=lambda d, t: seen.append((d, t)))
        assert out == expected and sorted(runs(log)) == list(range(6)) and store.count() == 6
        assert seen == [(i, 6) for i in range(7)]
        assert run_jobs(square_job, jobs, store=store, key_fn=key_of) == expected
        assert len(runs(log)) == 6  # nothing recomputed
        more = jobs + [{"x": 6, "log": str(log)}]
        assert run_jobs(square_job, more, store=store, key_fn=key_of)[-1]["y"] == 36.1
        assert runs(log)[6:] == [6]
        run_jobs(square_job, jobs, store=store, key_fn=key_of, fresh=True)
        assert len(runs(log)) == 13  # fresh recomputes every job


def test_interrupted_run_resumes_without_recomputing(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    jobs = [{"x": x, "log": str(log)} for x in range(8)]
    with ResultsStore(tmp_path / "ref.sqlite") as ref_store:
        reference = run_jobs(square_job, [{**j, "log": str(tmp_path / "ref.log")} for j in jobs],
                             store=ref_store, key_fn=key_of)
    calls = {"n": 0}

    def interrupted_after_3(job: dict[str, Any]) -> dict[str, Any]:
        if calls["n"] == 3:
            raise KeyboardInterrupt
        calls["n"] += 1
        return square_job(job)

    with ResultsStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            run_jobs(interrupted_after_3, jobs, store=store, key_fn=key_of)
        assert store.count() == 3 and runs(log) == [0, 1, 2]
    with ResultsStore(tmp_path / "r.sqlite") as store:  # a new process would reopen the file like this
        assert run_jobs(square_job, jobs, store=store, key_fn=key_of) == reference
    assert runs(log) == list(range(8))  # the first three were not run again


@pytest.mark.slow
def test_process_pool_equals_in_process(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    jobs = [{"x": x, "log": str(log)} for x in range(5)]
    serial = run_jobs(square_job, jobs)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        pooled = run_jobs(square_job, jobs, Backend.processes(2), store=store, key_fn=key_of)
        assert store.count() == 5
    assert pooled == [{**r, "tag": list(r["tag"])} for r in serial]
    assert sorted(runs(log)) == sorted(list(range(5)) * 2)


def test_backend_and_store_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ChipdseError, match="workers must be >= 1, got 0"):
        Backend.processes(0)
    with ResultsStore(tmp_path / "r.sqlite") as store, pytest.raises(ChipdseError, match="key_fn"):
        run_jobs(square_job, [], store=store)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now raises ImportError
    with pytest.raises(ChipdseError, match=r'pip install "dask\[distributed\]"'):
        run_jobs(square_job, [{"x": 1, "log": str(tmp_path / "l")}], Backend.dask_local(2))
    assert not (tmp_path / "l").exists()


def test_frame_record_round_trip(small_scenario) -> None:
    pts, _ = enumerate_points(small_scenario)
    df = Screen(small_scenario).score(pts)
    assert df["ttft_s"].isna().any()
    record = frame_to_record(df)
    assert json.loads(json.dumps(record)) == record  # storable as JSON
    pd.testing.assert_frame_equal(frame_from_record(record), df, check_exact=True)


def test_sweep_equals_screen_score(small_scenario) -> None:
    pts, _ = enumerate_points(small_scenario)
    expected = screen_points(Screen(small_scenario), pts)  # estimator, energy, registered metrics (package cost)
    res = sweep(small_scenario)
    pd.testing.assert_frame_equal(res.points.drop(columns=["pareto", "pareto_energy", "pareto_cost", "workload"]),
                                  expected,
                                  check_exact=True)
    assert (res.points["workload"] == small_scenario.workload.name).all()
    s = summary_json(res)
    assert s["points"] == len(pts) == s["feasible"] + s["infeasible"]
    assert s["stable"] == int((expected["reason"] == "").sum())
    assert s["feasible"] == int(expected["feasible"].sum()) == s["stable"] + s["unstable"]
    assert sum(s["infeasible_reasons"].values()) == s["infeasible"]
    assert sum(s["unstable_reasons"].values()) == s["unstable"]
    assert 1 <= s["pareto"] == int(res.points["pareto"].sum()) and s["wall_s"] > 0
    assert s["jobs"] == 3 and s["jobs_stored"] == 0


SIM_SWEEP = {"simulate": 3, "sim_duration_s": 10}
"""Three Pareto candidates simulated for 10 s each (about 1-2 s of wall time per run)."""


def _comparable(result) -> dict[str, Any]:
    """The sweep's results without wall times and store counters (what must not depend on interruptions)."""
    s = summary_json(result)
    for k in ("wall_s", "jobs_stored", "jobs_run", "sim_jobs_stored", "sim_jobs_run", "backend"):
        s.pop(k)
    return s


@pytest.mark.slow
def test_sigint_during_simulation_stage_then_rerun_equals_uninterrupted(write_scenario, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 5: Ctrl-C (a real SIGINT) while `chipdse sweep` simulates its Pareto candidates, then a rerun: the
    results equal an uninterrupted run, and the rerun runs exactly the jobs the store did not hold."""
    import signal
    import subprocess
    import time

    import chipdse.studies.hydra.sweep as sweep_module

    path = write_scenario({"name": "sigint", "design_space": SMALL_SPACE, "sweep": SIM_SWEEP})
    sc = load_scenario(path)
    full = sweep(sc)
    assert full.jobs == 3 and full.sim_jobs == 3 and (full.simulated["error"] == "").all()
    store_path = tmp_path / "store.sqlite"
    cmd = [sys.executable, "-c", "from chipdse.cli import app; app()", "sweep", str(path), "--store",
           str(store_path), "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 120
        stored = 0
        while time.monotonic() < end and proc.poll() is None:  # wait for the screen jobs and one simulation
            if store_path.exists():
                with sqlite3.connect(store_path, timeout=5) as conn:
                    try:
                        stored = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
                    except sqlite3.OperationalError:  # table not created yet
                        stored = 0
                if stored >= 4:
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "rerun the same command to resume" in stderr
    with ResultsStore(store_path) as store:
        before = store.count()
    assert 4 <= before < 6  # interrupted inside the simulation stage: 3 screen jobs and 1 or 2 simulations

    calls = {"screen": 0, "simulate": 0}
    screen_job, simulate = sweep_module._screen_job, sweep_module.simulate_candidate

    def counted_screen(job):  # noqa: ANN001, ANN202
        calls["screen"] += 1
        return screen_job(job)

    def counted_simulate(job):  # noqa: ANN001, ANN202
        calls["simulate"] += 1
        return simulate(job)

    monkeypatch.setattr(sweep_module, "_screen_job", counted_screen)
    monkeypatch.setattr(sweep_module, "simulate_candidate", counted_simulate)
    with ResultsStore(store_path) as store:
        resumed = sweep(sc, store=store)
        assert store.count() == 6
    assert calls == {"screen": 0, "simulate": 6 - before}
    assert resumed.jobs_stored == 3 and resumed.sim_jobs_stored == before - 3
    assert _comparable(resumed) == _comparable(full)
    pd.testing.assert_frame_equal(resumed.points, full.points, check_exact=True)
    pd.testing.assert_frame_equal(resumed.simulated, full.simulated, check_exact=True)


@pytest.mark.slow
def test_sweep_interrupted_in_screen_stage_keeps_finished_jobs(small_scenario, tmp_path: Path) -> None:
    path = tmp_path / "sweep.sqlite"

    def stop_after_two_chunks(stage: str, done: float, total: float) -> None:
        if done > 0 and done < total and stage == "screen" and done >= 2 * total / 3 - 1e-9:
            raise KeyboardInterrupt

    with ResultsStore(path) as store, pytest.raises(KeyboardInterrupt):
        sweep(small_scenario, store=store, progress=stop_after_two_chunks)
    with ResultsStore(path) as store:
        assert 1 <= store.count() < 3
        kept = store.count()
        resumed = sweep(small_scenario, store=store)
        assert resumed.jobs_stored == kept and store.count() == 3
        assert sweep(small_scenario, store=store).jobs_stored == 3
        assert sweep(small_scenario, store=store, fresh=True).jobs_stored == 0
    pd.testing.assert_frame_equal(resumed.points, sweep(small_scenario).points, check_exact=True)


@pytest.mark.slow
def test_sweep_process_pool_equals_in_process(small_scenario, tmp_path: Path) -> None:
    serial = sweep(small_scenario)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        pooled = sweep(small_scenario, Backend.processes(2), store=store)
        assert store.count() == 3
    pd.testing.assert_frame_equal(pooled.points, serial.points, check_exact=True)
    assert pooled.backend == "process pool (2 workers)"


@pytest.mark.slow
def test_sweep_dask_local_cluster_equals_in_process(write_scenario, tmp_path: Path) -> None:
    """Issue 5: both stages (screen and the simulations of Pareto candidates) on a 2-worker Dask LocalCluster give
    the in-process results."""
    pytest.importorskip("distributed", reason='dask.distributed not installed (pip install "dask[distributed]")')
    sc = load_scenario(write_scenario({"name": "dask", "design_space": SMALL_SPACE,
                                       "sweep": {"simulate": 2, "sim_duration_s": 5}}))
    serial = sweep(sc)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        on_dask = sweep(sc, Backend.dask_local(2, processes=False), store=store)
        assert store.count() == 3 + 2
    pd.testing.assert_frame_equal(on_dask.points, serial.points, check_exact=True)
    pd.testing.assert_frame_equal(on_dask.simulated, serial.simulated, check_exact=True)
    assert _comparable(on_dask) == _comparable(serial) and on_dask.backend != serial.backend


def test_run_jobs_dask_local_cluster_equals_in_process(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason='dask.distributed not installed (pip install "dask[distributed]")')
    log = tmp_path / "runs.log"
    jobs = [{"x": x, "log": str(log)} for x in range(5)]
    with ResultsStore(tmp_path / "r.sqlite") as store:
        out = run_jobs(square_job, jobs, Backend.dask_local(2, processes=False), store=store, key_fn=key_of)
        assert run_jobs(square_job, jobs, Backend.dask_local(2, processes=False), store=store,
                        key_fn=key_of) == out
        assert sorted(runs(log)) == list(range(5))  # the second Dask run skipped every job
    with ResultsStore(tmp_path / "r2.sqlite") as store:
        assert out == run_jobs(square_job, jobs, store=store, key_fn=key_of)


def test_cli_sweep_json_and_resume(write_scenario, tmp_path: Path) -> None:
    """`chipdse sweep --json` prints the summary keys; a rerun reads every job from the store."""
    import json as _json

    from typer.testing import CliRunner

    from chipdse.cli import app

    path = write_scenario({"name": "cli-sweep", "design_space": {
        "total_chiplets": 24, "hbm_min": 5, "hbm_max": 6, "d2d_GBps": [512], "max_batch": [8, 32]}})
    store = tmp_path / "store.sqlite"
    runner = CliRunner()
    first = runner.invoke(app, ["sweep", str(path), "--json", "--store", str(store)])
    assert first.exit_code == 0, first.output
    summary = _json.loads(first.output)
    assert {"points", "feasible", "infeasible", "pareto", "wall_s"} <= set(summary)
    assert summary["points"] == (816 + 680) * 2 and summary["jobs_stored"] == 0
    again = _json.loads(runner.invoke(app, ["sweep", str(path), "--json", "--store", str(store)]).output)
    assert again["jobs_stored"] == again["jobs"] == 2
    keys = ("points", "feasible", "pareto")
    assert {k: again[k] for k in keys} == {k: summary[k] for k in keys}


def test_cli_sweep_out_writes_parquet_that_pandas_reads_back(write_scenario, tmp_path: Path) -> None:
    """Issue 34: `chipdse sweep --out DIR` writes every scored point as DIR/points.parquet, the same table the API
    returns (every value and dtype), and DIR/points.columns.csv describes each of its columns."""
    from typer.testing import CliRunner

    from chipdse import api
    from chipdse.cli import app

    path = write_scenario({"name": "cli-sweep-out", "design_space": {
        "total_chiplets": 24, "hbm_min": 5, "hbm_max": 6, "d2d_GBps": [512], "max_batch": [8, 32]}})
    store, out = tmp_path / "store.sqlite", tmp_path / "points-out"
    result = CliRunner().invoke(app, ["sweep", str(path), "--store", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    points = pd.read_parquet(out / "points.parquet")
    assert len(points) == (816 + 680) * 2  # 24 chiplets of 4 types with 5 or 6 HBM stacks, two batches
    expected = api.sweep(path, store=store).to_pandas()  # every job read back from the store
    pd.testing.assert_frame_equal(points, expected.reset_index(drop=True))
    cols = pd.read_csv(out / "points.columns.csv")
    assert list(cols["column"]) == list(points.columns)
    assert cols["description"].str.len().min() > 10 and not cols["unit"].isna().any()
    assert {"workload", "throughput_tps", "ttft_s", "pareto"} <= set(points.columns)


def test_two_workload_points_stream_to_one_parquet_equal_to_the_sweep(write_scenario, tmp_path: Path) -> None:
    """Each workload's table is written as its own row group; pandas reads back one table equal to the sweep's."""
    import pyarrow.parquet as papq

    from chipdse import api
    from chipdse.core.paths import instances_dir

    wl = instances_dir() / "workloads"
    path = write_scenario({"name": "two-workloads", "design_space": {
        "total_chiplets": 24, "hbm_min": 5, "hbm_max": 5, "d2d_GBps": [512], "max_batch": [8, 32]},
        "sweep": {"workloads": [str(wl / "arxiv.yaml"), str(wl / "chat.yaml")], "simulate": 0}})
    run = api.sweep(path)
    assert list(run.result.point_tables) == ["arxiv", "chat"]
    written = run.write_points(tmp_path / "out")
    assert papq.ParquetFile(written["parquet"]).num_row_groups == 2
    back = pd.read_parquet(written["parquet"])
    assert len(back) == 2 * 816 * 2 == run.result.n_points  # 2 workloads x C(18, 3) splits of 19 chiplets x 2 batches
    pd.testing.assert_frame_equal(back, run.result.points, check_exact=True)
    assert list(back["workload"].unique()) == ["arxiv", "chat"]


def test_screen_progress_over_two_workloads_counts_every_point_once(write_scenario) -> None:
    """The screen runs one workload's jobs at a time; its progress still climbs over all of them to the space's
    size: 2 workloads x C(18, 3) = 816 splits of 19 chiplets x 2 batches = 3,264 points."""
    from chipdse.core.paths import instances_dir

    wl = instances_dir() / "workloads"
    path = write_scenario({"name": "two-workloads", "design_space": {
        "total_chiplets": 24, "hbm_min": 5, "hbm_max": 5, "d2d_GBps": [512], "max_batch": [8, 32]},
        "sweep": {"workloads": [str(wl / "arxiv.yaml"), str(wl / "chat.yaml")], "simulate": 0}})
    seen: list[tuple[float, float]] = []
    sweep(load_scenario(path), progress=lambda stage, done, total: seen.append((done, total)) if stage == "screen"
          else None)
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == 2 * 816 * 2
    assert {t for _, t in seen} == {2 * 816 * 2}


def test_cli_sweep_out_unwritable_is_one_line_and_runs_nothing(write_scenario, tmp_path: Path,
                                                               no_heavy_work: list[str]) -> None:
    from typer.testing import CliRunner

    from chipdse.cli import app

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    path = write_scenario({"name": "cli-sweep-out-bad"})
    result = CliRunner().invoke(app, ["sweep", str(path), "--store", str(tmp_path / "s.sqlite"),
                                      "--out", str(blocker / "sub")])
    assert result.exit_code == 2 and "--out" in result.output and "Traceback" not in result.output
    assert no_heavy_work == [] and not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("where", ["points.parquet", "points.columns.csv", "manifest.json"])
def test_cli_sweep_out_refuses_a_folder_the_points_cannot_land_in_before_any_job(
        where: str, write_scenario, tmp_path: Path, no_heavy_work: list[str]) -> None:
    """A points file that is a folder, or an explore report's folder (its points.columns.csv describes its
    points.csv): one line, exit 2, before any job runs, no store left."""
    from typer.testing import CliRunner

    from chipdse.cli import app

    out = tmp_path / "out"
    if where == "manifest.json":
        out.mkdir()
        (out / where).write_text("{}")
    else:
        (out / where).mkdir(parents=True)
    path = write_scenario({"name": "cli-sweep-out-clash"})
    result = CliRunner().invoke(app, ["sweep", str(path), "--store", str(tmp_path / "s.sqlite"), "--out", str(out)])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: --out"), result.output
    assert no_heavy_work == [] and not (tmp_path / "s.sqlite").exists()


def test_cli_sweep_out_write_failure_keeps_the_store(write_scenario, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure writing the points after the sweep keeps the finished store (a rerun reads every job) and leaves
    neither points file behind."""
    from typer.testing import CliRunner

    from chipdse.cli import app
    from chipdse.reports import files

    def full_disk(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device", str(tmp_path / "out" / ".points.columns.csv.x.tmp"))

    monkeypatch.setattr(files.pd.DataFrame, "to_csv", full_disk)
    path = write_scenario({"name": "cli-sweep-out-full", "design_space": {
        "total_chiplets": 24, "hbm_min": 5, "hbm_max": 5, "d2d_GBps": [512], "max_batch": [8]}})
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(app, ["sweep", str(path), "--store", str(store), "--out", str(tmp_path / "out")])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "cannot write output" in lines[0] and "points.columns.csv" in lines[0] and str(store) in lines[0]
    assert store.exists()
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


@pytest.mark.slow
def test_vectorized_pareto_equals_unvectorized_reference_on_1000_points() -> None:
    """Issue 5: the vectorized estimator and a one-point-at-a-time reference give the same Pareto set on a random
    sample of 1,000 points of the default scenario's Table III space."""
    import numpy as np

    from chipdse.core.design_space import DesignPoints, enumerate_points
    from chipdse.core.scenario import load_scenario
    from chipdse.evaluators.estimator import Screen
    from chipdse.evaluators.selection import pareto_mask

    sc = load_scenario()
    pts, _ = enumerate_points(sc)
    idx = np.random.default_rng(5).choice(len(pts), 1000, replace=False)
    sample = DesignPoints(pts.types, pts.counts[idx], pts.n_hbm[idx], pts.d2d_GBps[idx], pts.max_batch[idx])
    screen = Screen(sc)
    vec = screen.score(sample)
    ref = [screen.score(DesignPoints(pts.types, pts.counts[[i]], pts.n_hbm[[i]], pts.d2d_GBps[[i]],
                                     pts.max_batch[[i]])).iloc[0] for i in idx]
    tp = np.array([r["throughput_tps"] for r in ref])
    ttft = np.array([r["ttft_s"] for r in ref])
    assert np.allclose(tp, vec["throughput_tps"], rtol=1e-12)
    assert np.array_equal(np.isnan(ttft), vec["ttft_s"].isna().to_numpy())
    assert np.array_equal(pareto_mask(tp, ttft), pareto_mask(vec["throughput_tps"].to_numpy(),
                                                            vec["ttft_s"].to_numpy()))


def test_cli_sweep_bad_scheduler_address_is_one_line_and_leaves_no_store(write_scenario, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chipdse.cli import app

    pytest.importorskip("distributed")
    path = write_scenario({"name": "bad-address", "design_space": {
        "total_chiplets": 24, "hbm_min": 5, "hbm_max": 5, "d2d_GBps": [512], "max_batch": [8]}})
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(app, ["sweep", str(path), "--scheduler", "bogus", "--store", str(store)])
    assert result.exit_code == 2 and "error:" in result.output and "Traceback" not in result.output
    assert "--scheduler bogus" in result.output and not store.exists()
    result = CliRunner().invoke(app, ["sweep", str(path), "--store", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.output
