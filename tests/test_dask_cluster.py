"""docs/dask.md's Dask recipe, run on loopback: a scheduler, one worker, and `chipdse sweep --scheduler`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")


def _wait_for(path: Path, timeout_s: float) -> dict:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if path.exists() and path.stat().st_size > 0:
            return json.loads(path.read_text())
        time.sleep(0.2)
    raise TimeoutError(f"{path} not written in {timeout_s} s")


@pytest.mark.slow
def test_sweep_on_a_loopback_dask_cluster_equals_in_process(write_scenario, tmp_path: Path) -> None:
    dask = shutil.which("dask", path=str(Path(sys.executable).parent))
    chipdse = shutil.which("chipdse", path=str(Path(sys.executable).parent))
    if dask is None or chipdse is None:
        pytest.skip("dask / chipdse console scripts not installed in this environment")
    path = write_scenario({"name": "dask-sweep", "design_space": {
        "total_chiplets": 24, "hbm_min": 5, "hbm_max": 6, "d2d_GBps": [512], "max_batch": [8, 32]},
        "sweep": {"simulate": 1, "sim_duration_s": 5}})
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sched_file)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        address = _wait_for(sched_file, 60)["address"]
        procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "1", "--no-dashboard",
                                       "--host", "127.0.0.1"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        run = [chipdse, "sweep", str(path), "--json", "--fresh"]
        on_cluster = subprocess.run([*run, "--scheduler", address, "--store", str(tmp_path / "a.sqlite")],
                                    capture_output=True, text=True, timeout=180)
        local = subprocess.run([*run, "--store", str(tmp_path / "b.sqlite")], capture_output=True, text=True,
                               timeout=180)
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=30)
    assert on_cluster.returncode == 0, on_cluster.stderr
    a, b = json.loads(on_cluster.stdout), json.loads(local.stdout)
    assert a["backend"] != b["backend"]
    keys = ("points", "feasible", "infeasible", "pareto", "workloads", "sim_jobs", "simulated")
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
    assert a["sim_jobs"] == 1 and a["simulated"][0]["error"] == "" and a["simulated"][0]["events"] > 0
