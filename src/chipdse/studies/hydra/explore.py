"""The main job: enumerate, screen, pick B* and M_T, solve their layouts exactly and with the papers' heuristics.

Data flow (DESIGN.md): scenario -> design points -> estimator -> energy and power limits (issue 17) -> Pareto / B*,
M_T -> HBM partition, placement, mapping (exact and heuristic) -> serving re-score of each layout -> results for the
report.

Given :class:`chipdse.runtime.store.Checkpoints`, each stage is kept as it finishes and a rerun of the same inputs
reads it back instead of computing it again (keyed by :func:`run_identity` and the code version). The stages, in
run order: ``sweep`` (the scored table), ``finalist B*`` and ``finalist M_T`` (each finalist's solves; M_T only when
it differs from B*), ``thermal`` (power and temperature maps), ``simulation`` and ``generality`` (when the
scenario enables them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.design_space import PointSpec, enumerate_points
from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import AnyScenario, LoadedScenario, model_scenarios, scenario_identity, with_workload
from chipdse.core.solution import Solution, excess
from chipdse.core.specs import file_sha256
from chipdse.evaluators.energy_hydra import check_power_limits, score_with_energy
from chipdse.evaluators.estimator import (
    CONTENTION_ITERATIONS,
    MemoryNeeds,
    Screen,
    memory_concurrency,
    transfer_wait,
)
from chipdse.evaluators.latency import BlockTable, block_table, decode_costs, prefill_costs
from chipdse.evaluators.selection import pareto_mask, pareto_mask_3, pick_finalists
from chipdse.formulations.mapping import MappingProblem, stage_times
from chipdse.runtime.store import Checkpoints
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.hbm_partition import solve_hbm_partition
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import hbm_partition_problem, mapping_problem, placement_problem
from chipdse.studies.common import (
    Progress,
    Settings,
    Stages,
    check_replay,
    load_kind,
    no_progress,
    solve_record,
)
from chipdse.studies.hydra.generality import GeneralityResult, generality
from chipdse.studies.hydra.simstage import explore_simulations
from chipdse.studies.hydra.simstudy import Layout, SimulationStudy
from chipdse.studies.hydra.thermal import ThermalFinalist, thermal_stage

HBM_METHODS = ("milp-highs", "cpsat", "enumeration", "proportional")
PLACEMENT_HEURISTICS = ("hydra-greedy", "round-robin", "random", "local-search")
PLACEMENT_EXACT = ("hbm-enum", "milp-highs", "cpsat")
MAPPING_HEURISTICS = ("lpt-greedy", "round-robin")
MAPPING_EXACT = ("milp-highs", "cpsat")
KIND = "hydra"


@dataclass
class FinalistResult:
    """Everything solved for one finalist (B* or M_T)."""

    role: str
    row: dict[str, Any]
    hbm: list[Solution] = field(default_factory=list)
    placement: list[Solution] = field(default_factory=list)
    mapping: list[Solution] = field(default_factory=list)
    serving: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ExploreResult:
    """The explore run's results, read by the report writer."""

    scenario: LoadedScenario
    points: pd.DataFrame
    infeasible_reasons: list[str]
    finalists: list[FinalistResult]
    solver: SolverConfig
    timings_s: dict[str, float]
    simulation: SimulationStudy | None = None
    generality: GeneralityResult | None = None
    cpu_s: dict[str, float] = field(default_factory=dict)
    stored_stages: list[str] = field(default_factory=list)
    """The stages read from the results store instead of computed (their ``timings_s`` are this run's reads)."""
    thermal: list[ThermalFinalist] = field(default_factory=list)
    """The power / thermal stage per finalist (:mod:`chipdse.studies.hydra.thermal`); empty when ``thermal.enabled`` is
    off."""

    def solves(self) -> list[dict[str, Any]]:
        """Every finalist's HBM-partition, placement and decode-mapping solve
        (:func:`chipdse.studies.common.solve_record`)."""
        return [solve_record(s, finalist=f.role) for f in self.finalists for s in (*f.hbm, *f.placement, *f.mapping)]


