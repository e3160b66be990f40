"""Simulator studies of explored designs: estimator fidelity, policy ablation and scheduler comparison.

* **Fidelity** (HYDRA Sec. VI-F, Table V): for a set of design points, the estimator's (throughput, TTFT)
  against the event simulator's on the same placed and mapped design. Simulated throughput is measured at
  saturation (Poisson arrivals at twice the estimator's capacity, after a warm-up that turns over the resident
  requests), which is what the estimator's capacity predicts; simulated TTFT at the scenario's offered load.
* **Ablation** (HYDRA Sec. VI-E): the same design under baseline (round-robin placement, static task
  scheduling, static batching), CP (communication-aware exact placement), CP+ET (+ elastic task scheduling) and
  CP+ET+DB (+ dynamic batching); and the four task schedulers (static, FCFS, work stealing, elastic) with
  exact placement and dynamic batching; on several datasets, at 90% of the design's estimated capacity for each.

Every simulation is one :class:`SimJob` (plain data), so a sweep can hand them to any
:class:`chipdse.studies.parallel.Backend`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from chipdse.core.design_space import PointSpec
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.policies import SCHEDULER_NAMES, batcher_config, scheduler_config
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.problems import mapping_problem, placement_problem

FIDELITY_THRESHOLDS = {"cosine": 0.95, "spearman_throughput": 0.9, "max_throughput_recovery": 0.97}
"""Targets of the fidelity check (HYDRA reports cosine 0.9 and 93% recovery)."""

ABLATION = (
    ("baseline", "round-robin", "static", "static"),
    ("CP", "exact", "static", "static"),
    ("CP+ET", "exact", "elastic", "static"),
    ("CP+ET+DB", "exact", "elastic", "dynamic"),
)
"""(variant, placement, task scheduler, batching) of the ablation (HYDRA Fig. 12)."""

SCHEDULER_VARIANTS = SCHEDULER_NAMES
"""The scheduler comparison runs every registered task scheduler (HYDRA Sec. VI-E)."""


@dataclass(frozen=True)
class Layout:
    """A placed and mapped design point (what the simulator needs besides policies)."""

    point: PointSpec
    placement: dict[int, str]
    prefill_map: dict[str, str]
    decode_map: dict[str, str]
    placement_method: str


def make_layout(sc: LoadedScenario, row: dict[str, Any], placement_method: str, cfg: SolverConfig,
                mapping_method: str = "lpt-greedy") -> Layout | None:
    """Place (``placement_method``) and map (``mapping_method``, both phases) an estimator row; None when the
    placement method finds nothing in its time limit."""
    from chipdse.solvers.placement import solve_placement

    point = PointSpec.from_row(row, sc.compute_types())
    pl = solve_placement(placement_problem(sc, point, float(row["capacity_rps"])), placement_method, cfg,
                         seed=cfg.seed)
    if pl.decision is None:
        return None
    return map_placement(sc, point, pl.decision, placement_method, cfg, mapping_method)


def map_placement(sc: LoadedScenario, point: PointSpec, placement: dict[int, str], placement_method: str,
                  cfg: SolverConfig, mapping_method: str = "lpt-greedy") -> Layout | None:
    """Map both phases of a placed design (``mapping_method``); None when a phase has no mapping."""
    from chipdse.solvers.mapping import solve_mapping

    maps = {}
    for phase in ("prefill", "decode"):
        sol = solve_mapping(mapping_problem(sc, point, placement, phase, point.batch), mapping_method, cfg)
        if sol.decision is None:
            return None
        maps[phase] = sol.decision
    return Layout(point, placement, maps["prefill"], maps["decode"], placement_method)


@dataclass(frozen=True)
class SimJob:
    """One simulation: a layout, its workload (a scenario) and policies; ``run()`` returns a metrics dict."""

    sc: LoadedScenario
    layout: Layout
    rate_rps: float
    duration_s: float
    warmup_s: float
    batching: str = "dynamic"
    scheduler: str = "static"
    tags: dict[str, Any] = field(default_factory=dict)

    def run(self) -> dict[str, Any]:
        """Simulate and return tags + throughput_tps, TTFT mean / p99, E2E mean, utilizations, events."""
        from chipdse.evaluators.sim_build import build_sim_config
        from chipdse.evaluators.simulator import simulate

        lay = self.layout
        cfg = build_sim_config(self.sc, lay.point, lay.placement, lay.prefill_map, lay.decode_map,
                               batcher=batcher_config(self.batching, lay.point.batch),
                               scheduler=scheduler_config(self.scheduler), arrival_rate_rps=self.rate_rps,
                               duration_s=self.duration_s)
        cfg = dataclasses.replace(cfg, warmup_s=self.warmup_s)
        res = simulate(cfg, self.sc.lengths)
        return {**self.tags, "rate_rps": self.rate_rps, "duration_s": self.duration_s,
                "sim_throughput_tps": res.throughput_tps,
                "sim_ttft_s": res.ttft.mean_s, "sim_ttft_p99_s": res.ttft.p99_s, "sim_e2e_s": res.e2e.mean_s,
                "finished": res.finished, "arrived": res.arrived, "preemptions": res.preemptions,
                "chiplet_utilization": dict(res.chiplet_utilization),
                "link_utilization": dict(res.link_utilization), "events": res.n_events, "wall_s": res.wall_s}


def run_job(job: SimJob) -> dict[str, Any]:
    """Module-level entry point for process / Dask back-ends."""
    return job.run()


def saturation_window(capacity_rps: float, concurrency: float, min_measure_s: float, max_s: float
                      ) -> tuple[float, float]:
    """(duration, warm-up) for a saturated run: the warm-up turns the resident requests over 1.5 times
    (concurrency / capacity, Little's law), the measured part is at least ``min_measure_s`` and twice that; the
    whole window is capped at ``max_s``."""
    turnover = concurrency / max(capacity_rps, 1e-9)
    warmup = min(max(10.0, 1.5 * turnover), max_s / 2)
    return min(warmup + max(min_measure_s, 2.0 * turnover), max_s), warmup


def fidelity_jobs(sc: LoadedScenario, rows: pd.DataFrame, layouts: dict[int, Layout], *, batching: str,
                  min_measure_s: float = 40.0, max_s: float = 600.0, ttft_duration_s: float = 100.0
                  ) -> list[SimJob]:
    """Two simulations per row with a layout: saturated (throughput) and at the offered load (TTFT)."""
    jobs = []
    lam = sc.workload.arrival_rate_rps
    for pid, row in rows.iterrows():
        lay = layouts.get(int(pid))
        if lay is None:
            continue
        cap = float(row["capacity_rps"])
        dur, warm = saturation_window(cap, float(row["decode_concurrency"]), min_measure_s, max_s)
        tags = {"point": int(pid), "label": row["label"]}
        jobs.append(SimJob(sc, lay, 2.0 * cap, dur, warm, batching, tags={**tags, "run": "saturated"}))
        if bool(row["stable"]):
            jobs.append(SimJob(sc, lay, lam, ttft_duration_s, min(20.0, ttft_duration_s / 5), batching,
                               tags={**tags, "run": "offered"}))
    return jobs


def fidelity_table(rows: pd.DataFrame, results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per design point: estimator throughput / TTFT next to the simulator's."""
    sat = {r["point"]: r for r in results if r["run"] == "saturated"}
    off = {r["point"]: r for r in results if r["run"] == "offered"}
    out = []
    for pid, row in rows.iterrows():
        if int(pid) not in sat:
            continue
        s = sat[int(pid)]
        o = off.get(int(pid), {})
        out.append({"point": int(pid), "label": row["label"], "est_throughput_tps": float(row["throughput_tps"]),
                    "sim_throughput_tps": float(s["sim_throughput_tps"]), "est_ttft_s": float(row["ttft_s"]),
                    "sim_ttft_s": float(o.get("sim_ttft_s") or math.nan),
                    "sim_wall_s": float(s["wall_s"] + o.get("wall_s", 0.0))})
    return pd.DataFrame(out)


def fidelity_metrics(table: pd.DataFrame) -> dict[str, float]:
    """Cosine similarity, Spearman rank correlation of throughput, and the max-throughput recovery.

    * ``cosine``: cosine similarity of the estimator's and the simulator's (throughput, TTFT) points, each
      metric divided by the simulator's largest value over the points so both weigh alike; over the points with
      a TTFT on both sides (``cosine_throughput`` and ``cosine_ttft`` per metric).
    * ``spearman_throughput``: Spearman's rho of estimated vs simulated throughput over all points.
    * ``max_throughput_recovery``: simulated throughput of the estimator's highest-throughput point divided by
      the highest simulated throughput (HYDRA Table V's "max throughput").

    Raises
    ------
    ValueError
        Fewer than 3 points.
    """
    if len(table) < 3:
        msg = f"fidelity needs at least 3 simulated points, got {len(table)}"
        raise ValueError(msg)
    et, st = table["est_throughput_tps"].to_numpy(), table["sim_throughput_tps"].to_numpy()
    both = table.dropna(subset=["est_ttft_s", "sim_ttft_s"])

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        return float(a @ b) / norm if norm > 0 else math.nan

    constant = np.ptp(et) == 0 or np.ptp(st) == 0  # a rank correlation is undefined
    rho = math.nan if constant else float(spearmanr(et, st).statistic)
    out = {"points": float(len(table)), "spearman_throughput": rho,
           "max_throughput_recovery": float(st[int(np.argmax(et))] / st.max()),
           "cosine_throughput": cos(et, st)}
    if len(both):
        tp_scale = both["sim_throughput_tps"].max()
        tt_scale = both["sim_ttft_s"].max()
        e = np.concatenate([both["est_throughput_tps"] / tp_scale, both["est_ttft_s"] / tt_scale])
        s = np.concatenate([both["sim_throughput_tps"] / tp_scale, both["sim_ttft_s"] / tt_scale])
        out["cosine"] = cos(e, s)
        out["cosine_ttft"] = cos(both["est_ttft_s"].to_numpy(), both["sim_ttft_s"].to_numpy())
    else:
        out["cosine"] = out["cosine_throughput"]
    return out


def policy_jobs(sc: LoadedScenario, layouts: dict[str, Layout], capacity_rps: float, dataset: str, *,
                load: float = 0.9, duration_s: float = 60.0) -> list[SimJob]:
    """The ablation variants and the scheduler comparison on one dataset (``sc``'s workload) at ``load`` x
    the design's estimated capacity. ``layouts`` maps ``"exact"`` and ``"round-robin"`` to layouts.

    Every variant gets the same window, measured from an empty system (no warm-up), so throughputs compare
    like with like; the scheduler study's elastic run is the ablation's CP+ET+DB run (not simulated twice).
    """
    rate = load * capacity_rps
    jobs = []
    for variant, placement, sched, batching in ABLATION:
        jobs.append(SimJob(sc, layouts[placement], rate, duration_s, 0.0, batching, sched,
                           tags={"study": "ablation", "variant": variant, "dataset": dataset,
                                 "placement": placement, "scheduler": sched, "batching": batching}))
    for sched in SCHEDULER_VARIANTS:
        if sched == "elastic":
            continue  # = CP+ET+DB; policy_rows copies it into the scheduler study
        jobs.append(SimJob(sc, layouts["exact"], rate, duration_s, 0.0, "dynamic", sched,
                           tags={"study": "scheduler", "variant": sched, "dataset": dataset,
                                 "placement": "exact", "scheduler": sched, "batching": "dynamic"}))
    return jobs


@dataclass
class SimulationStudy:
    """What explore's simulation stage measured (read by the report)."""

    fidelity: pd.DataFrame
    metrics: dict[str, float]
    policies: pd.DataFrame
    utilization: dict[str, dict[str, Any]]
    skipped: list[str]
    wall_s: float
    layouts: pd.DataFrame = field(default_factory=pd.DataFrame)


def _finalist_layouts(finalist: Any) -> dict[str, Layout]:
    """The finalist's exact and round-robin layouts (as explore solved them)."""
    out = {}
    for served, key in (("exact placement + exact mapping", "exact"),
                        ("round-robin placement + round-robin mapping", "round-robin")):
        s = next((x for x in finalist.serving if x["layout"] == served), None)
        if s is not None and "layout_data" in s:
            out[key] = s["layout_data"]
    return out


def explore_simulations(sc: LoadedScenario, df: pd.DataFrame, finalists: list[Any], cfg: SolverConfig,
                        serve: Any, screen_of: Any, progress: Any) -> SimulationStudy:
    """Explore's simulation stage: fidelity on Pareto candidates, ablation and schedulers on B* per dataset.

    ``serve(screen, sc, point, placement, prefill_map, decode_map)`` re-scores a layout (``explore.serve_layout``)
    and ``screen_of(sc)`` builds an estimator for a scenario; both are passed in to keep this module free of
    explore's imports.
    """
    import time

    from chipdse.core.scenario import with_workload
    from chipdse.studies.parallel import Backend, run_jobs

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
    by_label = {f.row["label"]: _finalist_layouts(f).get("exact") for f in finalists}
    for pid, row in rows.iterrows():
        lay = by_label.get(row["label"])
        if lay is None:
            progress(f"simulation: placing Pareto point {row['label']}", 0.0)
            quick = SolverConfig(time_limit_s=min(cfg.time_limit_s, 5.0), seed=cfg.seed)
            lay = make_layout(sc, row.to_dict(), "hbm-enum", quick) or make_layout(sc, row.to_dict(),
                                                                                  "hydra-greedy", quick)
        if lay is None:
            skipped.append(f"{row['label']}: no placement found")
            continue
        layouts[int(pid)] = lay
    jobs = fidelity_jobs(sc, rows, layouts, batching=sc.spec.estimator.batching, max_s=st.max_duration_s)
    # ablation and schedulers on B* for every dataset
    b_star = finalists[0]
    lay_b = _finalist_layouts(b_star)
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
                from chipdse.studies.layout_study import layout_candidates, layout_jobs

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
    from chipdse.studies.layout_study import layout_table

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


def policy_datasets(sc: LoadedScenario) -> list[str]:
    """Workloads of the ablation / scheduler study: ``simulation.datasets``, else the scenario's own (absolute)."""
    return list(sc.spec.simulation.datasets) or [str(sc.workload_path.resolve())]


@dataclass(frozen=True)
class _SafeJob:
    job: SimJob


def _run_safe(safe: _SafeJob) -> dict[str, Any]:
    """Run a job; a simulator input error (e.g. a request larger than memory) becomes an ``error`` entry."""
    from chipdse.evaluators.sim_kernel import SimulationError

    try:
        return safe.job.run()
    except SimulationError as exc:
        tags = safe.job.tags
        return {"error": f"{tags.get('dataset', tags.get('label'))} {tags.get('variant', tags.get('run'))}: {exc}"}
