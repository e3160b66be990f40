"""The explore report: a multi-page PDF (matplotlib PdfPages), the CSV of every point and a JSON manifest."""

from __future__ import annotations

import json
import math
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chipdse.explore import ExploreResult, FinalistResult, best_exact  # noqa: E402
from chipdse.io import atomic_path, write_text_atomic  # noqa: E402
from chipdse.solution import Solution  # noqa: E402

PACKAGES = ("chipdse", "pyomo", "highspy", "ortools", "numpy", "scipy", "pandas", "matplotlib", "pydantic")
TYPE_COLOURS = {"Ap": "#1f77b4", "Ad": "#aec7e8", "Mp": "#d62728", "Md": "#ff9896",
                "hbm:attention": "#2ca02c", "hbm:mamba": "#ff7f0e"}
PAGE = (11.0, 8.5)


def package_versions() -> dict[str, str]:
    """Return installed versions of chipdse and its solver / numeric stack."""
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v + 0.0:.{digits}g}"  # + 0.0 turns -0.0 into 0.0
    return str(v)


def _table_page(pdf: PdfPages, title: str, caption: str, blocks: list[tuple[str, list[str], list[list[str]]]]) -> None:
    fig = plt.figure(figsize=PAGE)
    fig.suptitle(title, fontsize=14, fontweight="bold", y=0.97)
    n = len(blocks)
    for i, (sub, cols, rows) in enumerate(blocks):
        ax = fig.add_axes((0.04, 0.1 + (n - 1 - i) * 0.83 / n, 0.92, 0.83 / n - 0.05))
        ax.axis("off")
        ax.set_title(sub, fontsize=10, loc="left")
        if rows:
            widths = [max(len(str(r[k])) for r in [cols, *rows]) + 2 for k in range(len(cols))]
            total = sum(widths)
            tb = ax.table(cellText=rows, colLabels=cols, loc="upper center", cellLoc="center",
                          colWidths=[w / total for w in widths])
            tb.auto_set_font_size(False)
            tb.set_fontsize(7.5)
            tb.scale(1, 1.25)
    fig.text(0.04, 0.03, caption, fontsize=8, wrap=True)
    pdf.savefig(fig)
    plt.close(fig)


def _title_page(pdf: PdfPages, r: ExploreResult) -> None:
    sc = r.scenario
    df = r.points
    fig = plt.figure(figsize=PAGE)
    fig.text(0.06, 0.9, "chipdse design report", fontsize=22, fontweight="bold")
    lines = [
        f"Scenario: {sc.spec.name}   ({sc.path})   sha256 {sc.sha256[:16]}",
        f"Model: {sc.model.name}: {sc.model.total_params / 1e9:.3f} B parameters "
        f"(published {sc.model.published_params / 1e9:.3f} B), {len(sc.model.blocks)} blocks",
        f"Workload: {sc.workload.name}, {len(sc.lengths.prefill_tokens):,} requests from {sc.lengths.source}; "
        f"mean prompt {sc.lengths.mean_prefill:.0f} tokens, mean output {sc.lengths.mean_decode:.0f} tokens; "
        f"{sc.workload.arrival} arrivals at {sc.workload.arrival_rate_rps:g} req/s",
        f"Package: {sc.package.name}, {sc.package.rows} x {sc.package.cols} grid, "
        f"{sc.package.interposer_area_mm2:.0f} mm^2 interposer; library {sc.library.name}",
        f"Design space: {len(df):,} buildable points, {int(df['stable'].sum()):,} stable at the offered load, "
        f"{int(df['pareto'].sum())} on the Pareto front",
        "Unbuildable: " + ("; ".join(r.infeasible_reasons) if r.infeasible_reasons else "none"),
        f"Solver settings: time limit {r.solver.time_limit_s:g} s per exact solve, relative gap {r.solver.rel_gap:g}, "
        f"{r.solver.threads} threads, seed {r.solver.seed}",
        f"Wall time: sweep {r.timings_s.get('sweep_s', 0):.1f} s, finalists {r.timings_s.get('finalists_s', 0):.1f} s",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in package_versions().items()),
        f"Python {platform.python_version()} on {platform.machine()}",
        "",
        "Throughput = sustainable output tokens/s (HYDRA Eq. 8, static prefill/decode split). TTFT = mean time to",
        "first token at the offered load (birth-death CTMC for batch slots + M/G/1 prefill queue + prefill latency).",
        "Points whose capacity is at or below the offered load are unstable and have no TTFT.",
    ]
    for i, line in enumerate(lines):
        fig.text(0.06, 0.82 - i * 0.045, line, fontsize=9)
    pdf.savefig(fig)
    plt.close(fig)


