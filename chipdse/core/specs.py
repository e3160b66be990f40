"""Typed specs (pydantic) for chiplet libraries, packages, workloads and scenarios, loaded from YAML.

Every user error names the file, the field and what was expected (DESIGN.md, Conventions).
Units are in the field names: ``_mm2``, ``_GBps`` (1e9 bytes/s), ``_TFLOPS``, ``_GB`` (1e9 bytes), ``_s``.
"""

from __future__ import annotations

import hashlib
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PositiveFloat,
    PositiveInt,
    Tag,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir

T = TypeVar("T", bound=BaseModel)


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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

    lanes: int = Field(8, gt=0, description="Lanes per PHY macro.")
    lane_rate_Gbps: float = Field(25.0, gt=0, description="Signalling rate per lane, Gb/s.")
    area_mm2: float = Field(0.3876, gt=0, description="Area of one PHY macro, mm^2 (16 nm GRS, HYDRA).")
    ports_per_chiplet: int = Field(4, gt=0, description="Mesh ports per compute chiplet (N, E, S, W).")

    @property
    def GBps_per_phy(self) -> float:  # noqa: N802 - unit in name
        """Bandwidth of one PHY macro, GB/s (lanes x lane rate / 8)."""
        return self.lanes * self.lane_rate_Gbps / 8.0

    def area_for(self, link_GBps: float) -> float:  # noqa: N803
        """Return the PHY area in mm^2 a chiplet spends for ``link_GBps`` on each of its ports."""
        return self.ports_per_chiplet * math.ceil(link_GBps / self.GBps_per_phy - 1e-9) * self.area_mm2


class ComputeChiplet(_Spec):
    """A compute chiplet type whose core area (die cap minus PHY and fixed overhead) splits into compute and SRAM.

    HYDRA Sec. VI-A: prefill-oriented chiplets split area about evenly between compute and SRAM,
    decode-oriented ones give SRAM about twice the compute area; more D2D bandwidth costs PHY area.
    """

    name: str = Field(description="Type name, e.g. Ap, Ad, Mp, Md.")
    family: Literal["attention", "mamba"] = Field(description="Block family it is built for.")
    phase: Literal["prefill", "decode"] = Field(description="Phase it is optimized for.")
    die_area_mm2: float = Field(121.0, gt=0, description="Die area (the die cap), mm^2.")
    overhead_area_mm2: float = Field(gt=0, description="Fixed area for control, router, DMA, mm^2.")
    compute_fraction: float = Field(gt=0, lt=1, description="Share of the core area given to compute units.")
    matrix_TFLOPS_per_mm2: float = Field(gt=0, description="Dense matrix throughput density, TFLOP/s per mm^2.")
    vector_TFLOPS_per_mm2: float = Field(gt=0, description="Element-wise/SFU throughput density, TFLOP/s per mm^2.")
    sram_MB_per_mm2: float = Field(gt=0, description="SRAM density, MB (1e6 bytes) per mm^2.")
    utilization: float = Field(0.8, gt=0, le=1, description="Sustained fraction of peak compute.")
    source: str = Field("", description="Where the numbers come from.")


class MemoryChiplet(_Spec):
    """An HBM stack."""

    name: str = Field(description="E.g. HBM3.")
    capacity_GB: float = Field(gt=0, description="Capacity, GB (1e9 bytes).")
    bandwidth_GBps: float = Field(gt=0, description="Peak bandwidth, GB/s.")
    area_mm2: float = Field(gt=0, description="Footprint, mm^2.")
    source: str = Field("", description="Where the numbers come from.")


class ChipletLibrary(_Spec):
    """Compute chiplet types plus the memory stack and the PHY model."""

    name: str
    compute: list[ComputeChiplet] = Field(min_length=1)
    memory: MemoryChiplet
    phy: D2DPhy = D2DPhy()

    def by_name(self, name: str) -> ComputeChiplet:
        """Return the compute chiplet type called ``name`` (KeyError if absent)."""
        for c in self.compute:
            if c.name == name:
                return c
        raise KeyError(name)


