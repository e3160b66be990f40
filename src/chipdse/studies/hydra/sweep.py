"""Sweep a scenario's design space on one or more workloads, then simulate its Pareto candidates; every job is
storable and distributable.

The sweep composes HYDRA's stages (:mod:`chipdse.studies.hydra.stages`) over a job back-end:

Stage 1 (screen): one job per (workload, HBM count) (HYDRA Table III has 15 HBM counts: 2..16). Each job
enumerates the space, keeps its HBM count and scores those points with the screen stage's
:func:`~chipdse.studies.hydra.stages.screen_points` (estimator, energy, power limits); the scoring is pointwise, so
the concatenated chunks equal one screen over every point. Per workload, the stages' ``design_table`` then adds
the Pareto flags and checks the power limits over the whole space, and the pick stage
(:func:`~chipdse.studies.hydra.stages.pick`, the scenario's ``energy.pick``) names B* and M_T.

Stage 2 (simulate, ``sweep.simulate`` > 0): per workload, B*, M_T and further Pareto points spread along the
front are placed (exactly, ``hbm-enum``, by default), mapped (LPT) and run through the event simulator at the
offered load, one job each.

Jobs of both stages go to the same :class:`chipdse.runtime.parallel.Backend` and the same results store: each finished
job is committed at once, so an interrupted sweep (Ctrl-C in either stage) resumes without recomputing anything.
"""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

from chipdse.core.design_space import ScoredDesign, enumerate_points, subset_points
from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.scenario import LoadedScenario, scenario_identity, with_workload
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.runtime.parallel import Backend, run_jobs
from chipdse.runtime.store import ResultsStore, job_key
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.artifacts import DesignTable, Finalist, Picks
from chipdse.studies.hydra.columns import Column, table_columns
from chipdse.studies.hydra.simstudy import SimJob, make_layout
from chipdse.studies.hydra.stages import design_table, estimator, pick, pick_rule, screen_points, type_notes

JOB_KIND = "sweep-screen"
SIM_JOB_KIND = "sweep-simulate"
SIM_COLUMNS = ("sim_throughput_tps", "sim_ttft_s", "sim_ttft_p99_s", "sim_e2e_s", "finished", "arrived",
               "preemptions", "events")
"""Simulator outputs kept per candidate (wall-clock times are left out, so reruns compare equal)."""
SIMULATED_COLUMNS = ("workload", "point", "label", "role", "est_throughput_tps", "est_ttft_s", "placement_method",
                     *SIM_COLUMNS, "error")
"""Columns of :attr:`SweepResult.simulated`, in order."""

Progress = Callable[[str, float, float], None]
"""``progress(stage, done, total)``: stage ``"screen"`` counts points, ``"simulate"`` counts runs."""


