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

    python benchmarks/bench_claims_robustness.py [--params a,b,...] [--joint N] [--cache FILE] [--out FILE]
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
from chipdse.core.specs import file_sha256
from chipdse.studies.hydra.claims import CLAIMS
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
    ap.add_argument("--params", default=",".join(DEFAULT_PARAMS), help="comma-separated register names to sweep")
    ap.add_argument("--joint", type=int, default=1, help="joint draws of all swept parameters (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=Path("reports/out/robustness-cache.json"))
    ap.add_argument("--out", type=Path, default=instances_dir() / "robustness" / "hydra-default.json")
    ap.add_argument("--reuse-cache", action="store_true", help="use a cached setting measured at another commit "
                    "(only when the simulator and the policy studies have not changed since; the output names the "
                    "commits its settings were measured at)")
    args = ap.parse_args()
    commit, t0, c0 = _commit(), time.time(), _cpu_s()
    cache: dict[str, dict[str, float | None]] = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    swept = swept_parameters(params(), [p for p in args.params.split(",") if p])

    measured_at: set[str] = set()

    def evaluate(sets: tuple[str, ...]) -> dict[str, float | None]:
        key = commit + " " + " ".join(sets)
        if key not in cache and args.reuse_cache:
            key = next((k for k in cache if k.split(" ", 1)[1:] == [" ".join(sets)]), key)
        measured_at.add(key.split(" ", 1)[0])
        if key not in cache:
            t = time.time()
            run = api.explore(None, sets=[*BASE_SETS, *sets])
            assert run.result.claims is not None
            cache[key] = {k: (None if v is None else float(v)) for k, v in run.result.claims.measured.items()}
            args.cache.parent.mkdir(parents=True, exist_ok=True)
            args.cache.write_text(json.dumps(cache, indent=1))
            print(f"{' '.join(sets) or '(defaults)'}: {time.time() - t:.0f} s", flush=True)
        return cache[key]

    defaults = evaluate(())
    rob = sweep_orderings(evaluate, CLAIMS, swept, joint=args.joint, seed=args.seed)
    wall, cpu = time.time() - t0, _cpu_s() - c0
    default_sc = instances_dir() / "scenarios" / "default.yaml"
    out = {"scenario": "default.yaml", "scenario_sha256": file_sha256(default_sc),
           "commit": ", ".join(sorted(measured_at)),
           "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{os.uname().machine}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end",
           "reduction": list(BASE_SETS), "swept": [{"name": p.name, "value": p.value, "low": p.low, "high": p.high}
                                                   for p in swept],
           "joint": args.joint, "seed": args.seed, "wall_s": round(wall), "cpu_s": round(cpu),
           "defaults": defaults, **rob.record()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print("| ordering | at the defaults (1 dataset) | holds_share | flips_at |\n| --- | --- | --- | --- |")
    for c in CLAIMS:
        if c.kind == "ordering":
            share, flips = rob.orderings[c.key]
            v = defaults.get(c.of)
            at = "-" if v is None else f"{v:.3g} ({'holds' if c.holds(v) else 'does not hold'})"
            print(f"| {c.key} | {at} | {'-' if share is None else f'{share:.2f}'} | {flips or '-'} |")
    print(f"settings: {len(rob.settings)}; wall {wall:.0f} s, CPU {cpu:.0f} s (this process and its workers); "
          f"commit {commit}; wrote {args.out}")


if __name__ == "__main__":
    main()
