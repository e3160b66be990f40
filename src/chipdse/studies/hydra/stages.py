"""HYDRA's stages: screen, pick, solve the finalists, map their layouts, serve them; and the keys of the artifacts
they pass (DESIGN.md "The HYDRA spine").

Every HYDRA entry point composes these: ``explore`` runs them all (:mod:`chipdse.studies.hydra.explore`), and
``sweep``, ``simulate``, ``compare`` / ``solve`` of a finalist, ``generality``, ``recovery``, the protocol and the
benchmarks run the ones they need (:func:`screen_and_pick`, :func:`finalist_design`). :func:`pick` is the only
place B* and M_T are chosen (:func:`chipdse.evaluators.selection.pick_finalists`); the screen is
:func:`screen_points` + :func:`design_table`, energy, power limits and Pareto flags included.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from chipdse.core.design_space import DesignPoints, ScoredDesign, enumerate_points
from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.layout import Layout, LayoutKind
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import LoadedScenario
from chipdse.core.solution import Solution
from chipdse.evaluators.cost import apply_cost_limit, check_cost_limit
from chipdse.evaluators.energy_hydra import check_power_limits, energy_at_throughput, score_with_energy
from chipdse.evaluators.estimator import MemoryNeeds, Screen, best_partition
from chipdse.evaluators.selection import pareto_mask, pareto_mask_3, pareto_mask_max, pick_finalists
from chipdse.evaluators.serving import serve_layout
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.hbm_partition import solve_hbm_partition
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import hbm_partition_problem, mapping_problem, placement_problem
from chipdse.studies.hydra import columns
from chipdse.studies.hydra.artifacts import (
    DesignTable,
    Finalist,
    FinalistLayouts,
    FinalistResult,
    FinalistSolves,
    PickRule,
    Picks,
    Role,
    ServedLayout,
)
from chipdse.studies.pipeline import Context, Key, Progress, Stage, no_progress, run_stages

SCENARIO: Key[LoadedScenario] = Key("scenario")
"""The run's scenario (an input)."""
SOLVER: Key[SolverConfig] = Key("solver")
"""The run's solver settings (an input)."""
PROGRESS: Key[Progress] = Key("progress")
"""Where stages report what they are doing (an input)."""
RULE: Key[PickRule] = Key("rule")
"""B*'s rule (an input: the scenario's ``energy.pick``, or what a caller asks for)."""
BATCHING: Key[str] = Key("batching")
"""The screen's batching (an input: the scenario's ``estimator.batching``, or an override)."""
ESTIMATOR: Key[Screen] = Key("estimator")
TABLE: Key[DesignTable] = Key("table")
PICKS: Key[Picks] = Key("picks")
SOLVES: Key[list[FinalistSolves]] = Key("solves")
LAYOUTS: Key[list[FinalistLayouts]] = Key("layouts")
FINALISTS: Key[list[FinalistResult]] = Key("finalists")

HBM_METHODS = ("milp-highs", "cpsat", "enumeration", "proportional")
PLACEMENT_HEURISTICS = ("hydra-greedy", "round-robin", "random", "local-search")
PLACEMENT_EXACT = ("hbm-enum", "milp-highs", "cpsat")
MAPPING_HEURISTICS = ("lpt-greedy", "round-robin")
MAPPING_EXACT = ("milp-highs", "cpsat")
FINALIST_LAYOUTS = ((LayoutKind.EXACT, "exact"), (LayoutKind.HYDRA_GREEDY, "lpt-greedy"),
                    (LayoutKind.ROUND_ROBIN, "round-robin"))
"""The layouts every finalist gets: (kind, its mapping method; ``"exact"`` = best of MILP and CP-SAT)."""


# ------------------------------------------------------------------------------------------------------ screen


def estimator(sc: LoadedScenario, batching: str | None = None) -> Screen:
    """The vectorized estimator of a scenario (``batching`` overrides ``estimator.batching``).

    Raises
    ------
    ValueError
        An unknown batching.
    """
    return Screen(sc, batching=batching)


