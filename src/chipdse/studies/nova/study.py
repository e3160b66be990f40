"""The NOVA study behind ``chipdse explore`` on a ``kind: nova`` scenario: decode step, throughput and E2E latency
of NOVA and its baselines, capacity (longest context that fits), and the expert-to-tier split against k* and 1:9.

The scenario (``instances/scenarios/nova-nemotron3-nano.yaml``) names the NOVA Table II models, batches and
input / output lengths, and the system assumptions the paper leaves open (GPU efficiency, synchronization cost,
in-die NMP roofline).

The two-tier designs' expert splits (NOVA Sec. VI-E) are solved here, within the scenario's (or the command
line's) work limit, and passed into the evaluator (:func:`chipdse.evaluators.nova_system.e2e`), which never runs a
solver. A split the exact method does not solve within the limit falls back to NOVA's static 1:9 split, labelled
so in the manifest; it is never reported as a 0 s makespan.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.errors import SpecError
from chipdse.core.models import read_card
from chipdse.core.scenario import AnyScenario, StudyScenario
from chipdse.core.solution import Solution
from chipdse.core.specs import NovaScenario
from chipdse.evaluators.nova_model import NovaModel, load_nova_model
from chipdse.evaluators.nova_system import (
    ABLATION,
    DESIGNS,
    GPU,
    NOVA,
    NOVA_EXACT,
    NOVA_KSTAR,
    ROUTINGS,
    ExpertSplitCase,
    NovaDesign,
    NovaSystem,
    SplitResult,
    e2e,
    expert_split_cases,
    longest_context,
    memory_bytes,
    scenario_system,
    serve,
)
from chipdse.formulations.expert_split import TIER2, ExpertSplitProblem
from chipdse.solvers.config import SolverConfig, limit_reason
from chipdse.solvers.expert_split import MAX_BRUTE_FORCE_EXPERTS, routing_counts, solve_expert_split
from chipdse.studies.common import Progress, Settings, Stages, load_kind, no_progress, solve_record

KIND = "nova"
PAPER = {"throughput_x": 4.5, "e2e_reduction": 0.698, "energy_x": 5.0}
"""NOVA's headline against the GPU baseline: 4.5x throughput, 69.8% lower E2E latency and 5x energy efficiency
on average (abstract)."""
FALLBACK_SPLIT = "static-1-9"
"""The heuristic split used, and labelled, when an exact split finds no solution within its limit."""


def check(sc: AnyScenario) -> StudyScenario:
    """Check that every model ``sc`` names is a GQA / Mamba-2 / MoE model the NOVA evaluator supports, and that
    ``gpus`` names only those models.

    Raises
    ------
    SpecError
        An unsupported or unreadable card, or an unknown ``gpus`` key, naming the scenario file and field.
    """
    spec = sc.spec
    assert isinstance(sc, StudyScenario) and isinstance(spec, NovaScenario), "load_kind refuses other kinds"
    for i, m in enumerate(spec.models):
        try:
            load_nova_model(m)
        except SpecError as exc:
            raise SpecError(str(sc.path), f"models[{i}]", exc.expected) from None
    unknown = sorted(set(spec.gpus) - set(spec.models))
    if unknown:
        raise SpecError(str(sc.path), "gpus", f"keys among the scenario's models, got {unknown}")
    for i, m in enumerate(spec.models):
        context = read_card(sc.named_files.get(f"models[{i}]", m))[0].get("max_position_embeddings")
        for j, (l_in, l_out) in enumerate(spec.lengths):
            if isinstance(context, int) and l_in + l_out > context:
                raise SpecError(str(sc.path), f"lengths[{j}]", f"L_in + L_out of at most {context:,} tokens, the "
                                f"maximum context of {m} (models[{i}]; its card's max_position_embeddings), got "
                                f"{l_in:,} + {l_out:,} = {l_in + l_out:,}")
    return sc


def load(path: Path) -> StudyScenario:
    """A ``kind: nova`` scenario file, loaded (:func:`chipdse.studies.common.load_kind`) and :func:`check`-ed;
    any problem is a one-line SpecError naming the file and field."""
    return check(load_kind(path, KIND))


def label(sc: StudyScenario) -> str:
    """What :func:`run` does, in one line."""
    return f"NOVA study: {len(sc.spec.models)} models x {len(DESIGNS)} designs, energy, capacity, expert split"


@dataclass(frozen=True)
class SplitOutcome:
    """How one expert split of a decode step was settled.

    Attributes
    ----------
    makespan_s : float
        The split's makespan, s: the requested method's, or the fallback's when that found none.
    method : str
        The method whose split is used (the requested one, or :data:`FALLBACK_SPLIT`).
    solution : Solution
        The requested method's own result (its status and which limit ended it).
    note : str
        Empty, or why the fallback was used.
    tier2 : frozenset[int]
        The experts the used split puts on Tier-2 (indices into the case's tokens).
    """

    makespan_s: float
    method: str
    solution: Solution
    note: str = ""
    tier2: frozenset[int] = frozenset()

    @property
    def result(self) -> SplitResult:
        """The split as the evaluator takes it (:class:`chipdse.evaluators.nova_system.SplitResult`)."""
        return SplitResult(self.makespan_s, self.tier2)


def solve_expert_splits(cases: list[ExpertSplitCase], config: SolverConfig) -> dict[ExpertSplitCase, SplitOutcome]:
    """Solve each expert split a decode step needs (NOVA Sec. VI-E; :mod:`chipdse.formulations.expert_split`).

    Every cube holds a share of every expert, so each case is one cube's split of the same expert set.

    Parameters
    ----------
    cases : list of ExpertSplitCase
        From :func:`chipdse.evaluators.nova_system.expert_split_cases`.
    config : SolverConfig
        Work limit, wall cap, threads and seed of each solve.

    Returns
    -------
    dict
        Each case's :class:`SplitOutcome`; a method that finds no split within the limit falls back to
        :data:`FALLBACK_SPLIT` with a note saying so.
    """
    out: dict[ExpertSplitCase, SplitOutcome] = {}
    for case in cases:
        if case in out:
            continue
        prob = ExpertSplitProblem(tuple(case.expert_bytes for _ in case.tokens), case.tokens, case.tiers)
        sol = solve_expert_split(prob, case.method, config)
        if sol.objective is not None:
            out[case] = SplitOutcome(float(sol.objective), case.method, sol, tier2=_on_tier2(sol))
            continue
        fallback = solve_expert_split(prob, FALLBACK_SPLIT, config)
        if fallback.objective is None:  # a heuristic always returns a split; refuse rather than report 0 s
            msg = f"no expert split of {len(case.tokens)} experts found by {case.method} or {FALLBACK_SPLIT}"
            raise RuntimeError(msg)
        note = (f"{case.method} found no split ({sol.status.value}, {sol.termination.value}, "
                f"{limit_reason(config, sol.termination)}): {FALLBACK_SPLIT} split used")
        out[case] = SplitOutcome(float(fallback.objective), FALLBACK_SPLIT, sol, note, _on_tier2(fallback))
    return out


def _on_tier2(sol: Solution) -> frozenset[int]:
    """The experts a solved split puts on Tier-2 (its decision maps expert -> tier 1 or 2)."""
    return frozenset(int(e) for e, tier in (sol.decision or {}).items() if tier == TIER2)


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


def _designs(spec: NovaScenario, designs: tuple[NovaDesign, ...] = DESIGNS) -> list[NovaDesign]:
    s = spec.system
    return [replace(d, in_die_flops=s.in_die_TFLOPS * 1e12, in_die_Bps=s.in_die_TBps * 1e12) for d in designs]


SERVED = ("GPU", "AttAcc", "PIMBA", "Duplex", "NOVA", "NOVA k*", "NOVA energy-first", "NOVA 1:9")
"""Designs served with continuous batching (the exact split would need a MILP per batch size of the stream)."""


def _splits_for(model: NovaModel, designs: list[NovaDesign], batches: list[int], system: NovaSystem,
                config: SolverConfig, solved: dict[ExpertSplitCase, SplitOutcome]
                ) -> dict[ExpertSplitCase, SplitResult]:
    """Every expert split ``designs`` need at ``batches``, solving the ones not in ``solved``."""
    cases = [c for d in designs for b in batches for c in expert_split_cases(model, d, b, system)]
    solved.update(solve_expert_splits([c for c in dict.fromkeys(cases) if c not in solved], config))
    return {c: solved[c].result for c in cases}


def _config(spec: NovaScenario, settings: Settings) -> SolverConfig:
    return SolverConfig.of(spec, settings.work_limit, settings.time_limit_s, threads=2,
                           seed=0 if settings.seed is None else settings.seed)


def run(sc: StudyScenario, settings: Settings | None = None, progress: Progress = no_progress) -> NovaStudy:
    """Decode / E2E runs, capacity and the expert-split table (NOVA Figs. 11, 15, 16).

    Parameters
    ----------
    sc : StudyScenario
        A ``kind: nova`` scenario (:func:`load`).
    settings : Settings, optional
        Work limit and wall cap per exact solve (default: the scenario's ``work_limit`` / ``time_limit_s``) and
        seed: of the solvers (default 0) and, when given, of the expert routing draws in place of ``experts.seed``
        (the result's scenario then holds it).
    progress : callable(str, float), optional
        Called with each stage's description.
    """
    settings = settings or Settings()
    assert isinstance(sc.spec, NovaScenario)
    if settings.seed is not None:  # the command line's seed drives the study's one random draw (expert routing)
        sc = replace(sc, spec=sc.spec.model_copy(update={"experts": sc.spec.experts.model_copy(
            update={"seed": settings.seed})}))
    spec = sc.spec
    assert isinstance(spec, NovaScenario)
    cfg = _config(spec, settings)
    designs = _designs(spec)
    served = [d for d in designs if d.name in SERVED]
    stages = Stages()
    runs, cap, mem, split_rows, abl = [], [], [], [], []
    solved: dict[ExpertSplitCase, SplitOutcome] = {}
    step_lines: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    progress(f"NOVA: decode, serving, E2E and capacity (expert splits: {cfg.limits_text()} each)", 0.0)
    with stages.stage("systems_s"):
        for key in spec.models:
            model = load_nova_model(key)
            system = replace(scenario_system(spec), gpus=spec.gpus.get(key, 1))
            for b in spec.batches:
                splits: dict[ExpertSplitCase, SplitResult] = {}
                for d in designs:
                    cases = expert_split_cases(model, d, b, system)
                    solved.update(solve_expert_splits([c for c in cases if c not in solved], cfg))
                    for c in cases:
                        o = solved[c]
                        splits[c] = o.result
                        split_rows.append({"model": key, "batch": b, "design": d.name, "experts": len(c.tokens),
                                           "requested": c.method, "used": o.method, "makespan_s": o.makespan_s,
                                           "note": o.note, "solution": o.solution})
                stream = _splits_for(model, [d.serving() for d in served], list(range(1, b + 1)), system, cfg,
                                     solved)
                requests = spec.system.serving_requests or 2 * b
                lines = {d.name: step_lines.setdefault((key, d.name), {}) for d in served}
                for l_in, l_out in spec.lengths:
                    for d in designs:
                        r = e2e(model, d, b, l_in, l_out, system, splits)
                        if d.name in SERVED:
                            r |= serve(model, d, b, l_in, l_out, requests, system, stream, lines[d.name])
                        runs.append({"model": key, "gpus": system.gpus, "batch": b, "l_in": l_in, "l_out": l_out,
                                     "design": d.name, **r})
                for d in designs:
                    cap.append({"model": key, "batch": b, "design": d.name,
                                "capacity_GB": system.capacity_bytes(d) / 1e9,
                                "longest_context": longest_context(model, d, b, system)})
                l_in, l_out = spec.lengths[-1]
                per_pch = system.all_cubes * system.cube.pseudo_channels_total
                for kind, v in memory_bytes(model, b, l_in + l_out).items():
                    mem.append({"model": key, "batch": b, "context": l_in + l_out, "kind": kind,
                                "GB": v / 1e9, "MB_per_pseudo_channel": v / per_pch / 1e6})
    progress("NOVA: ablation and routing variants", 0.0)
    with stages.stage("ablation_s"):
        abl = ablation_runs(spec, cfg, solved)
        routing = routing_runs(spec, cfg, solved)
    progress("NOVA: expert-split table", 0.0)
    with stages.stage("expert_split_s"):
        experts, expert_sols = expert_table(spec, cfg)
    sizes = [{"model": k, "params": (m := load_nova_model(k)).total_params, "published": m.published_params}
             for k in spec.models]
    if runs and not any(r["fits"] for r in runs):
        raise SpecError(str(sc.path), "lengths", nothing_fits(spec, cap))
    return NovaStudy(sc, cfg, pd.DataFrame(runs), pd.DataFrame(cap), pd.DataFrame(mem), experts, expert_sols,
                     split_rows, sizes, abl, routing, stages.wall_s, stages.cpu_s)


def ablation_runs(spec: NovaScenario, config: SolverConfig,
                  solved: dict[ExpertSplitCase, SplitOutcome] | None = None) -> pd.DataFrame:
    """NOVA Fig. 14: the GPU and the five NMP variants (:data:`chipdse.evaluators.nova_system.ABLATION`) on every
    model, batch and length of ``spec`` (static batch, :func:`chipdse.evaluators.nova_system.e2e`); columns as
    :attr:`NovaStudy.runs`."""
    solved = {} if solved is None else solved
    designs = _designs(spec, (GPU, *ABLATION))
    rows = []
    for key in spec.models:
        model = load_nova_model(key)
        system = replace(scenario_system(spec), gpus=spec.gpus.get(key, 1))
        splits = _splits_for(model, designs, list(spec.batches), system, config, solved)
        for b in spec.batches:
            for l_in, l_out in spec.lengths:
                for d in designs:
                    rows.append({"model": key, "gpus": system.gpus, "batch": b, "l_in": l_in, "l_out": l_out,
                                 "design": d.name, **e2e(model, d, b, l_in, l_out, system, splits)})
    return pd.DataFrame(rows)


def routing_runs(spec: NovaScenario, config: SolverConfig,
                 solved: dict[ExpertSplitCase, SplitOutcome] | None = None) -> pd.DataFrame:
    """NOVA's three split policies (static 1:9, k*, exact) and the GPU under each expert routing (skewed, uniform,
    concentrated) on every MoE model and batch at the middle length: decode step and NOVA's gain over the GPU
    (NOVA Sec. VI-E "Data Assignment Policy", Fig. 16 on whole models)."""
    solved = {} if solved is None else solved
    designs = _designs(spec, (GPU, NOVA, NOVA_KSTAR, NOVA_EXACT))
    l_in, l_out = spec.lengths[len(spec.lengths) // 2]
    rows = []
    for key in spec.models:
        model = load_nova_model(key)
        if not any(w.moe for w in model.layers):
            continue
        for routing in ROUTINGS:
            system = replace(scenario_system(spec), gpus=spec.gpus.get(key, 1), routing=routing)
            splits = _splits_for(model, designs, list(spec.batches), system, config, solved)
            for b in spec.batches:
                out = {d.name: e2e(model, d, b, l_in, l_out, system, splits) for d in designs}
                gpu = out["GPU"]
                for name, r in out.items():
                    rows.append({"model": key, "routing": routing, "batch": b, "l_in": l_in, "l_out": l_out,
                                 "design": name, "fits": r["fits"], "step_s": r["step_s"], "moe_s": r.get("moe_s"),
                                 "throughput_x": gpu["step_s"] / r["step_s"] if gpu["fits"] and r["fits"]
                                 else np.nan})
    return pd.DataFrame(rows)


def nothing_fits(spec: NovaScenario, capacity: list[dict[str, Any]]) -> str:
    """What a scenario's ``lengths`` must satisfy when no run fits any design's memory (the SpecError text).

    ``capacity`` holds the study's capacity rows (``model``, ``batch``, ``design``, ``longest_context`` in
    tokens per request); the text names the shortest requested context and the longest any design holds.
    """
    shortest = min(l_in + l_out for l_in, l_out in spec.lengths)
    best = max(capacity, key=lambda r: r["longest_context"])
    return (f"L_in + L_out that fits some design's memory; the shortest requested context is {shortest:,} tokens "
            f"per request, but the longest any design holds is {int(best['longest_context']):,} tokens "
            f"({best['design']}, {best['model']} at batch {best['batch']}): no run fits, nothing to compare")


def expert_table(spec: NovaScenario, config: SolverConfig) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Every expert-split method on each routing kind x expert count (NOVA Fig. 16).

    Returns
    -------
    (DataFrame, list of dict)
        One row per instance and method: makespan (us), gap to the best exact makespan, status and solve time;
        and each solve's :class:`Solution` with its routing kind and expert count.
    """
    e = spec.experts
    rows, sols_out = [], []
    for kind in e.routing:
        for n in e.experts:
            tokens = routing_counts(n, e.batch, min(e.top_k, n), kind, seed=e.seed)
            prob = ExpertSplitProblem((e.expert_bytes,) * n, tuple(int(t) for t in tokens), name=f"{kind}-{n}")
            methods = ["milp-highs", "cpsat", "nova-kstar", "static-1-9"]
            if n <= MAX_BRUTE_FORCE_EXPERTS:
                methods.insert(2, "brute-force")
            sols = {m: solve_expert_split(prob, m, config) for m in methods}
            exact = [s.objective for m, s in sols.items() if m in ("milp-highs", "cpsat", "brute-force")
                     and s.objective is not None]
            best = min(exact) if exact else np.nan
            for m, s in sols.items():
                rows.append({"routing": kind, "experts": n, "method": m, "status": s.status.value,
                             "makespan_us": None if s.objective is None else s.objective * 1e6,
                             "gap": None if s.objective is None else s.objective / best - 1, "solve_s": s.wall_s})
                sols_out.append({"routing": kind, "experts": n, "solution": s})
    return pd.DataFrame(rows), sols_out


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


def summary(s: NovaStudy) -> dict[str, Any]:
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
            "nova_vs_gpu_energy_x": _energy_x(s.runs), "runs_compared": len(nova), "paper": PAPER,
            "expert_split_fallbacks": sum(1 for x in s.system_splits if x["note"])}


