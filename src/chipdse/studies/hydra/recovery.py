"""Max-throughput recovery against exhaustive simulation (HYDRA Sec. VI-F, Table V), with the roofline baseline.

HYDRA simulates every feasible configuration and reports that the estimator's best configuration reaches 93% of
the maximum throughput found that way (the roofline DSE's: 74%), and that the estimator's Pareto set "closely
tracks the exhaustive Pareto frontier". Exhaustive simulation of the whole Table III space is days of CPU, so this
study simulates EVERY point of a sub-space (one HBM count, one D2D bandwidth, one max batch: every chiplet
composition) and compares, on that sub-space:

* the estimator's pick (highest estimated throughput) and the roofline's pick (:mod:`evaluators.roofline`), each
  by its simulated throughput over the highest simulated throughput of the sub-space (the recovery);
* each method's Pareto front (throughput vs TTFT) against the exhaustive simulated front: how many exhaustive-Pareto
  points it contains, and the best simulated throughput / TTFT on it over the best on the exhaustive front.

Every point is placed with a heuristic (``hydra-greedy`` by default: fast and deterministic), mapped with the LPT
greedy, and simulated twice: saturated (arrivals at twice the larger of the two methods' capacity estimates) for
throughput, and at the scenario's offered load for TTFT. The estimator is called only through
the screen stage (:func:`chipdse.studies.hydra.stages.screen_points`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.design_space import DesignPoints, ScoredDesign, enumerate_points, subset_points
from chipdse.core.errors import SpecError
from chipdse.core.layout import Layout
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.roofline import roofline_scores
from chipdse.evaluators.selection import pareto_mask
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.runtime.parallel import Backend, run_jobs
from chipdse.runtime.parallel import Progress as JobProgress
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.simstudy import SimJob, make_layout, saturation_window
from chipdse.studies.hydra.stages import estimator, screen_points

METHODS = ("est", "roof")
"""Column prefixes of the two scoring methods: the estimator and the roofline baseline."""


def subspace(sc: LoadedScenario, n_hbm: int, d2d_GBps: float, max_batch: int) -> DesignPoints:  # noqa: N803
    """Every buildable composition of the scenario's space at one HBM count, D2D bandwidth and max batch.

    Raises
    ------
    SpecError
        When no point of the space has that HBM count, bandwidth and max batch (the message lists the options).
    """
    pts, _ = enumerate_points(sc)
    sel = np.flatnonzero((pts.n_hbm == n_hbm) & np.isclose(pts.d2d_GBps, d2d_GBps) & (pts.max_batch == max_batch))
    if len(sel) == 0:
        ds = sc.spec.design_space
        msg = (f"HBM {n_hbm}, {d2d_GBps:g} GB/s, max batch {max_batch}: no buildable point (HBM "
               f"{sorted(set(pts.n_hbm.tolist()))}, D2D {list(ds.d2d_GBps)}, max batch {list(ds.max_batch)})")
        raise SpecError(str(sc.path), "design_space", msg)
    return subset_points(pts, sel)


def front_stats(table: pd.DataFrame, prefix: str) -> dict[str, float]:
    """One method's pick and Pareto front measured by simulation (see :func:`recovery_metrics`)."""
    sim_tp, sim_tt = table["sim_throughput_tps"].to_numpy(float), table["sim_ttft_s"].to_numpy(float)
    tp, tt = table[f"{prefix}_throughput_tps"].to_numpy(float), table[f"{prefix}_ttft_s"].to_numpy(float)
    best = float(np.nanmax(sim_tp))
    # the highest throughput; among exact ties the lowest TTFT (the point of the method's own Pareto front)
    tied = np.flatnonzero(tp == np.nanmax(tp))
    pick = int(tied[np.argmin(np.where(np.isfinite(tt[tied]), tt[tied], np.inf))])
    exhaustive = pareto_mask(sim_tp, sim_tt)
    front = pareto_mask(tp, tt)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = sim_tp / sim_tt
    best_ratio = float(np.nanmax(np.where(exhaustive, ratio, np.nan))) if exhaustive.any() else np.nan
    on_front = np.where(front, ratio, np.nan)
    front_ratio = float(np.nanmax(on_front)) if np.isfinite(on_front).any() else np.nan
    return {f"{prefix}_pick": float(pick), f"{prefix}_recovery": float(sim_tp[pick]) / best,
            f"{prefix}_front_points": float(front.sum()), f"{prefix}_front_hits": float((front & exhaustive).sum()),
            f"{prefix}_front_best_tp_recovery": float(np.nanmax(np.where(front, sim_tp, np.nan))) / best
            if front.any() else np.nan,
            f"{prefix}_front_tp_per_ttft_recovery": front_ratio / best_ratio}