def screen_points(screen: Screen, pts: DesignPoints) -> pd.DataFrame:
    """Score points: the estimator's columns (HYDRA Sec. V), the energy and power-limit columns
    (:func:`chipdse.evaluators.energy_hydra.score_with_energy`) and every registered metric
    (:data:`chipdse.studies.hydra.columns.METRICS`).

    The scoring is pointwise, so chunks of a space scored apart and concatenated equal one call on the whole space
    (the sweep scores one chunk per HBM count).

    Returns
    -------
    pandas.DataFrame
        One row per point, in ``pts`` order.
    """
    df = score_with_energy(screen, pts)
    for metric in columns.METRICS:
        df[metric.column.name] = metric.compute(screen, pts, df)
    return apply_cost_limit(df, screen.sc.spec.cost.package_max_usd)


def design_table(sc: LoadedScenario, frame: pd.DataFrame, unbuildable: list[str] | tuple[str, ...] = ()
                 ) -> DesignTable:
    """The scored design table of one workload: ``frame`` (:func:`screen_points` of every buildable point, in
    enumeration order; the table takes it over and adds its columns in place) with its row ids, the Pareto flags
    and the power and cost limits checked.

    Raises
    ------
    InfeasibleDesignError
        A power limit no design meets (:func:`chipdse.evaluators.energy_hydra.check_power_limits`).
    """
    plain = isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1
    df = frame if plain else frame.reset_index(drop=True)  # ``frame`` is the caller's fresh table: no copy
    df["point"] = np.arange(len(df))
    df["pareto"] = pareto_mask(df["throughput_tps"].to_numpy(), df["ttft_s"].to_numpy())
    df["pareto_energy"] = pareto_mask_3(df["throughput_tps"].to_numpy(), df["ttft_s"].to_numpy(),
                                        df["tokens_per_J"].to_numpy())
    df["pareto_cost"] = pareto_mask_max(np.column_stack([
        df["throughput_tps"].to_numpy(dtype=float), -df["ttft_s"].to_numpy(dtype=float),
        df["tokens_per_J"].to_numpy(dtype=float), -df["package_cost_usd"].to_numpy(dtype=float)]))
    check_power_limits(df, sc.spec.energy, str(sc.path))
    check_cost_limit(df, sc.spec.cost.package_max_usd, str(sc.path))
    types = tuple(sc.compute_types())
    return DesignTable(df, types, tuple(unbuildable), type_notes(sc), sc.library.memory.name)


def type_notes(sc: LoadedScenario) -> dict[str, str]:
    """Compute chiplet type -> what it runs (``"attention blocks, prefill phase"``), from the scenario's library:
    the per-type count columns' descriptions."""
    lib = sc.library
    return {t: f"{lib.by_name(t).family} blocks, {lib.by_name(t).phase} phase" for t in sc.compute_types()}


def screen_table(screen: Screen, progress: Progress = no_progress) -> DesignTable:
    """Enumerate the screen's scenario's design space and score it (:func:`screen_points`, :func:`design_table`).

    Raises
    ------
    InfeasibleDesignError
        No point can be built, or a power limit no design meets.
    """
    sc = screen.sc
    progress("enumerating the design space", 0.0)
    pts, reasons = enumerate_points(sc)
    progress(f"scoring {len(pts):,} points with the Markov/fluid estimator", 0.0)
    return design_table(sc, screen_points(screen, pts), reasons)


# -------------------------------------------------------------------------------------------------------- pick


def pick_rule(sc: LoadedScenario) -> PickRule:
    """The scenario's rule for B* (``energy.pick``)."""
    return PickRule(sc.spec.energy.pick)


def pick(table: DesignTable, rule: PickRule, sc: LoadedScenario | None = None, needs: MemoryNeeds | None = None
         ) -> Picks:
    """Choose B* and M_T: the one rule (:func:`chipdse.evaluators.selection.pick_finalists`) every HYDRA command
    picks by.

    Parameters
    ----------
    table : DesignTable
    rule : PickRule
        B* by throughput / TTFT (HYDRA Fig. 8) or by tokens per joule. The protocol's static batching and Table
        IV's per-model picks are a screen with their batching and a pick per model with their rule.
    sc : LoadedScenario, optional
        The table's scenario: names the file and field to change when no point is stable.
    needs : MemoryNeeds, optional
        The estimator's Eq. 1 inputs (with ``sc``: the memory cause).

    Returns
    -------
    Picks

    Raises
    ------
    InfeasibleDesignError
        No point is stable (the message names the cause when ``sc`` is given).
    """
    try:
        idx = pick_finalists(table.frame, rule.value)
    except ValueError as exc:
        if sc is None or needs is None:
            raise InfeasibleDesignError(str(exc)) from None
        source, field, msg = no_stable_point_cause(sc, needs, table.frame, str(exc))
        raise InfeasibleDesignError(msg, source, field) from None
    same = idx.b_star == idx.m_t

    def finalist(role: Role, i: int) -> Finalist:
        return Finalist(Role.BOTH if same else role, i, table.row(i), table.design(i))

    return Picks(rule, finalist(Role.B_STAR, idx.b_star), finalist(Role.M_T, idx.m_t), idx.candidates, idx.ties,
                 idx.runner_up, idx.runner_up_margin)


