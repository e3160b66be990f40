"""The HYDRA explore report's pages (matplotlib PdfPages), its CSV (every scored point) and its manifest details;
written by :func:`chipdse.reports.files.write_report`."""

from __future__ import annotations

import platform
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chipdse.core.solution import Solution  # noqa: E402
from chipdse.reports import sim_pages
from chipdse.reports.files import package_versions, strict_json
from chipdse.reports.generality_page import generality_pages
from chipdse.reports.style import PAGE, caption, fmt, table_page
from chipdse.studies.explore import ExploreResult, FinalistResult, best_exact  # noqa: E402

TYPE_COLOURS = {"Ap": "#1f77b4", "Ad": "#aec7e8", "Mp": "#d62728", "Md": "#ff9896",
                "hbm:attention": "#2ca02c", "hbm:mamba": "#ff7f0e"}

CSV = ("points.csv", "points")
"""The report's CSV: its file name and the result's table (every scored design point)."""


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
        f"Solver settings: {r.solver.limits_text()} per exact solve, relative gap {r.solver.rel_gap:g}, "
        f"{r.solver.threads} threads, seed {r.solver.seed}",
        f"Wall time: sweep {r.timings_s.get('sweep_s', 0):.1f} s, finalists {r.timings_s.get('finalists_s', 0):.1f} s",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in package_versions().items()),
        f"Python {platform.python_version()} on {platform.machine()}",
        "",
        *_key_results(r),
        "",
        "Throughput = sustainable output tokens/s (HYDRA Eq. 8, static prefill/decode split). TTFT = mean time to",
        "first token at the offered load (birth-death CTMC for batch slots + M/G/1 prefill queue + prefill latency).",
        "Points whose capacity is at or below the offered load are unstable and have no TTFT.",
    ]
    step = min(0.04, 0.8 / max(len(lines), 1))
    for i, line in enumerate(lines):
        fig.text(0.06, 0.84 - i * step, line, fontsize=8.5)
    pdf.savefig(fig)
    plt.close(fig)


def _key_results(r: ExploreResult) -> list[str]:
    """Headline lines: each finalist's screen numbers, its re-scored layouts, and the placement proof status."""
    lines = ["Key results:"]
    for f in r.finalists:
        lines.append(f"  {f.role} = {f.row['label']}: screen {f.row['throughput_tps']:.1f} tok/s, "
                     f"TTFT {f.row['ttft_s']:.3f} s")
        for s in f.serving:
            ttft = f"TTFT {s['ttft_s']:.3f} s" if s["stable"] else "unstable at the offered load"
            lines.append(f"      {s['layout']}: {s['throughput_tps']:.1f} tok/s, {ttft}")
        best = best_exact(f.placement)
        if best is not None:
            proof = ("proven optimal" if best.status.value == "optimal"
                     else f"gap {100 * (best.gap or 0):.2g}% to the proven bound")
            lines.append(f"      placement {best.method}: {best.objective:.4g} byte-hops/s ({proof})")
    return lines


