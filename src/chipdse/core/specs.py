"""Typed specs (pydantic) for chiplet libraries, packages, workloads and scenarios, loaded from YAML.

Every user error names the file, the field and what was expected (DESIGN.md, Conventions).
Units are in the field names: ``_mm2``, ``_GBps`` (1e9 bytes/s), ``_TFLOPS``, ``_GB`` (1e9 bytes), ``_s``.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PositiveFloat,
    PositiveInt,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from chipdse.core.errors import MAX_SHOWN_CHARS, SpecError, shorten
from chipdse.core.io import read_input_text
from chipdse.core.paths import instances_dir

T = TypeVar("T", bound=BaseModel)


MAX_SEED = 2**31 - 1
"""Largest seed: CP-SAT's ``random_seed`` and the simulators' seeds are 32-bit signed integers."""
MAX_TIME_LIMIT_S = 86_400.0
"""Longest time limit of one solve, s (one day): a longer limit is a typo, and ``.inf`` would never end."""
MAX_BATCH = 4096
"""Largest batch, requests: the simulator allocates per-request state for a whole batch, and no bundled model's
KV cache / state lets even 16 HBM stacks hold more than a few thousand requests (HYDRA Table III sweeps 2-64)."""
MAX_LIST = 64
"""Longest list of swept values (bandwidths, batches, ...): every value multiplies the points or runs."""
MAX_AREA_MM2 = 858.0
"""Largest die, mm^2: the lithography reticle limit (26 mm x 33 mm)."""
MAX_SIM_DURATION_S = 3600.0
"""Longest simulated window, s: an hour of serving is millions of events (minutes of wall time per run)."""
MAX_REQUESTS = 10_000_000
"""Most requests a workload may offer (arrival_rate_rps x duration_s): each is an event-simulator request."""
MAX_DESIGN_POINTS = 2_000_000
"""Most design points a HYDRA design space may hold: the estimator scores about 40,000 points/s, so this is about
a minute of screening (HYDRA Table III's space, 24 chiplets, has 174,720)."""
MAX_TOKENS = 10_000_000
"""Longest prompt or output of one request, tokens: ten times the longest context of any bundled card (1M)."""

MAX_ROUTED_TOKENS = 1024
"""Most routed tokens (batch x top_k) of one expert-split instance of NOVA's expert table: CP-SAT's exact split
takes about a second at 1,024 (any expert count up to 65,536) but 20-40 s per instance at 4,096 to 32,768 (e.g.
64 experts, batch 4096, top-1), outside its work limit; NOVA Fig. 16's setting is batch 64 x top-8 = 512."""

Batch = Annotated[int, Field(ge=1, le=MAX_BATCH)]
"""A batch size, requests (1..4096, see :data:`MAX_BATCH`)."""
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
"""A request length, tokens (1..10,000,000, see :data:`MAX_TOKENS`)."""
TimeLimit = Annotated[float, Field(gt=0, le=MAX_TIME_LIMIT_S)]
"""A time limit per solve, s (at most one day, see :data:`MAX_TIME_LIMIT_S`)."""
WorkLimit = Annotated[float, Field(gt=0, le=MAX_TIME_LIMIT_S)]
"""A deterministic work limit per solve, work units of about one CPU-second (at most 86,400: a day's work)."""
Seed = Annotated[int, Field(ge=0, le=MAX_SEED, description="Random seed (0..2^31-1: CP-SAT's and the simulators' "
                                                             "seeds are 32-bit integers).")]
"""A random seed (0..2^31-1, see :data:`MAX_SEED`)."""


def check_requests(rate_rps: float, duration_s: float, field: str) -> None:
    """Raise ValueError when ``rate_rps`` (req/s) x ``duration_s`` (s) offers more than :data:`MAX_REQUESTS`
    requests; ``field`` names the product in the message."""
    if rate_rps * duration_s > MAX_REQUESTS:
        msg = (f"{field} = {rate_rps:g} req/s x {duration_s:g} s = {rate_rps * duration_s:.3g} requests; at most "
               f"{MAX_REQUESTS:,} (each one is a request of the event simulator)")
        raise ValueError(msg)


UNIQUE: dict[str, Any] = {"unique": True}
"""``json_schema_extra`` of a list field whose entries must all differ (checked by :func:`spec_problems`)."""
UNIQUE_NAMES: dict[str, Any] = {"unique_by": "name"}
"""``json_schema_extra`` of a list of specs whose ``name`` fields must all differ."""

MAX_NAME_CHARS = 100
"""Longest scenario name: it becomes an output folder name (``reports/out/<name>``)."""
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def _folder_name(name: str) -> str:
    if len(name) > MAX_NAME_CHARS or not _SAFE_NAME.fullmatch(name):
        msg = (f"a safe folder name: letters, digits, '.', '-' and '_', not starting with a dot, 1..{MAX_NAME_CHARS} "
               "characters (it names the output folder reports/out/<name>, so no '/', no spaces and no leading dot)")
        raise ValueError(msg)
    return name


FolderName = Annotated[str, AfterValidator(_folder_name)]
"""A scenario name: a safe file name, since it becomes the output folder ``reports/out/<name>``."""


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """YAML's ``true`` / ``false`` are never numbers (pydantic would read ``true`` as 1)."""
        annotation = cls.model_fields[info.field_name].annotation if info.field_name else None
        if not _numeric(annotation) or _model_in(annotation) is not None:
            return value  # a flag or a name (pydantic's own check), or a nested spec that checks its own fields
        inner = (value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ())
        if isinstance(value, bool) or any(isinstance(v, bool) for v in inner):
            msg = "a number, not true / false (YAML reads those as booleans)"
            raise ValueError(msg)
        return value

    def cross_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Contradictions between this spec's fields, as (field path, what was expected); none by default."""
        return []


class BatcherKind(StrEnum):
    """Request batching policies of the estimator and the simulator (HYDRA Sec. IV-B); the simulator's
    implementations are registered under these keys in ``chipdse.evaluators.policies``."""

    STATIC = "static"
    DYNAMIC = "dynamic"


class SchedulerKind(StrEnum):
    """Task scheduling policies of the simulator (HYDRA Sec. IV-C and the baselines of Sec. VI-E); registered
    under these keys in ``chipdse.evaluators.policies``."""

    STATIC = "static"
    FCFS = "fcfs"
    WORK_STEALING = "work-stealing"
    ELASTIC = "elastic"


class D2DPhy(_Spec):
    """D2D PHY cost model: how much die area a given link bandwidth takes (HYDRA Sec. VI-A, NVIDIA GRS)."""

    lanes: int = Field(8, gt=0, le=1024, description="Lanes per PHY macro (at most 1024).")
    lane_rate_Gbps: float = Field(25.0, gt=0, le=1000, description="Signalling rate per lane, Gb/s (at most "
                                  "1000: beyond any electrical SerDes).")
    area_mm2: float = Field(0.3876, gt=0, le=MAX_AREA_MM2, description="Area of one PHY macro, mm^2 (16 nm GRS, "
                            "HYDRA; at most the 858 mm^2 reticle limit).")
    ports_per_chiplet: int = Field(4, gt=0, le=16, description="Mesh ports per compute chiplet (N, E, S, W; at "
                                   "most 16).")

    @property
    def GBps_per_phy(self) -> float:  # noqa: N802 - unit in name
        """Bandwidth of one PHY macro, GB/s (lanes x lane rate / 8)."""
        return self.lanes * self.lane_rate_Gbps / 8.0

    def area_for(self, link_GBps: float) -> float:  # noqa: N803
        """Return the PHY area in mm^2 a chiplet spends for ``link_GBps`` on each of its ports."""
        return self.ports_per_chiplet * math.ceil(link_GBps / self.GBps_per_phy - 1e-9) * self.area_mm2


FOOTPRINT_DESCRIPTION = (
    "Package grid cells the die spans, rows x cols: 1x1, 1x2, 2x1 or 2x2. The exact placement models (milp-highs, "
    "milp-compact, cpsat, brute-force) keep every covered cell free of other dies and count hops between footprint "
    "centers; the other placement methods place 1x1 dies only.")


class ComputeChiplet(_Spec):
    """A compute chiplet type whose core area (die cap minus PHY and fixed overhead) splits into compute and SRAM.

    HYDRA Sec. VI-A: prefill-oriented chiplets split area about evenly between compute and SRAM,
    decode-oriented ones give SRAM about twice the compute area; more D2D bandwidth costs PHY area.
    """

    name: str = Field(description="Type name, e.g. Ap, Ad, Mp, Md.")
    family: Literal["attention", "mamba"] = Field(description="Block family it is built for.")
    phase: Literal["prefill", "decode"] = Field(description="Phase it is optimized for.")
    die_area_mm2: float = Field(121.0, gt=0, le=MAX_AREA_MM2, description="Die area (the die cap), mm^2 (at most "
                                "the 858 mm^2 reticle limit).")
    overhead_area_mm2: float = Field(gt=0, le=MAX_AREA_MM2, description="Fixed area for control, router, DMA, "
                                     "mm^2 (at most the 858 mm^2 reticle limit).")
    compute_fraction: float = Field(gt=0, lt=1, description="Share of the core area given to compute units.")
    matrix_TFLOPS_per_mm2: float = Field(gt=0, le=100, description="Dense matrix throughput density, TFLOP/s per "
                                         "mm^2 (at most 100: an H100 has about 1.2).")
    vector_TFLOPS_per_mm2: float = Field(gt=0, le=100, description="Element-wise/SFU throughput density, TFLOP/s "
                                         "per mm^2 (at most 100).")
    sram_MB_per_mm2: float = Field(gt=0, le=100, description="SRAM density, MB (1e6 bytes) per mm^2 (at most "
                                   "100: 5 nm SRAM is about 4).")
    utilization: float = Field(0.8, gt=0, le=1, description="Sustained fraction of peak compute.")
    footprint: Literal["1x1", "1x2", "2x1", "2x2"] = Field("1x1", description=FOOTPRINT_DESCRIPTION)
    source: str = Field("", description="Where the numbers come from.")


class MemoryChiplet(_Spec):
    """An HBM stack."""

    name: str = Field(description="E.g. HBM3.")
    capacity_GB: float = Field(gt=0, le=1024, description="Capacity per stack, GB (1e9 bytes; at most 1024: "
                               "HBM4 stacks hold 64).")
    bandwidth_GBps: float = Field(ge=1, le=100_000, description="Peak bandwidth per stack, GB/s (1..100,000: HBM4 "
                                  "gives about 2,000).")
    area_mm2: float = Field(gt=0, le=MAX_AREA_MM2, description="Footprint, mm^2 (at most the 858 mm^2 reticle "
                            "limit).")
    footprint: Literal["1x1", "1x2", "2x1", "2x2"] = Field("1x1", description=FOOTPRINT_DESCRIPTION)
    source: str = Field("", description="Where the numbers come from.")


SCHEMA_VERSION = 1
"""The version of the input file schemas this chipdse reads (``chipdse schema`` prints it as ``version``). A file
may state the version it was written for as ``schema_version``; a newer one than this is refused in one line, so
a file written for a later chipdse is not half read."""


def check_schema_version(value: Any) -> Any:
    """A file's ``schema_version``: absent, or a whole number 1..:data:`SCHEMA_VERSION`.

    Raises
    ------
    ValueError
        Not a whole number >= 1, or newer than :data:`SCHEMA_VERSION` (upgrade chipdse to read it).
    """
    if value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"a whole number >= 1 (this chipdse writes {SCHEMA_VERSION}; not true / false, not a string)"
        raise ValueError(msg)
    if value > SCHEMA_VERSION:
        msg = (f"this chipdse reads input files up to schema version {SCHEMA_VERSION}; the file was written for a "
               "later one: upgrade chipdse")
        raise ValueError(msg)
    return value


class _VersionedFile(_Spec):
    """A spec that is a whole input file: it may state the schema version it was written for."""

    schema_version: int | None = Field(None, description=f"The input schema version the file was written for "
                                                          f"(this chipdse reads up to {SCHEMA_VERSION}); absent: "
                                                          "the current one.")

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        return check_schema_version(value)


class ChipletLibrary(_VersionedFile):
    """Compute chiplet types plus the memory stack and the PHY model."""

    name: str = Field(description="Library name, shown in reports.")
    compute: list[ComputeChiplet] = Field(min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE_NAMES,
                                          description="Compute chiplet types, each name once.")
    memory: MemoryChiplet = Field(description="The HBM stack every memory cell holds (capacity GB, bandwidth GB/s, "
                                  "area mm^2).")
    phy: D2DPhy = Field(D2DPhy(), description="D2D PHY cost model: die area per link bandwidth (lanes, Gb/s per lane, "
                        "mm^2 per macro).")

    def by_name(self, name: str) -> ComputeChiplet:
        """Return the compute chiplet type called ``name`` (KeyError if absent)."""
        for c in self.compute:
            if c.name == name:
                return c
        raise KeyError(name)


class Package(_VersionedFile):
    """Interposer grid, NoI and area budget (HYDRA Sec. III-C, VI-A)."""

    name: str = Field(description="Package name, shown in reports.")
    rows: int = Field(gt=0, le=16, description="Grid rows (at most 16: the exact placement models grow with "
                      "the square of the cells).")
    cols: int = Field(gt=0, le=16, description="Grid columns (at most 16, as rows).")
    cell_pitch_mm: float = Field(gt=0, le=100, description="Cell pitch, mm; a cell is pitch x pitch mm and holds "
                                 "one chiplet, so every die and HBM stack must fit in pitch^2 (at most 100 mm: "
                                 "wider than any stitched interposer).")
    interposer_area_mm2: float = Field(gt=0, le=100_000, description="Interposer area budget for all chiplets, "
                                       "mm^2 (at most 100,000).")
    topology: Literal["mesh"] = Field("mesh", description="NoI topology between neighbouring cells: a 2D mesh with "
                                      "XY routing (the only one supported).")
    hop_latency_ns: float = Field(20.0, ge=0, le=10_000, description="Per-hop router + link latency, ns (at most "
                                  "10,000); adds to each NoI transfer (HYDRA Eq. 3) in the estimator, the "
                                  "mapping and the simulator.")
    hbm_on_ring: bool = Field(True, description="HBM stacks only on the outer ring of cells.")

    @property
    def n_cells(self) -> int:
        """Number of grid cells."""
        return self.rows * self.cols

    def ring_cells(self) -> tuple[int, ...]:
        """Outer-ring cells (index r*cols+c), clockwise from cell 0."""
        r, c = self.rows, self.cols
        if r == 1 or c == 1:
            return tuple(range(r * c))
        top = [(0, j) for j in range(c)]
        right = [(i, c - 1) for i in range(1, r)]
        bottom = [(r - 1, j) for j in range(c - 2, -1, -1)]
        left = [(i, 0) for i in range(r - 2, 0, -1)]
        return tuple(i * c + j for i, j in top + right + bottom + left)


class Workload(_VersionedFile):
    """Request lengths (a trace or a parametric distribution) and the arrival process."""

    name: str = Field(description="Workload name, shown in reports and the sweep's workload column.")
    trace: str | None = Field(None, description="CSV with num_prefill_tokens,num_decode_tokens (path relative "
                              "to the workload file, or to instances/traces).")
    lengths: dict[str, float] | None = Field(None, description="Parametric lengths: a lognormal per phase fitted "
                                             "to two published statistics, keys prefixed prefill_ / decode_: "
                                             "median + sigma (log-space), mean + sigma, mean + median, mean + sd, "
                                             "or min + max + n (the extremes of n observations); optional "
                                             "<phase>_tokens_per_unit when they are words or characters.")
    arrival: Literal["poisson", "gamma", "replay"] = Field("poisson", description="Arrival process: poisson, gamma "
                                                           "(with gamma_cv) or replay (the trace's arrived_at "
                                                           "timestamps; the trace must have that column).")
    arrival_rate_rps: float = Field(gt=0, le=1e6, description="Offered load, requests per second (at most 1e6).")
    gamma_cv: float = Field(1.0, gt=0, le=100, description="Coefficient of variation of Gamma inter-arrivals "
                            "(at most 100); read only with arrival: gamma.")
    duration_s: float = Field(100.0, gt=0, le=1e6, description="Workload time simulated per configuration, s "
                              "(arrival_rate_rps x duration_s at most 10,000,000 requests).")
    source: str = Field("", description="Where the lengths and the rate come from (a dataset, paper or trace).")

    @field_validator("duration_s")
    @classmethod
    def _requests(cls, duration_s: float, info: ValidationInfo) -> float:
        if "arrival_rate_rps" in info.data:
            check_requests(info.data["arrival_rate_rps"], duration_s, "arrival_rate_rps x duration_s")
        return duration_s

    def cross_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """``gamma_cv`` given with an arrival process that does not read it."""
        if "gamma_cv" in self.model_fields_set and self.arrival != "gamma":
            return [(("gamma_cv",), f"no gamma_cv with arrival: {self.arrival} (it is read only with arrival: "
                     "gamma); remove it or set arrival: gamma")]
        return []

    @model_validator(mode="after")
    def _one_length_source(self) -> Workload:
        if (self.trace is None) == (self.lengths is None):
            msg = "exactly one of 'trace' or 'lengths'"
            raise ValueError(msg)
        return self


class DesignSpace(_Spec):
    """The composition space to sweep (HYDRA Table III)."""

    total_chiplets: int = Field(24, gt=0, le=256, description="Chiplets in the package (HBM + compute; at most "
                                "the package's rows x cols cells, and 256 = 16 x 16).")
    hbm_min: int = Field(2, ge=1, le=256, description="Fewest HBM stacks (at most 256).")
    hbm_max: int = Field(16, ge=1, le=256, description="Most HBM stacks (at most 256).")
    min_per_type: int = Field(1, ge=0, le=256, description="Minimum count of each compute type of the model.")
    d2d_GBps: list[Annotated[float, Field(ge=1, le=100_000)]] = Field(
        [256, 384, 512, 640], min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
        description="Per-link D2D bandwidths, GB/s (each 1..100,000, far beyond any D2D PHY; at most "
        "64 values, each once: each multiplies the design points).")
    max_batch: list[Annotated[int, Field(ge=1, le=MAX_BATCH)]] = Field(
        [2, 4, 8, 16, 32, 64], min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
        description="Max batch sizes, requests (each 1..4096: the simulator allocates per-request state for a "
        "whole batch; at most 64 values, each once: each multiplies the design points).")

    @model_validator(mode="after")
    def _check(self) -> DesignSpace:
        if self.hbm_min > self.hbm_max:
            msg = f"hbm_min ({self.hbm_min}) must not exceed hbm_max ({self.hbm_max})"
            raise ValueError(msg)
        return self

    def n_points(self, n_types: int) -> int:
        """Design points of this space for a model served by ``n_types`` compute chiplet types, before the
        package's area and cell checks: compositions of ``total_chiplets - h`` into ``n_types`` parts of at least
        ``min_per_type`` for every HBM count h, times the bandwidths and batches (stars and bars)."""
        comps = 0
        for h in range(self.hbm_min, self.hbm_max + 1):
            free = self.total_chiplets - h - n_types * self.min_per_type
            comps += math.comb(free + n_types - 1, n_types - 1) if free >= 0 and n_types > 0 else 0
        return comps * len(self.d2d_GBps) * len(self.max_batch)


class EstimatorSettings(_Spec):
    """Settings of the sweep screen (evaluators/estimator.py)."""

    screen_hops: float = Field(2.5, gt=0, le=64, description=(
        "Mean hops from a compute chiplet to the stacks of its HBM group when hop_model is fixed (a random cell is "
        "3.5 hops from a random ring cell on a 5x5 grid; good placements are closer; at most 64)."))
    chunk_tokens: int = Field(512, gt=0, le=1_000_000, description="Prefill chunk size for pipelined prefill, "
                              "tokens (at most 1,000,000).")
    batching: BatcherKind = Field(
        BatcherKind.DYNAMIC, description="dynamic: continuous batching (HYDRA Sec. IV-B; what HYDRA's estimator "
        "models and its full method runs); static: batches of max-batch requests prefilled together and decoded "
        "until the longest finishes (the ablation baseline).")
    scheduling: Literal["static", "elastic"] = Field(
        "static", description="static: every chiplet serves the phase it is optimized for, the allocation pinned "
        "(HYDRA Sec. VI-B's DSE setting); elastic: chiplets are reassigned across phases when one phase's demand "
        "exceeds its preferred allocation (HYDRA Sec. IV-C, V-A/B: the allocation-state Markov model).")
    hop_model: Literal["placement", "fixed"] = Field(
        "placement", description="placement: mean hops of each chiplet type to its HBM traffic in a constructed "
        "placement of its composition class (heaviest traffic nearest the stacks, the two HBM groups on opposite "
        "edges; evaluators/markov_hops.py); fixed: screen_hops for all.")


class SimulationSettings(_Spec):
    """Settings of explore's simulation stage (chipdse/simstudy.py)."""

    enabled: bool = Field(True, description="Run the simulator pages (fidelity, ablation, schedulers).")
    candidates: int = Field(6, ge=0, le=MAX_LIST, description=(
        "Pareto points simulated against the estimator (B* and M_T included, the rest spread along the front; at "
        "most 64, each one several simulations)."))
    spread: int = Field(6, ge=0, le=MAX_LIST, description=(
        "Further points, spread evenly over the estimator's throughput ranking of all feasible points, simulated "
        "against the estimator (the fidelity page's range; at most 64)."))
    duration_s: float = Field(60.0, gt=0, le=MAX_SIM_DURATION_S, description="Simulated window of each run of B*'s "
                              "layout study, s, from an empty system (at most 3600: an hour of serving is millions "
                              "of events); the ablation / scheduler / placement runs use warmup_s + measure_s.")
    max_duration_s: float = Field(300.0, gt=0, le=MAX_SIM_DURATION_S, description="Cap on a saturated fidelity "
                                  "run's window, s (at most 3600).")
    load: float = Field(0.9, gt=0, le=10, description="Offered load of the ablation / scheduler / placement runs, as a "
                        "fraction of the design's estimated capacity on each dataset (at most 10).")
    datasets: list[str] = Field(default_factory=list, max_length=MAX_LIST, json_schema_extra=UNIQUE, description=(
        "Workload YAMLs of the ablation / scheduler comparison (relative to the scenario or instances/workloads); "
        "empty = the scenario's workload only; at most 64."))
    workers: int = Field(2, ge=1, le=256, description="Worker processes for the simulations (1 = in-process; at "
                         "most 256).")
    warmup_s: float = Field(20.0, ge=0, le=MAX_SIM_DURATION_S, description="Warm-up of every ablation / scheduler / "
                            "placement run, s, simulated before the measured window and left out of its throughput "
                            "and latencies (at most 3600).")
    measure_s: float = Field(100.0, gt=0, le=MAX_SIM_DURATION_S, description="Measured window of every ablation / "
                             "scheduler / placement run after its warm-up, s (HYDRA simulates 100 s per "
                             "configuration, Sec. VI-A; at most 3600).")
    warmup_lifetimes: float = Field(0.0, ge=0, le=100, description=(
        "Warm-up in request lifetimes: each workload's warm-up is at least this many x (max batch / offered rate + "
        "mean output tokens x the estimator's decode iteration time), s: one static batch filled and decoded, so "
        "long-output datasets reach steady state before the measured window (0 = warmup_s alone; at most 100)."))
    min_completed: int = Field(10, ge=1, le=1_000_000, description=(
        "Requests that arrived after the warm-up and must have finished before an ablation / scheduler / placement "
        "run ends: every such run lasts at least measure_s after its warm-up and then until this many have "
        "finished, at most max_measure_s (HYDRA Sec. VI-A measures each configuration over a stated workload). "
        "The one validity rule: a workload whose study's reference run (baseline, static scheduler, round-robin "
        "placement) reaches the cap with fewer is invalid: shown, counted and left out of the averages (at most "
        "1,000,000; replaces min_first_tokens)."))
    max_measure_s: float = Field(1200.0, gt=0, le=MAX_SIM_DURATION_S, description=(
        "Cap on the measured window of an ablation / scheduler / placement run, s (from the end of its warm-up): "
        "a run that has not completed min_completed requests by then ends there (at most 3600). BWB / LongWriter "
        "requests live 270-1000 s and their designs serve 0.04-0.4 req/s, so their runs need several hundred s."))
    static_batch_timeout_s: float = Field(0.1, ge=0, le=MAX_SIM_DURATION_S, description=(
        "Batch-formation timeout of static batching in the ablation / scheduler / placement runs, s: a partial "
        "batch starts once its oldest request has waited this long (HYDRA gives no formation rule; 0.1 s is "
        "TorchServe's default max_batch_delay; at most 3600). The fidelity, recovery and Table IV runs keep full "
        "batches, the estimator's static-batching model."))
    roles: list[Literal["B*", "M_T"]] = Field(["B*", "M_T"], min_length=1, max_length=2, json_schema_extra=UNIQUE,
                                             description="Designs of the ablation / scheduler / placement studies "
                                             "(HYDRA Sec. VI-D/E run both).")
    models: list[str] = Field(default_factory=list, max_length=8, json_schema_extra=UNIQUE, description=(
        "Models of the ablation / scheduler / placement studies (bundled keys or card paths). Empty: explore's B* "
        "and M_T on every dataset. Otherwise every model x dataset is its own workload with its own B* and M_T "
        "from the estimator (HYDRA Sec. VI-B/E: 3 models x 4 datasets), exact placement by hbm-enum and LPT "
        "mapping; at most 8."))

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """``min_finished`` (issue 15) and ``min_first_tokens`` (issue 30) were replaced by ``min_completed``."""
        for old in ("min_finished", "min_first_tokens"):
            if isinstance(data, dict) and old in data:
                msg = (f"{old} was replaced by min_completed: every policy run is measured until that many "
                       "requests that arrived after its warm-up have finished (at most max_measure_s), and a "
                       "workload whose reference run falls short is invalid")
                raise ValueError(msg)
        return data

    def cross_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """``duration_s`` above the ``max_duration_s`` cap on every run's window; ``measure_s`` above
        ``max_measure_s``."""
        out: list[tuple[tuple[str | int, ...], str]] = []
        if self.duration_s > self.max_duration_s:
            out.append((("duration_s",), f"at most max_duration_s ({self.max_duration_s:g} s, the cap on every "
                        f"run's window), got {self.duration_s:g}"))
        if self.measure_s > self.max_measure_s:
            out.append((("measure_s",), f"at most max_measure_s ({self.max_measure_s:g} s, the cap on a policy "
                        f"run's measured window), got {self.measure_s:g}"))
        return out


class SweepSettings(_Spec):
    """Settings of ``chipdse sweep`` (chipdse/studies/sweep.py): the workloads screened and the simulation stage."""

    workloads: list[str] = Field(default_factory=list, max_length=MAX_LIST, json_schema_extra=UNIQUE, description=(
        "Workload YAMLs to sweep (relative to the scenario or instances/workloads); empty = the scenario's workload "
        "only; at most 64."))
    simulate: int = Field(0, ge=0, le=MAX_LIST, description=(
        "Pareto candidates per workload (B* and M_T first, the rest spread along the front) placed exactly, mapped "
        "and simulated at the offered load; 0 = none; at most 64."))
    placement: Literal["hbm-enum", "hydra-greedy"] = Field("hbm-enum", description="Placement of the simulated "
                                                           "candidates: hbm-enum (exact, HYDRA Eq. 2) or the "
                                                           "paper's greedy.")
    sim_duration_s: float = Field(30.0, gt=0, le=MAX_SIM_DURATION_S, description="Simulated window of each "
                                  "candidate, s (at most 3600).")


class ThermalSettings(_Spec):
    """The power / thermal stage of explore (issue 17): steady-state temperature maps of the finalists' placements
    (chipdse/evaluators/thermal.py) and, with a limit, the thermally constrained exact placement."""

    enabled: bool = Field(True, description="Draw the power and temperature maps of B* and M_T (a sparse solve "
                          "per placement: milliseconds).")
    limit_C: float | None = Field(None, gt=0, le=200, description=(
        "Largest die temperature any cell may reach, degC; when set, the finalists' placement is also solved with "
        "this limit (a linear constraint per cell) and its Eq. 2 cost and throughput are reported; default none "
        "(off). Typical junction limits are 85-105 degC (at most 200)."))
    utilization: float = Field(1.0, ge=0, le=1, description=(
        "Busy fraction of compute units and HBM bandwidth the power map assumes, in [0, 1]; 1 (default) is full "
        "load, the thermal design point."))
    heat_sink_K_per_W: float | None = Field(None, gt=0, le=10, description=(
        "Heat-sink resistance, spreader to ambient, K/W, replacing instances/thermal/package.yaml's (0.05 K/W, "
        "a cold plate); at most 10."))
    ambient_C: float | None = Field(None, ge=-50, le=150, description=(
        "Ambient (chassis air or coolant) temperature, degC, replacing instances/thermal/package.yaml's (45 degC, "
        "HotSpot's default); -50..150."))
    stack: dict[str, Annotated[float, Field(ge=-50, le=1e4)]] = Field(default_factory=dict, description=(
        "Layer constants replacing instances/thermal/package.yaml's, by key, in the entry's unit (e.g. "
        "tim_conductivity: 2.0, W/(m K)); heat_sink_K_per_W and ambient_C, when set, win."))


class GeneralitySettings(_Spec):
    """HYDRA Table IV: designs chosen for every subset of these models, each evaluated on all of them."""

    models: list[str] = Field(min_length=2, max_length=8, description="Model keys (instances/models) or card "
                              "paths; each must use the same chiplet types as the scenario's model (at most 8: "
                              "every subset is solved).")


class EnergySettings(_Spec):
    """Energy and power of the HYDRA sweep (issue 17): power limits that make designs infeasible, and whether the
    balanced finalist B* is picked by energy instead of by the throughput / TTFT ratio."""

    package_max_W: float | None = Field(None, gt=0, le=1e6, description=(
        "Package power limit (TDP), W: a design whose average power at its sustainable throughput exceeds it is "
        "infeasible; none = no limit (at most 1e6)."))
    chiplet_max_W: float | None = Field(None, gt=0, le=1e4, description=(
        "Per-chiplet power limit, W: a design with a compute chiplet whose power at full utilization exceeds it "
        "is infeasible; none = no limit (at most 1e4)."))
    chiplet_max_W_per_mm2: float | None = Field(None, gt=0, le=100, description=(
        "Power density limit per interposer cell, W/mm^2: a compute chiplet's full-utilization power over its "
        "die area; none = no limit (at most 100)."))
    pick: Literal["throughput-ttft", "energy"] = Field("throughput-ttft", description=(
        "How B* is chosen among stable points of above-average throughput: the highest throughput / TTFT ratio "
        "(HYDRA Fig. 8) or the most tokens per joule; M_T is the highest throughput either way."))
    table: dict[str, Annotated[float, Field(ge=0, le=1e6)]] = Field(default_factory=dict, description=(
        "Energy constants replacing instances/energy/common.yaml's, by key, in the entry's unit (e.g. "
        "hbm3_read: 2.5, pJ/bit); the names and ranges are chipdse params hydra's energy.table.* rows."))


class CostSettings(_Spec):
    """Package cost of the HYDRA sweep (issue 33): a cost limit that makes designs infeasible, and cost constants
    replacing the bundled ``instances/cost/common.yaml`` ones (the model: ``chipdse.evaluators.cost``)."""

    package_max_usd: float | None = Field(None, gt=0, le=1e9, description=(
        "Package cost limit, USD: a design whose package_cost_usd (dies, stacks, interposer, substrate over the "
        "assembly yields, plus amortized NRE) exceeds it is infeasible; none = no limit (at most 1e9)."))
    table: dict[str, Annotated[float, Field(ge=0, le=1e12)]] = Field(default_factory=dict, description=(
        "Cost constants replacing instances/cost/common.yaml's, by key, in the entry's unit (e.g. "
        "hbm_price_per_GB: 15, USD/GB); the names and ranges are chipdse params hydra's cost.table.* rows."))


class Scenario(_VersionedFile):
    """One file naming package, library, model, workload, design space and solver settings."""

    kind: Literal["hydra"] = Field("hydra", description="The HYDRA chiplet DSE (the SNAKE and NOVA studies have "
                                   "their own scenario kinds).")
    name: FolderName = Field(description="Scenario name; the output folder reports/out/<name>.")
    model: str = Field(description="Bundled model key (instances/models) or path to a card JSON.")
    library: str = Field(description="Path to a chiplet library YAML (relative to the scenario or instances/).")
    package: str = Field(description="Path to a package YAML.")
    workload: str = Field(description="Path to a workload YAML.")
    arrival_rate_rps: Annotated[float, Field(gt=0, le=1e6)] | None = Field(
        None, description="Offered load, req/s, replacing the workload's own (e.g. one every compared model "
        "sustains; at most 1e6).")
    design_space: DesignSpace = Field(DesignSpace(), description="The composition space to sweep (HYDRA Table III): "
                                      "chiplet and HBM counts, D2D GB/s, max batch in requests.")
    estimator: EstimatorSettings = Field(EstimatorSettings(), description="Settings of the sweep screen (batching, "
                                         "scheduling, hops, prefill chunk in tokens).")
    simulation: SimulationSettings = Field(SimulationSettings(), description="Settings of explore's simulation stage "
                                           "(candidates, windows in s, load, datasets, workers).")
    sweep: SweepSettings = Field(SweepSettings(), description="Settings of chipdse sweep (workloads, simulated "
                                 "candidates, placement, window in s).")
    energy: EnergySettings = Field(EnergySettings(), description="Energy and power: power limits (W, W/mm2) that "
                                   "make designs infeasible, and the finalist pick (throughput/TTFT or tokens/J).")
    cost: CostSettings = Field(CostSettings(), description="Package cost: a limit (USD) that makes designs "
                               "infeasible, and cost constants replacing instances/cost/common.yaml's.")
    thermal: ThermalSettings = Field(ThermalSettings(), description="Thermal stage of explore: the finalists' "
                                     "temperature maps (degC) and an optional peak-temperature limit for placement.")
    generality: GeneralitySettings | None = Field(None, description="Specialization-generality study (HYDRA "
                                                   "Table IV) added to the explore report.")
    work_limit: float = Field(20.0, gt=0, le=MAX_TIME_LIMIT_S, description="Deterministic work limit per exact "
                              "solve, work units (about 1 CPU-second each; solvers/config.py; at most 86,400): the "
                              "same run on any machine load.")
    time_limit_s: float | None = Field(None, gt=0, le=MAX_TIME_LIMIT_S, description="Wall-clock safety cap per "
                                       "exact solve, s (default 10 x work_limit + 30 s; at most 86,400: one day); a "
                                       "solve it ends depends on machine load.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of the randomized heuristics, solvers and "
                      "parametric lengths (0..2^31-1: CP-SAT's seed is a 32-bit integer).")


class TemplateSpec(_Spec):
    """The 3D-stacked NMP template (SNAKE Sec. 6.1.2, Stratum-like); ``link_latency_ns`` in ns, ``dram_TBps`` in
    1e12 bytes/s, ``link_GBps`` in 1e9 bytes/s (``chipdse.evaluators.snake_pu.nmp_template``
    builds the evaluator's; its defaults are the evaluator's ``STRATUM``)."""

    name: str = Field("stratum-like", description="Template name, shown in reports.")
    pus: PositiveInt = Field(16, le=4096, description="Processing units (at most 4096).")
    cores_per_pu: PositiveInt = Field(4, le=64, description="Systolic cores per PU (at most 64).")
    dram_TBps: PositiveFloat = Field(24.0, le=1000, description="DRAM bandwidth of the stack, TB/s (at most 1000).")
    pu_area_mm2: PositiveFloat = Field(2.35, le=MAX_AREA_MM2, description="Area of one PU, mm^2 (at most 858).")
    link_GBps: PositiveFloat = Field(64.0, le=100_000, description="Inter-PU link bandwidth, GB/s (at most "
                                     "100,000).")
    link_latency_ns: float = Field(20.0, ge=0, le=10_000, description="Inter-PU link latency, ns (at most 10,000).")
    mesh_side: PositiveInt = Field(4, le=64, description="PUs per side of the PU mesh (at most 64).")


class ShapeSetSpec(_Spec):
    """Inputs of the shape-set formulation (``formulations.snake_shapes``)."""

    rows: list[PositiveInt] = Field([8, 16, 32, 64], min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                     description=(
        "Logical array heights, each dividing 64 and at least 8 (SNAKE Sec. 4.2: remapping granularity 8); width = "
        "4096 / rows."))
    port_area_mm2: PositiveFloat = Field(0.012, le=MAX_AREA_MM2, description="One weight-injection port on the 4 "
                                         "cores of a PU, mm^2.")
    config_area_mm2: PositiveFloat = Field(0.01, le=MAX_AREA_MM2, description="Reconfiguration paths of one shape, "
                                           "per PU, mm^2.")
    budgets_mm2: list[PositiveFloat] = Field([0.05, 0.12, 0.2, 0.3], min_length=1, max_length=MAX_LIST,
                                             json_schema_extra=UNIQUE,
                                             description="Area budgets for ports and reconfiguration, per PU, mm^2.")

    @model_validator(mode="after")
    def _rows(self) -> ShapeSetSpec:
        bad = [r for r in self.rows if r < 8 or r > 64 or 64 % r]
        if bad:
            msg = f"rows must divide the 64-row physical array and be at least 8 (SNAKE Sec. 4.2), got {bad}"
            raise ValueError(msg)
        return self

    @field_validator("budgets_mm2")
    @classmethod
    def _some_shape_fits(cls, budgets: list[float], info: ValidationInfo) -> list[float]:
        """Each budget holds at least the cheapest shape beyond the free 64x64 array (ports x port area +
        reconfiguration, :func:`solvers.problems.shape_set_problem`), else the page has nothing to choose."""
        rows, port, config = (info.data.get(k) for k in ("rows", "port_area_mm2", "config_area_mm2"))
        paid = [r for r in rows or () if r != 64 and r >= 8 and 64 % r == 0]
        if not paid or port is None or config is None:
            return budgets
        r = max(paid)  # fewest ports: 64 / rows
        cheapest = port * (64 // r) + config
        for i, budget in enumerate(budgets):
            if budget < cheapest:
                msg = (f"[{i}] = {budget:g} mm^2 is below {cheapest:.4g} mm^2, the cheapest shape beyond the fixed "
                       f"64x64 array ({r} rows: {64 // r} ports x port_area_mm2 + config_area_mm2): no shape fits, "
                       "every method would return the fixed array alone")
                raise ValueError(msg)
        return budgets


class AreaSplitSpec(_Spec):
    """Inputs of the area-split formulation (``formulations.snake_area``, SNAKE Fig. 4a)."""

    model: str = Field("opt-66b", description="Model card whose decode GEMMs size the split (a bundled key, or a card "
                       "path relative to the scenario).")
    batch: Batch = Field(8, description="Batch, requests (1..4096).")
    rows: PositiveInt = Field(8, le=4096, description="Systolic array rows (at most 4096).")
    cols: list[Annotated[int, Field(ge=1, le=4096)]] = Field([128, 256, 384, 512, 640, 768], min_length=1,
                                                             max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                                             description="Array columns "
                                                             "swept (each 1..4096).")
    buffer_kb: list[Annotated[int, Field(ge=1, le=100_000)]] = Field([16, 32, 64, 128, 256, 384, 512], min_length=1,
                                                                     max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                                                     description="Buffer sizes "
                                                                     "swept, KB (each 1..100,000).")
    pe_area_mm2: PositiveFloat = Field(7.5e-5, le=1, description="One FP16 PE with its pipeline registers, mm^2.")
    sram_mm2_per_kb: PositiveFloat = Field(6e-4, le=1, description="SRAM area per KB, mm^2.")
    pu_fixed_area_mm2: PositiveFloat = Field(0.55, le=MAX_AREA_MM2, description="Vector core and control of a PU, "
                                             "mm^2.")
    dram_latency_ns: PositiveFloat = Field(200.0, le=1e6, description="DRAM access latency seen by a refill "
                                           "request, ns.")


class ServingSpec(_Spec):
    """The serving-latency page (SNAKE Sec. 6.4, Fig. 10): GPU prefill, continuous decode on the NMP."""

    models: list[str] | None = Field(None, min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                     description="Models to serve (default: mode_models).")
    l_in: Tokens = Field(8192, description="Prompt tokens per request (1..10,000,000).")
    l_out: Tokens = Field(1024, description="Output tokens per request (1..10,000,000).")
    max_batch: Batch = Field(64, description="Decode batch, requests (1..4096).")
    requests: PositiveInt = Field(200, le=100_000, description="Requests simulated per rate (at most 100,000).")
    rate_fractions: list[Annotated[float, Field(gt=0, lt=1)]] = Field([0.2, 0.4, 0.6, 0.8], min_length=1,
                                                                      max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                                                      description="Arrival rates "
                                                "as fractions of SNAKE's capacity (prefill or decode, the lower), "
                                                "each below 1: at or past capacity the queue grows without bound "
                                                "and the latencies only measure how many requests were simulated.")
    gpu_efficiency: float = Field(0.7, gt=0, le=1, description="Sustained share of the H100's 989 TFLOPS (prefill) "
                                  "and of its peak FLOPs and 3.35 TB/s (the GPU decode baseline) (assumption).")
    seed: Seed = 0


class _StudyLimits(_VersionedFile):
    """The solve limits a SNAKE or NOVA scenario shares."""

    work_limit: WorkLimit = Field(20.0, description="Deterministic work limit per exact solve, work units (at "
                                  "most 86,400).")
    time_limit_s: TimeLimit | None = Field(None, description="Wall-clock cap per exact solve, s (default 10 x "
                                           "work_limit + 30 s; at most 86,400).")


class StudyEnergy(_Spec):
    """Energy constants of a SNAKE or NOVA scenario (``energy.table``; ``--set energy.table.KEY=VALUE``)."""

    table: dict[str, Annotated[float, Field(ge=0, le=1e6)]] = Field(default_factory=dict, description=(
        "Energy constants replacing instances/energy/common.yaml's and the study's own file's (snake.yaml, "
        "nova.yaml), by key, in the entry's unit; the names and ranges are chipdse params snake / nova's "
        "energy.table.* rows."))


class SnakeScenario(_StudyLimits):
    """A SNAKE study scenario (``kind: snake``)."""

    kind: Literal["snake"] = Field(description="The SNAKE systolic near-memory study (required: a file without kind "
                                   "is a HYDRA scenario).")
    name: FolderName = Field(description="Scenario name; the output folder reports/out/<name>.")
    template: TemplateSpec = Field(TemplateSpec(), description="The 3D-stacked NMP template: PUs, cores, DRAM TB/s, "
                                   "PU area mm^2, inter-PU link GB/s and ns.")
    models: list[str] = Field(min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE, description="Model "
                              "cards (bundled keys, or card paths relative to the scenario) of SNAKE Table 1.")
    batches: list[Batch] = Field([8, 16, 32, 64], min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                 description="Batches, requests (each 1..4096).")
    tp: PositiveInt = Field(8, le=1024, description="Tensor-parallel NMP stacks (at most 1024).")
    mode_models: list[str] = Field(["llama-3-70b", "qwen3-30b-a3b"], min_length=1, max_length=MAX_LIST,
                                   json_schema_extra=UNIQUE, description=(
        "Models of the mode pages (SNAKE Figs. 13-14: one dense, one MoE), each one of models."))
    shape_set: ShapeSetSpec = Field(ShapeSetSpec(), description="Inputs of the shape-set choice (logical array "
                                    "heights, port and reconfiguration area in mm^2, budgets in mm^2).")
    area_split: AreaSplitSpec = Field(AreaSplitSpec(), description="Inputs of the PE / buffer area split (SNAKE Fig. "
                                      "4a): model, batch, array sizes, buffer KB, areas in mm^2.")
    serving: ServingSpec = Field(ServingSpec(), description="The serving-latency page (SNAKE Fig. 10): tokens per "
                                 "request, batch, requests, rates.")
    contexts: list[Tokens] = Field([4096, 8192, 16384], min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                   description="KV-cache tokens per request of the decode steps (SNAKE Fig. 13: 4K, "
                                   "8K, 16K inputs), each 1..10,000,000.")
    link_sweep_GBps: list[Annotated[float, Field(gt=0, le=100_000)]] = Field(
        [16.0, 32.0, 64.0, 160.0, 320.0, 640.0], min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
        description="Inter-PU link bandwidths the link page sweeps, GB/s, each at most 100,000 (the paper states "
        "none).")

    energy: StudyEnergy = Field(StudyEnergy(), description="Energy constants replacing the bundled ones "
                                "(energy.table: key -> value in the entry's unit).")

    def card_refs(self) -> list[tuple[str, str]]:
        """Every model card the scenario names, as (field, bundled key or path)."""
        refs = [(f"models[{i}]", m) for i, m in enumerate(self.models)]
        refs += [(f"mode_models[{i}]", m) for i, m in enumerate(self.mode_models)]
        refs += [("area_split.model", self.area_split.model)]
        return refs + [(f"serving.models[{i}]", m) for i, m in enumerate(self.serving.models or [])]

    @model_validator(mode="after")
    def _areas(self) -> SnakeScenario:
        if self.area_split.pu_fixed_area_mm2 >= self.template.pu_area_mm2:
            msg = (f"area_split.pu_fixed_area_mm2 ({self.area_split.pu_fixed_area_mm2}) must be below "
                   f"template.pu_area_mm2 ({self.template.pu_area_mm2}): nothing would be left for PEs and buffer")
            raise ValueError(msg)
        if self.template.mesh_side ** 2 != self.template.pus:
            msg = f"template.mesh_side^2 ({self.template.mesh_side ** 2}) must equal template.pus ({self.template.pus})"
            raise ValueError(msg)
        return self


class NovaSystemSpec(_Spec):
    """System assumptions (NOVA Sec. VI-A fixes the hardware; these are what it leaves open)."""

    gpu_efficiency: float = Field(0.7, gt=0, le=1, description="Sustained share of the H100's 989 TFLOPS and of its "
                                  "HBM bandwidth on dense GEMMs (projections, LM head, prefill).")
    gpu_attention_efficiency: float = Field(0.35, gt=0, le=1, description="The same share for the GQA core on "
                                            "the GPU (0.35: the largest share swept at which NOVA's gain grows with "
                                            "L_in / L_out on every case, as NOVA Sec. VI-C states).")
    gpu_expert_efficiency: float = Field(0.7, gt=0, le=1, description="The same share for routed experts on the GPU "
                                         "(small GEMMs of a few tokens each).")
    gpu_ssm_efficiency: float = Field(0.1, gt=0, le=1, description="The same share for the SSM state update on the "
                                      "GPU (NOVA Sec. VI-C: 'extremely low utilization').")
    routing: Literal["skewed", "uniform", "concentrated"] = Field("skewed", description=(
        "Expert routing of the decode steps: skewed (NOVA Fig. 4(b): the hottest 10% of experts get 5x the tokens), "
        "uniform or concentrated (90% of tokens on 5% of experts)."))
    sync_us: float = Field(2.0, ge=0, le=1e6, description="One GPU <-> NMP synchronization with its hand-off, us "
                           "(at most 1e6).")
    allreduce_us: float = Field(5.0, ge=0, le=1e6, description=(
        "Tensor-parallel all-reduce per layer with several GPUs, us (at most 1e6); used only for models given "
        "more than one GPU in gpus."))
    in_die_TFLOPS: PositiveFloat = Field(18.432, le=1e4, description=(
        "AttAcc / PIMBA in-die compute per cube, TFLOP/s: 1 FLOP per byte of bank-level bandwidth (AttAcc's opb = 1; "
        "at most 1e4)."))
    in_die_TBps: PositiveFloat = Field(18.432, le=1e4, description=(
        "Their bank-level internal bandwidth per cube: 9x the cube's 2.048 TB/s interface (AttAcc's power-"
        "constrained bank-level scale; at most 1e4)."))
    serving_requests: int = Field(0, ge=0, le=100_000, description=(
        "Requests of the continuous-batching stream served per run (0: twice the batch)."))
    cube_nmp_budget_W: PositiveFloat = Field(62.0, le=1e4, description=(
        "Near-memory power budget per cube, W: the dynamic power of a cube's near-memory processing (row "
        "activations, column accesses and TSV/base-die wires, NMP FLOPs) a run may draw; runs above it are marked "
        "over budget and left out of the within-budget headline (62 W: SNAKE Sec. 6.2's HotSpot-derived logic-die "
        "budget of a 3D-stacked NMP cube at 85 C; at most 1e4)."))


class ExpertTableSpec(_Spec):
    """The expert-split comparison (NOVA Fig. 16): routing kinds x expert counts."""

    batch: Batch = Field(64, description="Batch, requests (1..4096).")
    top_k: PositiveInt = Field(8, le=1024, description="Experts per token (at most 1024 and at most every expert "
                               "count).")
    experts: list[Annotated[int, Field(ge=1, le=65_536)]] = Field([16, 128, 512], min_length=1, max_length=MAX_LIST,
                                                                  json_schema_extra=UNIQUE,
                                                                  description="Expert counts (each 1..65,536).")
    routing: list[Literal["uniform", "zipf", "concentrated"]] = Field(["uniform", "zipf", "concentrated"], min_length=1,
                                                                       max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                                                       description="Routing kinds, each once.")
    expert_bytes: PositiveFloat = Field(3 * 2048 * 768 * 2.0, le=1e12, description="Qwen3-30B-A3B-sized expert, "
                                        "bytes (at most 1e12).")
    seed: Seed = 42

    def cross_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """``top_k`` above an expert count: a token cannot be routed to more experts than exist."""
        if self.top_k > min(self.experts):
            return [(("top_k",), f"at most the smallest expert count in experts ({min(self.experts)}; a token "
                     f"cannot be routed to more experts than exist), got {self.top_k}")]
        if self.batch * self.top_k > MAX_ROUTED_TOKENS:
            return [(("batch",), f"batch x top_k of at most {MAX_ROUTED_TOKENS:,} routed tokens per step (the "
                     f"exact splits take tens of seconds each beyond it), got {self.batch:,} x {self.top_k:,} = "
                     f"{self.batch * self.top_k:,}")]
        return []


class NovaScenario(_StudyLimits):
    """A NOVA study scenario (``kind: nova``)."""

    kind: Literal["nova"] = Field(description="The NOVA two-tier near-memory study (required: a file without kind is "
                                  "a HYDRA scenario).")
    name: FolderName = Field(description="Scenario name; the output folder reports/out/<name>.")
    models: list[str] = Field(min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE, description="Model "
                              "cards (bundled keys, or card paths relative to the scenario), NOVA Table II.")
    batches: list[Batch] = Field([32, 64], min_length=1, max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                 description="Batches, requests (each 1..4096).")
    lengths: list[tuple[Tokens, Tokens]] = Field([(2048, 512), (4096, 1024), (8192, 2048)], min_length=1,
                                                 max_length=MAX_LIST, json_schema_extra=UNIQUE,
                                                 description="(input, output) tokens per "
                                                 "request (each 1..10,000,000).")
    gpus: dict[str, Annotated[int, Field(ge=1, le=64)]] = Field(default_factory=dict, description=(
        "GPUs (each with five cubes) per model that needs more than one; NOVA runs Nemotron3-Super on two H100s; "
        "at most 64."))
    system: NovaSystemSpec = Field(NovaSystemSpec(), description="System assumptions NOVA leaves open: GPU "
                                   "efficiencies, routing, synchronization in us, in-die TFLOP/s and TB/s.")
    experts: ExpertTableSpec = Field(ExpertTableSpec(), description="The expert-split comparison (NOVA Fig. 16): "
                                     "batch, top-k, expert counts, routing, expert bytes.")

    energy: StudyEnergy = Field(StudyEnergy(), description="Energy constants replacing the bundled ones "
                                "(energy.table: key -> value in the entry's unit).")

    def card_refs(self) -> list[tuple[str, str]]:
        """Every model card the scenario names, as (field, bundled key or path)."""
        return [(f"models[{i}]", m) for i, m in enumerate(self.models)]


SCENARIO_KINDS = ("hydra", "snake", "nova")
"""Scenario kinds: the HYDRA chiplet DSE (the default when ``kind`` is absent), the SNAKE and the NOVA studies."""


def _scenario_kind(data: Any) -> str | None:
    if isinstance(data, dict):
        return data.get("kind", "hydra")
    return getattr(data, "kind", None)


ScenarioSpec = Annotated[
    Annotated[Scenario, Tag("hydra")] | Annotated[SnakeScenario, Tag("snake")] | Annotated[NovaScenario, Tag("nova")],
    Discriminator(_scenario_kind, custom_error_type="scenario_kind",
                  custom_error_message=f"one of {list(SCENARIO_KINDS)} (hydra when absent)"),
]
"""Any scenario file: a pydantic union discriminated by ``kind`` (``hydra`` when the field is absent)."""

_SCENARIO_SPEC: TypeAdapter[Scenario | SnakeScenario | NovaScenario] = TypeAdapter(ScenarioSpec)


def spec_problems(spec: BaseModel, loc: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every problem pydantic's per-field checks cannot see, in field order: a repeated entry of a list marked
    :data:`UNIQUE` (or a repeated ``name`` in one marked :data:`UNIQUE_NAMES`), and each spec's
    :meth:`_Spec.cross_problems`, recursively.

    Yields
    ------
    (tuple, str)
        The field path (e.g. ``("design_space", "d2d_GBps", 2)``) and what was expected, e.g.
        ``each value once; 256.0 repeats [0]``.
    """
    for name, info in type(spec).model_fields.items():
        value = getattr(spec, name)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if isinstance(value, list) and (extra.get("unique") or extra.get("unique_by")):
            by = extra.get("unique_by")
            first: dict[Any, int] = {}
            for j, v in enumerate(value):
                key = getattr(v, str(by)) if by else v
                if key in first:
                    yield (*loc, name, j, *((str(by),) if by else ())), (f"each value once; {shorten(key)} repeats "
                                                                          f"[{first[key]}]")
                first.setdefault(key, j)
        if isinstance(value, BaseModel):
            yield from spec_problems(value, (*loc, name))
        elif isinstance(value, list):
            for j, v in enumerate(value):
                if isinstance(v, BaseModel):
                    yield from spec_problems(v, (*loc, name, j))
    if isinstance(spec, _Spec):
        for where, msg in spec.cross_problems():
            yield (*loc, *where), msg


def _checked(spec: T, source: str) -> T:
    """``spec`` when :func:`spec_problems` finds nothing, else the first problem as a :class:`SpecError`."""
    for where, msg in spec_problems(spec):
        raise SpecError(source, format_field(where), msg)
    return spec


def parse_scenario_spec(data: dict[str, Any], source: str) -> Scenario | SnakeScenario | NovaScenario:
    """Validate a scenario mapping as the spec of its ``kind``.

    Raises
    ------
    SpecError
        The first validation error or :func:`spec_problems` problem (a repeated list entry, a contradiction), one
        line naming ``source`` and the field (e.g. ``kind``, ``batches[0]``).
    """
    try:
        spec = _SCENARIO_SPEC.validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "scenario_kind":
            got = data.get("kind") if isinstance(data, dict) else data
            raise SpecError(source, "kind", f"{err['msg']}, got {shorten(got)}") from None
        classes: dict[str, type[BaseModel]] = {"hydra": Scenario, "snake": SnakeScenario, "nova": NovaScenario}
        cls = classes.get(str(err["loc"][0]))
        raise _spec_error(err, source, err["loc"][1:], cls) from None
    return _checked(spec, source)


def format_field(loc: tuple[Any, ...] | list[Any]) -> str:
    """The one field-path style of every message: names joined by dots, list positions in brackets
    (``models[1].name``, ``design_space.d2d_GBps[0]``); ``(top level)`` for the empty path."""
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


_BOUND_ERRORS = {"less_than", "less_than_equal", "greater_than", "greater_than_equal", "too_long", "too_short",
                 "finite_number"}


def _numeric(annotation: Any) -> bool:
    """Whether a field's annotation holds numbers (``int``, ``float``, lists / tuples / dicts of them)."""
    if annotation in (int, float):
        return True
    return any(_numeric(arg) for arg in get_args(annotation))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The spec class inside a field's annotation (``X``, ``list[X]``, ``X | None``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def field_description(cls: type[BaseModel] | None, loc: tuple[Any, ...]) -> str:
    """The description (units, range and why) of the field at ``loc`` of spec ``cls``; ``""`` when unknown."""
    return _walk(cls, loc)[0]


def _walk(cls: type[BaseModel] | None, loc: tuple[Any, ...]) -> tuple[str, type[BaseModel] | None]:
    """The description of the field at ``loc`` of spec ``cls`` and the spec class it holds (None when it holds no
    spec, or ``loc`` leaves the specs); ``("", cls)`` for the empty path."""
    desc = ""
    for part in loc:
        if isinstance(part, int):
            continue
        if cls is None or part not in cls.model_fields:
            return "", None
        info = cls.model_fields[part]
        desc, cls = info.description or "", _model_in(info.annotation)
    return desc, cls


def did_you_mean(cls: type[BaseModel] | None, loc: tuple[Any, ...]) -> str:
    """For an unknown key at ``loc`` of spec ``cls``: ``"; did you mean 'x'?"`` naming the closest field of the
    mapping it stands in (difflib ratio >= 0.6), else ``"; known fields: a, b, ..."``; ``""`` when the mapping's
    spec is unknown."""
    holder = _walk(cls, loc[:-1])[1] if loc else None
    if holder is None:
        return ""
    known = sorted(holder.model_fields, key=lambda k: k == "schema_version")  # the format marker listed last
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
    return f"; known fields: {shown}"


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, stricter: a key given twice in one mapping is an error (PyYAML keeps the last one
    silently), and anchors / aliases (``&a`` / ``*a``, and so ``<<`` merges) are refused at the first alias, so an
    alias bomb (aliases of aliases, exponential when expanded) costs nothing. No bundled file uses them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"no anchors or aliases (*{event.anchor}): write the "
                                              "value out", event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise _DuplicateKeyError(key, seen[key], line)
                    seen[key] = line
                except TypeError:  # an unhashable key: PyYAML's own error says so
                    continue
        return super().construct_mapping(node, deep=deep)


class _HugeIntError(Exception):
    """An integer of more digits than Python converts (``sys.get_int_max_str_digits()``), at field ``loc``."""

    def __init__(self, loc: tuple[Any, ...]) -> None:
        super().__init__(loc)
        self.loc = loc


def _check_ints(loader: _StrictLoader, root: Any) -> None:
    """Raise :class:`_HugeIntError` at the first integer scalar under ``root`` (a composed node) that PyYAML's int
    constructor would refuse with a bare ValueError (more than ``sys.get_int_max_str_digits()`` digits)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(root, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, yaml.MappingNode):
            stack.extend((v, (*loc, k.value if isinstance(k, yaml.ScalarNode) else "?")) for k, v in
                         reversed(node.value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, (*loc, i)) for i, v in reversed(list(enumerate(node.value))))
        elif node.tag == "tag:yaml.org,2002:int":
            try:
                loader.construct_yaml_int(node)
            except ValueError:
                raise _HugeIntError(loc) from None


class _DuplicateKeyError(Exception):
    """A mapping key given twice (raised by :class:`_StrictLoader`)."""

    def __init__(self, key: Any, first_line: int, line: int) -> None:
        super().__init__(key)
        self.key, self.first_line, self.line = key, first_line, line


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a YAML mapping through :func:`chipdse.core.io.read_input_text` and a strict loader.

    Raises
    ------
    SpecError
        Naming the file: any problem of :func:`~chipdse.core.io.read_input_text` (missing, a directory, not a
        regular file, too large, unreadable, not UTF-8), invalid YAML (line and column), a key given twice
        (field: the key), an anchor or alias, or a document that is not a mapping.
    """
    text = read_input_text(path, "YAML")
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:  # an empty document has no node
            _check_ints(loader, node)
        data = None if node is None else loader.construct_document(node)
    except _HugeIntError as exc:
        raise SpecError(str(path), format_field(exc.loc), f"a number of at most {sys.get_int_max_str_digits()} "
                        "digits") from None
    except _DuplicateKeyError as exc:
        msg = (f"each key once in a mapping; {shorten(exc.key)} is given on line {exc.first_line} and again on "
               f"line {exc.line}")
        raise SpecError(str(path), str(exc.key)[:MAX_SHOWN_CHARS], msg) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise SpecError(str(path), "", f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise SpecError(str(path), "", "YAML nested at most a few hundred levels deep") from None
    finally:
        loader.dispose()
    if data is None:
        raise SpecError(str(path), "", "the file is empty; expected a YAML mapping of fields")
    if not isinstance(data, dict):
        kinds: dict[type, str] = {list: "a list", str: "a plain string"}
        kind = kinds.get(type(data), type(data).__name__)
        raise SpecError(str(path), "", f"expected a YAML mapping of fields, got {kind}")
    return data


def parse_spec(cls: type[T], data: dict[str, Any], source: str) -> T:
    """Validate ``data`` as ``cls``, then check what field-by-field validation cannot (:func:`spec_problems`).

    Returns
    -------
    T
        The validated spec.

    Raises
    ------
    SpecError
        The first validation error or problem, one line naming ``source`` and the field.
    """
    try:
        spec = cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise _spec_error(err, source, err["loc"], cls) from None
    return _checked(spec, source)


def _spec_error(err: Any, source: str, loc: tuple[Any, ...], cls: type[BaseModel] | None = None) -> SpecError:
    """One pydantic error as a one-line :class:`SpecError` at ``loc``; a range error adds the field's
    description (its units, limit and why) when ``cls`` is the spec validated."""
    value = err.get("input")
    shown = "" if isinstance(value, dict) else f" (got {shorten(value)})"
    text = str(err["msg"]).removeprefix("Value error, ")
    why = field_description(cls, loc) if err["type"] in _BOUND_ERRORS else ""
    hint = did_you_mean(cls, loc) if err["type"] == "extra_forbidden" else ""
    return SpecError(source, format_field(loc), f"{text}{shown}" + (f"; {why}" if why else "") + hint)


def resolve(ref: str, base: Path, kind: str, referrer: str = "", field: str = "") -> Path:
    """Resolve a file reference relative to ``base`` first, then ``instances/<kind>``, then ``instances``.

    Raises
    ------
    SpecError
        When no candidate exists, or the system refuses the path (e.g. a name too long); names the referring file
        and field when given.
    """
    try:
        for candidate in (base / ref, instances_dir() / kind / ref, instances_dir() / ref):
            if candidate.exists():
                return candidate
    except OSError as exc:  # e.g. ENAMETOOLONG: the system refuses the path itself
        raise SpecError(referrer or str(base / ref), field, f"a file path the system accepts ({exc.strerror or exc}"
                        f"), got {shorten(ref)}") from None
    if referrer:
        raise SpecError(referrer, field, f"file not found: {shorten(ref)} (looked in {base} and instances/{kind})")
    return base / ref


def load_spec(cls: type[T], path: Path) -> T:
    """Load one YAML spec file as ``cls`` (:func:`read_yaml`, then :func:`parse_spec`).

    Raises
    ------
    SpecError
        Naming ``path``: any problem of :func:`read_yaml` or :func:`parse_spec`.
    """
    return parse_spec(cls, read_yaml(path), str(path))


def file_sha256(path: Path) -> str:
    """Return the SHA-256 hex digest of a file (for the manifest)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