def rate_source(sc: LoadedScenario) -> str:
    """The file whose ``arrival_rate_rps`` sets the offered load: the scenario when it overrides the workload's
    rate, else the workload file."""
    return str(sc.path if sc.spec.arrival_rate_rps is not None else sc.workload_path)


def no_stable_point_cause(sc: LoadedScenario, needs: MemoryNeeds, df: pd.DataFrame, symptom: str
                          ) -> tuple[str, str, str]:
    """Say why no design point of ``df`` (the scored table) is stable, naming the file and field to change.

    Parameters
    ----------
    sc : LoadedScenario
    needs : MemoryNeeds
        The estimator's Eq. 1 inputs (weights and per-request bytes per HBM group, capacity per stack in bytes).
    df : pandas.DataFrame
        The scored points (columns ``feasible``, ``n_hbm``, ``capacity_rps``).
    symptom : str
        :func:`chipdse.evaluators.selection.pick_finalists`' message.

    Returns
    -------
    (source, field, message) : tuple of str
        The file and field to change and the one-line message naming them. When some point fits its memory, the
        offered load is the cause (``arrival_rate_rps`` of the scenario when it sets one, else of the workload,
        :func:`rate_source`). Otherwise memory is (HYDRA Eq. 1): the weights and one request fit the largest
        design's HBM in total (the scenario loader checks that, naming the card or the trace row), so no split of
        its stacks between the attention and Mamba groups holds each group's weights and one request's KV cache /
        state; the message gives both groups' needs and names the library's ``memory.capacity_GB``.
    """
    if df["feasible"].any():
        best = df["capacity_rps"].max()
        source = rate_source(sc)
        return source, "arrival_rate_rps", (
            f"{source}: arrival_rate_rps: {symptom} ({sc.workload.arrival_rate_rps:g} req/s offered; "
            f"the best design sustains {best:.3g} req/s); lower the offered load or enlarge the design space")
    return memory_cause(sc, needs, int(df["n_hbm"].max()))


def memory_cause(sc: LoadedScenario, needs: MemoryNeeds, h: int) -> tuple[str, str, str]:
    """The library file, ``memory.capacity_GB`` and the one-line message that no split of at most ``h`` HBM stacks
    between the HBM groups holds each group's weights and one request (HYDRA Eq. 1): the memory half of
    :func:`no_stable_point_cause`."""
    groups = ", ".join(f"{g} {needs.weight_bytes[i] / 1e9:.4g} GB + {needs.per_request_bytes[i] / 1e9:.4g} GB"
                       for i, g in enumerate(GROUP_NAMES) if needs.present[i])
    library = str(sc.named_files["library"])
    return library, "memory.capacity_GB", (
        f"{library}: memory.capacity_GB: no split of at most {h} HBM stacks x {needs.capacity_bytes / 1e9:g} GB "
        "between the HBM groups holds each group's weights and one request at the mean context of "
        f"{sc.lengths.mean_prefill + sc.lengths.mean_decode:,.0f} tokens ({groups}; HYDRA Eq. 1); raise "
        "memory.capacity_GB or design_space.hbm_max, or shorten the requests")


# --------------------------------------------------------------------------------- finalists: solve, map, serve


def _objective(s: Solution) -> float:
    """A solution's objective (callers pass only solutions that have one)."""
    assert s.objective is not None
    return float(s.objective)


