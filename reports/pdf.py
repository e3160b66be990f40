"""The HYDRA explore report's pages (matplotlib PdfPages), its CSV (every scored point) and its manifest details;
written by :func:`chipdse.reports.files.write_report`."""

from __future__ import annotations

import platform
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from chipdse.core.io import strict_json  # noqa: E402
from chipdse.core.solution import (  # noqa: E402
    EXCESS_OVER_BEST,
    EXCESS_OVER_BOUND,
    PROVEN_GAP,
    Solution,
    SolutionStatus,
    excess,
)
from chipdse.reports import claims_page, cost_page, energy_pages, sim_pages, thermal_pages  # noqa: E402
from chipdse.reports.files import package_versions  # noqa: E402
from chipdse.reports.generality_page import generality_pages  # noqa: E402
from chipdse.reports.style import (  # noqa: E402
    EXACT_LAYOUT,
    PAGE,
    PEAK,
    POWER,
    ROLE_STYLE,
    SCREEN,
    SIMULATED,
    TP,
    TPJ,
    TTFT,
    caption,
    fmt,
    glossary_pages,
    quantity,
    table_page,
    text_pages,
)
from chipdse.studies.hydra.artifacts import (  # noqa: E402
    FIDELITY_THRESHOLDS,
    ExploreResult,
    FinalistResult,
    LayoutKind,
)


def best_exact(solutions: list[Solution]) -> Solution | None:
    """The exact solution with the best objective among ``solutions`` (what the stages used), if any."""
    exact = [s for s in solutions if s.exact and s.objective is not None]
    if not exact:
        return None
    sign = 1 if exact[0].sense == "min" else -1
    return min(exact, key=lambda s: sign * s.objective)


TYPE_COLOURS = {"Ap": "#1f77b4", "Ad": "#aec7e8", "Mp": "#d62728", "Md": "#ff9896",
                "hbm:attention": "#2ca02c", "hbm:mamba": "#ff7f0e"}

CSV = ("points.csv", "points")
"""The report's CSV: its file name and the result's table (every scored design point)."""


