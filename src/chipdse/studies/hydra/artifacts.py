"""The typed artifacts HYDRA's stages pass each other (:mod:`chipdse.studies.hydra.stages`), and what the report
reads.

Stages make and need these, never DataFrame rows or label-keyed dicts: the scored design table (:class:`DesignTable`,
each column described once in :mod:`chipdse.studies.hydra.columns`), the picked finalists (:class:`Picks`,
:class:`Finalist`), each finalist's solves (:class:`FinalistSolves`), its layouts (:class:`FinalistLayouts`, each a
:class:`chipdse.core.layout.Layout` with its :class:`chipdse.core.layout.LayoutKind`) and their serving re-scores
(:class:`ServedLayout` around :class:`chipdse.evaluators.serving.Served`), gathered per finalist in
:class:`FinalistResult`; the explore run's :class:`ExploreResult` holds them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pandas as pd

from chipdse.core.design_space import ScoredDesign
from chipdse.core.layout import Layout, LayoutKind
from chipdse.core.scenario import LoadedScenario
from chipdse.core.solution import Solution
from chipdse.evaluators.policies import SCHEDULER_NAMES
from chipdse.evaluators.serving import Served
from chipdse.evaluators.thermal import ThermalMap
from chipdse.solvers.config import SolverConfig
from chipdse.studies.claims import ClaimTable
from chipdse.studies.common import solve_record
from chipdse.studies.hydra.columns import Column, table_columns

__all__ = ["ABLATION", "EXTRA_PAIRS", "FIDELITY_MAX_ERRORS", "FIDELITY_THRESHOLDS", "HYDRA_TABLE_IV", "OBJECTIVES",
           "PLACEMENT_VARIANTS", "REFERENCE", "SCHEDULER_STUDY", "SCHEDULER_VARIANTS", "SHORT_NAMES", "STUDY_VARIANTS",
           "WORKLOAD_KEYS",
           "Column", "DesignTable", "ExploreResult", "Finalist", "FinalistLayouts", "FinalistResult",
           "FinalistSolves", "GeneralityResult", "Layout", "LayoutKind", "PickRule", "Picks", "Role", "Served",
           "ServedLayout", "SimulatedTableIV", "SimulationStudy", "ThermalFinalist", "ThermalLayout", "pair_key"]


OBJECTIVES = ("B*", "M_T")

HYDRA_TABLE_IV: dict[str, dict[str, list[float]]] = {
    "B*": {"Jamba": [1.00, 0.42, 0.31], "Zamba": [0.91, 1.00, 0.76], "Nemo": [0.87, 0.32, 1.00],
           "Jamba + Zamba": [0.97, 0.94, 0.71], "Jamba + Nemo": [0.91, 0.29, 0.92],
           "Zamba + Nemo": [0.96, 0.91, 0.86], "Jamba + Zamba + Nemo": [0.96, 0.91, 0.86]},
    "M_T": {"Jamba": [1.00, 0.44, 0.36], "Zamba": [0.97, 1.00, 0.80], "Nemo": [0.98, 0.62, 1.00],
            "Jamba + Zamba": [0.97, 1.00, 0.80], "Jamba + Nemo": [0.98, 0.62, 1.00],
            "Zamba + Nemo": [0.99, 0.96, 0.84], "Jamba + Zamba + Nemo": [0.99, 0.96, 0.84]},
}
"""HYDRA Table IV as published (rows: DSE target; columns: Jamba-tiny, Zamba2-7B, Nemotron-H-4B on Chat)."""

SHORT_NAMES = {"jamba-tiny-dev": "Jamba", "zamba2-7b": "Zamba", "nemotron-h-4b": "Nemo"}


FIDELITY_THRESHOLDS = {"cosine": 0.95, "spearman_throughput": 0.9, "max_throughput_recovery": 0.97}
"""Lower bounds of the fidelity check (HYDRA reports cosine 0.9 and 93% recovery)."""
FIDELITY_MAX_ERRORS = {"mape_throughput": 0.15}
"""Upper bounds of the fidelity check: mean absolute percentage error of throughput (issue 15; HYDRA Sec. VI-B
reports 8% and 12% gaps on B* and M_T)."""

ABLATION = (
    ("baseline", "round-robin", "static", "static"),
    ("greedy CP", "hydra-greedy", "static", "static"),
    ("CP", "exact", "static", "static"),
    ("CP+ET", "exact", "elastic", "static"),
    ("CP+ET+DB", "exact", "elastic", "dynamic"),
)
"""(variant, placement, task scheduler, batching) of the ablation (HYDRA Fig. 9). ``greedy CP`` is the paper's own
communication-aware placement (its two-step greedy, scored under Eq. 2 traffic), ``CP`` chipdse's exact one beside
it; CP+ET and CP+ET+DB build on the exact placement. A variant whose layout is missing is not run."""

SCHEDULER_STUDY: tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...] = (
    *((name, name, ()) for name in SCHEDULER_NAMES),
    ("fcfs (cross-phase)", "fcfs", (("cross_phase", True),)),
    ("work-stealing (cross-phase)", "work-stealing", (("cross_phase", True),)),
)
"""(variant, task scheduler, scheduler options) of the scheduler comparison (HYDRA Sec. VI-E, Fig. 12): every
registered scheduler with its defaults, and FCFS and work stealing again with the cross-phase access elastic has by
default (``cross_phase``: a prefill job may run on a decode chiplet and the reverse), so elastic is also compared
like for like (issue 30 item 7)."""

SCHEDULER_VARIANTS = tuple(v for v, *_ in SCHEDULER_STUDY)
"""The scheduler comparison's variants (:data:`SCHEDULER_STUDY`)."""

