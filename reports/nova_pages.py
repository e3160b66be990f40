"""The NOVA report: throughput and E2E latency against the baselines (Fig. 11), the NMP-tier ablation (Fig. 14),
the split policies under three routings and the expert split (Fig. 16), capacity (Fig. 15) and NOVA's claims
against this run; written by :func:`chipdse.reports.files.write_report`."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from chipdse.core.solution import EXCESS_OVER_BEST  # noqa: E402
from chipdse.evaluators.nova_system import ABLATION, DESIGNS, NovaDesign  # noqa: E402
from chipdse.reports.claims_page import claims_page  # noqa: E402
from chipdse.reports.html import Plot, table_scatter  # noqa: E402
from chipdse.reports.style import PAGE, caption, fmt, glossary_pages, quantity, table_page  # noqa: E402
from chipdse.reports.summary_page import caveat_lines, solve_lines, summary_page  # noqa: E402
from chipdse.studies.nova.artifacts import PAPER, NovaStudy, NovaSummaries  # noqa: E402

NAMES = [d.name for d in DESIGNS]

SERVED_X, TPJ_X, POWER_W, MEAN = "serve_decode_x", "tokens_per_J_x_gpu", "power_W", "mean over models"
"""Parts of the :data:`chipdse.reports.style.QuantityKey` of NOVA's printed numbers: a design's served decode gain,
tokens/J over the GPU's and power, per model or as the mean over models."""

CSV = ("runs.csv", "runs")
"""The report's CSV: its file name and the result's table (every (model, batch, lengths, design) run)."""


SHORT = {"nemotron3-nano-30b-a3b": "N3-Nano", "nemotron3-super-120b-a12b": "N3-Super",
         "falcon-h1-7b": "Falcon-H1", "qwen3-30b-a3b": "Qwen3-30B"}


def design_terms(designs: tuple[NovaDesign, ...]) -> list[str]:
    """The glossary's definition of each design, ``"NAME: offloads ... to ... NMP, ..."``: what it offloads, where,
    its cubes' density, its expert split (and the one it serves with under continuous batching) and its mode
    priority, so two designs that differ only in how they serve read differently (NOVA Secs. VI-A, VI-E); a design
    equal to an earlier one but for its name says so."""
    out: list[str] = []
    for i, d in enumerate(designs):
        same = next((e.name for e in designs[:i] if replace(e, name=d.name) == d), None)
        out.append(f"{d.name}: the same design as {same}" if same else
                   f"{d.name}: offloads {', '.join(sorted(d.offload)) or 'nothing'}"
                   + ("" if d.nmp == "none" else f" to {d.nmp} NMP")
                   + ("" if d.density == 1.0 else f", {d.density:g}x-density cubes")
                   + (f", expert split {d.expert_split}" if d.two_tier else "")
                   + (f" (serving with continuous batching: {d.serving_split})"
                      if d.two_tier and d.serving_split not in (None, d.expert_split) else "")
                   + (", modes chosen for the least energy" if d.priority == "energy" else ""))
    return out