def recovery_metrics(table: pd.DataFrame) -> dict[str, float]:
    """Recovery of the maximum simulated throughput, and Pareto-front agreement, for the estimator and the roofline.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per simulated point: ``sim_throughput_tps`` (tok/s), ``sim_ttft_s`` (s, NaN where the simulated
        design cannot sustain the offered load) and, per method prefix ``est`` and ``roof``,
        ``<prefix>_throughput_tps`` and ``<prefix>_ttft_s`` (NaN where the method calls the point unstable).

    Returns
    -------
    dict
        ``points``; ``best_sim_throughput_tps``; ``exhaustive_front_points`` (points on the simulated Pareto
        front); per method: ``<p>_pick`` (row position of its highest-throughput point; on exact ties the one with
        the lowest estimated TTFT, then the first),
        ``<p>_recovery`` (that point's simulated throughput over the best simulated), ``<p>_front_points``,
        ``<p>_front_hits`` (exhaustive-Pareto points on its front), ``<p>_front_best_tp_recovery`` (best simulated
        throughput on its front over the best simulated) and ``<p>_front_tp_per_ttft_recovery`` (best simulated
        throughput / TTFT on its front over the best on the exhaustive front).

    Raises
    ------
    ValueError
        An empty table, or no positive simulated throughput.

    References
    ----------
    HYDRA Sec. VI-F, Table V ("Max Throughput": exhaustive 100%, roofline 74%, HYDRA 93%).
    """
    if table.empty or not (table["sim_throughput_tps"] > 0).any():
        msg = f"recovery needs simulated points with a positive throughput, got {len(table)} rows"
        raise ValueError(msg)
    sim_tp, sim_tt = table["sim_throughput_tps"].to_numpy(float), table["sim_ttft_s"].to_numpy(float)
    out = {"points": float(len(table)), "best_sim_throughput_tps": float(np.nanmax(sim_tp)),
           "exhaustive_front_points": float(pareto_mask(sim_tp, sim_tt).sum())}
    for p in METHODS:
        out |= front_stats(table, p)
    return out


@dataclass
class RecoveryResult:
    """What the recovery study measured.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per point of the sub-space: ``label``, the estimator's and the roofline's throughput (tok/s) and
        TTFT (s), the simulated ones, ``finished`` requests of the saturated run.
    metrics : dict
        :func:`recovery_metrics` of the simulated rows.
    subspace : dict
        ``n_hbm``, ``d2d_GBps``, ``max_batch``, ``placement`` and ``offered_rps``.
    skipped : list[str]
        Points not simulated, with the reason.
    wall_s : float
    """

    table: pd.DataFrame
    metrics: dict[str, float]
    subspace: dict[str, Any]
    skipped: list[str]
    wall_s: float


def run_safe(job: SimJob) -> dict[str, Any]:
    """Run one job (module level, for process back-ends); a simulator input error becomes an ``error`` entry."""
    try:
        return job.run()
    except SimulationError as exc:
        return {**job.tags, "error": str(exc)}