PLACEMENT_VARIANTS = ("round-robin", "random", "hydra-greedy", "exact")
"""Placements of the placement study (HYDRA Fig. 10 plus the paper's greedy), static scheduling and batching; the
round-robin and exact runs are the ablation's baseline and CP runs."""

REFERENCE = {"ablation": "baseline", "scheduler": "static", "placement": "round-robin"}
"""The run each study normalizes to (HYDRA Figs. 9, 10, 12); its completed-request count decides a workload's
validity."""

WORKLOAD_KEYS = ("model", "dataset", "role")
"""Columns that name one workload and design of the policy table (those present are used)."""

STUDY_VARIANTS: dict[str, tuple[str, ...]] = {
    "ablation": tuple(v for v, *_ in ABLATION[1:]),
    "scheduler": tuple(v for v in SCHEDULER_VARIANTS if v != REFERENCE["scheduler"]),
    "placement": tuple(v for v in PLACEMENT_VARIANTS if v != REFERENCE["placement"]),
}
"""Per policy study, the variants compared with its reference run (HYDRA Figs. 9, 12, 10)."""

EXTRA_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "scheduler": tuple(("elastic", v) for v in STUDY_VARIANTS["scheduler"] if v != "elastic"),
    "placement": (("exact", "random"),)}
"""Comparisons HYDRA reports besides a study's variants over its reference: (variant, reference); elastic against
every other scheduler variant (FCFS and work stealing, each without and with cross-phase access)."""


def pair_key(study: str, variant: str, reference: str | None = None) -> str:
    """The key of one comparison in :attr:`SimulationStudy.ratios` / :attr:`SimulationStudy.comparisons`:
    ``"<study>/<variant>"`` over the study's reference, or ``"<study>/<variant>/<reference>"``."""
    return f"{study}/{variant}" if reference is None else f"{study}/{variant}/{reference}"



class Role(StrEnum):
    """A finalist's role (HYDRA Fig. 8)."""

    B_STAR = "B*"
    """The balanced design: the best throughput / TTFT (or tokens per joule) among stable points of above-average
    throughput."""
    M_T = "M_T"
    """The highest-throughput stable design."""
    BOTH = "B* = M_T"
    """One design is both (one set of solves and runs, scored as B*)."""


class PickRule(StrEnum):
    """How the pick stage chooses B* (the scenario's ``energy.pick``; M_T is the highest throughput either way)."""

    THROUGHPUT_TTFT = "throughput-ttft"
    """The highest throughput / TTFT ratio (HYDRA Fig. 8)."""
    ENERGY = "energy"
    """The most output tokens per joule."""


