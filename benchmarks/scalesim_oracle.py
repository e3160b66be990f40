"""Run SCALE-Sim v3 on random GEMM cases and record its compute cycles as a test fixture.

Run with the separate SCALE-Sim venv (``scalesim`` 3.0.0 needs ``numpy<2.4``)::

    python3 -m venv /tmp/scalesim-venv
    /tmp/scalesim-venv/bin/pip install scalesim 'numpy<2.4'
    /tmp/scalesim-venv/bin/python benchmarks/scalesim_oracle.py            # writes tests/data/scalesim_cycles.json
    /tmp/scalesim-venv/bin/python benchmarks/scalesim_oracle.py --n-cases 8 --out /tmp/x.json

How a GEMM ``C[m x n] = A[m x k] B[k x n]`` is given to SCALE-Sim: GEMM mode (``input_type_gemm=True``), one
topology row ``name, M, N, K,`` with ``M = m``, ``N = n``, ``K = k`` (note SCALE-Sim's column order M, N, K).
SCALE-Sim turns it into a 1x1-filter convolution: ifmap operand matrix ``m x k``, filter operand matrix
``k x n``, ofmap ``m x n``, for every dataflow; the dataflow only changes which operand stays in the array.

Recorded per case: the compute report's ``Total Cycles`` (``single_layer_sim.total_cycles``, the last OFMAP
write cycle of the memory simulation, stalls included), ``Stall Cycles``, their difference (the compute
cycles without memory stalls, the quantity :func:`evaluators.systolic.compute_cycles` matches), the number of
rows of the compute system's demand matrices (one row per array cycle) and the wall time of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "data" / "scalesim_cycles.json"

# Everything in the config except the array shape and the dataflow. Large SRAMs and wide backing buffers
# so the memory system does not stall; the fixture checks stall_cycles anyway and subtracts it.
CONFIG_TEMPLATE = """[general]
run_name = chipdse_oracle

[architecture_presets]
ArrayHeight : {rows}
ArrayWidth : {cols}
IfmapSramSzkB : 8192
FilterSramSzkB : 8192
OfmapSramSzkB : 8192
IfmapOffset : 0
FilterOffset : 10000000
OfmapOffset : 20000000
Bandwidth : 1024
Dataflow : {dataflow}
ReadRequestBuffer : 32
WriteRequestBuffer : 32

