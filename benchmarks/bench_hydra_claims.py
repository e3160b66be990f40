"""HYDRA's claims, this run: every number of issue 15's table (and HYDRA Figs. 9-12) next to the paper's.

Runs, on 2 worker processes by default:

1. the explore pipeline (``chipdse explore``: sweep, B* / M_T, exact layouts, simulation stage with fidelity, the
   ablation, scheduler and placement studies) on each policy scenario: ``instances/scenarios/hydra-protocol.yaml``
   when it exists (the paper's 12-workload protocol), else the default scenario; or the ``--policy-scenario``
   files given;
2. the recovery study: every point of one sub-space of the default scenario simulated, the estimator's and the
   roofline's picks and Pareto fronts against that exhaustive simulation (:mod:`chipdse.studies.hydra.recovery`);
3. Table IV on ``hydra-table4-chat.yaml``: the estimator's, then its chosen designs simulated on every model, each at
   its own rate (:func:`chipdse.studies.hydra.generality.simulate_table_iv`);

then prints the claims table from the same code as the report's claims page (:mod:`reports.claims_page`,
:mod:`chipdse.studies.claims`), and the details behind it. Not part of the test run (minutes on 2 cores).

Run: python benchmarks/bench_hydra_claims.py [--workers 2] [--policy-scenario PATH]... [--hbm 12 --d2d 512
--batch 16] [--skip explore|recovery|table4]... [--seeds 3] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from chipdse.core.params import fitted_claims, load_register
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load_scenario
from chipdse.runtime.parallel import Backend
from chipdse.studies.claims import claim_rows, fidelity_line, measured_from, render_text
from chipdse.studies.hydra.claims import CLAIMS, measure_library, measure_policies, measure_recovery, measure_table_iv
from chipdse.studies.hydra.explore import explore
from chipdse.studies.hydra.generality import generality, simulate_table_iv
from chipdse.studies.hydra.recovery import recovery


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _policy_scenarios(given: list[str] | None) -> list[Path]:
    if given:
        return [Path(p) for p in given]
    protocol = instances_dir() / "scenarios" / "hydra-protocol.yaml"
    return [protocol if protocol.exists() else instances_dir() / "scenarios" / "default.yaml"]


def run_explore(paths: list[Path]) -> tuple[dict, dict, list[str]]:
    """Explore every policy scenario; claims of the first, policy numbers over all of them together."""
    measured, notes, lines = {}, {}, []
    pols = []
    for i, path in enumerate(paths):
        sc = load_scenario(path)
        t0, c0 = time.perf_counter(), _cpu_s()
        r = explore(sc)
        lines.append(f"explore {path.name}: {time.perf_counter() - t0:.0f} s wall, {_cpu_s() - c0:.0f} s CPU; B* "
                     f"{r.finalists[0].row['label']}, M_T {r.finalists[-1].row['label']}")
        if r.simulation is None:
            lines.append(f"  {path.name}: simulation disabled")
            continue
        if i == 0 and r.claims is not None:
            measured, notes = dict(r.claims.measured), dict(r.claims.notes)
        pol = r.simulation.policies.copy()
        if "model" not in pol.columns:
            pol["model"] = sc.model.key
        pols.append(pol)
        lines += [f"  skipped: {s}" for s in r.simulation.skipped]
        lines.append(f"  fidelity: {json.dumps({k: round(v, 3) for k, v in r.simulation.metrics.items()})}")
    if len(pols) > 1:
        m, n = measure_policies(pd.concat(pols, ignore_index=True))
        measured, notes = measured_from([(measured, notes), (m, n)])
    return measured, notes, lines


def run_recovery(hbm: int, d2d: float, batch: int, backend: Backend) -> tuple[dict, dict, list[str]]:
    """The recovery study on the default scenario's sub-space, its claims and notes."""
    sc = load_scenario()
    t0, c0 = time.perf_counter(), _cpu_s()
    res = recovery(sc, hbm, d2d, batch, backend=backend)
    m = res.metrics
    t = res.table
    best = t.loc[t["sim_throughput_tps"].idxmax()]
    est, roof = t.iloc[int(m["est_pick"])], t.iloc[int(m["roof_pick"])]
    where = (f"sub-space HBM {hbm}, {d2d:g} GB/s, B{batch}: {len(t)} compositions of {sc.spec.name}, each simulated "
             f"({res.subspace['placement']} placement, {res.subspace['batching']} batching)")
    notes = {"est_recovery": f"{where}; estimator's pick {est['label']} simulates {est['sim_throughput_tps']:.0f} "
                             f"tok/s, the best ({best['label']}) {best['sim_throughput_tps']:.0f}",
             "roof_recovery": f"{where}; the roofline (no NoI, no queueing, pooled HBM, full batches) picks "
                              f"{roof['label']}: {roof['roof_throughput_tps']:.0f} tok/s by roofline, "
                              f"{roof['sim_throughput_tps']:.0f} simulated; best {best['sim_throughput_tps']:.0f}"}
    lines = [f"recovery: {where}; {time.perf_counter() - t0:.0f} s wall, {_cpu_s() - c0:.0f} s CPU",
             "  " + json.dumps({k: round(v, 3) for k, v in m.items()}),
             *[f"  skipped: {s}" for s in res.skipped]]
    return measure_recovery(m), notes, lines