@dataclass(frozen=True)
class DesignTable:
    """The scored design space of one workload: one row per buildable point.

    Attributes
    ----------
    frame : pandas.DataFrame
        The estimator's columns, the energy columns and the Pareto flags, in the order and with the meaning
        :mod:`chipdse.studies.hydra.columns` registers (``points.csv``); indexed 0..n-1 in
        :func:`chipdse.core.design_space.enumerate_points` order (the ``point`` column).
    types : tuple[str, ...]
        Compute chiplet types, the count columns.
    unbuildable : tuple[str, ...]
        Kinds of design point dropped before scoring (e.g. too much interposer area), with counts.
    type_notes : Mapping[str, str]
        Type -> what it runs (``"attention blocks, prefill phase"``), for the column descriptions.
    memory : str
        The library's memory chiplet (e.g. ``"HBM3"``), for the column descriptions.
    """

    frame: pd.DataFrame
    types: tuple[str, ...]
    unbuildable: tuple[str, ...] = ()
    type_notes: Mapping[str, str] = field(default_factory=dict)
    memory: str = "HBM"

    def __len__(self) -> int:
        return len(self.frame)

    def columns(self) -> dict[str, Column]:
        """Every column of :attr:`frame` (and the ``role`` column explore adds), described: name -> Column."""
        return table_columns(tuple(self.frame.columns), self.types, self.type_notes, self.memory)

    def row(self, index: int) -> dict[str, Any]:
        """Row ``index`` as plain Python values (picklable, JSON-able)."""
        return {k: (v.item() if hasattr(v, "item") else v) for k, v in self.frame.loc[index].items()}

    def design(self, index: int) -> ScoredDesign:
        """Row ``index`` as the layout problems need it (:class:`chipdse.core.design_space.ScoredDesign`)."""
        return ScoredDesign.from_row(self.row(index), list(self.types))


@dataclass(frozen=True)
class Finalist:
    """One picked design.

    Attributes
    ----------
    role : Role
    index : int
        Its row in the :class:`DesignTable`.
    row : Mapping[str, Any]
        That row (plain values): every registered column's value.
    design : ScoredDesign
        Label, point spec, HBM stacks and estimated capacity (what the layout problems are built from).
    """

    role: Role
    index: int
    row: Mapping[str, Any]
    design: ScoredDesign

    @property
    def label(self) -> str:
        """The design's label, e.g. ``Ap1-Ad8-Mp6-Md6-HBM3-640GBps-B8``."""
        return self.design.label


@dataclass(frozen=True)
class Picks:
    """What the pick stage chose (:func:`chipdse.studies.hydra.stages.pick`).

    Attributes
    ----------
    rule : PickRule
    b_star, m_t : Finalist
        The two finalists (the same row when one design is both; both then have role ``B* = M_T``).
    candidates : int
        Stable points with above-average throughput (B*'s candidates).
    ties : tuple[int, ...]
        Other rows with B*'s score (B* is the first in the sweep's order).
    runner_up : int or None
        The best candidate below B*'s score.
    runner_up_margin : float or None
        1 - its score / B*'s.
    """

    rule: PickRule
    b_star: Finalist
    m_t: Finalist
    candidates: int
    ties: tuple[int, ...] = ()
    runner_up: int | None = None
    runner_up_margin: float | None = None

    @property
    def finalists(self) -> list[Finalist]:
        """B* then M_T; one entry (role ``B* = M_T``) when they are the same design."""
        return [self.b_star] if self.b_star.index == self.m_t.index else [self.b_star, self.m_t]

    def roles(self) -> dict[int, str]:
        """Row -> the ``role`` column's value (``B*``, ``M_T``, ``B*,M_T``)."""
        if self.b_star.index == self.m_t.index:
            return {self.b_star.index: "B*,M_T"}
        return {self.b_star.index: "B*", self.m_t.index: "M_T"}


@dataclass(frozen=True)
class FinalistSolves:
    """A finalist's HBM-partition and placement solves (exact and heuristic, HYDRA Eqs. 1-2)."""

    finalist: Finalist
    hbm: list[Solution]
    placement: list[Solution]