class Package(_Spec):
    """Interposer grid, NoI and area budget (HYDRA Sec. III-C, VI-A)."""

    name: str
    rows: int = Field(gt=0, le=16)
    cols: int = Field(gt=0, le=16)
    cell_pitch_mm: float = Field(gt=0, description="Cell pitch; a cell is pitch x pitch mm.")
    interposer_area_mm2: float = Field(gt=0, description="Interposer area budget for all chiplets, mm^2.")
    topology: Literal["mesh"] = "mesh"
    hop_latency_ns: float = Field(20.0, ge=0, description="Per-hop router + link latency, ns.")
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


class Workload(_Spec):
    """Request lengths (a trace or a parametric distribution) and the arrival process."""

    name: str
    trace: str | None = Field(None, description="CSV with num_prefill_tokens,num_decode_tokens (path relative "
                              "to the workload file, or to instances/traces).")
    lengths: dict[str, float] | None = Field(None, description="Parametric lengths: lognormal with keys "
                                             "prefill_median, prefill_sigma, decode_median, decode_sigma.")
    arrival: Literal["poisson", "gamma", "replay"] = "poisson"
    arrival_rate_rps: float = Field(gt=0, description="Offered load, requests per second.")
    gamma_cv: float = Field(1.0, gt=0, description="Coefficient of variation of Gamma inter-arrivals.")
    duration_s: float = Field(100.0, gt=0, description="Workload time simulated per configuration, s.")
    source: str = ""

    @model_validator(mode="after")
    def _one_length_source(self) -> Workload:
        if (self.trace is None) == (self.lengths is None):
            msg = "exactly one of 'trace' or 'lengths'"
            raise ValueError(msg)
        return self


class DesignSpace(_Spec):
    """The composition space to sweep (HYDRA Table III)."""

    total_chiplets: int = Field(24, gt=0, description="Chiplets in the package (HBM + compute).")
    hbm_min: int = Field(2, ge=1)
    hbm_max: int = Field(16, ge=1)
    min_per_type: int = Field(1, ge=0, description="Minimum count of each compute type of the model.")
    d2d_GBps: list[PositiveFloat] = Field([256, 384, 512, 640], min_length=1,
                                          description="Per-link D2D bandwidths, GB/s (each > 0).")
    max_batch: list[PositiveInt] = Field([2, 4, 8, 16, 32, 64], min_length=1,
                                         description="Max batch sizes (each >= 1).")

    @model_validator(mode="after")
    def _check(self) -> DesignSpace:
        if self.hbm_min > self.hbm_max:
            msg = f"hbm_min ({self.hbm_min}) must not exceed hbm_max ({self.hbm_max})"
            raise ValueError(msg)
        return self


class EstimatorSettings(_Spec):
    """Settings of the sweep screen (evaluators/estimator.py)."""

    screen_hops: float = Field(2.5, gt=0, description="Mean hops from a compute chiplet to the stacks of its HBM "
                               "group assumed before placement (a random cell is 3.5 hops from a random ring cell "
                               "on a 5x5 grid; good placements are closer). Finalists are re-scored with their "
                               "real placement.")
    chunk_tokens: int = Field(512, gt=0, description="Prefill chunk size for pipelined prefill, tokens.")
    batching: BatcherKind = Field(
        BatcherKind.DYNAMIC, description="dynamic: continuous batching (HYDRA Sec. IV-B; what HYDRA's estimator "
        "models and its full method runs); static: batches of max-batch requests prefilled together and decoded "
        "until the longest finishes (the ablation baseline).")


class SimulationSettings(_Spec):
    """Settings of explore's simulation stage (chipdse/simstudy.py)."""

    enabled: bool = Field(True, description="Run the simulator pages (fidelity, ablation, schedulers).")
    candidates: int = Field(6, ge=0, description="Pareto points simulated against the estimator (B* and M_T "
                            "included, the rest spread along the front).")
    spread: int = Field(6, ge=0, description="Further points, spread evenly over the estimator's throughput ranking "
                        "of all feasible points, simulated against the estimator (the fidelity page's range).")
    duration_s: float = Field(60.0, gt=0, description="Simulated window of each ablation / scheduler run, s.")
    max_duration_s: float = Field(300.0, gt=0, description="Cap on a saturated fidelity run's window, s.")
    load: float = Field(0.9, gt=0, description="Offered load of the ablation / scheduler runs, as a fraction of "
                        "the design's estimated capacity on each dataset.")
    datasets: list[str] = Field(default_factory=list, description="Workload YAMLs of the ablation / scheduler "
                                "comparison (relative to the scenario or instances/workloads); empty = the "
                                "scenario's workload only.")
    workers: int = Field(2, ge=1, description="Worker processes for the simulations (1 = in-process).")


