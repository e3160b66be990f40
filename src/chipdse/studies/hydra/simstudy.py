"""Simulator studies of explored designs: estimator fidelity, policy ablation and scheduler comparison.

* **Fidelity** (HYDRA Sec. VI-F, Table V): for a set of design points, the estimator's (throughput, TTFT)
  against the event simulator's on the same placed and mapped design. Simulated throughput is measured at
  saturation (Poisson arrivals at twice the estimator's capacity, after a warm-up that turns over the resident
  requests), which is what the estimator's capacity predicts; simulated TTFT at the scenario's offered load.
* **Ablation** (HYDRA Sec. VI-E, Fig. 9): the same design under baseline (round-robin placement, static task
  scheduling, static batching), CP (communication-aware exact placement), CP+ET (+ elastic task scheduling) and
  CP+ET+DB (+ dynamic batching); the four task schedulers (Fig. 12: static, FCFS, work stealing, elastic; FCFS and
  work stealing also with elastic's cross-phase access, so elastic is compared like for like) and the
  placements (Fig. 10: round-robin, random, HYDRA greedy, exact), both with static batching as in Sec. VI-B; on
  B* and M_T and several datasets, each at ``load`` x the design's estimated capacity on that dataset, except the
  placement study (:func:`placement_rate_rps`): on B* every layout at ``load`` x the weakest compared layout's
  estimated capacity (a load every layout sustains, so TP/TTFT compares latency at equal traffic), on M_T every
  layout saturated (throughput = its capacity). Every run
  is measured after its warm-up for at least ``measure_s`` (HYDRA simulates 100 s per configuration, Sec. VI-A)
  and then until ``min_completed`` requests that arrived after the warm-up have finished, at most
  ``max_measure_s`` (issue 30: no workload's figures rest on 0-2 finished requests). A run is *invalid* when it
  completed no request or its study's reference run (baseline, static, round-robin) completed fewer than
  ``min_completed`` by the cap; invalid runs are shown, counted and left out of averages. Throughput stays output
  tokens / measured window.

Every simulation is one :class:`SimJob` (plain data), so a sweep can hand them to any
:class:`chipdse.runtime.parallel.Backend`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import spearmanr

from chipdse.core.design_space import PointSpec, ScoredDesign
from chipdse.core.layout import Layout, LayoutKind
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.policies import batcher_config, scheduler_config
from chipdse.evaluators.sim_build import build_sim_config
from chipdse.evaluators.sim_policies import StaticBatcherConfig
from chipdse.evaluators.simulator import simulate
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.placement_heuristics import PlacementHeuristicError, random_placement
from chipdse.solvers.problems import mapping_problem, placement_problem
from chipdse.studies.hydra.artifacts import (
    ABLATION,
    EXTRA_PAIRS,
    PLACEMENT_VARIANTS,
    REFERENCE,
    SCHEDULER_STUDY,
    STUDY_VARIANTS,
    WORKLOAD_KEYS,
    SimulationStudy,
    pair_key,
)

SCHEDULER_BATCHING = "static"
"""Batching of the scheduler study: HYDRA Sec. VI-E runs it on "the same hardware configurations as in Section
VI-B" with only the task scheduler changed, and Sec. VI-B uses static batching; so its static run is the ablation's
CP run and its elastic run is CP+ET (neither simulated twice)."""

PLACEMENT_OVERLOAD = 2.0
"""The M_T placement runs are offered this many times the strongest compared layout's estimated capacity, so every
layout runs saturated and its throughput is its own capacity (HYDRA Fig. 10(b) compares M_T's throughput)."""

_FROM_ABLATION = {("scheduler", "static"): "CP", ("scheduler", "elastic"): "CP+ET",
                  ("placement", "round-robin"): "baseline", ("placement", "exact"): "CP",
                  ("placement", "hydra-greedy"): "greedy CP"}
"""(study, variant) rows copied from the ablation's runs, which simulate the same configuration."""


def make_layout(sc: LoadedScenario, design: ScoredDesign, placement_method: str, cfg: SolverConfig,
                mapping_method: str = "lpt-greedy", kind: LayoutKind = LayoutKind.EXACT) -> Layout | None:
    """Place (``placement_method``) and map (``mapping_method``, both phases) a scored design; None when the
    placement method finds nothing within its work limit."""
    pl = solve_placement(placement_problem(sc, design.point, design.capacity_rps), placement_method, cfg,
                         seed=cfg.seed)
    if pl.decision is None:
        return None
    return map_placement(sc, design.point, pl.decision, placement_method, cfg, mapping_method, kind)


def map_placement(sc: LoadedScenario, point: PointSpec, placement: dict[int, str], placement_method: str,
                  cfg: SolverConfig, mapping_method: str = "lpt-greedy", kind: LayoutKind = LayoutKind.EXACT
                  ) -> Layout | None:
    """Map both phases of a placed design (``mapping_method``); None when a phase has no mapping."""
    maps = {}
    for phase in ("prefill", "decode"):
        sol = solve_mapping(mapping_problem(sc, point, placement, phase, point.batch), mapping_method, cfg)
        if sol.decision is None:
            return None
        maps[phase] = sol.decision
    return Layout(point, placement, maps["prefill"], maps["decode"], placement_method, kind)


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
    scheduler_options: tuple[tuple[str, Any], ...] = ()
    """(field, value) pairs replaced in the scheduler's default config, e.g. ``(("imbalance_threshold", 2.0),)``."""
    static_batch_timeout_s: float = math.inf
    """Static batching's batch-formation timeout, s (``math.inf``: full batches only, the estimator's static model,
    kept by the fidelity, recovery and Table IV runs); :func:`policy_jobs` sets the scenario's
    ``simulation.static_batch_timeout_s``."""
    min_completed: int = 0
    """0: the run lasts ``duration_s``. n >= 1: it lasts at least ``duration_s`` and then until n requests that
    arrived after the warm-up have finished, at most ``cap_s`` (``SimConfig.stop_after_finished``; issue 30)."""
    cap_s: float = 0.0
    """Longest window when ``min_completed`` is set, s (below ``duration_s``: ``duration_s``)."""

    def run(self) -> dict[str, Any]:
        """Simulate and return tags + throughput_tps, TTFT mean / p99, E2E mean, utilizations, events,
        ``first_tokens`` (requests whose first token came inside the measured window [warm-up, duration]),
        ``completed`` (requests that arrived after the warm-up and finished), ``stop`` (the limit that ended the
        run: window / completed / cap) and ``duration_s`` (the window simulated). Static batching gets
        ``static_batch_timeout_s``."""

        lay = self.layout
        batcher = batcher_config(self.batching, lay.point.batch)
        if isinstance(batcher, StaticBatcherConfig):
            batcher = dataclasses.replace(batcher, timeout_s=self.static_batch_timeout_s)
        cfg = build_sim_config(self.sc, lay.point, lay.placement, lay.prefill_map, lay.decode_map,
                               batcher=batcher,
                               scheduler=dataclasses.replace(scheduler_config(self.scheduler),
                                                             **dict(self.scheduler_options)),
                               arrival_rate_rps=self.rate_rps,
                               duration_s=max(self.duration_s, self.cap_s) if self.min_completed else self.duration_s)
        cfg = dataclasses.replace(cfg, warmup_s=self.warmup_s, stop_after_finished=self.min_completed,
                                  min_duration_s=self.duration_s if self.min_completed else 0.0)
        res = simulate(cfg, self.sc.lengths)
        return {**self.tags, "rate_rps": self.rate_rps, "duration_s": res.duration_s, "warmup_s": self.warmup_s,
                "completed": res.finished_measured, "stop": res.stop,
                "sim_throughput_tps": res.throughput_tps,
                "empty": bool(getattr(res, "empty", res.finished == 0)),
                "sim_ttft_s": res.ttft.mean_s, "sim_ttft_p99_s": res.ttft.p99_s, "sim_e2e_s": res.e2e.mean_s,
                "finished": res.finished, "arrived": res.arrived, "preemptions": res.preemptions,
                "first_tokens": first_tokens_in_window(res.requests, self.warmup_s, res.duration_s),
                "chiplet_utilization": dict(res.chiplet_utilization),
                "link_utilization": dict(res.link_utilization), "events": res.n_events, "wall_s": res.wall_s,
                "cross_phase": {"jobs": dict(res.cross_phase_jobs), "busy_s": dict(res.cross_phase_busy_s)}}


def first_tokens_in_window(requests: pd.DataFrame, warmup_s: float, duration_s: float) -> int:
    """Requests whose first token came inside the measured window ``[warmup_s, duration_s]`` (s).

    ``requests`` is :attr:`SimResult.requests` (column ``first_token_s``, NaN before the first token). The count the
    policy studies' validity rule uses (:func:`mark_validity`): unlike finished requests it also counts requests
    that outlive the window (BWB, LongWriter: 270-1000 s each)."""
    first = requests["first_token_s"].to_numpy(dtype=float)
    return int(((first >= warmup_s) & (first <= duration_s)).sum())


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
    * ``cosine_constant``: the cosine a constant predictor scores on the same points (every point estimated at
      the simulated mean of each metric): the floor ``cosine`` must be read against (issue 30: a constant
      estimate scores about 0.92 where the estimator scores 0.93).

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
        flat = np.concatenate([np.full(len(both), both["sim_throughput_tps"].mean() / tp_scale),
                               np.full(len(both), both["sim_ttft_s"].mean() / tt_scale)])
        out["cosine_constant"] = cos(flat, s)
        out["cosine_ttft"] = cos(both["est_ttft_s"].to_numpy(), both["sim_ttft_s"].to_numpy())
        out["mape_ttft"] = _mape(both["est_ttft_s"].to_numpy(), both["sim_ttft_s"].to_numpy())
    else:
        out["cosine"] = out["cosine_throughput"]
        out["cosine_constant"] = cos(np.full(len(st), st.mean()), st)
    return out


def _mape(estimate: np.ndarray, reference: np.ndarray) -> float:
    """Mean of |estimate - reference| / reference over the entries with reference > 0 (NaN when none)."""
    ok = reference > 0
    return float(np.mean(np.abs(estimate[ok] - reference[ok]) / reference[ok])) if ok.any() else math.nan


def placement_rate_rps(role: str, load: float, capacities_rps: list[float]) -> float:
    """Offered rate of one design's placement study, req/s: ``load`` x the weakest layout's estimated capacity for
    B* (TP/TTFT at a load every compared layout sustains), :data:`PLACEMENT_OVERLOAD` x the strongest's for M_T
    (each layout saturated: its throughput is its capacity). ``capacities_rps``: the compared layouts' estimated
    capacities, req/s (non-positive ones are ignored).

    Raises
    ------
    ValueError
        No positive capacity.
    """
    caps = [c for c in capacities_rps if c > 0]
    if not caps:
        msg = f"placement_rate_rps needs a positive layout capacity, got {capacities_rps!r}"
        raise ValueError(msg)
    return PLACEMENT_OVERLOAD * max(caps) if role == "M_T" else load * min(caps)


def policy_jobs(sc: LoadedScenario, layouts: dict[str, Layout], capacity_rps: float, dataset: str, *,
                load: float = 0.9, warmup_s: float = 0.0, measure_s: float = 60.0,
                tags: dict[str, Any] | None = None, placement_rate: float | None = None) -> list[SimJob]:
    """The ablation, scheduler and placement runs of one design on one dataset (``sc``'s workload).

    Parameters
    ----------
    sc : LoadedScenario
        The scenario with the dataset's workload (:func:`chipdse.core.scenario.with_workload`).
    layouts : dict of str to Layout
        ``"exact"`` and ``"round-robin"`` (required), ``"random"`` and ``"hydra-greedy"`` (their placement runs
        are left out when missing).
    capacity_rps : float
        The design's estimated capacity on this dataset, req/s; every run is offered ``load`` x it (Poisson).
    dataset : str
        Name written into each run's tags.
    load : float
        Offered load as a fraction of ``capacity_rps``.
    warmup_s, measure_s : float
        Warm-up and shortest measured window of every run, s: each run lasts at least ``warmup_s + measure_s`` and
        then until ``sc``'s ``simulation.min_completed`` requests that arrived after the warm-up have finished, at
        most ``warmup_s + simulation.max_measure_s`` (HYDRA Sec. VI-A; issue 30). Static batching forms batches
        with ``sc``'s ``simulation.static_batch_timeout_s``.
    tags : dict, optional
        Extra tags of every run (e.g. ``{"role": "B*", "model": ...}``).
    placement_rate : float, optional
        Offered rate of every placement run, req/s (:func:`placement_rate_rps`); None: ``load`` x
        ``capacity_rps`` like the other studies, sharing the ablation's round-robin and exact runs.

    Returns
    -------
    list of SimJob
        5 ablation runs (greedy CP only with a ``"hydra-greedy"`` layout), the scheduler runs not in the ablation
        (FCFS and work stealing, each without and with cross-phase access:
        :data:`~chipdse.studies.hydra.artifacts.SCHEDULER_STUDY`) and the placement runs (not those in the ablation
        when ``placement_rate`` is None or equals the ablation's rate); :func:`policy_rows` copies the shared runs
        into every study.
    """
    rate, dur = load * capacity_rps, warmup_s + measure_s
    extra = {"dataset": dataset, "load": load, **(tags or {})}
    own_rate = placement_rate is not None and placement_rate != rate
    sim = sc.spec.simulation if sc is not None else None
    timeout_s = sim.static_batch_timeout_s if sim is not None else math.inf
    n_done = sim.min_completed if sim is not None else 0
    cap = warmup_s + max(measure_s, sim.max_measure_s) if sim is not None else dur

    def job(study: str, variant: str, placement: str, sched: str, batching: str, at: float = rate,
            options: tuple[tuple[str, Any], ...] = ()) -> SimJob:
        return SimJob(sc, layouts[placement], at, dur, warmup_s, batching, sched,
                      tags={"study": study, "variant": variant, "placement": placement, "scheduler": sched,
                            "batching": batching, **extra}, scheduler_options=options,
                      static_batch_timeout_s=timeout_s, min_completed=n_done, cap_s=cap)

    jobs = [job("ablation", v, p, sched, b) for v, p, sched, b in ABLATION if p in layouts]
    jobs += [job("scheduler", v, "exact", s_, SCHEDULER_BATCHING, options=opts) for v, s_, opts in SCHEDULER_STUDY
             if ("scheduler", v) not in _FROM_ABLATION]
    placement_at = placement_rate if own_rate and placement_rate is not None else rate
    jobs += [job("placement", p, p, "static", "static", placement_at)
             for p in PLACEMENT_VARIANTS if (own_rate or ("placement", p) not in _FROM_ABLATION) and p in layouts]
    return jobs


def policy_datasets(sc: LoadedScenario) -> list[str]:
    """Workloads of the ablation / scheduler study: ``simulation.datasets``, else the scenario's own (absolute)."""
    return list(sc.spec.simulation.datasets) or [str(sc.workload_path.resolve())]




def protocol_warmup_s(warmup_s: float, lifetimes: float, batch: int, rate_rps: float, mean_output_tokens: float,
                      decode_iteration_s: float, cap_s: float) -> float:
    """Warm-up of a workload's policy runs, s: ``max(warmup_s, lifetimes x (batch / rate_rps + mean_output_tokens x
    decode_iteration_s))``, the second term one static batch's fill (``batch`` requests at ``rate_rps`` req/s) and
    decode (tokens x s per iteration, the estimator's), capped at ``cap_s``."""
    life = batch / max(rate_rps, 1e-12) + mean_output_tokens * decode_iteration_s
    return float(min(max(warmup_s, lifetimes * life), cap_s))


def random_layout(sc: LoadedScenario, point: PointSpec, capacity_rps: float, cfg: SolverConfig,
                  seed: int) -> Layout | None:
    """HYDRA Fig. 10's random baseline: one uniformly random placement (memory on the ring, compute on random free
    cells; :func:`chipdse.solvers.placement_heuristics.random_placement`, not the best of several samples) and
    round-robin mapping (weights spread without regard to locality). None when the sample gets stuck or a phase
    has no mapping.

    ``capacity_rps`` (req/s) sets the traffic volumes of the placement problem; ``seed`` the sample.
    """
    problem = placement_problem(sc, point, capacity_rps)
    try:
        decision = random_placement(problem, np.random.default_rng(seed))
    except PlacementHeuristicError:
        return None
    return map_placement(sc, point, decision, "random", cfg, "round-robin", LayoutKind.RANDOM)


def policy_rows(results: list[dict[str, Any]], min_completed: int) -> pd.DataFrame:
    """The policy table: one row per (workload, design, study, variant), validity marked.

    Parameters
    ----------
    results : list of dict
        :meth:`SimJob.run` outputs of :func:`policy_jobs` runs (others are ignored); nested dicts (utilizations)
        are dropped.
    min_completed : int
        Fewest requests that arrived after the warm-up that the study's reference run (:data:`REFERENCE`) must
        have finished in its window for its rows to count (``simulation.min_completed``).

    Returns
    -------
    pandas.DataFrame
        The runs' tags and metrics, the shared runs copied into each study (:data:`_FROM_ABLATION`; not where the
        study ran that variant itself, e.g. the placement study at its own load), and ``ref_completed`` (the
        reference run's completed requests; NaN when it is missing), ``valid`` (bool) and ``invalid_reason`` (""
        when valid). A row is invalid when it completed no request or its reference run fewer than
        ``min_completed``.
    """
    flat = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in results
            if r.get("study") in ("ablation", "scheduler", "placement")]
    own = {(r["study"], r["variant"], *(r.get(k) for k in WORKLOAD_KEYS)) for r in flat}
    for r in list(flat):
        if r["study"] == "ablation":
            flat += [{**r, "study": st, "variant": var} for (st, var), src in _FROM_ABLATION.items()
                     if src == r["variant"] and (st, var, *(r.get(k) for k in WORKLOAD_KEYS)) not in own]
    return mark_validity(pd.DataFrame(flat), min_completed)


