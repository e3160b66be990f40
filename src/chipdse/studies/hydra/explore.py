"""The main job: screen the design space, pick B* and M_T, solve their layouts exactly and with the papers'
heuristics, re-score them, then the power / thermal, simulation, generality and claims stages.

Data flow (DESIGN.md "The HYDRA spine"): :data:`STAGES`, run by :func:`chipdse.studies.pipeline.run_stages`:
``estimator`` -> ``screen`` (the scored table: estimator, energy, power limits, Pareto flags) -> ``pick`` (B*, M_T)
-> ``finalists`` (HBM partition and placement solves) -> ``layouts`` (mappings) -> ``serve`` (serving re-scores)
-> ``thermal`` -> ``simulation`` -> ``generality`` -> ``claims`` -> ``summaries`` (what the report and the manifest
print). Given :class:`chipdse.runtime.store.Checkpoints`, each costly stage (``screen``, ``finalists``,
``layouts``, ``thermal``, ``simulation``, ``generality``) is kept as it finishes and a rerun of the same inputs reads
it back instead of computing it again (keyed by :func:`run_identity` and the code version).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.overrides import as_record
from chipdse.core.scenario import AnyScenario, LoadedScenario, model_scenarios, scenario_identity, with_workload
from chipdse.core.solution import Solution, excess
from chipdse.core.specs import file_sha256
from chipdse.runtime.store import Checkpoints
from chipdse.solvers.config import SolverConfig
from chipdse.studies.claims import ClaimTable
from chipdse.studies.common import Settings, check_replay, load_kind
from chipdse.studies.hydra import stages as st
from chipdse.studies.hydra.artifacts import (
    ExploreResult,
    FinalistResult,
    GeneralityResult,
    SimulationStudy,
    ThermalFinalist,
)
from chipdse.studies.hydra.claims import explore_claims, robustness_files
from chipdse.studies.hydra.generality import generality
from chipdse.studies.hydra.report_data import report_data
from chipdse.studies.hydra.simstage import explore_simulations
from chipdse.studies.hydra.thermal import thermal_stage
from chipdse.studies.pipeline import Context, Key, Progress, Stage, Timings, no_progress, run_stages

KIND = "hydra"
THERMAL: Key[list[ThermalFinalist]] = Key("thermal")
SIMULATION: Key[SimulationStudy] = Key("simulation")
GENERALITY: Key[GeneralityResult] = Key("generality")
CLAIMS: Key[ClaimTable] = Key("claims")
REPORTS: Key[dict[str, Any]] = Key("reports")


def run_identity(sc: LoadedScenario, cfg: SolverConfig) -> dict[str, Any]:
    """Everything explore's results depend on besides the code: the key of its kept stages.

    The scenario's settings (its name left out), a digest of every file it names and of its request sample
    (:func:`chipdse.core.scenario.scenario_identity`), the same for each simulation dataset, a digest of each
    generality model, and the whole solver configuration (time and work limits, seed, ...; new fields count at once).

    Raises
    ------
    SpecError
        A simulation dataset or generality model that cannot be loaded (as the scenario loader would).
    """
    spec = sc.spec.model_dump(mode="json", exclude={"name"})
    datasets = [scenario_identity(with_workload(sc, ds)) for ds in sc.spec.simulation.datasets]
    models = ([] if sc.spec.generality is None else
              [scenario_identity(v)["model_sha256"] for v in model_scenarios(sc, sc.spec.generality.models)])
    return {"spec": spec, "scenario": scenario_identity(sc),
            "files_sha256": {k: file_sha256(p) for k, p in sorted(sc.named_files.items())},
            "datasets": datasets, "generality_models_sha256": models, "solver": cfg.model_dump(mode="json"),
            "overrides": as_record(sc.overrides),
            **({"robustness_sha256": [file_sha256(p) for p in rf]} if (rf := robustness_files(sc)) else {})}


def _thermal(ctx: Context) -> None:
    ctx.put(THERMAL, thermal_stage(ctx.get(st.SCENARIO), ctx.get(st.ESTIMATOR), ctx.get(st.FINALISTS),
                                   ctx.get(st.SOLVER)))


def _simulation(ctx: Context) -> None:
    ctx.put(SIMULATION, explore_simulations(ctx.get(st.SCENARIO), ctx.get(st.TABLE), ctx.get(st.FINALISTS),
                                            ctx.get(st.SOLVER), ctx.get(st.PROGRESS)))


def _generality(ctx: Context) -> None:
    sc = ctx.get(st.SCENARIO)
    try:
        ctx.put(GENERALITY, generality(sc))
    except ValueError as exc:
        msg = f"{sc.path}: generality: {exc}"
        raise InfeasibleDesignError(msg) from None


def _claims(ctx: Context) -> None:
    ctx.put(CLAIMS, explore_claims(ctx.get(st.SCENARIO), ctx.get(st.FINALISTS),
                                   ctx.get(SIMULATION) if ctx.has(SIMULATION) else None,
                                   ctx.get(GENERALITY) if ctx.has(GENERALITY) else None))


def _reports(ctx: Context) -> None:
    ctx.put(REPORTS, report_data(ctx.get(st.SCENARIO), ctx.get(st.TABLE), ctx.get(st.PICKS), ctx.get(st.FINALISTS),
                                 ctx.get(THERMAL) if ctx.has(THERMAL) else [],
                                 ctx.get(SIMULATION) if ctx.has(SIMULATION) else None))


def _spec(ctx: Context) -> Any:
    return ctx.get(st.SCENARIO).spec


STAGES: tuple[Stage, ...] = (
    *st.SCREEN_AND_PICK,
    st.SOLVE_STAGE,
    st.MAP_STAGE,
    st.SERVE_STAGE,
    Stage("thermal", (st.SCENARIO, st.ESTIMATOR, st.FINALISTS, st.SOLVER), (THERMAL,), _thermal,
          describe=lambda ctx: "finalists: power and temperature maps", keep=True,
          note=lambda ctx: f"{len(ctx.get(THERMAL))} finalists' power and temperature maps",
          when=lambda ctx: bool(_spec(ctx).thermal.enabled)),
    Stage("simulation", (st.SCENARIO, st.TABLE, st.FINALISTS, st.SOLVER, st.PROGRESS), (SIMULATION,), _simulation,
          keep=True, note=lambda ctx: (f"{len(ctx.get(SIMULATION).fidelity)} fidelity points, "
                                       f"{len(ctx.get(SIMULATION).policies)} policy runs"),
          when=lambda ctx: bool(_spec(ctx).simulation.enabled)),
    Stage("generality", (st.SCENARIO, st.TABLE), (GENERALITY,), _generality, keep=True,
          describe=lambda ctx: (f"specialization vs generality: {len(_spec(ctx).generality.models)} models x "
                                f"{len(ctx.get(st.TABLE)):,} points"),
          note=lambda ctx: f"{len(ctx.get(GENERALITY).models)} models x {ctx.get(GENERALITY).n_points:,} points",
          when=lambda ctx: _spec(ctx).generality is not None),
    Stage("claims", (st.SCENARIO, st.FINALISTS), (CLAIMS,), _claims),
    Stage("summaries", (st.SCENARIO, st.TABLE, st.PICKS, st.FINALISTS), (REPORTS,), _reports),
)
"""The explore pipeline, in run order (the optional stages run when the scenario enables them)."""


def explore(sc: LoadedScenario, time_limit_s: float | None = None, seed: int | None = None,
            progress: Progress | None = None, work_limit: float | None = None,
            checkpoints: Checkpoints | None = None) -> ExploreResult:
    """Run the explore pipeline (:data:`STAGES`) on a loaded scenario.

    Parameters
    ----------
    sc : LoadedScenario
    time_limit_s : float, optional
        Wall-clock safety cap per exact solve, s (overrides the scenario's).
    seed : int, optional
        Seed for randomized heuristics and solvers (overrides the scenario's).
    progress : callable(str, float), optional
        Called with a stage description and the fraction done of the stage.
    work_limit : float, optional
        Deterministic work limit per exact solve, work units (overrides the scenario's).
    checkpoints : Checkpoints, optional
        Where finished stages are kept and read back; its run identity is set here (:meth:`Checkpoints.begin` with
        :func:`run_identity`). Default: nothing kept.

    Returns
    -------
    ExploreResult

    Raises
    ------
    InfeasibleDesignError
        When no design point can be built, or none is stable at the offered load.
    KeyboardInterrupt
        Passed on (Ctrl-C); every kept stage finished before it is in ``checkpoints``' store.
    """
    progress = progress or no_progress
    cfg = SolverConfig.of(sc.spec, work_limit, time_limit_s, seed=seed if seed is not None else sc.spec.seed)
    if checkpoints is not None:
        checkpoints.begin(run_identity(sc, cfg), sc.model.key, sc.workload.name)
    ctx = Context(scenario=sc, solver=cfg, progress=progress)
    timings = Timings()
    run_stages(STAGES, ctx, checkpoints=checkpoints, progress=progress, timings=timings)
    return ExploreResult(sc, ctx.get(st.TABLE), ctx.get(st.PICKS), ctx.get(st.FINALISTS), cfg, timings.wall_s,
                         timings.cpu_s, [] if checkpoints is None else list(checkpoints.read),
                         ctx.get(THERMAL) if ctx.has(THERMAL) else [],
                         ctx.get(SIMULATION) if ctx.has(SIMULATION) else None,
                         ctx.get(GENERALITY) if ctx.has(GENERALITY) else None, ctx.get(CLAIMS), ctx.get(REPORTS))


def check(sc: AnyScenario) -> LoadedScenario:
    """A loaded HYDRA scenario, checked by :func:`chipdse.core.scenario.load` and here for a workload that asks to
    replay arrivals its trace does not have (:func:`chipdse.studies.common.check_replay`); returned as is.

    Raises
    ------
    SpecError
        ``arrival: replay`` without timestamps, naming the workload file.
    """
    assert isinstance(sc, LoadedScenario), "load_kind refuses other kinds"
    check_replay(sc)
    return sc


def load(path: Path | None = None) -> LoadedScenario:
    """A HYDRA scenario file (the bundled default when ``path`` is None), loaded
    (:func:`chipdse.studies.common.load_kind`); any problem is a one-line SpecError naming the file and field."""
    return check(load_kind(path, KIND))


def label(sc: LoadedScenario) -> str:
    """What :func:`run` does first (later stages report through ``progress``)."""
    return f"HYDRA explore: {sc.spec.name}"


def run(sc: LoadedScenario, settings: Settings | None = None, progress: Progress = no_progress,
        checkpoints: Checkpoints | None = None) -> ExploreResult:
    """The explore pipeline (:func:`explore`) with the command line's ``settings``, keeping finished stages in
    ``checkpoints`` when given."""
    settings = settings or Settings()
    return explore(sc, time_limit_s=settings.time_limit_s, seed=settings.seed, progress=progress,
                   work_limit=settings.work_limit, checkpoints=checkpoints)


def _finalist_summary(f: FinalistResult) -> dict[str, Any]:
    best = st.best_exact(f.placement)
    return {"label": f.label, "design": f.label, "throughput_tps": f.row["throughput_tps"],
            "ttft_s": f.row["ttft_s"],
            "layouts": [{"layout": s.label, "throughput_tps": s.served.throughput_tps, "ttft_s": s.served.ttft_s,
                         "stable": s.served.stable} for s in f.serving],
            "placement": None if best is None else {"method": best.method, "objective": best.objective,
                                                    "status": best.status.value, "gap": best.gap}}


def summary(r: ExploreResult) -> dict[str, Any]:
    """Headline numbers: point counts, B* and M_T (``b_star.design``, ``m_t.design``: their labels; ``pick``: the
    rule), and each finalist's screen numbers, re-scored layouts and best exact placement (byte-hops/s, with its
    proof status); ``fidelity``: the claims' counts by basis (:meth:`chipdse.studies.claims.ClaimTable.fidelity`)."""
    df = r.table.frame
    return {"points": len(df), "stable": int(df["stable"].sum()), "pareto": int(df["pareto"].sum()),
            "pick": r.picks.rule.value,
            "b_star": {"design": r.picks.b_star.label, "point": r.picks.b_star.index},
            "m_t": {"design": r.picks.m_t.label, "point": r.picks.m_t.index},
            "finalists": {str(f.role): _finalist_summary(f) for f in r.finalists},
            "cost": r.reports.get("cost"),
            "fidelity": None if r.claims is None else r.claims.fidelity()}


def placement_summary(sols: list[Solution]) -> list[str]:
    """One line for the best exact placement (objective, bound, gap) and one per heuristic (how much worse)."""
    best = st.best_exact(sols)
    if best is None:
        return ["placement: no exact solution found within the work limit"]
    proof = "proven optimal" if best.status.value == "optimal" else (
        f"proven gap {100 * best.gap:.2g}% to bound {best.bound:.4g}" if best.gap is not None else "no bound")
    lines = [f"placement: {best.method} {best.objective:.4g} byte-hops/s ({proof})"]
    for s in sols:
        if not s.exact and (x := excess(s.objective, best.objective, s.sense)) is not None:
            lines.append(f"  {s.method}: {100 * x:+.1f}% excess over best exact")
    return lines


def headline(r: ExploreResult) -> list[str]:
    """The lines ``chipdse explore`` prints: each finalist's screen numbers, its layouts and its placements."""
    lines = []
    for f in r.finalists:
        lines.append(f"{f.role}: {f.label}  screen: throughput {f.row['throughput_tps']:.0f} tok/s, "
                     f"TTFT {f.row['ttft_s']:.3f} s")
        for s in f.serving:
            ttft = "unstable" if not s.served.stable else f"TTFT {s.served.ttft_s:.3f} s"
            lines.append(f"  {s.label}: throughput {s.served.throughput_tps:.0f} tok/s, {ttft}")
        lines += [f"  {line}" for line in placement_summary(f.placement)]
    if (c := r.reports.get("cost")) is not None:
        near = c["cheapest_near_m_t"]
        lines.append(f"package cost: B* {c['b_star_usd']:,.0f} USD ({c['b_star_range_usd'][0]:,.0f}-"
                     f"{c['b_star_range_usd'][1]:,.0f} over the cost assumptions), M_T {c['m_t_usd']:,.0f} USD; "
                     "cheapest within "
                     f"{100 * near['within']:.0f}% of M_T's throughput: {near['design']} "
                     f"{near['package_cost_usd']:,.0f} USD ({near['throughput_tps']:.0f} tok/s)")
    if r.simulation is not None:
        m = r.simulation.metrics
        if m:
            lines.append("estimator vs simulator: " + ", ".join(f"{k} {m[k]:.3f}" for k in (
                "cosine", "spearman_throughput", "mape_throughput", "max_throughput_recovery") if k in m))
        lines += [f"simulation skipped: {s}" for s in r.simulation.skipped]
    return lines