class SweepSettings(_Spec):
    """Settings of ``chipdse sweep`` (chipdse/studies/sweep.py): the workloads screened and the simulation stage."""

    workloads: list[str] = Field(default_factory=list, description="Workload YAMLs to sweep (relative to the "
                                 "scenario or instances/workloads); empty = the scenario's workload only.")
    simulate: int = Field(0, ge=0, description="Pareto candidates per workload (B* and M_T first, the rest spread "
                          "along the front) placed exactly, mapped and simulated at the offered load; 0 = none.")
    placement: Literal["hbm-enum", "hydra-greedy"] = Field("hbm-enum", description="Placement of the simulated "
                                                           "candidates: hbm-enum (exact, HYDRA Eq. 2) or the "
                                                           "paper's greedy.")
    sim_duration_s: float = Field(30.0, gt=0, description="Simulated window of each candidate, s.")


class GeneralitySettings(_Spec):
    """HYDRA Table IV: designs chosen for every subset of these models, each evaluated on all of them."""

    models: list[str] = Field(min_length=2, description="Model keys (instances/models) or card paths; each must "
                              "use the same chiplet types as the scenario's model.")


class Scenario(_Spec):
    """One file naming package, library, model, workload, design space and solver settings."""

    kind: Literal["hydra"] = Field("hydra", description="The HYDRA chiplet DSE (the SNAKE and NOVA studies have "
                                   "their own scenario kinds).")
    name: str
    model: str = Field(description="Bundled model key (instances/models) or path to a card JSON.")
    library: str = Field(description="Path to a chiplet library YAML (relative to the scenario or instances/).")
    package: str = Field(description="Path to a package YAML.")
    workload: str = Field(description="Path to a workload YAML.")
    arrival_rate_rps: PositiveFloat | None = Field(None, description="Offered load, req/s, replacing the "
                                                   "workload's own (e.g. one every compared model sustains).")
    design_space: DesignSpace = DesignSpace()
    estimator: EstimatorSettings = EstimatorSettings()
    simulation: SimulationSettings = SimulationSettings()
    sweep: SweepSettings = SweepSettings()
    generality: GeneralitySettings | None = Field(None, description="Specialization-generality study (HYDRA "
                                                   "Table IV) added to the explore report.")
    work_limit: float = Field(20.0, gt=0, description="Deterministic work limit per exact solve, work units "
                              "(about 1 CPU-second each; solvers/config.py): the same run on any machine load.")
    time_limit_s: float | None = Field(None, gt=0, description="Wall-clock safety cap per exact solve, s "
                                       "(default 10 x work_limit + 30 s); a solve it ends depends on machine load.")
    seed: int = Field(0, ge=0)


class TemplateSpec(_Spec):
    """The 3D-stacked NMP template (SNAKE Sec. 6.1.2, Stratum-like); ``link_latency_ns`` in ns, ``dram_TBps`` in
    1e12 bytes/s, ``link_GBps`` in 1e9 bytes/s (``chipdse.evaluators.snake_pu.nmp_template``
    builds the evaluator's; its defaults are the evaluator's ``STRATUM``)."""

    name: str = "stratum-like"
    pus: PositiveInt = 16
    cores_per_pu: PositiveInt = 4
    dram_TBps: PositiveFloat = 24.0
    pu_area_mm2: PositiveFloat = 2.35
    link_GBps: PositiveFloat = 64.0
    link_latency_ns: float = Field(20.0, ge=0)
    mesh_side: PositiveInt = 4


class ShapeSetSpec(_Spec):
    """Inputs of the shape-set formulation (``formulations.snake_shapes``)."""

    rows: list[PositiveInt] = Field([8, 16, 32, 64], min_length=1, description="Logical array heights, each "
                                    "dividing 64 and at least 8 (SNAKE Sec. 4.2: remapping granularity 8); "
                                    "width = 4096 / rows.")
    port_area_mm2: PositiveFloat = Field(0.012, description="One weight-injection port on the 4 cores of a PU.")
    config_area_mm2: PositiveFloat = Field(0.01, description="Reconfiguration paths of one shape, per PU.")
    budgets_mm2: list[PositiveFloat] = Field([0.05, 0.12, 0.2, 0.3], min_length=1,
                                             description="Area budgets for ports and reconfiguration, per PU.")

    @model_validator(mode="after")
    def _rows(self) -> ShapeSetSpec:
        bad = [r for r in self.rows if r < 8 or r > 64 or 64 % r]
        if bad:
            msg = f"rows must divide the 64-row physical array and be at least 8 (SNAKE Sec. 4.2), got {bad}"
            raise ValueError(msg)
        return self


