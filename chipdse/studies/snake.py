"""The SNAKE study behind ``chipdse explore`` on a ``kind: snake`` scenario: decode speedups against the baselines,
multi-PU mode choice, fixed-mode slowdowns, shape choice vs batch, and the two exact hardware choices.

The scenario (``instances/scenarios/snake-stratum.yaml``) names the NMP template (SNAKE Sec. 6.1.2), the Table 1
models and batches, and the area assumptions of the shape-set and area-split formulations; every number there
has its source or is marked as an assumption.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from chipdse.core.errors import SpecError
from chipdse.core.solution import Solution
from chipdse.core.specs import _Spec, load_spec
from chipdse.evaluators.snake import SNAKE, SnakeError, decode_gemms, load_card
from chipdse.evaluators.snake_pu import (
    BASELINE_DESIGNS,
    MODES,
    NmpTemplate,
    decode_step_s,
    design_speedups,
    fixed_mode_slowdowns,
    schedule,
)
from chipdse.formulations.snake_area import AreaSplitProblem
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.problems import area_split_problem, shape_set_problem
from chipdse.solvers.snake_hw import AREA_SPLIT_METHODS, SHAPE_SET_METHODS, solve_area_split, solve_shape_set

PAPER_SPEEDUPS = {"mac_tree": 2.90, "sa48x48": 2.33, "sa8x288": 3.00}
"""SNAKE Sec. 6.3: average decode speedup of SNAKE over each baseline across the five models."""


class TemplateSpec(_Spec):
    """The 3D-stacked NMP template (SNAKE Sec. 6.1.2, Stratum-like)."""

    name: str = "stratum-like"
    pus: PositiveInt = 16
    cores_per_pu: PositiveInt = 4
    dram_TBps: PositiveFloat = 24.0
    pu_area_mm2: PositiveFloat = 2.35
    link_GBps: PositiveFloat = 64.0
    link_latency_ns: float = Field(20.0, ge=0)
    mesh_side: PositiveInt = 4

    def template(self) -> NmpTemplate:
        """The evaluator's :class:`NmpTemplate`."""
        return NmpTemplate(self.name, self.pus, self.cores_per_pu, self.dram_TBps, self.pu_area_mm2,
                           self.link_GBps, self.link_latency_ns * 1e-9, 2, self.mesh_side)


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
    time_limit_s: PositiveFloat = 20.0

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


def load_snake_scenario(path: Path) -> SnakeScenario:
    """Load and check a SNAKE scenario; every model card must exist and be a supported decode model.

    Raises
    ------
    SpecError
        A malformed field, naming the file and field.
    SnakeError
        A missing card or an unsupported layer type.
    """
    spec = load_spec(SnakeScenario, path)
    refs = [(f"models[{i}]", m) for i, m in enumerate(spec.models)]
    refs += [(f"mode_models[{i}]", m) for i, m in enumerate(spec.mode_models)] + [("area_split.model",
                                                                                  spec.area_split.model)]
    refs += [(f"serving.models[{i}]", m) for i, m in enumerate(spec.serving.models or [])]
    for where, m in refs:
        try:
            decode_gemms(load_card(m), spec.batches[0], spec.tp)
        except SnakeError as exc:
            raise SpecError(str(path), where, str(exc)) from None
    return spec


@dataclass
class SnakeStudy:
    """Every table of the SNAKE report."""

    spec: SnakeScenario
    speedups: pd.DataFrame
    modes: pd.DataFrame
    slowdowns: pd.DataFrame
    shapes: pd.DataFrame
    shape_set: list[dict] = field(default_factory=list)
    area_split: list[Solution] = field(default_factory=list)
    area_grid: pd.DataFrame = field(default_factory=pd.DataFrame)
    area_problem: AreaSplitProblem | None = None
    serving: pd.DataFrame = field(default_factory=pd.DataFrame)
    timings_s: dict[str, float] = field(default_factory=dict)