def best_exact(solutions: list[Solution]) -> Solution | None:
    """Return the exact method's solution with the best objective (the reference for gaps), if any."""
    exact = [s for s in solutions if s.exact and s.objective is not None]
    if not exact:
        return None
    sign = 1 if exact[0].sense == "min" else -1
    return min(exact, key=lambda s: sign * s.objective)


def _hbm_bound_s(sc: LoadedScenario, table: BlockTable, block_bytes: np.ndarray, stacks: dict[str, int]) -> float:
    """Time to stream ``block_bytes`` from each HBM group at its stacks' bandwidth; the slowest group, s."""
    bw = sc.library.memory.bandwidth_GBps * 1e9
    return max(block_bytes[table.group == gi].sum() / (stacks[g] * bw)
               for gi, g in enumerate(GROUP_NAMES) if stacks.get(g, 0) > 0)


def serve_layout(screen: Screen, sc: LoadedScenario, point: PointSpec, decision: dict[int, str],
                 pre_map: dict[str, str], dec_map: dict[str, str]) -> dict[str, float]:
    """Re-score one placed and mapped design with the estimator's serving model (capacity, TTFT).

    The stage times are the mapping's own (HYDRA Eqs. 3-4 on the placed chiplets) instead of the screen's
    fluid split and assumed hop count; the rest is :meth:`Screen.serving_metrics`.
    """
    t = block_table(sc.model)
    pc = prefill_costs(t, sc.lengths.mean_prefill, sc.lengths.second_moment_prefill, sc.spec.estimator.chunk_tokens)
    c = decode_costs(t, sc.lengths.mean_prefill + sc.lengths.mean_decode / 2.0)
    n_stages = len(set(dec_map.values()))
    r_mem = max(memory_concurrency(screen.needs, point.hbm), 1)
    n_conc, k = screen.decode_concurrency(np.array([point.batch]), np.array([r_mem]), np.array([n_stages]))
    kb = int(k[0])
    bytes_per_request = pc.bytes0.sum() + sc.lengths.mean_decode / kb * c.bytes_at(kb).sum()
    hbm_bytes_per_s = sum(point.hbm.values()) * sc.library.memory.bandwidth_GBps * 1e9

    def metrics(wait: float) -> tuple[dict[str, np.ndarray], float, float, float]:
        pre = stage_times(mapping_problem(sc, point, decision, "prefill", 1, wait), pre_map)
        t_p = max(max(pre.values()), _hbm_bound_s(sc, t, pc.bytes0, point.hbm))
        dec = stage_times(mapping_problem(sc, point, decision, "decode", kb, wait), dec_map)
        t_bn = max(max(dec.values()), _hbm_bound_s(sc, t, c.bytes_at(kb), point.hbm))
        iter_s = max(sum(dec.values()), min(float(n_conc[0]), n_stages) * t_bn)
        m = screen.serving_metrics(np.array([t_p]), np.array([sum(pre.values())]), np.array([iter_s]), n_conc,
                                   np.array([point.batch]), np.array([True]))
        return m, t_p, t_bn, iter_s

    wait = 0.0
    for _ in range(CONTENTION_ITERATIONS):  # capacity vs transfer waits, as Screen.score
        m, t_p, t_bn, iter_s = metrics(wait)
        wait = float(transfer_wait(m["capacity_rps"] * bytes_per_request / hbm_bytes_per_s)[0])
    m, t_p, t_bn, iter_s = metrics(wait)
    capacity = float(m["capacity_rps"][0])
    lam_wait = float(transfer_wait(min(screen.lam, capacity) * bytes_per_request / hbm_bytes_per_s))
    ttft = float(metrics(lam_wait)[0]["ttft_s"][0]) if bool(m["stable"][0]) else float("nan")
    return {"capacity_rps": capacity, "throughput_tps": capacity * sc.lengths.mean_decode,
            "ttft_s": ttft, "stable": bool(m["stable"][0]),
            "prefill_bottleneck_s": float(t_p), "decode_step_s": float(t_bn),
            "decode_iteration_s": float(iter_s), "decode_concurrency": int(n_conc[0])}