def _title_page(pdf: PdfPages, r: ExploreResult) -> None:
    sc = r.scenario
    df = r.points
    fig = plt.figure(figsize=PAGE)
    fig.text(0.06, 0.9, "chipdse design report: the run", fontsize=22, fontweight="bold")
    lines = [
        f"Scenario: {sc.spec.name}   ({sc.path.name})   sha256 {sc.sha256[:16]}",
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
        lines.append(f"  {f.role} = {f.label}: screen {quantity(f.row['throughput_tps'], '.1f', f.label, SCREEN, TP)} "
                     f"tok/s, TTFT {quantity(f.row['ttft_s'], '.3f', f.label, SCREEN, TTFT)} s")
        for s in f.serving:
            ttft = (f"TTFT {quantity(s.served.ttft_s, '.3f', f.label, s.label, TTFT)} s" if s.served.stable
                    else "unstable at the offered load")
            lines.append(f"      {s.label}: {quantity(s.served.throughput_tps, '.1f', f.label, s.label, TP)} tok/s, "
                         f"{ttft}")
        best = best_exact(f.placement)
        if best is not None:
            lines.append(f"      placement {best.method}: {best.objective:.4g} byte-hops/s ({proof(best)})")
    return lines


_LIMITS = {"work_limit": "work limit", "time_limit": "wall cap"}
"""Words for the limit that ended a solve (TerminationCondition values)."""


def ended_by(s: Solution) -> str:
    """Which limit or event ended a solve, in words (its ``termination``, e.g. "time limit")."""
    return _LIMITS.get(s.termination.value, s.termination.value.replace("_", " "))


def proof(s: Solution) -> str:
    """A solve's proof status in words: "proven optimal", or its proven gap (:data:`PROVEN_GAP`) and the limit that
    ended it, or its status and that limit when it has no bound."""
    if s.status == SolutionStatus.OPTIMAL:
        return "proven optimal"
    if s.gap is not None:
        return f"proven gap {100 * s.gap:.3g}%, ended by the {ended_by(s)}"
    return f"{s.status.value.replace('_', ' ')}, ended by the {ended_by(s)}"


SCORE_WORDS = {"throughput-ttft": "throughput / TTFT", "energy": "tokens per joule"}
"""B*'s score in words, by pick rule."""


STAGE_WORDS = {"simulator": "simulated on the exact layouts", "estimator": "the estimator on the exact layouts",
               "screen": "the sweep screen"}
"""Where page 1's B*-against-M_T numbers come from (``deciding.b_vs_m.stage``), in words."""


def _recommendation_page(pdf: PdfPages, r: ExploreResult) -> None:
    rec = r.reports["recommendation"]
    sc = r.scenario
    lib = {c.name: c for c in sc.library.compute}
    kinds = ", ".join(f"{n} {t} ({lib[t].family} {lib[t].phase})" for t, n in rec["counts"].items())
    score = SCORE_WORDS[rec["rule"]]
    lines = [
        f"## Build {rec['role']} = {rec['label']}",
        f"What it is: {sum(rec['counts'].values())} compute chiplets: {kinds}; {rec['n_hbm']} {sc.library.memory.name} "
        f"stacks ({rec['hbm_attention']} for the attention blocks, {rec['hbm_mamba']} for the Mamba blocks); "
        f"{rec['d2d_GBps']:.0f} GB/s D2D links on every mesh port; max batch {rec['max_batch']} (the memory allows "
        f"{rec['batch_eff']} at once); on the {sc.package.rows} x {sc.package.cols} package of {sc.package.name}.",
        f"Why: B* has the highest {score} of the {rec['candidates']:,} stable points with above-average throughput "
        f"({rec['stable']:,} stable of {rec['points']:,} scored) for {sc.model.name} on "
        f"{sc.workload.name} at {sc.workload.arrival_rate_rps:g} req/s.",
    ]
    if rec["ties"]:
        lines.append(f"    {len(rec['ties'])} other design(s) tie with B* at the screen (same {score}), e.g. "
                     f"{rec['ties'][0]}: B* is the first in the sweep's order.")
    nxt = rec["runner_up"]
    if nxt is not None:
        short = nxt["margin"]
        lines.append(f"    The next design, {nxt['label']}, is {100 * short:.2g}% below B*'s {score} "
                     f"({quantity(nxt['throughput_tps'], '.1f', nxt['label'], SCREEN, TP)} tok/s at TTFT "
                     f"{quantity(nxt['ttft_s'], '.3f', nxt['label'], SCREEN, TTFT)} s)"
                     + (": a margin this small rests on the estimator, whose fidelity is below." if short < 0.01
                        else "."))
    dec = r.reports.get("deciding") or {}
    bm = dec.get("b_vs_m")
    if bm is not None and bm["throughput_share"] is not None:
        m = r.finalists[-1]
        ttft = (f" at {bm['ttft_share']:.1%} of its TTFT" if bm["ttft_share"] is not None
                else " (TTFT not comparable: one of them has none at the offered load)")
        lines.append(f"    Against M_T ({m.label}, the highest screened throughput), {STAGE_WORDS[bm['stage']]}: B* "
                     f"gives {bm['throughput_share']:.1%} of its throughput{ttft}.")
    en = dec.get("energy")
    if en:
        pct = "" if en["percentile"] is None else (f", more tokens/J than {en['percentile']:.0%} of the stable "
                                                   "points (screen)")
        heat = ("no thermal stage in this run" if en["peak_C"] is None
                else f"its exact layout peaks at {quantity(en['peak_C'], '.1f', rec['label'], EXACT_LAYOUT, PEAK)} "
                "degC")
        limit = sc.spec.energy.package_max_W
        cap = "no package power limit is set" if limit is None else f"package limit {limit:g} W"
        energy_at = EXACT_LAYOUT if en["energy_stage"] == "estimator" else SCREEN
        best_txt = ("" if en["best_label"] is None else
                    f"; the most efficient stable point, {en['best_label']}, reaches "
                    f"{quantity(en['best_tokens_per_J'], '.3g', en['best_label'], SCREEN, TPJ)}")
        lines += ["", "## Energy, power and heat of B*",
                  f"    {quantity(en['tokens_per_J'], '.3g', rec['label'], energy_at, TPJ)} tokens/J at "
                  f"{quantity(en['power_W'], '.0f', rec['label'], energy_at, POWER)} W "
                  f"({'at its exact layout' if en['energy_stage'] == 'estimator' else 'screen'}){pct}{best_txt}; "
                  f"{heat}; {cap}."]
    lines += ["", "## Estimator vs simulator, each finalist on its exact layout",
              "| finalist  quantity                       sweep screen   estimator, exact layout   simulator"]
    for c in r.reports["finalists_fidelity"]:
        est, sim, scr, lab = c["estimator"] or {}, c["simulator"] or {}, c["screen"], c["label"]
        gone = "" if c["simulator"] else c["why_not"]
        lines += [f"| {c['role']:<9s} throughput (tok/s)             "
                  f"{quantity(scr['throughput_tps'], '>12.1f', lab, SCREEN, TP)}   "
                  f"{quantity(est.get('throughput_tps'), '.1f', lab, EXACT_LAYOUT, TP):>23s}   "
                  f"{gone or quantity(sim.get('throughput_tps'), '.1f', lab, SIMULATED, TP)}",
                  f"| {'':<9s} TTFT at the offered load (s)   {quantity(scr['ttft_s'], '>12.3f', lab, SCREEN, TTFT)}   "
                  f"{quantity(est.get('ttft_s'), '.3f', lab, EXACT_LAYOUT, TTFT):>23s}   "
                  f"{gone or quantity(sim.get('ttft_s'), '.3f', lab, SIMULATED, TTFT)}"]
    lines += [
        "Sweep screen: the estimator on the whole space (its own mapping and hop model). Exact layout: the best exact "
        "placement and mapping below. Simulator: the simulation stage's fidelity runs on the same layout; "
        "throughput saturated (arrivals at twice the estimated capacity), TTFT at the offered load.",
        "",
        "## How sure: every exact solve behind it",
    ]
    names = {"hbm-partition": "HBM partition (HYDRA Eq. 1)", "placement": "placement (HYDRA Eq. 2)",
             "mapping": "decode mapping (HYDRA Eq. 5)"}
    f = r.finalists[0]
    for key, sols in (("hbm-partition", f.hbm), ("placement", f.placement), ("mapping", f.mapping)):
        exact = [s for s in sols if s.exact]
        best = best_exact(sols)
        used = f"; used: {best.method}" if best is not None else "; no exact solution"
        lines.append(f"    {names[key]}: " + "; ".join(f"{s.method} {proof(s)}" for s in exact) + used)
    lines.append(f"    ({PROVEN_GAP}.)")
    lines += ["", "## How sure: estimator fidelity on this run"]
    fid = rec["fidelity"]
    if fid:
        lines.append(f"    on {int(fid.get('points', 0))} simulated design points: " + "; ".join(
            f"{k} = {fid[k]:.3f} (target >= {t}: {'met' if fid[k] >= t else 'NOT met'})"
            for k, t in FIDELITY_THRESHOLDS.items() if k in fid) + ".")
        if "mape_throughput" in fid:
            rho = fid.get("spearman_throughput", float("nan"))
            lines.append(f"    throughput MAPE {fid['mape_throughput']:.1%}; Spearman {rho:.3f}"
                         + (f"; a constant predictor scores cosine {fid['cosine_constant']:.3f} on the same points"
                            if fid.get("cosine_constant") is not None else "") + ".")
    else:
        lines.append("    not measured (simulation disabled or too few simulated points).")
    lines += ["", "Terms (chiplet types, label format, B*, M_T, max batch, gaps, every points.csv column): see the "
              "glossary at the end."]
    text_pages(pdf, f"Recommendation: {rec['label']}", lines)


def _pareto_panel(ax: plt.Axes, df: Any, st: Any, front: Any) -> None:
    ax.scatter(st["ttft_s"], st["throughput_tps"], s=3, c="#bbbbbb", label=f"stable points ({len(st):,})",
               rasterized=True)
    distinct = len(front.drop_duplicates(["ttft_s", "throughput_tps"]))
    ax.plot(front["ttft_s"], front["throughput_tps"], "o-", c="#1f77b4", ms=4, zorder=3,
            label=f"Pareto front ({len(front)} points, {distinct} distinct)")
    for role, z in (("M_T", 4), ("B*", 5)):
        marker, colour, size = ROLE_STYLE[role]
        sel = df[df["role"].str.contains(role, regex=False)]
        if not sel.empty:
            row = sel.iloc[0]
            ax.scatter([row["ttft_s"]], [row["throughput_tps"]], marker=marker, s=size, c=colour, zorder=z,
                       edgecolors="k", label=f"{role}: {row['label']}")
    ax.grid(True, which="both", alpha=0.3)


def merit_columns(r: ExploreResult) -> list[Any]:
    """The figures of merit of ``r``'s points: every registered column with a sense that the table holds
    (:mod:`chipdse.studies.hydra.columns`: a metric registered there is listed without touching a page)."""
    return [c for c in r.table.columns().values() if c.sense is not None and c.name in r.table.frame]


def _merit_text(r: ExploreResult) -> str:
    """The finalists' figures of merit (:func:`merit_columns`)."""
    merits = merit_columns(r)
    parts = []
    for f in r.finalists:
        vals = ", ".join(f"{c.name} {fmt(f.row.get(c.name), spec='.4g')} {c.unit} ({c.sense})" for c in merits)
        parts.append(f"{f.role} {f.label}: {vals}")
    return "Figures of merit: " + "; ".join(parts) + "."


def _pareto_page(pdf: PdfPages, r: ExploreResult) -> None:
    df = r.points
    st = df[df["stable"]]
    front = df[df["pareto"]].sort_values("ttft_s")
    fig, (full, zoom) = plt.subplots(1, 2, figsize=PAGE)
    top = caption(fig, f"{len(df):,} points scored; {len(df) - len(st):,} unstable or infeasible points omitted. "
                  "Left: every stable point (log TTFT axis); right: the window around the Pareto front (linear "
                  "axes), where B* (star) and M_T (diamond) are told apart. B* = best "
                  f"{SCORE_WORDS[r.picks.rule.value]} among stable points with above-average throughput; M_T = "
                  "highest throughput. Several compositions can share one (TTFT, throughput) point. "
                  + _merit_text(r), y=0.02)
    fig.subplots_adjust(bottom=top + 0.09, top=0.9, wspace=0.25)
    _pareto_panel(full, df, st, front)
    full.set_xscale("log")
    full.xaxis.set_minor_formatter(NullFormatter())
    full.set_xlabel("mean TTFT at the offered load (s, log scale)")
    full.set_ylabel("throughput (output tokens/s)")
    full.set_title("all stable points", fontsize=10)
    _pareto_panel(zoom, df, st, front)
    finals = df[df["role"] != "-"]
    xs = np.concatenate([front["ttft_s"].to_numpy(), finals["ttft_s"].to_numpy()])
    ys = np.concatenate([front["throughput_tps"].to_numpy(), finals["throughput_tps"].to_numpy()])
    xs, ys = xs[np.isfinite(xs)], ys[np.isfinite(ys)]
    if len(xs):
        dx = max(xs.max() - xs.min(), 1e-3 * max(xs.max(), 1e-9))
        dy = max(ys.max() - ys.min(), 1e-3 * max(ys.max(), 1e-9))
        zoom.set_xlim(xs.min() - 0.08 * dx, xs.max() + 0.08 * dx)
        zoom.set_ylim(ys.min() - 0.05 * dy, ys.max() + 0.08 * dy)
    zoom.set_xlabel("mean TTFT at the offered load (s)")
    zoom.set_title("around the Pareto front", fontsize=10)
    zoom.legend(loc="lower right", fontsize=7, markerscale=0.6, framealpha=0.95)
    fig.suptitle("Pareto front: throughput vs TTFT (Markov/fluid estimator)", fontsize=12)
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
                     quantity(row["throughput_tps"], ".1f", f.label, SCREEN, TP),
                     quantity(row["ttft_s"], ".3f", f.label, SCREEN, TTFT), f"{row['capacity_rps']:.3f}"])
    serve_cols = ["finalist", "layout", "placement (byte-hops/s)", "throughput tok/s", "TTFT s",
                  "prefill bottleneck ms", "decode step ms"]
    serve_rows = []
    for f in r.finalists:
        for s in f.serving:
            v = s.served
            serve_rows.append([f.role, s.label, f"{s.placement_objective:.3e}",
                               quantity(v.throughput_tps, ".1f", f.label, s.label, TP),
                               quantity(v.ttft_s, ".3f", f.label, s.label, TTFT) if v.stable else "unstable",
                               f"{1e3 * v.prefill_bottleneck_s:.1f}", f"{1e3 * v.decode_step_s:.2f}"])
    table_page(pdf, "Chosen configurations (B* and M_T)",
                "Top: the two configurations as scored by the sweep screen (fluid mapping, assumed mean hop count). "
                "Middle: the same configurations re-scored with real layouts: placement and bottleneck mapping "
                "(HYDRA Eqs. 2-5) solved with MILP/CP-SAT (best of both, within the work limit; gaps on the next "
                "pages) "
                "vs with HYDRA's greedy and round-robin baselines. 'unstable': the layout's capacity is at or below "
                "the offered load, so TTFT grows without bound; its throughput is the capacity. Bottom: energy per "
                "output token of the screen and of each layout.",
                [("Configurations", cols, rows),
                 ("Serving with each layout (estimator re-score)", serve_cols, serve_rows),
                 energy_pages.finalists_energy_table(r)])


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
    note = f"\n{proof(sol)}" if sol.exact else ""
    ax.set_title(f"{title}\n{sol.method}: {sol.objective:.3e} byte-hops/s{note}", fontsize=7)


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