def _pareto_page(pdf: PdfPages, r: ExploreResult) -> None:
    df = r.points
    st = df[df["stable"]]
    fig, ax = plt.subplots(figsize=PAGE)
    ax.scatter(st["ttft_s"], st["throughput_tps"], s=3, c="#bbbbbb", label=f"stable points ({len(st):,})",
               rasterized=True)
    front = df[df["pareto"]].sort_values("ttft_s")
    distinct = len(front.drop_duplicates(["ttft_s", "throughput_tps"]))
    for role, marker, colour in (("B*", "*", "#d62728"), ("M_T", "D", "#2ca02c")):
        sel = df[df["role"].str.contains(role, regex=False)]
        if not sel.empty:
            row = sel.iloc[0]
            ax.scatter([row["ttft_s"]], [row["throughput_tps"]], marker=marker, s=160, c=colour, zorder=3,
                       edgecolors="k", label=f"{role}: {row['label']}")
    ax.plot(front["ttft_s"], front["throughput_tps"], "o-", c="#1f77b4", ms=4, zorder=4,
            label=f"Pareto front ({len(front)} points, {distinct} distinct)")
    ax.set_xscale("log")
    ax.set_xlabel("mean TTFT at the offered load (s, log scale)")
    ax.set_ylabel("throughput (output tokens/s)")
    ax.set_title("Pareto front: throughput vs TTFT (Markov/fluid estimator)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, markerscale=0.7, framealpha=0.95)
    caption(fig, f"{len(df):,} points scored; {len(df) - len(st):,} unstable or infeasible points omitted. "
             "B* = best throughput/TTFT among stable points with above-average throughput; M_T = highest "
             "throughput. Several compositions can share one (TTFT, throughput) point.", y=0.01)
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
                     f"{row['d2d_GBps']:.0f}", str(int(row["max_batch"])), str(int(row["batch_eff"])),
                     f"{row['throughput_tps']:.1f}", f"{row['ttft_s']:.3f}", f"{row['capacity_rps']:.3f}"])
    serve_cols = ["finalist", "layout", "placement (byte-hops/s)", "throughput tok/s", "TTFT s",
                  "prefill bottleneck ms", "decode step ms"]
    serve_rows = []
    for f in r.finalists:
        for s in f.serving:
            serve_rows.append([f.role, s["layout"], f"{s['placement_objective']:.3e}", f"{s['throughput_tps']:.1f}",
                               f"{s['ttft_s']:.3f}" if s["stable"] else "unstable",
                               f"{1e3 * s['prefill_bottleneck_s']:.1f}", f"{1e3 * s['decode_step_s']:.2f}"])
    table_page(pdf, "Chosen configurations (B* and M_T)",
                "Top: the two configurations as scored by the sweep screen (fluid mapping, assumed mean hop count). "
                "Bottom: the same configurations re-scored with real layouts: placement and bottleneck mapping "
                "(HYDRA Eqs. 2-5) solved with MILP/CP-SAT (best of both, within the work limit; gaps on the next "
                "pages) "
                "vs with HYDRA's greedy and round-robin baselines. 'unstable': the layout's capacity is at or below "
                "the offered load, so TTFT grows without bound; its throughput is the capacity.",
                [("Configurations", cols, rows),
                 ("Serving with each layout (estimator re-score)", serve_cols, serve_rows)])