def _solve_finalist(sc: LoadedScenario, screen: Screen, role: str, row: dict[str, Any], cfg: SolverConfig,
                    progress: Progress) -> FinalistResult:
    res = FinalistResult(role=role, row=row)
    point = PointSpec.from_row(row, sc.compute_types())
    progress(f"{role}: HBM partition", 0.0)
    hp = hbm_partition_problem(sc, int(row["n_hbm"]))
    res.hbm = [solve_hbm_partition(hp, m, cfg) for m in HBM_METHODS]
    progress(f"{role}: placement", 0.0)
    pp = placement_problem(sc, point, float(row["capacity_rps"]))
    for m in PLACEMENT_HEURISTICS:
        res.placement.append(solve_placement(pp, m, cfg, seed=cfg.seed))
    for m in PLACEMENT_EXACT:  # each warm-started from the best placement so far (STYLE.md item 7)
        incumbent = min((s for s in res.placement if s.objective is not None), key=lambda s: s.objective)
        progress(f"{role}: placement, {m} ({cfg.limits_text()})", 0.0)
        res.placement.append(solve_placement(pp, m, cfg, seed=cfg.seed, hint=incumbent.decision))
    exact_pl = best_exact(res.placement)
    by_method = {s.method: s for s in res.placement}
    progress(f"{role}: mapping", 0.0)
    layouts: list[tuple[str, Solution | None, str]] = [
        ("exact placement + exact mapping", exact_pl, "exact"),
        ("HYDRA greedy placement + LPT mapping", by_method.get("hydra-greedy"), "lpt-greedy"),
        ("round-robin placement + round-robin mapping", by_method.get("round-robin"), "round-robin"),
    ]
    for label, pl, map_method in layouts:
        if pl is None or pl.decision is None:
            continue
        maps = {}
        for phase in ("prefill", "decode"):
            mp: MappingProblem = mapping_problem(sc, point, pl.decision, phase, point.batch)
            if map_method == "exact":
                progress(f"{role}: {phase} mapping, MILP then CP-SAT ({cfg.limits_text()} each)", 0.0)
                sols = [solve_mapping(mp, m, cfg) for m in MAPPING_HEURISTICS + MAPPING_EXACT]
                if phase == "decode":
                    res.mapping = sols
                best = best_exact(sols) or min((s for s in sols if s.objective is not None),
                                               key=lambda s: s.objective)
            else:
                best = solve_mapping(mp, map_method, cfg)
            maps[phase] = best.decision
        served = serve_layout(screen, sc, point, pl.decision, maps["prefill"], maps["decode"])
        served.update({"layout": label, "placement_method": pl.method,
                       "placement_objective": pl.objective,
                       "layout_data": Layout(point, pl.decision, maps["prefill"], maps["decode"], pl.method)})
        res.serving.append(served)
        progress(f"{role}: served {label}", 0.0)
    return res


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
            "datasets": datasets, "generality_models_sha256": models, "solver": cfg.model_dump(mode="json")}


def _sweep_stage(sc: LoadedScenario, screen: Screen, progress: Progress) -> tuple[pd.DataFrame, list[str]]:
    """Enumerate and score the design space with its energy and power limits; the table (with its ``pareto``
    and 3-objective ``pareto_energy`` columns) and the unbuildable reasons.

    Raises
    ------
    InfeasibleDesignError
        A power limit no design meets (:func:`chipdse.evaluators.energy_hydra.check_power_limits`).
    """
    progress("enumerating the design space", 0.0)
    pts, reasons = enumerate_points(sc)
    progress(f"scoring {len(pts):,} points with the Markov/fluid estimator", 0.0)
    df = score_with_energy(screen, pts)
    df["pareto"] = pareto_mask(df["throughput_tps"].to_numpy(), df["ttft_s"].to_numpy())
    df["pareto_energy"] = pareto_mask_3(df["throughput_tps"].to_numpy(), df["ttft_s"].to_numpy(),
                                        df["tokens_per_J"].to_numpy())
    check_power_limits(df, sc.spec.energy, str(sc.path))
    return df, reasons