def best_exact(solutions: list[Solution]) -> Solution | None:
    """Return the exact method's solution with the best objective (the reference for gaps), if any."""
    exact = [s for s in solutions if s.exact and s.objective is not None]
    if not exact:
        return None
    sign = 1 if exact[0].sense == "min" else -1
    return min(exact, key=lambda s: sign * _objective(s))


def solve_finalist(sc: LoadedScenario, finalist: Finalist, cfg: SolverConfig, progress: Progress = no_progress
                   ) -> FinalistSolves:
    """A finalist's HBM partition (HYDRA Eq. 1; every method) and placement (Eq. 2: the papers' heuristics, then
    each exact method warm-started from the best placement so far, STYLE.md item 7)."""
    role, d = finalist.role, finalist.design
    progress(f"{role}: HBM partition", 0.0)
    hp = hbm_partition_problem(sc, d.n_hbm)
    hbm = [solve_hbm_partition(hp, m, cfg) for m in HBM_METHODS]
    progress(f"{role}: placement", 0.0)
    pp = placement_problem(sc, d.point, d.capacity_rps)
    placement = [solve_placement(pp, m, cfg, seed=cfg.seed) for m in PLACEMENT_HEURISTICS]
    for m in PLACEMENT_EXACT:
        incumbent = min((s for s in placement if s.objective is not None), key=_objective)
        progress(f"{role}: placement, {m} ({cfg.limits_text()})", 0.0)
        placement.append(solve_placement(pp, m, cfg, seed=cfg.seed, hint=incumbent.decision))
    return FinalistSolves(finalist, hbm, placement)


def map_finalist(sc: LoadedScenario, solves: FinalistSolves, cfg: SolverConfig, progress: Progress = no_progress
                 ) -> FinalistLayouts:
    """Map each of a finalist's :data:`FINALIST_LAYOUTS` placements, both phases (HYDRA Eqs. 3-5): the best exact
    placement with the best of the exact mappings (heuristics first, each exact one within the limits), the HYDRA
    greedy placement with LPT, round-robin with round-robin. A layout whose placement found nothing is left out."""
    role, point = solves.finalist.role, solves.finalist.design.point
    by_method = {s.method: s for s in solves.placement}
    placements = {LayoutKind.EXACT: best_exact(solves.placement),
                  LayoutKind.HYDRA_GREEDY: by_method.get("hydra-greedy"),
                  LayoutKind.ROUND_ROBIN: by_method.get("round-robin")}
    progress(f"{role}: mapping", 0.0)
    layouts: list[Layout] = []
    decode_solves: list[Solution] = []
    for kind, map_method in FINALIST_LAYOUTS:
        pl = placements[kind]
        if pl is None or pl.decision is None:
            continue
        maps = {}
        for phase in ("prefill", "decode"):
            mp = mapping_problem(sc, point, pl.decision, phase, point.batch)
            if map_method == "exact":
                progress(f"{role}: {phase} mapping, MILP then CP-SAT ({cfg.limits_text()} each)", 0.0)
                sols = [solve_mapping(mp, m, cfg) for m in MAPPING_HEURISTICS + MAPPING_EXACT]
                if phase == "decode":
                    decode_solves = sols
                best = best_exact(sols) or min((s for s in sols if s.objective is not None), key=_objective)
            else:
                best = solve_mapping(mp, map_method, cfg)
            maps[phase] = best.decision
        layouts.append(Layout(point, pl.decision, maps["prefill"], maps["decode"], pl.method, kind))
    return FinalistLayouts(solves.finalist, layouts, decode_solves)


def served_layout(screen: Screen, finalist: Finalist, layout: Layout, placement_objective: float) -> ServedLayout:
    """One layout's serving re-score (:func:`chipdse.evaluators.serving.serve_layout`) and the design's energy at
    its throughput (:func:`chipdse.evaluators.energy_hydra.energy_at_throughput`)."""
    served = serve_layout(screen, layout)
    row = finalist.row
    j = energy_at_throughput(float(row.get("energy_J_per_token", np.nan)),
                             float(row.get("energy_static_J_per_token", np.nan)),
                             float(row.get("static_power_W", np.nan)), served.throughput_tps)
    return ServedLayout(layout, served, placement_objective, j, 1.0 / j if j > 0 else float("nan"),
                        j * served.throughput_tps if j == j else float("nan"))