def _pareto_page(pdf: PdfPages, r: ExploreResult) -> None:
    df = r.points
    st = df[df["stable"]]
    fig, ax = plt.subplots(figsize=PAGE)
    ax.scatter(st["ttft_s"], st["throughput_tps"], s=3, c="#bbbbbb", label=f"stable points ({len(st):,})",
               rasterized=True)
    front = df[df["pareto"]].sort_values("ttft_s")
    ax.plot(front["ttft_s"], front["throughput_tps"], "o-", c="#1f77b4", ms=4,
            label=f"Pareto front ({len(front)})")
    for role, marker, colour in (("B*", "*", "#d62728"), ("M_T", "D", "#2ca02c")):
        sel = df[df["role"].str.contains(role, regex=False)]
        if not sel.empty:
            row = sel.iloc[0]
            ax.scatter([row["ttft_s"]], [row["throughput_tps"]], marker=marker, s=220, c=colour, zorder=5,
                       edgecolors="k", label=f"{role}: {row['label']}")
    ax.set_xscale("log")
    ax.set_xlabel("mean TTFT at the offered load (s, log scale)")
    ax.set_ylabel("throughput (output tokens/s)")
    ax.set_title("Pareto front: throughput vs TTFT (Markov/fluid estimator)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.text(0.04, 0.01, f"{len(df):,} points scored; {len(df) - len(st):,} unstable or infeasible points omitted. "
             "B* = best throughput/TTFT among stable points with above-average throughput; M_T = highest throughput.",
             fontsize=8)
    pdf.savefig(fig)
    plt.close(fig)


def _config_page(pdf: PdfPages, r: ExploreResult) -> None:
    types = r.scenario.compute_types()
    cols = ["role", *types, "HBM (attn/mamba)", "D2D GB/s", "max batch", "batch", "throughput tok/s",
            "TTFT s", "capacity req/s"]
    rows = []
    for f in r.finalists:
        row = f.row
        rows.append([f.role, *[str(int(row[t])) for t in types],
                     f"{int(row['n_hbm'])} ({int(row['hbm_attention'])}/{int(row['hbm_mamba'])})",
                     _fmt(row["d2d_GBps"]), str(int(row["max_batch"])), str(int(row["batch_eff"])),
                     _fmt(row["throughput_tps"]), _fmt(row["ttft_s"]), _fmt(row["capacity_rps"])])
    serve_cols = ["finalist", "layout", "placement objective (byte-hops/s)", "throughput tok/s", "TTFT s",
                  "prefill bottleneck ms", "decode step ms"]
    serve_rows = []
    for f in r.finalists:
        for s in f.serving:
            serve_rows.append([f.role, s["layout"], _fmt(s["placement_objective"]), _fmt(s["throughput_tps"]),
                               _fmt(s["ttft_s"]), _fmt(1e3 * s["prefill_bottleneck_s"]),
                               _fmt(1e3 * s["decode_step_s"])])
    _table_page(pdf, "Chosen configurations (B* and M_T)",
                "Top: the two configurations as scored by the sweep screen (fluid mapping, assumed mean hop count). "
                "Bottom: the same configurations re-scored with real layouts: placement and bottleneck mapping "
                "(HYDRA Eqs. 2-5) solved exactly vs with HYDRA's greedy and round-robin baselines.",
                [("Configurations", cols, rows),
                 ("Serving with each layout (estimator re-score)", serve_cols, serve_rows)])


