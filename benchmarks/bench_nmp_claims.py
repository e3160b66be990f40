"""NOVA's and SNAKE's claims against this run: both near-memory studies, every headline of issue 16 in one table each.

Runs the bundled NOVA scenario (``instances/scenarios/nova-nemotron3-nano.yaml``) and SNAKE scenario
(``instances/scenarios/snake-stratum.yaml``) with the code ``chipdse explore`` and the reports use, and prints
``render_text`` of :func:`chipdse.studies.nova.claims.measure` and :func:`chipdse.studies.snake.claims.measure`
(paper value, this run, ratio, and for rows off by more than 25% the parameter the paper does not give, the range
swept and where the paper's value falls). Wall and CPU seconds per study. The sweeps behind the notes print with
``benchmarks/bench_nova_claims.py`` (GPU efficiencies, in-die bandwidth); the SNAKE link-bandwidth sweep is part of
the SNAKE study itself.

Run: python benchmarks/bench_nmp_claims.py [--study nova|snake|all]
"""

from __future__ import annotations

import argparse
import os
import time

from chipdse.core.paths import instances_dir
from chipdse.studies.claims import claim_rows, render_text
from chipdse.studies.nova import claims as nova_claims
from chipdse.studies.nova import study as nova
from chipdse.studies.snake import claims as snake_claims
from chipdse.studies.snake import study as snake

SCENARIOS = {"nova": instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml",
             "snake": instances_dir() / "scenarios" / "snake-stratum.yaml"}


def _nova() -> tuple[str, str]:
    study = nova.run(nova.load(SCENARIOS["nova"]))
    measured, notes = nova_claims.measure(study)
    return render_text(claim_rows(measured, notes, claims=nova_claims.NOVA_CLAIMS), paper="NOVA"), ""


def _snake() -> tuple[str, str]:
    study = snake.run(snake.load(SCENARIOS["snake"]))
    measured, notes = snake_claims.measure(study)
    rows = claim_rows(measured, notes, claims=snake_claims.SNAKE_CLAIMS)
    return render_text(rows, paper="SNAKE"), snake_claims.context_line(study)


def main() -> None:
    """Run the chosen studies and print each claims table with its timing."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=("nova", "snake", "all"), default="all")
    args = parser.parse_args()
    for name, run in (("nova", _nova), ("snake", _snake)):
        if args.study not in (name, "all"):
            continue
        w0, c0 = time.perf_counter(), time.process_time()
        table, context = run()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        print(f"### {name.upper()} claims, {SCENARIOS[name].name}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
              f"load {os.getloadavg()[0]:.1f}\n")
        print(table)
        if context:
            print("\n" + context)
        print()


if __name__ == "__main__":
    main()