class AreaSplitSpec(_Spec):
    """Inputs of the area-split formulation (``formulations.snake_area``, SNAKE Fig. 4a)."""

    model: str = "opt-66b"
    batch: PositiveInt = 8
    rows: PositiveInt = 8
    cols: list[PositiveInt] = Field([128, 256, 384, 512, 640, 768], min_length=1)
    buffer_kb: list[PositiveInt] = Field([16, 32, 64, 128, 256, 384, 512], min_length=1)
    pe_area_mm2: PositiveFloat = Field(7.5e-5, description="One FP16 PE with its pipeline registers.")
    sram_mm2_per_kb: PositiveFloat = 6e-4
    pu_fixed_area_mm2: PositiveFloat = Field(0.55, description="Vector core and control of a PU.")
    dram_latency_ns: PositiveFloat = Field(200.0, description="DRAM access latency seen by a refill request.")


class ServingSpec(_Spec):
    """The serving-latency page (SNAKE Sec. 6.4, Fig. 10): GPU prefill, continuous decode on the NMP."""

    models: list[str] | None = Field(None, description="Models to serve (default: mode_models).")
    l_in: PositiveInt = 8192
    l_out: PositiveInt = 1024
    max_batch: PositiveInt = 64
    requests: PositiveInt = 200
    rate_fractions: list[PositiveFloat] = Field([0.2, 0.4, 0.6, 0.8], min_length=1, description="Arrival rates "
                                                "as fractions of SNAKE's capacity (prefill or decode, the lower).")
    gpu_efficiency: float = Field(0.7, gt=0, le=1, description="Sustained share of the H100's 989 TFLOPS (assumption).")
    seed: int = 0


class SnakeScenario(_Spec):
    """A SNAKE study scenario (``kind: snake``)."""

    kind: Literal["snake"]
    name: str
    template: TemplateSpec = TemplateSpec()
    models: list[str] = Field(min_length=1, description="Model cards (instances/models) of SNAKE Table 1.")
    batches: list[PositiveInt] = Field([8, 16, 32, 64], min_length=1)
    tp: PositiveInt = 8
    mode_models: list[str] = Field(["llama-3-70b", "qwen3-30b-a3b"], description="Models of the mode pages "
                                   "(SNAKE Figs. 13-14: one dense, one MoE).")
    shape_set: ShapeSetSpec = ShapeSetSpec()
    area_split: AreaSplitSpec = AreaSplitSpec()
    serving: ServingSpec = ServingSpec()
    work_limit: PositiveFloat = Field(20.0, description="Deterministic work limit per exact solve, work units.")
    time_limit_s: PositiveFloat | None = Field(None, description="Wall-clock cap per exact solve, s "
                                               "(default 10 x work_limit + 30 s).")

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

    gpu_efficiency: float = Field(0.7, gt=0, le=1, description="Sustained share of the H100's 989 TFLOPS.")
    sync_us: float = Field(2.0, ge=0, description="One GPU <-> NMP synchronization with its hand-off, us.")
    allreduce_us: float = Field(5.0, ge=0, description="Tensor-parallel all-reduce per layer with several GPUs, us.")
    in_die_TFLOPS: PositiveFloat = Field(4.0, description="AttAcc / PIMBA in-die compute per cube (16 GEMV units "
                                         "per bank against Tier-1's 128: 32 / 8 TFLOPS).")
    in_die_TBps: PositiveFloat = Field(2.0, description="Their bank-level read bandwidth per cube (256-bit reads "
                                       "against Tier-1's 2 Kb: 16 / 8 TB/s).")