def _solution_rows(sols: list[Solution], scale: float = 1.0) -> list[list[str]]:
    """One table row per method (values multiplied by ``scale`` for display).

    Columns: method, exact, objective, own bound, proven gap % (:data:`PROVEN_GAP`), excess over best %
    (:data:`EXCESS_OVER_BEST`), excess over bound % (:data:`EXCESS_OVER_BOUND`), status and the limit that ended
    the solve.
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
        over_best, over_bound = excess(s.objective, best, s.sense), excess(s.objective, bound, s.sense)
        rows.append([s.method, fmt(s.exact), fmt(None if s.objective is None else s.objective * scale),
                     fmt(None if s.bound is None else s.bound * scale),
                     fmt(None if s.gap is None else 100 * s.gap, 3),
                     fmt(None if over_best is None else 100 * over_best, 3),
                     fmt(None if over_bound is None else 100 * over_bound, 3), s.status.value, ended_by(s)])
    return rows


def _compare_page(pdf: PdfPages, f: FinalistResult) -> None:
    cols = ["method", "exact", "objective", "own bound", "proven gap %", "excess over best %",
            "excess over bound %", "status", "ended by"]
    table_page(pdf, f"Exact vs heuristic: {f.role} ({f.row['label']})",
                f"The report's three gaps, each defined once: {PROVEN_GAP}; {EXCESS_OVER_BEST}; "
                f"{EXCESS_OVER_BOUND}. Exact methods are warm-started from the best heuristic and stop at their "
                "limit with their incumbent and bound ('ended by').",
                [("Placement: byte-hops/s, minimize (HYDRA Eq. 2 + chiplet-to-chiplet traffic)", cols,
                  _solution_rows(f.placement)),
                 ("HBM partition: min(r_M, r_A) concurrent requests, maximize (HYDRA Eq. 1)", cols,
                  _solution_rows(f.hbm)),
                 ("Decode pipeline mapping on the best exact placement: bottleneck stage time in ms, minimize "
                  "(HYDRA Eq. 5)", cols, _solution_rows(f.mapping, scale=1e3))])


_RUN_FIELDS = ("model", "dataset", "role", "study", "variant", "rate_rps", "warmup_s", "duration_s", "completed",
               "stop", "valid")
"""Per policy run in the manifest: what ran, its window, how many measured requests completed, which limit ended it
(window: measure_s; completed: simulation.min_completed reached; cap: simulation.max_measure_s) and validity."""


def _policy_runs(policies: pd.DataFrame) -> list[dict[str, Any]]:
    """The policy table's runs as manifest records (:data:`_RUN_FIELDS` it has)."""
    if policies is None or policies.empty:
        return []
    cols = [c for c in _RUN_FIELDS if c in policies.columns]
    return strict_json(policies[cols].to_dict("records"))