def _finalist_note(f: FinalistResult) -> str:
    n = len(f.hbm) + len(f.placement) + len(f.mapping)
    return f"{f.row['label']}: {n} HBM-partition, placement and mapping solves, {len(f.serving)} layouts served"


def no_stable_point_cause(sc: LoadedScenario, needs: MemoryNeeds, df: pd.DataFrame, symptom: str) -> str:
    """Say why no design point of ``df`` (``Screen.score``'s table) is stable, naming the file and field to change.

    Parameters
    ----------
    sc : LoadedScenario
    needs : MemoryNeeds
        The estimator's Eq. 1 inputs (weights and per-request bytes per HBM group, capacity per stack in bytes).
    df : pandas.DataFrame
        The scored points (columns ``feasible``, ``n_hbm``, ``capacity_rps``).
    symptom : str
        :func:`pick_b_star`'s message.

    Returns
    -------
    str
        One line. When some point fits its memory, the offered load is the cause (the workload's
        ``arrival_rate_rps``). Otherwise memory is (HYDRA Eq. 1): the weights and one request fit the largest
        design's HBM in total (the scenario loader checks that, naming the card or the trace row), so no split of
        its stacks between the attention and Mamba groups holds each group's weights and one request's KV cache /
        state; the message gives both groups' needs and names the library's ``memory.capacity_GB``.
    """
    if df["feasible"].any():
        best = df["capacity_rps"].max()
        return (f"{sc.workload_path}: arrival_rate_rps: {symptom} ({sc.workload.arrival_rate_rps:g} req/s offered; "
                f"the best design sustains {best:.3g} req/s); lower the offered load or enlarge the design space")
    h = int(df["n_hbm"].max())
    groups = ", ".join(f"{g} {needs.weight_bytes[i] / 1e9:.4g} GB + {needs.per_request_bytes[i] / 1e9:.4g} GB"
                       for i, g in enumerate(GROUP_NAMES) if needs.present[i])
    return (f"{sc.named_files['library']}: memory.capacity_GB: no split of at most {h} HBM stacks x "
            f"{needs.capacity_bytes / 1e9:g} GB between the HBM groups holds each group's weights and one request "
            f"at the mean context of {sc.lengths.mean_prefill + sc.lengths.mean_decode:,.0f} tokens ({groups}; "
            "HYDRA Eq. 1); raise memory.capacity_GB or design_space.hbm_max, or shorten the requests")


