"""The SNAKE report: decode speedups, multi-PU modes (Fig. 13), shape choice vs batch (Fig. 14a), per-shape buffer
demand (Fig. 14b), the inter-PU link-bandwidth sweep, the exact shape-set and area-split choices next to enumeration,
serving (Fig. 10), energy and power (tokens/J, the Fig. 11 breakdown against the budget, Fig. 4a's energy line) and
SNAKE's claims against this run; written by :func:`chipdse.reports.files.write_report`."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from chipdse.core.solution import PROVEN_GAP  # noqa: E402
from chipdse.evaluators.snake_energy import PEAK_PARTS  # noqa: E402
from chipdse.evaluators.snake_pu import GROUPED, MODES  # noqa: E402
from chipdse.reports.claims_page import claims_page  # noqa: E402
from chipdse.reports.html import Plot, table_scatter  # noqa: E402
from chipdse.reports.style import (  # noqa: E402
    PAGE,
    caption,
    fmt,
    glossary_pages,
    quantity,
    table_page,
    text_colour_on,
)
from chipdse.reports.summary_page import caveat_lines, solve_lines, summary_page  # noqa: E402
from chipdse.studies.snake.artifacts import (  # noqa: E402
    PAPER_ENERGY,
    PAPER_SPEEDUPS,
    UNCAPPED_DRAM_TBPS,
    SnakeStudy,
    SnakeSummaries,
)

BASELINE_LABELS = {"mac_tree": "MAC tree 16x16x16 / PU", "sa48x48": "fixed 48x48", "sa8x288": "fixed 8x288",
                   "gpu": "H100 GPU"}

SPEEDUP, ENERGY_X = "decode_speedup_x", "decode_tokens_per_J_x"
"""Quantity names (:data:`chipdse.reports.style.QuantityKey`) of SNAKE's mean speedup and energy ratio over a
baseline."""

CSV = ("speedups.csv", "speedups")
"""The report's CSV: its file name and the result's table (SNAKE's decode speedup per baseline, model and batch)."""


def columns(s: SnakeStudy | None) -> dict[str, tuple[str, str]]:
    """Every speedups.csv column: ``{name: (unit, description)}`` ("-" for unitless); ``s`` None gives the
    descriptions without the study's numbers (the budget)."""
    return {
        "model": ("-", "model card key"),
        "batch": ("requests", "decode batch"),
        "context": ("tokens", "KV-cache tokens per request (the attention products stream them)"),
        "baseline": ("-", "the design SNAKE is compared with: " + "; ".join(f"{k} = {v}"
                                                                          for k, v in BASELINE_LABELS.items())),
        "speedup": ("x", "decode speedup of SNAKE: baseline decode-step latency / SNAKE's"),
        "snake_step_s": ("s", "SNAKE's decode-step latency (the weight GEMMs and attention products of one step)"),
        "energy_ratio": ("x", "energy efficiency of SNAKE: baseline decode-step energy / SNAKE's (logic die for the "
                         "NMP baselines, as SNAKE Sec. 6.3; the H100's whole energy over SNAKE's logic die and DRAM)"),
        "snake_step_J": ("J", "SNAKE's logic-die energy of one decode step on one device of the TP group (MACs, "
                         "buffers, vector, PE control, NoC)"),
        "baseline_step_J": ("J", "the baseline's energy of one decode step (logic die; the H100's whole)"),
        "snake_tokens_per_J": ("tokens/J", "SNAKE's output tokens per joule of logic-die energy (batch / (TP x "
                               "snake_step_J): the TP group's devices make the batch's tokens together)"),
        "baseline_tokens_per_J": ("tokens/J", "the baseline's output tokens per joule (batch / (TP x "
                                  "baseline_step_J))"),
        "snake_power_W": ("W", "SNAKE's average logic-die power over the step" + (
            "" if s is None else f" (the budget is {_budget(s):.0f} W)")),
    }


def _summaries(s: SnakeStudy) -> SnakeSummaries:
    """The study's averages and shares (its summaries stage computed them)."""
    assert s.summaries is not None, "the SNAKE study's run() computes the summaries"
    return s.summaries


def _speedup_page(pdf: PdfPages, s: SnakeStudy) -> None:
    sm = _summaries(s)
    per_model = sm.per_model_speedups
    fig, ax = plt.subplots(figsize=PAGE)
    fig.subplots_adjust(bottom=0.25, top=0.9)
    x = np.arange(len(per_model))
    w = 0.8 / len(per_model.columns)
    for k, b in enumerate(per_model.columns):
        ax.bar(x + k * w, per_model[b], w, label=BASELINE_LABELS.get(b, b))
    ax.axhline(1.0, c="k", lw=0.8)
    ax.set_xticks(x + w * (len(per_model.columns) - 1) / 2, per_model.index)
    ax.set_ylabel("decode speedup of SNAKE (baseline latency / SNAKE latency)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    avg = sm.average_speedups
    fig.suptitle("Decode speedup over the baselines (SNAKE Sec. 6.3), mean over batches "
                 f"{', '.join(map(str, s.spec.batches))} and contexts {', '.join(f'{c:,}' for c in s.spec.contexts)}",
                 fontsize=11)
    t = s.spec.template
    caption(fig, "Average over models: " + "; ".join(
        f"{BASELINE_LABELS.get(b, b)} {quantity(v, '.2f', 'SNAKE', b, SPEEDUP)}x "
        f"(paper {PAPER_SPEEDUPS.get(b, float('nan')):.2f}x)" for b, v in avg.items())
            + f". Same {t.pus} PUs x {t.cores_per_pu} cores for every design (the paper's "
        f"area-normalized comparison at {t.pu_area_mm2:g} mm^2 per PU); SNAKE at 800 MHz with per-operator logical "
        "shape, dataflow and multi-PU mode and pipelined folds; fixed arrays at 1 GHz with the better of OS / IS and "
        "the template's n-split; every design may run MoE experts as a grouped GEMM and runs QK^T / PV "
        f"head-parallel; every operator is the larger of compute and DRAM streaming at {t.dram_TBps:g} TB/s, plus "
        f"its exposed element-wise stage and collectives ({t.link_GBps:g} GB/s links). GPU: H100 roofline at "
        f"{s.spec.serving.gpu_efficiency:g} of 989 TFLOPS and 3.35 TB/s.", y=0.03)
    pdf.savefig(fig)
    plt.close(fig)


def _mode_page(pdf: PdfPages, s: SnakeStudy) -> None:
    dist = _summaries(s).mode_shares
    slow = _summaries(s).fixed_mode_slowdown
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=PAGE)
    fig.subplots_adjust(bottom=0.22, top=0.88, wspace=0.3)
    left = np.zeros(len(dist))
    for mode in (*MODES, GROUPED):
        ax1.barh(dist.index, dist[mode], left=left, label=mode)
        for y, (lv, v) in enumerate(zip(left, dist[mode], strict=True)):
            if v > 0.04:
                ax1.text(lv + v / 2, y, f"{100 * v:.0f}%", ha="center", va="center", fontsize=8)
        left += dist[mode].to_numpy()
    ax1.set_xlabel("share of operators (all batches)")
    ax1.set_title("(a) multi-PU mode chosen per operator", fontsize=10)
    ax1.set_ylim(-0.6, len(dist) - 0.4 + 0.5)
    ax1.legend(fontsize=8, loc="upper center", ncol=5, bbox_to_anchor=(0.5, -0.12))
    for model, g in s.slowdowns.groupby("model"):
        piv = g.pivot_table(index="batch", columns="mode", values="slowdown", aggfunc="max")
        for mode in MODES:
            ax2.plot(piv.index, piv[mode], marker="o", label=f"{model} {mode}")
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(list(s.spec.batches), [str(b) for b in s.spec.batches])
    ax2.set_xlabel("batch")
    ax2.set_ylabel("slowdown of one fixed mode vs per-operator choice (worst context)")
    ax2.set_title("(b) fixed-mode slowdown", fontsize=10)
    ax2.legend(fontsize=6, ncol=2)
    ax2.grid(True, alpha=0.3)
    best = slow.loc[slow.groupby("model")["max"].idxmin()]
    fig.suptitle("Multi-PU scheduling (SNAKE Sec. 5, Fig. 13)", fontsize=11)
    caption(fig, "Best fixed mode per model (lowest worst-case slowdown): " + "; ".join(
        f"{r['model']}: {r['mode']} {r['min']:.2f}x-{r['max']:.2f}x" for r in best.to_dict("records"))
        + " (paper: LLaMA3-70B OS-ST 1.04x-1.56x, Qwen3-30B-A3B 1.18x-6.43x). Paper's mode shares (Fig. 13a), "
        "IS-S / IS-ST / OS-S / OS-ST: LLaMA3-70B 59.7 / 12.5 / 25.0 / 2.8%, Qwen3-30B-A3B 27.8 / 33.3 / 20.8 / "
        "18.1%. Shares over weight operators x batches x contexts; grouped = MoE experts run whole and concurrently "
        "on different PUs (a fixed mode may not), QK^T / PV (head-parallel) left out. The per-operator choice is the "
        "minimum over the modes, so it is never slower than any fixed mode.")
    pdf.savefig(fig)
    plt.close(fig)


def _shape_page(pdf: PdfPages, s: SnakeStudy) -> None:
    piv = s.shapes.pivot_table(index=["model", "batch"], columns="shape", values="share", fill_value=0.0)
    order = sorted(piv.columns, key=lambda c: int(c.split("x")[0]))
    fig, ax = plt.subplots(figsize=PAGE)
    fig.subplots_adjust(bottom=0.25, top=0.9)
    labels = [f"{m.split('-')[0]}\nB={b}" for m, b in piv.index]
    left = np.zeros(len(piv))
    for shape in order:
        ax.bar(labels, piv[shape], bottom=left, label=shape)
        left += piv[shape].to_numpy()
    ax.set_ylabel("share of decode time per logical shape")
    ax.set_ylim(0, 1.25)
    ax.legend(fontsize=8, title="rows x cols", ncol=len(order), loc="upper center")
    fig.suptitle("Logical array shape chosen vs batch (SNAKE Fig. 14a)", fontsize=11)
    caption(fig, "Per operator SNAKE picks the logical shape (either orientation) and mode with the least time. "
            "Under OS the array's short side holds m (the batch), so dense models move from 8x512 to 64x64 as the "
            "batch grows (the paper's Fig. 14a trend); MoE experts see m = batch x top-k / experts (1-2 tokens for "
            "Qwen3) and run IS modes, where the short side holds m and the long side k, so their shape does not "
            "follow the batch.", y=0.03)
    pdf.savefig(fig)
    plt.close(fig)


def _buffer_page(pdf: PdfPages, s: SnakeStudy) -> None:
    b = s.buffers
    share_cols = [c for c in b.columns if c.startswith("share_")]
    rows = [[r["shape"], fmt(r["os_weight_kib"], spec=".0f"), fmt(r["os_activation_kib"], spec=".0f"),
             fmt(r["is_weight_kib"], spec=".0f"), fmt(r["is_activation_kib"], spec=".0f"),
             *(f"{100 * r[c]:.0f}%" for c in share_cols)] for r in b.to_dict("records")]
    latency = s.spec.area_split.dram_latency_ns
    table_page(pdf, "Buffer demand per logical shape (SNAKE Fig. 14b)",
               f"Minimum weight-side and activation-side buffer for stall-free streaming: each stream double-buffered "
               f"over the DRAM latency ({latency:g} ns = {latency * 0.8:.0f} cycles at 800 MHz, area_split."
               "dram_latency_ns, an assumption), FP16, by Little's law (evaluators/systolic.buffer_demand_bytes). "
               "Under OS the weights enter along the long side and the inputs along the short one (activation side "
               "= inputs); under IS the shape is transposed (512x8), weights enter along the rows and the outputs "
               "leave along the columns (activation side = outputs). As in the paper, narrower, less elongated "
               "shapes need less weight buffer and more activation-side buffer. Share = the mode models' decode time "
               "on that shape (all batches and contexts).",
               [("Buffer KiB per core", ["shape", "OS weight", "OS activation", "IS weight", "IS activation",
                                          *(f"share {c[6:]}" for c in share_cols)], rows)])


def _link_page(pdf: PdfPages, s: SnakeStudy) -> None:
    sw = s.link_sweep["speedups"]
    links = sorted(sw["link_GBps"].unique())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=PAGE)
    fig.subplots_adjust(bottom=0.25, top=0.88, wspace=0.3)
    avg = _summaries(s).link_speedups
    for b in BASELINE_LABELS:
        if b in avg[links[0]]:
            ax1.plot(links, [avg[x][b] for x in links], marker="o", label=BASELINE_LABELS[b])
            ax1.axhline(PAPER_SPEEDUPS[b], ls=":", lw=0.8, c=ax1.lines[-1].get_color())
    ax1.axvline(s.spec.template.link_GBps, c="k", lw=0.6, ls="--")
    ax1.set_xscale("log")
    ax1.set_xticks(links, [f"{x:g}" for x in links])
    ax1.minorticks_off()
    ax1.set_xlabel("inter-PU link bandwidth, GB/s")
    ax1.set_ylabel("mean decode speedup of SNAKE (dotted: paper)")
    ax1.legend(fontsize=7)
    ax1.grid(True, alpha=0.3)
    for model in s.spec.mode_models:
        shares = [_summaries(s).link_mode_shares[(float(x), model)] for x in links]
        for mode in (*MODES, GROUPED):
            ys = [float(d[mode].iloc[0]) if len(d) else 0.0 for d in shares]
            if max(ys) > 0:
                ax2.plot(links, ys, marker=".", label=f"{model.split('-')[0]} {mode}")
    ax2.set_xscale("log")
    ax2.set_xticks(links, [f"{x:g}" for x in links])
    ax2.minorticks_off()
    ax2.set_xlabel("inter-PU link bandwidth, GB/s")
    ax2.set_ylabel("share of weight operators per mode")
    ax2.legend(fontsize=6, ncol=2)
    ax2.grid(True, alpha=0.3)
    fig.suptitle("Inter-PU link bandwidth (not given by the paper): its effect on speedups and mode choice",
                 fontsize=11)
    caption(fig, f"The scenario's template assumes {s.spec.template.link_GBps:g} GB/s per link (dashed line); "
            f"the sweep ({', '.join(f'{x:g}' for x in links)} GB/s) reruns every model, batch and context. Faster "
            "links shrink the collectives, which SNAKE's mode choice trades against compute; the fixed designs' "
            "all-gather shrinks too, so the speedups move with the link speed (the claims page names where the "
            "paper's numbers fall). Dotted lines: the paper's average speedups.", y=0.03)
    pdf.savefig(fig)
    plt.close(fig)