@dataclass
class SweepResult:
    """A scored design space, per workload, and its simulated Pareto candidates.

    Attributes
    ----------
    point_tables : dict[str, bytes]
        Per workload name, in sweep order, its rows as compressed Parquet (:func:`frame_to_blob`): a sweep holds
        about 100 bytes per point instead of a DataFrame's 350. :attr:`points` decodes them into one table and
        :meth:`iter_points` one workload at a time.
    points : pandas.DataFrame (property)
        One row per (workload, buildable point), in workload order then
        :func:`chipdse.core.design_space.enumerate_points` order, with the estimator's columns (``Screen.score``) plus
        ``workload``, ``point`` (row id within its workload), ``pareto`` and ``pareto_energy`` (per workload; the
        latter on the 3-objective front of throughput, TTFT and tokens/J), and the energy columns of
        :func:`chipdse.evaluators.energy_hydra.score_with_energy`.
    n_points, n_feasible, n_infeasible, n_pareto : int
        Over all workloads, in the estimator's words (``Screen.score``): feasible = the weights and one request fit
        the HBM stacks (column ``feasible``), infeasible = they do not.
    n_stable, n_unstable : int
        Feasible points that are stable at the offered load (empty ``reason``), and those that are not (capacity
        at or below the offered load); n_stable + n_unstable = n_feasible.
    per_workload : dict[str, dict[str, Any]]
        points, feasible, stable, unstable, infeasible and pareto per workload name, and its ``b_star`` and ``m_t``
        (``{"design": label, "point": row}``, None without a stable point) with the ``pick`` rule.
    infeasible_reasons, unstable_reasons : dict[str, int]
        Points per reason (the ``reason`` column) of the infeasible and of the unstable points.
    unbuildable : list[str]
        Kinds of design point dropped before scoring (e.g. too much interposer area), with counts.
    simulated : pandas.DataFrame
        One row per simulated candidate: workload, point, label, role, the estimator's throughput / TTFT, the
        simulator's (``SIM_COLUMNS``) and ``error`` (empty when the run finished).
    wall_s : float
        Wall time of the sweep, s (store look-ups included).
    jobs, jobs_stored, sim_jobs, sim_jobs_stored : int
        Jobs of each stage, and how many of them were read from the store instead of being run.
    """

    point_tables: dict[str, bytes]
    n_points: int
    n_feasible: int
    n_infeasible: int
    n_pareto: int
    per_workload: dict[str, dict[str, Any]]
    infeasible_reasons: dict[str, int]
    unbuildable: list[str]
    simulated: pd.DataFrame
    wall_s: float
    jobs: int
    jobs_stored: int
    sim_jobs: int = 0
    sim_jobs_stored: int = 0
    backend: str = field(default="in-process")
    n_stable: int = 0
    n_unstable: int = 0
    unstable_reasons: dict[str, int] = field(default_factory=dict)
    picks: dict[str, Picks | None] = field(default_factory=dict)
    """Per workload name, its B* and M_T (the pick stage's; None when no point is stable)."""
    n_pareto_energy: int = 0

    def iter_points(self) -> Iterator[pd.DataFrame]:
        """The rows of :attr:`points`, one workload's table at a time (in sweep order)."""
        for blob in self.point_tables.values():
            yield frame_from_blob(blob)

    @property
    def points(self) -> pd.DataFrame:
        """Every scored point, one DataFrame (decoded on each access: keep it when used twice)."""
        return pd.concat(list(self.iter_points()), ignore_index=True)


WORKLOAD_COLUMN = Column("workload", "-", "the workload the row was scored on (its name, from sweep.workloads or the "
                                         "scenario's own workload)", "screen")