def details(r: ExploreResult) -> dict[str, Any]:
    """The manifest's HYDRA part: the page-1 recommendation, model, workload, unbuildable reasons, finalists,
    simulation (fidelity, policy gains, layouts, what was skipped), Table IV, the claims, the energy and the power /
    thermal summary per finalist (all computed by explore's stages)."""
    sc = r.scenario
    sim = r.simulation
    return {
        "recommendation": r.reports["recommendation"],
        "model": sc.model.key, "workload": sc.workload.name, "infeasible_reasons": r.infeasible_reasons,
        "finalists": {str(f.role): f.label for f in r.finalists},
        "simulation": None if sim is None else {
            "fidelity": sim.metrics, "policy_gains": sim.gains,
            "policy_runs": _policy_runs(sim.policies),
            "layouts": strict_json(sim.layouts.to_dict("records")), "skipped": sim.skipped},
        "generality": None if r.generality is None else r.generality.to_json(),
        "claims": None if r.claims is None else strict_json(r.claims.records()),
        "finalists_fidelity": r.reports["finalists_fidelity"],
        "energy": r.reports["energy"],
        "cost": r.reports.get("cost"),
        "thermal": r.reports["thermal"],
    }


def draw(pdf: PdfPages, r: ExploreResult) -> None:
    """Draw every page of the HYDRA report into ``pdf``: the recommendation first, the glossary last."""
    _recommendation_page(pdf, r)
    _title_page(pdf, r)
    _pareto_page(pdf, r)
    energy_pages.energy_page(pdf, r)
    cost_page.cost_page(pdf, r)
    _config_page(pdf, r)
    _floorplan_page(pdf, r)
    for f in r.finalists:
        _compare_page(pdf, f)
    thermal_pages.thermal_pages(pdf, r.thermal)
    if r.simulation is not None:
        b = r.finalists[0]
        best = best_exact(b.placement)
        if r.simulation.metrics:
            sim_pages.fidelity_page(pdf, r.simulation, r.scenario.spec.name)
        sim_pages.layout_page(pdf, r.simulation, b.label, None if best is None else best.objective)
        placements = {str(k): lay.placement for k, lay in b.layouts().items()
                      if k in (LayoutKind.EXACT, LayoutKind.ROUND_ROBIN, LayoutKind.HYDRA_GREEDY)}
        sim_pages.noi_page(pdf, r.simulation, r.scenario.package.rows, r.scenario.package.cols, b.label,
                           placements)
        sim_pages.policy_page(pdf, r.simulation, b.label, r.scenario.spec.simulation.load)
    if r.generality is not None:
        generality_pages(pdf, r.generality)
    if r.claims is not None:
        claims_page.claims_page(pdf, r.claims.rows, r.claims.context, r.claims.paper)
    _glossary_pages(pdf, r)


