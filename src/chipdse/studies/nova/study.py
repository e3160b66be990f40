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

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.errors import ChipdseError, SpecError
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
    fits,
    longest_context,
    memory_bytes,
    scenario_system,
    serve,
    serve_fits,
)
from chipdse.formulations.expert_split import TIER2, ExpertSplitProblem
from chipdse.runtime.store import Checkpoints
from chipdse.solvers.config import SolverConfig, limit_reason
from chipdse.solvers.expert_split import MAX_BRUTE_FORCE_EXPERTS, routing_counts, solve_expert_split
from chipdse.studies.common import Settings, load_kind
from chipdse.studies.nova.artifacts import PAPER, NovaStudy
from chipdse.studies.nova.claims import claims as nova_claims
from chipdse.studies.nova.ratios import nova_summaries
from chipdse.studies.pipeline import Progress, Timings, no_progress

KIND = "nova"
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


def load(path: Path | None) -> StudyScenario:
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
        prob = ExpertSplitProblem(tuple(case.expert_bytes for _ in case.tokens), case.tokens, case.tiers,
                                  bytes_per_param=case.param_bytes)
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


def run(sc: StudyScenario, settings: Settings | None = None, progress: Progress = no_progress,
        checkpoints: Checkpoints | None = None) -> NovaStudy:
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
    checkpoints : Checkpoints, optional
        Refused: the study runs in seconds and keeps no stages (:attr:`chipdse.studies.registry.Study.keeps_stages`).
    """
    if checkpoints is not None:
        msg = f"store / fresh: only HYDRA scenarios keep finished stages; {sc.path} is a kind: {KIND} study"
        raise ChipdseError(msg)
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
    _refuse_if_nothing_fits(sc, designs)
    stages = Timings()
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
                requests = _serving_requests(spec, b)
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
    result = NovaStudy(sc, cfg, pd.DataFrame(runs), pd.DataFrame(cap), pd.DataFrame(mem), experts, expert_sols,
                       split_rows, sizes, abl, routing, stages.wall_s, stages.cpu_s)
    with stages.stage("claims_s"):
        main = [d.name for d in DESIGNS if d.name not in ("NOVA k*", "NOVA exact")]
        result = replace(result, summaries=nova_summaries(result, main, [d.name for d in ABLATION]))
        return replace(result, claims=nova_claims(result))


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


def _serving_requests(spec: NovaScenario, batch: int) -> int:
    """Requests of one serving run at ``batch``: ``system.serving_requests``, else twice the batch."""
    return spec.system.serving_requests or 2 * batch


def _refuse_if_nothing_fits(sc: StudyScenario, designs: list[NovaDesign]) -> None:
    """Refuse, before any decode step or expert split is computed, a scenario none of whose runs (model x batch x
    length x design) fits its design's memory (the study would have nothing to compare), or with a batch at which
    no run fits (its rows would all be empty, with no word why).

    Raises
    ------
    SpecError
        On ``lengths``, with the longest context any design holds (:func:`nothing_fits`); or on ``batches[i]``,
        with the longest context any design holds at that batch.
    """
    spec = sc.spec
    assert isinstance(spec, NovaScenario)
    cap, served = [], set()
    for key in spec.models:
        model = load_nova_model(key)
        system = replace(scenario_system(spec), gpus=spec.gpus.get(key, 1))
        for b in spec.batches:
            requests = _serving_requests(spec, b)
            for d in designs:
                # a served design's row says whether its serving run fits (serve overrides e2e's "fits")
                if any(serve_fits(model, d, b, l_in, l_out, requests, system) if d.name in SERVED
                       else fits(model, d, b, l_in + l_out, system) for l_in, l_out in spec.lengths):
                    served.add(b)
                    break
                cap.append({"model": key, "batch": b, "design": d.name,
                            "longest_context": longest_context(model, d, b, system)})
    if not served:
        raise SpecError(str(sc.path), "lengths", nothing_fits(spec, cap))
    for i, b in enumerate(spec.batches):
        if b not in served:
            best = max((r for r in cap if r["batch"] == b), key=lambda r: r["longest_context"])
            shortest = min(l_in + l_out for l_in, l_out in spec.lengths)
            raise SpecError(str(sc.path), f"batches[{i}]", f"a batch some run fits: at {b:,} requests the longest "
                            f"context any design holds is {int(best['longest_context']):,} tokens per request "
                            f"({best['design']}, {best['model']}), below the shortest requested "
                            f"L_in + L_out of {shortest:,}; every row at this batch would be empty")


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


def summary(s: NovaStudy) -> dict[str, Any]:
    """Headline numbers (:func:`chipdse.studies.nova.ratios.summary_numbers`, computed by :func:`run`) and
    ``fidelity``: the claims' counts by basis (:meth:`chipdse.studies.claims.ClaimTable.fidelity`)."""
    assert s.summaries is not None, "run() computes the summaries"
    return {**s.summaries.numbers, "fidelity": None if s.claims is None else s.claims.fidelity()}


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
