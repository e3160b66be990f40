"""The NOVA study's result, its constants and the per-workload ratios its report and claims read (the report
imports this module, never the study's internals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.scenario import StudyScenario
from chipdse.core.specs import NovaScenario
from chipdse.solvers.config import SolverConfig
from chipdse.studies.claims import ClaimTable
from chipdse.studies.common import solve_record

PAPER = {"throughput_x": 4.5, "e2e_reduction": 0.698, "energy_x": 5.0}
"""NOVA's headline against the GPU baseline: 4.5x throughput, 69.8% lower E2E latency and 5x energy efficiency
on average (abstract)."""


@dataclass
class NovaStudy:
    """Every table of the NOVA report, with the scenario, solver settings and stage timings (wall and CPU, s).

    ``system_splits`` lists each expert split the two-tier designs' decode steps used (:class:`SplitOutcome`
    per model, batch and design); ``model_sizes`` each model's parameters next to the published total;
    ``ablation`` the Fig. 14 variants' runs (as ``runs``, static batch); ``routing_runs`` NOVA's split policies
    under each expert routing (Fig. 16 on whole models).
    """

    scenario: StudyScenario
    solver: SolverConfig
    runs: pd.DataFrame
    capacity: pd.DataFrame
    memory: pd.DataFrame
    experts: pd.DataFrame = field(default_factory=pd.DataFrame)
    expert_solutions: list[dict[str, Any]] = field(default_factory=list)
    system_splits: list[dict[str, Any]] = field(default_factory=list)
    model_sizes: list[dict[str, Any]] = field(default_factory=list)
    ablation: pd.DataFrame = field(default_factory=pd.DataFrame)
    routing_runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    timings_s: dict[str, float] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)
    claims: ClaimTable | None = None
    """NOVA's claims against this run (the study's claims stage, :func:`chipdse.studies.nova.claims.claims`)."""

    @property
    def spec(self) -> NovaScenario:
        """The scenario's spec."""
        assert isinstance(self.scenario.spec, NovaScenario)
        return self.scenario.spec

    def solves(self) -> list[dict[str, Any]]:
        """Every expert-split solve: the decode steps' and the Fig. 16 table's."""
        out = [solve_record(r["solution"], model=r["model"], batch=r["batch"], design=r["design"])
               for r in self.system_splits]
        return out + [solve_record(r["solution"], routing=r["routing"], experts=r["experts"])
                      for r in self.expert_solutions]


KEYS = ["model", "batch", "l_in", "l_out"]
"""The columns that name one run of a design (its workload)."""


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
        ``base`` over ``design``'s, with synchronizations; NaN where an operator is absent).
    """
    cols = [*KEYS, "throughput_x", "e2e_reduction", "serve_decode_x", "serve_throughput_x", "serve_e2e_reduction",
            "gqa_x", "ssm_x", "moe_x"]
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
                        **{f"{op}_x": ratio(f"{op}_s_b", f"{op}_s") for op in ("gqa", "ssm", "moe")}})
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
    continuous batching and decode-only, per design and per model, next to the paper's (NOVA Sec. VI-C); and how
    many decode-step expert splits fell back."""
    r = ratios_vs_gpu(s.runs)
    nova = pair_ratios(s.runs, "NOVA")
    cols = ["throughput_x", "e2e_reduction", "serve_decode_x", "serve_throughput_x", "serve_e2e_reduction"]
    return {"nova_vs_gpu_throughput_x": float(nova["serve_decode_x"].mean()) if len(nova) else None,
            "nova_vs_gpu_served_x": float(nova["serve_throughput_x"].mean()) if len(nova) else None,
            "nova_vs_gpu_e2e_reduction": float(nova["serve_e2e_reduction"].mean()) if len(nova) else None,
            "nova_vs_gpu_decode_x": float(nova["throughput_x"].mean()) if len(nova) else None,
            "nova_vs_gpu_static_e2e_reduction": float(nova["e2e_reduction"].mean()) if len(nova) else None,
            "per_design": r.groupby("design")[cols].mean().round(4).to_dict("index"),
            "per_model_nova": nova.groupby("model")[cols].mean().round(4).to_dict("index"),
            "nova_vs_gpu_energy_x": tokens_per_j_vs_gpu(s.runs), "runs_compared": len(nova), "paper": PAPER,
            "expert_split_fallbacks": sum(1 for x in s.system_splits if x["note"])}
