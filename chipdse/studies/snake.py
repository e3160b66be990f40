"""The SNAKE study behind ``chipdse explore`` on a ``kind: snake`` scenario: decode speedups against the baselines,
multi-PU mode choice, fixed-mode slowdowns, shape choice vs batch, and the two exact hardware choices.

The scenario (``instances/scenarios/snake-stratum.yaml``) names the NMP template (SNAKE Sec. 6.1.2), the Table 1
models and batches, and the area assumptions of the shape-set and area-split formulations; every number there
has its source or is marked as an assumption.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from chipdse.core.errors import SpecError
from chipdse.core.scenario import AnyScenario, StudyScenario
from chipdse.core.solution import Solution
from chipdse.core.specs import SnakeScenario
from chipdse.evaluators.snake import SNAKE, SnakeError, decode_gemms, load_card
from chipdse.evaluators.snake_pu import (
    BASELINE_DESIGNS,
    MODES,
    decode_step_s,
    design_speedups,
    fixed_mode_slowdowns,
    nmp_template,
    schedule,
)
from chipdse.evaluators.snake_serving import prefill_s, simulate, step_table_s
from chipdse.formulations.snake_area import AreaSplitProblem
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.problems import area_split_problem, shape_set_problem
from chipdse.solvers.snake_hw import AREA_SPLIT_METHODS, SHAPE_SET_METHODS, solve_area_split, solve_shape_set
from chipdse.studies.common import Progress, Settings, Stages, load_kind, no_progress, solve_record

PAPER_SPEEDUPS = {"mac_tree": 2.90, "sa48x48": 2.33, "sa8x288": 3.00}
"""SNAKE Sec. 6.3: average decode speedup of SNAKE over each baseline across the five models."""


KIND = "snake"
MAX_SERVING_DECODE_TOKENS = 20_000_000
"""Most decode tokens the serving page simulates (served models x rate_fractions x requests x l_out): about 0.4 us
each (measured: the bundled 1.6 million in 1 s), so about 8 s. The bundled scenario simulates 1,638,400."""


def check(sc: AnyScenario) -> StudyScenario:
    """Check that every model card ``sc`` names is a decode model the SNAKE evaluator supports.

    Raises
    ------
    SpecError
        A card with an unsupported layer type (or that cannot be read), naming the scenario file and field.
    """
    spec = sc.spec
    assert isinstance(sc, StudyScenario) and isinstance(spec, SnakeScenario), "load_kind refuses other kinds"
    for where, m in spec.card_refs():
        try:
            decode_gemms(load_card(sc.named_files.get(where, m)), spec.batches[0], spec.tp)
        except SnakeError as exc:
            raise SpecError(str(sc.path), where, str(exc)) from None
    default = "" if "mode_models" in spec.model_fields_set else " (the default mode_models; set it)"
    for i, m in enumerate(spec.mode_models):
        if m not in spec.models:
            raise SpecError(str(sc.path), f"mode_models[{i}]", f"one of the scenario's models {spec.models} (the "
                            f"mode pages study models whose decode is computed), got {m!r}{default}")
    _check_serving_lengths(sc, spec)
    return sc


def _check_serving_lengths(sc: StudyScenario, spec: SnakeScenario) -> None:
    """``serving.l_in`` / ``l_out`` each within every served model's context (its card's
    ``max_position_embeddings``), and the serving simulation within :data:`MAX_SERVING_DECODE_TOKENS`."""
    sv = spec.serving
    served = "serving.models" if sv.models else "mode_models"
    for where, m in spec.card_refs():
        if not where.startswith(served + "["):
            continue
        context = load_card(sc.named_files.get(where, m)).get("max_position_embeddings")
        for name, value in (("l_in", sv.l_in), ("l_out", sv.l_out)):
            if isinstance(context, int) and value > context:
                raise SpecError(str(sc.path), f"serving.{name}", f"at most {context:,} tokens, the maximum context "
                                f"of {m} ({where}; its card's max_position_embeddings), got {value:,}")
    n_models = len(sv.models or spec.mode_models)
    tokens = n_models * len(sv.rate_fractions) * sv.requests * sv.l_out
    if tokens > MAX_SERVING_DECODE_TOKENS:
        raise SpecError(str(sc.path), "serving.l_out", f"at most {MAX_SERVING_DECODE_TOKENS:,} decode tokens "
                        f"simulated in all (models x rate_fractions x requests x l_out = {n_models} x "
                        f"{len(sv.rate_fractions)} x {sv.requests:,} x {sv.l_out:,} = {tokens:,}; each costs about "
                        "0.4 us of event simulation): lower l_out, requests or rate_fractions")


def load(path: Path) -> StudyScenario:
    """A ``kind: snake`` scenario file, loaded (:func:`chipdse.studies.common.load_kind`) and :func:`check`-ed;
    any problem is a one-line SpecError naming the file and field."""
    return check(load_kind(path, KIND))


def label(sc: StudyScenario) -> str:
    """What :func:`run` does, in one line."""
    return f"SNAKE study: {len(sc.spec.models)} models x {len(sc.spec.batches)} batches, shape set, area split"


@dataclass
class SnakeStudy:
    """Every table of the SNAKE report, with the scenario, solver settings and stage timings (wall and CPU, s)."""

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
    timings_s: dict[str, float] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)

    @property
    def spec(self) -> SnakeScenario:
        """The scenario's spec."""
        assert isinstance(self.scenario.spec, SnakeScenario)
        return self.scenario.spec

    def solves(self) -> list[dict[str, Any]]:
        """Every shape-set and area-split solve (:func:`chipdse.studies.common.solve_record`)."""
        out = [solve_record(r["solution"], budget_mm2=r["budget_mm2"]) for r in self.shape_set]
        return out + [solve_record(sol) for sol in self.area_split]