def points_columns(sc: LoadedScenario, points: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Every column of a sweep's points table (:attr:`SweepResult.points`), in its order: ``{name: (unit,
    description)}``, from the scored table's column registry (:mod:`chipdse.studies.hydra.columns`) and
    :data:`WORKLOAD_COLUMN`. The same descriptions as explore's ``points.columns.csv``.

    Raises
    ------
    KeyError
        A column the registry does not know (a defect of the stage that made it).
    """
    names = tuple(c for c in points.columns if c != WORKLOAD_COLUMN.name)
    known = table_columns(names, tuple(sc.compute_types()), type_notes(sc), sc.library.memory.name)
    cols = {WORKLOAD_COLUMN.name: WORKLOAD_COLUMN, **known}
    return {name: (cols[name].unit, cols[name].description) for name in points.columns}


def frame_to_blob(df: pd.DataFrame, compression: str = "lz4") -> bytes:
    """Encode a DataFrame (without its index) as Parquet bytes that :func:`frame_from_blob` restores with the same
    columns, order and dtypes (pyarrow; no dictionary pages: the columns are numbers and distinct labels)."""
    buf = io.BytesIO()
    first = pa.Table.from_pandas(df.iloc[:BLOB_ROW_GROUP], preserve_index=False)
    with pq.ParquetWriter(buf, first.schema, compression=compression, use_dictionary=False) as writer:
        writer.write_table(first, row_group_size=BLOB_ROW_GROUP)
        del first
        for start in range(BLOB_ROW_GROUP, len(df), BLOB_ROW_GROUP):  # one row group's Arrow copy at a time
            writer.write_table(pa.Table.from_pandas(df.iloc[start:start + BLOB_ROW_GROUP], schema=writer.schema,
                                                    preserve_index=False), row_group_size=BLOB_ROW_GROUP)
    return buf.getvalue()


BLOB_ROW_GROUP = 1 << 20
"""Rows per Parquet row group of :func:`frame_to_blob` (pyarrow's default, 1,048,576): the frame is converted to
Arrow one row group at a time, so a 2.5-million-point workload never holds a second whole copy."""


def _blob_table(blob: bytes) -> pa.Table:
    """The Arrow table of :func:`frame_to_blob` bytes."""
    return pq.read_table(io.BytesIO(blob))


def frame_from_blob(blob: bytes) -> pd.DataFrame:
    """Rebuild a DataFrame written by :func:`frame_to_blob`."""
    return _blob_table(blob).to_pandas()


def _record_table(obj: dict[str, Any]) -> pa.Table:
    """The Arrow table of a :func:`frame_to_record` dict (or of a screen job's unencoded ``{"arrow": table}``)."""
    if "arrow" in obj:
        return obj["arrow"]
    return pa.ipc.open_stream(base64.b64decode(obj["arrow_ipc_b64"])).read_all()


def frame_to_record(df: pd.DataFrame) -> dict[str, Any]:
    """A screen job's result as a JSON-able dict for the results store: ``{"arrow_ipc_b64": ...}``, the frame as an
    LZ4-compressed Arrow IPC stream in base64 (about 100 bytes per point, against about 500 as JSON lists; a
    job's record is read back once, so the stream's cheap encoding beats Parquet's smaller pages: 6 against 14 ms
    to write and 3 against 9 ms to read a 20,000-point chunk, measured)."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    buf = io.BytesIO()
    with pa.ipc.new_stream(buf, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_table(table)
    return {"arrow_ipc_b64": base64.b64encode(buf.getvalue()).decode("ascii")}


def frame_from_record(obj: dict[str, Any]) -> pd.DataFrame:
    """Rebuild the DataFrame of a :func:`frame_to_record` dict (same columns, order and dtypes)."""
    return _record_table(obj).to_pandas()


def score_hbm_chunk(sc: LoadedScenario, n_hbm: int, encode: bool = True) -> dict[str, Any]:
    """Score every buildable point of the scenario with ``n_hbm`` HBM stacks (one screen job).

    Parameters
    ----------
    sc : LoadedScenario
    n_hbm : int
    encode : bool
        Return the JSON-able record a results store keeps (:func:`frame_to_record`); False returns the Arrow
        table itself (``{"arrow": table}``: no compression or base64 when nothing is stored).

    Returns
    -------
    dict
        The scored points (``Screen.score`` with energy and the registered metrics; no rows when none is
        buildable), read back by :func:`_record_table` either way.
    """

    pts, _ = enumerate_points(sc)
    df = screen_points(estimator(sc), subset_points(pts, pts.n_hbm == n_hbm))
    return frame_to_record(df) if encode else {"arrow": pa.Table.from_pandas(df, preserve_index=False)}


def _screen_job(job: tuple[LoadedScenario, int, bool]) -> dict[str, Any]:
    """Module-level entry point of a screen job (workload scenario, HBM count, encode for a store) for process /
    Dask workers."""
    return score_hbm_chunk(*job)


def sweep_workloads(sc: LoadedScenario) -> list[LoadedScenario]:
    """The scenario once per workload of ``sweep.workloads`` (the scenario's own workload when empty).

    Raises
    ------
    SpecError
        A missing or malformed workload, naming ``sweep.workloads``.
    """
    refs = sc.spec.sweep.workloads
    return [with_workload(sc, w, "sweep.workloads") for w in refs] if refs else [sc]


def sweep_jobs(sc: LoadedScenario) -> tuple[list[int], list[int], list[str]]:
    """Return the HBM counts to score (one job each), their point counts, and the reasons points were dropped
    before scoring.

    Raises
    ------
    InfeasibleDesignError
        When no design point can be built.
    """
    pts, reasons = enumerate_points(sc)
    counts, sizes = np.unique(pts.n_hbm, return_counts=True)
    return [int(h) for h in counts], [int(n) for n in sizes], reasons


def pareto_candidates(table: DesignTable, picks: Picks | None, n: int) -> list[tuple[int, str]]:
    """Up to ``n`` (row index, role) of one workload's table: B*, M_T (the pick stage's), then Pareto points spread
    evenly over the front's throughput range (none when no point is stable: ``picks`` None).

    Parameters
    ----------
    table : DesignTable
        One workload's scored table (its ``pareto`` column).
    picks : Picks or None
        Its finalists (:func:`chipdse.studies.hydra.stages.pick`).
    n : int
        Candidates wanted (B* and M_T count among them).
    """
    if n <= 0 or picks is None:
        return []
    df = table.frame
    roles = picks.roles()
    front = df.index[df["pareto"]][np.argsort(df.loc[df["pareto"], "throughput_tps"].to_numpy(), kind="stable")]
    spread = [int(front[j]) for j in np.linspace(0, len(front) - 1, min(n, len(front))).astype(int)]
    out = list(roles.items()) + [(i, "pareto") for i in dict.fromkeys(spread) if i not in roles]
    return out[:n]


@dataclass(frozen=True)
class SimCandidate:
    """One simulation job of the sweep: a workload scenario and a scored design.

    Attributes
    ----------
    sc : LoadedScenario
    design : ScoredDesign
    point : int
        Its row in the workload's table.
    role : str
        ``B*``, ``M_T``, ``B*,M_T`` or ``pareto``.
    est_throughput_tps, est_ttft_s : float
        The screen's numbers.
    """

    sc: LoadedScenario
    design: ScoredDesign
    point: int
    role: str
    est_throughput_tps: float
    est_ttft_s: float


def simulate_candidate(job: SimCandidate) -> dict[str, Any]:
    """Place (``sweep.placement``), map (LPT, both phases) and simulate one candidate at the offered load.

    Returns
    -------
    dict
        workload, point, label, role, est_throughput_tps, est_ttft_s, placement_method, ``SIM_COLUMNS`` and
        error (empty, or why there is no simulation: no placement, or a simulator input error).
    """

    sc, st = job.sc, job.sc.spec.sweep
    out: dict[str, Any] = {"workload": sc.workload.name, "point": job.point, "label": job.design.label,
                           "role": job.role, "est_throughput_tps": job.est_throughput_tps,
                           "est_ttft_s": job.est_ttft_s, "placement_method": st.placement}
    cfg = SolverConfig.of(sc.spec, seed=sc.spec.seed)
    lay = make_layout(sc, job.design, st.placement, cfg)
    if lay is None:
        return {**out, **dict.fromkeys(SIM_COLUMNS), "error": f"no placement found ({cfg.limits_text()})"}
    dur = st.sim_duration_s
    try:
        res = SimJob(sc, lay, sc.workload.arrival_rate_rps, dur, min(20.0, dur / 5.0),
                     sc.spec.estimator.batching).run()
    except SimulationError as exc:
        return {**out, **dict.fromkeys(SIM_COLUMNS), "error": str(exc)}
    return {**out, **{k: res[k] for k in SIM_COLUMNS}, "error": ""}


def sweep(sc: LoadedScenario, backend: Backend | None = None, store: ResultsStore | None = None,
          fresh: bool = False, progress: Progress | None = None) -> SweepResult:
    """Score the scenario's design space on every sweep workload, then simulate its Pareto candidates.

    Parameters
    ----------
    sc : LoadedScenario
    backend : Backend, optional
        Where jobs of both stages run (default in-process).
    store : ResultsStore, optional
        Results store; jobs already in it are read, not run, and each finished job is written at once.
    fresh : bool
        Recompute every job even when stored.
    progress : callable(stage, done, total), optional
        ``"screen"`` with points scored so far, then ``"simulate"`` with runs finished.

    Returns
    -------
    SweepResult

    Raises
    ------
    InfeasibleDesignError
        When no design point can be built, or a power limit no design meets (an input that cannot be met). A
        workload with no point stable at its offered load is not an error here: the sweep reports it (its
        ``b_star`` and ``m_t`` are None and nothing of it is simulated).
    SpecError
        A missing or malformed sweep workload.
    ChipdseError
        Dask selected but not installed, or an unreachable scheduler.
    KeyboardInterrupt
        Passed on; every job finished before it is in the store.
    """
    t0 = time.perf_counter()
    backend = backend or Backend.in_process()
    hbm_counts, sizes, reasons = sweep_jobs(sc)
    variants = sweep_workloads(sc)
    idents = [scenario_identity(v) for v in variants]
    jobs = [(w, h) for w in range(len(variants)) for h in hbm_counts]
    screen = [(variants[w], h, store is not None) for w, h in jobs]  # records encoded only for the store
    weights = [float(n) for _ in variants for n in sizes]
    screen_keys = {id(j): job_key(JOB_KIND, {**idents[w], "n_hbm": h}, sc.model.key, variants[w].workload.name)
                   for j, (w, h) in zip(screen, jobs, strict=True)}

    def stage(name: str) -> Callable[[float, float], None] | None:
        return None if progress is None else (lambda done, total: progress(name, done, total))

    use_store = store is not None
    stored = 0 if (store is None or fresh) else sum(k in store for k in screen_keys.values())
    total_weight, weight_done = sum(weights), 0.0
    blobs: dict[str, bytes] = {}
    per_workload, picks = {}, {}
    sims, sim_keys, reasons_all, fits_all = [], [], [], []
    n_pareto_energy = 0
    for w, (v, ident) in enumerate(zip(variants, idents, strict=True)):
        # one workload's screen jobs at a time: only its records (a few MB per 10,000 points) wait to be decoded
        mine = [i for i, (jw, _) in enumerate(jobs) if jw == w]
        chunks = run_jobs(_screen_job, [screen[i] for i in mine], backend, store=store,
                          key_fn=(lambda j: screen_keys[id(j)]) if use_store else None,
                          progress=_offset_progress(progress, "screen", weight_done, total_weight),
                          fresh=fresh, weights=[weights[i] for i in mine])
        weight_done += sum(weights[i] for i in mine)
        parts = []
        for i in range(len(chunks)):
            parts.append(_record_table(chunks[i]))
            chunks[i] = {}  # decoded: let the record go
        del chunks
        arrow = pa.concat_tables(parts)
        del parts
        # one pandas copy, not two: the Arrow buffers are released column by column as they are converted
        table = design_table(v, arrow.to_pandas(self_destruct=True, split_blocks=True), reasons)
        del arrow
        try:
            chosen: Picks | None = pick(table, pick_rule(v))
        except InfeasibleDesignError:
            chosen = None  # no stable point: counted below, nothing simulated
        picks[v.workload.name] = chosen
        for i, role in pareto_candidates(table, chosen, sc.spec.sweep.simulate):
            row = table.row(i)
            sims.append(SimCandidate(v, table.design(i), i, role, float(row["throughput_tps"]),
                                     float(row["ttft_s"])))
            settings = sc.spec.sweep.model_dump(mode="json", exclude={"workloads", "simulate"})
            sim_keys.append(job_key(SIM_JOB_KIND, {**ident, "label": row["label"], "role": role, "sweep": settings,
                                                   "work_limit": sc.spec.work_limit,
                                                   "time_limit_s": sc.spec.time_limit_s}, sc.model.key,
                                    v.workload.name))
        df = table.frame  # the table is not used again: its frame gains the workload column in place
        del table
        df.insert(0, "workload", v.workload.name)
        per_workload[v.workload.name] = {"points": len(df), **_counts(df), "pareto": int(df["pareto"].sum()),
                                         **_finalist_json(chosen)}
        n_pareto_energy += int(df["pareto_energy"].sum()) if "pareto_energy" in df else 0
        fits_all.append(df["feasible"].astype(bool).to_numpy())
        reasons_all.append(df["reason"].astype("category"))
        blobs[v.workload.name] = frame_to_blob(df, compression="zstd")
        del df
        pa.default_memory_pool().release_unused()  # Arrow keeps freed buffers for reuse unless told
    key_of = dict(zip(map(id, sims), sim_keys, strict=True))
    sim_stored = 0 if (store is None or fresh) else sum(k in store for k in sim_keys)
    results = run_jobs(simulate_candidate, sims, backend, store=store,
                       key_fn=(lambda j: key_of[id(j)]) if use_store else None, progress=stage("simulate"),
                       fresh=fresh) if sims else []
    totals = {k: sum(c[k] for c in per_workload.values())
              for k in ("points", "feasible", "stable", "unstable", "infeasible", "pareto")}
    fits = np.concatenate(fits_all)
    reason = pd.concat(reasons_all, ignore_index=True).astype(str)
    unstable = fits & (reason.to_numpy() != "")
    return SweepResult(
        point_tables=blobs, n_points=totals["points"], n_feasible=totals["feasible"], n_infeasible=totals["infeasible"],
        n_stable=totals["stable"], n_unstable=totals["unstable"],
        n_pareto=totals["pareto"], per_workload=per_workload,
        infeasible_reasons=_reasons(reason[~fits]), unstable_reasons=_reasons(reason[unstable]),
        unbuildable=reasons,
        simulated=pd.DataFrame(results, columns=list(SIMULATED_COLUMNS)), wall_s=time.perf_counter() - t0,
        jobs=len(jobs), jobs_stored=stored,
        sim_jobs=len(sims), sim_jobs_stored=sim_stored, backend=backend.describe(), picks=picks,
        n_pareto_energy=n_pareto_energy,
    )


def _offset_progress(progress: Progress | None, stage: str, offset: float, total: float
                     ) -> Callable[[float, float], None] | None:
    """``progress`` of one call of :func:`run_jobs` that does part of a stage: its work done counted from
    ``offset`` of the stage's ``total``."""
    if progress is None:
        return None
    report = progress
    return lambda done, _part_total: report(stage, offset + done, total)


def _finalist_json(picks: Picks | None) -> dict[str, Any]:
    """``b_star`` and ``m_t`` of one workload (``{"design": label, "point": row, "package_cost_usd": USD}``; None
    without a stable point) and the ``pick`` rule."""
    if picks is None:
        return {"b_star": None, "m_t": None, "pick": None}

    def one(f: Finalist) -> dict[str, Any]:
        cost = f.row.get("package_cost_usd")
        return {"design": f.label, "point": f.index, **({} if cost is None else {"package_cost_usd": float(cost)})}

    return {"b_star": one(picks.b_star), "m_t": one(picks.m_t), "pick": picks.rule.value}


def _counts(df: pd.DataFrame) -> dict[str, int]:
    """feasible / stable / unstable / infeasible point counts of a scored table (see :class:`SweepResult`)."""
    fits = df["feasible"].astype(bool)
    stable = int((df["reason"] == "").sum())
    return {"feasible": int(fits.sum()), "stable": stable, "unstable": int(fits.sum()) - stable,
            "infeasible": int((~fits).sum())}


def _reasons(reasons: pd.Series) -> dict[str, int]:
    """Points per distinct reason."""
    return {str(k): int(v) for k, v in reasons.value_counts().items()}


def summary_json(result: SweepResult) -> dict[str, Any]:
    """Return the sweep's counts as a JSON-able dict.

    Keys: points, feasible (fit the HBM), stable (and sustain the offered load), unstable (fit, but do not),
    infeasible (do not fit, or break a power limit), pareto, pareto_energy (on the 3-objective front: throughput,
    TTFT, tokens/J), wall_s (over all workloads), workloads (the same counts per workload),
    infeasible_reasons and unstable_reasons (points per reason), unbuildable, jobs, jobs_stored, jobs_run, sim_jobs,
    sim_jobs_stored, sim_jobs_run, simulated (one record per simulated candidate; NaN as null) and backend.
    """
    sim = result.simulated
    records = [] if sim.empty else [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                                    for r in sim.to_dict("records")]
    return {
        "points": result.n_points,
        "feasible": result.n_feasible,
        "stable": result.n_stable,
        "unstable": result.n_unstable,
        "infeasible": result.n_infeasible,
        "pareto": result.n_pareto,
        "pareto_energy": result.n_pareto_energy,
        "wall_s": round(result.wall_s, 3),
        "workloads": result.per_workload,
        "infeasible_reasons": result.infeasible_reasons,
        "unstable_reasons": result.unstable_reasons,
        "unbuildable": result.unbuildable,
        "jobs": result.jobs,
        "jobs_stored": result.jobs_stored,
        "jobs_run": result.jobs - result.jobs_stored,
        "sim_jobs": result.sim_jobs,
        "sim_jobs_stored": result.sim_jobs_stored,
        "sim_jobs_run": result.sim_jobs - result.sim_jobs_stored,
        "simulated": records,
        "backend": result.backend,
    }
