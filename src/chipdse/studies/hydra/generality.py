"""Specialization vs generality (HYDRA Sec. VI-C, Table IV): designs chosen for one, two or three models.

Every model of the study is scored by the vectorized estimator on the same design space (same chiplet types,
package and workload). For model m and point p:

* B* score  ``s_B(m, p) = throughput / TTFT`` at the offered load (HYDRA Table IV(a), "norm. TP/TTFT");
* M_T score ``s_T(m, p) = throughput`` (Table IV(b), "norm. TP");

each divided by the model's own single-model optimum (its B* and M_T from the pick stage,
:func:`chipdse.studies.hydra.stages.pick`, with B* by throughput / TTFT whatever the scenario's ``energy.pick``: Table
IV(a)'s objective is TP/TTFT), so 1.00 is the workload-specific optimum, as in the paper. Each model's table is the
screen stage's (:func:`chipdse.studies.hydra.stages.screen_points`, the scenario's power limits included).

HYDRA does not say how it combines several target models. chipdse solves the multi-target choice exactly, by
enumeration over the whole space: the target set's design maximizes the **worst normalized score over its
targets** (maximin), among points that are stable for every target (and, for B*, above each target's average
stable throughput, the same filter as the single-model B*). Ties go to the lowest mean normalized TTFT over the
targets. With one target this is exactly the single-model B* / M_T. Maximin is chosen because the paper's
headline for the all-model design is a worst case ("limits the worst-case degradation to 14%").
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.design_space import ScoredDesign, enumerate_points, subset_points
from chipdse.core.errors import SpecError
from chipdse.core.scenario import LoadedScenario, model_scenarios
from chipdse.runtime.parallel import Backend, run_jobs
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.artifacts import (
    OBJECTIVES,
    SHORT_NAMES,
    GeneralityResult,
    PickRule,
    Picks,
    SimulatedTableIV,
)
from chipdse.studies.hydra.recovery import run_safe
from chipdse.studies.hydra.simstudy import SimJob, make_layout, saturation_window
from chipdse.studies.hydra.stages import design_table, estimator, pick, screen_points


def target_sets(n: int) -> list[tuple[int, ...]]:
    """All non-empty subsets of ``range(n)``: singles first, then pairs, ... (HYDRA Table IV row order)."""
    return [c for k in range(1, n + 1) for c in itertools.combinations(range(n), k)]


def _score_arrays(frames: list[pd.DataFrame], picks: list[Picks]) -> dict[str, Any]:
    """Per-model arrays (models x points): stable, normalized B* / M_T scores, eligibility, normalized TTFT; each
    model's own B* and M_T from its ``picks``."""
    stable = np.array([f["stable"].to_numpy(dtype=bool) for f in frames])
    tp = np.array([f["throughput_tps"].to_numpy(dtype=float) for f in frames])
    ttft = np.array([f["ttft_s"].to_numpy(dtype=float) for f in frames])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(stable, tp / ttft, 0.0)
    b_idx = [p.b_star.index for p in picks]
    t_idx = [p.m_t.index for p in picks]
    opt_b = np.array([ratio[m, i] for m, i in enumerate(b_idx)])
    opt_t = np.array([tp[m, i] for m, i in enumerate(t_idx)])
    mean_tp = np.array([tp[m][stable[m]].mean() for m in range(len(frames))])
    return {
        "stable": stable, "tp": tp, "ttft": ttft, "b_idx": b_idx, "t_idx": t_idx, "opt_b": opt_b, "opt_t": opt_t,
        "B*": ratio / opt_b[:, None], "M_T": np.nan_to_num(tp) / opt_t[:, None],
        "eligible_B*": stable & (tp >= mean_tp[:, None]), "eligible_M_T": stable,
        "ttft_norm": np.where(stable, ttft / np.array([ttft[m, i] for m, i in enumerate(b_idx)])[:, None], np.inf),
    }


def choose(score: np.ndarray, eligible: np.ndarray, ttft_norm: np.ndarray, targets: tuple[int, ...]) -> int:
    """Index of the point maximizing the worst normalized score over ``targets`` (exact, by enumeration).

    Parameters
    ----------
    score, eligible, ttft_norm : numpy.ndarray, shape (n_models, n_points)
        Normalized scores, eligibility, and TTFT over the model's B* TTFT (the tie-break, lower wins).
    targets : tuple of int
        Model rows of the target set.

    Raises
    ------
    ValueError
        When no point is eligible for every target.
    """
    t = list(targets)
    ok = eligible[t].all(axis=0)
    if not ok.any():
        msg = "no design point is stable for every target model at the offered load"
        raise ValueError(msg)
    worst = np.where(ok, score[t].min(axis=0), -np.inf)
    best = worst.max()
    tied = np.flatnonzero(worst >= best * (1 - 1e-12))
    return int(tied[np.argmin(ttft_norm[t][:, tied].mean(axis=0))])


