"""Sweeps behind the HYDRA claims rows more than 25% off the paper: each row's named parameter over a stated range.

The paper does not give these parameters; each sweep varies one and prints the claims numbers it moves, from the
same code as the claims table (:func:`chipdse.studies.claims.measure_policies` on
:func:`chipdse.studies.hydra.simstudy.policy_rows`). Cheap set-up, stated here and printed: the default scenario's model
(Nemotron-H-4B), its own B* and M_T per dataset (:func:`chipdse.studies.hydra.simstage.workload_policy_jobs`, as the
protocol), ``--measure-s`` (default 60 s) measured after the scenario's warm-up instead of 100 s.

1. ``timeout``: static batching's batch-formation timeout (``SimJob.static_batch_timeout_s``; the scenario's
   ``simulation.static_batch_timeout_s``), 0.1-30 s and 3600 s (no partial batch within the window), ablation runs
   at the scenario's load on arXiv and BWB;
2. ``load``: offered load 50-120% of each design's estimated capacity, ablation and scheduler runs on arXiv;
3. ``threshold``: the elastic scheduler's imbalance threshold 0-4 service times, CP+ET against CP on arXiv;
   ``placement``: the placement study's B* load, 50-90% of the weakest compared layout's estimated capacity, and
   the former rule (every layout at 90% of the exact layout's), on arXiv and Chat;
4. ``table4``: Table IV's offered rate share 50% and 90% of each model's own B* capacity (the claims run uses
   70%), shorter windows (saturated runs 15-60 s measured, TTFT runs 30 s);
5. ``recovery``: the recovery sub-space's max batch 8 (the claims run uses 16) at 12 HBM stacks, 512 GB/s.

Not part of the test run (about 10-20 minutes on 2 cores).

Run: python benchmarks/bench_claims_sweeps.py [--workers 2] [--measure-s 60] [--only timeout|load|threshold|table4|
recovery]... [--json OUT.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario, load_scenario, with_workload
from chipdse.runtime.parallel import Backend
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.claims import measure_policies, measure_recovery, measure_table_iv
from chipdse.studies.hydra.generality import generality, simulate_table_iv
from chipdse.studies.hydra.recovery import recovery
from chipdse.studies.hydra.simstage import run_policy_jobs, workload_policy_jobs
from chipdse.studies.hydra.simstudy import SimJob

TIMEOUTS_S = (0.1, 1.0, 10.0, 30.0, 3600.0)
LOADS = (0.5, 0.7, 0.9, 1.2)
THRESHOLDS = (0.0, 0.5, 1.0, 2.0, 4.0)
PLACEMENT_LOADS = (0.5, 0.7, 0.9)
TABLE4_LOADS = (0.5, 0.9)
RECOVERY_BATCHES = (8,)

POLICY_KEYS = ("full_tp_mean", "full_tp_max", "full_ttft_change", "cp_tp_min", "cp_tp_max", "et_tp_min", "et_tp_max",
               "db_tp_mean", "db_ttft_change", "elastic_vs_static_tp_min", "elastic_vs_static_tp_max",
               "elastic_vs_static_ratio_min", "elastic_vs_static_ratio_max", "elastic_vs_fcfs_min",
               "elastic_vs_fcfs_max", "elastic_beats_ws_share",
               "cp_vs_random_ratio_min", "cp_vs_random_ratio_max", "cp_vs_random_tp_min", "cp_vs_random_tp_max",
               "cp_vs_rr_ratio_mean", "cp_vs_rr_tp_mean")
"""The claims rows the policy sweeps report (keys of :data:`chipdse.studies.claims.CLAIMS`)."""


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def with_simulation(sc: LoadedScenario, **fields: Any) -> LoadedScenario:
    """``sc`` with ``simulation`` fields replaced (e.g. ``static_batch_timeout_s``, ``measure_s``)."""
    sim = sc.spec.simulation.model_copy(update=fields)
    return dataclasses.replace(sc, spec=sc.spec.model_copy(update={"simulation": sim}))


_BASE: dict[str, list[SimJob]] = {}


def base_jobs(sc: LoadedScenario, dataset: str, measure_s: float, skipped: list[str]) -> list[SimJob]:
    """The protocol's policy runs of one dataset on its own B* and M_T, ``measure_s`` measured (placed once per
    dataset)."""
    if dataset not in _BASE:
        scw = with_workload(with_simulation(sc, measure_s=measure_s), dataset)
        cfg = SolverConfig.of(scw.spec, seed=scw.spec.seed)
        _BASE[dataset] = workload_policy_jobs(scw, cfg, skipped)
    return _BASE[dataset]


def measure(jobs: list[SimJob], backend: Backend, skipped: list[str]) -> dict[str, float | None]:
    """Run the jobs and measure the policy claims on their table (the claims table's code)."""
    table = run_policy_jobs(jobs, backend, jobs[0].sc.spec.simulation.min_completed, skipped)
    m, _ = measure_policies(table)
    n_ok = int(table[table["study"] == "ablation"].groupby(["dataset", "role"])["valid"].all().sum())
    return {**{k: m.get(k) for k in POLICY_KEYS}, "valid_workloads": n_ok}


def at_load(job: SimJob, load: float) -> SimJob:
    """The job offered ``load`` x its design's estimated capacity (its rate was ``job.tags['load']`` x it)."""
    return dataclasses.replace(job, rate_rps=job.rate_rps / job.tags["load"] * load, tags={**job.tags, "load": load})


def sweep_timeout(sc: LoadedScenario, a: argparse.Namespace, backend: Backend, skipped: list[str]) -> list[dict]:
    jobs = [j for ds in ("arxiv.yaml", "bwb.yaml") for j in base_jobs(sc, ds, a.measure_s, skipped)
            if j.tags["study"] == "ablation"]
    return [{"timeout_s": t, **measure([dataclasses.replace(j, static_batch_timeout_s=t) for j in jobs], backend,
                                       skipped)} for t in TIMEOUTS_S]


def sweep_load(sc: LoadedScenario, a: argparse.Namespace, backend: Backend, skipped: list[str]) -> list[dict]:
    jobs = [j for j in base_jobs(sc, "arxiv.yaml", a.measure_s, skipped) if j.tags["study"] != "placement"]
    return [{"load": x, **measure([at_load(j, x) for j in jobs], backend, skipped)} for x in LOADS]


def sweep_placement(sc: LoadedScenario, a: argparse.Namespace, backend: Backend, skipped: list[str]) -> list[dict]:
    """The placement study's B* load over the weakest layout's capacity (M_T runs saturated in every row), and the
    former rule (90% of the exact layout's capacity for every layout, ``exact90``)."""
    jobs = [j for ds in ("arxiv.yaml", "chat.yaml") for j in base_jobs(sc, ds, a.measure_s, skipped)]
    ablation = [j for j in jobs if j.tags["study"] == "ablation"]
    out = []
    for x in PLACEMENT_LOADS:
        run = ablation + [j if j.tags["role"] == "M_T" else dataclasses.replace(j, rate_rps=j.rate_rps * x / 0.9)
                          for j in jobs if j.tags["study"] == "placement"]
        m = measure(run, backend, skipped)
        out.append({"placement_load": x, **{k: m[k] for k in POLICY_KEYS if k.startswith("cp_vs")}})
    shared = {(j.tags["dataset"], j.tags["role"]): j.rate_rps for j in ablation}
    old = ablation + [dataclasses.replace(j, rate_rps=shared[j.tags["dataset"], j.tags["role"]]) for j in jobs
                      if j.tags["study"] == "placement" and j.tags["variant"] not in ("exact", "round-robin")]
    m = measure(old, backend, skipped)
    out.append({"placement_load": "exact90", **{k: m[k] for k in POLICY_KEYS if k.startswith("cp_vs")}})
    return out


def sweep_threshold(sc: LoadedScenario, a: argparse.Namespace, backend: Backend, skipped: list[str]) -> list[dict]:
    jobs = [j for j in base_jobs(sc, "arxiv.yaml", a.measure_s, skipped)
            if j.tags["study"] == "ablation" and j.tags["variant"] in ("baseline", "CP", "CP+ET")]
    out = []
    for t in THRESHOLDS:
        run = [dataclasses.replace(j, scheduler_options=(("imbalance_threshold", t),))
               if j.tags["variant"] == "CP+ET" else j for j in jobs]
        m = measure(run, backend, skipped)
        out.append({"imbalance_threshold": t, **{k: m[k] for k in ("et_tp_min", "et_tp_max", "valid_workloads")}})
    return out


def sweep_table4(backend: Backend, skipped: list[str]) -> list[dict]:
    sc = load_scenario(instances_dir() / "scenarios" / "hydra-table4-chat.yaml")
    r = generality(sc)
    out = []
    for x in TABLE4_LOADS:
        sim = simulate_table_iv(sc, r, load=x, backend=backend, min_measure_s=15.0, max_s=60.0, ttft_duration_s=30.0)
        skipped += sim.skipped
        out.append({"rate_share": x, **measure_table_iv(sim.scores)})
    return out


def sweep_recovery(backend: Backend, skipped: list[str]) -> list[dict]:
    sc = load_scenario()
    out = []
    for b in RECOVERY_BATCHES:
        res = recovery(sc, 12, 512.0, b, backend=backend)
        skipped += res.skipped
        out.append({"max_batch": b, **measure_recovery(res.metrics)})
    return out


def _span(rows: list[dict], key: str) -> str:
    v = [r[key] for r in rows if r.get(key) is not None and not (isinstance(r[key], float) and math.isnan(r[key]))]
    return "-" if not v else f"{min(v):.3g} to {max(v):.3g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--measure-s", type=float, default=60.0)
    ap.add_argument("--only", action="append", choices=["timeout", "load", "threshold", "placement", "table4",
                                                        "recovery"])
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    backend = Backend.processes(a.workers) if a.workers > 1 else Backend.in_process()
    sc = load_scenario()
    which = a.only or ["timeout", "load", "threshold", "placement", "table4", "recovery"]
    runs = {"timeout": lambda s: sweep_timeout(sc, a, backend, s), "load": lambda s: sweep_load(sc, a, backend, s),
            "threshold": lambda s: sweep_threshold(sc, a, backend, s),
            "placement": lambda s: sweep_placement(sc, a, backend, s), "table4": lambda s: sweep_table4(backend, s),
            "recovery": lambda s: sweep_recovery(backend, s)}
    t0, c0 = time.perf_counter(), _cpu_s()
    results: dict[str, list[dict]] = {}
    for name in which:
        skipped: list[str] = []
        t1, c1 = time.perf_counter(), _cpu_s()
        results[name] = rows = runs[name](skipped)
        print(f"## {name}: {time.perf_counter() - t1:.0f} s wall, {_cpu_s() - c1:.0f} s CPU")
        print(pd.DataFrame(rows).round(3).to_string(index=False))
        keys = [k for k in rows[0] if k not in ("timeout_s", "load", "imbalance_threshold", "placement_load",
                                               "rate_share", "max_batch", "valid_workloads")]
        print("ranges: " + "; ".join(f"{k} {_span(rows, k)}" for k in keys))
        for s in dict.fromkeys(skipped):
            print(f"  skipped: {s}")
        print(flush=True)
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine {platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}; load average {os.getloadavg()[0]:.2f} at the end; {a.workers} "
          f"worker(s); {sc.spec.name}'s model, {a.measure_s:g} s measured after the scenario's warm-up")
    print(f"total: {time.perf_counter() - t0:.0f} s wall, {_cpu_s() - c0:.0f} s CPU")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
