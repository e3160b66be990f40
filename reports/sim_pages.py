"""Simulator pages of the explore report: estimator fidelity, NoI heatmaps, utilization, ablation, schedulers."""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.table import Table

from chipdse.core.solution import EXCESS_OVER_BEST, excess
from chipdse.reports.style import LINE_H, PAGE, TP, TTFT, caption, fmt, label_points, quantity
from chipdse.studies.hydra.artifacts import (
    EXTRA_PAIRS,
    FIDELITY_THRESHOLDS,
    REFERENCE,
    STUDY_VARIANTS,
    WORKLOAD_KEYS,
    SimulationStudy,
    pair_key,
)


def fidelity_page(pdf: PdfPages, study: SimulationStudy, scenario_name: str) -> None:
    """Estimator vs simulator on the simulated Pareto candidates (throughput at saturation, TTFT at load)."""
    fid = study.fidelity.reset_index(drop=True)
    fig, axes = plt.subplots(1, 2, figsize=PAGE)
    m = study.metrics
    parts = []
    for k, target in FIDELITY_THRESHOLDS.items():
        if k in m:
            parts.append(f"{k} = {m[k]:.3f} (target >= {target}: {'met' if m[k] >= target else 'NOT met'})")
    top = caption(fig, "; ".join(parts) + ". Throughput: simulator saturated (Poisson arrivals at twice the "
                  "estimated capacity, after a warm-up that turns the resident requests over); TTFT: simulator at "
                  "the offered load. Same placement (exact) and LPT mapping on both sides. "
                  "benchmarks/bench_fidelity.py runs the same check over the whole design space's throughput range.")
    key = textwrap.wrap("   ".join(f"{k + 1}: {r['label']}" for k, r in fid.iterrows()), 150)
    fig.text(0.5, top + 0.015, "\n".join(key), ha="center", va="bottom", fontsize=6.5, family="monospace")
    fig.subplots_adjust(bottom=top + 0.015 + len(key) * 6.5 * LINE_H + 0.08, top=0.88, wspace=0.3)
    for ax, (est, sim, name) in zip(axes, (("est_throughput_tps", "sim_throughput_tps", "throughput (tok/s)"),
                                           ("est_ttft_s", "sim_ttft_s", "mean TTFT at the offered load (s)")),
                                    strict=True):
        d = fid.dropna(subset=[est, sim])
        if d.empty:
            ax.axis("off")
            continue
        ax.scatter(d[est], d[sim], s=40, c="#1f77b4", edgecolors="k", zorder=3)
        lo, hi = min(d[est].min(), d[sim].min()), max(d[est].max(), d[sim].max())
        ax.plot([lo, hi], [lo, hi], "--", c="#888888", label="simulator = estimator")
        ax.set_xlabel(f"estimator: {name}")
        ax.set_ylabel(f"simulator: {name}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        label_points(ax, d[est].to_numpy(), d[sim].to_numpy(), [str(k + 1) for k in d.index], fontsize=6.5)
    fig.suptitle(f"Estimator vs event simulator on {len(fid)} design points of {scenario_name} (Pareto "
                 "candidates and points spread over the throughput ranking)", fontsize=10)
    pdf.savefig(fig)
    plt.close(fig)


def _draw_links(ax: plt.Axes, rows: int, cols: int, links: dict[tuple[int, int], float],
                chiplets: dict[str, float], norm: Normalize, title: str, placement: dict[int, str] | None) -> None:
    cmap = plt.get_cmap("inferno_r")
    ax.set_xlim(-0.6, cols - 0.4)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    names = {}
    for cid in chiplets:
        ty, _, cell = cid.partition("@")
        names[int(cell)] = ty
    for cell in range(rows * cols):
        r, c = divmod(cell, cols)
        ty = (placement or {}).get(cell, "")
        name = names.get(cell) or ("HBM" if ty.startswith("hbm") or placement is None else "")
        unused = not name
        ax.add_patch(plt.Rectangle((c - 0.3, r - 0.3), 0.6, 0.6, facecolor="white" if unused else "#eeeeee",
                                   edgecolor="k", lw=0.5, ls=":" if unused else "-"))
        ax.text(c, r, name or "unused", ha="center", va="center", fontsize=6 if name else 5,
                color="#888888" if unused else "k")
    for (a, b), u in links.items():
        ra, ca = divmod(int(a), cols)
        rb, cb = divmod(int(b), cols)
        off = 0.08 if (rb - ra) + (cb - ca) > 0 else -0.08  # the two directions side by side
        dx, dy = (off, 0.0) if ca == cb else (0.0, off)
        ax.plot([ca + dx + 0.3 * (cb - ca), cb + dx - 0.3 * (cb - ca)],
                [ra + dy + 0.3 * (rb - ra), rb + dy - 0.3 * (rb - ra)], c=cmap(norm(u)), lw=3.5,
                solid_capstyle="butt")
    ax.set_title(title, fontsize=8)


def noi_page(pdf: PdfPages, study: SimulationStudy, rows: int, cols: int, b_star: str,
             placements: dict[str, dict[int, str]] | None = None) -> None:
    """NoI link utilization (round-robin vs exact placement) and per-chiplet utilization of B*.

    ``placements`` (``{"round-robin" | "exact": {cell: chiplet type}}``, B*'s layouts) tells HBM cells from unused
    ones; without it every cell without a compute chiplet is drawn as HBM."""
    util = study.utilization
    if not {"round-robin", "exact"} <= set(util):
        return
    fig = plt.figure(figsize=PAGE)
    gs = fig.add_gridspec(2, 2, height_ratios=[1.3, 1], hspace=0.35, bottom=0.14, top=0.9)
    vmax = max(max(u["links"].values(), default=0.0) for u in util.values()) or 1.0
    norm = Normalize(0.0, vmax)
    for j, key in enumerate(("round-robin", "exact")):
        u = util[key]
        ax = fig.add_subplot(gs[0, j])
        mx = max(u["links"].values(), default=0.0)
        _draw_links(ax, rows, cols, u["links"], u["chiplets"], norm,
                    f"{key} placement: busiest link {mx:.0%}, mean {np.mean(list(u['links'].values())):.0%}",
                    (placements or {}).get(key))
    fig.colorbar(ScalarMappable(norm, plt.get_cmap("inferno_r")), ax=fig.axes[:2], shrink=0.7,
                 label="link busy fraction (simulated)")
    ax = fig.add_subplot(gs[1, :])
    for k, (key, colour) in enumerate((("round-robin", "#ff7f0e"), ("exact", "#1f77b4"))):
        # chiplets by type, busiest first within a type: both placements hold the same type multiset
        order = sorted(util[key]["chiplets"].items(), key=lambda kv: (kv[0].split("@")[0], -kv[1]))
        x = np.arange(len(order))
        ax.bar(x + (k - 0.5) * 0.4, [v for _, v in order], 0.4, color=colour, label=f"{key} placement")
        if key == "exact":
            ax.set_xticks(x, [c.split("@")[0] for c, _ in order], fontsize=7)
    ax.set_ylabel("chiplet busy fraction")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"B* ({b_star}) in the simulator: NoI links and chiplets, round-robin vs exact placement",
                 fontsize=11)
    caption(fig, "Same design, workload, load and policies (static task scheduling, static batching: the "
             "ablation's 'baseline' and 'CP' runs); only the placement differs. Each directed link is drawn on "
             "its side of the mesh edge. Chiplet bars: by type, busiest first within a type (the cells differ "
             "between placements). The exact placement minimizes hop-weighted volume (Eq. 2), not the busiest "
             "link; chipdse's max-link-load objective (formulations/link_load.py) targets that. Link colours: the "
             "simulator's busy share of the window at the ablation's offered load, not the layout page's modelled "
             "busiest link GB/s (about 6x lower on the default B*; glossary: link load).")
    pdf.savefig(fig)
    plt.close(fig)