ANOTHER_RUN = "another run of this workload is invalid"
"""The start of the reason of a run that is itself fine but belongs to an invalid workload (:func:`mark_validity`)."""


def mark_validity(table: pd.DataFrame, min_completed: int) -> pd.DataFrame:
    """Mark which runs of a policy table count: the one validity rule of a simulated workload.

    A run is *short* when its study's reference run (:data:`~chipdse.studies.hydra.artifacts.REFERENCE`) on the
    same workload completed fewer than ``min_completed`` requests that arrived after its warm-up (it reached
    ``simulation.max_measure_s`` first: every policy run is measured until that many have finished), and *empty*
    when it completed none itself. A workload (its :data:`~chipdse.studies.hydra.artifacts.WORKLOAD_KEYS`: model,
    dataset, design role) counts only when none of its runs, in any study, is short or empty: then every average
    (the policy pages, the claims, the manifest) is over the same workloads, and a study never averages a workload
    another study of the same run leaves out.

    Parameters
    ----------
    table : pandas.DataFrame
        ``study``, ``variant``, ``completed`` (requests that arrived after the run's warm-up and finished in its
        window) and optionally the workload columns.
    min_completed : int

    Returns
    -------
    pandas.DataFrame
        A copy with ``ref_completed`` (the reference run's completed requests; NaN when missing), ``valid`` (the
        workload counts) and ``invalid_reason`` ("" when valid: the run's own reason first, else the workload's).
    """
    t = table.copy()
    if t.empty:
        return t.assign(ref_completed=[], valid=[], invalid_reason=[])
    keys = [k for k in WORKLOAD_KEYS if k in t]
    ref = t[t["variant"] == t["study"].map(REFERENCE)].groupby([*keys, "study"])["completed"].first()
    t = t.join(ref.rename("ref_completed"), on=[*keys, "study"])
    short = ~(t["ref_completed"] >= min_completed)  # NaN (no reference run) counts as short
    empty = ~(t["completed"] > 0)
    own = np.where(  # the reference's reason first: it covers every run of its study on the workload
        short, [f"{REFERENCE.get(s, '?')} completed {'no run' if math.isnan(f) else int(f)} < {min_completed} "
                "requests by the cap (simulation.max_measure_s)"
                for s, f in zip(t["study"], t["ref_completed"], strict=True)],
        np.where(empty, "no request completed in its window", ""))
    t["_own"] = own
    bad = short | empty
    if keys:
        first_bad = t[bad].groupby(keys)["_own"].first()
        workload_reason = t.join(first_bad.rename("_workload"), on=keys)["_workload"]
    else:
        workload_reason = pd.Series(t.loc[bad, "_own"].iloc[0] if bad.any() else np.nan, index=t.index)
    t["valid"] = workload_reason.isna().to_numpy()
    t["invalid_reason"] = np.where(bad, own, np.where(t["valid"], "", ANOTHER_RUN + ": "
                                                      + workload_reason.fillna("").astype(str)))
    return t.drop(columns="_own")