def serve_finalist(screen: Screen, solves: FinalistSolves, layouts: FinalistLayouts,
                   progress: Progress = no_progress) -> FinalistResult:
    """Re-score each of a finalist's layouts with the estimator's serving model and gather its results."""
    objective = {s.method: _objective(s) for s in solves.placement if s.objective is not None}
    serving = []
    for lay in layouts.layouts:
        serving.append(served_layout(screen, solves.finalist, lay, objective[lay.placement_method]))
        progress(f"{solves.finalist.role}: served {lay.kind.label}", 0.0)
    return FinalistResult(solves.finalist, solves.hbm, solves.placement, layouts.mapping, serving)


# ---------------------------------------------------------------------------------------- the stages themselves


def _estimator(ctx: Context) -> None:
    ctx.put(ESTIMATOR, estimator(ctx.get(SCENARIO), ctx.get(BATCHING) if ctx.has(BATCHING) else None))


def refuse_unfit_memory(sc: LoadedScenario, needs: MemoryNeeds) -> None:
    """Refuse a scenario whose largest design (``design_space.hbm_max`` stacks) has no split of its stacks that holds
    each HBM group's weights and one request (HYDRA Eq. 1), before any point is scored: no point of the space could
    be stable. The message is the one the pick would give after the screen (:func:`memory_cause`).

    Raises
    ------
    InfeasibleDesignError
        Naming the library's ``memory.capacity_GB``.
    """
    h = sc.spec.design_space.hbm_max
    if best_partition(needs, h)[1] < 1:
        source, field, msg = memory_cause(sc, needs, h)
        raise InfeasibleDesignError(msg, source, field)


def _screen(ctx: Context) -> None:
    screen = ctx.get(ESTIMATOR)
    refuse_unfit_memory(ctx.get(SCENARIO), screen.needs)
    ctx.put(TABLE, screen_table(screen, ctx.get(PROGRESS) if ctx.has(PROGRESS) else no_progress))


def _pick(ctx: Context) -> None:
    sc = ctx.get(SCENARIO)
    rule = ctx.get(RULE) if ctx.has(RULE) else pick_rule(sc)
    ctx.put(PICKS, pick(ctx.get(TABLE), rule, sc, ctx.get(ESTIMATOR).needs))


def screen_only(sc: LoadedScenario) -> tuple[Screen, DesignTable]:
    """Run the estimator and screen stages of :data:`SCREEN_AND_PICK` (not the pick): the scored table even when
    no point is stable.

    Raises
    ------
    InfeasibleDesignError
        No buildable point, a power limit no design meets, or memory no split of the stacks fits.
    """
    ctx = Context(scenario=sc)
    run_stages(SCREEN_AND_PICK[:2], ctx)
    return ctx.get(ESTIMATOR), ctx.get(TABLE)


def picks_of(sc: LoadedScenario, screen: Screen, table: DesignTable) -> Picks:
    """The pick stage on a screened table (:func:`screen_only`): B* by the scenario's ``energy.pick`` and M_T.

    Raises
    ------
    InfeasibleDesignError
        No stable point (naming the cause).
    """
    ctx = Context(scenario=sc)
    ctx.put(ESTIMATOR, screen)
    ctx.put(TABLE, table)
    run_stages((PICK_STAGE,), ctx)
    return ctx.get(PICKS)


def _solve(ctx: Context) -> None:
    sc, cfg, progress = ctx.get(SCENARIO), ctx.get(SOLVER), ctx.get(PROGRESS)
    ctx.put(SOLVES, [solve_finalist(sc, f, cfg, progress) for f in ctx.get(PICKS).finalists])


def _map(ctx: Context) -> None:
    sc, cfg, progress = ctx.get(SCENARIO), ctx.get(SOLVER), ctx.get(PROGRESS)
    ctx.put(LAYOUTS, [map_finalist(sc, s, cfg, progress) for s in ctx.get(SOLVES)])


def _serve(ctx: Context) -> None:
    screen, progress = ctx.get(ESTIMATOR), ctx.get(PROGRESS)
    ctx.put(FINALISTS, [serve_finalist(screen, s, lay, progress)
                        for s, lay in zip(ctx.get(SOLVES), ctx.get(LAYOUTS), strict=True)])


