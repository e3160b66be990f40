"""The explore pipeline's simulation stage: fidelity on Pareto candidates, then the policy ablation, the scheduler
comparison and B*'s layouts per dataset (HYDRA Sec. VI-C/D), each run as one job of :mod:`chipdse.studies.simstudy`
or :mod:`chipdse.studies.layout_study`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.scenario import LoadedScenario, with_workload
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.solvers.config import SolverConfig
from chipdse.studies.layout_study import layout_candidates, layout_jobs, layout_table
from chipdse.studies.parallel import Backend, run_jobs
from chipdse.studies.simstudy import (
    Layout,
    SimJob,
    SimulationStudy,
    fidelity_jobs,
    fidelity_metrics,
    fidelity_table,
    finalist_layouts,
    make_layout,
    policy_datasets,
    policy_jobs,
)


def explore_simulations(sc: LoadedScenario, df: pd.DataFrame, finalists: list[Any], cfg: SolverConfig,
                        serve: Any, screen_of: Any, progress: Any) -> SimulationStudy:
    """Explore's simulation stage: fidelity on Pareto candidates, ablation and schedulers on B* per dataset.

    ``serve(screen, sc, point, placement, prefill_map, decode_map)`` re-scores a layout (``explore.serve_layout``)
    and ``screen_of(sc)`` builds an estimator for a scenario; both are passed in (explore owns them).
    """


    t0 = time.perf_counter()
    st = sc.spec.simulation
    backend = Backend.processes(st.workers) if st.workers > 1 else Backend.in_process()
    skipped: list[str] = []
    # fidelity: B*, M_T and Pareto points spread along the front
    front = df[df["pareto"]].sort_values("throughput_tps")
    roles = [int(i) for i in df.index[df["role"] != "-"]]
    spread = [int(front.index[j]) for j in np.linspace(0, len(front) - 1, max(st.candidates, 0)).astype(int)]
    picks = list(dict.fromkeys(roles + spread))[:max(st.candidates, len(roles))]
    feas = df[df["feasible"] & (df["capacity_rps"] > 0)].sort_values("throughput_tps", ascending=False)
    if st.spread and len(feas):
        ranks = np.linspace(0, len(feas) - 1, st.spread + 2).astype(int)[1:-1] if st.spread < len(feas) else \
            np.arange(len(feas))
        picks += [int(i) for i in feas.index[ranks] if int(i) not in picks]
    rows = df.loc[picks]
    layouts: dict[int, Layout] = {}
    by_label = {f.row["label"]: finalist_layouts(f).get("exact") for f in finalists}
    for pid, row in rows.iterrows():
        lay = by_label.get(row["label"])
        if lay is None:
            progress(f"simulation: placing Pareto point {row['label']}", 0.0)
            quick = SolverConfig(work_limit=min(cfg.work_limit, 5.0), time_limit_s=min(cfg.time_limit_s, 50.0),
                                 seed=cfg.seed)
            lay = make_layout(sc, row.to_dict(), "hbm-enum", quick) or make_layout(sc, row.to_dict(),
                                                                                  "hydra-greedy", quick)
        if lay is None:
            skipped.append(f"{row['label']}: no placement found")
            continue
        layouts[int(pid)] = lay
    jobs = fidelity_jobs(sc, rows, layouts, batching=sc.spec.estimator.batching, max_s=st.max_duration_s)
    # ablation and schedulers on B* for every dataset
    b_star = finalists[0]
    lay_b = finalist_layouts(b_star)
    datasets = policy_datasets(sc)
    candidates: list[dict[str, Any]] = []
    layout_served: dict[str, dict[str, float]] = {}
    if set(lay_b) == {"exact", "round-robin"}:
        for ds in datasets:
            scd = with_workload(sc, ds)
            name = scd.workload.name
            served = serve(screen_of(scd), scd, lay_b["exact"].point, lay_b["exact"].placement,
                           lay_b["exact"].prefill_map, lay_b["exact"].decode_map)
            # a window of three request lifetimes (mean output x token interval), within the configured bounds
            lifetime = scd.lengths.mean_decode * served["decode_iteration_s"]
            window = min(max(st.duration_s, 3.0 * lifetime), max(st.max_duration_s, st.duration_s))
            if window < 2.0 * lifetime:
                skipped.append(f"{name}: window {window:.0f} s is under two request lifetimes ({lifetime:.0f} s "
                               "each): its policy numbers include the ramp-up from an empty system")
            jobs += policy_jobs(scd, lay_b, served["capacity_rps"], name, load=st.load, duration_s=window)
            if name == sc.workload.name and not candidates:  # B*'s layouts on the scenario's own dataset

                progress("simulation: B*'s layouts (and the min max-link placement)", 0.0)
                candidates = layout_candidates(sc, b_star, cfg)
                screen = screen_of(scd)
                layout_served = {c["name"]: serve(screen, scd, c["layout"].point, c["layout"].placement,
                                                  c["layout"].prefill_map, c["layout"].decode_map)
                                 for c in candidates}
                jobs += layout_jobs(scd, candidates, st.load * served["capacity_rps"], window)
    else:
        skipped.append("ablation: B* has no exact and round-robin layouts")
    progress(f"simulation: {len(jobs)} runs on {st.workers} worker(s)", 0.0)
    results: list[dict[str, Any]] = []
    safe = [_SafeJob(j) for j in jobs]
    for res in run_jobs(_run_safe, safe, backend):
        if "error" in res:
            skipped.append(res["error"])
        else:
            results.append(res)
    fid = fidelity_table(rows, [r for r in results if r.get("run") in ("saturated", "offered")])
    metrics = fidelity_metrics(fid) if len(fid) >= 3 else {}
    if len(fid) < 3:
        skipped.append(f"fidelity page: needs at least 3 simulated points, got {len(fid)} (simulation.candidates "
                       "+ simulation.spread)")

    layouts_df = layout_table(candidates, layout_served, results)
    flat = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in results
            if r.get("study") in ("ablation", "scheduler")]
    flat += [{**r, "study": "scheduler", "variant": "elastic"} for r in flat
             if r["study"] == "ablation" and r["variant"] == "CP+ET+DB"]
    pol = pd.DataFrame(flat)
    for r in flat:
        if r["study"] == "ablation" and r["variant"] != "CP+ET+DB" and r["sim_throughput_tps"] == 0:
            skipped.append(f"{r['dataset']} {r['variant']}: no token in its {r.get('duration_s', 0):.0f} s window "
                           "(static batching waits for a full batch, then prefills it whole)")
    util = {}
    home = sc.workload.name
    for r in results:
        if r.get("study") == "ablation" and r["dataset"] == home and r["variant"] in ("baseline", "CP"):
            util[r["placement"]] = {"links": r["link_utilization"], "chiplets": r["chiplet_utilization"],
                                    "variant": r["variant"]}
    return SimulationStudy(fid, metrics, pol, util, skipped, time.perf_counter() - t0, layouts_df)


@dataclass(frozen=True)
class _SafeJob:
    job: SimJob


def _run_safe(safe: _SafeJob) -> dict[str, Any]:
    """Run a job; a simulator input error (e.g. a request larger than memory) becomes an ``error`` entry."""

    try:
        return safe.job.run()
    except SimulationError as exc:
        tags = safe.job.tags
        return {"error": f"{tags.get('dataset', tags.get('label'))} {tags.get('variant', tags.get('run'))}: {exc}"}