STUDY_PAGES = (
    ("ablation", STUDY_VARIANTS["ablation"], "HYDRA Fig. 9: ablation over the static baseline",
     "baseline = round-robin placement and mapping, static task scheduling, static batching; greedy CP = the "
     "paper's two-step greedy placement with LPT mapping; CP = exact communication-aware placement + exact "
     "mapping (CP+ET and CP+ET+DB build on it); ET = HYDRA's elastic task scheduler; DB = dynamic batching. "
     "HYDRA: CP+ET+DB 1.55x throughput and -43.7% TTFT on average (up to 2.3x); ET +3% to +150% throughput; DB "
     "alone +15% throughput, -23% TTFT."),
    ("scheduler", STUDY_VARIANTS["scheduler"],
     "HYDRA Fig. 12: task schedulers over static scheduling",
     "Exact placement and static batching (Sec. VI-B's hardware configurations, only the scheduler changed): static "
     "= the ablation's CP run, elastic = its CP+ET run; elastic may run a job on the other phase's chiplets, FCFS and "
     "work stealing only in their '(cross-phase)' runs (the like-for-like comparison). HYDRA: elastic over static "
     "1.40-2.04x (B*, TP/TTFT) and "
     "1.17-1.73x (M_T, TP); over FCFS 1.04-1.30x; best in 6 of 8 against work stealing."),
    ("placement", STUDY_VARIANTS["placement"],
     "HYDRA Fig. 10: placements over round-robin",
     "Static scheduling and static batching, every layout at the study's own load (not the one below): B* at "
     "simulation.load x the weakest layout's estimated capacity (all sustain it), M_T saturated at 2x the "
     "strongest's (throughput = capacity); random = "
     "one uniformly random placement with round-robin mapping; hydra-greedy = the paper's two-step greedy with LPT "
     "mapping. HYDRA: CP over round-robin 1.29x TP/TTFT and 1.22x TP; over random 1.04-1.80x TP/TTFT, "
     "1.07-1.22x TP."),
)
"""(study, variants drawn, title, caption) of the policy pages."""


