"""The Python API: what every ``chipdse`` command runs, for notebooks and scripts.

Each function takes a scenario (a path, or what :func:`load_scenario` returned; the bundled default when None)
and returns a typed result with ``.to_pandas()``; ``chipdse explore / sweep / compare / solve / simulate /
generality`` call these same functions and only print what they return. Errors are the command line's: a
:class:`chipdse.core.errors.ChipdseError` (a ``SpecError`` names the file and field) or a ``ValueError`` naming
the bad argument.

Layer: above :mod:`chipdse.reports` (it writes reports) and below :mod:`chipdse.cli` (import-linter's layers
contract in pyproject.toml). This module imports the whole tool (Pyomo, OR-Tools, matplotlib, ...), so the
command line loads it only when a command runs (``chipdse.cli._api``) and ``import chipdse`` loads it on the first
use of one of these names (``chipdse.__getattr__``).

Example
-------
>>> import chipdse
>>> sc = chipdse.load_scenario("instances/scenarios/snake-stratum.yaml")  # doctest: +SKIP
>>> chipdse.explore(sc).to_pandas().head()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from rich.progress import Progress

from chipdse.core.errors import ChipdseError, InfeasibleDesignError, SpecError, shorten
from chipdse.core.overrides import Override, overrides_from_mapping, parse_overrides
from chipdse.core.paths import instances_dir
from chipdse.core.qaplib import QapInstance
from chipdse.core.scenario import AnyScenario, LoadedScenario, StudyScenario, hydra_only, load, reload
from chipdse.core.scenario import load_scenario as load_hydra
from chipdse.core.solution import Solution
from chipdse.evaluators.policies import BATCHER_NAMES, SCHEDULER_NAMES, names_text
from chipdse.inputs import SCHEMAS, import_model, json_schema, params, read_qap, schema_dir, schema_text, write_schemas
from chipdse.reports.files import write_report, write_table_files
from chipdse.reports.registry import REPORTS
from chipdse.runtime.parallel import Backend
from chipdse.runtime.store import Checkpoints, ResultsStore
from chipdse.solvers.compare import comparison_rows, run_methods, validate_methods
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.qap import solve_qap
from chipdse.solvers.registry import PROBLEMS, methods_help, problem_record, problems_help
from chipdse.studies.common import Settings
from chipdse.studies.hydra.artifacts import OBJECTIVES, GeneralityResult
from chipdse.studies.hydra.generality import generality as run_generality
from chipdse.studies.hydra.simulate import empty_run_text, run_simulation
from chipdse.studies.hydra.stages import FINALIST_POINTS, finalist_design, picks_of, screen_only
from chipdse.studies.hydra.sweep import SweepResult, points_columns, summary_json
from chipdse.studies.hydra.sweep import sweep as run_sweep
from chipdse.studies.pipeline import no_progress
from chipdse.studies.registry import STUDIES

__all__ = ["CompareRun", "ExploreRun", "GeneralityRun", "SimulationRun", "SolveRun", "SweepRun", "backend",
           "compare", "empty_run_text", "explore", "generality", "grid", "help_names", "import_model", "load_hydra",
           "params", "load_scenario",
           "json_schema", "schema_dir", "schema_text", "simulate", "solve", "sweep", "write_schemas"]

ScenarioArg = str | Path | Mapping[str, Any] | AnyScenario | None
"""A scenario argument: a YAML path, the mapping a scenario file holds (relative names resolved against the working
folder; for another base use :func:`load_scenario` ``base_dir``), a scenario :func:`load_scenario` returned, or
None (the bundled default)."""

GENERALITY_OBJECTIVES = OBJECTIVES
"""The objectives of the generality matrices, in print order (``"B*"``, ``"M_T"``)."""
TABLE4_SCENARIO = "hydra-table4-chat.yaml"
"""The bundled scenario of :func:`generality` when none is given (HYDRA Table IV on the Chat trace)."""


def help_names() -> dict[str, str]:
    """The registered names the command line's help texts list, by placeholder: ``problems`` (each problem with
    its summary), ``methods`` (each problem's methods), ``schedulers`` and ``batchers`` (the simulator's policies
    as ``"a, b or c"``) and ``schemas`` (the input file kinds of ``chipdse schema``); read from the registries
    (:mod:`chipdse.solvers.registry`, :mod:`chipdse.evaluators.policies`, :mod:`chipdse.core.schemas`)."""
    return {"problems": problems_help(), "methods": methods_help(), "schedulers": names_text(SCHEDULER_NAMES),
            "batchers": names_text(BATCHER_NAMES), "schemas": names_text(tuple(SCHEMAS))}


def load_scenario(scenario: ScenarioArg = None, sets: Sequence[str] = (), *,
                  base_dir: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> AnyScenario:
    """Load and check a scenario of any kind (HYDRA, SNAKE, NOVA), from a file or a mapping, as ``chipdse explore``
    does.

    Parameters
    ----------
    scenario : str, Path, mapping or loaded scenario, optional
        The YAML file (default: the bundled ``instances/scenarios/default.yaml``), or the mapping such a file
        holds (``yaml.safe_load`` of one, or built in Python), validated exactly as the file would be; or what
        this function returned (loaded again with its own overrides, then ``sets`` and ``overrides``).
    sets : sequence of str
        ``PATH=VALUE`` overrides (``chipdse ... --set``; :mod:`chipdse.core.overrides`): scenario fields by their
        dotted path, and for HYDRA ``library.``, ``package.``, ``workload.`` paths into the files it names; the
        names of ``chipdse params``.
    base_dir : str or Path, optional
        For a mapping: the folder its relative file names (``package``, ``library``, ``workload``, model cards)
        are resolved against before ``instances/`` (default: the working folder). Errors name the scenario
        ``BASE_DIR/<dict>``. Not allowed with a file (its own folder is its base).
    overrides : mapping of str to any, optional
        ``{dotted path: value}``, the paths of ``sets`` with Python values (``{"design_space.d2d_GBps": [256,
        512]}``); applied after ``sets``. A bad path or value fails as the file would, the source ``overrides``.

    Returns
    -------
    LoadedScenario or StudyScenario
        A HYDRA scenario with its package, library, model, workload and request lengths resolved, or a SNAKE /
        NOVA scenario with its model cards found; ``.spec`` is the validated file, ``.spec.kind`` its kind.

    Raises
    ------
    SpecError
        A missing file, a malformed field, an unknown model or kind, a bad trace row, or a card the study cannot
        run, naming the file and the field (:func:`chipdse.core.scenario.load` and each study's ``check``); a bad
        ``--set`` or ``overrides`` path or value, naming it (source ``--set`` or ``overrides``); ``base_dir``
        with a file.
    """
    ovs = _sets(sets) + overrides_from_mapping(overrides)
    if isinstance(scenario, LoadedScenario | StudyScenario):
        if base_dir is not None:
            raise SpecError("base_dir", str(base_dir), "None for a loaded scenario (it keeps the folder it was "
                            "loaded from)")
        loaded = reload(scenario, ovs)
    elif isinstance(scenario, Mapping):
        loaded = load(_base_dir(base_dir), ovs, data=scenario)
    elif not isinstance(scenario, str | Path | None):
        raise SpecError("scenario", shorten(scenario), "a YAML file's path, a mapping of scenario fields, a loaded "
                        "scenario, or None (the bundled default)")
    elif base_dir is not None:
        msg = "a scenario mapping (a file's relative names resolve against its own folder; give base_dir=None)"
        raise SpecError("base_dir", str(base_dir), msg)
    else:
        loaded = load(None if scenario is None else Path(scenario), ovs)
    return STUDIES[loaded.spec.kind].check(loaded)


def _sets(sets: Sequence[str]) -> tuple[Override, ...]:
    """``sets`` parsed (:func:`chipdse.core.overrides.parse_overrides`); one string is refused, not split.

    Raises
    ------
    SpecError
        Source ``sets``: a string instead of a list of them; or as :func:`parse_overrides`.
    """
    if isinstance(sets, str | bytes):
        raise SpecError("sets", shorten(sets), "a list of PATH=VALUE strings, e.g. ['design_space.max_batch=[8]']")
    return parse_overrides(sets)


def _base_dir(base_dir: object) -> Path | None:
    """``base_dir`` as an existing folder (None stays None: the working folder).

    Raises
    ------
    SpecError
        Source ``base_dir``: not a path, or not an existing folder (a mistyped one would quietly fall back to the
        bundled files of the same names).
    """
    if base_dir is None:
        return None
    if not isinstance(base_dir, str | Path):
        raise SpecError("base_dir", shorten(base_dir), "a folder path (str or Path)")
    if not Path(base_dir).is_dir():
        raise SpecError("base_dir", str(base_dir), "an existing folder: the scenario's relative file names are "
                        "resolved there first, then in the bundled instances/")
    return Path(base_dir)


def _scenario_arg(scenario: object) -> None:
    """Refuse a scenario argument that is none of :data:`ScenarioArg`'s kinds.

    Raises
    ------
    SpecError
        Source ``scenario``.
    """
    if not isinstance(scenario, str | Path | Mapping | LoadedScenario | StudyScenario | None):
        raise SpecError("scenario", shorten(scenario), "a YAML file's path, a mapping of scenario fields, a loaded "
                        "scenario, or None (the bundled default)")


def _loaded(scenario: ScenarioArg, sets: Sequence[str] = ()) -> AnyScenario:
    """``scenario`` loaded by :func:`load_scenario` unless it already is a loaded scenario (loaded again, its own
    overrides first, when ``sets`` are given)."""
    _scenario_arg(scenario)
    if isinstance(scenario, LoadedScenario | StudyScenario):
        return STUDIES[scenario.spec.kind].check(reload(scenario, _sets(sets))) if sets else scenario
    return load_scenario(scenario, sets)


def _hydra(scenario: ScenarioArg, sets: Sequence[str] = ()) -> LoadedScenario:
    """``scenario`` as a HYDRA scenario, as :func:`_loaded`.

    Raises
    ------
    SpecError
        As :func:`load_scenario`; also a SNAKE or NOVA scenario (field ``kind``).
    """
    return hydra_only(_unchecked(scenario, sets))


def _unchecked(scenario: ScenarioArg, sets: Sequence[str] = ()) -> AnyScenario:
    """``scenario`` loaded (a loaded one again, its own overrides first, when ``sets`` are given) without its
    study's check (:func:`_hydra` and the problems check the kind themselves).

    Raises
    ------
    SpecError
        As :func:`chipdse.core.scenario.load`; a scenario argument of no known kind; a string ``sets``.
    """
    _scenario_arg(scenario)
    ovs = _sets(sets)
    if isinstance(scenario, LoadedScenario | StudyScenario):
        return reload(scenario, ovs)
    if isinstance(scenario, Mapping):
        return load(None, ovs, data=scenario)
    return load(None if scenario is None else Path(scenario), ovs)


@dataclass(frozen=True)
class ExploreRun:
    """What :func:`explore` returns: a study's result (HYDRA, SNAKE or NOVA) and its report files.

    Attributes
    ----------
    kind : str
        The scenario kind: ``"hydra"``, ``"snake"`` or ``"nova"``.
    scenario : LoadedScenario or StudyScenario
    result : ExploreResult, SnakeStudy or NovaStudy
        Every table of the study's report (``chipdse.studies.hydra.explore`` / ``snake`` / ``nova``).
    summary : dict
        The headline numbers (the manifest's ``summary``).
    headline : list[str]
        The lines ``chipdse explore`` prints.
    paths : dict[str, Path]
        The files written (``pdf``, ``csv``, ``columns``, ``manifest``); empty until :meth:`write_report`.
    """

    kind: str
    scenario: Any
    result: Any
    summary: dict[str, Any]
    headline: list[str]
    paths: dict[str, Path] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: kind, scenario name, the headline's first line and the files written."""
        head = self.headline[0] if self.headline else ""
        files = sorted(self.paths) if self.paths else "not written (write_report)"
        return (f"ExploreRun(kind={self.kind!r}, scenario={self.scenario.spec.name!r}, headline={head!r}, "
                f"files={files!r})")

    @property
    def csv_name(self) -> str:
        """File name of the study's table: ``points.csv`` (HYDRA), ``speedups.csv`` (SNAKE), ``runs.csv`` (NOVA)."""
        return REPORTS[self.kind].csv[0]

    def to_pandas(self) -> pd.DataFrame:
        """The study's table, one row per evaluated point (HYDRA: every design point of the sweep; SNAKE: every
        speedup; NOVA: every run), the columns of the CSV the report writes (described in ``docs/guide.md``)."""
        return getattr(self.result, REPORTS[self.kind].csv[1])

    def columns(self) -> pd.DataFrame:
        """The table's columns: ``column``, ``unit`` and ``description`` (the ``*.columns.csv`` beside the CSV)."""
        cols = REPORTS[self.kind].columns(self.result)
        return pd.DataFrame([(k, u, d) for k, (u, d) in cols.items()], columns=["column", "unit", "description"])

    def write_report(self, out: str | Path, csv: bool = True) -> ExploreRun:
        """Write ``report.pdf``, ``report.html`` with ``figures/`` (every plot page as PNG and SVG), the CSV, its
        column descriptions and ``manifest.json`` into ``out`` (HYDRA: also
        ``points.parquet``; ``csv=False`` leaves ``points.csv`` out, for big spaces).

        Returns
        -------
        ExploreRun
            A copy with :attr:`paths` set.

        Raises
        ------
        OSError
            The folder or a file cannot be written (:func:`chipdse.reports.files.write_report`).
        ChipdseError
            ``csv=False`` for a SNAKE or NOVA study (its table is written only as CSV).
        """
        check_points_csv(csv, self.kind, f"a kind: {self.kind} study")
        paths = write_report(self.result, REPORTS[self.kind], self.summary, Path(out), csv=csv)
        return ExploreRun(self.kind, self.scenario, self.result, self.summary, self.headline, paths)


def _num(x: float | None) -> str:
    """A number for a repr: 4 significant digits, ``None`` when missing."""
    return "None" if x is None else f"{x:.4g}"


def check_points_csv(csv: bool, kind: str, what: str) -> None:
    """Refuse leaving the CSV out (``--no-points-csv``) for a study whose table has no Parquet copy.

    Raises
    ------
    ChipdseError
        ``csv`` false and the ``kind`` study writes its table only as CSV; the message names ``what``.
    """
    if not csv and not REPORTS[kind].parquet:
        msg = (f"--no-points-csv: only HYDRA writes its table as Parquet too; {what}, whose {REPORTS[kind].csv[0]} "
               "is its only copy")
        raise ChipdseError(msg)


def explore(scenario: ScenarioArg = None, *, out: str | Path | None = None, work_limit: float | None = None,
            time_limit_s: float | None = None, seed: int | None = None, store: str | Path | None = None,
            fresh: bool = False, progress: Callable[[str, float], None] = no_progress,
            checkpoints: Checkpoints | None = None, sets: Sequence[str] = (), points_csv: bool = True) -> ExploreRun:
    """Run a scenario's study (``chipdse explore``): HYDRA's sweep, exact B* and M_T layouts, simulation and
    generality stages; or the SNAKE or NOVA study of a ``kind: snake`` / ``kind: nova`` scenario.

    Parameters
    ----------
    scenario : str, Path or loaded scenario, optional
        Default: the bundled HYDRA default (Nemotron-H-4B on the arXiv trace; about three minutes).
    out : str or Path, optional
        Also write the report (PDF, CSV, column descriptions, manifest) into this folder.
    work_limit : float, optional
        Deterministic work limit per exact solve, work units of about one CPU-second (default: the scenario's).
    time_limit_s : float, optional
        Wall-clock safety cap per exact solve, s (default: the scenario's, else 10 x the work limit + 30 s).
    seed : int, optional
        Seed of randomized heuristics and solvers, 0..2^31-1 (default: the scenario's).
    store : str or Path, optional
        HYDRA only: SQLite store of finished stages, reused by a rerun of the same inputs (``--store``).
    fresh : bool
        HYDRA only: recompute every stage even when ``store`` holds it.
    progress : callable(message, fraction)
        Called with each stage's description.
    checkpoints : Checkpoints, optional
        HYDRA only: an open store's checkpoints (what the command line passes; instead of ``store``).

    sets : sequence of str
        ``PATH=VALUE`` overrides (``--set``), as :func:`load_scenario`.
    points_csv : bool
        HYDRA only: with ``out``, also write ``points.csv`` (default); False writes the table only as
        ``points.parquet`` (``--no-points-csv``).

    Returns
    -------
    ExploreRun

    Raises
    ------
    SpecError, ChipdseError
        Bad scenario or settings (e.g. ``store`` or ``points_csv=False`` for a SNAKE or NOVA scenario);
        ``OSError`` when ``out`` cannot be written.
    """
    sc = _loaded(scenario, sets)
    study = STUDIES[sc.spec.kind]
    if not study.keeps_stages and (store is not None or fresh or checkpoints is not None):
        msg = f"store / fresh: only HYDRA scenarios keep finished stages; {sc.path} is a kind: {study.kind} study"
        raise ChipdseError(msg)
    check_points_csv(points_csv, study.kind, f"{sc.path} is a kind: {study.kind} study")
    settings = Settings(work_limit=work_limit, time_limit_s=time_limit_s, seed=seed)
    with contextlib.ExitStack() as stack:
        if checkpoints is None and store is not None:
            checkpoints = Checkpoints(stack.enter_context(ResultsStore(Path(store), "explore", "store")), fresh=fresh)
        result = study.run(sc, settings, progress, checkpoints)
    run = ExploreRun(study.kind, sc, result, study.summary(result), list(study.headline(result)))
    return run if out is None else run.write_report(out, csv=points_csv)


def backend(workers: int | None = None, dask_local: int | None = None, scheduler: str | None = None) -> Backend:
    """Where a sweep's jobs run: a local process pool of ``workers``, a local Dask cluster of ``dask_local``
    workers, the Dask cluster at ``scheduler`` (``tcp://host:8786``), or in-process when none is given.

    Raises
    ------
    ValueError
        More than one of them given.
    """
    if sum(x is not None for x in (workers, dask_local, scheduler)) > 1:
        msg = "choose at most one of --workers, --dask-local and --scheduler"
        raise ValueError(msg)
    if workers is not None:
        return Backend.processes(workers)
    if dask_local is not None:
        return Backend.dask_local(dask_local)
    return Backend.in_process() if scheduler is None else Backend.dask(scheduler)


@dataclass(frozen=True)
class SweepRun:
    """What :func:`sweep` returns.

    Attributes
    ----------
    result : chipdse.studies.hydra.sweep.SweepResult
        Every scored point per workload (``points``) and the simulated Pareto candidates (``simulated``).
    summary : dict
        The counts ``chipdse sweep --json`` prints (:func:`chipdse.studies.hydra.sweep.summary_json`).
    scenario : LoadedScenario, optional
        The swept scenario (its library names the per-type columns of :meth:`write_points`).
    """

    result: SweepResult
    summary: dict[str, Any]
    scenario: LoadedScenario | None = None

    def __repr__(self) -> str:
        """One line: the sweep's counts (points, stable, Pareto, simulated) and its wall time."""
        r = self.result
        name = self.scenario.spec.name if self.scenario is not None else None
        return (f"SweepRun(scenario={name!r}, points={r.n_points:,}, feasible={r.n_feasible:,}, stable={r.n_stable:,}, "
                f"pareto={r.n_pareto:,}, workloads={list(r.per_workload)!r}, simulated={len(r.simulated)}, "
                f"wall_s={r.wall_s:.3g})")

    def write_points(self, out: str | Path) -> dict[str, Path]:
        """Write every scored point (:meth:`to_pandas`) as ``points.parquet`` and its column descriptions as
        ``points.columns.csv`` into folder ``out`` (``chipdse sweep --out``); read back with
        ``pandas.read_parquet(out / "points.parquet")``. Returns the paths written and raises ``OSError`` as
        :func:`chipdse.reports.files.write_table_files`; ``ValueError`` when the run has no scenario."""
        if self.scenario is None:
            msg = "write_points needs the swept scenario (SweepRun.scenario)"
            raise ValueError(msg)
        tables = self.result.iter_points()
        first = next(tables)  # decoded once: it names the columns, then is written first
        return write_table_files(itertools.chain([first], tables), points_columns(self.scenario, first), Path(out))

    def to_pandas(self) -> pd.DataFrame:
        """Every scored design point, one row per (workload, point): the points.csv columns plus ``workload`` and
        ``pareto`` (on its workload's Pareto front of throughput vs TTFT)."""
        return self.result.points

    def simulated(self) -> pd.DataFrame:
        """The simulated Pareto candidates, one row each (estimator and simulator columns side by side)."""
        return self.result.simulated


def sweep(scenario: ScenarioArg = None, *, workers: int | None = None, dask_local: int | None = None,
          scheduler: str | None = None, store: ResultsStore | str | Path | None = None, fresh: bool = False,
          progress: Callable[[str, float, float], None] | None = None, sets: Sequence[str] = ()) -> SweepRun:
    """Score a HYDRA design space with the estimator on every sweep workload, then simulate its Pareto candidates
    (``chipdse sweep``).

    Parameters
    ----------
    scenario : str, Path or loaded scenario, optional
        A HYDRA scenario (default: the bundled default).
    workers, dask_local, scheduler : optional
        Where the jobs run (:func:`backend`; default in-process); ``scheduler`` is a Dask scheduler address.
    store : ResultsStore, str or Path, optional
        Results store (an open one, or a SQLite file opened and closed here): stored jobs are read, new ones
        saved as each finishes.
    fresh : bool
        Recompute every job even when stored.
    progress : callable(stage, done, total), optional
        ``"screen"`` with points scored, then ``"simulate"`` with runs finished.

    sets : sequence of str
        ``PATH=VALUE`` overrides (``--set``), as :func:`load_scenario`.
    Returns
    -------
    SweepRun

    Raises
    ------
    SpecError, ChipdseError, ValueError
        Bad scenario, a SNAKE / NOVA scenario, two back-ends, Dask missing or unreachable, no buildable point.
    """
    where = backend(workers, dask_local, scheduler)
    sc = _hydra(scenario, sets)
    with contextlib.ExitStack() as stack:
        if isinstance(store, str | Path):
            store = stack.enter_context(ResultsStore(Path(store), "sweep", "store"))
        result = run_sweep(sc, where, store=store, fresh=fresh, progress=progress)
    return SweepRun(result, summary_json(result), sc)


def _finalist(problem: str, point: str | None) -> str:
    """The finalist a HYDRA problem solves (``"b-star"`` when ``point`` is None); refused for a problem whose
    instance is not a HYDRA finalist (qap, SNAKE and NOVA problems).

    Raises
    ------
    ChipdseError
        ``point`` given for such a problem, saying which problems take it.
    ValueError
        ``point`` is not a finalist name.
    """
    finalists = [n for n, r in PROBLEMS.items() if r.scenario_kind == "hydra"]
    if point is not None and problem not in finalists:
        kind = "a QAPLIB" if problem == "qap" else f"a kind: {problem_record(problem).scenario_kind}"
        msg = (f"--point: applies to the HYDRA problems ({', '.join(finalists)}), which solve a finalist; {problem} "
               f"solves {kind} instance")
        raise ChipdseError(msg)
    point = "b-star" if point is None else point
    if point not in FINALIST_POINTS:
        msg = f"--point: must be one of {list(FINALIST_POINTS)}, got {point!r}"
        raise ValueError(msg)
    return point


def _problem_instance(problem: str, scenario: ScenarioArg, point: str, time_limit_s: float | None,
                      work_limit: float | None, sets: Sequence[str] = ()) -> tuple[Any, str, SolverConfig]:
    """Load the scenario a registered problem needs, build its instance and the solver settings.

    Returns (instance, label, config); a HYDRA problem's instance is built on the finalist ``point`` names, picked
    by the HYDRA study's screen and pick stages exactly as ``chipdse explore`` picks it
    (:func:`chipdse.studies.hydra.stages.finalist_design`: ``energy.pick`` and the power limits included); the label
    is that design's. Work limit and wall cap default to the scenario's, the seed is the scenario's (hydra) or 0.

    Raises
    ------
    ValueError, ChipdseError
        Unknown problem, a scenario of another kind or a malformed scenario.
    """
    record = problem_record(problem)
    if scenario is None and record.default_scenario is not None:
        scenario = instances_dir() / "scenarios" / record.default_scenario
    loaded = _unchecked(scenario, sets)
    kind = loaded.spec.kind
    if kind != record.scenario_kind:
        msg = f"{loaded.path}: kind: {problem} needs a kind: {record.scenario_kind} scenario, this one is kind: {kind}"
        raise ValueError(msg)
    if isinstance(loaded, LoadedScenario):
        instance, label = record.build(loaded, finalist_design(loaded, point))
        seed = loaded.spec.seed
    else:
        instance, label = record.build(loaded.spec, None)
        seed = 0
    return instance, label, SolverConfig.of(loaded.spec, work_limit, time_limit_s, seed=seed)


@dataclass(frozen=True)
class CompareRun:
    """What :func:`compare` returns: every method's solution of one instance.

    Attributes
    ----------
    problem : str
        The registered problem (``chipdse compare`` lists them).
    instance : str
        What was solved (e.g. the finalist's label).
    point : str or None
        ``"b-star"`` / ``"m-t"`` for HYDRA problems, else None.
    config : SolverConfig
        The limits and seed of every exact solve.
    solutions : list[Solution]
        One per method, in the order run.
    """

    problem: str
    instance: str
    point: str | None
    config: SolverConfig
    solutions: list[Solution]

    def __repr__(self) -> str:
        """One line: problem, instance, and per method its objective and proven gap."""
        per = ", ".join(f"{sol.method}: {_num(sol.objective)} (gap {_num(sol.gap)})" for sol in self.solutions)
        return f"CompareRun(problem={self.problem!r}, instance={self.instance!r}, methods={{{per}}})"

    def rows(self) -> list[dict[str, Any]]:
        """One dict per method: ``design`` (the finalist's label for HYDRA problems, else None), method, exact,
        objective, ``objective_unit`` (of objective and bound), bound, gap (own, proven), gap_to_best_bound, status,
        termination (the limit or event that ended the solve), wall_s, reason
        (:func:`chipdse.solvers.compare.comparison_rows`)."""
        design = self.instance if self.point is not None else None
        unit = problem_record(self.problem).kind.unit
        return [{"design": design, **row, "objective_unit": unit} for row in comparison_rows(self.solutions)]

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`rows` as a table, one row per method (the CSV ``chipdse compare --csv`` writes)."""
        return pd.DataFrame(self.rows())


def compare(problem: str, scenario: ScenarioArg = None, *, methods: Sequence[str] | None = None,
            point: str | None = None, work_limit: float | None = None,
            time_limit_s: float | None = None, sets: Sequence[str] = ()) -> CompareRun:
    """Run every method (or ``methods``) of one decision problem on a scenario's instance (``chipdse compare``).

    Parameters
    ----------
    problem : str
        A registered problem (:data:`chipdse.solvers.registry.PROBLEMS`), e.g. ``"placement"``.
    scenario : str, Path or loaded scenario, optional
        A scenario of the problem's kind (default: the bundled default of that kind).
    methods : list[str], optional
        Methods to run (default: every method except brute force).
    point : str, optional
        HYDRA problems: the finalist, ``"b-star"`` (default) or ``"m-t"``.
    work_limit, time_limit_s : float, optional
        Deterministic work limit (work units) and wall-clock cap (s) per exact solve (default: the scenario's).

    sets : sequence of str
        ``PATH=VALUE`` overrides (``--set``), as :func:`load_scenario`.
    Returns
    -------
    CompareRun

    Raises
    ------
    ValueError, ChipdseError
        Unknown problem or method, a bad ``point``, a scenario of another kind or a malformed scenario.
    """
    validate_methods(problem, methods)
    point = _finalist(problem, point)
    instance, label, cfg = _problem_instance(problem, scenario, point, time_limit_s, work_limit, sets)
    hydra = problem_record(problem).scenario_kind == "hydra"
    return CompareRun(problem, label, point if hydra else None, cfg, run_methods(problem, instance, methods, cfg))


@dataclass(frozen=True)
class SolveRun:
    """What :func:`solve` returns: one method's solution of one instance.

    Attributes
    ----------
    problem, instance, method : str
        The problem (``"qap"`` or a registered one), what was solved, and the method (for qap: the solver).
    solution : Solution
    extra : dict
        ``n`` (the QAPLIB instance's size) for qap, else empty.
    """

    problem: str
    instance: str
    method: str
    solution: Solution
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: problem, instance, method, objective, proven gap, status and what ended the solve."""
        sol = self.solution
        return (f"SolveRun(problem={self.problem!r}, instance={self.instance!r}, method={self.method!r}, "
                f"objective={_num(sol.objective)}, gap={_num(sol.gap)}, status={sol.status.value!r}, "
                f"termination={sol.termination.value!r})")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``chipdse solve --json`` prints: problem, instance, ``design`` (the finalist's label for
        a HYDRA problem, else None), method (solver for qap), objective, ``objective_unit`` (of objective and bound),
        bound, gap, status, termination (the limit or event that ended the solve), wall_s, reason (and permutation
        for qap)."""
        sol = self.solution
        head = ({"problem": "qap", "instance": self.instance, "design": None, **self.extra, "solver": self.method}
                if self.problem == "qap" else {"problem": self.problem, "instance": self.instance,
                                               "design": self.extra.get("design"), "method": self.method})
        unit = "QAP cost" if self.problem == "qap" else problem_record(self.problem).kind.unit
        out = {**head, "objective": sol.objective, "objective_unit": unit, "bound": sol.bound, "gap": sol.gap,
               "status": sol.status.value, "termination": sol.termination.value, "wall_s": sol.wall_s,
               "reason": sol.reason}
        if self.problem == "qap":
            out["permutation"] = sol.decision
        return out

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`to_dict` as a one-row table."""
        return pd.DataFrame([self.to_dict()])


def solve(problem: str, path: ScenarioArg | QapInstance = None, *, method: str | None = None, solver: str | None = None,
          point: str | None = None, work_limit: float | None = None, time_limit_s: float | None = None,
          sets: Sequence[str] = ()) -> SolveRun:
    """Solve one decision problem with one method (``chipdse solve``): a QAPLIB file with the placement
    formulation in QAP mode (``problem="qap"``, ``solver`` highs, cpsat, bnb or glb), or a registered problem on a
    scenario's instance with ``method``.

    Parameters
    ----------
    problem : str
        ``"qap"`` or a registered problem.
    path : str, Path, QapInstance or loaded scenario, optional
        qap: the QAPLIB ``.dat`` file or its parsed :class:`~chipdse.core.qaplib.QapInstance` (required);
        otherwise a scenario of the problem's kind (default: the bundled default of that kind).
    method : str
        The method of a registered problem (required for those; not for qap).
    solver : str, optional
        qap only: ``highs`` (default), ``cpsat``, ``bnb`` (RLT-1 dual ascent) or ``glb`` (Gilmore-Lawler).
    point : str, optional
        HYDRA problems: ``"b-star"`` (default) or ``"m-t"``.
    work_limit, time_limit_s : float, optional
        Work limit (work units; qap default 60) and wall-clock cap (s) of the solve.

    sets : sequence of str
        ``PATH=VALUE`` overrides (``--set``), as :func:`load_scenario`.
    Returns
    -------
    SolveRun

    Raises
    ------
    ValueError, ChipdseError
        An unknown problem or method, a missing QAPLIB file or method, an option that does not apply, a bad file.
    """
    if problem != "qap" and problem not in PROBLEMS:
        msg = f"PROBLEM: must be one of {['qap', *PROBLEMS]}, got {problem!r}"
        raise ValueError(msg)
    if problem == "qap":
        if path is None:
            msg = "chipdse solve qap needs a QAPLIB .dat file"
            raise ValueError(msg)
        if method is not None:
            msg = "chipdse solve qap takes --solver highs|cpsat|bnb|glb, not --method"
            raise ValueError(msg)
        _finalist(problem, point)
        solver = "highs" if solver is None else solver
        inst = path if isinstance(path, QapInstance) else read_qap(path)  # type: ignore[arg-type]
        sol = solve_qap(inst, solver, SolverConfig(work_limit=work_limit or 60.0, time_limit_s=time_limit_s or 0.0))
        return SolveRun("qap", inst.name, solver, sol, {"n": inst.n})
    if solver is not None:
        msg = (f"--solver: applies to chipdse solve qap only; {problem} chooses its method with --method (one of "
               f"{list(problem_record(problem).methods)})")
        raise ChipdseError(msg)
    if method is None:
        msg = f"--method is required for {problem!r} (chipdse compare {problem} lists the methods)"
        raise ValueError(msg)
    validate_methods(problem, [method], option="--method")
    point = _finalist(problem, point)
    if isinstance(path, QapInstance):
        msg = f"{problem} solves a scenario, not a QAPLIB instance ({path.name})"
        raise ValueError(msg)
    instance, label, cfg = _problem_instance(problem, path, point, time_limit_s, work_limit, sets)
    hydra = problem_record(problem).scenario_kind == "hydra"
    return SolveRun(problem, label, method, run_methods(problem, instance, [method], cfg)[0],
                    {"design": label} if hydra else {})


@dataclass(frozen=True)
class SimulationRun:
    """What :func:`simulate` returns.

    Attributes
    ----------
    metrics : dict
        The JSON object ``chipdse simulate --json`` prints (:func:`chipdse.studies.hydra.simulate.run_simulation`):
        ``throughput_tps``, ``ttft_s`` / ``tbt_s`` / ``e2e_s`` (mean, p50, p99, count), ``utilization``,
        ``preemptions``, ``requests_arrived`` / ``requests_finished``, ``overloaded``, ``empty``, ...
    """

    metrics: dict[str, Any]

    def __repr__(self) -> str:
        """One line: throughput, TTFT p50 / p99 and the requests finished of those arrived."""
        m = self.metrics
        ttft = m.get("ttft_s") or {}
        return (f"SimulationRun(throughput_tps={m.get('throughput_tps')!r}, ttft_s_p50={ttft.get('p50')!r}, "
                f"ttft_s_p99={ttft.get('p99')!r}, finished={m.get('requests_finished')!r}, "
                f"arrived={m.get('requests_arrived')!r})")

    def to_pandas(self) -> pd.DataFrame:
        """The metrics as one row, nested keys joined with dots (e.g. ``ttft_s.p99``, ``utilization.links.max``)."""
        return pd.json_normalize(self.metrics)


def simulate(scenario: ScenarioArg = None, *, point: str | int = "best", duration_s: float | None = None,
             rate_rps: float | None = None, scheduler: str = "static", batching: str | None = None,
             seed: int | None = None, sets: Sequence[str] = ()) -> SimulationRun:
    """Place (``hbm-enum``), map (``lpt-greedy``) and run the event simulator on one design point
    (``chipdse simulate``).

    Parameters
    ----------
    scenario : str, Path or loaded scenario, optional
        A HYDRA scenario (default: the bundled default).
    point : "best" or int
        ``"best"`` (B*) or a row id of the estimator table (its ``point`` column).
    duration_s : float, optional
        Simulated window, s (default: the workload's ``duration_s``).
    rate_rps : float, optional
        Mean arrival rate, requests/s (default: the workload's).
    scheduler : str
        Task scheduler: static, fcfs, work-stealing or elastic.
    batching : str, optional
        static or dynamic (default: the scenario's ``estimator.batching``).
    seed : int, optional
        Simulator seed (default: the scenario's).

    sets : sequence of str
        ``PATH=VALUE`` overrides (``--set``), as :func:`load_scenario`.
    Returns
    -------
    SimulationRun
        Its ``metrics["empty"]`` is True when no request finished (the command line then fails).

    Raises
    ------
    ValueError, ChipdseError
        An unknown scheduler or batcher, a bad point, a SNAKE / NOVA or malformed scenario.
    """
    if scheduler not in SCHEDULER_NAMES:
        msg = f"--scheduler: must be one of {list(SCHEDULER_NAMES)}, got {scheduler!r}"
        raise ValueError(msg)
    sc = _hydra(scenario, sets)
    return SimulationRun(run_simulation(sc, point, duration_s=duration_s, rate_rps=rate_rps, scheduler=scheduler,
                                        batching=batching, seed=seed))


GRID_ROWS = ("finalists", "pareto", "points")
"""What :func:`grid` keeps of each screened combination: B* and M_T, the Pareto front, or every point."""


def grid(scenario: ScenarioArg = None, axes: Mapping[str, Sequence[Any]] | None = None, *,
         base_dir: str | Path | None = None, overrides: Mapping[str, Any] | None = None, rows: str = "finalists",
         progress: bool | Callable[[str, float, float], None] = False) -> pd.DataFrame:
    """Screen a HYDRA scenario once per combination of override values and return one table (a notebook's
    parameter study: ``chipdse sweep`` without the simulation, over knobs the design space does not vary).

    Parameters
    ----------
    scenario : str, Path, mapping or loaded scenario, optional
        As :func:`load_scenario` (a file, the mapping one holds, or a loaded scenario; default the bundled one).
    axes : mapping of str to sequence
        ``{dotted path: [value, ...]}``: every combination (the Cartesian product, first axis slowest) is loaded
        with those values as overrides, e.g. ``{"library.compute.Ad.utilization": [0.5, 0.7, 0.9],
        "design_space.d2d_GBps": [[256], [512], [1024]]}`` (a list field takes a list per value).
    base_dir, overrides
        As :func:`load_scenario`; ``overrides`` apply to every combination, the axes' values after them.
    rows : str
        What each combination adds (:data:`GRID_ROWS`): ``"finalists"`` its B* and M_T (picked as explore picks
        them, :func:`chipdse.studies.hydra.stages.screen_and_pick`), ``"pareto"`` its throughput-TTFT Pareto
        front, ``"points"`` every scored point.
    progress : bool or callable(stage, done, total)
        True: a bar (rich; in a terminal or a notebook); a callable gets ``("grid", combinations done, total)``.

    Returns
    -------
    pandas.DataFrame
        One row per kept point of each combination: ``combination`` (0-based), one column per axis (named by its
        path; a list value as a tuple), then the ``points.csv`` columns (:mod:`chipdse.studies.hydra.columns`),
        with ``role`` (``B*``, ``M_T`` or ``B*,M_T``) for ``rows="finalists"``. A combination with nothing to
        keep (no buildable or no stable point) has one row with ``combination_reason``, the cause explore would
        print (the column is absent when every combination has points).

    Raises
    ------
    SpecError
        A bad scenario, an axis that is not a non-empty list, a bad path or value (source ``overrides``, naming
        the combination's override; every combination is loaded and checked before the first is screened); a
        SNAKE or NOVA scenario (field ``kind``).
    ValueError
        ``rows`` not one of :data:`GRID_ROWS`; ``progress`` neither a bool nor a callable.
    """
    if rows not in GRID_ROWS:
        msg = f"rows: must be one of {list(GRID_ROWS)}, got {rows!r}"
        raise ValueError(msg)
    if not (isinstance(progress, bool) or callable(progress)):
        msg = f"progress: must be True, False or a callable(stage, done, total), got {progress!r}"
        raise ValueError(msg)
    if overrides is not None and not isinstance(overrides, Mapping):
        raise SpecError("overrides", shorten(overrides), "a mapping of dotted paths to values, e.g. "
                        "{'design_space.max_batch': [8]}")
    if not isinstance(axes, Mapping) or not axes:
        raise SpecError("grid", "axes", "a mapping of dotted paths to lists of values, e.g. "
                        "{'library.compute.Ad.utilization': [0.5, 0.7, 0.9]}")
    for path, values in axes.items():
        if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence) or not values:
            raise SpecError("grid", f"axes[{path!r}]", f"a non-empty list of values, got {shorten(values)}")
    combos = list(itertools.product(*axes.values()))
    # every combination loaded (and so checked) before any is screened: a bad value fails at once
    loaded = [hydra_only(load_scenario(scenario, base_dir=base_dir,
                                       overrides={**(overrides or {}), **dict(zip(axes, combo, strict=True))}))
              for combo in combos]
    frames = []
    with _grid_progress(progress, len(combos)) as step:
        for i, (combo, sc) in enumerate(zip(combos, loaded, strict=True)):
            head = {"combination": i, **{p: (tuple(v) if isinstance(v, list) else v) for p, v in zip(axes, combo,
                                                                                                  strict=True)}}
            try:
                frames.append(_grid_rows(sc, rows, head))
            except InfeasibleDesignError as exc:  # this combination has nothing to keep: say why, go on
                frames.append(pd.DataFrame([{**head, "combination_reason": str(exc)}]))
            step(i + 1)
    return pd.concat(frames, ignore_index=True).astype({"combination": int})


def _grid_rows(sc: LoadedScenario, rows: str, head: dict[str, Any]) -> pd.DataFrame:
    """One combination's rows of :func:`grid`: ``head``'s columns, then the kept points' columns."""
    screen, table = screen_only(sc)
    frame = table.frame
    if rows == "finalists":
        roles = picks_of(sc, screen, table).roles()
        frame = frame.loc[list(roles)].assign(role=list(roles.values()))
    elif rows == "pareto":
        frame = frame[frame["pareto"]]
        if frame.empty:
            picks_of(sc, screen, table)  # no stable point: raises its cause
    lead = pd.DataFrame({k: [v] * len(frame) for k, v in head.items()}, index=frame.index)  # tuples kept whole
    return pd.concat([lead, frame], axis=1)


@contextlib.contextmanager
def _grid_progress(progress: bool | Callable[[str, float, float], None], total: int
                   ) -> Iterator[Callable[[int], None]]:
    """A step function for :func:`grid`: a rich bar (``progress=True``), the caller's callable, or nothing."""
    if callable(progress):
        progress("grid", 0, total)
        yield lambda done: progress("grid", done, total)
    elif progress:
        with Progress(transient=False) as bar:
            task = bar.add_task("grid: screening combinations", total=total)
            yield lambda done: bar.update(task, completed=done)
    else:
        yield lambda done: None


@dataclass(frozen=True)
class GeneralityRun:
    """What :func:`generality` returns.

    Attributes
    ----------
    scenario : LoadedScenario
        The scenario whose design space, package, library and workload were used.
    result : chipdse.studies.hydra.generality.GeneralityResult
        ``scores[objective]`` and ``stable[objective]`` (target set x model), ``designs``, ``optima``, ``to_json()``.
    """

    scenario: LoadedScenario
    result: GeneralityResult

    def __repr__(self) -> str:
        """One line: the scenario, the models and the objectives scored."""
        models = [str(m) for m in next(iter(self.result.scores.values())).columns] if self.result.scores else []
        return (f"GeneralityRun(scenario={self.scenario.spec.name!r}, models={models!r}, "
                f"objectives={list(self.result.scores)!r})")

    def to_pandas(self) -> pd.DataFrame:
        """The matrices in long form: one row per (objective, target set, model) with ``score`` (the target
        design's score over the model's own optimum, HYDRA Table IV) and ``stable`` (at the offered load)."""
        rows = [(obj, target, model, float(score), bool(self.result.stable[obj].loc[target, model]))
                for obj, df in self.result.scores.items() for target, row in df.iterrows()
                for model, score in row.items()]
        return pd.DataFrame(rows, columns=["objective", "target", "model", "score", "stable"])


def generality(scenario: ScenarioArg = None, models: Sequence[str] | None = None) -> GeneralityRun:
    """Specialization vs generality (HYDRA Table IV, ``chipdse generality``): the design for every subset of the
    models, scored on all.

    Parameters
    ----------
    scenario : str, Path or loaded scenario, optional
        Default: the bundled Table IV scenario (``instances/scenarios/hydra-table4-chat.yaml``).
    models : list[str], optional
        At least two models (bundled keys or card paths; default: the scenario's ``generality.models``).

    Returns
    -------
    GeneralityRun

    Raises
    ------
    ChipdseError, ValueError
        Fewer than two models, a malformed scenario or an incompatible model.
    """
    sc = _hydra(instances_dir() / "scenarios" / TABLE4_SCENARIO if scenario is None else scenario)
    if models is not None and len(models) < 2:
        msg = "--model: give at least two models to compare"
        raise ChipdseError(msg)
    return GeneralityRun(sc, run_generality(sc, None if models is None else list(models)))