def _solves_note(ctx: Context) -> str:
    return "; ".join(f"{s.finalist.label}: {len(s.hbm) + len(s.placement)} HBM-partition and placement solves"
                     for s in ctx.get(SOLVES))


def _layouts_note(ctx: Context) -> str:
    return "; ".join(f"{lay.finalist.label}: {len(lay.layouts)} layouts mapped" for lay in ctx.get(LAYOUTS))


ESTIMATOR_STAGE = Stage("estimator", (SCENARIO,), (ESTIMATOR,), _estimator)
"""Build the scenario's vectorized estimator (cheap; never kept)."""
SCREEN_STAGE = Stage("screen", (ESTIMATOR,), (TABLE,), _screen, keep=True,
                     note=lambda ctx: f"{len(ctx.get(TABLE)):,} points scored")
"""Enumerate and score the design space: estimator, energy, power limits, metrics, Pareto flags (once)."""
PICK_STAGE = Stage("pick", (SCENARIO, ESTIMATOR, TABLE), (PICKS,), _pick)
"""Choose B* and M_T (the only place they are chosen)."""
SOLVE_STAGE = Stage("finalists", (SCENARIO, SOLVER, PROGRESS, PICKS), (SOLVES,), _solve, keep=True,
                    note=_solves_note)
"""Solve each finalist's HBM partition and placement, exactly and with the papers' heuristics."""
MAP_STAGE = Stage("layouts", (SCENARIO, SOLVER, PROGRESS, SOLVES), (LAYOUTS,), _map, keep=True, note=_layouts_note)
"""Map each finalist's exact, greedy and round-robin placements."""
SERVE_STAGE = Stage("serve", (ESTIMATOR, PROGRESS, SOLVES, LAYOUTS), (FINALISTS,), _serve)
"""Re-score every layout with the serving model."""
SCREEN_AND_PICK = (ESTIMATOR_STAGE, SCREEN_STAGE, PICK_STAGE)
"""The stages every command that works on a HYDRA finalist starts with."""


def screen_and_pick(sc: LoadedScenario, rule: PickRule | None = None, batching: str | None = None,
                    progress: Progress = no_progress) -> tuple[Screen, DesignTable, Picks]:
    """Run :data:`SCREEN_AND_PICK` on a scenario: its estimator, scored table and finalists.

    Parameters
    ----------
    sc : LoadedScenario
    rule : PickRule, optional
        B*'s rule (default: the scenario's ``energy.pick``).
    batching : str, optional
        The screen's batching (default: the scenario's ``estimator.batching``).
    progress : callable(str, float)

    Raises
    ------
    InfeasibleDesignError
        No buildable point, a power limit no design meets, or no stable point (naming the cause).
    """
    ctx = Context(scenario=sc, progress=progress)
    if rule is not None:
        ctx.put(RULE, rule)
    if batching is not None:
        ctx.put(BATCHING, batching)
    run_stages(SCREEN_AND_PICK, ctx, progress=progress)
    return ctx.get(ESTIMATOR), ctx.get(TABLE), ctx.get(PICKS)


FINALIST_POINTS = {"b-star": Role.B_STAR, "m-t": Role.M_T}
"""``--point`` names of the finalists: HYDRA's B* and M_T."""


def finalist_of(picks: Picks, point: str) -> Finalist:
    """The finalist ``point`` names (``"b-star"`` / ``"m-t"``).

    Raises
    ------
    ValueError
        Another name.
    """
    if point not in FINALIST_POINTS:
        msg = f"--point: must be one of {list(FINALIST_POINTS)}, got {point!r}"
        raise ValueError(msg)
    return picks.b_star if FINALIST_POINTS[point] is Role.B_STAR else picks.m_t


def finalist_design(sc: LoadedScenario, point: str = "b-star") -> ScoredDesign:
    """The design of the scenario's B* (``"b-star"``) or M_T (``"m-t"``), picked as explore picks it
    (:func:`screen_and_pick`).

    Raises
    ------
    ValueError
        ``point`` not a finalist name.
    InfeasibleDesignError
        As :func:`screen_and_pick`.
    """
    if point not in FINALIST_POINTS:
        msg = f"--point: must be one of {list(FINALIST_POINTS)}, got {point!r}"
        raise ValueError(msg)
    return finalist_of(screen_and_pick(sc)[2], point).design