def generality(sc: LoadedScenario, models: list[str] | None = None) -> GeneralityResult:
    """Compute HYDRA Table IV on the scenario's design space and workload.

    Parameters
    ----------
    sc : LoadedScenario
        Supplies the design space, package, library and workload (its offered load included).
    models : list of str, optional
        Model keys or card paths; default the scenario's ``generality.models``.

    Returns
    -------
    GeneralityResult

    Raises
    ------
    SpecError
        No model list, or a model with other chiplet types than the scenario's model.
    InfeasibleDesignError
        When no design point can be built.
    ValueError
        A model, or a target set, with no stable point at the offered load (the message names it).
    """

    t0 = time.perf_counter()
    field = "--model"
    if models is None:
        if sc.spec.generality is None:
            raise SpecError(str(sc.path), "generality.models", "a list of at least two models (or give --model "
                            "twice or more)")
        models, field = sc.spec.generality.models, "generality.models"
    variants = model_scenarios(sc, models, field)
    pts, _ = enumerate_points(variants[0])  # the models' shared chiplet types span the space
    frames, picks = [], []
    for v in variants:
        table = design_table(v, screen_points(estimator(v), pts))
        df = table.frame
        if not df["stable"].any():
            msg = (f"{v.model.key} has no stable design point at {sc.workload.arrival_rate_rps:g} req/s (best "
                   f"capacity {df['capacity_rps'].max():.3g} req/s); lower arrival_rate_rps in {sc.path}")
            raise ValueError(msg)
        frames.append(df)
        picks.append(pick(table, PickRule.THROUGHPUT_TTFT))  # Table IV(a) is TP/TTFT, whatever energy.pick says
    a = _score_arrays(frames, picks)
    keys = [v.model.key for v in variants]
    names = [SHORT_NAMES.get(k, k) for k in keys]
    labels = frames[0]["label"].tolist()
    scores, stable, designs = {}, {}, []
    for obj in OBJECTIVES:
        rows, st_rows, index = [], [], []
        for targets in target_sets(len(keys)):
            name = " + ".join(names[i] for i in targets)
            try:
                p = choose(a[obj], a[f"eligible_{obj}"], a["ttft_norm"], targets)
            except ValueError as exc:
                msg = f"{obj} target {name}: {exc}"
                raise ValueError(msg) from None
            col = a[obj][:, p]
            rows.append(col)
            st_rows.append(a["stable"][:, p])
            index.append(name)
            designs.append({"objective": obj, "target": name, "design": labels[p], "point": p,
                            "worst_on_target": float(col[list(targets)].min()), "worst_overall": float(col.min())})
        scores[obj] = pd.DataFrame(rows, index=index, columns=names)
        stable[obj] = pd.DataFrame(st_rows, index=index, columns=names)
    optima = pd.DataFrame([{"model": k, "name": n, "b_star": labels[a["b_idx"][m]],
                            "b_star_tp_per_ttft": float(a["opt_b"][m]), "m_t": labels[a["t_idx"][m]],
                            "m_t_throughput_tps": float(a["opt_t"][m])} for m, (k, n) in enumerate(zip(keys, names,
                                                                                                  strict=True))])
    return GeneralityResult(keys, names, scores, stable, pd.DataFrame(designs), optima, len(pts),
                            sc.workload.name, sc.workload.arrival_rate_rps, time.perf_counter() - t0)