@dataclass(frozen=True)
class FinalistLayouts:
    """A finalist's mapped layouts (one per :class:`LayoutKind` it has) and its exact decode-mapping solves."""

    finalist: Finalist
    layouts: list[Layout]
    mapping: list[Solution]


@dataclass(frozen=True)
class ServedLayout:
    """One layout and its serving re-score.

    Attributes
    ----------
    layout : Layout
    served : Served
        The estimator's serving model on the layout's own stage times (:func:`chipdse.evaluators.serving.serve_layout`).
    placement_objective : float
        HYDRA Eq. 2 of its placement, bytes x hops per s.
    energy_J_per_token, tokens_per_J, power_W : float
        The design's energy at this layout's throughput: the screen's dynamic J/token plus its static power over the
        layout's throughput (:func:`chipdse.evaluators.energy_hydra.energy_at_throughput`); NaN without energy.
    """

    layout: Layout
    served: Served
    placement_objective: float
    energy_J_per_token: float = float("nan")  # noqa: N815 - unit in name
    tokens_per_J: float = float("nan")  # noqa: N815
    power_W: float = float("nan")  # noqa: N815

    @property
    def kind(self) -> LayoutKind:
        """Which layout this is."""
        return self.layout.kind

    @property
    def label(self) -> str:
        """The layout's name in reports."""
        return self.layout.kind.label


@dataclass(frozen=True)
class FinalistResult:
    """Everything solved for one finalist: its solves, layouts and their re-scores."""

    finalist: Finalist
    hbm: list[Solution]
    placement: list[Solution]
    mapping: list[Solution]
    serving: list[ServedLayout]

    @property
    def role(self) -> Role:
        """``B*``, ``M_T`` or ``B* = M_T``."""
        return self.finalist.role

    @property
    def row(self) -> Mapping[str, Any]:
        """The finalist's scored row."""
        return self.finalist.row

    @property
    def label(self) -> str:
        """The design's label."""
        return self.finalist.label

    def layouts(self) -> dict[LayoutKind, Layout]:
        """The mapped layouts by kind."""
        return {s.kind: s.layout for s in self.serving}

    def served(self, kind: LayoutKind) -> ServedLayout | None:
        """The re-score of the layout of ``kind``, if the finalist has one."""
        return next((s for s in self.serving if s.kind is kind), None)


@dataclass
class ThermalLayout:
    """One placement's power and temperature.

    Attributes
    ----------
    name : str
        ``"<method>"`` of the finalist's placement, or ``"thermal-limit"`` for the constrained one.
    decision : dict[int, str]
        Cell -> chiplet type.
    objective : float
        HYDRA Eq. 2, bytes x hops per s (the checker's value).
    thermal : ThermalMap
        Power (W) and temperature (degC) per cell.
    """

    name: str
    decision: dict[int, str]
    objective: float
    thermal: ThermalMap


@dataclass
class ThermalFinalist:
    """The power / thermal results of one finalist.

    Attributes
    ----------
    role, label : str
        ``"B*"`` / ``"M_T"`` and the design's label.
    power_by_type_W : dict[str, float]
        W per chiplet of each placement type at ``utilization``.
    utilization : float
        Busy fraction the powers assume.
    layouts : list[ThermalLayout]
        Every placement the finalist stage solved, best exact first.
    limit_C : float | None
        The scenario's limit, degC (``None``: no constrained placement).
    constrained : Solution | None
        The thermally constrained exact placement (``None`` without a limit).
    served : dict[str, ServedLayout]
        The serving re-score of the best exact unconstrained placement (``"unconstrained"``) and of the constrained
        one (``"thermal-limit"``), both mapped by the LPT heuristic
        (:data:`chipdse.studies.hydra.thermal.SERVE_MAPPING`); empty without a limit or a constrained placement (a
        layout whose mapping failed is left out).
    """

    role: str
    label: str
    power_by_type_W: dict[str, float]  # noqa: N815 - unit in name
    utilization: float
    layouts: list[ThermalLayout] = field(default_factory=list)
    limit_C: float | None = None  # noqa: N815
    constrained: Solution | None = None
    served: dict[str, ServedLayout] = field(default_factory=dict)

    @property
    def exact(self) -> ThermalLayout | None:
        """The best exact unconstrained layout (the first), if any."""
        return self.layouts[0] if self.layouts else None

    @property
    def limited(self) -> ThermalLayout | None:
        """The constrained layout, if one was found."""
        return next((lay for lay in self.layouts if lay.name == "thermal-limit"), None)


