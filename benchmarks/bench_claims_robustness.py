"""Robustness of HYDRA's conclusions over its assumption parameters (issue 30): re-run the default explore's
screen, pick and simulated policy studies with each swept assumption at its register's low and high, and score
every ordering claim (:mod:`chipdse.studies.robustness`).

Each setting is one ``chipdse explore`` of the default scenario through the API with ``--set`` overrides, reduced
to keep it affordable: the arXiv dataset only (``simulation.datasets=[arxiv.yaml]``), no fidelity candidates, no
thermal stage. Every setting's measured values are cached in ``--cache`` (JSON, keyed by its overrides and the
code's commit), so a rerun recomputes only what is missing. The result (settings, measured values, holds_share and
flips_at per ordering, commit, date, CPU and wall time) is written to ``--out``, by default
``instances/robustness/hydra-default.json``, which the default explore's claims stage attaches to its ordering
rows (only when the scenario file is the one the sweep ran on).

With ``--scenario hydra-table4-chat.yaml`` each setting is instead Table IV on that scenario: the estimator's
picks per model (:func:`chipdse.studies.hydra.generality.generality`), each simulated on every model at its own rate
(:func:`chipdse.studies.hydra.generality.simulate_table_iv`, one seed), which scores the generality ordering; the
default explore reads that record for its ``order_generality_cost`` row (Table IV is not in its scenario).

    python benchmarks/bench_claims_robustness.py [--scenario default.yaml|hydra-table4-chat.yaml] [--params a,b,...]
        [--joint N] [--cache FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import time
from pathlib import Path

from chipdse import api
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load_scenario
from chipdse.core.specs import file_sha256
from chipdse.runtime.parallel import Backend
from chipdse.studies.hydra.claims import CLAIMS, measure_table_iv, robustness_path
from chipdse.studies.hydra.generality import generality, simulate_table_iv
from chipdse.studies.hydra.params import params
from chipdse.studies.robustness import sweep_orderings, swept_parameters

BASE_SETS = ("simulation.datasets=[arxiv.yaml]", "simulation.candidates=0", "simulation.spread=0",
             "thermal.enabled=false")
"""The reduction every setting shares (one dataset, no fidelity page, no thermal stage)."""

DEFAULT_PARAMS = ("simulation.static_batch_timeout_s", "simulation.load", "simulation.warmup_s",
                  "simulation.min_completed", "package.hop_latency_ns")
"""The assumptions the simulated orderings read most directly: the protocol's knobs and the NoI hop. The offered
rate (``workload.arrival_rate_rps``) and the chiplets' sustained utilization (``library.compute.*.utilization``)
move B* and M_T themselves; ``--params`` adds them (about 5 CPU-minutes per setting)."""

TABLE4_SCENARIO = "hydra-table4-chat.yaml"
"""The bundled Table IV scenario (HYDRA Sec. VI-C: three models, Chat)."""

TABLE4_PARAMS = ("library.compute.Ad.utilization", "package.hop_latency_ns")
"""The assumptions Table IV reads most directly: the attention-decode chiplet's sustained utilization moves which
design the estimator picks per model, the NoI hop what the simulation measures (Table IV runs continuous batching,
so the static-batch timeout does not enter; the screen's hop count only with a fixed hop model; the Chat workload's
Poisson arrivals have no gamma_cv). One Table IV run is about 10 CPU-minutes; ``--params`` adds others (e.g.
``library.compute.Md.utilization``)."""


def _table_iv(sc_path: Path, sets: tuple[str, ...], workers: int) -> dict[str, float | None]:
    """Table IV's measured values (:func:`measure_table_iv`) of the scenario with ``sets``, simulated on one seed."""
    from chipdse.core.overrides import parse_overrides

    sc = load_scenario(sc_path, parse_overrides(list(sets)))
    r = generality(sc)
    sim = simulate_table_iv(sc, r, backend=Backend.processes(workers) if workers > 1 else Backend.in_process())
    return dict(measure_table_iv(sim.scores))


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="default.yaml", choices=["default.yaml", TABLE4_SCENARIO],
                    help="the bundled scenario to sweep (default: the default explore's)")
    ap.add_argument("--params", help="comma-separated register names to sweep (default: DEFAULT_PARAMS, or "
                    "TABLE4_PARAMS for the Table IV scenario)")
    ap.add_argument("--workers", type=int, default=2, help="simulation worker processes of the Table IV runs")
    ap.add_argument("--joint", type=int, default=1, help="joint draws of all swept parameters (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=Path("reports/out/robustness-cache.json"))
    ap.add_argument("--out", type=Path, help="default instances/robustness/hydra-default.json or "
                    "hydra-table4-chat.json")
    ap.add_argument("--reuse-cache", action="store_true", help="use a cached setting measured at another commit "
                    "(only when the simulator and the policy studies have not changed since; the output names the "
                    "commits its settings were measured at)")
    args = ap.parse_args()
    commit, t0, c0 = _commit(), time.time(), _cpu_s()
    cache: dict[str, dict[str, float | None]] = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    sc_path = instances_dir() / "scenarios" / args.scenario
    table4 = args.scenario == TABLE4_SCENARIO
    names = args.params.split(",") if args.params else (TABLE4_PARAMS if table4 else DEFAULT_PARAMS)
    swept = swept_parameters(params(), [p for p in names if p])
    out_path = args.out or robustness_path(sc_path.stem)
    base_sets = () if table4 else BASE_SETS

    measured_at: set[str] = set()

    def evaluate(sets: tuple[str, ...]) -> dict[str, float | None]:
        key = commit + " " + args.scenario + " " + " ".join(sets) if table4 else commit + " " + " ".join(sets)
        if key not in cache and args.reuse_cache:
            rest = key.split(" ", 1)[1:]
            key = next((k for k in cache if k.split(" ", 1)[1:] == rest), key)
        measured_at.add(key.split(" ", 1)[0])
        if key not in cache:
            t = time.time()
            if table4:
                measured = _table_iv(sc_path, sets, args.workers)
            else:
                run = api.explore(None, sets=[*BASE_SETS, *sets])
                assert run.result.claims is not None
                measured = dict(run.result.claims.measured)
            cache[key] = {k: (None if v is None else float(v)) for k, v in measured.items()}
            args.cache.parent.mkdir(parents=True, exist_ok=True)
            args.cache.write_text(json.dumps(cache, indent=1))
            print(f"{' '.join(sets) or '(defaults)'}: {time.time() - t:.0f} s", flush=True)
        return cache[key]

    defaults = evaluate(())
    rob = sweep_orderings(evaluate, CLAIMS, swept, joint=args.joint, seed=args.seed)
    wall, cpu = time.time() - t0, _cpu_s() - c0
    out = {"scenario": args.scenario, "scenario_sha256": file_sha256(sc_path),
           "commit": ", ".join(sorted(measured_at)),
           "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{os.uname().machine}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end",
           "reduction": list(base_sets) or ["Table IV simulated on one seed"],
           "swept": [{"name": p.name, "value": p.value, "low": p.low, "high": p.high}
                                                   for p in swept],
           "joint": args.joint, "seed": args.seed, "wall_s": round(wall), "cpu_s": round(cpu),
           "defaults": defaults, **rob.record()}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"| ordering | at the defaults ({'Table IV, 1 seed' if table4 else '1 dataset'}) | holds_share | flips_at |"
          "\n| --- | --- | --- | --- |")
    for c in CLAIMS:
        if c.kind == "ordering" and (not table4 or rob.orderings[c.key][0] is not None):
            share, flips = rob.orderings[c.key]
            v = defaults.get(c.of)
            at = "-" if v is None else f"{v:.3g} ({'holds' if c.holds(v) else 'does not hold'})"
            print(f"| {c.key} | {at} | {'-' if share is None else f'{share:.2f}'} | {flips or '-'} |")
    print(f"settings: {len(rob.settings)}; wall {wall:.0f} s, CPU {cpu:.0f} s (this process and its workers); "
          f"commit {commit}; wrote {out_path}")


if __name__ == "__main__":
    main()