[layout]
IfmapCustomLayout : False
IfmapSRAMBankBandwidth : 1024
IfmapSRAMBankNum : 1
IfmapSRAMBankPort : 2
FilterCustomLayout : False
FilterSRAMBankBandwidth : 1024
FilterSRAMBankNum : 1
FilterSRAMBankPort : 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth : USER
UseRamulatorTrace : False
"""

ARRAY_SHAPES = [(8, 512), (16, 256), (32, 128), (64, 64), (48, 48), (8, 288), (4, 4), (8, 8), (4, 16), (16, 4)]
DATAFLOWS = ["os", "ws", "is"]
# Hand-picked edges appended to the random draw: 1x1x1, exactly one full fold, one element over a fold.
EDGE_CASES = [
    {"m": m, "k": k, "n": n, "rows": r, "cols": c, "dataflow": df}
    for (m, k, n, r, c) in [(1, 1, 1, 4, 4), (64, 64, 64, 64, 64), (9, 17, 9, 8, 8)]
    for df in DATAFLOWS
]
MAX_CYCLES = 15_000  # keeps each SCALE-Sim run to a few seconds
MAX_WORK = 2_500_000
M_CHOICES = [1, 2, 3, 5, 8, 13, 16, 31, 64, 100]
KN_CHOICES = [1, 7, 16, 33, 64, 100, 128, 200, 256, 300, 512]


def run_scalesim(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> dict:
    """Run SCALE-Sim once for ``C[m x n] = A[m x k] B[k x n]`` on a ``rows x cols`` array.

    Parameters
    ----------
    m, k, n : int
        GEMM dimensions.
    rows, cols : int
        Array height and width in PEs.
    dataflow : str
        ``"os"``, ``"ws"`` or ``"is"``.

    Returns
    -------
    dict
        ``total_cycles``, ``stall_cycles``, ``compute_cycles`` (= total - stall), ``overall_cycles`` (compute
        report's "Total Cycles (incl. prefetch)"), ``demand_rows`` and ``wall_s``.
    """
    from scalesim.scale_sim import scalesim

    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "oracle.cfg"
        cfg.write_text(CONFIG_TEMPLATE.format(rows=rows, cols=cols, dataflow=dataflow))
        topo = Path(tmp) / "gemm.csv"
        topo.write_text(f"Layer, M, N, K,\ngemm, {m}, {n}, {k},\n")
        layout = Path(tmp) / "layout.csv"
        layout.write_text("Layer,\n")
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            sim = scalesim(
                save_disk_space=True,
                verbose=False,
                config=str(cfg),
                topology=str(topo),
                layout=str(layout),
                input_type_gemm=True,
            )
            sim.run_scale(top_path=str(Path(tmp) / "out"))
        wall_s = time.perf_counter() - t0
        layer = sim.runner.single_layer_sim_object_list[0]
        overall, total, stall = (int(x) for x in layer.get_compute_report_items()[:3])
        demand_rows = int(layer.compute_system.get_ofmap_demand_mat().shape[0])
    return {
        "total_cycles": total,
        "stall_cycles": stall,
        "compute_cycles": total - stall,
        "overall_cycles": overall,
        "demand_rows": demand_rows,
        "wall_s": round(wall_s, 4),
    }


def _cost(case: dict) -> tuple[int, int]:
    """Return a rough SCALE-Sim cost of a case: (array cycles, array cycles x (rows + cols)).

    Cycles here are a loose upper estimate (folds times the longest per-fold time); it only filters out cases
    that would take SCALE-Sim more than a few seconds (it simulates one demand-matrix row per cycle).
    """
    m, k, n, r, c = case["m"], case["k"], case["n"], case["rows"], case["cols"]
    folds = max(-(-m // r) * -(-n // c), -(-k // r) * -(-n // c), -(-k // r) * -(-m // c))
    cycles = folds * (2 * r + c + max(m, k, n))
    return cycles, cycles * (r + c)


def make_cases(n_cases: int, seed: int) -> list[dict]:
    """Draw ``n_cases`` distinct (GEMM, array, dataflow) cases with a fixed ``seed``, each a few seconds at most."""
    rng = random.Random(seed)
    cases: list[dict] = []
    seen: set[tuple] = set()
    while len(cases) < n_cases:
        rows, cols = rng.choice(ARRAY_SHAPES)
        case = {
            "m": rng.choice(M_CHOICES),
            "k": rng.choice(KN_CHOICES),
            "n": rng.choice(KN_CHOICES),
            "rows": rows,
            "cols": cols,
            "dataflow": DATAFLOWS[len(cases) % 3],
        }
        key = tuple(case.values())
        cycles, work = _cost(case)
        if key not in seen and cycles <= MAX_CYCLES and work <= MAX_WORK:
            seen.add(key)
            cases.append(case)
    return cases


def main() -> None:
    """Parse arguments, run the cases and write the fixture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-cases", type=int, default=60)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    cases = make_cases(args.n_cases, args.seed) + EDGE_CASES
    results = []
    for i, case in enumerate(cases):
        res = run_scalesim(**case)
        results.append({**case, **res})
        print(f"[{i + 1}/{len(cases)}] {case} -> {res}", file=sys.stderr)

    import numpy

    doc = {
        "description": "SCALE-Sim v3 compute cycles (compute report Total Cycles minus Stall Cycles) for GEMMs "
        "C[m x n] = A[m x k] B[k x n] given in GEMM mode as topology row 'name, M=m, N=n, K=k'; produced by "
        "benchmarks/scalesim_oracle.py",
        "scalesim_version": metadata.version("scalesim"),
        "numpy_version": numpy.__version__,
        "python_version": platform.python_version(),
        "seed": args.seed,
        "config_template": CONFIG_TEMPLATE,
        "topology_format": "Layer, M, N, K,\\ngemm, {m}, {n}, {k},",
        "input_type_gemm": True,
        "cases": results,
    }
    os.makedirs(args.out.parent, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(results)} cases to {args.out}")


if __name__ == "__main__":
    main()
