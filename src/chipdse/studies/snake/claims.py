"""SNAKE's claims against this run: one row per number the SNAKE paper reports that the SNAKE study computes.

:data:`SNAKE_CLAIMS` lists the paper's decode speedups (Sec. 6.3), multi-PU mode numbers (Sec. 6.5, Fig. 13) and
serving ranges (Sec. 6.4, Fig. 10), each with where the paper states it and the parameter the paper does not give
that the number depends on. :func:`measure` derives this run's values from a :class:`chipdse.studies.snake.SnakeStudy`
and, for every row, a measured note: the range the row takes over the swept parameter (the inter-PU link bandwidth,
``link_sweep_GBps``; the GPU's sustained efficiency) and where the paper's value falls in it.
:func:`chipdse.studies.claims.claim_rows` with ``claims=SNAKE_CLAIMS`` turns them into the table the report page and
``benchmarks/bench_nmp_claims.py --study snake`` print.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.params import fitted_claims, load_register
from chipdse.evaluators.energy import PJ
from chipdse.evaluators.snake import SA_8X288, SA_48X48, Design, decode_gemms, load_card
from chipdse.evaluators.snake_energy import LOGIC_PARTS, PEAK_PARTS, energy_model, snake_table
from chipdse.evaluators.snake_pu import decode_step_s, nmp_template
from chipdse.evaluators.snake_serving import GPU
from chipdse.studies.claims import Claim, ClaimTable, claim_rows
from chipdse.studies.snake.artifacts import SnakeStudy
from chipdse.studies.snake.summaries import average_speedups, mode_distribution

_LINK = "the inter-PU link bandwidth (the paper gives none; template.link_GBps is an assumption)"
_GPU = ("the GPU's sustained share of its peak FLOPs and HBM bandwidth in decode (the paper runs Duplex's GPU model "
        "and states none; serving.gpu_efficiency)")
_SERVE = "the offered request rates (the paper's x-axis is normalized and unlabelled) and " + _LINK

_GROUPED = _LINK + "; here the per-operator scheduler may also run the experts as a grouped GEMM, a fixed mode not"
_SPEEDUP = "Sec. 6.3, Fig. 12"
_PER_ACTION = ("the energy per action (the paper gives its logic-die power at peak, Fig. 11, not energies; here each "
               "is that power over the component's peak rate, instances/energy/snake.yaml)")
_TREE = _PER_ACTION + " and the MAC tree's broadcast and reduction energy per MAC (snake.yaml mac_tree_broadcast)"
_GATED = (_PER_ACTION + " and whether a fixed array's idle PEs are clock-gated (here every PE of an array is clocked "
          "while it computes)")
_GPU_E = ("the H100's power model (common.yaml gpu_h100_*: board power over peak FLOPs, 3.9 pJ/bit HBM, idle power) "
          "and Stratum's DRAM energy per bit (the paper reuses Stratum's and does not state it; snake.yaml "
          "stratum_dram_column is an assumption)")
_POWER = ("the activity at which the paper measures (peak performance, not a decode step; the per-action energies "
          "are derived from these parts, so SNAKE at full activity draws them exactly)")
_FIG11 = "Sec. 6.2, Fig. 11"


def _range(key: str, what: str, lo: float, hi: float, source: str, cause: str) -> tuple[Claim, Claim]:
    """The two claims of a range the paper states ("lo-hi x"): ``<key>_min`` (lowest) and ``<key>_max`` (highest)."""
    return (Claim(f"{key}_min", f"{what}, lowest", lo, "x", source, cause),
            Claim(f"{key}_max", f"{what}, highest", hi, "x", source, cause))


SNAKE_CLAIMS: tuple[Claim, ...] = (
    Claim("speedup_mac_tree", "decode speedup over the MAC tree, mean over the five models", 2.90, "x", _SPEEDUP,
          _LINK),
    Claim("speedup_sa48x48", "decode speedup over the fixed 48x48 array, mean", 2.33, "x", _SPEEDUP,
          _LINK + "; whether the fixed arrays overlap the fill and drain of consecutive folds as SNAKE's decoder "
          "does (Sec. 4.2.4; here they pay SCALE-Sim's per-fold fill and drain)"),
    Claim("speedup_sa8x288", "decode speedup over the fixed 8x288 array, mean", 3.00, "x", _SPEEDUP, _LINK),
    Claim("speedup_gpu", "decode speedup over the H100 GPU, mean", 11.47, "x", _SPEEDUP, _GPU),
    Claim("is_s_share_llama", "share of LLaMA3-70B operators choosing IS-S", 0.597, "share", "Sec. 6.5, Fig. 13a",
          _LINK + "; the on-chip re-reads behind the paper's IS preference for N > K (Fig. 4b stall cycles): here "
          "both dataflows fill a logical shape on large operators and compute alike, so the collectives decide, and "
          "IS-S's reduce-scatter of the output beats OS-S's gather of the input only when N < K (LLaMA's QKV, one of "
          "its four weight operators)"),
    *_range("llama_fixed", "LLaMA3-70B best fixed mode: slowdown", 1.04, 1.56, "Sec. 6.5, Fig. 13b", _LINK),
    *_range("qwen3_fixed", "Qwen3-30B-A3B best fixed mode: slowdown", 1.18, 6.43, "Sec. 6.5, Fig. 13b", _GROUPED),
    Claim("sa48_beats_sa8x288", "48x48 serves faster (E2E) than 8x288: share of (model, rate) points", 1.0, "share",
          "Sec. 6.4, Fig. 10 ('consistently better')", _SERVE),
    *_range("e2e_mac_tree", "serving E2E of the MAC tree over SNAKE's", 1.1, 2.3, "Sec. 6.4, Fig. 10", _SERVE),
    *_range("e2e_gpu", "serving E2E of the GPU over SNAKE's", 1.5, 3.0, "Sec. 6.4, Fig. 10", _GPU),
    Claim("energy_mac_tree", "energy efficiency over the MAC tree (logic die), mean over the five models", 2.40, "x",
          _SPEEDUP, _TREE),
    Claim("energy_sa48x48", "energy efficiency over the fixed 48x48 array (logic die), mean", 1.05, "x", _SPEEDUP,
          _GATED),
    Claim("energy_sa8x288", "energy efficiency over the fixed 8x288 array (logic die), mean", 1.31, "x", _SPEEDUP,
          _GATED),
    Claim("energy_gpu", "energy efficiency over the H100 GPU (SNAKE: logic die and DRAM), mean", 5.74, "x", _SPEEDUP,
          _GPU_E),
    Claim("power_total", "logic-die power (W), SNAKE's most power-hungry decode step", 61.8, "W", _FIG11, _POWER),
    Claim("power_matrix", "of which the Matrix unit (W)", 38.5, "W", _FIG11, _POWER),
    Claim("power_vector", "of which the Vector unit (W)", 14.2, "W", _FIG11, _POWER),
    Claim("power_pe_control", "of which PE control (W)", 4.4, "W", _FIG11, _POWER),
    Claim("power_noc", "of which the NoC (W)", 4.8, "W", _FIG11, _POWER),
)
SNAKE_CLAIMS = tuple(dataclasses.replace(c, basis="construction") if c.key.startswith("power_") else c
                     for c in SNAKE_CLAIMS)
"""The Fig. 11 power rows are ``construction``: the logic-die model draws the paper's four parts at full activity
by design (:mod:`chipdse.evaluators.snake_energy`; the energy table's snake_*_power are Fig. 11's values)."""
"""Every SNAKE number the claims page compares (issue 16's table and Secs. 6.3-6.5)."""

GPU_EFFICIENCY_SWEEP: tuple[float, ...] = (0.2, 0.3, 0.5, 0.7, 0.9)
"""GPU decode efficiencies the note of the GPU row reports (the GPU step scales as 1 / efficiency)."""


def where_paper_falls(xs: list[float], ys: list[float], paper: float, unit: str = "GB/s") -> str:
    """Where ``paper`` lies on the measured curve ``ys(xs)``: "the paper's value falls at about X unit" (linear
    interpolation between the first bracketing pair of sweep points), or "outside it" when no pair brackets it."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys, strict=True), zip(xs[1:], ys[1:], strict=True), strict=False):
        if (y0 - paper) * (y1 - paper) <= 0 and y0 != y1:
            x = x0 + (paper - y0) * (x1 - x0) / (y1 - y0)
            return f"the paper's value falls at about {x:.3g} {unit}"
        if y0 == paper:
            return f"the paper's value falls at {x0:.3g} {unit}"
    return "the paper's value lies outside it"


def _sweep_note(what: str, xs: list[float], ys: list[float], paper: float, fmt: str, unit: str = "GB/s") -> str:
    lo, hi = min(ys), max(ys)
    return (f"{what} swept {min(xs):g}-{max(xs):g} {unit} gives {lo:{fmt}}-{hi:{fmt}}; "
            f"{where_paper_falls(xs, ys, paper, unit)}")


def _best_fixed(slowdowns: pd.DataFrame, model: str) -> tuple[str, float, float] | None:
    """The fixed mode with the lowest worst-case slowdown for ``model``, with its (lowest, highest) slowdown."""
    g = slowdowns[slowdowns["model"] == model]
    if g.empty:
        return None
    agg = g.groupby("mode")["slowdown"].agg(["min", "max"])
    mode = str(agg["max"].idxmin())
    return mode, float(agg.loc[mode, "min"]), float(agg.loc[mode, "max"])


def _decode_measures(speedups: pd.DataFrame, modes: pd.DataFrame, slowdowns: pd.DataFrame
                     ) -> dict[str, float | None]:
    """The decode rows (speedups, IS-S share, best fixed modes) of one set of decode tables."""
    out: dict[str, float | None] = {f"speedup_{b}": v for b, v in average_speedups(speedups).items()}
    if not modes.empty:
        dist = mode_distribution(modes)
        if "llama-3-70b" in dist.index:
            out["is_s_share_llama"] = float(dist.loc["llama-3-70b", "IS-S"])
    for model, key in (("llama-3-70b", "llama"), ("qwen3-30b-a3b", "qwen3")):
        best = _best_fixed(slowdowns, model) if not slowdowns.empty else None
        if best is not None:
            out[f"{key}_fixed_min"], out[f"{key}_fixed_max"] = best[1], best[2]
    return out


def _serving_measures(serving: pd.DataFrame) -> dict[str, float | None]:
    """Serving rows: E2E of each baseline over SNAKE's at the same model and rate (min, max), and the share of
    points where the 48x48 array's E2E is below the 8x288's; a design offered a rate at or above its own capacity
    (``overloaded``) has no steady-state latency and is left out of these numbers."""
    if serving.empty:
        return {}
    if "overloaded" in serving:
        serving = serving.assign(e2e_s=serving["e2e_s"].where(~serving["overloaded"].astype(bool)))
    piv = serving.pivot_table(index=["model", "rate_fraction"], columns="design", values="e2e_s")
    out: dict[str, float | None] = {}
    for name, key in (("mac_tree", "e2e_mac_tree"), (GPU, "e2e_gpu")):
        if name in piv.columns:
            ratio = (piv[name] / piv["snake"]).to_numpy(dtype=float)
            ratio = ratio[~np.isnan(ratio)]
            out[f"{key}_min"], out[f"{key}_max"] = ((float(ratio.min()), float(ratio.max())) if ratio.size
                                                    else (None, None))
    if {"sa48x48", "sa8x288"} <= set(piv.columns):
        both = piv[["sa48x48", "sa8x288"]].dropna()
        out["sa48_beats_sa8x288"] = float(np.mean(both["sa48x48"] < both["sa8x288"])) if len(both) else None
    return out


TREE_BROADCAST_SWEEP_PJ: tuple[float, ...] = (0.0, 0.09, 0.2, 0.4)
"""MAC-tree broadcast and reduction energies per MAC (pJ) the note of the MAC-tree energy row reports (the
tree's energy is linear in it)."""


DRAM_COLUMN_SWEEP_PJ: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0, 4.0)
"""Column-access energies of Stratum's DRAM per bit (pJ; snake.yaml ``stratum_dram_column`` holds 0.2) the note of
the GPU energy row reports (SNAKE's DRAM energy is linear in it; the activation and TSV share stays)."""


def _energy_measures(study: SnakeStudy) -> tuple[dict[str, float | None], dict[str, str]]:
    """Energy-efficiency ratios (mean per model, then over models, as the speedups), the logic-die power of SNAKE's
    most power-hungry decode step per Fig. 11 component, and the measured notes behind them."""
    if "energy_ratio" not in study.speedups.columns or study.energy.empty:
        return {}, {}
    out: dict[str, float | None] = {f"energy_{b}": v for b, v in
                                    average_speedups(study.speedups, "energy_ratio").items()}
    en = study.energy
    ours = en[en["design"] == "snake"]
    watts = [f"{p}_W" for p in PEAK_PARTS]
    top = ours.loc[ours[watts].sum(axis=1).idxmax()]
    out["power_total"] = float(top[watts].sum())
    out |= {f"power_{p}": float(top[f"{p}_W"]) for p in PEAK_PARTS}
    notes: dict[str, str] = {}
    peak = study.power.set_index("design") if not study.power.empty else None
    where = f"{top['model']} at batch {int(top['batch'])}, context {int(top['context']):,}"
    for p in ("total", *PEAK_PARTS):
        full = (None if peak is None else float(peak.loc["snake", "peak_W" if p == "total" else f"{p}_W"]))
        notes[f"power_{p}"] = (f"{where}; at full activity {full:.1f} W (the calibration point)" if full is not None
                               else where)
    key = ["model", "batch", "context"]
    snake_logic = ours.set_index(key)["logic_J"]
    tree = en[en["design"] == "mac_tree"].set_index(key)
    em = study.energy_model or energy_model(nmp_template(study.spec.template))
    mac_part = tree["mac_J"]
    macs = mac_part / (em.mac_J + em.mac_tree_extra_J)
    ys = []
    for x in TREE_BROADCAST_SWEEP_PJ:
        logic = tree["logic_J"] - mac_part + macs * (em.mac_J + x * PJ)
        ys.append(float((logic / snake_logic).groupby("model").mean().mean()))
    notes["energy_mac_tree"] = _sweep_note("MAC-tree broadcast energy", list(TREE_BROADCAST_SWEEP_PJ), ys,
                                           2.40, ".2f", "pJ/MAC")
    for b in ("sa48x48", "sa8x288"):
        g = en[en["design"] == b].set_index(key)
        ungated = ((g["logic_J"] - g["control_J"]) / (snake_logic - ours.set_index(key)["control_J"]))
        notes[f"energy_{b}"] = (f"{ungated.groupby('model').mean().mean():.2f}x without the PE-clocking part "
                                "(idle PEs gated on both); " +
                                _parts_note(g, ours.set_index(key)))
    gpu = en[en["design"] == GPU].set_index(key)
    logic_only = (gpu["total_J"] / snake_logic).groupby("model").mean().mean()
    dram_bits = ours.set_index(key)["dram_J"] / em.dram_bit_J
    column_pj = em.dram_bit_J / PJ - snake_table(study.spec.energy.table).get("stratum_dram_column")  # held part
    ys = [float((gpu["total_J"] / (snake_logic + dram_bits * (column_pj + x) * PJ)).groupby("model").mean().mean())
          for x in DRAM_COLUMN_SWEEP_PJ]
    notes["energy_gpu"] = (f"over SNAKE's logic die alone {logic_only:.1f}x; " + _sweep_note(
        "Stratum's DRAM column energy", list(DRAM_COLUMN_SWEEP_PJ), ys, 5.74, ".2f", "pJ/bit"))
    return out, notes


def _parts_note(base: pd.DataFrame, ours: pd.DataFrame) -> str:
    """Which parts make a baseline's extra logic energy: each part's mean share of SNAKE's logic energy, over
    steps (``base`` and ``ours`` indexed alike)."""
    extra = {p: float(((base[f"{p}_J"] - ours[f"{p}_J"]) / ours["logic_J"]).mean()) for p in LOGIC_PARTS}
    return "extra energy per step over SNAKE's logic energy: " + ", ".join(f"{p} {v:+.0%}" for p, v in extra.items())


def _pipelined_fixed_speedup(study: SnakeStudy, base: Design) -> float:
    """SNAKE's mean speedup over ``base`` if the fixed array overlapped fill and drain of consecutive folds as
    SNAKE's decoder does (Sec. 4.2.4), over the study's models, batches and contexts (mean per model, then over
    models, as :func:`chipdse.studies.snake.average_speedups`)."""
    spec, t = study.spec, nmp_template(study.spec.template)
    piped = dataclasses.replace(base, pipelined=True)
    ours = study.speedups[study.speedups["baseline"] == base.name].set_index(["model", "batch", "context"])
    per_model = []
    for m in spec.models:
        card = load_card(m)
        per_model.append(np.mean([decode_step_s(decode_gemms(card, b, spec.tp, context=c), piped, t)
                                  / ours.loc[(m, b, c), "snake_step_s"] for b in spec.batches for c in spec.contexts]))
    return float(np.mean(per_model))


def measure(study: SnakeStudy) -> tuple[dict[str, float | None], dict[str, str]]:
    """This run's SNAKE numbers, keyed like :data:`SNAKE_CLAIMS`, and a measured note per row.

    Parameters
    ----------
    study : SnakeStudy
        A finished SNAKE study (:func:`chipdse.studies.snake.run`): its speedups, mode schedules, fixed-mode
        slowdowns, serving table and link-bandwidth sweep.

    Returns
    -------
    (measured, notes) : tuple of dict
        Claim key -> value in the claim's unit (speedups and energy-efficiency ratios averaged per model over
        batches and contexts, then over models, as the report; shares over operators x batches x contexts; serving
        ratios at the same model and rate; power, W, of SNAKE's decode step with the highest logic-die power).
        Notes: for the decode rows the range over the link sweep and the link bandwidth at which the paper's value
        would be met; for the GPU rows the same over :data:`GPU_EFFICIENCY_SWEEP`; for the serving rows the models
        and rates simulated; for the energy rows the MAC tree's ratio over :data:`TREE_BROADCAST_SWEEP_PJ`, the fixed
        arrays' ratio with idle PEs clock-gated and their extra energy by part, and the GPU's ratio over SNAKE's
        logic die alone; for the power rows the step measured and SNAKE's power at full activity.
    """
    energy, notes = _energy_measures(study)
    measured = _decode_measures(study.speedups, study.modes, study.slowdowns) | _serving_measures(study.serving)
    measured |= energy
    sweep = study.link_sweep
    paper = {c.key: c.paper for c in SNAKE_CLAIMS}
    if sweep:
        links = sorted(float(x) for x in sweep["speedups"]["link_GBps"].unique())
        per_link = [_decode_measures(*(sweep[k][sweep[k]["link_GBps"] == x] for k in ("speedups", "modes",
                                                                                      "slowdowns"))) for x in links]
        for key in measured:
            ys = [p.get(key) for p in per_link]
            if key == "speedup_gpu" or key.startswith(("e2e_", "sa48")) or any(y is None for y in ys):
                continue
            fmt = ".1%" if key == "is_s_share_llama" else ".2f"
            notes[key] = _sweep_note("link bandwidth", links, [float(y) for y in ys], paper[key], fmt)  # type: ignore[arg-type]
    gpu = measured.get("speedup_gpu")
    if gpu is not None:
        eff = study.spec.serving.gpu_efficiency
        ys = [gpu * eff / e for e in GPU_EFFICIENCY_SWEEP]
        notes["speedup_gpu"] = (f"at GPU efficiency {eff:g}; " + _sweep_note(
            "efficiency", list(GPU_EFFICIENCY_SWEEP), ys, paper["speedup_gpu"], ".2f", "of peak"))
    for base in (SA_48X48, SA_8X288):
        key = f"speedup_{base.name}"
        if key in notes and measured.get(key) is not None:
            notes[key] = f"{_pipelined_fixed_speedup(study, base):.2f}x with SNAKE's pipelined folds; " + notes[key]
    if not study.serving.empty:
        sv = study.serving
        rates = ", ".join(f"{r:g}" for r in sorted(sv["rate_fraction"].unique()))
        over = sv[sv["overloaded"].astype(bool)] if "overloaded" in sv else sv.iloc[:0]
        left = ("" if over.empty else "; left out, offered at or above their own capacity (no steady state): "
                + ", ".join(f"{d} {n} of {len(sv[sv['design'] == d])}"
                            for d, n in over["design"].value_counts().items()))
        served = (f"{sv['model'].nunique()} models x rates {rates} of SNAKE's capacity, "
                  f"{study.spec.serving.requests} requests each{left}")
        notes |= {k: served for k in measured if k.startswith(("e2e_", "sa48"))}
    return measured, notes


def context_line(study: SnakeStudy) -> str:
    """One line naming the run and what its claims rows average over."""
    spec = study.spec
    t = spec.template
    contexts = ", ".join(f"{c:,}" for c in spec.contexts)
    links = ", ".join(f"{x:g}" for x in spec.link_sweep_GBps)
    return (f"Run: {spec.name}: {len(spec.models)} models x batches {', '.join(map(str, spec.batches))} x contexts "
            f"{contexts}; {t.pus} PUs x {t.cores_per_pu} cores, {t.dram_TBps:g} TB/s, links {t.link_GBps:g} GB/s "
            f"(swept {links}); GPU efficiency {spec.serving.gpu_efficiency:g}.")


def summary_rows(measured: dict[str, Any]) -> dict[str, Any]:
    """The measured values rounded for the manifest (4 significant digits), None kept."""
    return {k: (None if v is None else float(f"{v:.4g}")) for k, v in measured.items()}


def claims(study: SnakeStudy) -> ClaimTable:
    """SNAKE's claims against a finished study (the study's claims stage): :func:`measure`, then the rows."""
    measured, notes = measure(study)
    rows = claim_rows(measured, notes, claims=SNAKE_CLAIMS, calibrated=fitted_claims(load_register("snake")))
    return ClaimTable(rows, measured, notes, context_line(study), "SNAKE",
                      summary_rows(measured))