def run_snake_study(spec: SnakeScenario, time_limit_s: float | None = None) -> SnakeStudy:
    """Compute every table of the SNAKE report (SNAKE Secs. 6.3, 6.5, 6.6 and Fig. 4a).

    Raises
    ------
    SnakeError
        A missing card or unsupported layer type.
    """
    t = spec.template.template()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sp, modes, slow, shapes = [], [], [], []
    for m in spec.models:
        card = load_card(m)
        for b in spec.batches:
            ops = decode_gemms(card, b, spec.tp)
            ours = decode_step_s(ops, SNAKE, t)
            for d, x in design_speedups(ops, t).items():
                sp.append({"model": m, "batch": b, "baseline": d, "speedup": x, "snake_step_s": ours})
            if m in spec.mode_models:
                sched = schedule(ops, SNAKE, t)
                for r in sched.to_dict("records"):
                    modes.append({"model": m, "batch": b, **r, "shape": f"{min(r['rows'], r['cols'])}x"
                                  f"{max(r['rows'], r['cols'])}"})
                for mode, x in fixed_mode_slowdowns(ops, t).items():
                    slow.append({"model": m, "batch": b, "mode": mode, "slowdown": x})
    timings["decode_s"] = time.perf_counter() - t0
    md = pd.DataFrame(modes)
    if not md.empty:
        shapes = md.groupby(["model", "batch", "shape"], as_index=False)["total_s"].sum()
        shapes["share"] = shapes["total_s"] / shapes.groupby(["model", "batch"])["total_s"].transform("sum")
    cfg = SolverConfig(time_limit_s=time_limit_s or spec.time_limit_s)
    t1 = time.perf_counter()
    shape_rows = []
    base = shape_set_problem(spec, spec.shape_set.budgets_mm2[0])  # the time matrix does not depend on the budget
    for budget in spec.shape_set.budgets_mm2:
        prob = dataclasses.replace(base, area_budget_mm2=budget, name=f"{spec.name}-shape-set-{budget:g}mm2")
        for method in SHAPE_SET_METHODS:
            sol = solve_shape_set(prob, method, cfg)
            shape_rows.append({"budget_mm2": budget, "method": method, "solution": sol,
                               "shapes": [] if sol.decision is None else [prob.shapes[s] for s in sorted(sol.decision)],
                               "area_mm2": None if sol.decision is None else prob.area_mm2(sol.decision)})
    timings["shape_set_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    ap = area_split_problem(spec)
    area = [solve_area_split(ap, method, cfg) for method in AREA_SPLIT_METHODS]
    grid = pd.DataFrame(ap.latency_s, index=[f"{r}x{c}" for r, c in ap.pe_configs], columns=list(ap.buffer_kb))
    timings["area_split_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    serving = serving_table(spec)
    timings["serving_s"] = time.perf_counter() - t3
    return SnakeStudy(spec, pd.DataFrame(sp), md, pd.DataFrame(slow), pd.DataFrame(shapes), shape_rows, area, grid, ap,
                      serving, timings)


def serving_table(spec: SnakeScenario) -> pd.DataFrame:
    """Mean E2E and TBT per model, design and arrival rate (SNAKE Fig. 10), by event simulation."""
    from chipdse.evaluators.snake_serving import prefill_s, simulate, step_table_s

    sv, t = spec.serving, spec.template.template()
    rows = []
    for m in sv.models or spec.mode_models:
        card = load_card(m)
        pre = prefill_s(card, sv.l_in, spec.tp, sv.gpu_efficiency)
        tables = {d.name: step_table_s(card, d, t, sv.max_batch, sv.l_in + sv.l_out / 2, spec.tp)
                  for d in (SNAKE, *BASELINE_DESIGNS)}
        capacity = min(1.0 / pre, sv.max_batch / (sv.l_out * tables[SNAKE.name][sv.max_batch]))
        for f in sv.rate_fractions:
            for name, tab in tables.items():
                r = simulate(tab, pre, f * capacity, sv.l_out, sv.requests, sv.seed)
                rows.append({"model": m, "rate_fraction": f, "rate_rps": f * capacity, "design": name,
                             "e2e_s": r.e2e_s, "tbt_s": r.tbt_s, "prefill_s": pre})
    return pd.DataFrame(rows)


def mode_distribution(modes: pd.DataFrame) -> pd.DataFrame:
    """Share of operators choosing each mode, per model (SNAKE Fig. 13a), over operators x batches."""
    counts = modes.groupby(["model", "mode"]).size().unstack(fill_value=0).reindex(columns=list(MODES), fill_value=0)
    return counts.div(counts.sum(axis=1), axis=0)


def average_speedups(speedups: pd.DataFrame) -> dict[str, float]:
    """Mean speedup over SNAKE per baseline across models and batches (SNAKE Sec. 6.3 averages over models)."""
    per_model = speedups.groupby(["baseline", "model"])["speedup"].mean()
    return {b: float(per_model[b].mean()) for b in (d.name for d in BASELINE_DESIGNS)}