def _budget(s: SnakeStudy) -> float:
    """The logic-die budget at the template's DRAM bandwidth, W (NaN before the power table exists)."""
    return float(s.power["budget_W"].iloc[0]) if not s.power.empty else float("nan")


def _dram_note(s: SnakeStudy) -> str:
    """`` (DRAM x pJ/bit)`` of the study's energy model, or nothing."""
    return "" if s.energy_model is None else f" (DRAM {1e12 * s.energy_model.dram_bit_J:.2f} pJ/bit)"


def _energy_page(pdf: PdfPages, s: SnakeStudy) -> None:
    """Tokens per joule per design and model, the logic-die power of every design against the budget (Fig. 11),
    and Fig. 4a's energy line over the PE / buffer split."""
    en = s.energy
    per_model = en.groupby(["model", "design"])["tokens_per_J"].mean().unstack()
    order = [d for d in ("snake", *BASELINE_LABELS) if d in per_model.columns]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=PAGE, gridspec_kw={"width_ratios": [1.6, 1.0, 1.0]})
    fig.subplots_adjust(bottom=0.33, top=0.88, wspace=0.35)
    x = np.arange(len(per_model))
    w = 0.8 / len(order)
    for k, d in enumerate(order):
        ax1.bar(x + k * w, per_model[d], w, label=BASELINE_LABELS.get(d, "SNAKE"))
    ax1.set_yscale("log")
    ax1.set_xticks(x + w * (len(order) - 1) / 2, [m.split("-")[0] for m in per_model.index], fontsize=8)
    ax1.set_ylabel(f"output tokens per joule, TP = {s.spec.tp} (logic dies; H100s whole)", fontsize=8)
    ax1.set_title("(a) tokens/J, mean over batches and contexts", fontsize=9)
    ax1.legend(fontsize=7)
    ax1.grid(True, axis="y", alpha=0.3)
    pw = s.power.set_index("design")
    bottom = np.zeros(len(pw))
    for part in PEAK_PARTS:
        ax2.bar(range(len(pw)), pw[f"{part}_W"], bottom=bottom, label=part)
        bottom += pw[f"{part}_W"].to_numpy()
    ax2.plot(range(len(pw)), pw["decode_max_W"], "k*", ms=9, label="highest decode step")
    budget, uncapped = float(pw["budget_W"].iloc[0]), float(pw["budget_uncapped_W"].iloc[0])
    t = s.spec.template
    ax2.axhline(budget, c="r", lw=1.2, label=f"budget at {t.dram_TBps:g} TB/s")
    ax2.axhline(uncapped, c="r", ls="--", lw=1.2, label=f"budget at {UNCAPPED_DRAM_TBPS:g} TB/s")
    short = {"snake": "SNAKE", "mac_tree": "MAC tree", "sa48x48": "48x48", "sa8x288": "8x288"}
    ax2.set_xticks(range(len(pw)), [short.get(d, d) for d in pw.index], fontsize=6)
    ax2.set_ylabel("logic-die power at full activity, W", fontsize=8)
    ax2.set_title("(b) power vs the thermal budget (Fig. 11)", fontsize=9)
    ax2.legend(fontsize=6)
    ae = s.area_energy
    if not ae.empty:
        ax3.plot(ae["array"], ae["logic_J"] * 1e3, "o-", c="k", label="logic-die energy")
        ax3.set_ylabel("decode-step energy, mJ", fontsize=8)
        ax3.tick_params(labelsize=7)
        tw = ax3.twinx()
        tw.bar(ae["array"], ae["step_s"] * 1e6, alpha=0.3, color="tab:blue")
        tw.set_ylabel("latency, us (bars)", fontsize=8)
        tw.tick_params(labelsize=7)
        ax3.set_xticks(range(len(ae)), [f"{a}\n{kb}K" for a, kb in zip(ae["array"], ae["buffer_kb"], strict=True)],
                       fontsize=6)
    ax3.set_title(f"(c) PE / buffer split (Fig. 4a), {s.spec.area_split.model}", fontsize=9)
    fig.suptitle("Energy and power (SNAKE Secs. 6.2-6.3, Figs. 4a, 11, 12)", fontsize=11)
    avg = _summaries(s).energy_ratios
    sn = pw.loc["snake"]
    caption(fig, "Energy efficiency of SNAKE (baseline energy / SNAKE's, mean over models): " + "; ".join(
        f"{BASELINE_LABELS.get(b, b)} {quantity(v, '.2f', 'SNAKE', b, ENERGY_X)}x "
        f"(paper {PAPER_ENERGY.get(b, float('nan')):.2f}x)" for b, v in avg.items())
            + ". The paper gives its logic-die power at peak per component (Fig. 11) and no "
        "energy per action: each per-action energy is that power over the component's peak rate at 800 MHz "
        "(instances/energy/snake.yaml; SRAM, DRAM activation, TSV and H100 constants from common.yaml), so SNAKE at "
        f"full activity draws {quantity(sn['peak_W'], '.1f', 'snake', 'peak_W')} W by construction; its highest "
        f"decode step draws {quantity(sn['decode_max_W'], '.1f', 'snake', 'decode_max_W')} W. The fixed arrays "
        "use the same PE at 1 GHz and clock every PE while they "
        "compute; the MAC tree adds its broadcast and reduction energy per MAC. Budget (Sec. 6.2): the stack's "
        f"thermal limit less the DRAM power, {budget:.1f} W at {t.dram_TBps:g} TB/s and {uncapped:.1f} W at the "
        f"uncapped {UNCAPPED_DRAM_TBPS:g} TB/s{_dram_note(s)}: SNAKE "
        f"{'fits' if sn['fits'] else 'does not fit'} the first and "
        f"{'fits' if sn['fits_uncapped'] else 'does not fit'} the second, as the paper's choice of 24 TB/s says. "
        f"(c): decode at batch {s.spec.area_split.batch}; each array with the largest buffer (KiB) the core's area "
        "leaves; a starved array computes longer and its clocked PEs cost energy all that time.", y=0.02)
    pdf.savefig(fig)
    plt.close(fig)