def columns(r: ExploreResult) -> dict[str, tuple[str, str]]:
    """Every points.csv column: ``{name: (unit, description)}`` in the CSV's order ("-" for unitless), read from the
    scored table's column registry (:mod:`chipdse.studies.hydra.columns`)."""
    return {name: (c.unit, c.description) for name, c in r.table.columns().items()}


def _glossary_pages(pdf: PdfPages, r: ExploreResult) -> None:
    sc = r.scenario
    types = sc.compute_types()
    lib = {c.name: c for c in sc.library.compute}
    example = r.finalists[0].row["label"]
    fields = "-".join(f"{t}<n>" for t in types)
    lines = ["## Chiplet types (from the library " + sc.library.name + ", those the model " + sc.model.name
             + " uses)"]
    lines += [f"    {t}: {lib[t].family} blocks, {lib[t].phase} phase; {lib[t].compute_fraction:.0%} of the core area "
              f"is compute, the rest SRAM; {lib[t].die_area_mm2:g} mm^2 die. Source: {lib[t].source or '-'}"
              for t in types]
    lines += [f"    HBM: a {sc.library.memory.name} stack, {sc.library.memory.capacity_GB:g} GB, "
              f"{sc.library.memory.bandwidth_GBps:g} GB/s" + ("; HBM stacks sit on the package's outer ring of cells."
                                                if sc.package.hbm_on_ring else "."),
              "## Terms",
              f"    Label: {fields}-HBM<stacks>-<D2D>GBps-B<max batch>, e.g. {example}: the number of chiplets of each "
              "type, the HBM stacks, the D2D link bandwidth and the max batch.",
              "    B*: the stable design with the highest throughput / TTFT among those with above-average throughput "
              "(HYDRA Fig. 8). M_T: the stable design with the highest throughput.",
              "    Max batch: the most requests one decode step may batch (a design choice); the effective batch is "
              "capped by how many requests the HBM holds next to the weights.",
              "    D2D: die-to-die link bandwidth of each of a chiplet's mesh ports, GB/s (PHY area grows with it).",
              "    TTFT: time to first token of a request (queueing + prefill), s. TBT: time between two output "
              "tokens of one request, s. Throughput: output tokens/s.",
              "    Stable: capacity above the offered load; an unstable design's queue grows without bound.",
              f"    Gaps: {PROVEN_GAP}.",
              f"    {EXCESS_OVER_BEST}.",
              f"    {EXCESS_OVER_BOUND}.",
              "    Ended by: the limit or event that ended a solve (optimal, time limit, heuristic done, ...).",
              f"    {sim_pages.LINK_LOAD_TERMS}"]
    glossary_pages(pdf, lines, CSV[0], columns(r))