def columns(s: NovaStudy) -> dict[str, tuple[str, str]]:
    """Every runs.csv column: ``{name: (unit, description)}`` ("-" for unitless); empty step parts are the time
    spent in that kind of operator, wherever it ran."""
    return {
        "model": ("-", "model card key"),
        "gpus": ("GPUs", "H100s of the system (tensor parallel when more than one)"),
        "batch": ("requests", "decode batch"),
        "l_in": ("tokens", "prompt length per request"),
        "l_out": ("tokens", "output length per request"),
        "design": ("-", "the system design: " + ", ".join(NAMES)),
        "fits": ("yes/no", "weights, KV cache and SSM state fit in memory (no: every time below is empty)"),
        "gpu_s": ("s", "part of one decode step on the GPU (its operators and fallbacks)"),
        "nmp_s": ("s", "part of one decode step on the near-memory processors (offloaded operators)"),
        "sync_s": ("s", "GPU-NMP synchronizations of one decode step"),
        "gqa_s": ("s", "grouped-query attention's time in one decode step, wherever it ran"),
        "ssm_s": ("s", "SSM (Mamba) layers' time in one decode step, wherever they ran"),
        "moe_s": ("s", "MoE experts' time in one decode step, wherever they ran"),
        "step_s": ("s", "one decode step at the mean context (l_in + l_out / 2)"),
        "throughput_tps": ("tokens/s", "decode throughput: batch / step_s"),
        "prefill_s": ("s", "GPU prefill of the batch"),
        "e2e_s": ("s", "end-to-end latency of the batch: prefill_s + l_out x step_s"),
        "serve_throughput_tps": ("tokens/s", "served stream (continuous batching, 2x batch requests, outputs "
                                 "L_out/2-3L_out/2): output tokens / makespan, prefill included (empty: not served)"),
        "serve_decode_tps": ("tokens/s", "served stream: output tokens / time in decode steps (NOVA Fig. 11a)"),
        "serve_e2e_s": ("s", "served stream: mean admission-to-last-token latency per request"),
        "serve_makespan_s": ("s", "served stream: time to serve every request"),
        "e_gpu_compute_J": ("J", "one decode step's energy: GPU FLOPs"),
        "e_gpu_dram_J": ("J", "one decode step's energy: bytes the GPU reads from the cubes (HBM access and the "
                         "on-chip path to the SMs)"),
        "e_nmp_activation_J": ("J", "one decode step's energy: row activations of the near-memory processors' reads"),
        "e_nmp_access_J": ("J", "one decode step's energy: near-memory column accesses, TSV and base-die wires"),
        "e_nmp_compute_J": ("J", "one decode step's energy: near-memory FLOPs"),
        "e_static_J": ("J", "one decode step's energy: static power of the GPUs and cubes over step_s"),
        "energy_J": ("J", "one decode step's energy (the six parts above)"),
        "power_W": ("W", "average power of a decode step: energy_J / step_s"),
        "nmp_W_per_cube": ("W", "near-memory power per cube of a decode step: its activation, access and NMP FLOP "
                           "energy / step_s / cubes"),
        "over_power_budget": ("bool", "nmp_W_per_cube exceeds system.cube_nmp_budget_W (62 W: SNAKE Sec. 6.2's "
                              "logic-die budget)"),
        "decode_tokens_per_J": ("tokens/J", "decode energy efficiency: batch / energy_J"),
        "prefill_J": ("J", "energy of the GPU prefill of the batch (static power included)"),
        "e2e_J": ("J", "energy of one static batch end to end: prefill_J + l_out x energy_J"),
        "tokens_per_J": ("tokens/J", "E2E energy efficiency: batch x l_out / e2e_J (NOVA Fig. 11c)"),
        "e2e_gpu_prefill_J": ("J", "NOVA Fig. 13 breakdown of e2e_J: the GPU prefill"),
        "e2e_nmp_decode_J": ("J", "NOVA Fig. 13 breakdown of e2e_J: decode work near memory"),
        "e2e_gpu_decode_J": ("J", "NOVA Fig. 13 breakdown of e2e_J: decode work on the GPU and static power"),
        "serve_energy_J": ("J", "served stream: energy of every prefill and decode step"),
        "serve_tokens_per_J": ("tokens/J", "served stream: output tokens / serve_energy_J"),
        "serve_decode_tokens_per_J": ("tokens/J", "served stream: output tokens / energy of its decode steps"),
    }


def static_distinct(designs: tuple[NovaDesign, ...]) -> tuple[list[str], str]:
    """The names of ``designs`` without those equal to an earlier one but for the split they serve with (NOVA 1:9
    is NOVA on a static batch), and the caption clause naming them ("" when none)."""
    seen: dict[NovaDesign, str] = {}
    dropped = []
    for d in designs:
        key = replace(d, name="", serving_split=None)
        if key in seen:
            dropped.append(f"{d.name} is {seen[key]} on a static batch (they differ only when served)")
        else:
            seen[key] = d.name
    return list(seen.values()), "" if not dropped else " (" + "; ".join(dropped) + ")"


