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
from chipdse.evaluators.sim_build import build_sim_config
from chipdse.evaluators.simulator import simulate
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import mapping_problem, placement_problem

FIDELITY_THRESHOLDS = {"cosine": 0.95, "spearman_throughput": 0.9, "max_throughput_recovery": 0.97}
"""Lower bounds of the fidelity check (HYDRA reports cosine 0.9 and 93% recovery)."""
FIDELITY_MAX_ERRORS = {"mape_throughput": 0.15}
"""Upper bounds of the fidelity check: mean absolute percentage error of throughput (issue 15; HYDRA Sec. VI-B
reports 8% and 12% gaps on B* and M_T)."""

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
    placement method finds nothing within its work limit."""

    point = PointSpec.from_row(row, sc.compute_types())
    pl = solve_placement(placement_problem(sc, point, float(row["capacity_rps"])), placement_method, cfg,
                         seed=cfg.seed)
    if pl.decision is None:
        return None
    return map_placement(sc, point, pl.decision, placement_method, cfg, mapping_method)


def map_placement(sc: LoadedScenario, point: PointSpec, placement: dict[int, str], placement_method: str,
                  cfg: SolverConfig, mapping_method: str = "lpt-greedy") -> Layout | None:
    """Map both phases of a placed design (``mapping_method``); None when a phase has no mapping."""

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
                "link_utilization": dict(res.link_utilization), "events": res.n_events, "wall_s": res.wall_s,
                "cross_phase": {"jobs": dict(res.cross_phase_jobs), "busy_s": dict(res.cross_phase_busy_s)}}


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
                  scheduler: str = "static", min_measure_s: float = 40.0, max_s: float = 600.0,
                  ttft_duration_s: float = 100.0, overload: float = 2.0) -> list[SimJob]:
    """Two simulations per row with a layout: saturated (throughput; arrivals at ``overload`` x the estimated
    capacity, window from :func:`saturation_window`) and at the offered load (TTFT), both with ``batching`` and
    the task ``scheduler`` (HYDRA Sec. VI-B's DSE setting: static and static). A run whose design is faster than
    ``overload`` x its estimate is not saturated: :func:`fidelity_table` flags it."""
    jobs = []
    lam = sc.workload.arrival_rate_rps
    for pid, row in rows.iterrows():
        lay = layouts.get(int(pid))
        if lay is None:
            continue
        cap = float(row["capacity_rps"])
        dur, warm = saturation_window(cap, float(row["decode_concurrency"]), min_measure_s, max_s)
        tags = {"point": int(pid), "label": row["label"]}
        jobs.append(SimJob(sc, lay, overload * cap, dur, warm, batching, scheduler,
                           tags={**tags, "run": "saturated"}))
        if bool(row["stable"]):
            jobs.append(SimJob(sc, lay, lam, ttft_duration_s, min(20.0, ttft_duration_s / 5), batching, scheduler,
                               tags={**tags, "run": "offered"}))
    return jobs


def fidelity_table(rows: pd.DataFrame, results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per design point: estimator throughput / TTFT next to the simulator's.

    ``sim_saturated`` is False where the saturated run finished at least 90% of its arrivals: the design kept up
    with the overload, so its simulated throughput is only a lower bound of its capacity."""
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
                    "sim_saturated": bool(s["finished"] < 0.9 * s["arrived"]),
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
    * ``mape_throughput``: mean over the points of |estimated - simulated| / simulated throughput (points with a
      zero simulated throughput left out); ``mape_ttft`` the same over the points with a TTFT on both sides.

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
           "cosine_throughput": cos(et, st), "mape_throughput": _mape(et, st)}
    if len(both):
        tp_scale = both["sim_throughput_tps"].max()
        tt_scale = both["sim_ttft_s"].max()
        e = np.concatenate([both["est_throughput_tps"] / tp_scale, both["est_ttft_s"] / tt_scale])
        s = np.concatenate([both["sim_throughput_tps"] / tp_scale, both["sim_ttft_s"] / tt_scale])
        out["cosine"] = cos(e, s)
        out["cosine_ttft"] = cos(both["est_ttft_s"].to_numpy(), both["sim_ttft_s"].to_numpy())
        out["mape_ttft"] = _mape(both["est_ttft_s"].to_numpy(), both["sim_ttft_s"].to_numpy())
    else:
        out["cosine"] = out["cosine_throughput"]
    return out


def _mape(estimate: np.ndarray, reference: np.ndarray) -> float:
    """Mean of |estimate - reference| / reference over the entries with reference > 0 (NaN when none)."""
    ok = reference > 0
    return float(np.mean(np.abs(estimate[ok] - reference[ok]) / reference[ok])) if ok.any() else math.nan


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


def finalist_layouts(finalist: Any) -> dict[str, Layout]:
    """The finalist's exact and round-robin layouts (as explore solved them)."""
    out = {}
    for served, key in (("exact placement + exact mapping", "exact"),
                        ("round-robin placement + round-robin mapping", "round-robin")):
        s = next((x for x in finalist.serving if x["layout"] == served), None)
        if s is not None and "layout_data" in s:
            out[key] = s["layout_data"]
    return out


def policy_datasets(sc: LoadedScenario) -> list[str]:
    """Workloads of the ablation / scheduler study: ``simulation.datasets``, else the scenario's own (absolute)."""
    return list(sc.spec.simulation.datasets) or [str(sc.workload_path.resolve())]