def _label(key: tuple[Any, ...], names: list[str]) -> str:
    parts = dict(zip(names, key if isinstance(key, tuple) else (key,), strict=True))
    model = parts.get("model")
    return " ".join(str(x) for x in (model, parts.get("dataset"), parts.get("role")) if x)


def _ratio_axes(ax: plt.Axes, sim: SimulationStudy, study: str, variants: tuple[str, ...], metric: str,
                ylabel: str) -> None:
    """Bars of ``metric`` (a column of the stage's ratios, :attr:`SimulationStudy.ratios`) per workload and variant;
    invalid workloads hatched grey at 1; a log axis when the ratios span more than 10x."""
    ref = REFERENCE[study]
    keys = [k for k in WORKLOAD_KEYS if k in sim.policies]
    frames = {v: sim.ratios[pair_key(study, v)].set_index(keys) for v in variants}
    index = list(dict.fromkeys(i for f in frames.values() for i in f.index))
    x = np.arange(len(index))
    w = 0.8 / max(len(variants), 1)
    shown = []
    bad_x: list[float] = []
    for k, v in enumerate(variants):
        f = frames[v].reindex(index)
        vals = f[metric].to_numpy(dtype=float)
        valid = f["valid"].fillna(False).to_numpy(dtype=bool)
        pos = x + (k - (len(variants) - 1) / 2) * w
        ax.bar(pos[valid], np.nan_to_num(vals[valid], nan=0.0), w, label=v, color=f"C{k}")
        bad_x += list(pos[~valid])
        shown += list(vals[valid][np.isfinite(vals[valid]) & (vals[valid] > 0)])
    if bad_x:
        ax.bar(bad_x, np.ones(len(bad_x)), w, color="#dddddd", hatch="//", edgecolor="#999999",
               label="invalid (left out)")
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    if shown and max(shown) / min(min(shown), 1.0) > 10:
        ax.set_yscale("log")
    ax.set_xticks(x, [_label(i, keys) for i in index], fontsize=6, rotation=90)
    ax.set_ylabel(f"{ylabel} over {ref} (ratio, -)", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.2)


def _fmt_x(v: float | None) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}x"


def _summary_text(sim: SimulationStudy, study: str, variants: tuple[str, ...]) -> str:
    """One clause per variant over the study's reference, then the extra pairs HYDRA reports
    (:data:`~chipdse.studies.hydra.artifacts.EXTRA_PAIRS`): geometric means over valid workloads, throughput range,
    wins of the target metric and the invalid count (:attr:`SimulationStudy.comparisons`)."""
    parts = []
    pairs = [(v, REFERENCE[study]) for v in variants] + list(EXTRA_PAIRS.get(study, ()))
    for v, ref in pairs:
        c = sim.comparisons[pair_key(study, v, ref)]
        ttft = c["ttft_reduction"]
        name = v if ref == REFERENCE[study] else f"{v} over {ref}"
        parts.append(f"{name}: throughput {_fmt_x(c['throughput_x'])} ({_fmt_x(c['throughput_x_min'])}-"
                     f"{_fmt_x(c['throughput_x_max'])}), TTFT "
                     f"{'n/a' if math.isnan(ttft) else f'{-100 * ttft:+.1f}%'}, target metric "
                     f"{_fmt_x(c['target_x'])}, better on {c['wins']:.0f} of {c['n']:.0f} valid"
                     f" ({c['invalid']:.0f} invalid)")
    return "; ".join(parts)