def _throughput_page(pdf: PdfPages, s: NovaStudy) -> None:
    l_in, l_out = s.spec.lengths[len(s.spec.lengths) // 2]
    d = s.runs[(s.runs["l_in"] == l_in) & (s.runs["l_out"] == l_out)]
    groups = list(d.groupby(["model", "batch"]).groups)
    names, same = static_distinct(DESIGNS)
    fig, ax = plt.subplots(figsize=PAGE)
    fig.subplots_adjust(bottom=0.3, top=0.9)
    w = 0.8 / len(names)
    x = np.arange(len(groups))
    over_any = False
    for k, name in enumerate(names):
        rows = [d[(d["model"] == m) & (d["batch"] == b) & (d["design"] == name)].iloc[0] for m, b in groups]
        over = [bool(r.get("over_power_budget", False)) for r in rows]
        over_any |= any(over)
        ax.bar(x + k * w, np.nan_to_num([float(r["throughput_tps"]) for r in rows]), w, label=name,
               hatch=["////" if o else "" for o in over], edgecolor=["k" if o else "none" for o in over], lw=0.4)
    for xi, (m, b) in zip(x, groups, strict=True):
        oom = [n for n in names if not bool(d[(d["model"] == m) & (d["batch"] == b) & (d["design"] == n)]["fits"]
                                           .iloc[0])]
        if oom:
            ax.text(xi + w * (len(names) - 1) / 2, ax.get_ylim()[1] * 0.02, "OoM:\n" + "\n".join(oom),
                    ha="center", va="bottom", fontsize=6)
    gpus = {m: int(d[d["model"] == m]["gpus"].iloc[0]) for m, _ in groups}
    ax.set_xticks(x + w * (len(names) - 1) / 2, [f"{SHORT.get(m, m)}\nB={b}{f', {gpus[m]} GPUs' if gpus[m] > 1 else ''}"
                                                  for m, b in groups], fontsize=7)
    ax.set_ylabel("decode throughput, tokens/s")
    if over_any:
        ax.bar([np.nan], [np.nan], color="white", edgecolor="k", hatch="////", lw=0.4,
               label=f"over {s.spec.system.cube_nmp_budget_W:g} W/cube NMP budget")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    sm = _summaries(s).numbers
    fig.suptitle(f"Decode throughput at L_in/L_out = {l_in}/{l_out} (NOVA Fig. 11a)", fontsize=11)
    tx, red = sm["nova_vs_gpu_throughput_x"], sm["nova_vs_gpu_e2e_reduction"]
    exact = sm["per_design"].get("NOVA exact", {})
    caption(fig, f"NOVA (MoE layer: Tier-1 only, Tier-2 only or its static 1:9 split, whichever is fastest) over the "
            f"GPU, mean over the {sm['runs_compared']} run(s) where the GPU fits, served with continuous batching: "
            f"{fmt(tx, spec='.2f')}x decoding throughput, {fmt(None if red is None else 100 * red, spec='.1f')}% "
            f"lower E2E latency (paper: {PAPER['throughput_x']}x, {100 * PAPER['e2e_reduction']:.1f}%); one static "
            f"batch's decode step: {fmt(sm['nova_vs_gpu_decode_x'], spec='.2f')}x, with the exact expert split "
            f"{fmt(exact.get('throughput_x'), spec='.2f')}x. Bars: one static batch{same}; hatched: the decode step "
            f"draws more than {s.spec.system.cube_nmp_budget_W:g} W of near-memory power per cube "
            "(system.cube_nmp_budget_W). OoM: weights, KV cache and SSM "
            "state exceed the cubes (five 36 GB HBM4 cubes per H100; NOVA's 2.09x-density cubes hold 75 GB). Expert "
            f"routing: {s.spec.system.routing}.", y=0.03)
    pdf.savefig(fig)
    plt.close(fig)


def _e2e_page(pdf: PdfPages, s: NovaStudy) -> None:
    rows = []
    for (m, b, li, lo), g in s.runs.groupby(["model", "batch", "l_in", "l_out"], sort=False):
        cells = [SHORT.get(m, m), str(b), f"{li}/{lo}"]
        for name in NAMES:
            r = g[g["design"] == name].iloc[0]
            served = r.get("serve_e2e_s")
            tail = "" if served is None or not np.isfinite(served) else f" / {served:.1f}"
            cells.append("OoM" if not r["fits"] else f"{r['step_s'] * 1e3:.2f} / {r['e2e_s']:.1f}{tail}")
        rows.append(cells)
    table_page(pdf, "Decode step and E2E latency (NOVA Fig. 11b)", "Each cell: decode step at the mean context, ms "
               "/ E2E latency of one static batch (GPU prefill + L_out steps), s / mean E2E latency of a request in "
               "the served stream (continuous batching, 2x batch requests), s (NOVA exact is not served: it would "
               "need an exact split per batch size of the stream). OoM: does not fit in memory.",
               [("per model, batch and L_in / L_out", ["model", "batch", "L_in/L_out", *NAMES], rows)])


def _ablation_page(pdf: PdfPages, s: NovaStudy) -> None:
    """NOVA Fig. 14: each NMP variant's decode throughput over the GPU, per model and batch (mean over lengths)."""
    if s.ablation.empty:
        return
    names = [d.name for d in ABLATION]
    ratios = {n: _summaries(s).ablation_x[n] for n in names}
    index = list(dict.fromkeys(zip(s.ablation["model"], s.ablation["batch"], strict=True)))
    rows = []
    for m, b in index:
        cells = [fmt(ratios[n].get((m, b)), spec=".2f") for n in names]
        best = max(names, key=lambda n: ratios[n].get((m, b), -1.0))
        rows.append([SHORT.get(m, m), str(b), *cells, best])
    table_page(pdf, "NMP-tier ablation (NOVA Fig. 14)", "Decode throughput of one static batch over the GPU's, mean "
               "over L_in/L_out. In-die only: PIMBA-configured in-die PIM runs GQA, SSM and MoE; peri-die only: NOVA's "
               "Tier-1 runs all three; base-die only: Tier-2 (4096 TSVs) runs GQA and MoE, SSM on the GPU; in-die + "
               "base-die: SSM in-die, GQA / MoE in the three modes over the in-die and base-die tiers (conventional "
               "HBM4 cube); NOVA. Paper on Nemotron3-Nano: peri-die only 4.25x vs in-die only 2.2x, NOVA 1.7x over "
               "in-die + base-die (3.0x on Qwen3). NOVA's MoE layer takes the fastest of Tier-1 only, Tier-2 only and "
               "the split, so it is never slower than peri-die only (which runs MoE on the full-rate Tier-1).",
               [("throughput over the GPU", ["model", "batch", *names, "fastest"], rows)])


def _routing_page(pdf: PdfPages, s: NovaStudy) -> None:
    """NOVA's split policies under three routings (Fig. 16 on whole models)."""
    r = s.routing_runs
    if r.empty:
        return
    policies = ["NOVA", "NOVA k*", "NOVA exact"]
    rows = []
    for (m, b, routing), g in r.groupby(["model", "batch", "routing"], sort=False):
        by = g.set_index("design")
        moe = [fmt(by.loc[p, "moe_s"] * 1e6, spec=".0f") if p in by.index else "-" for p in policies]
        gain = [fmt(by.loc[p, "throughput_x"], spec=".2f") if p in by.index else "-" for p in policies]
        ratio = by.loc["NOVA", "moe_s"] / by.loc["NOVA k*", "moe_s"] if {"NOVA", "NOVA k*"} <= set(by.index) else None
        rows.append([SHORT.get(m, m), str(b), routing, *moe, fmt(ratio, spec=".2f"), *gain])
    l_in, l_out = int(r["l_in"].iloc[0]), int(r["l_out"].iloc[0])
    table_page(pdf, "Expert split policies under three routings (NOVA Sec. VI-E, Fig. 16)", "Per MoE model and batch "
               f"at L_in/L_out = {l_in}/{l_out}: the MoE layers' time per decode step (every MoE layer, with its "
               "synchronization) under the static 1:9 split (NOVA), NOVA's k* split and the exact split, each layer "
               "in its fastest mode (Tier-1 only, Tier-2 only or the split), and the decode gain over the GPU. "
               "Skewed: the hottest 10% of experts get 5x the tokens (Fig. 4(b), the default of every other page); "
               "uniform: tokens dealt evenly; concentrated: 90% of them on 5% of the experts. Paper: k* matches 1:9 "
               "at its design point and gains up to 2.1x as routing deviates.",
               [("MoE time per step, us, and decode gain over the GPU",
                 ["model", "batch", "routing", "1:9 us", "k* us", "exact us", "1:9 / k*", "1:9 x", "k* x", "exact x"],
                 rows)])


def _energy_rows(energy: pd.DataFrame) -> list[list[str]]:
    """The energy table's rows (the study's :attr:`NovaSummaries.energy` or ``ablation_energy``)."""
    return [[SHORT.get(r["model"], r["model"]), r["design"], f"{r['tokens_per_J']:.1f}",
             quantity(r["x_gpu"], ".2f", r["design"], r["model"], TPJ_X),
             quantity(r["power_W"], ".0f", r["design"], r["model"], POWER_W),
             quantity(r["nmp_W_per_cube_max"], ".0f", r["design"], r["model"], "nmp_W_per_cube_max"),
             f"{r['over_budget']} of {r['runs']}",
             *(f"{r[c]:.0f}%" for c in ("share_e2e_gpu_prefill_J", "share_e2e_nmp_decode_J",
                                        "share_e2e_gpu_decode_J"))]
            for r in energy.to_dict("records")]


ENERGY_NOTE = (
    "One static batch, mean over batches and L_in/L_out where the design fits: E2E tokens per joule (prefill + L_out "
    "decode steps), over the GPU's, the decode step's average power, and the E2E energy split into the GPU prefill, "
    "decode work near memory and decode work on the GPU with static power (Fig. 13). Energy per action from "
    "instances/energy (common.yaml, nova.yaml): GPU 3.9 pJ/bit HBM + an assumed 2 pJ/bit on-chip path, 0.71 pJ/FLOP, "
    "70 W idle; Tier-1 all-bank reads activate 8x the rows per bit of Tier-2, in-die 256-bit PIM 8x more, "
    "first-tier experts once per routed token. NOVA energy-first picks each operator's mode for the least energy "
    "(Sec. VI-E). NMP W/cube: the decode step's near-memory power per cube, largest over the runs; over budget: "
    "runs above system.cube_nmp_budget_W (default 62 W, SNAKE Sec. 6.2's logic-die budget; NOVA states none). Paper: "
    "NOVA 5x over the GPU (7.5x on the hybrids, 2.4x on Qwen3, where Duplex reaches 6.7x). runs.csv has every run's "
    "energy parts.")
ENERGY_HEAD = ["model", "design", "tokens/J", "x GPU", "decode W", "NMP W/cube\n(max)", "over\nbudget",
               "GPU prefill", "NMP decode", "GPU decode"]


def _energy_pages(pdf: PdfPages, s: NovaStudy) -> None:
    """Tokens per joule per design with NOVA Fig. 13's breakdown of its E2E energy, then the Fig. 14 variants."""
    if "tokens_per_J" not in s.runs:
        return
    table_page(pdf, "Energy: tokens per joule and its breakdown (NOVA Figs. 11(c), 13)", ENERGY_NOTE,
               [("E2E energy efficiency per design", ENERGY_HEAD, _energy_rows(_summaries(s).energy))])
    if s.ablation.empty or "tokens_per_J" not in s.ablation:
        return
    table_page(pdf, "Energy of the NMP-tier ablation (NOVA Fig. 14)", "As the energy page, for NOVA Fig. 14's "
               "variants. Paper on Qwen3: base-die only 6.4x the GPU's energy efficiency (it avoids all-bank "
               "activation), in-die only 0.14x (256-bit reads of the experts' weights); the cross-tier modes trade "
               "some of it for throughput.", [("E2E energy efficiency per variant", ENERGY_HEAD,
                                                _energy_rows(_summaries(s).ablation_energy))])


def _summaries(s: NovaStudy) -> NovaSummaries:
    """The study's averages (its summaries stage computed them)."""
    assert s.summaries is not None, "the NOVA study's run() computes the summaries"
    return s.summaries


def _claims_page(pdf: PdfPages, s: NovaStudy) -> None:
    if s.claims is not None:
        claims_page(pdf, s.claims.rows, s.claims.context, paper=s.claims.paper)


def _capacity_page(pdf: PdfPages, s: NovaStudy) -> None:
    cap = s.capacity.pivot_table(index=["model", "batch"], columns="design", values="longest_context")
    def cell(v: float) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "no limit (no KV cache)"
        return "OoM" if v == 0 else f"{int(v):,}"

    rows = [[m, str(b), *(cell(cap.loc[(m, b), n]) for n in NAMES)] for m, b in cap.index]
    mem = s.memory.pivot_table(index=["model", "batch"], columns="kind", values="MB_per_pseudo_channel")
    kinds = ["expert_weights", "other_weights", "kv_cache", "ssm_state"]
    mrows = [[m, str(b), *(f"{mem.loc[(m, b), k]:.0f}" for k in kinds)] for m, b in mem.index]
    ctx = int(s.memory["context"].iloc[0]) if len(s.memory) else 0
    sizes = [[r["model"], f"{r['params']:,}", f"{r['published']:,.0f}",
              f"{100 * (r['params'] / r['published'] - 1):+.2f}%", f"{r['params'] * 2 / 1e9:.1f}"]
             for r in s.model_sizes]
    table_page(pdf, "Capacity: the longest context that fits (NOVA Fig. 15)", "Longest context per request, tokens, "
               "with the batch's KV cache and SSM state next to all weights (0 = OoM: the weights alone do not fit). "
               "Per pseudo-channel: the footprint spread over the 16 pseudo-channels of each cube (8 channels x 2, "
               f"NOVA Sec. IV-B) of every cube of the system, at {ctx} tokens of context.",
               [("longest context per design", ["model", "batch", *NAMES], rows),
                (f"MB per pseudo-channel at {ctx} tokens", ["model", "batch", *kinds], mrows),
                ("model sizes used (BF16 weights)", ["model", "parameters", "published", "difference", "GB"], sizes)])


def _expert_pages(pdf: PdfPages, s: NovaStudy) -> None:
    e = s.spec.experts
    for kind, g in s.experts.groupby("routing", sort=False):
        rows = [[r["routing"], str(r["experts"]), r["method"], r["status"], fmt(r["makespan_us"], spec=".2f"),
                 "-" if r["gap"] is None or (isinstance(r["gap"], float) and math.isnan(r["gap"]))
                 else f"{100 * r['gap']:.1f}%"] for r in g.to_dict("records")]
        table_page(pdf, f"Expert-to-tier split, {kind} routing (NOVA Sec. VI-E, Fig. 16)", f"One MoE layer, batch "
                   f"{e.batch}, top-{e.top_k}, experts of {e.expert_bytes / 1e6:.2f} MB, seed {e.seed}. Exact: MILP "
                   "and CP-SAT (and brute force up to 20 experts); NOVA's sorted k* split and the static 1:9 hot/cold "
                   f"split (the policy of the paper's Figs. 11-15). Gap: excess over best exact ({EXCESS_OVER_BEST}; "
                   "the best exact makespan is the reference).",
                   [("makespan of the two tiers", ["routing", "experts", "method", "status", "makespan us",
                                                   "excess over best exact"], rows)])


def details(s: NovaStudy) -> dict[str, Any]:
    """The manifest's NOVA part: settings, models, model sizes, capacity, the Fig. 16 table, the expert split
    each two-tier decode step used (with any fallback's note), the Fig. 14 ablation, the routing variants and the
    claims this run measured."""
    splits = [{k: v for k, v in r.items() if k != "solution"} for r in s.system_splits]
    return {"settings": s.spec.model_dump(mode="json"), "models": s.spec.models, "model_sizes": s.model_sizes,
            "longest_context": s.capacity.to_dict("records"), "expert_split": s.experts.to_dict("records"),
            "system_expert_splits": splits, "ablation": s.ablation.to_dict("records"),
            "routing_runs": s.routing_runs.to_dict("records"), "claims": None if s.claims is None else s.claims.summary}


def _ranked(values: dict[str, float]) -> list[tuple[str, float]]:
    """(names, value) from the largest value down; designs with the same value are one entry (``"A = B"``)."""
    out: dict[float, list[str]] = {}
    for name, v in values.items():
        out.setdefault(round(v, 9), []).append(name)
    return [(" = ".join(names), v) for v, names in sorted(out.items(), reverse=True)]


def power_lines(numbers: dict[str, Any], served_x: dict[str, float]) -> list[str]:
    """Page 1's power-budget check: per design the runs whose decode step draws more near-memory power per cube
    than ``system.cube_nmp_budget_W`` and the served decode gain over the runs within it (``numbers``:
    :attr:`NovaSummaries.numbers`; ``served_x``: each design's gain over all runs)."""
    budget, power = numbers["cube_nmp_budget_W"], numbers["power_budget"]
    over = {d: p for d, p in power.items() if d in served_x and p["over_budget"]}
    lines = [f"## Power budget ({budget:g} W of near-memory power per cube: SNAKE Sec. 6.2's logic-die budget; NOVA "
             "states none)"]
    if not over:
        return [*lines, "    every design's decode steps stay within it."]
    same: dict[tuple[Any, ...], list[str]] = {}  # designs with the same line are printed once ("NOVA = NOVA k*")
    for d, p in sorted(over.items(), key=lambda kv: -served_x[kv[0]]):
        same.setdefault((p["runs"], p["over_budget"], p["serve_decode_x_within"], round(served_x[d], 9)), []).append(d)
    for names in same.values():
        d, p = names[0], over[names[0]]
        within, rest = p["serve_decode_x_within"], p["runs"] - p["over_budget"]
        lines.append(f"    {' = '.join(names)}: {p['over_budget']} of {p['runs']} runs over it; "
                     + (f"{within:.2f}x the GPU's served decode throughput over the other {rest}"
                        f" (all runs: {quantity(served_x[d], '.2f', d, SERVED_X)}x)." if within is not None
                        else "no run within it."))
    ok = _ranked({d: v for d, v in served_x.items() if d not in over})
    if ok:
        lines.append(f"    Within the budget on every run: {ok[0][0]} leads at "
                     f"{quantity(ok[0][1], '.2f', ok[0][0].split(' = ')[0], SERVED_X)}x. The headline above "
                     "counts every run, as the paper does; the NMP energies behind this check are assumptions "
                     "(chipdse params nova).")
    return lines


def summary_lines(s: NovaStudy) -> list[str]:
    """Page 1: the design with the largest served decode gain over the GPU and the runner-up's margin
    (:attr:`NovaSummaries.numbers` ``per_design``), their energy efficiency and power (:attr:`NovaSummaries.energy`,
    means over models), the exact solves (:meth:`NovaStudy.solves`) and the fidelity line (NOVA Secs. VI-C-VI-F)."""
    sm = _summaries(s)
    per = {d: float(v["serve_decode_x"]) for d, v in sm.numbers["per_design"].items()
           if d != "GPU" and v.get("serve_decode_x") is not None and not math.isnan(v["serve_decode_x"])}
    ranked = _ranked(per)
    lines = ["## Recommendation"]
    if not ranked:
        lines.append("    no design fits beside the GPU in this run")
    else:
        (best, x), rest = ranked[0], ranked[1:]
        row = sm.numbers["per_design"][best.split(" = ")[0]]
        lines.append(f"    {best}: {quantity(x, '.2f', best.split(' = ')[0], SERVED_X)}x the GPU's decode "
                     "throughput served with continuous batching, "
                     f"{row['serve_throughput_x']:.2f}x its end-to-end throughput and "
                     f"{row['serve_e2e_reduction']:.0%} lower E2E latency (means over the models, batches and "
                     "lengths where both fit).")
        if rest:
            (second, x2) = rest[0]
            lines.append(f"    Runner-up {second}: {quantity(x2, '.2f', second.split(' = ')[0], SERVED_X)}x "
                         f"({x2 / x - 1:+.1%}): the recommendation changes if "
                         f"{best}'s gain falls by that much.")
        en = sm.energy.groupby("design")[["x_gpu", "power_W"]].mean() if not sm.energy.empty else None
        if en is not None:
            lead = best.split(" = ")[0]
            top = en["x_gpu"].idxmax()
            hot = en["power_W"].idxmax()
            lines += ["## Energy and power (E2E, static batch, mean over models)",
                      f"    {best}: {quantity(en.loc[lead, 'x_gpu'], '.2f', lead, MEAN, TPJ_X)}x the GPU's tokens/J "
                      f"at {quantity(en.loc[lead, 'power_W'], '.0f', lead, MEAN, POWER_W)} W "
                      f"(GPU {quantity(en.loc['GPU', 'power_W'], '.0f', 'GPU', MEAN, POWER_W)} W). Most tokens/J: "
                      f"{top} {quantity(en.loc[top, 'x_gpu'], '.2f', top, MEAN, TPJ_X)}x at "
                      f"{quantity(en.loc[top, 'power_W'], '.0f', top, MEAN, POWER_W)} W. Highest power: {hot} "
                      f"{quantity(en.loc[hot, 'power_W'], '.0f', hot, MEAN, POWER_W)} W."]
        lines += power_lines(sm.numbers, per)
    lines += ["## Exact solves", *solve_lines(s.solves())]
    return lines + caveat_lines("nova", s.claims.rows if s.claims is not None else None)


def draw(pdf: PdfPages, s: NovaStudy) -> None:
    """Draw every page of the NOVA report into ``pdf``: the run summary first."""
    summary_page(pdf, f"chipdse NOVA report: the run ({s.scenario.spec.name})", summary_lines(s))
    _throughput_page(pdf, s)
    _e2e_page(pdf, s)
    _ablation_page(pdf, s)
    _routing_page(pdf, s)
    _energy_pages(pdf, s)
    _capacity_page(pdf, s)
    _expert_pages(pdf, s)
    _claims_page(pdf, s)
    glossary_pages(pdf, [
        "## Terms",
        "    Designs: " + "; ".join(design_terms((*DESIGNS, *ABLATION[:-1]))) + ".",
        "    Offloaded operators: gqa = grouped-query attention, ssm = Mamba/SSM layers, moe = MoE experts.",
        "    OoM: weights, KV cache and SSM state do not fit the memory. E2E: prefill + L_out decode steps of a "
        "batch. L_in / L_out: prompt / output tokens per request.",
        f"    Gaps: {EXCESS_OVER_BEST}."], CSV[0], columns(s))


def plots(s: NovaStudy) -> list[Plot]:
    """``report.html``'s interactive plot: every ``runs.csv`` row, decode throughput against tokens per joule, by
    design (NOVA Figs. 11 and 16)."""
    runs = s.runs[s.runs["fits"]] if "fits" in s.runs else s.runs
    return [table_scatter("runs", "NOVA and its baselines: decode throughput vs tokens per joule",
                          "One point per model, GPU count, batch, input and output length and design whose KV cache "
                          "fits (runs.csv): decode throughput (x) and decode tokens per joule (y).", runs,
                          ("throughput_tps", "decode throughput (tokens/s, log)"),
                          ("decode_tokens_per_J", "decode tokens per joule"), "design",
                          ["model", "gpus", "batch", "l_in", "l_out", "step_s", "power_W"], log_x=True)]