def headline(s: NovaStudy) -> list[str]:
    """The lines ``chipdse explore`` prints: NOVA against the GPU, and any expert split that fell back."""
    sm = summary(s)
    lines = []
    if sm["nova_vs_gpu_throughput_x"] is not None:
        lines.append(f"NOVA vs GPU over {sm['runs_compared']} runs, served with continuous batching: "
                     f"{sm['nova_vs_gpu_throughput_x']:.2f}x decoding throughput ({sm['nova_vs_gpu_served_x']:.2f}x "
                     f"with prefill), {100 * sm['nova_vs_gpu_e2e_reduction']:.1f}% lower E2E latency (static batch "
                     f"decode step: {sm['nova_vs_gpu_decode_x']:.2f}x; paper {PAPER['throughput_x']}x, "
                     f"{100 * PAPER['e2e_reduction']:.1f}%)")
    if sm["nova_vs_gpu_energy_x"] is not None:
        lines.append(f"NOVA vs GPU energy efficiency (E2E tokens/J, static batch): {sm['nova_vs_gpu_energy_x']:.2f}x "
                     f"(paper {PAPER['energy_x']}x)")
    notes = sorted({x["note"] for x in s.system_splits if x["note"]})
    return lines + [f"expert split: {n}" for n in notes]


def _energy_x(runs: pd.DataFrame) -> float | None:
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