def explore(sc: LoadedScenario, time_limit_s: float | None = None, seed: int | None = None,
            progress: Progress | None = None, work_limit: float | None = None,
            checkpoints: Checkpoints | None = None) -> ExploreResult:
    """Run the explore pipeline on a loaded scenario.

    Parameters
    ----------
    sc : LoadedScenario
    time_limit_s : float, optional
        Wall-clock safety cap per exact solve, s (overrides the scenario's).
    seed : int, optional
        Seed for randomized heuristics and solvers (overrides the scenario's).
    progress : callable(str, float), optional
        Called with a stage description and the fraction done of the sweep stage.
    work_limit : float, optional
        Deterministic work limit per exact solve, work units (overrides the scenario's).
    checkpoints : Checkpoints, optional
        Where finished stages are kept and read back (the module's stages); its run identity is set here
        (:meth:`Checkpoints.begin` with :func:`run_identity`). Default: nothing kept.

    Returns
    -------
    ExploreResult

    Raises
    ------
    InfeasibleDesignError
        When no design point can be built, or none is stable at the offered load.
    KeyboardInterrupt
        Passed on (Ctrl-C); every stage finished before it is in ``checkpoints``' store.
    """
    progress = progress or no_progress
    stages = Stages()
    cfg = SolverConfig.of(sc.spec, work_limit, time_limit_s, seed=seed if seed is not None else sc.spec.seed)
    keep = checkpoints or Checkpoints(None)
    if checkpoints is not None:
        keep.begin(run_identity(sc, cfg), sc.model.key, sc.workload.name)
    with stages.stage("sweep_s"):
        screen = Screen(sc)
        df, reasons = keep.run("sweep", lambda: _sweep_stage(sc, screen, progress),
                               lambda v: f"{len(v[0]):,} points scored")
    try:
        b_star, m_t = pick_finalists(df, sc.spec.energy.pick)
    except ValueError as exc:
        raise InfeasibleDesignError(no_stable_point_cause(sc, screen.needs, df, str(exc))) from None
    df["role"] = "-"
    df.loc[b_star, "role"] = "B*"
    df.loc[m_t, "role"] = "M_T" if m_t != b_star else "B*,M_T"
    finalists = []
    with stages.stage("finalists_s"):
        for role, i in (("B*", b_star), ("M_T", m_t))[:1 if m_t == b_star else 2]:
            finalists.append(keep.run(f"finalist {role}", lambda role=role, i=i: _solve_finalist(
                sc, screen, role, df.loc[i].to_dict(), cfg, progress), _finalist_note))
        if m_t == b_star:
            finalists[0].role = "B* = M_T"
    thermal = []
    if sc.spec.thermal.enabled:
        with stages.stage("thermal_s"):
            progress("finalists: power and temperature maps", 0.0)
            thermal = keep.run("thermal", lambda: thermal_stage(sc, finalists, cfg, serve_layout, screen),
                               lambda v: f"{len(v)} finalists' power and temperature maps")
    study = None
    if sc.spec.simulation.enabled:
        with stages.stage("simulation_s"):
            study = keep.run("simulation", lambda: explore_simulations(sc, df, finalists, cfg, serve_layout, Screen,
                                                                       progress),
                             lambda v: f"{len(v.fidelity)} fidelity points, {len(v.policies)} policy runs")
    table_iv = None
    if sc.spec.generality is not None:
        with stages.stage("generality_s"):
            progress(f"specialization vs generality: {len(sc.spec.generality.models)} models x {len(df):,} points",
                     0.0)
            try:
                table_iv = keep.run("generality", lambda: generality(sc),
                                    lambda v: f"{len(v.models)} models x {v.n_points:,} points")
            except ValueError as exc:
                msg = f"{sc.path}: generality: {exc}"
                raise InfeasibleDesignError(msg) from None
    return ExploreResult(sc, df, reasons, finalists, cfg, stages.wall_s, study, table_iv, stages.cpu_s,
                         list(keep.read), thermal)


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
    best = best_exact(f.placement)
    return {"label": f.row["label"], "throughput_tps": f.row["throughput_tps"], "ttft_s": f.row["ttft_s"],
            "layouts": [{k: s[k] for k in ("layout", "throughput_tps", "ttft_s", "stable")} for s in f.serving],
            "placement": None if best is None else {"method": best.method, "objective": best.objective,
                                                    "status": best.status.value, "gap": best.gap}}


def summary(r: ExploreResult) -> dict[str, Any]:
    """Headline numbers: point counts, and each finalist's screen numbers, re-scored layouts and best exact
    placement (byte-hops/s, with its proof status)."""
    return {"points": len(r.points), "stable": int(r.points["stable"].sum()),
            "pareto": int(r.points["pareto"].sum()),
            "finalists": {f.role: _finalist_summary(f) for f in r.finalists}}


def placement_summary(sols: list[Solution]) -> list[str]:
    """One line for the best exact placement (objective, bound, gap) and one per heuristic (how much worse)."""
    best = best_exact(sols)
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
        lines.append(f"{f.role}: {f.row['label']}  screen: throughput {f.row['throughput_tps']:.0f} tok/s, "
                     f"TTFT {f.row['ttft_s']:.3f} s")
        for s in f.serving:
            ttft = "unstable" if not s["stable"] else f"TTFT {s['ttft_s']:.3f} s"
            lines.append(f"  {s['layout']}: throughput {s['throughput_tps']:.0f} tok/s, {ttft}")
        lines += [f"  {line}" for line in placement_summary(f.placement)]
    if r.simulation is not None:
        m = r.simulation.metrics
        if m:
            lines.append("estimator vs simulator: " + ", ".join(f"{k} {m[k]:.3f}" for k in (
                "cosine", "spearman_throughput", "mape_throughput", "max_throughput_recovery") if k in m))
        lines += [f"simulation skipped: {s}" for s in r.simulation.skipped]
    return lines