def run_table_iv(backend: Backend, seeds: int) -> tuple[dict, dict, list[str]]:
    """Table IV by the estimator and by simulation on the bundled Table IV scenario, each cell over ``seeds``
    simulator seeds (mean, and max - min printed beside it)."""
    sc = load_scenario(instances_dir() / "scenarios" / "hydra-table4-chat.yaml")
    t0, c0 = time.perf_counter(), _cpu_s()
    r = generality(sc)
    sim = simulate_table_iv(sc, r, backend=backend, seeds=seeds)
    r.simulated = sim
    rates = ", ".join(f"{k} {v:.3g}" for k, v in sim.rates_rps.items())
    measured = measure_table_iv(sim.scores)
    notes = {k: f"simulated, each model at {sim.load:.0%} of its own B* design's simulated capacity ({rates} "
                f"req/s; other shares: the range tried); mean of {sim.seeds} seeds, each model normalized to its best "
                "simulated design" for k in measured}
    lines = [f"Table IV: {time.perf_counter() - t0:.0f} s wall, {_cpu_s() - c0:.0f} s CPU; rates {rates} req/s"]
    for obj in ("B*", "M_T"):
        lines += [f"  {obj} estimator:", *("    " + x for x in r.scores[obj].round(2).to_string().split("\n")),
                  f"  {obj} simulated (u = unstable at the model's rate):",
                  *("    " + x for x in (sim.scores[obj].round(2).astype(str)
                                         + sim.stable[obj].map(lambda v: "" if v else "u")).to_string().split("\n")),
                  f"  {obj} spread over {sim.seeds} seeds (max - min):",
                  *("    " + x for x in sim.spread[obj].round(3).to_string().split("\n"))]
    b, sp = sim.scores["B*"], sim.spread["B*"]
    for row, col in (("Jamba", "Nemo"), ("Nemo", "Zamba")):
        if row in b.index and col in b.columns:
            lines.append(f"  B* {row}-specialized on {col}: {b.loc[row, col]:.3f} (seed spread "
                         f"{sp.loc[row, col]:.3f}; every cell <= 1: {bool((b.to_numpy() <= 1 + 1e-9).all())})")
    lines += [f"  skipped: {s}" for s in sim.skipped]
    return measured, notes, lines


def _progress(lines: list[str]) -> None:
    """Each stage's details on stderr as soon as it ends (the table itself needs every stage)."""
    print("\n".join(lines), file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--policy-scenario", action="append")
    ap.add_argument("--hbm", type=int, default=12)
    ap.add_argument("--d2d", type=float, default=512.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--skip", action="append", default=[], choices=["explore", "recovery", "table4"])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--seeds", type=int, default=3, help="simulator seeds per Table IV cell (default 3)")
    a = ap.parse_args()
    backend = Backend.processes(a.workers) if a.workers > 1 else Backend.in_process()
    t0, c0 = time.perf_counter(), _cpu_s()
    sc = load_scenario()
    mem = sc.library.memory
    parts = [(measure_library(mem.capacity_GB, mem.bandwidth_GBps), {})]
    details: list[str] = []
    if "explore" not in a.skip:
        m, n, lines = run_explore(_policy_scenarios(a.policy_scenario))
        parts.append((m, n))
        details += lines
        _progress(lines)
    if "recovery" not in a.skip:
        m, n, lines = run_recovery(a.hbm, a.d2d, a.batch, backend)
        parts.append((m, n))
        details += lines
        _progress(lines)
    if "table4" not in a.skip:
        m, n, lines = run_table_iv(backend, a.seeds)
        parts.append((m, n))
        details += lines
        _progress(lines)
    measured, notes = measured_from(parts)
    rows = claim_rows(measured, notes, claims=CLAIMS, calibrated=fitted_claims(load_register("hydra")))
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine {platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}; load average {os.getloadavg()[0]:.2f} at the end; "
          f"{a.workers} worker(s)")
    print(render_text(rows))
    print(fidelity_line(rows))
    print()
    print("\n".join(details))
    print(f"total: {time.perf_counter() - t0:.0f} s wall, {_cpu_s() - c0:.0f} s CPU")
    if a.json:
        a.json.write_text(json.dumps({"measured": measured, "notes": notes,
                                      "rows": [r.__dict__ for r in rows]}, indent=1, default=str))


if __name__ == "__main__":
    main()
