"""The NOVA study's result, its constants and the per-workload ratios its report and claims read (the report
imports this module, never the study's internals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from chipdse.core.scenario import StudyScenario
from chipdse.core.specs import NovaScenario
from chipdse.solvers.config import SolverConfig
from chipdse.studies.claims import ClaimTable
from chipdse.studies.common import solve_record

PAPER = {"throughput_x": 4.5, "e2e_reduction": 0.698, "energy_x": 5.0}
"""NOVA's headline against the GPU baseline: 4.5x throughput, 69.8% lower E2E latency and 5x energy efficiency
on average (abstract)."""


@dataclass(frozen=True)
class NovaSummaries:
    """What the NOVA report and manifest print beside the tables, computed once by the study
    (:func:`chipdse.studies.nova.ratios.nova_summaries`).

    Attributes
    ----------
    numbers : dict
        The headline numbers (:func:`chipdse.studies.nova.ratios.summary_numbers`; the manifest's ``summary``).
    ablation_x : pandas.DataFrame
        (model, batch) x Fig. 14 variant: the variant's decode throughput over the GPU's, mean over lengths.
    energy : pandas.DataFrame
        Per model and design of the runs: ``tokens_per_J`` (E2E, static batch, mean where it fits), ``x_gpu`` (over
        the GPU's, mean over the runs both fit; NaN without one), ``power_W`` and the E2E energy's shares (%) of GPU
        prefill, NMP decode and GPU decode (NOVA Fig. 13).
    ablation_energy : pandas.DataFrame
        The same for the Fig. 14 variants.
    """

    numbers: dict[str, Any]
    ablation_x: pd.DataFrame
    energy: pd.DataFrame
    ablation_energy: pd.DataFrame


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
    summaries: NovaSummaries | None = None
    """The averages the report prints (the study's summaries stage)."""

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