def _draw_floorplan(ax: plt.Axes, r: ExploreResult, sol: Solution, title: str) -> None:
    pkg = r.scenario.package
    ax.set_xlim(0, pkg.cols)
    ax.set_ylim(pkg.rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks(range(pkg.cols + 1))
    ax.set_yticks(range(pkg.rows + 1))
    ax.tick_params(labelsize=6)
    for cell in range(pkg.n_cells):
        rr, cc = divmod(cell, pkg.cols)
        ty = (sol.decision or {}).get(cell)
        colour = TYPE_COLOURS.get(ty, "#cccccc") if ty else "white"
        ax.add_patch(Rectangle((cc, rr), 1, 1, facecolor=colour, edgecolor="k", lw=0.8))
        if ty:
            ax.text(cc + 0.5, rr + 0.5, ty.replace("hbm:attention", "HBM\nattn").replace("hbm:mamba", "HBM\nmamba"),
                    ha="center", va="center", fontsize=7)
    gap = "" if sol.gap is None else f", gap {100 * sol.gap:.2f}%"
    ax.set_title(f"{title}\n{sol.method}: {_fmt(sol.objective)} byte-hops/s{gap}", fontsize=8)


def _floorplan_page(pdf: PdfPages, r: ExploreResult) -> None:
    fig, axes = plt.subplots(len(r.finalists), 3, figsize=PAGE)
    for i, f in enumerate(r.finalists):
        by = {s.method: s for s in f.placement}
        panels = [(best_exact(f.placement), "exact optimum"), (by.get("hydra-greedy"), "HYDRA two-stage greedy"),
                  (by.get("round-robin"), "round-robin")]
        for j, (sol, name) in enumerate(panels):
            ax = axes[i][j]
            if sol is None or sol.decision is None:
                ax.axis("off")
                ax.set_title(f"{f.role}: {name}: no solution", fontsize=8)
                continue
            _draw_floorplan(ax, r, sol, f"{f.role}: {name}")
    fig.suptitle("Floorplans: exact placement beside HYDRA's greedy and round-robin (cell = one chiplet slot)",
                 fontsize=11)
    fig.text(0.02, 0.01, "Objective: sum over chiplet pairs of traffic (bytes/s at the design's capacity) x Manhattan "
             "hops (HYDRA Eq. 2 plus compute-to-compute traffic). HBM stacks sit on ring cells.", fontsize=8)
    pdf.savefig(fig)
    plt.close(fig)


def _solution_rows(sols: list[Solution]) -> list[list[str]]:
    """Rows: method, exact, objective, best bound, own gap %, worse than best known %, gap to best bound %,
    status, wall s. 'Best known' is the best objective of any method; 'best bound' the tightest proven bound."""
    if not sols:
        return []
    sense = sols[0].sense
    found = [s.objective for s in sols if s.objective is not None]
    best = (min(found) if sense == "min" else max(found)) if found else None
    bounds = [s.bound for s in sols if s.exact and s.bound is not None]
    bound = (max(bounds) if sense == "min" else min(bounds)) if bounds else None
    rows = []
    for s in sols:
        row = s.row(bound)
        worse = None
        if best is not None and s.objective is not None and best:
            worse = (s.objective - best) / abs(best) * (1 if sense == "min" else -1)
        rows.append([row["method"], _fmt(row["exact"]), _fmt(row["objective"]), _fmt(row["bound"]),
                     _fmt(None if row["gap"] is None else 100 * row["gap"], 3),
                     _fmt(None if worse is None else 100 * worse, 3),
                     _fmt(None if row["gap_to_best_bound"] is None else 100 * row["gap_to_best_bound"], 3),
                     row["status"], _fmt(row["wall_s"], 3)])
    return rows


def _compare_page(pdf: PdfPages, f: FinalistResult) -> None:
    cols = ["method", "exact", "objective", "own bound", "own gap %", "worse than best %", "gap to best bound %",
            "status", "wall s"]
    _table_page(pdf, f"Exact vs heuristic: {f.role} ({f.row['label']})",
                "Placement objective: byte-hops/s (minimize). HBM partition: min(r_M, r_A) concurrent requests "
                "(HYDRA Eq. 1, maximize). Mapping: decode bottleneck stage time in s (HYDRA Eq. 5, minimize) on the "
                "exact placement. 'worse than best' is relative to the best objective any method found; 'gap to best "
                "bound' is |objective - tightest proven bound| / objective, so a heuristic's loss is at most that "
                "much; 0 on an exact method means proven optimal.",
                [("Placement (HYDRA Eq. 2 + chiplet-to-chiplet traffic)", cols, _solution_rows(f.placement)),
                 ("HBM partition (HYDRA Eq. 1)", cols, _solution_rows(f.hbm)),
                 ("Decode pipeline mapping (HYDRA Eq. 5)", cols, _solution_rows(f.mapping))])


def manifest(r: ExploreResult) -> dict[str, Any]:
    """Return the run manifest: scenario hash, seed, package versions, solver settings, counts and timings."""
    sc = r.scenario
    return {
        "scenario": sc.spec.name, "scenario_path": str(sc.path), "scenario_sha256": sc.sha256,
        "model": sc.model.key, "workload": sc.workload.name, "seed": r.solver.seed,
        "solver": r.solver.model_dump(), "versions": package_versions(),
        "points": len(r.points), "stable": int(r.points["stable"].sum()),
        "pareto": int(r.points["pareto"].sum()), "infeasible_reasons": r.infeasible_reasons,
        "finalists": {f.role: f.row["label"] for f in r.finalists}, "timings_s": r.timings_s,
    }


def write_report(r: ExploreResult, out_dir: Path) -> dict[str, Path]:
    """Write ``report.pdf``, ``points.csv`` and ``manifest.json`` into ``out_dir`` (each atomically).

    Returns
    -------
    dict[str, Path]
        The written files by kind.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"pdf": out_dir / "report.pdf", "csv": out_dir / "points.csv", "manifest": out_dir / "manifest.json"}
    with atomic_path(paths["csv"]) as tmp:
        r.points.to_csv(tmp, index=False)
    with atomic_path(paths["pdf"]) as tmp, PdfPages(tmp) as pdf:
        _title_page(pdf, r)
        _pareto_page(pdf, r)
        _config_page(pdf, r)
        _floorplan_page(pdf, r)
        for f in r.finalists:
            _compare_page(pdf, f)
    write_text_atomic(paths["manifest"], json.dumps(manifest(r), indent=2, default=str))
    return paths
