"""SNAKE decode speedups per model and batch vs the MAC tree, 48x48 and 8x288 baselines, next to the paper's.

Run with the project venv (needs ``../shared/models``)::

    /tmp/venv/bin/python benchmarks/bench_snake.py [--cores 64] [--lm-head]

Compute cycles only (``evaluators.snake``): no memory stalls, no operator overlap, no all-reduce or other
multi-PU collective costs, no attention score/context products. The averages are arithmetic means over models
and batches; the paper's are averages over models of end-to-end decode runs (SNAKE Sec. 6.3, Fig. 12).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chipdse.evaluators.snake import BASELINES, PAPER_MODELS, load_card, speedups  # noqa: E402

BATCHES = (8, 16, 32, 64)
#: SNAKE Sec. 6.3: average decode speedup of SNAKE over each baseline.
PAPER = {"mac_tree": 2.90, "sa48x48": 2.33, "sa8x288": 3.00}


def build_table(cores: int, lm_head: bool) -> dict[tuple[str, int], dict[str, float]]:
    """Return ``{(model, batch): {baseline: speedup}}`` for the paper's models and batches."""
    cards = {m: load_card(m) for m in PAPER_MODELS}
    return {(m, b): speedups(cards[m], b, cores=cores, lm_head=lm_head) for m in PAPER_MODELS for b in BATCHES}


def main() -> None:
    """Compute and print the speedup table and the averages against the paper."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=64, help="cores per device sharing each GEMM along N")
    parser.add_argument("--lm-head", action="store_true", help="include the LM head GEMM")
    args = parser.parse_args()

    t0 = time.perf_counter()
    table = build_table(args.cores, args.lm_head)
    dt = time.perf_counter() - t0
    names = [d.name for d in BASELINES]
    print(f"SNAKE speedup (baseline latency / SNAKE latency), TP=8, cores/device={args.cores}, lm_head={args.lm_head}")
    print(f"{'model':<16}{'batch':>6}" + "".join(f"{n:>11}" for n in names))
    for (model, batch), row in table.items():
        print(f"{model:<16}{batch:>6}" + "".join(f"{row[n]:>11.2f}" for n in names))
    mean = {n: float(np.mean([row[n] for row in table.values()])) for n in names}
    print(f"{'mean (ours)':<22}" + "".join(f"{mean[n]:>11.2f}" for n in names))
    print(f"{'paper (Sec. 6.3)':<22}" + "".join(f"{PAPER[n]:>11.2f}" for n in names))
    print(f"({len(table)} model-batch points in {dt:.2f} s)")


if __name__ == "__main__":
    main()