def normalize_table_iv(runs: pd.DataFrame, designs: pd.DataFrame, names: list[str]
                       ) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Turn simulated (design, model) runs into the two Table IV matrices, each model normalized to its best
    simulated result, so no cell exceeds 1.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per (``point``, ``model``): ``sim_throughput_tps`` (saturated, tok/s), ``sim_ttft_s`` (s at the
        model's rate) and ``stable`` (the design sustains that rate).
    designs : pandas.DataFrame
        :attr:`GeneralityResult.designs`: ``objective``, ``target`` and ``point`` per row.
    names : list of str
        Model short names, the column order.

    Returns
    -------
    (scores, stable) : tuple of dict[str, pandas.DataFrame]
        Per objective, rows = target sets, columns = ``names``. The reference of a model is the best over every
        design simulated for it (all rows of both objectives): B*: TP / TTFT over the best TP / TTFT of its stable
        designs; where the design is unstable on the model, its saturated TP over the best saturated TP instead.
        M_T: TP over the best TP. NaN where a run is missing. (The estimator's own picks are not the simulated
        optima, so normalizing by them let cells exceed 1.)

    References
    ----------
    HYDRA Sec. VI-C, Table IV ("Values are normalized to the best result for each workload, so 1.00 denotes the
    workload-specific optimum").
    """
    key = {(int(r["point"]), r["model"]): r for r in runs.to_dict("records")}

    def get(p: int, m: str, field: str) -> float:
        r = key.get((p, m))
        return float(r[field]) if r is not None and r[field] is not None else np.nan

    best_tp, best_ratio = {}, {}
    for m in names:
        mine = [r for (_, mm), r in key.items() if mm == m]
        best_tp[m] = max((float(r["sim_throughput_tps"]) for r in mine), default=np.nan)
        best_ratio[m] = max((float(r["sim_throughput_tps"]) / float(r["sim_ttft_s"]) for r in mine
                             if r["stable"] and r["sim_ttft_s"] and np.isfinite(r["sim_ttft_s"])), default=np.nan)
    scores, stable = {}, {}
    for obj in OBJECTIVES:
        d = designs[designs["objective"] == obj]
        rows, st_rows, index = [], [], []
        for rec in d.to_dict("records"):
            p = int(rec["point"])
            cells, st = [], []
            for m in names:
                ok = bool(key[(p, m)]["stable"]) if (p, m) in key else False
                tp = get(p, m, "sim_throughput_tps")
                if obj == "B*" and ok:
                    cells.append(tp / get(p, m, "sim_ttft_s") / best_ratio[m])
                else:
                    cells.append(tp / best_tp[m])
                st.append(ok)
            rows.append(cells)
            st_rows.append(st)
            index.append(rec["target"])
        scores[obj] = pd.DataFrame(rows, index=index, columns=names)
        stable[obj] = pd.DataFrame(st_rows, index=index, columns=names)
    return scores, stable


def simulate_table_iv(sc: LoadedScenario, r: GeneralityResult, *, load: float = 0.7, backend: Backend | None = None,
                      placement: str = "hydra-greedy", min_measure_s: float = 30.0, max_s: float = 150.0,
                      ttft_duration_s: float = 60.0, seeds: int = 1) -> SimulatedTableIV:
    """Score Table IV's chosen designs by simulation, each model at its own sustainable rate.

    Every distinct design of ``r.designs`` is placed (``placement``) and mapped for each model and simulated twice
    per model: saturated (arrivals at twice the estimated capacity) for its throughput, and at the model's rate for
    its TTFT. A model's rate is ``load`` x the simulated saturated capacity (req/s) of its own single-model B*
    design, so every model is offered the same fraction of what its own best balanced design sustains (HYDRA does
    not state its rates; one rate for all models leaves some unstable on every design).

    Parameters
    ----------
    sc : LoadedScenario
        The scenario :func:`generality` ran on.
    r : GeneralityResult
        Its result (the designs to simulate; models by key).
    load : float
        Fraction of each model's own B* design's simulated capacity offered to every design, in (0, 1].
    backend : Backend, optional
        Where the simulations run (default in-process).
    placement : str
        Placement method of every (design, model) pair.
    min_measure_s, max_s, ttft_duration_s : float
        Windows of the saturated runs (at least / at most, s) and of the runs at the model's rate (s).
    seeds : int
        Simulator seeds (the scenario's seed, +1, ...): every run is repeated per seed, each seed's matrices
        normalized on their own (:func:`normalize_table_iv`); ``scores`` is their mean, ``spread`` max - min.

    Returns
    -------
    SimulatedTableIV

    Raises
    ------
    ValueError
        ``load`` outside (0, 1].
    """
    if not 0 < load <= 1:
        msg = f"load must be in (0, 1], got {load}"
        raise ValueError(msg)
    if seeds < 1:
        msg = f"seeds must be at least 1, got {seeds}"
        raise ValueError(msg)
    t0 = time.perf_counter()
    backend = backend or Backend.in_process()
    per_seed = []
    for k in range(seeds):
        seeded = dataclasses.replace(sc, spec=sc.spec.model_copy(update={"seed": sc.spec.seed + k}))
        per_seed.append(_table_iv_runs(seeded, r, load, backend, placement, min_measure_s, max_s, ttft_duration_s))
    mats = [normalize_table_iv(runs, r.designs, r.names) for runs, _, _ in per_seed]
    scores = {obj: sum(m[0][obj] for m in mats) / seeds for obj in OBJECTIVES}
    spread = {obj: pd.concat([m[0][obj] for m in mats]).groupby(level=0, sort=False).agg(lambda x: x.max() - x.min())
              .reindex(scores[obj].index) for obj in OBJECTIVES}
    stable = {obj: pd.concat([m[1][obj] for m in mats]).groupby(level=0, sort=False).all().reindex(scores[obj].index)
              for obj in OBJECTIVES}
    runs_df = pd.concat([runs.assign(seed=sc.spec.seed + k) for k, (runs, _, _) in enumerate(per_seed)],
                        ignore_index=True)
    skipped = sorted({x for _, _, sk in per_seed for x in sk})
    return SimulatedTableIV(scores, stable, runs_df, per_seed[0][1], load, placement, skipped,
                            time.perf_counter() - t0, spread, seeds)


def _table_iv_runs(sc: LoadedScenario, r: GeneralityResult, load: float, backend: Backend, placement: str,
                   min_measure_s: float, max_s: float, ttft_duration_s: float
                   ) -> tuple[pd.DataFrame, dict[str, float], list[str]]:
    """One seed's Table IV runs (:func:`simulate_table_iv`): (runs, each model's rate, skipped pairs)."""
    variants = model_scenarios(sc, r.models)
    pts, _ = enumerate_points(variants[0])
    chosen = sorted({int(p) for p in r.designs["point"]})
    sub = subset_points(pts, np.array(chosen, dtype=int))
    cfg = SolverConfig(work_limit=1.0, time_limit_s=10.0, seed=sc.spec.seed)
    batching = str(getattr(sc.spec.estimator.batching, "value", sc.spec.estimator.batching))
    frames = {n: screen_points(estimator(v), sub) for n, v in zip(r.names, variants, strict=True)}
    layouts, skipped = {}, []
    sat_jobs = []
    for n, v in zip(r.names, variants, strict=True):
        for j, p in enumerate(chosen):
            row = frames[n].iloc[j].to_dict()
            design = ScoredDesign.from_row(row, v.compute_types())
            lay = make_layout(v, design, placement, cfg) if row["feasible"] and row["capacity_rps"] > 0 else None
            if lay is None:
                skipped.append(f"{row['label']} on {n}: infeasible or no {placement} placement")
                continue
            layouts[(p, n)] = lay
            cap = float(row["capacity_rps"])
            dur, warm = saturation_window(cap, float(row["decode_concurrency"]), min_measure_s, max_s)
            sat_jobs.append(SimJob(sc=v, layout=lay, rate_rps=2.0 * cap, duration_s=dur, warmup_s=warm,
                                   batching=batching, tags={"point": p, "label": row["label"], "model": n}))
    sat = {(x["point"], x["model"]): x for x in run_jobs(run_safe, sat_jobs, backend)}
    skipped += [f"{x['label']} on {x['model']}: {x['error']}" for x in sat.values() if "error" in x]
    own_b = {n: int(r.designs[(r.designs["objective"] == "B*") & (r.designs["target"] == n)]["point"].iloc[0])
             for n in r.names}
    rates = {}
    for n, v in zip(r.names, variants, strict=True):
        s = sat.get((own_b[n], n), {})
        rates[n] = load * float(s.get("sim_throughput_tps", 0.0)) / v.lengths.mean_decode
    off_jobs = [SimJob(sc=v, layout=layouts[(p, n)], rate_rps=rates[n], duration_s=ttft_duration_s,
                       warmup_s=ttft_duration_s / 5, batching=batching, tags={"point": p, "model": n})
                for n, v in zip(r.names, variants, strict=True) for p in chosen
                if (p, n) in layouts and rates[n] > 0]
    off = {(x["point"], x["model"]): x for x in run_jobs(run_safe, off_jobs, backend)}
    runs = []
    for n, v in zip(r.names, variants, strict=True):
        for j, p in enumerate(chosen):
            s = sat.get((p, n))
            if s is None or "error" in s:
                continue
            o = off.get((p, n), {})
            tp = float(s["sim_throughput_tps"])
            ok = rates[n] > 0 and tp / v.lengths.mean_decode > rates[n] and o.get("sim_ttft_s") is not None
            runs.append({"point": p, "label": frames[n].iloc[j]["label"], "model": n, "sim_throughput_tps": tp,
                         "sim_ttft_s": float(o["sim_ttft_s"]) if ok else np.nan, "stable": ok,
                         "rate_rps": rates[n], "est_throughput_tps": float(frames[n].iloc[j]["throughput_tps"])})
    return pd.DataFrame(runs), rates, skipped
