"""The SNAKE study's result and the constants its report reads (the report imports this module, never the study's
internals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from chipdse.core.scenario import StudyScenario
from chipdse.core.solution import Solution
from chipdse.core.specs import SnakeScenario
from chipdse.evaluators.snake_energy import SnakeEnergy
from chipdse.evaluators.snake_pu import BASELINE_DESIGNS
from chipdse.evaluators.snake_serving import GPU
from chipdse.formulations.snake_area import AreaSplitProblem
from chipdse.solvers.config import SolverConfig
from chipdse.studies.claims import ClaimTable
from chipdse.studies.common import solve_record

PAPER_SPEEDUPS = {"mac_tree": 2.90, "sa48x48": 2.33, "sa8x288": 3.00, GPU: 11.47}
"""SNAKE Sec. 6.3: average decode speedup of SNAKE over each baseline across the five models."""

PAPER_ENERGY = {"mac_tree": 2.40, "sa48x48": 1.05, "sa8x288": 1.31, GPU: 5.74}
"""SNAKE Sec. 6.3: average energy efficiency of SNAKE over each baseline across the five models."""

UNCAPPED_DRAM_TBPS = 30.34
"""The stack's effective DRAM bandwidth before SNAKE caps it at 24 TB/s to leave thermal budget for the logic die
(SNAKE Sec. 6.2: "we reduce the effective DRAM bandwidth from 30.34 TB/s to 24 TB/s")."""

BASELINES: tuple[str, ...] = (*(d.name for d in BASELINE_DESIGNS), GPU)
"""Every baseline of the speedup table: the three NMP compute substrates and the H100 decode baseline."""



@dataclass(frozen=True)
class SnakeSummaries:
    """What the SNAKE report and manifest print beside the tables, computed once by the study
    (:func:`chipdse.studies.snake.summaries.snake_summaries`).

    Attributes
    ----------
    average_speedups : dict[str, float]
        Baseline -> SNAKE's mean decode speedup over it, mean per model then over models (SNAKE Sec. 6.3).
    per_model_speedups : pandas.DataFrame
        Model x baseline: the mean speedup over batches and contexts.
    energy_ratios : dict[str, float]
        Baseline -> SNAKE's mean energy efficiency over it, averaged the same way ({} without energy).
    mode_shares : pandas.DataFrame
        Model x mode: share of weight operators choosing each multi-PU mode (SNAKE Fig. 13a).
    fixed_mode_slowdown : pandas.DataFrame
        ``model``, ``mode``, ``min``, ``max`` of each fixed mode's slowdown over the per-operator choice.
    link_speedups : dict[float, dict[str, float]]
        Link bandwidth (GB/s) -> :attr:`average_speedups` at that bandwidth ({} without a link sweep).
    link_mode_shares : dict[tuple[float, str], pandas.DataFrame]
        (link bandwidth, mode model) -> its mode shares at that bandwidth.
    """

    average_speedups: dict[str, float]
    per_model_speedups: pd.DataFrame
    energy_ratios: dict[str, float]
    mode_shares: pd.DataFrame
    fixed_mode_slowdown: pd.DataFrame
    link_speedups: dict[float, dict[str, float]] = field(default_factory=dict)
    link_mode_shares: dict[tuple[float, str], pd.DataFrame] = field(default_factory=dict)


@dataclass
class SnakeStudy:
    """Every table of the SNAKE report, with the scenario, solver settings and stage timings (wall and CPU, s).

    ``speedups`` (model, batch, context, baseline, speedup, snake_step_s), ``modes`` (one row per operator of the
    mode models), ``slowdowns`` (fixed mode over per-operator choice), ``shapes`` (share of decode time per logical
    shape), ``buffers`` (per-shape buffer demand, SNAKE Fig. 14b), ``link_sweep`` (``speedups`` / ``modes`` /
    ``slowdowns`` again at every ``link_sweep_GBps``, with a ``link_GBps`` column), ``serving``, ``energy`` (every
    design's decode-step energy by part, :func:`decode_tables`), ``power`` (:func:`power_table`) and
    ``area_energy`` (SNAKE Fig. 4a's energy line, :func:`area_energy_table`), with the per-action energies behind
    them (``energy_model``).
    """

    scenario: StudyScenario
    solver: SolverConfig
    speedups: pd.DataFrame
    modes: pd.DataFrame
    slowdowns: pd.DataFrame
    shapes: pd.DataFrame
    shape_set: list[dict] = field(default_factory=list)
    area_split: list[Solution] = field(default_factory=list)
    area_grid: pd.DataFrame = field(default_factory=pd.DataFrame)
    area_problem: AreaSplitProblem | None = None
    serving: pd.DataFrame = field(default_factory=pd.DataFrame)
    buffers: pd.DataFrame = field(default_factory=pd.DataFrame)
    link_sweep: dict[str, pd.DataFrame] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)
    energy: pd.DataFrame = field(default_factory=pd.DataFrame)
    power: pd.DataFrame = field(default_factory=pd.DataFrame)
    area_energy: pd.DataFrame = field(default_factory=pd.DataFrame)
    energy_model: SnakeEnergy | None = None
    claims: ClaimTable | None = None
    """SNAKE's claims against this run (the study's claims stage, :func:`chipdse.studies.snake.claims.claims`)."""
    summaries: SnakeSummaries | None = None
    """The averages and shares the report prints (the study's summaries stage)."""

    @property
    def spec(self) -> SnakeScenario:
        """The scenario's spec."""
        assert isinstance(self.scenario.spec, SnakeScenario)
        return self.scenario.spec

    def solves(self) -> list[dict[str, Any]]:
        """Every shape-set and area-split solve (:func:`chipdse.studies.common.solve_record`)."""
        out = [solve_record(r["solution"], budget_mm2=r["budget_mm2"]) for r in self.shape_set]
        return out + [solve_record(sol) for sol in self.area_split]