@dataclass
class GeneralityResult:
    """The specialization-generality matrices.

    Attributes
    ----------
    models : list[str]
        Model keys, in column order.
    names : list[str]
        Short column names (``Jamba``, ``Zamba``, ``Nemo`` for HYDRA's three; the key otherwise).
    scores : dict[str, pandas.DataFrame]
        Per objective (``"B*"``, ``"M_T"``): rows = target sets (``"Jamba + Nemo"``), columns = ``names``,
        values = the target design's score on that model over the model's own optimum. A design unstable on a
        model at the offered load scores 0 for B* (no finite TTFT); for M_T it keeps its sustainable throughput.
    stable : dict[str, pandas.DataFrame]
        Same shape: whether the row's design is stable on the column's model at the offered load.
    designs : pandas.DataFrame
        One row per (objective, target): the chosen point's label, its worst score over its targets
        (``worst_on_target``) and over all models (``worst_overall``).
    optima : pandas.DataFrame
        Per model: its single-model B* and M_T labels and raw scores (throughput / TTFT in tok/s^2; tok/s).
    n_points : int
        Design points scored per model.
    workload : str
    arrival_rate_rps : float
    wall_s : float
    """

    models: list[str]
    names: list[str]
    scores: dict[str, pd.DataFrame]
    stable: dict[str, pd.DataFrame]
    designs: pd.DataFrame
    optima: pd.DataFrame
    n_points: int
    workload: str
    arrival_rate_rps: float
    wall_s: float
    simulated: SimulatedTableIV | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary: matrices as {target: {model: score}} (keys: the short names), whether each design is
        stable on each model, designs, optima and counts."""
        return {
            "models": self.models, "names": self.names, "points": self.n_points, "workload": self.workload,
            "arrival_rate_rps": self.arrival_rate_rps, "wall_s": round(self.wall_s, 3),
            "scores": {o: {t: {m: round(float(v), 4) for m, v in row.items()} for t, row in df.iterrows()}
                       for o, df in self.scores.items()},
            "stable": {o: {t: {m: bool(v) for m, v in row.items()} for t, row in df.iterrows()}
                       for o, df in self.stable.items()},
            "designs": self.designs.to_dict("records"),
            "optima": self.optima.to_dict("records"),
            "simulated": None if self.simulated is None else self.simulated.to_json(),
        }


@dataclass
class SimulatedTableIV:
    """Table IV scored by the event simulator on the chosen designs
    (:func:`chipdse.studies.hydra.generality.simulate_table_iv`).

    Attributes
    ----------
    scores : dict[str, pandas.DataFrame]
        As :attr:`GeneralityResult.scores`, from simulation
        (:func:`chipdse.studies.hydra.generality.normalize_table_iv`). A design that cannot sustain the column
        model's rate keeps its saturated throughput over the optimum's (marked unstable).
    stable : dict[str, pandas.DataFrame]
        Whether the row's design sustains the column model's rate in simulation.
    runs : pandas.DataFrame
        One row per (design point, model): ``point``, ``label``, ``model`` (short name), ``sim_throughput_tps``
        (saturated, tok/s), ``sim_ttft_s`` (at the model's rate, s; NaN when unstable), ``stable``, ``rate_rps``.
    rates_rps : dict[str, float]
        Each model's arrival rate (short name -> req/s): ``load`` x its own B* design's simulated capacity.
    load : float
    placement : str
    skipped : list[str]
    wall_s : float
    spread : dict[str, pandas.DataFrame]
        Per objective, each cell's max - min over the seeds (empty with one seed).
    seeds : int
        Simulator seeds each cell was run with (``scores`` is their mean).
    """

    scores: dict[str, pd.DataFrame]
    stable: dict[str, pd.DataFrame]
    runs: pd.DataFrame
    rates_rps: dict[str, float]
    load: float
    placement: str
    skipped: list[str]
    wall_s: float
    spread: dict[str, pd.DataFrame] = field(default_factory=dict)
    seeds: int = 1

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary: matrices, stability, rates and the per-run table."""
        return {
            "load": self.load, "placement": self.placement, "rates_rps": self.rates_rps, "skipped": self.skipped,
            "wall_s": round(self.wall_s, 3),
            "scores": {o: {t: {m: round(float(v), 4) for m, v in row.items()} for t, row in df.iterrows()}
                       for o, df in self.scores.items()},
            "stable": {o: {t: {m: bool(v) for m, v in row.items()} for t, row in df.iterrows()}
                       for o, df in self.stable.items()},
            "seeds": self.seeds,
            "spread": {o: {t: {m: round(float(v), 4) for m, v in row.items()} for t, row in df.iterrows()}
                       for o, df in self.spread.items()},
            "runs": self.runs.to_dict("records")}


@dataclass
class SimulationStudy:
    """What explore's simulation stage measured (read by the report)."""

    fidelity: pd.DataFrame
    metrics: dict[str, float]
    policies: pd.DataFrame
    utilization: dict[str, dict[str, Any]]
    skipped: list[str]
    wall_s: float
    layouts: pd.DataFrame = field(default_factory=pd.DataFrame)
    ratios: dict[str, pd.DataFrame] = field(default_factory=dict)
    """:func:`pair_key` (study, variant) -> the per-workload ratios over the study's reference
    (:func:`chipdse.studies.hydra.simstudy.ratio_rows`)."""
    comparisons: dict[str, dict[str, float]] = field(default_factory=dict)
    """:func:`pair_key` (study, variant, reference) -> the averages over the valid workloads
    (:func:`chipdse.studies.hydra.simstudy.compare`)."""
    gains: dict[str, float | None] = field(default_factory=dict)
    """The headline comparisons flattened (:func:`chipdse.studies.hydra.simstudy.policy_summary`; NaN as None)."""
    invalid_notes: dict[str, str] = field(default_factory=dict)
    """Study -> its invalid workloads and runs, in words."""


@dataclass
class ExploreResult:
    """The explore run's results, read by the report writer (nothing there computes).

    Attributes
    ----------
    scenario : LoadedScenario
    table : DesignTable
    picks : Picks
    finalists : list[FinalistResult]
        B* then M_T (one entry when they coincide).
    solver : SolverConfig
    timings_s, cpu_s : dict[str, float]
        Wall and CPU seconds per stage (``<stage>_s``; CPU of the worker processes included where a stage ran any).
    stored_stages : list[str]
        Stages read from the results store instead of computed.
    thermal : list[ThermalFinalist]
        The power / thermal stage per finalist (empty when ``thermal.enabled`` is off).
    simulation : SimulationStudy or None
    generality : GeneralityResult or None
    claims : ClaimTable
        HYDRA's claims against this run (the claims stage).
    reports : dict
        Summaries the report and the manifest print (energy, thermal, policy gains, ...), computed by the stages.
    """

    scenario: LoadedScenario
    table: DesignTable
    picks: Picks
    finalists: list[FinalistResult]
    solver: SolverConfig
    timings_s: dict[str, float] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)
    stored_stages: list[str] = field(default_factory=list)
    thermal: list[ThermalFinalist] = field(default_factory=list)
    simulation: SimulationStudy | None = None
    generality: GeneralityResult | None = None
    claims: ClaimTable | None = None
    reports: dict[str, Any] = field(default_factory=dict)

    @property
    def points(self) -> pd.DataFrame:
        """The scored table with the ``role`` column (``points.csv``)."""
        df = self.table.frame.copy()
        df["role"] = "-"
        for i, role in self.picks.roles().items():
            df.loc[i, "role"] = role
        return df

    def solves(self) -> list[dict[str, Any]]:
        """Every finalist's HBM-partition, placement and decode-mapping solve, for the manifest
        (:func:`chipdse.studies.common.solve_record`)."""
        return [solve_record(s, finalist=str(f.role)) for f in self.finalists
                for s in (*f.hbm, *f.placement, *f.mapping)]

    @property
    def infeasible_reasons(self) -> list[str]:
        """Kinds of design point dropped before scoring, with counts."""
        return list(self.table.unbuildable)
