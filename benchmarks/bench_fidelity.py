"""Estimator fidelity against the event simulator over the default scenario's design points, in absolute terms.

Two settings, each scored by the estimator and simulated with the same policies:

* ``dse``: static batching + static task scheduling (HYDRA Sec. VI-B's DSE setting; the estimator pins the
  allocation to the preferred split);
* ``elastic``: dynamic batching + elastic task scheduling (the estimator's allocation-state chain).

Sample per setting: the estimator's 10 highest-throughput points plus N points spread evenly over its throughput
ranking of all feasible points (N = 22 by default: 32 points). Nothing is fitted to the simulator (every point is
held out). Each point is placed with the exact ``hbm-enum`` method (HYDRA greedy when that finds nothing in 5 s),
mapped with LPT, and simulated saturated for throughput (arrivals at twice the estimated capacity, warm-up of 1.5
resident turnovers, ``saturation_window``) and at the offered load for TTFT. Prints one line per point, MAPE,
Spearman, cosine and recovery against their targets, and the hop construction's error against the hydra-greedy
and exact placements of the simulated points.

Run: python benchmarks/bench_fidelity.py [--spread N] [--workers W] [--cache FILE] [--settings dse,elastic]
(``--cache`` keeps layouts and simulation results in a JSON file, so a rerun simulates only new points.)
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from chipdse.core.design_space import DesignPoints, PointSpec, ScoredDesign, enumerate_points
from chipdse.core.layout import Layout
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.markov_hops import mean_group_distance
from chipdse.runtime.parallel import Backend, run_jobs
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.artifacts import FIDELITY_MAX_ERRORS, FIDELITY_THRESHOLDS
from chipdse.studies.hydra.simstudy import (
    SimJob,
    fidelity_jobs,
    fidelity_metrics,
    fidelity_table,
    make_layout,
    run_job,
)

N_TOP = 10
OVERLOAD = 4.0
"""Saturated runs offer 4x the estimated capacity, so a design up to 4x faster than estimated still saturates."""
MAX_WINDOW_S = 2400.0
"""Longest saturated window, s: a static batch of 64 on the slowest designs decodes for several hundred seconds,
so 600 s (explore's cap) leaves less than one batch cycle after the warm-up."""
SETTINGS = {"dse": ("static", "static"), "elastic": ("dynamic", "elastic")}
"""Setting name -> (batching, task scheduling), the same on the estimator and the simulator."""


def layout_to_json(lay: Layout) -> dict[str, Any]:
    p = lay.point
    return {"point": {"counts": p.counts, "hbm": p.hbm, "d2d_GBps": p.d2d_GBps, "batch": p.batch},
            "placement": {str(k): v for k, v in lay.placement.items()}, "prefill_map": lay.prefill_map,
            "decode_map": lay.decode_map, "method": lay.placement_method}


def layout_from_json(d: dict[str, Any]) -> Layout:
    p = d["point"]
    return Layout(PointSpec(p["counts"], p["hbm"], p["d2d_GBps"], p["batch"]),
                  {int(k): v for k, v in d["placement"].items()}, d["prefill_map"], d["decode_map"], d["method"])


def placed_type_hops(screen: Screen, placement: dict[int, str], types: list[str], row: Any
                     ) -> list[tuple[float, float]]:
    """(hops in the real placement, the construction's hops) of each compute type of one point, both weighted
    by the estimator's per-group traffic (``Screen.hop_weights``)."""
    sc = screen.sc
    stacks_cells = {g: tuple(c for c, ty in placement.items() if ty == f"hbm:{g}") for g in ("attention", "mamba")}
    dist = mean_group_distance(sc.package.rows, sc.package.cols, [stacks_cells["attention"], stacks_cells["mamba"]])
    counts = np.array([[int(row[ty]) for ty in types]])
    stacks = np.array([[int(row["hbm_attention"]), int(row["hbm_mamba"])]])
    batch = np.array([int(row["batch_eff"])])
    w = screen.hop_weights(types, counts, stacks, batch)[0]
    pts = DesignPoints(types, counts, np.array([stacks.sum()]), np.array([float(row["d2d_GBps"])]), batch)
    est = screen.type_hops(pts, stacks, batch)[0]
    out = []
    for ti, ty in enumerate(types):
        mine = [c for c, t in placement.items() if t == ty]
        if mine and w[ti].sum() > 0:
            out.append((float(np.mean([w[ti] @ dist[:, c] for c in mine]) / w[ti].sum()), float(est[ti])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spread", type=int, default=22)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--settings", default="dse,elastic")
    args = ap.parse_args()
    cache: dict[str, Any] = {"layouts": {}, "sims": {}}
    if args.cache is not None and args.cache.exists():
        cache = json.loads(args.cache.read_text())
    sc = load_scenario()
    pts, _ = enumerate_points(sc)
    print(f"machine: {platform.machine()}, python {platform.python_version()}; scenario {sc.spec.name}")
    cfg = SolverConfig(work_limit=5.0, seed=0)
    for name in args.settings.split(","):
        batching, scheduling = SETTINGS[name]
        screen = Screen(sc, batching=batching, scheduling=scheduling)
        t0, c0 = time.perf_counter(), time.process_time()
        df = screen.score(pts)
        print(f"\n== setting {name}: {batching} batching, {scheduling} scheduling; {len(df):,} points scored in "
              f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU")
        feas = df[df["feasible"] & (df["capacity_rps"] > 0)].sort_values("throughput_tps", ascending=False)
        spread = np.linspace(N_TOP, len(feas) - 1, args.spread).astype(int)
        rows = df.loc[sorted(set(feas.index[:N_TOP]) | set(feas.index[spread]))]
        t1 = time.perf_counter()
        layouts = {}
        for pid, row in rows.iterrows():
            if row["label"] not in cache["layouts"]:
                design = ScoredDesign.from_row(row.to_dict(), sc.compute_types())
                lay = make_layout(sc, design, "hbm-enum", cfg) or make_layout(sc, design, "hydra-greedy", cfg)
                cache["layouts"][row["label"]] = None if lay is None else layout_to_json(lay)
            if cache["layouts"][row["label"]] is not None:
                layouts[int(pid)] = layout_from_json(cache["layouts"][row["label"]])
        print(f"{len(layouts)} layouts in {time.perf_counter() - t1:.1f} s")
        jobs = fidelity_jobs(sc, rows, layouts, batching=batching, scheduler=scheduling, max_s=MAX_WINDOW_S,
                             overload=OVERLOAD)
        key = {id(j): f"{name}|{j.tags['label']}|{j.tags['run']}" for j in jobs}

        def reusable(j: SimJob, key: dict[int, str] = key) -> bool:
            """A cached run of the same point whose rate and window are within 25% of this one's, or a saturated
            run at least 0.75x as long (its throughput no longer depends on the offered rate)."""
            r = cache["sims"].get(key[id(j)])
            if r is None:
                return False
            if j.tags["run"] == "saturated" and r["finished"] < 0.9 * r["arrived"]:
                return r["duration_s"] >= 0.75 * j.duration_s
            return all(abs(r[f] / v - 1) <= 0.25 for f, v in (("rate_rps", j.rate_rps), ("duration_s", j.duration_s)))

        todo = [j for j in jobs if not reusable(j)]
        t2 = time.perf_counter()
        fresh = run_jobs(run_job, todo, Backend.processes(args.workers) if args.workers > 1 else Backend.in_process())
        for j, r in zip(todo, fresh, strict=True):
            cache["sims"][key[id(j)]] = {k: v for k, v in r.items() if k not in ("chiplet_utilization",
                                                                                 "link_utilization")}
        if args.cache is not None:
            args.cache.write_text(json.dumps(cache))
        results = [{**cache["sims"][key[id(j)]], "point": j.tags["point"]} for j in jobs]
        sim_cpu = sum(r["wall_s"] for r in fresh)
        print(f"{len(jobs)} simulations ({len(todo)} run now: {sim_cpu:.1f} s of simulator time, "
              f"{time.perf_counter() - t2:.1f} s wall on {args.workers} worker(s))")
        table = fidelity_table(rows, results).sort_values("est_throughput_tps", ascending=False)
        print(f"{'point':>7s} {'label':36s} {'est tok/s':>10s} {'sim tok/s':>10s} {'ratio':>6s} {'est TTFT':>9s} "
              f"{'sim TTFT':>9s}")
        for _, r in table.iterrows():
            flag = "" if r["sim_saturated"] else "  (not saturated: sim is a lower bound)"
            print(f"{r['point']:7d} {r['label']:36s} {r['est_throughput_tps']:10.1f} {r['sim_throughput_tps']:10.1f} "
                  f"{r['sim_throughput_tps'] / r['est_throughput_tps']:6.2f} {r['est_ttft_s']:9.3f} "
                  f"{r['sim_ttft_s']:9.3f}{flag}")
        m = fidelity_metrics(table)
        for k, v in m.items():
            lo, hi = FIDELITY_THRESHOLDS.get(k), FIDELITY_MAX_ERRORS.get(k)
            verdict = ("" if lo is None else f"  (target >= {lo}: {'met' if v >= lo else 'NOT met'})") + (
                "" if hi is None else f"  (target <= {hi}: {'met' if v <= hi else 'NOT met'})")
            print(f"{k:26s} {v:.4f}{verdict}")
        errs: dict[str, list[float]] = {"hbm-enum": [], "hydra-greedy": []}
        for pid, lay in layouts.items():
            row = df.loc[pid]
            greedy = solve_placement(placement_problem(sc, lay.point, float(row["capacity_rps"])), "hydra-greedy", cfg)
            for method, placement in ((lay.placement_method, lay.placement), ("hydra-greedy", greedy.decision)):
                if placement is None or method not in errs:
                    continue
                for real, est in placed_type_hops(screen, placement, pts.types, row):
                    errs[method].append(est - real)
        for method, e in errs.items():
            if e:
                a = np.abs(np.array(e))
                print(f"hops (construction - {method}): mean |error| {a.mean():.3f}, max {a.max():.3f}, "
                      f"mean signed {np.mean(e):+.3f} over {len(e)} (point, type) pairs")


if __name__ == "__main__":
    main()