def run(sc: StudyScenario, settings: Settings | None = None, progress: Progress = no_progress) -> SnakeStudy:
    """Compute every table of the SNAKE report (SNAKE Secs. 6.3, 6.5, 6.6, Figs. 4a and 10).

    Parameters
    ----------
    sc : StudyScenario
        A ``kind: snake`` scenario (:func:`load`).
    settings : Settings, optional
        Work limit and wall cap per exact solve (default: the scenario's ``work_limit`` / ``time_limit_s``) and
        seed: of the solvers (default 0) and, when given, of the serving simulation's arrivals in place of
        ``serving.seed`` (the result's scenario then holds it).
    progress : callable(str, float), optional
        Called with each stage's description.

    Raises
    ------
    SnakeError
        A missing card or unsupported layer type.
    """
    settings = settings or Settings()
    assert isinstance(sc.spec, SnakeScenario)
    if settings.seed is not None:  # the command line's seed drives the study's one random draw (serving arrivals)
        sc = dataclasses.replace(sc, spec=sc.spec.model_copy(update={"serving": sc.spec.serving.model_copy(
            update={"seed": settings.seed})}))
    spec = sc.spec
    assert isinstance(spec, SnakeScenario)
    t = nmp_template(spec.template)
    stages = Stages()
    sp, modes, slow, shapes = [], [], [], []
    progress("SNAKE: decode speedups and modes", 0.0)
    with stages.stage("decode_s"):
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
    md = pd.DataFrame(modes)
    if not md.empty:
        shapes = md.groupby(["model", "batch", "shape"], as_index=False)["total_s"].sum()
        shapes["share"] = shapes["total_s"] / shapes.groupby(["model", "batch"])["total_s"].transform("sum")
    cfg = SolverConfig.of(spec, settings.work_limit, settings.time_limit_s,
                          **({} if settings.seed is None else {"seed": settings.seed}))
    shape_rows = []
    progress(f"SNAKE: shape set ({cfg.limits_text()} per exact solve)", 0.0)
    with stages.stage("shape_set_s"):
        base = shape_set_problem(spec, spec.shape_set.budgets_mm2[0])  # the time matrix does not depend on the budget
        for budget in spec.shape_set.budgets_mm2:
            prob = dataclasses.replace(base, area_budget_mm2=budget, name=f"{spec.name}-shape-set-{budget:g}mm2")
            for method in SHAPE_SET_METHODS:
                sol = solve_shape_set(prob, method, cfg)
                shape_rows.append({"budget_mm2": budget, "method": method, "solution": sol,
                                   "shapes": [] if sol.decision is None else
                                   [prob.shapes[s] for s in sorted(sol.decision)],
                                   "area_mm2": None if sol.decision is None else prob.area_mm2(sol.decision)})
    progress("SNAKE: area split", 0.0)
    with stages.stage("area_split_s"):
        ap = area_split_problem(spec)
        area = [solve_area_split(ap, method, cfg) for method in AREA_SPLIT_METHODS]
        grid = pd.DataFrame(ap.latency_s, index=[f"{r}x{c}" for r, c in ap.pe_configs], columns=list(ap.buffer_kb))
    progress("SNAKE: serving simulation", 0.0)
    with stages.stage("serving_s"):
        serving = serving_table(spec)
    return SnakeStudy(sc, cfg, pd.DataFrame(sp), md, pd.DataFrame(slow), pd.DataFrame(shapes), shape_rows, area, grid,
                      ap, serving, stages.wall_s, stages.cpu_s)


def summary(s: SnakeStudy) -> dict[str, Any]:
    """Headline numbers: SNAKE's average decode speedup over each baseline, next to the paper's (Sec. 6.3)."""
    return {"average_speedups": average_speedups(s.speedups), "paper_speedups": PAPER_SPEEDUPS}


def headline(s: SnakeStudy) -> list[str]:
    """The lines ``chipdse explore`` prints: the average speedup over each baseline."""
    return [f"SNAKE vs {b}: {v:.2f}x average decode speedup" for b, v in average_speedups(s.speedups).items()]


def serving_table(spec: SnakeScenario) -> pd.DataFrame:
    """Mean E2E and TBT per model, design and arrival rate (SNAKE Fig. 10), by event simulation."""
    sv, t = spec.serving, nmp_template(spec.template)
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