def geomean(values: ArrayLike) -> float:
    """Geometric mean of positive finite values (NaN when there are none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if len(v) else math.nan


def ratio_rows(table: pd.DataFrame, study: str, variant: str, reference: str | None = None) -> pd.DataFrame:
    """Per workload and design, ``variant`` over ``reference`` (default: the study's :data:`REFERENCE`).

    Returns
    -------
    pandas.DataFrame
        The :data:`WORKLOAD_KEYS` present, ``throughput_x`` (variant / reference throughput), ``ttft_x`` (variant
        / reference mean TTFT; below 1 is better), ``tp_per_ttft_x`` (throughput/TTFT ratio over the reference's),
        ``target_x`` (the paper's metric per design: TP/TTFT for B*, throughput for M_T and for "B* = M_T", as in
        HYDRA Figs. 9, 10, 12) and ``valid`` (both runs valid). Ratios with a zero or missing denominator are NaN.
    """
    reference = reference or REFERENCE[study]
    d = table[table["study"] == study]
    keys = [k for k in WORKLOAD_KEYS if k in d]
    cols = ["sim_throughput_tps", "sim_ttft_s", "valid"]
    a = d[d["variant"] == variant].set_index(keys)[cols] if keys else d[d["variant"] == variant][cols]
    b = d[d["variant"] == reference].set_index(keys)[cols] if keys else d[d["variant"] == reference][cols]
    j = a.join(b.add_suffix("_ref"), how="inner")
    with np.errstate(divide="ignore", invalid="ignore"):
        tp = j["sim_throughput_tps"].astype(float) / j["sim_throughput_tps_ref"].astype(float)
        tt = j["sim_ttft_s"].astype(float) / j["sim_ttft_s_ref"].astype(float)
    tp, tt = tp.where(np.isfinite(tp) & (tp > 0)), tt.where(np.isfinite(tt) & (tt > 0))
    out = pd.DataFrame({"throughput_x": tp, "ttft_x": tt, "tp_per_ttft_x": tp / tt,
                        "valid": j["valid"].astype(bool) & j["valid_ref"].astype(bool)})
    roles = out.index.get_level_values("role") if "role" in keys else pd.Index(["B*"] * len(out))
    out["target_x"] = np.where(roles == "B*", out["tp_per_ttft_x"], out["throughput_x"])
    return out.reset_index() if keys else out.reset_index(drop=True)


COMPARISONS = (
    ("full_vs_baseline", "ablation", "CP+ET+DB", "baseline"),
    ("cp_vs_baseline", "ablation", "CP", "baseline"),
    ("greedy_cp_vs_baseline", "ablation", "greedy CP", "baseline"),
    ("et_vs_cp", "ablation", "CP+ET", "CP"),
    ("db_vs_et", "ablation", "CP+ET+DB", "CP+ET"),
    ("elastic_vs_static", "scheduler", "elastic", "static"),
    ("elastic_vs_fcfs", "scheduler", "elastic", "fcfs"),
    ("elastic_vs_work_stealing", "scheduler", "elastic", "work-stealing"),
    ("cp_vs_round_robin", "placement", "exact", "round-robin"),
    ("cp_vs_random", "placement", "exact", "random"),
    ("greedy_vs_round_robin", "placement", "hydra-greedy", "round-robin"),
)
"""(name, study, variant, reference) of :func:`policy_summary`: HYDRA's headline comparisons (Sec. VI-D/E)."""


def compare(table: pd.DataFrame, study: str, variant: str, reference: str) -> dict[str, float]:
    """Summary of ``variant`` over ``reference`` across the valid workloads of ``table`` (:func:`ratio_rows`).

    Ratios are averaged with the geometric mean: they are normalized results (each workload's run over its own
    reference), and the geometric mean is the one average of ratios that does not depend on which side is the
    reference (Fleming and Wallace, CACM 29(3), 1986); HYDRA says only "on average". TTFT is summarized as the
    reduction ``1 - geomean(TTFT ratio)``.

    Returns
    -------
    dict
        ``n`` (valid workloads), ``invalid`` (workloads left out), ``throughput_x`` / ``_min`` / ``_max``,
        ``ttft_reduction``, ``target_x`` / ``_min`` / ``_max`` and ``wins`` (valid workloads where the variant's
        target metric beats the reference's); NaN where no valid workload has the value.
    """
    r = ratio_rows(table, study, variant, reference)
    v = r[r["valid"]] if len(r) else r
    tp = v["throughput_x"].dropna() if len(v) else pd.Series(dtype=float)
    tg = v["target_x"].dropna() if len(v) else pd.Series(dtype=float)
    return {"n": float(len(v)), "invalid": float(len(r) - len(v)),
            "throughput_x": geomean(tp), "throughput_x_min": float(tp.min()) if len(tp) else math.nan,
            "throughput_x_max": float(tp.max()) if len(tp) else math.nan,
            "ttft_reduction": 1.0 - geomean(v["ttft_x"]) if len(v) else math.nan,
            "target_x": geomean(tg), "target_x_min": float(tg.min()) if len(tg) else math.nan,
            "target_x_max": float(tg.max()) if len(tg) else math.nan, "wins": float((tg > 1.0).sum())}


def policy_summary(table: pd.DataFrame) -> dict[str, float]:
    """Every :data:`COMPARISONS` entry of a policy table, flattened to ``{name}_{key}`` (see :func:`compare`);
    empty when the table is."""
    if table.empty:
        return {}
    return {f"{name}_{k}": v for name, study, var, ref in COMPARISONS
            for k, v in compare(table, study, var, ref).items()}


def _workload_label(key: object, names: list[str]) -> str:
    """A workload's name in notes: its model, dataset and design role (those present)."""
    parts = dict(zip(names, key if isinstance(key, tuple) else (key,), strict=True))
    return " ".join(str(x) for x in (parts.get("model"), parts.get("dataset"), parts.get("role")) if x)


def invalid_notes(table: pd.DataFrame, study: str) -> str:
    """The invalid workloads of one study's rows of a policy table (:func:`mark_validity`), each with the reason of
    its first invalid run; "" when every workload counts."""
    d = table[table["study"] == study]
    keys = [k for k in WORKLOAD_KEYS if k in d]
    bad = d[~d["valid"].astype(bool)]
    if bad.empty:
        return ""
    if not keys:
        return str(bad["invalid_reason"].iloc[0])
    return "; ".join(f"{_workload_label(k, keys)} ({g['invalid_reason'].iloc[0]})"
                     for k, g in bad.groupby(keys, sort=False))


def policy_report(table: pd.DataFrame) -> dict[str, Any]:
    """Every ratio and average the policy pages and the manifest print, computed once from a policy table.

    Returns
    -------
    dict
        ``ratios`` (:func:`~chipdse.studies.hydra.artifacts.pair_key` (study, variant) -> :func:`ratio_rows` over the
        study's reference, for each variant of
        :data:`~chipdse.studies.hydra.artifacts.STUDY_VARIANTS`), ``comparisons`` (pair_key (study, variant,
        reference) -> :func:`compare`, for those and :data:`~chipdse.studies.hydra.artifacts.EXTRA_PAIRS`),
        ``gains`` (:func:`policy_summary`, NaN as None) and ``invalid_notes`` (study -> :func:`invalid_notes`);
        empty dicts for an empty table.
    """
    if table.empty:
        return {"ratios": {}, "comparisons": {}, "gains": {}, "invalid_notes": {}}
    ratios, comparisons = {}, {}
    for study, variants in STUDY_VARIANTS.items():
        for v in variants:
            ratios[pair_key(study, v)] = ratio_rows(table, study, v)
        for v, ref in [(v, REFERENCE[study]) for v in variants] + list(EXTRA_PAIRS.get(study, ())):
            comparisons[pair_key(study, v, ref)] = compare(table, study, v, ref)
    gains = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in policy_summary(table).items()}
    return {"ratios": ratios, "comparisons": comparisons, "gains": gains,
            "invalid_notes": {study: invalid_notes(table, study) for study in STUDY_VARIANTS}}


def simulation_study(fidelity: pd.DataFrame, metrics: dict[str, float], policies: pd.DataFrame,
                     utilization: dict[str, dict[str, Any]], skipped: list[str], wall_s: float,
                     layouts: pd.DataFrame | None = None) -> SimulationStudy:
    """The simulation stage's result with every average its pages print (:func:`policy_report`) computed.

    Parameters
    ----------
    fidelity : pandas.DataFrame
        :func:`fidelity_table`.
    metrics : dict
        :func:`fidelity_metrics` ({} with fewer than 3 points).
    policies : pandas.DataFrame
        :func:`policy_rows` (validity marked by :func:`mark_validity`).
    utilization : dict
        Per placement, the link and chiplet utilization of its runs.
    skipped : list of str
        What was not run, and why.
    wall_s : float
        The stage's wall time, s.
    layouts : pandas.DataFrame, optional
        :func:`chipdse.studies.hydra.layout_study.layout_table`.
    """
    report = policy_report(policies)
    return SimulationStudy(fidelity, metrics, policies, utilization, skipped, wall_s,
                           pd.DataFrame() if layouts is None else layouts, report["ratios"], report["comparisons"],
                           report["gains"], report["invalid_notes"])