def _hardware_page(pdf: PdfPages, s: SnakeStudy) -> None:
    rows = []
    for r in s.shape_set:
        sol = r["solution"]
        shapes = ", ".join(f"{a}x{b}" for a, b in r["shapes"]) or "-"
        rows.append([fmt(r["budget_mm2"]), r["method"], shapes, fmt(r["area_mm2"], spec=".3f"),
                     fmt(None if sol.objective is None else sol.objective * 1e3, spec=".4f"), sol.status.value,
                     sol.termination.value.replace("_", " ")])
    ap = s.area_problem
    arows = []
    for sol in s.area_split:
        i, j = sol.decision if sol.decision is not None else (None, None)
        arows.append([sol.method, "-" if i is None else f"{ap.pe_configs[i][0]}x{ap.pe_configs[i][1]}",
                      "-" if j is None else str(ap.buffer_kb[j]),
                      "-" if i is None else f"{ap.area_mm2(i, j):.3f} of {ap.area_budget_mm2:.3f}",
                      fmt(None if sol.objective is None else sol.objective * 1e6, spec=".1f"), sol.status.value,
                      sol.termination.value.replace("_", " ")])
    table_page(pdf, "Exact hardware choices vs enumeration", "Shape set (formulations/snake_shapes.py): which "
               "logical shapes to support when each costs weight-injection ports (the widest shape's count, shared) "
               "and reconfiguration area; objective (mix time) = the decode steps of every Table 1 model at every "
               "batch, summed. Area split "
               f"(formulations/snake_area.py): {s.spec.area_split.model} decode at batch {s.spec.area_split.batch}, "
               "PE array vs buffer under the core's share of 2.35 mm^2; the buffer bounds the DRAM streaming rate "
               "by Little's law. Area figures are the scenario's stated assumptions.",
               [("Supported shape set per area budget (mm^2 per PU)",
                 ["budget", "method", "shapes", "area mm^2", "mix time ms", "status", "ended by"], rows),
                ("PE / buffer split of one core", ["method", "array", "buffer KiB", "area mm^2", "latency us",
                                                    "status", "ended by"], arows)])
    grid = s.area_grid * 1e6
    fig, ax = plt.subplots(figsize=PAGE)
    fig.subplots_adjust(bottom=0.2, top=0.88)
    feasible = (ap.pe_area_mm2[:, None] + ap.buffer_area_mm2[None, :]) <= ap.area_budget_mm2
    im = ax.imshow(np.where(feasible, grid.to_numpy(), np.nan), cmap="viridis_r", aspect="auto")
    ax.imshow(np.where(feasible, np.nan, 1.0), cmap="Greys", vmin=0, vmax=4, aspect="auto")
    chosen = next((x.decision for x in s.area_split if x.decision is not None), None)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            txt = f"{grid.iloc[i, j]:.0f}" + ("" if feasible[i, j] else "\n(too big)")
            colour = text_colour_on(im, grid.iloc[i, j]) if feasible[i, j] else "#555555"
            ax.text(j, i, txt, ha="center", va="center", fontsize=7, color=colour,
                    fontweight="bold" if (i, j) == chosen else "normal")
    if chosen is not None:
        ax.add_patch(plt.Rectangle((chosen[1] - 0.5, chosen[0] - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
    ax.set_xticks(range(grid.shape[1]), [f"{c} KiB" for c in grid.columns])
    ax.set_yticks(range(grid.shape[0]), grid.index)
    fig.colorbar(im, ax=ax, label="decode latency of the weight GEMMs, us")
    fig.suptitle(f"PE array vs buffer (SNAKE Fig. 4a): {s.spec.area_split.model}, batch {s.spec.area_split.batch}",
                 fontsize=11)
    caption(fig, f"Grey cells (too big) exceed the core's {ap.area_budget_mm2:.3f} mm^2; the red cell is the choice of "
            "the MILP and of the enumeration (the best cell that fits). The paper picks 8x512 with a 240 kB weight "
            "buffer (Fig. 4a); under this scenario's area assumptions that pair needs about 0.451 mm^2.")
    pdf.savefig(fig)
    plt.close(fig)


def _serving_page(pdf: PdfPages, s: SnakeStudy) -> None:
    d = s.serving
    models = list(dict.fromkeys(d["model"]))
    fig, axes = plt.subplots(2, len(models), figsize=PAGE, squeeze=False)
    fig.subplots_adjust(bottom=0.2, top=0.88, hspace=0.35, wspace=0.3)
    for j, m in enumerate(models):
        g = d[d["model"] == m]
        ours = g[g["design"] == "snake"].set_index("rate_fraction")
        for i, (col, label) in enumerate((("e2e_s", "E2E"), ("tbt_s", "TBT"))):
            ax = axes[i][j]
            for name, h in g.groupby("design", sort=False):
                h = h.set_index("rate_fraction")
                y = h[col] / ours[col]
                (line,) = ax.plot(h.index, y, marker="o", label=BASELINE_LABELS.get(name, "SNAKE"))
                if "overloaded" in h:  # offered at or above its own capacity: no steady state, drawn hollow
                    over = h["overloaded"].astype(bool)
                    if over.any():
                        ax.scatter(h.index[over], y[over], s=60, facecolors="white", edgecolors=line.get_color(),
                                   zorder=3, label="overloaded (rate >= its capacity)" if j == 0 and i == 0 and
                                   not any("overloaded" in t for t in ax.get_legend_handles_labels()[1]) else None)
            ax.set_title(f"{m}: {label}", fontsize=8)
            ax.set_xlabel("rate / capacity" if i else "", fontsize=7)
            ax.set_ylabel(f"{label} / SNAKE's" if j == 0 else "", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.945), ncol=len(labels), fontsize=7,
               frameon=False)
    sv = s.spec.serving
    base = "; ".join(f"{m}: SNAKE E2E {r['e2e_s']:.2f} s, TBT {1e3 * r['tbt_s']:.2f} ms, prefill {r['prefill_s']:.3f} s"
                     for m in models for r in [d[(d["model"] == m) & (d["design"] == "snake")].iloc[0]])
    fig.suptitle(f"Serving latency vs request rate, {sv.l_in} in / {sv.l_out} out (SNAKE Fig. 10)", fontsize=11)
    cut = "; ".join(f"{m} serves {int(g['l_in'].iloc[0])} in / {int(g['l_out'].iloc[0])} out (its context)"
                    for m, g in d.groupby("model", sort=False) if int(g["l_in"].iloc[0]) != sv.l_in)
    caption(fig, "x-axis: request rate over SNAKE's capacity (the lower of prefill and decode). Event simulation: "
            f"Poisson arrivals, {sv.requests} requests per point, GPU prefill (H100 at "
            f"{100 * sv.gpu_efficiency:.0f}% of 989 TFLOPS, one FIFO server), continuous decode on the NMP (at most "
            f"{sv.max_batch} requests; each iteration = the design's decode GEMMs and attention products at that "
            "batch, streaming the KV cache; the GPU decodes on its own roofline). Latencies are normalized to "
            f"SNAKE's at the same rate, as in the paper. At the lowest rate: {base}. {cut + '. ' if cut else ''}"
            "A baseline whose capacity is below the offered rate queues, so its latency grows with the number of "
            f"requests simulated: those points are hollow ({_overloaded_text(d)}) and left out of the claims' "
            "ratios.", y=0.02)
    pdf.savefig(fig)
    plt.close(fig)


def _overloaded_text(d: Any) -> str:
    """How many serving points of each design are overloaded (offered at or above its own capacity)."""
    if "overloaded" not in d:
        return "not marked"
    over = d[d["overloaded"].astype(bool)]["design"].value_counts()
    if over.empty:
        return "none in this run"
    return ", ".join(f"{BASELINE_LABELS.get(k, 'SNAKE' if k == 'snake' else k)} {n} of "
                     f"{int((d['design'] == k).sum())}" for k, n in over.items())


def details(s: SnakeStudy) -> dict[str, Any]:
    """The manifest's SNAKE part: settings, models, batches, mode shares, fixed-mode slowdowns, the hardware
    choices of every method, the serving table, the energy-efficiency ratios, the power table and Fig. 4a's energy
    line."""
    return {
        "settings": s.spec.model_dump(mode="json"), "models": s.spec.models, "batches": s.spec.batches,
        "mode_distribution": _summaries(s).mode_shares.round(4).to_dict("index"),
        "fixed_mode_slowdown": _summaries(s).fixed_mode_slowdown.round(4).to_dict("records"),
        "shape_set": [{"budget_mm2": r["budget_mm2"], "method": r["method"], "shapes": r["shapes"],
                       "area_mm2": r["area_mm2"], "decode_time_s": r["solution"].objective,
                       "status": r["solution"].status.value} for r in s.shape_set],
        "area_split": [{"method": x.method, "decision": x.decision, "latency_s": x.objective,
                        "status": x.status.value} for x in s.area_split],
        "serving": s.serving.to_dict("records"),
        "buffers": s.buffers.round(3).to_dict("records"),
        "link_sweep": {str(x): v for x, v in _summaries(s).link_speedups.items()},
        "claims": None if s.claims is None else s.claims.summary,
        "energy_ratios": _summaries(s).energy_ratios,
        "power": s.power.round(4).to_dict("records"),
        "area_energy": s.area_energy.to_dict("records"),
    }


def summary_lines(s: SnakeStudy) -> list[str]:
    """Page 1: SNAKE's mean decode speedup and energy efficiency over each baseline
    (:attr:`SnakeSummaries.average_speedups`, :attr:`SnakeSummaries.energy_ratios`), the closest baseline (what
    would change the verdict), the logic die's peak power against its budget (:attr:`SnakeStudy.power`), the exact
    solves (:meth:`SnakeStudy.solves`) and the fidelity line (SNAKE Secs. 6.3-6.7)."""
    assert s.summaries is not None, "the SNAKE study's run() computes the summaries"
    sp, en = s.summaries.average_speedups, s.summaries.energy_ratios
    lines = ["## Recommendation"]
    if sp:
        lines.append("    SNAKE's decode speedup (mean per model over batches and contexts, then over models): "
                     + "; ".join(f"{quantity(x, '.2f', 'SNAKE', b, SPEEDUP)}x over {BASELINE_LABELS.get(b, b)}"
                                 for b, x in sp.items()) + ".")
        close = min(sp, key=lambda b: sp[b])
        lines.append(f"    Closest: {BASELINE_LABELS.get(close, close)} at "
                     f"{quantity(sp[close], '.2f', 'SNAKE', close, SPEEDUP)}x; "
                     + ("SNAKE is faster than every baseline" if sp[close] > 1 else
                        f"{BASELINE_LABELS.get(close, close)} is at least as fast") + " in this run.")
    if en:
        lines.append("    Energy efficiency (decode tokens/J): "
                     + "; ".join(f"{quantity(x, '.2f', 'SNAKE', b, ENERGY_X)}x {BASELINE_LABELS.get(b, b)}'s"
                                 for b, x in en.items()) + ".")
    if not s.power.empty:
        lines.append("## Power of the logic die (W)")
        for r in s.power.itertuples():
            verdict = "within" if r.fits else "over"
            lines.append(f"    {BASELINE_LABELS.get(r.design, r.design) if r.design != 'snake' else 'SNAKE'}: peak "
                         f"{quantity(r.peak_W, '.1f', r.design, 'peak_W')} W, decode at most "
                         f"{quantity(r.decode_max_W, '.1f', r.design, 'decode_max_W')} W, {verdict} the "
                         f"{r.budget_W:.0f} W "
                         "budget")
    lines += ["## Exact solves", *solve_lines(s.solves())]
    return lines + caveat_lines("snake", s.claims.rows if s.claims is not None else None)


def draw(pdf: PdfPages, s: SnakeStudy) -> None:
    """Draw every page of the SNAKE report into ``pdf``: the run summary first."""
    summary_page(pdf, f"chipdse SNAKE report: the run ({s.scenario.spec.name})", summary_lines(s))
    _speedup_page(pdf, s)
    _mode_page(pdf, s)
    _shape_page(pdf, s)
    _buffer_page(pdf, s)
    if s.link_sweep:
        _link_page(pdf, s)
    _hardware_page(pdf, s)
    if not s.serving.empty:
        _serving_page(pdf, s)
    if not s.energy.empty and not s.power.empty:
        _energy_page(pdf, s)
    if s.claims is not None:
        claims_page(pdf, s.claims.rows, s.claims.context, paper=s.claims.paper)
    glossary_pages(pdf, [
        "## Terms",
        "    PU: one processing unit of the NMP (cores of systolic arrays next to a DRAM stack); SNAKE reshapes each "
        "array's logical shape (rows x cols) per operator.",
        "    Baselines: " + "; ".join(f"{k} = {v}" for k, v in BASELINE_LABELS.items()) + ".",
        f"    Modes: {', '.join(MODES)}: how an operator is split over the PUs (IS / OS = input / output "
        "stationary; S = spatial split, ST = spatial and temporal; SNAKE Sec. 5a).",
        "    Speedup: baseline decode-step latency / SNAKE's, same model and batch. TBT: time between two output "
        "tokens of one request. E2E: a request's end-to-end latency.",
        f"    Ended by: the limit or event that ended a solve; {PROVEN_GAP}."], CSV[0], columns(s))


def plots(s: SnakeStudy) -> list[Plot]:
    """``report.html``'s interactive plot: every ``speedups.csv`` row, SNAKE's decode-step speedup over each
    baseline against its energy ratio (SNAKE Figs. 9-10)."""
    return [table_scatter("speedups", "SNAKE over each baseline: speedup vs energy ratio",
                          "One point per model, batch, context and baseline (speedups.csv): decode-step time of the "
                          "baseline over SNAKE's (x) and its energy per step over SNAKE's (y); above 1 on both, SNAKE "
                          "is faster and spends less.", s.speedups, ("speedup", "speedup over the baseline (x)"),
                          ("energy_ratio", "energy ratio, baseline / SNAKE"), "baseline",
                          ["model", "batch", "context", "snake_step_s", "snake_power_W"], log_x=True)]