def recovery(sc: LoadedScenario, n_hbm: int, d2d_GBps: float, max_batch: int, *,  # noqa: N803
             backend: Backend | None = None, placement: str = "hydra-greedy", min_measure_s: float = 30.0,
             max_s: float = 900.0, ttft_duration_s: float = 60.0, progress: JobProgress | None = None
             ) -> RecoveryResult:
    """Simulate every point of one sub-space and measure the estimator's and the roofline's recovery.

    Parameters
    ----------
    sc : LoadedScenario
        Model, workload (its offered load: the TTFT runs), library and package; the estimator's batching.
    n_hbm, d2d_GBps, max_batch : int, float, int
        The sub-space (:func:`subspace`): stacks, GB/s, requests.
    backend : Backend, optional
        Where the simulations run (default in-process).
    placement : str
        Placement method of every point (a heuristic keeps it fast).
    min_measure_s, max_s : float
        Saturated runs: at least this much measured simulated time; at most this much in all, s
        (:func:`chipdse.studies.hydra.simstudy.saturation_window` at the estimator's capacity). A static batch of 16
        decodes for minutes on this space, and a window shorter than a few batch lifetimes measures the first
        batches, all started together with every request still decoding (150 s, the default before: up to 1.8x
        the steady throughput).
    ttft_duration_s : float
        Simulated time of each run at the offered load (the first fifth is warm-up), s.
    progress : callable(done, total), optional

    Returns
    -------
    RecoveryResult

    Raises
    ------
    SpecError
        No point in the sub-space.
    ValueError
        No point could be simulated (from :func:`recovery_metrics`).
    """
    t0 = time.perf_counter()
    pts = subspace(sc, n_hbm, d2d_GBps, max_batch)
    est = screen_points(estimator(sc), pts)
    roof = roofline_scores(sc, pts)
    cfg = SolverConfig(work_limit=1.0, time_limit_s=10.0, seed=sc.spec.seed)
    lam = sc.workload.arrival_rate_rps
    batching = str(getattr(sc.spec.estimator.batching, "value", sc.spec.estimator.batching))
    scheduling = getattr(sc.spec.estimator, "scheduling", "static")  # the estimator's task scheduling, if it has one
    scheduler = str(getattr(scheduling, "value", scheduling))
    jobs, skipped = [], []
    for i, row in est.iterrows():
        rd = row.to_dict()
        if not rd["feasible"] or rd["capacity_rps"] <= 0:
            skipped.append(f"{rd['label']}: the estimator finds it infeasible")
            continue
        lay: Layout | None = make_layout(sc, ScoredDesign.from_row(rd, sc.compute_types()), placement, cfg)
        if lay is None:
            skipped.append(f"{rd['label']}: {placement} found no placement")
            continue
        cap = max(float(rd["capacity_rps"]), float(roof.loc[i, "capacity_rps"]))
        # the window turns the resident requests over at the estimator's capacity, not the roofline's (several
        # times higher: its windows ended inside the first static batches, whose early iterations carry every
        # request, and overrated those designs up to 1.8x)
        dur, warm = saturation_window(float(rd["capacity_rps"]), float(rd["decode_concurrency"]), min_measure_s,
                                      max_s)
        tags = {"row": int(i), "label": rd["label"]}
        jobs.append(SimJob(sc=sc, layout=lay, rate_rps=2.0 * cap, duration_s=dur, warmup_s=warm, batching=batching,
                           scheduler=scheduler, tags={**tags, "run": "saturated"}))
        jobs.append(SimJob(sc=sc, layout=lay, rate_rps=lam, duration_s=ttft_duration_s,
                           warmup_s=ttft_duration_s / 5, batching=batching, scheduler=scheduler,
                           tags={**tags, "run": "offered"}))
    results = run_jobs(run_safe, jobs, backend or Backend.in_process(), progress=progress)
    sat = {r["row"]: r for r in results if r["run"] == "saturated" and "error" not in r}
    off = {r["row"]: r for r in results if r["run"] == "offered" and "error" not in r}
    skipped += [f"{r['label']} {r['run']}: {r['error']}" for r in results if "error" in r]
    rows = []
    for i in sorted(sat):
        s, o = sat[i], off.get(i, {})
        sim_tp = float(s["sim_throughput_tps"])
        keeps_up = sim_tp / sc.lengths.mean_decode > lam and o.get("sim_ttft_s") is not None
        rows.append({"row": i, "label": est.loc[i, "label"],
                     "est_throughput_tps": float(est.loc[i, "throughput_tps"]),
                     "est_ttft_s": float(est.loc[i, "ttft_s"]),
                     "roof_throughput_tps": float(roof.loc[i, "throughput_tps"]),
                     "roof_ttft_s": float(roof.loc[i, "ttft_s"]),
                     "sim_throughput_tps": sim_tp,
                     "sim_ttft_s": float(o["sim_ttft_s"]) if keeps_up else np.nan,
                     "finished": int(s["finished"])})
    table = pd.DataFrame(rows)
    metrics = recovery_metrics(table)
    info = {"n_hbm": n_hbm, "d2d_GBps": d2d_GBps, "max_batch": max_batch, "placement": placement,
            "offered_rps": lam, "batching": batching, "scheduler": scheduler}
    return RecoveryResult(table, metrics, info, skipped, time.perf_counter() - t0)