def _draw_floorplan(ax: plt.Axes, r: ExploreResult, sol: Solution, title: str) -> None:
    pkg = r.scenario.package
    ax.set_xlim(0, pkg.cols)
    ax.set_ylim(pkg.rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([c + 0.5 for c in range(pkg.cols)], [str(c) for c in range(pkg.cols)])
    ax.set_yticks([r + 0.5 for r in range(pkg.rows)], [str(r) for r in range(pkg.rows)])
    ax.tick_params(labelsize=6, length=0)
    ax.set_xlabel("column", fontsize=7)
    ax.set_ylabel("row", fontsize=7)
    for cell in range(pkg.n_cells):
        rr, cc = divmod(cell, pkg.cols)
        ty = (sol.decision or {}).get(cell)
        colour = TYPE_COLOURS.get(ty, "#cccccc") if ty else "white"
        ax.add_patch(Rectangle((cc, rr), 1, 1, facecolor=colour, edgecolor="k", lw=0.8))
        if ty:
            ax.text(cc + 0.5, rr + 0.5, ty.replace("hbm:attention", "HBM\nattn").replace("hbm:mamba", "HBM\nmamba"),
                    ha="center", va="center", fontsize=7)
    if not sol.exact:
        proof = ""
    elif sol.status.value == "optimal":
        proof = ", proven optimal"
    else:
        proof = f", gap {100 * (sol.gap or 0):.2g}% to its bound"
    ax.set_title(f"{title}\n{sol.method}: {sol.objective:.3e} byte-hops/s{proof}", fontsize=8)


def _floorplan_page(pdf: PdfPages, r: ExploreResult) -> None:
    fig, axes = plt.subplots(len(r.finalists), 3, figsize=PAGE, squeeze=False)
    for i, f in enumerate(r.finalists):
        by = {s.method: s for s in f.placement}
        panels = [(best_exact(f.placement), "best exact"), (by.get("hydra-greedy"), "HYDRA two-stage greedy"),
                  (by.get("round-robin"), "round-robin")]
        for j, (sol, name) in enumerate(panels):
            ax = axes[i][j]
            if sol is None or sol.decision is None:
                ax.axis("off")
                ax.set_title(f"{f.role}: {name}: no solution", fontsize=8)
                continue
            _draw_floorplan(ax, r, sol, f"{f.role}: {name}")
    fig.suptitle("Floorplans: best exact placement beside HYDRA's greedy and round-robin (cell = one chiplet slot)",
                 fontsize=11)
    caption(fig, "Objective: sum over chiplet pairs of traffic (bytes/s at the design's capacity) x Manhattan hops "
             "(HYDRA Eq. 2 plus compute-to-compute traffic). HBM stacks sit on ring cells; a white cell is an unused "
             "slot (24 chiplets on 25 cells). 'best exact' is the better of MILP and CP-SAT.", y=0.01)
    pdf.savefig(fig)
    plt.close(fig)


_LIMITS = {"work_limit": "work limit", "time_limit": "wall cap"}
"""Status suffix naming the limit that ended a solve (TerminationCondition values)."""


def _solution_rows(sols: list[Solution], scale: float = 1.0) -> list[list[str]]:
    """One table row per method (values multiplied by ``scale`` for display).

    Columns: method, exact, objective, own bound, MILP gap % (|objective - own bound| / |objective|, as solvers
    report it), worse than best known % ((objective - best objective of any method) / best), and
    at most worse than optimum % ((objective - tightest proven bound) / bound: the optimum lies between the
    bound and the best known objective, so this is an upper limit on the method's loss), status, wall s.
    """
    if not sols:
        return []
    sign = 1 if sols[0].sense == "min" else -1
    found = [s.objective for s in sols if s.objective is not None]
    best = min(found, key=lambda v: sign * v) if found else None
    bounds = [s.bound for s in sols if s.exact and s.bound is not None]
    bound = max(bounds, key=lambda v: sign * v) if bounds else None
    rows = []
    for s in sols:
        worse = None if best is None or s.objective is None or not best else sign * (s.objective - best) / abs(best)
        loss = None if bound is None or s.objective is None or not bound else sign * (s.objective - bound) / abs(bound)
        limit = _LIMITS.get(s.termination.value)
        status = f"{s.status.value} ({limit})" if limit else s.status.value
        rows.append([s.method, fmt(s.exact), fmt(None if s.objective is None else s.objective * scale),
                     fmt(None if s.bound is None else s.bound * scale),
                     fmt(None if s.gap is None else 100 * s.gap, 3), fmt(None if worse is None else 100 * worse, 3),
                     fmt(None if loss is None else 100 * loss, 3), status, f"{s.wall_s:.2f}"])
    return rows


def _compare_page(pdf: PdfPages, f: FinalistResult) -> None:
    cols = ["method", "exact", "objective", "own bound", "MILP gap %", "worse than best known %",
            "at most worse than optimum %", "status", "wall s"]
    table_page(pdf, f"Exact vs heuristic: {f.role} ({f.row['label']})",
                "Worse than best known: relative to the best objective any method found. At most worse than optimum: "
                "relative to the tightest proven bound, so it caps the method's loss against the true optimum. "
                "MILP gap: the method's own |objective - bound| / objective; 0 means proven optimal. Exact methods "
                "are warm-started from the best heuristic and stop at the work limit with their incumbent and bound.",
                [("Placement: byte-hops/s, minimize (HYDRA Eq. 2 + chiplet-to-chiplet traffic)", cols,
                  _solution_rows(f.placement)),
                 ("HBM partition: min(r_M, r_A) concurrent requests, maximize (HYDRA Eq. 1)", cols,
                  _solution_rows(f.hbm)),
                 ("Decode pipeline mapping on the best exact placement: bottleneck stage time in ms, minimize "
                  "(HYDRA Eq. 5)", cols, _solution_rows(f.mapping, scale=1e3))])


def details(r: ExploreResult) -> dict[str, Any]:
    """The manifest's HYDRA part: model, workload, unbuildable reasons, finalists, simulation and Table IV."""
    sc = r.scenario
    return {
        "model": sc.model.key, "workload": sc.workload.name, "infeasible_reasons": r.infeasible_reasons,
        "finalists": {f.role: f.row["label"] for f in r.finalists},
        "simulation": None if r.simulation is None else {
            "fidelity": r.simulation.metrics, "policy_gains": sim_pages.policy_gains(r.simulation.policies),
            "layouts": strict_json(r.simulation.layouts.to_dict("records")),
            "skipped": r.simulation.skipped},
        "generality": None if r.generality is None else r.generality.to_json(),
    }


def draw(pdf: PdfPages, r: ExploreResult) -> None:
    """Draw every page of the HYDRA report into ``pdf``."""
    _title_page(pdf, r)
    _pareto_page(pdf, r)
    _config_page(pdf, r)
    _floorplan_page(pdf, r)
    for f in r.finalists:
        _compare_page(pdf, f)
    if r.simulation is not None:
        b_star = r.finalists[0].row["label"]
        if r.simulation.metrics:
            sim_pages.fidelity_page(pdf, r.simulation, r.scenario.spec.name)
        sim_pages.layout_page(pdf, r.simulation, b_star)
        sim_pages.noi_page(pdf, r.simulation, r.scenario.package.rows, r.scenario.package.cols, b_star)
        sim_pages.policy_page(pdf, r.simulation, b_star, r.scenario.spec.simulation.load)
    if r.generality is not None:
        generality_pages(pdf, r.generality)
