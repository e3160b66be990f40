"""The explore pipeline's simulation stage: fidelity on Pareto candidates, then the policy ablation, the scheduler
comparison and B*'s layouts per dataset (HYDRA Sec. VI-C/D), each run as one job of
:mod:`chipdse.studies.hydra.simstudy` or :mod:`chipdse.studies.hydra.layout_study`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.layout import Layout, LayoutKind
from chipdse.core.scenario import LoadedScenario, model_scenarios, with_workload
from chipdse.core.specs import MAX_SIM_DURATION_S
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.serving import Served, serve_layout
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.runtime.parallel import Backend, run_jobs
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.artifacts import PLACEMENT_VARIANTS, DesignTable, FinalistResult, SimulationStudy
from chipdse.studies.hydra.layout_study import LayoutCandidate, layout_candidates, layout_jobs, layout_table
from chipdse.studies.hydra.simstudy import (
    ANOTHER_RUN,
    SimJob,
    fidelity_jobs,
    fidelity_metrics,
    fidelity_table,
    make_layout,
    placement_rate_rps,
    policy_datasets,
    policy_jobs,
    policy_rows,
    protocol_warmup_s,
    random_layout,
    simulation_study,
)
from chipdse.studies.hydra.stages import estimator, screen_and_pick
from chipdse.studies.pipeline import Progress


def _quick(cfg: SolverConfig) -> SolverConfig:
    """The limits of the simulation stage's own placements (Pareto points, the protocol's designs)."""
    return SolverConfig(work_limit=min(cfg.work_limit, 5.0), time_limit_s=min(cfg.time_limit_s, 50.0), seed=cfg.seed)


def explore_simulations(sc: LoadedScenario, table: DesignTable, finalists: list[FinalistResult], cfg: SolverConfig,
                        progress: Progress) -> SimulationStudy:
    """Explore's simulation stage: fidelity on Pareto candidates; the ablation, scheduler and placement studies on
    B* and M_T per dataset (``simulation.models`` empty) or on each model x dataset's own B* and M_T
    (:func:`protocol_jobs`).

    Parameters
    ----------
    sc : LoadedScenario
    table : DesignTable
        The scored space (the fidelity candidates: the finalists and Pareto points spread along the front).
    finalists : list[FinalistResult]
        B* (first) and M_T with their layouts.
    cfg : SolverConfig
    progress : callable(str, float)

    Returns
    -------
    SimulationStudy
    """
    t0 = time.perf_counter()
    st = sc.spec.simulation
    backend = Backend.processes(st.workers) if st.workers > 1 else Backend.in_process()
    skipped: list[str] = []
    df = table.frame
    # fidelity: B*, M_T and Pareto points spread along the front
    front = df[df["pareto"]].sort_values("throughput_tps")
    roles = sorted({f.finalist.index for f in finalists})
    spread = [int(front.index[j]) for j in np.linspace(0, len(front) - 1, max(st.candidates, 0)).astype(int)]
    picks = list(dict.fromkeys(roles + spread))[:max(st.candidates, len(roles))]
    feas = df[df["feasible"] & (df["capacity_rps"] > 0)].sort_values("throughput_tps", ascending=False)
    if st.spread and len(feas):
        ranks = np.linspace(0, len(feas) - 1, st.spread + 2).astype(int)[1:-1] if st.spread < len(feas) else \
            np.arange(len(feas))
        picks += [int(i) for i in feas.index[ranks] if int(i) not in picks]
    rows = df.loc[picks]
    layouts: dict[int, Layout] = {}
    by_label = {f.label: f.layouts().get(LayoutKind.EXACT) for f in finalists}
    for pid, row in rows.iterrows():
        lay = by_label.get(row["label"])
        if lay is None:
            progress(f"simulation: placing Pareto point {row['label']}", 0.0)
            design = table.design(int(pid))
            lay = make_layout(sc, design, "hbm-enum", _quick(cfg)) or make_layout(sc, design, "hydra-greedy",
                                                                                  _quick(cfg))
        if lay is None:
            skipped.append(f"{row['label']}: no placement found")
            continue
        layouts[int(pid)] = lay
    jobs = fidelity_jobs(sc, rows, layouts, batching=sc.spec.estimator.batching, max_s=st.max_duration_s)
    # ablation, schedulers and placements on B* and M_T for every dataset (or every model x dataset)
    b_star = finalists[0]
    candidates: list[LayoutCandidate] = []
    layout_served: dict[str, Served] = {}
    if st.models:
        jobs += protocol_jobs(sc, cfg, progress, skipped)
    for f in finalists if not st.models else []:
        role = "B*" if f.role.startswith("B*") else "M_T"  # "B* = M_T": one set of runs, scored as B*
        if role not in st.roles and f.role != "B* = M_T":
            continue
        lays = {str(k): v for k, v in f.layouts().items()}
        if not {"exact", "round-robin"} <= set(lays):
            skipped.append(f"{f.role}: no exact and round-robin layouts, no policy runs")
            continue
        rnd = random_layout(sc, lays["exact"].point, float(f.row["capacity_rps"]), cfg, cfg.seed)
        lays |= {"random": rnd} if rnd is not None else {}
        for ds in policy_datasets(sc):
            scd = with_workload(sc, ds)
            screen = estimator(scd)
            served = serve_layout(screen, lays["exact"])
            jobs += policy_jobs(scd, lays, served.capacity_rps, scd.workload.name, load=st.load,
                                warmup_s=_warmup_s(scd, lays["exact"].point.batch, served), measure_s=st.measure_s,
                                tags={"role": role, "model": sc.model.key},
                                placement_rate=_placement_rate(screen, lays, role, served))
            if f is b_star and scd.workload.name == sc.workload.name and not candidates:  # B*'s layouts, own data
                progress("simulation: B*'s layouts (and the min max-link placement)", 0.0)
                candidates = layout_candidates(sc, b_star, cfg)
                layout_served = {c.name: serve_layout(screen, c.layout) for c in candidates}
                weakest = min([v.capacity_rps for v in layout_served.values() if v.capacity_rps > 0]
                              or [served.capacity_rps])
                jobs += layout_jobs(scd, candidates, st.load * weakest, st.duration_s)
    running = f"simulation: {len(jobs)} runs on {st.workers} worker(s)"
    progress(running, 0.0)
    results: list[dict[str, Any]] = []
    safe = [_SafeJob(j) for j in jobs]

    def runs_done(done: float, total: float) -> None:
        progress(running, done / total if total else 1.0)  # the CLI's bar and ETA for this stage

    for res in run_jobs(_run_safe, safe, backend, progress=runs_done):
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
    pol = policy_rows(results, st.min_completed)
    if len(pol):
        own = ~pol["valid"] & ~pol["invalid_reason"].str.startswith(ANOTHER_RUN)  # each cause once, where it is
        bad = pol[own].drop_duplicates([k for k in ("model", "dataset", "role", "study") if k in pol])
        skipped += [f"{r.get('model', '')} {r['dataset']} {r.get('role', '')} {r['study']}: invalid, "
                    f"{r['invalid_reason']}" for _, r in bad.iterrows()]
    util = {}
    home = sc.workload.name
    for r in results if not st.models else []:  # the protocol's layouts are not explore's B*'s
        if r.get("study") == "ablation" and r["dataset"] == home and r["variant"] in ("baseline", "CP") \
                and r.get("role", "B*").startswith("B*") and r.get("model", sc.model.key) == sc.model.key:
            util[r["placement"]] = {"links": r["link_utilization"], "chiplets": r["chiplet_utilization"],
                                    "variant": r["variant"]}
    return simulation_study(fid, metrics, pol, util, skipped, time.perf_counter() - t0, layouts_df)


def _placement_rate(screen: Screen, layouts: dict[str, Layout], role: str, exact_served: Served) -> float:
    """The placement study's offered rate on one workload, req/s (:func:`placement_rate_rps` over every compared
    layout's estimator re-score; ``exact_served`` is the exact layout's, already computed)."""
    others = [lay for key, lay in layouts.items() if key != "exact" and key in PLACEMENT_VARIANTS]
    caps = [exact_served.capacity_rps] + [serve_layout(screen, lay).capacity_rps for lay in others]
    return placement_rate_rps(role, screen.sc.spec.simulation.load, caps)


def _warmup_s(scw: LoadedScenario, batch: int, served: Served) -> float:
    """The policy runs' warm-up on one workload (:func:`protocol_warmup_s` with the scenario's settings and the
    exact layout's re-score ``served``)."""
    st = scw.spec.simulation
    return protocol_warmup_s(st.warmup_s, st.warmup_lifetimes, batch, st.load * served.capacity_rps,
                             scw.lengths.mean_decode, served.decode_iteration_s, MAX_SIM_DURATION_S - st.measure_s)


