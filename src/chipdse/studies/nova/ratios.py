"""The NOVA study's per-workload ratios against the GPU and its averages (its summaries stage): what the report and
the manifest print beside the tables, and what the claims measure."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from chipdse.studies.nova.artifacts import KEYS, PAPER, NovaStudy, NovaSummaries


def pair_ratios(runs: pd.DataFrame, design: str, base: str = "GPU") -> pd.DataFrame:
    """Per workload where both fit: ``design`` against ``base``.

    Parameters
    ----------
    runs : DataFrame
        :attr:`NovaStudy.runs` or :attr:`NovaStudy.ablation` (``KEYS``, ``design``, ``fits``, ``step_s``, ``e2e_s``,
        the operator times ``gqa_s`` / ``ssm_s`` / ``moe_s`` and, when served, ``serve_throughput_tps`` /
        ``serve_e2e_s``).
    design, base : str
        Design names.

    Returns
    -------
    DataFrame
        ``KEYS`` and ``throughput_x`` (decode step of ``base`` over ``design``'s: the decode-only gain),
        ``e2e_reduction`` (static batch, 1 - E2E ratio), ``serve_decode_x`` (decoding throughput of the served
        stream), ``serve_throughput_x`` (with prefill) and ``serve_e2e_reduction`` (continuous batching; NaN when
        not served) and ``gqa_x`` / ``ssm_x`` / ``moe_x`` (operator time of
        ``base`` over ``design``'s, with synchronizations; NaN where an operator is absent) and
        ``over_power_budget`` (``design``'s decode step draws more near-memory power per cube than the system's
        budget; False where the runs carry no such column).
    """
    cols = [*KEYS, "throughput_x", "e2e_reduction", "serve_decode_x", "serve_throughput_x", "serve_e2e_reduction",
            "gqa_x", "ssm_x", "moe_x", "over_power_budget"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    both = runs[runs["design"] == design].merge(runs[runs["design"] == base], on=KEYS, suffixes=("", "_b"))
    both = both.set_index(KEYS)
    both = both[both["fits"].astype(bool) & both["fits_b"].astype(bool)]

    def ratio(x: str, y: str) -> pd.Series:
        if x not in both or y not in both:
            return pd.Series(np.nan, index=both.index)
        num, den = both[x].astype(float), both[y].astype(float)
        return (num / den.where(den > 0)).where(num > 0)

    out = pd.DataFrame({"throughput_x": ratio("step_s_b", "step_s"), "e2e_reduction": 1 - ratio("e2e_s", "e2e_s_b"),
                        "serve_decode_x": ratio("serve_decode_tps", "serve_decode_tps_b"),
                        "serve_throughput_x": ratio("serve_throughput_tps", "serve_throughput_tps_b"),
                        "serve_e2e_reduction": 1 - ratio("serve_e2e_s", "serve_e2e_s_b"),
                        **{f"{op}_x": ratio(f"{op}_s_b", f"{op}_s") for op in ("gqa", "ssm", "moe")},
                        "over_power_budget": (both["over_power_budget"].astype(bool) if "over_power_budget" in both
                                              else pd.Series(False, index=both.index))})
    return out.reset_index()[cols]


def tokens_per_j_vs_gpu(runs: pd.DataFrame) -> float | None:
    """NOVA's mean E2E tokens per joule over the GPU's, over the runs where both fit (None without any)."""
    if "tokens_per_J" not in runs:
        return None
    both = runs[runs["design"] == "NOVA"].merge(runs[runs["design"] == "GPU"], on=KEYS, suffixes=("", "_b"))
    both = both[both["fits"].astype(bool) & both["fits_b"].astype(bool)]
    return float((both["tokens_per_J"] / both["tokens_per_J_b"]).mean()) if len(both) else None


def ratios_vs_gpu(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run where the GPU fits: each other design against the GPU (:func:`pair_ratios` columns and ``design``)."""
    designs = [d for d in dict.fromkeys(runs["design"]) if d != "GPU"] if not runs.empty else []
    frames = [pair_ratios(runs, d).assign(design=d) for d in designs]
    if not frames:
        return pd.DataFrame(columns=[*pair_ratios(runs, "GPU").columns, "design"])
    return pd.concat(frames, ignore_index=True)


def summary_numbers(s: NovaStudy) -> dict[str, Any]:
    """Headline numbers: NOVA's mean throughput gain and E2E reduction over the GPU where both fit, served with
    continuous batching and decode-only, per design and per model, next to the paper's (NOVA Sec. VI-C); how
    many decode-step expert splits fell back; and per design (``power_budget``) the runs compared, how many draw
    more near-memory power per cube than ``system.cube_nmp_budget_W`` and the served decode gain over the rest
    (``serve_decode_x_within``, None when every run is over)."""
    r = ratios_vs_gpu(s.runs)
    nova = pair_ratios(s.runs, "NOVA")
    cols = ["throughput_x", "e2e_reduction", "serve_decode_x", "serve_throughput_x", "serve_e2e_reduction"]
    within = r[~r["over_power_budget"].astype(bool)]
    power = {d: {"runs": int(len(g)), "over_budget": int(g["over_power_budget"].astype(bool).sum()),
                 "serve_decode_x_within": (float(w["serve_decode_x"].mean())
                                           if len(w := within[within["design"] == d]) else None)}
             for d, g in r.groupby("design")}
    return {"nova_vs_gpu_throughput_x": float(nova["serve_decode_x"].mean()) if len(nova) else None,
            "nova_vs_gpu_served_x": float(nova["serve_throughput_x"].mean()) if len(nova) else None,
            "nova_vs_gpu_e2e_reduction": float(nova["serve_e2e_reduction"].mean()) if len(nova) else None,
            "nova_vs_gpu_decode_x": float(nova["throughput_x"].mean()) if len(nova) else None,
            "nova_vs_gpu_static_e2e_reduction": float(nova["e2e_reduction"].mean()) if len(nova) else None,
            "per_design": r.groupby("design")[cols].mean().round(4).to_dict("index"),
            "per_model_nova": nova.groupby("model")[cols].mean().round(4).to_dict("index"),
            "nova_vs_gpu_energy_x": tokens_per_j_vs_gpu(s.runs), "runs_compared": len(nova), "paper": PAPER,
            "power_budget": power, "cube_nmp_budget_W": s.scenario.spec.system.cube_nmp_budget_W,
            "expert_split_fallbacks": sum(1 for x in s.system_splits if x["note"])}


ENERGY_PARTS = ("e2e_gpu_prefill_J", "e2e_nmp_decode_J", "e2e_gpu_decode_J")
"""The E2E energy's parts of NOVA Fig. 13: GPU prefill, decode near memory, decode on the GPU (with static power)."""


def energy_table(runs: pd.DataFrame, frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per model and design of ``names`` in ``frame`` (where it fits): tokens per joule, over the GPU's (``runs``'
    GPU rows), average decode power, the largest near-memory power per cube (``nmp_W_per_cube_max``, W) and the
    runs over the system's per-cube budget (``over_budget`` of ``runs``), and NOVA Fig. 13's split of the E2E energy
    (see :class:`NovaSummaries`)."""
    cols = ["model", "design", "tokens_per_J", "x_gpu", "power_W", "nmp_W_per_cube_max", "over_budget", "runs",
            *(f"share_{p}" for p in ENERGY_PARTS)]
    if "tokens_per_J" not in frame or frame.empty:
        return pd.DataFrame(columns=cols)
    fit = frame[frame["fits"].astype(bool)]
    gpu = runs[runs["fits"].astype(bool) & (runs["design"] == "GPU")].set_index(KEYS)["tokens_per_J"]
    rows = []
    for (m, name), g in fit[fit["design"].isin(names)].groupby(["model", "design"], sort=False):
        x = (g.set_index(KEYS)["tokens_per_J"] / gpu).dropna()
        total = g["e2e_J"].sum()
        rows.append({"model": m, "design": name, "tokens_per_J": float(g["tokens_per_J"].mean()),
                     "x_gpu": float(x.mean()) if len(x) else np.nan, "power_W": float(g["power_W"].mean()),
                     "nmp_W_per_cube_max": float(g["nmp_W_per_cube"].max()) if "nmp_W_per_cube" in g else np.nan,
                     "over_budget": int(g["over_power_budget"].astype(bool).sum()) if "over_power_budget" in g else 0,
                     "runs": len(g),
                     **{f"share_{p}": float(100 * g[p].sum() / total) for p in ENERGY_PARTS}})
    return pd.DataFrame(rows, columns=cols)


def nova_summaries(s: NovaStudy, designs: list[str], ablation: list[str]) -> NovaSummaries:
    """Every average of a finished study the report prints (:class:`NovaSummaries`).

    Parameters
    ----------
    s : NovaStudy
    designs : list of str
        The designs of the energy page (every served design but the k* and exact variants).
    ablation : list of str
        The Fig. 14 variants, in order.
    """
    abl = pd.DataFrame({n: pair_ratios(s.ablation, n).groupby(["model", "batch"])["throughput_x"].mean()
                        for n in ablation}) if not s.ablation.empty else pd.DataFrame()
    return NovaSummaries(summary_numbers(s), abl, energy_table(s.runs, s.runs, designs),
                         energy_table(s.runs, s.ablation, ablation))