def _span(v: pd.Series, unit: str) -> str:
    return f"{v.min():.3g} {unit}" if v.min() == v.max() else f"{v.min():.3g}-{v.max():.3g} {unit}"


def policy_page(pdf: PdfPages, study: SimulationStudy, b_star: str, load: float) -> None:
    """The ablation (Fig. 9), scheduler (Fig. 12) and placement (Fig. 10) pages: per-workload ratios to each study's
    reference run, invalid workloads marked and counted, averages as geometric means over the valid ones."""
    pol = study.policies
    if pol.empty:
        return
    for name, variants, title, text in STUDY_PAGES:
        d = pol[pol["study"] == name]
        if d.empty:
            continue
        fig, axes = plt.subplots(1, 2, figsize=PAGE)
        _ratio_axes(axes[0], study, name, variants, "throughput_x", "throughput")
        _ratio_axes(axes[1], study, name, variants, "target_x", "target metric")
        axes[0].set_title("throughput", fontsize=9)
        axes[1].set_title("target metric: TP/TTFT for B*, throughput for M_T", fontsize=9)
        warm = d["warmup_s"].astype(float) if "warmup_s" in d else d["duration_s"].astype(float) * 0.0
        notes = study.invalid_notes.get(name, "")
        rates = _span(d["rate_rps"].astype(float), "req/s")
        top = caption(fig, f"{text} Each run: {_span(warm, 's')} warm-up (per workload), then "
                      f"{_span(d['duration_s'].astype(float) - warm, 's')} measured; Poisson arrivals at {load:.0%} "
                      f"of the design's estimated capacity on each workload ({rates}). Averages: geometric means of "
                      "per-workload ratios over valid workloads (a ratio's mean that does not depend on the "
                      "reference). " + _summary_text(study, name, variants) + ". Invalid (hatched, left out): "
                      "every run of a workload one of whose runs, in any study, completed no request or whose "
                      "study's reference run completed fewer than simulation.min_completed requests by the cap "
                      "(simulation.max_measure_s) "
                      "(one rule for every page, the claims and the manifest)"
                      + (f": {notes}." if notes else "."))
        fig.subplots_adjust(bottom=top + 0.2, top=0.9, wspace=0.55, right=0.86, left=0.07)
        own = "model" in d and d["model"].nunique() > 1
        who = "each workload's own B* and M_T" if own else f"B* = {b_star} and M_T"
        fig.suptitle(f"{title} ({who}, simulated)", fontsize=11)
        pdf.savefig(fig)
        plt.close(fig)


CELL_PAD_PX = 3.0
"""Room kept between a table cell's text and its border, pixels at the figure's dpi."""


def fit_cells(fig: plt.Figure, table: Table, pad_px: float = CELL_PAD_PX) -> None:
    """Wrap each cell's text at word boundaries to its cell's width and make each row tall enough for its lines.

    Parameters
    ----------
    fig : matplotlib Figure
        The table's figure (drawn once here to measure the text).
    table : matplotlib Table
        Cells with their final widths and font size.
    pad_px : float
        Room kept on each side of a text inside its cell, pixels.

    Notes
    -----
    Widths are measured with ``Text.get_window_extent`` on the figure's renderer; a cell's text that is wider
    than its cell is re-wrapped at the longest line length that fits (``textwrap`` breaks a word longer than that),
    then every cell of the row gets the height its tallest text needs.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    cells = table.get_celld()
    grow: dict[int, float] = {}
    for (row, _), cell in cells.items():
        text, box = cell.get_text(), cell.get_window_extent(renderer)
        room = box.width - 2 * pad_px
        if text.get_window_extent(renderer).width > room:
            flat = " ".join(text.get_text().split())
            for n in range(len(flat) - 1, 0, -1):
                text.set_text("\n".join(textwrap.wrap(flat, n)))
                if text.get_window_extent(renderer).width <= room:
                    break
        need = (text.get_window_extent(renderer).height + 2 * pad_px) / box.height
        grow[row] = max(grow.get(row, 1.0), need)
    for (row, _), cell in cells.items():
        cell.set_height(cell.get_height() * grow[row])


LINK_LOAD_TERMS = (
    "Link load, two measures: 'busiest link GB/s' (layout page) is the placement model's traffic "
    "(formulations/link_load.py): each chiplet pair's bytes/s at the design's estimated capacity with full batches, "
    "half each way along the XY routes, the quantity the min max-link placement minimizes. 'Link busy fraction' (NoI "
    "page) is the simulator's: the share of the window a directed link carried bytes, every stage's HBM reads "
    "streamed one way from the stacks, at the offered load with the batches the batcher forms. Measured on the "
    "default B* (benchmarks/bench_link_load.py): the simulated busiest link carries about 6x the model's, the "
    "simulator reading 5.4x the model's HBM bytes per output token at 90% load and 1.9x when saturated (full "
    "batches); the two rank layouts differently and are not interchangeable.")
"""The glossary's definition of the two link-load measures (issue 32 item 2), cited by both pages."""