class ExpertTableSpec(_Spec):
    """The expert-split comparison (NOVA Fig. 16): routing kinds x expert counts."""

    batch: PositiveInt = 64
    top_k: PositiveInt = 8
    experts: list[PositiveInt] = Field([16, 128, 512], min_length=1)
    routing: list[Literal["uniform", "zipf", "concentrated"]] = ["uniform", "zipf", "concentrated"]
    expert_bytes: PositiveFloat = Field(3 * 2048 * 768 * 2.0, description="Qwen3-30B-A3B-sized expert, bytes.")
    seed: int = 42


class NovaScenario(_Spec):
    """A NOVA study scenario (``kind: nova``)."""

    kind: Literal["nova"]
    name: str
    models: list[str] = Field(min_length=1, description="Model cards (instances/models), NOVA Table II.")
    batches: list[PositiveInt] = Field([32, 64], min_length=1)
    lengths: list[tuple[PositiveInt, PositiveInt]] = Field([(2048, 512), (4096, 1024), (8192, 2048)], min_length=1,
                                                           description="(input, output) tokens per request.")
    gpus: dict[str, PositiveInt] = Field(default_factory=dict, description="GPUs (each with five cubes) per model "
                                         "that needs more than one; NOVA runs Nemotron3-Super on two H100s.")
    system: NovaSystemSpec = NovaSystemSpec()
    experts: ExpertTableSpec = ExpertTableSpec()
    work_limit: PositiveFloat = Field(20.0, description="Deterministic work limit per exact solve, work units.")
    time_limit_s: PositiveFloat | None = Field(None, description="Wall-clock cap per exact solve, s "
                                               "(default 10 x work_limit + 30 s).")

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


def parse_scenario_spec(data: dict[str, Any], source: str) -> Scenario | SnakeScenario | NovaScenario:
    """Validate a scenario mapping as the spec of its ``kind``.

    Raises
    ------
    SpecError
        The first validation error, one line naming ``source`` and the field (e.g. ``kind``, ``batches.0``).
    """
    try:
        return _SCENARIO_SPEC.validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "scenario_kind":
            got = data.get("kind") if isinstance(data, dict) else data
            raise SpecError(source, "kind", f"{err['msg']}, got {got!r}") from None
        raise _spec_error(err, source, err["loc"][1:]) from None


def _format_loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) if loc else "(top level)"


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a YAML mapping, raising :class:`SpecError` naming the file on any problem."""
    if not path.exists():
        raise SpecError(str(path), "", "file not found")
    if path.is_dir():
        raise SpecError(str(path), "", "expected a YAML file, got a directory")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise SpecError(str(path), "", f"invalid YAML{where}: {problem}") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise SpecError(str(path), "", f"a readable UTF-8 YAML file ({exc})") from None
    if data is None:
        raise SpecError(str(path), "", "the file is empty; expected a YAML mapping of fields")
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a plain string"}.get(type(data), type(data).__name__)
        raise SpecError(str(path), "", f"expected a YAML mapping of fields, got {kind}")
    return data


def parse_spec(cls: type[T], data: dict[str, Any], source: str) -> T:
    """Validate ``data`` as ``cls``; the first validation error becomes a one-line :class:`SpecError`."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise _spec_error(err, source, err["loc"]) from None


def _spec_error(err: Any, source: str, loc: tuple[Any, ...]) -> SpecError:
    """One pydantic error as a one-line :class:`SpecError` at ``loc``."""
    value = err.get("input")
    shown = "" if isinstance(value, dict) else f" (got {value!r})"
    text = str(err["msg"]).removeprefix("Value error, ")
    return SpecError(source, _format_loc(loc), f"{text}{shown}")


def resolve(ref: str, base: Path, kind: str, referrer: str = "", field: str = "") -> Path:
    """Resolve a file reference relative to ``base`` first, then ``instances/<kind>``, then ``instances``.

    Raises
    ------
    SpecError
        When no candidate exists; names the referring file and field when given.
    """
    for candidate in (base / ref, instances_dir() / kind / ref, instances_dir() / ref):
        if candidate.exists():
            return candidate
    if referrer:
        raise SpecError(referrer, field, f"file not found: {ref} (looked in {base} and instances/{kind})")
    return base / ref


def load_spec(cls: type[T], path: Path) -> T:
    """Load one YAML spec file as ``cls``."""
    return parse_spec(cls, read_yaml(path), str(path))


def file_sha256(path: Path) -> str:
    """Return the SHA-256 hex digest of a file (for the manifest)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