def protocol_workloads(sc: LoadedScenario) -> list[LoadedScenario]:
    """Every ``simulation.models`` x ``simulation.datasets`` workload of ``sc`` (the scenario with that model and
    workload; :func:`chipdse.core.scenario.model_scenarios`, :func:`with_workload`), models outermost.

    Raises
    ------
    SpecError
        A model or dataset that cannot be loaded, naming the scenario field.
    """
    st = sc.spec.simulation
    out = []
    for ref in st.models or [sc.spec.model]:
        scm = model_scenarios(sc, [ref], "simulation.models")[0]
        out += [with_workload(scm, ds) for ds in policy_datasets(sc)]
    return out


def workload_policy_jobs(scw: LoadedScenario, cfg: SolverConfig, skipped: list[str]) -> list[SimJob]:
    """The policy runs of one workload (model and dataset) on its own B* and M_T (HYDRA Sec. VI-B picks them per
    workload under the scenario's estimator settings; the protocol's are static batching).

    The design space is screened and the finalists picked (:func:`chipdse.studies.hydra.stages.screen_and_pick`);
    each role in ``simulation.roles`` is placed exactly (hbm-enum, then the HYDRA greedy when it finds nothing,
    within ``min(work_limit, 5)``) with LPT mapping, by round-robin placement and mapping, by the HYDRA greedy with
    LPT mapping and by one random placement (:func:`random_layout`); the runs are :func:`policy_jobs` at
    ``simulation.load`` x the exact layout's re-scored capacity. When B* is M_T it is run once, as B*. Problems
    (no stable point, no layout) are appended to ``skipped`` and give no runs.
    """
    st = scw.spec.simulation
    name = f"{scw.model.key} {scw.workload.name}"
    try:
        screen, _, picks = screen_and_pick(scw)
    except InfeasibleDesignError as exc:
        skipped.append(f"{name}: {exc}")
        return []
    quick = _quick(cfg)
    jobs: list[SimJob] = []
    for role in st.roles:
        if role == "M_T" and picks.m_t.index == picks.b_star.index and "B*" in st.roles:
            skipped.append(f"{name}: M_T is B* ({picks.b_star.label}): run once, as B*")
            continue
        finalist = picks.b_star if role == "B*" else picks.m_t
        design = finalist.design
        exact = make_layout(scw, design, "hbm-enum", quick) or make_layout(scw, design, "hydra-greedy", quick)
        rr = make_layout(scw, design, "round-robin", cfg, "round-robin", LayoutKind.ROUND_ROBIN)
        if exact is None or rr is None:
            skipped.append(f"{name} {role}: no exact or round-robin layout, no policy runs")
            continue
        lays = {"exact": exact, "round-robin": rr,
                "hydra-greedy": make_layout(scw, design, "hydra-greedy", cfg, kind=LayoutKind.HYDRA_GREEDY),
                "random": random_layout(scw, exact.point, design.capacity_rps, cfg, cfg.seed)}
        served = serve_layout(screen, exact)
        placed = {k: v for k, v in lays.items() if v is not None}
        jobs += policy_jobs(scw, placed, served.capacity_rps,
                            scw.workload.name, load=st.load, warmup_s=_warmup_s(scw, exact.point.batch, served),
                            measure_s=st.measure_s,
                            tags={"role": role, "model": scw.model.key, "label": design.label},
                            placement_rate=_placement_rate(screen, placed, role, served))
    return jobs


def protocol_jobs(sc: LoadedScenario, cfg: SolverConfig, progress: Progress, skipped: list[str]) -> list[SimJob]:
    """:func:`workload_policy_jobs` on every workload of :func:`protocol_workloads` (HYDRA's 12: three Table III
    models x four datasets), each screened and picked in its own scenario."""
    jobs: list[SimJob] = []
    for scw in protocol_workloads(sc):
        progress(f"simulation: B* and M_T of {scw.model.key} on {scw.workload.name}", 0.0)
        jobs += workload_policy_jobs(scw, cfg, skipped)
    return jobs


def run_policy_jobs(jobs: list[SimJob], backend: Backend, min_completed: int, skipped: list[str]) -> pd.DataFrame:
    """Run policy jobs (simulator input errors appended to ``skipped``) and return :func:`policy_rows`' table."""
    results = []
    for res in run_jobs(_run_safe, [_SafeJob(j) for j in jobs], backend):
        if "error" in res:
            skipped.append(res["error"])
        else:
            results.append(res)
    return policy_rows(results, min_completed)


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