def layout_page(pdf: PdfPages, study: SimulationStudy, b_star: str, best_eq2: float | None = None) -> None:
    """B*'s layouts: placement objectives and their excess over ``best_eq2`` (the best exact placement's Eq. 2
    objective, byte-hops/s; :data:`EXCESS_OVER_BEST`), busiest links, then estimator and simulator at serving
    time."""
    t = study.layouts
    if t.empty:
        return

    cols = ["layout", "Eq. 2\nbyte-hops/s", "Eq. 2 excess\nover best", "busiest link\nGB/s (model)", "its bound\nGB/s",
            "est. capacity\ntok/s", "est. tok/s\nat offered", "sim. tok/s\nfrom empty", "est. TTFT s\n(offered)",
            "sim.\nTTFT s", "sim. TTFT\np99 s"]
    cells = []
    for _, r in t.iterrows():
        cells.append([r["layout"], fmt(r["eq2_byte_hops_per_s"], spec=".3e"),
                      fmt(None if (x := excess(r["eq2_byte_hops_per_s"], best_eq2)) is None else 100 * x,
                          spec=".1f") + ("" if x is None else "%"),
                      fmt(r["max_link_GBps"], spec=".1f"), fmt(r["max_link_bound_GBps"], spec=".1f"),
                      quantity(r["est_throughput_tps"], ".0f", b_star, r["layout"], TP),
                      fmt(r.get("est_offered_tps"), spec=".0f"),
                      fmt(r["sim_throughput_tps"], spec=".0f"),
                      quantity(r["est_ttft_s"], ".3f", b_star, r["layout"], TTFT),
                      fmt(r["sim_ttft_s"], spec=".3f"), fmt(r["sim_ttft_p99_s"], spec=".3f")])
    offered = t["offered_rps"].dropna() if "offered_rps" in t.columns else pd.Series(dtype=float)
    window = t["sim_duration_s"].dropna() if "sim_duration_s" in t.columns else pd.Series(dtype=float)
    at = (f" Offered load {offered.iloc[0]:.3g} req/s, simulated {window.iloc[0]:.0f} s from an empty system: the "
          "simulated columns rank the layouts, they are not steady state (a run from empty delivers less than it is "
          "offered while the system fills: dynamic batching on the default B* gives 117 tok/s in 30 s and 213 in "
          "120 s of 358 offered, "
          "benchmarks/bench_link_load.py); the capacity is what the layout sustains at saturation."
          if len(offered) and len(window) else "")
    fig, ax = plt.subplots(figsize=PAGE)
    ax.axis("off")
    table = ax.table(cellText=cells, colLabels=cols, loc="upper center", cellLoc="center",
                     colWidths=[0.28] + [0.08] * (len(cols) - 1))
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    table.scale(1.0, 2.2)
    fit_cells(fig, table)
    fig.suptitle(f"What the layout buys at serving time: B* ({b_star})", fontsize=11)
    caption(fig, "Eq. 2 = HYDRA's hop-weighted volume at the design's capacity; excess over best: how much more "
             f"than the best exact placement's ({EXCESS_OVER_BEST}). Busiest link = the largest directed "
             "link load of the placement model's traffic at the same capacity (not the simulator's busy fraction "
             "of the NoI page; glossary: link load); the last row minimizes it (layout-bnb within the "
             "scenario's work limit, started from the exact placement; its proven bound beside it). Estimator = the "
             "layout re-score; simulator = the same offered load as the policy studies (simulation.load x "
             "the exact layout's estimated capacity), dynamic batching, static scheduling, over simulation.duration_s "
             "from an empty system." + at, y=0.05)
    pdf.savefig(fig)
    plt.close(fig)
