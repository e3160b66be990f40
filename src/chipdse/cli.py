"""The ``chipdse`` command line."""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

import chipdse
from chipdse.core.errors import ChipdseError
from chipdse.core.io import atomic_path, ensure_writable_dir, remove_if_empty
from chipdse.core.overrides import parse_overrides
from chipdse.core.specs import MAX_SEED, MAX_TIME_LIMIT_S
from chipdse.runtime.store import Checkpoints, ResultsStore

API_MODULE = "chipdse.api"
"""The module every command runs (:mod:`chipdse.api`), imported only when a command runs: see :func:`_api`."""


def _api() -> ModuleType:
    """The Python API (:mod:`chipdse.api`), imported on first use.

    One of the two deferred imports of the command line (with :func:`_inputs`), so that ``import chipdse.cli``,
    ``chipdse --help`` and a command refused for bad options load neither Pyomo, OR-Tools, SciPy, pandas nor
    matplotlib (tests/test_startup.py checks the import set). It goes through :func:`importlib.import_module` on
    purpose: the project forbids function-local ``import`` statements (tests/test_layers.py), and the layers
    contract still holds (the API is the layer just below the command line).
    """
    return importlib.import_module(API_MODULE)


INPUTS_MODULE = "chipdse.inputs"
"""The light half of the API (:mod:`chipdse.inputs`): what ``schema``, ``params``, ``model import`` and the file
check of ``solve qap`` load instead of :data:`API_MODULE`."""


def _inputs() -> ModuleType:
    """The light half of the API (:mod:`chipdse.inputs`: schemas, parameter registers, model import, QAPLIB
    files), imported on first use like :func:`_api`, and without Pyomo, OR-Tools, SciPy's statistics, pandas or
    matplotlib (tests/test_startup.py)."""
    return importlib.import_module(INPUTS_MODULE)


class _LateHelpCommand(typer.core.TyperCommand):
    """A command whose option help names registered problems, methods or simulator policies.

    Those lists live in the registries (which import the solvers), so a help text holds placeholders
    (``{problems}``, ``{methods}``, ``{schedulers}``, ``{batchers}``: the keys of :func:`chipdse.api.help_names`)
    that are filled in only when this command's help is printed.
    """

    def format_help(self, ctx: typer._click.Context, formatter: typer._click.HelpFormatter) -> None:
        """Fill in the placeholders of every parameter's help, then format the help as Typer does."""
        names = _api().help_names()
        for param in self.params:
            text = getattr(param, "help", None)
            if text:
                for key, value in names.items():
                    text = text.replace("{" + key + "}", value)
                param.help = text
        super().format_help(ctx, formatter)


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="chipdse: exact layout and split optimization for LLM-serving chiplet hardware, with Pareto reports.",
)
err = Console(stderr=True, soft_wrap=True)  # one message, one line: never wrapped at 80 columns when piped

EXIT_USER_ERROR = 2


class RateColumn(ProgressColumn):
    """Units per second of a progress task (points/s or runs/s), from rich's speed estimate."""

    def render(self, task: Task) -> Text:
        """Return e.g. ``"41,230 points/s"``; empty until rich has a speed estimate."""
        speed = task.speed
        return Text("" if speed is None else f"{speed:,.0f} {task.fields.get('unit', '')}/s")


def _finite(lo: float, hi: float) -> Callable[[str], float]:
    """Parser of a float option: a finite number in ``[lo, hi]`` (``nan`` and ``inf`` are not numbers of a
    limit, a rate or a window), else a one-line usage error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            msg = f"must be a number, got {text!r}"
            raise typer.BadParameter(msg) from None
        if not math.isfinite(value):
            msg = f"must be a finite number, got {text!r}"
            raise typer.BadParameter(msg)
        if not lo <= value <= hi:
            msg = f"must be between {lo:g} and {hi:g}, got {text}"
            raise typer.BadParameter(msg)
        return value

    return parse


def _path_option(option: str, text: str | None) -> Path | None:
    """A path option's value: None when not given; an empty string is refused (it would mean the current folder).

    Raises
    ------
    ChipdseError
        ``text`` is empty or blank, naming ``option``.
    """
    if text is None:
        return None
    if not text.strip():
        msg = f"{option}: a path, got an empty string"
        raise ChipdseError(msg)
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):  # a newline or tab in a folder name is a typo
        msg = f"{option}: a path without control characters (newline, tab, ...), got {text!r}"
        raise ChipdseError(msg)
    return Path(text)


SetOption = Annotated[list[str] | None, typer.Option(
    "--set", metavar="PATH=VALUE",
    help="Change one scenario or register value by its dotted path before validation (repeat the option), e.g. "
    "simulation.static_batch_timeout_s=0.5, library.compute.Ap.utilization=0.7, energy.table.hbm3_read=2.5; the "
    "names are chipdse params' name column.", show_default=False)]
"""The ``--set PATH=VALUE`` option of explore, sweep, simulate, compare and solve (:mod:`chipdse.core.overrides`)."""


def _applies(option: str, given: bool, where: str) -> None:
    """Refuse an option that does not apply here, saying where it applies (an option is never silently ignored).

    Raises
    ------
    ChipdseError
        ``given`` is true; the message is ``"<option>: <where>"``.
    """
    if given:
        msg = f"{option}: {where}"
        raise ChipdseError(msg)


def _error_line(text: object) -> None:
    """Print ``error: <text>`` on one line of stderr (newlines in ``text`` become spaces)."""
    line = " ".join(str(text).split())
    err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)


def _fail(exc: BaseException | str) -> None:
    _error_line(exc)
    raise typer.Exit(EXIT_USER_ERROR)


def error_json(exc: BaseException | str, field: str | None = None) -> dict[str, str | None]:
    """The JSON form of an error of ``chipdse simulate --json``: ``{"error": line, "file": ..., "field": ...}``.

    ``error`` is the one-line message; ``file`` the input file it names (a ``SpecError``'s source, an
    ``OSError``'s file name), else ``None``; ``field`` the offending field or option (a ``SpecError``'s field,
    ``field`` when given), else ``None``.
    """
    if isinstance(exc, OSError):
        text = _os_error_text(exc, [])
        file = None if exc.filename is None else os.fsdecode(exc.filename)
    else:
        text, file = str(exc), getattr(exc, "source", None)
    if file == "--set":  # an override, not a file: the option is the field
        return {"error": " ".join(text.split()), "file": None, "field": f"--set {getattr(exc, 'field', '')}"}
    option = text.split(":", 1)[0] if text.startswith("--") and ":" in text else None  # "--point: must be ..."
    return {"error": " ".join(text.split()), "file": file or None,
            "field": getattr(exc, "field", None) or field or option}


def _fail_as(as_json: bool, exc: BaseException | str, field: str | None = None) -> None:
    """Fail with exit 2: with ``as_json`` the error is one JSON object on stdout (:func:`error_json`) and its
    line on stderr; else the line on stderr (:func:`_fail`)."""
    if as_json:
        typer.echo(json.dumps(error_json(exc, field)))
    _fail(_os_error_text(exc, []) if isinstance(exc, OSError) else exc)


def _print_version(value: bool) -> None:
    """``--version``: print ``chipdse <version>`` (the installed distribution's) and exit 0."""
    if value:
        typer.echo(f"chipdse {chipdse.__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print chipdse's version and exit.")] = False,
) -> None:
    """Solver-based design-space exploration for LLM serving on chiplets and near-memory stacks."""


@app.command()
def explore(
    scenario: Annotated[Path | None, typer.Argument(metavar="SCENARIO",
        help="Scenario YAML. Default: the bundled Nemotron-H-4B on the arXiv trace "
             "(instances/scenarios/default.yaml).", show_default=False)] = None,
    out_text: Annotated[str | None, typer.Option(
        "--out", metavar="PATH",
        help="Output folder for report.pdf, report.html with figures/, a CSV (points.csv; speedups.csv for "
                      "SNAKE, runs.csv for NOVA) and manifest.json. "
                      "Default: reports/out/<scenario name>/.", show_default=False)] = None,
    work_limit: Annotated[float | None, typer.Option(
        "--work-limit", min=0.001, max=MAX_TIME_LIMIT_S, parser=_finite(0.001, MAX_TIME_LIMIT_S),
        help="Deterministic work limit per exact solve, work "
        "units of about one CPU-second (default: the scenario's): the same result on a busy or an idle machine.",
        show_default=False)] = None,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", min=0.1, max=MAX_TIME_LIMIT_S, parser=_finite(0.1, MAX_TIME_LIMIT_S),
        help="Wall-clock safety cap per exact solve in seconds "
        "(default: the scenario's, else 10 x the work limit + 30 s); a solve it ends depends on machine load.",
        show_default=False)] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", min=0, max=MAX_SEED, help="Seed for randomized heuristics and solvers, 0..2^31-1 (default: the "
        "scenario's); SNAKE and NOVA: also the study's random draws, in place of serving.seed / experts.seed.",
        show_default=False)] = None,
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="HYDRA: recompute every stage, even those kept in the store.")] = False,
    store_text: Annotated[str | None, typer.Option(
        "--store", metavar="PATH",
        help="HYDRA: SQLite store of finished stages (sweep, B*, M_T, simulation, generality); each is "
                        "kept as it finishes and reused by a rerun of the same inputs, so Ctrl-C loses only the "
                        "stage in progress. Default: explore.sqlite in the output folder.",
        show_default=False)] = None,
    sets: SetOption = None,
    points_csv: Annotated[bool, typer.Option(
        "--points-csv/--no-points-csv",
        help="HYDRA: write points.csv beside points.parquet (default); --no-points-csv writes the scored points "
             "only as points.parquet, about a fifth of the CSV's size on a big space.")] = True,
) -> None:
    """Sweep a scenario's design space, solve B* and M_T layouts exactly and with heuristics, write a PDF report
    (a kind: snake or kind: nova scenario runs that study instead)."""
    created: list[Path] = []
    kept = _KeptStages()
    hydra = False
    out_dir: Path | None = None
    store_path: Path | None = None
    try:
        out, store_path = _path_option("--out", out_text), _path_option("--store", store_text)
        api = _api()
        sc = api.load_scenario(scenario, sets or ())
        kind = sc.spec.kind
        out_dir = out if out is not None else Path("reports") / "out" / sc.spec.name
        hydra = kind == "hydra"
        if not hydra:
            keeps = (f"only HYDRA scenarios keep finished stages; {sc.path} is a kind: {kind} study, which runs "
                     "in seconds and keeps nothing")
            _applies("--store", store_path is not None, keeps)
            _applies("--fresh", fresh, keeps)
        created = ensure_writable_dir(out_dir, "--out")
        api.check_points_csv(points_csv, kind, f"{sc.path} is a kind: {kind} study")
        for line in api.STUDIES[kind].warnings(sc):  # after every option check, before any heavy work
            typer.echo(f"warning: {line}", err=True)
        with contextlib.ExitStack() as stack:
            checkpoints = kept.open(store_path or out_dir / HYDRA_STORE, fresh, stack) if hydra else None
            bar = stack.enter_context(Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                               console=err, transient=True, disable=not err.is_terminal))
            task = bar.add_task(api.STUDIES[kind].label(sc), total=None)
            log = _LineLog() if not sys.stdout.isatty() else None
            shown = [""]

            def progress(msg: str, frac: float) -> None:
                # each message is a stage (or step): its own bar, elapsed time and ETA; a stage that counts its
                # work (the simulation runs) moves the bar, the others spin
                if msg != shown[0]:
                    shown[0] = msg
                    bar.reset(task, total=None if frac <= 0 else 1.0, completed=frac, description=msg)
                else:
                    bar.update(task, total=1.0, completed=frac)
                if log is not None:
                    log(msg)

            run = api.explore(sc, work_limit=work_limit, time_limit_s=time_limit, seed=seed, progress=progress,
                              checkpoints=checkpoints, points_csv=points_csv)
            bar.update(task, description="writing the report")
            if log is not None:
                log("writing the report")
            kept.report_files = [out_dir / n for n in ("report.pdf", "report.html", "figures", run.csv_name,
                                                       "manifest.json", "claims.csv",
                                                       "claims.columns.csv", Path(run.csv_name).stem + ".columns.csv",
                                                       Path(run.csv_name).stem + ".parquet")]
            kept.writing = True
            run = run.write_report(out_dir, csv=points_csv)
            bar.update(task, description="done", total=1, completed=1)
            if log is not None:
                log("done")
    except (ChipdseError, OSError) as exc:
        kept.discard_new_store()
        _fail_output(exc, created, [out_dir, store_path])
    except KeyboardInterrupt:
        kept.interrupted(hydra, created)
    except Exception as exc:  # Ctrl-C inside a library that turns it into another error (pyomo's config casts)
        if not from_interrupt(exc):
            raise
        kept.interrupted(hydra, created)
    for line in run.headline:
        typer.echo(line)
    for kind, p in run.paths.items():
        typer.echo(f"wrote {kind}: {p}")


class _LineLog:
    """Progress as lines when stdout is not a terminal (``chipdse explore > log.txt``, CI, a notebook): each new
    message once, stamped with the wall seconds since the start and the CPU seconds of this process and its finished
    workers (a pool's workers count once their pool has shut down)."""

    def __init__(self) -> None:
        self._clock = time.perf_counter
        self._t0, self._c0 = self._clock(), self._cpu_s()
        self._last = ""

    @staticmethod
    def _cpu_s() -> float:
        if resource is None:  # not on this platform: this process only
            return time.process_time()
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    def __call__(self, msg: str) -> None:
        if msg == self._last:
            return
        self._last = msg
        typer.echo(f"[{self._clock() - self._t0:7.1f} s, {self._cpu_s() - self._c0:7.1f} CPU-s] {msg}")
        sys.stdout.flush()


def _resume_hint(fresh: bool, what: str) -> str:
    """How to resume an interrupted run: the same command, or without ``--fresh`` (which would recompute every
    kept ``what`` again)."""
    if fresh:
        return f"rerun the command without --fresh to resume (with it, every {what} is recomputed)"
    return f"rerun the same command to resume (--fresh recomputes every {what})"


HYDRA_STORE = "explore.sqlite"
"""File name of HYDRA explore's store of finished stages, in the output folder (``--store`` overrides)."""


def from_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was being handled (its cause or context chain holds
    one): a library's bare ``except:`` that re-raises as another error (pyomo's configuration casts turn a Ctrl-C
    during a solver call into a ValueError) must still end the run as an interrupt, exit 130."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _store_files(path: Path) -> list[Path]:
    """A SQLite store and its write-ahead-log companions."""
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _say(line: str) -> None:
    """One line on stderr, never wrapped and never read as rich markup (paths may hold brackets)."""
    err.print(line, markup=False, highlight=False, soft_wrap=True)


@dataclass
class _KeptStages:
    """What ``chipdse explore`` keeps of a run: its store of finished stages, and which report files it writes."""

    path: Path | None = None
    new_store: bool = False
    checkpoints: Checkpoints | None = None
    report_files: list[Path] = field(default_factory=list)
    writing: bool = False
    fresh: bool = False

    def open(self, path: Path, fresh: bool, stack: contextlib.ExitStack) -> Checkpoints:
        """Open (or create) the store at ``path``, closed with ``stack``, and return the run's checkpoints.

        Raises
        ------
        ChipdseError
            ``path`` is a folder, or not a store.
        """
        if path.is_dir():
            msg = f"--store {path}: is a directory; give the path of a store file (e.g. {path / HYDRA_STORE})"
            raise ChipdseError(msg)
        self.path, self.new_store, self.fresh = path, not path.exists(), fresh
        store = stack.enter_context(ResultsStore(path, "explore", "--store"))
        self.checkpoints = Checkpoints(store, fresh=fresh, on_stage=self.announce)
        return self.checkpoints

    def announce(self, stage: str, note: str, read: bool) -> None:
        """:class:`Checkpoints` ``on_stage``: say so when a stage was read from the store."""
        if read:
            _say(f"read from {self.path}: {stage} ({note}); not recomputed")

    def discard_new_store(self) -> None:
        """Delete the store when this run created it (a failed run leaves no file behind)."""
        if self.path is not None and self.new_store:
            for leftover in _store_files(self.path):
                leftover.unlink(missing_ok=True)

    def interrupted(self, hydra: bool, created: list[Path]) -> None:
        """Ctrl-C: remove report files being written, say what is kept where, and exit 130.

        ``hydra`` is False for a study that keeps nothing (SNAKE, NOVA); ``created`` are the output folders this
        run created (removed when left empty).
        """
        if self.writing:  # a report half written is no report: the rerun writes it again from the store
            for p in self.report_files:
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink(missing_ok=True)
        kept = [] if self.checkpoints is None else self.checkpoints.kept
        if not hydra:
            remove_if_empty(created)
            _say("interrupted: a SNAKE or NOVA study keeps nothing (it runs in seconds); no report written")
            raise typer.Exit(130)
        if not kept:
            self.discard_new_store()
            remove_if_empty(created)
            _say("interrupted: no stage had finished; nothing kept")
            raise typer.Exit(130)
        for stage, note in kept:
            _say(f"interrupted: kept {stage} ({note}) in {self.path}")
        _say(_resume_hint(self.fresh, "stage"))
        raise typer.Exit(130)


def _fail_output(exc: BaseException, created: list[Path], outputs: Sequence[Path | None] = ()) -> None:
    """Exit with a one-line error after removing the output folders this run created (still empty).

    An OSError names the file it is about: "cannot write output" only when that file is one of ``outputs`` (the
    output folder, store or CSV, or inside them); any other file is an input the run could not read.
    """

    remove_if_empty(created)
    if isinstance(exc, OSError) and not isinstance(exc, ChipdseError) and "output folder" not in str(exc):
        _fail(_os_error_text(exc, [o for o in outputs if o is not None]))
    _fail(exc)


def _fail_writing(exc: BaseException, created: list[Path], output: Path | None) -> None:
    """Exit 2 with one line after removing the output folders this run created (still empty): a bad input or
    option (``ChipdseError``, ``ValueError``) in its own words, any other ``OSError`` as a failure to write
    ``output`` (the file or folder the command writes, when it names it) or to read an input."""
    remove_if_empty(created)
    if isinstance(exc, ChipdseError | ValueError):
        _fail(exc)
    _fail(_os_error_text(exc, [] if output is None else [output]))  # type: ignore[arg-type]


def _short(text: str, limit: int = 200) -> str:
    """``text``, or its start and its length when longer than ``limit`` characters (an error line stays short)."""
    return text if len(text) <= limit else f"{text[:80]}... ({len(text):,} characters)"


POINTS_FILES = ("points.parquet", "points.columns.csv")
"""What ``chipdse sweep --out DIR`` writes into DIR (:meth:`chipdse.api.SweepRun.write_points`)."""


def _check_points_folder(out_dir: Path) -> None:
    """Refuse, before any job runs, a ``sweep --out`` folder where the points cannot land: one of
    :data:`POINTS_FILES` there is not a regular file, or the folder holds an explore report (its
    ``points.columns.csv`` describes its ``points.csv``, which the sweep's would replace)."""
    if (out_dir / "manifest.json").is_file():
        _fail(f"--out {out_dir}: holds a chipdse explore report (manifest.json), whose points.columns.csv describes "
              "its points.csv; give another folder for the sweep's points")
    for name in POINTS_FILES:
        target = out_dir / name
        if target.exists() and not target.is_file():
            _fail(f"--out {out_dir}: {name} there is not a regular file; remove it or give another folder")


def _os_error_text(exc: OSError, outputs: Sequence[Path]) -> str:
    """The error line of an OSError: ``cannot write output FILE: reason`` when FILE is (in) one of ``outputs``,
    else ``FILE: cannot read input: reason``; an output's temporary file (``.NAME.*`` beside it, written then renamed)
    counts as the output; without a file name, both are possible and the line says so."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return f"cannot read an input or write an output: {reason}"
    name = os.fsdecode(exc.filename)
    where = os.path.abspath(name)
    for o in outputs:
        top = os.path.abspath(o)
        if where == top or where.startswith(top + os.sep) or top.startswith(where + os.sep):
            return f"cannot write output {_short(name)}: {reason}"
        head, base = os.path.split(top)
        if os.path.dirname(where) == head and os.path.basename(where).startswith(f".{base}."):
            return f"cannot write output {_short(os.fsdecode(o))}: {reason}"  # its temporary file beside it
    return f"{_short(name)}: cannot read input: {reason}"


@app.command(cls=_LateHelpCommand)
def compare(
    problem: Annotated[str, typer.Argument(metavar="PROBLEM", help="One of: {problems}.")],
    scenario: Annotated[Path | None, typer.Argument(
        metavar="SCENARIO", help="Scenario YAML of the problem's kind (default: the bundled default of that kind).",
        show_default=False)] = None,
    methods: Annotated[list[str] | None, typer.Option(
        "--methods", help="Methods to run (repeat the option); default: every method except brute force.",
        show_default=False)] = None,
    point_opt: Annotated[str | None, typer.Option(
        "--point", help="HYDRA problems: which finalist, b-star (default) or m-t.", show_default=False)] = None,
    work_limit: Annotated[float | None, typer.Option(
        "--work-limit", min=0.001, max=MAX_TIME_LIMIT_S, parser=_finite(0.001, MAX_TIME_LIMIT_S),
        help="Deterministic work limit per exact solve, work "
        "units of about one CPU-second (default: the scenario's): the same result on a busy or an idle machine.",
        show_default=False)] = None,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", min=0.1, max=MAX_TIME_LIMIT_S, parser=_finite(0.1, MAX_TIME_LIMIT_S),
        help="Wall-clock safety cap per exact solve, s (default: "
        "the scenario's, else 10 x the work limit + 30 s).", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON list.")] = False,
    csv_text: Annotated[str | None, typer.Option("--csv", metavar="PATH", help="Also write the rows to this CSV "
                                                 "file.", show_default=False)] = None,
    sets: SetOption = None,
) -> None:
    """Run every method of one decision problem on a scenario's instance (HYDRA: its B* or M_T) and compare them.

    Columns: method, exact, objective, bound (the header names their unit), proven gap (the solve's own), over
    bound (excess over the best proven bound of any method), status, ended by (the limit or event that ended the
    solve), wall time; then why each method without a solution found none. Repeat --methods to pick several.
    """
    created: list[Path] = []
    csv_path: Path | None = None
    try:
        csv_path = _path_option("--csv", csv_text)
        if csv_path is not None:
            if csv_path.is_dir():
                msg = f"--csv {csv_path} is a directory; give a file name"
                raise ValueError(msg)
            created = ensure_writable_dir(csv_path.parent, "--csv")
        run = _api().compare(problem, scenario, methods=methods, point=point_opt, work_limit=work_limit,
                             time_limit_s=time_limit, sets=sets or ())
        rows = run.rows()
        if csv_path is not None:
            with atomic_path(csv_path) as tmp:
                run.to_pandas().to_csv(tmp, index=False)
    except (ChipdseError, ValueError, OSError) as exc:
        _fail_writing(exc, created, csv_path)
    if as_json:
        typer.echo(json.dumps(rows, default=str))
        return
    where = run.instance if run.point is None else f"{run.instance} ({run.point})"
    unit = rows[0]["objective_unit"] if rows else ""
    typer.echo(f"{problem} on {where}, {run.config.limits_text()} per exact solve"
               + (f"; objective and bound in {unit}" if unit else ""))
    w = max([len("method"), *(len(r["method"]) for r in rows)])
    typer.echo(f"{'method':{w}s} {'exact':>5s} {'objective':>12s} {'bound':>12s} {'proven gap':>10s} "
               f"{'over bound':>10s} {'status':>12s} {'ended by':>14s} {'wall s':>8s}")

    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.5g}"

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.3g}%"

    for r in rows:
        typer.echo(f"{r['method']:{w}s} {'yes' if r['exact'] else 'no':>5s} {num(r['objective']):>12s} "
                   f"{num(r['bound']):>12s} {pct(r['gap']):>10s} {pct(r['gap_to_best_bound']):>10s} "
                   f"{r['status']:>12s} {r['termination']:>14s} {r['wall_s']:8.2f}")
    for r in rows:  # why a method has no solution (or what limited it)
        if r["objective"] is None and r["reason"]:
            typer.echo(f"{r['method']}: {r['status']}: {r['reason']}")


@app.command(cls=_LateHelpCommand)
def solve(
    problem: Annotated[str, typer.Argument(
        metavar="PROBLEM", help="qap (a QAPLIB file), or one of: {problems}.")],
    path: Annotated[Path | None, typer.Argument(
        metavar="FILE", help="qap: a QAPLIB .dat file; otherwise a scenario YAML of the problem's kind (default: "
        "the bundled default of that kind).", show_default=False)] = None,
    method: Annotated[str | None, typer.Option(
        "--method", help="Method of the problem (not for qap): {methods}.",
        show_default=False)] = None,
    solver_opt: Annotated[str | None, typer.Option(
        "--solver", help="qap only: highs (RLT-1 MILP, default), cpsat, bnb (branch and bound on the RLT-1 dual "
        "ascent bound) or glb (Gilmore-Lawler branch and bound); "
        "the other problems choose with --method.", show_default=False)] = None,
    point_opt: Annotated[str | None, typer.Option(
        "--point", help="HYDRA problems: which finalist, b-star (default) or m-t.", show_default=False)] = None,
    work_limit: Annotated[float | None, typer.Option(
        "--work-limit", min=0.001, max=MAX_TIME_LIMIT_S, parser=_finite(0.001, MAX_TIME_LIMIT_S),
        help="Deterministic work limit of the solve, work units "
        "of about one CPU-second (default: the scenario's; qap: 60).", show_default=False)] = None,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", min=0.1, max=MAX_TIME_LIMIT_S, parser=_finite(0.1, MAX_TIME_LIMIT_S),
        help="Wall-clock safety cap of the solve, s (default: the "
        "scenario's, else 10 x the work limit + 30 s). Building the model comes on top (qap: about 9 s at n = 20).",
        show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    sets: SetOption = None,
) -> None:
    """Solve one decision problem with one method: a QAPLIB file (QAP mode of the placement formulation), or a
    registered problem on a scenario's instance.

    Prints objective, proven bound, gap, status and wall time; a work limit (or the wall cap) returns the incumbent
    with its gap.
    """
    try:
        _applies("--set", bool(sets) and problem == "qap", "a QAPLIB file has no scenario; --set applies to the "
                 "scenario problems")
        target: Any = path
        if problem == "qap" and path is not None and method is None and point_opt is None:
            target = _inputs().read_qap(path)  # a bad file fails before any solver is imported (options first)
        run = _api().solve(problem, target, method=method, solver=solver_opt, point=point_opt, work_limit=work_limit,
                           time_limit_s=time_limit, sets=sets or ())
    except (ChipdseError, ValueError) as exc:
        _fail(exc)
    except OSError as exc:  # solve writes no file: any OSError is about an input
        _fail(_os_error_text(exc, []))
    out, sol = run.to_dict(), run.solution
    if as_json:
        typer.echo(json.dumps(out, default=str))
        return
    ended = f"ended by {out['termination']}"
    if sol.objective is None:
        typer.echo(f"{out['instance']}: {sol.status.value}: {sol.reason or 'no solution'} ({ended}, "
                   f"{sol.wall_s:.1f} s)")
        return
    unit = f" {out['objective_unit']}" if out["objective_unit"] else ""
    gap = "-" if out["gap"] is None else f"{100 * out['gap']:.3g}%"
    bound = "-" if sol.bound is None else f"{sol.bound:.6g}{unit}"
    note = f" ({sol.reason})" if sol.reason and sol.status.value != "optimal" else ""
    typer.echo(f"{out['instance']}: objective {sol.objective:.6g}{unit}, bound {bound}, gap {gap}, "
               f"{sol.status.value}, {ended}, {sol.wall_s:.1f} s{note}")
    if out.get("permutation") is not None:
        typer.echo(f"permutation (facility -> location, 0-based): {' '.join(str(x) for x in out['permutation'])}")


@app.command()
def sweep(
    scenario: Annotated[Path | None, typer.Argument(
        metavar="SCENARIO", help="Scenario YAML (default: the bundled default).", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, max=256, help="Run the jobs on a local process pool of N workers.",
        show_default=False)] = None,
    dask_local: Annotated[int | None, typer.Option(
        "--dask-local", min=1, max=256, help="Run the jobs on a local Dask cluster of N workers.",
        show_default=False)] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", help="Run the jobs on the Dask cluster at this scheduler address (tcp://host:8786).",
        show_default=False)] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Recompute every job, even those in the store.")] = False,
    store_text: Annotated[str | None, typer.Option(
        "--store", metavar="PATH", help="SQLite results store; finished jobs are reused and each new one is saved "
                        "as it completes. Default: reports/out/<scenario name>/results.sqlite.",
        show_default=False)] = None,
    out_text: Annotated[str | None, typer.Option(
        "--out", metavar="DIR", help="Also write every scored point as DIR/points.parquet, with its column "
                                     "descriptions in DIR/points.columns.csv.", show_default=False)] = None,
    sets: SetOption = None,
) -> None:
    """Score a design space with the estimator on every sweep workload, then simulate its Pareto candidates
    (sweep.simulate per workload); resumable, in-process, on a process pool or on Dask."""


    api = _api()
    try:
        where = api.backend(workers, dask_local, scheduler).describe()
    except ValueError as exc:
        _fail(exc)
    path: Path | None = None
    new_store = False
    created: list[Path] = []
    out_dir: Path | None = None
    try:
        store_path = _path_option("--store", store_text)
        out_dir = _path_option("--out", out_text)
        sc = api.load_hydra(scenario, parse_overrides(sets))
        path = store_path if store_path is not None else Path("reports") / "out" / sc.spec.name / "results.sqlite"
        if path.is_dir():
            _fail(f"--store {path}: is a directory; give the path of a results file (e.g. {path / 'results.sqlite'})")
        if out_dir is not None:
            _check_points_folder(out_dir)
            created = ensure_writable_dir(out_dir, "--out")
        new_store = not path.exists()
        created += ensure_writable_dir(path.parent, "--store")
        units = {"screen": "points", "simulate": "runs"}
        with ResultsStore(path, "sweep", "--store") as store, Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[unit]}"), RateColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                TimeRemainingColumn(), console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task(f"sweeping {sc.spec.name} ({where})", total=None, unit="points")
            current = ["screen"]

            def progress(stage: str, done: float, total: float) -> None:
                if stage != current[0]:  # a new stage: restart the bar so rate and ETA are the stage's own
                    current[0] = stage
                    bar.reset(task, total=total, completed=done, unit=units[stage],
                              description=f"simulating Pareto candidates ({where})")
                bar.update(task, completed=done, total=total)

            run = api.sweep(sc, workers=workers, dask_local=dask_local, scheduler=scheduler, store=store, fresh=fresh,
                            progress=progress)
    except (ChipdseError, ValueError, OSError) as exc:
        if from_interrupt(exc):  # Ctrl-C that a library turned into another error
            remove_if_empty(created)
            err.print(f"interrupted: finished jobs are saved in {path}; {_resume_hint(fresh, 'job')}")
            raise typer.Exit(130) from None
        if new_store and path is not None:  # leave no empty store, nor the folders made for it, behind
            for leftover in _store_files(path):
                leftover.unlink(missing_ok=True)
        _fail_output(exc, created, [path, out_dir])
    except KeyboardInterrupt:
        remove_if_empty(created)
        err.print(f"interrupted: finished jobs are saved in {path}; {_resume_hint(fresh, 'job')}")
        raise typer.Exit(130) from None
    written: dict[str, Path] = {}
    if out_dir is not None:  # after the sweep: a failure here keeps the store, whose jobs a rerun reads back
        try:
            written = run.write_points(out_dir)
        except (OSError, KeyboardInterrupt) as exc:
            remove_if_empty(created)
            what = ("interrupted" if isinstance(exc, KeyboardInterrupt)
                    else _os_error_text(exc, [out_dir / n for n in POINTS_FILES]))
            _fail(f"{what}; every job is saved in {path}: rerun the command (with another --out) to write the points")
    summary = run.summary
    if as_json:
        typer.echo(json.dumps(summary))
        return
    typer.echo(f"{sc.spec.name}: {summary['points']:,} points ({summary['stable']:,} stable at the offered load, "
               f"{summary['unstable']:,} unstable, {summary['infeasible']:,} infeasible (do not fit the HBM); "
               f"{summary['pareto']} on the Pareto front) in "
               f"{summary['wall_s']:.2f} s on {summary['backend']}; {summary['jobs_stored']} of "
               f"{summary['jobs']} screen jobs and {summary['sim_jobs_stored']} of {summary['sim_jobs']} "
               f"simulations read from {path}")
    if len(summary["workloads"]) > 1:
        for name, c in summary["workloads"].items():
            typer.echo(f"  {name}: {c['points']:,} points, {c['stable']:,} stable, {c['unstable']:,} unstable, "
                       f"{c['infeasible']:,} infeasible, {c['pareto']} Pareto")
    for reason, n in summary["infeasible_reasons"].items():
        typer.echo(f"  {n:,} infeasible: {reason}")
    for reason, n in summary["unstable_reasons"].items():
        typer.echo(f"  {n:,} {reason}")
    for reason in summary["unbuildable"]:
        typer.echo(f"  not built: {reason}")
    if written:
        typer.echo(f"wrote {written['parquet']} and {written['columns']}")
    for r in summary["simulated"]:
        head = f"  simulated {r['workload']} {r['role']} {r['label']}"
        if r["error"]:
            typer.echo(f"{head}: {r['error']}")
            continue
        ttft = "-" if r["sim_ttft_s"] is None else f"{r['sim_ttft_s']:.3f} s"
        typer.echo(f"{head}: TTFT {ttft} (estimator {r['est_ttft_s']:.3f} s) at the offered load; "
                   f"{r['finished']} of {r['arrived']} measured requests finished, {r['sim_throughput_tps']:.0f} "
                   f"tok/s delivered (the estimator's capacity is {r['est_throughput_tps']:.0f} tok/s)")
        if not r["finished"]:
            typer.echo("    no request finished in the window: raise sweep.sim_duration_s for E2E latency")


@app.command()
def generality(
    scenario: Annotated[Path | None, typer.Argument(
        metavar="SCENARIO", help="Scenario YAML: its design space, package, library and workload, and its "
        "generality.models unless --model is given (default: the bundled Table IV scenario, "
        "instances/scenarios/hydra-table4-chat.yaml).", show_default=False)] = None,
    models: Annotated[list[str] | None, typer.Option(
        "--model", help="A model to compare (repeat; default: the scenario's generality.models).",
        show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the matrices as one JSON object.")] = False,
) -> None:
    """Specialization vs generality (HYDRA Table IV): the design for every subset of models, scored on all."""


    try:
        api = _api()
        gen = api.generality(scenario, models)
        result = gen.result
    except (ChipdseError, ValueError) as exc:
        _fail(exc)
    except OSError as exc:  # generality writes no file: any OSError is about an input
        _fail(_os_error_text(exc, []))
    if as_json:
        typer.echo(json.dumps(result.to_json()))
        return
    typer.echo(f"{gen.scenario.spec.name}: {result.n_points:,} points x {len(result.models)} models on "
               f"{result.workload} at "
               f"{result.arrival_rate_rps:g} req/s ({result.wall_s:.1f} s); 1.00 = the model's own optimum, "
               "u = unstable at the offered load")
    cell = max(8, *(len(n) + 1 for n in result.names))
    for obj in api.GENERALITY_OBJECTIVES:
        df = result.scores[obj]
        width = max(len(str(t)) for t in df.index)
        typer.echo(f"{obj}: " + ("throughput / TTFT" if obj == "B*" else "throughput"))
        typer.echo(" " * (width + 2) + "".join(f"{n:>{cell + 1}s}" for n in result.names))
        for target, row in df.iterrows():
            cells = "".join(f"{row[n]:>{cell}.2f}{' ' if result.stable[obj].loc[target, n] else 'u'}"
                            for n in result.names)
            typer.echo(f"  {target!s:<{width}s}{cells}")


@app.command(cls=_LateHelpCommand)
def simulate(
    scenario: Annotated[Path | None, typer.Argument(
        metavar="SCENARIO", help="Scenario YAML (default: the bundled default).", show_default=False)] = None,
    point: Annotated[int | None, typer.Option(
        "--point", metavar="ID", min=0, help="Row id of the estimator table (its 'point' column).",
        show_default=False)] = None,
    best: Annotated[bool, typer.Option("--best", help="Simulate B* (the default when --point is not given).")] = False,
    duration: Annotated[float | None, typer.Option(
        "--duration", min=0.001, max=3600.0, parser=_finite(0.001, 3600.0),
        help="Simulated window, s (default: the workload's duration_s).",
        show_default=False)] = None,
    rate: Annotated[float | None, typer.Option(
        "--rate", min=1e-9, max=1e6, parser=_finite(1e-9, 1e6),
        help="Mean arrival rate, requests/s (default: the workload's).",
        show_default=False)] = None,
    scheduler: Annotated[str, typer.Option(
        "--scheduler", help="Task scheduler: {schedulers}.")] = "static",
    batching: Annotated[str | None, typer.Option(
        "--batching", help="{batchers} (default: the scenario's estimator.batching).",
        show_default=False)] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", min=0, max=MAX_SEED, help="Simulator seed, 0..2^31-1 (default: the scenario's).",
        show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as one JSON object.")] = False,
    sets: SetOption = None,
) -> None:
    """Place (hbm-enum), map (lpt-greedy) and simulate one design point; print its serving metrics.

    Metrics: output tokens/s, TTFT / TBT / E2E (mean, p50, p99), chiplet and link utilization, preemptions,
    requests arrived and finished, cross-phase work, events handled and the simulator's wall time. A run that
    finishes no request is an error (exit 2) naming the cause. With --json every error (bad input, a run that
    finishes no request) is also one JSON object on stdout, ``{"error": ..., "file": ..., "field": ...}``, and
    stdout holds nothing else.
    """


    if best and point is not None:
        _fail_as(as_json, "choose at most one of --point and --best", "--point")
    try:
        api = _api()
        res = api.simulate(scenario, point="best" if point is None else point, duration_s=duration, rate_rps=rate,
                           scheduler=scheduler, batching=batching, seed=seed, sets=sets or ()).metrics
    except (ChipdseError, ValueError, OSError) as exc:  # simulate writes no file: any OSError is about an input
        _fail_as(as_json, exc)
    if res["empty"]:
        _fail_as(as_json, api.empty_run_text(res), "--duration")
    if as_json:
        typer.echo(json.dumps(res))
        return
    pol = res["policies"]

    def lat(name: str, key: str) -> str:
        s = res[key]
        if s["count"] == 0:
            return f"{name}: no samples"
        return f"{name}: mean {s['mean']:.3f} s, p50 {s['p50']:.3f} s, p99 {s['p99']:.3f} s (n={s['count']})"

    chips, links = res["utilization"]["chiplets"], res["utilization"]["links"]
    typer.echo(f"{'B*' if res['point']['best'] else 'point'} {res['point']['id']}: {res['point']['label']}; "
               f"{pol['batching']} batching, {pol['scheduler']} scheduler, {pol['arrival']} arrivals at "
               f"{pol['rate_rps']:g} req/s for {pol['duration_s']:g} s, seed {pol['seed']}")
    typer.echo(f"throughput {res['throughput_tps']:.1f} tok/s; requests {res['requests_finished']} finished of "
               f"{res['requests_arrived']} arrived; {res['preemptions']} preemptions")
    for name, key in (("TTFT", "ttft_s"), ("TBT", "tbt_s"), ("E2E", "e2e_s")):
        typer.echo(f"  {lat(name, key)}")
    typer.echo(f"utilization: chiplets mean {chips['mean']:.2f} max {chips['max']:.2f}; "
               f"links mean {links['mean']:.3f} max {links['max']:.3f}")
    typer.echo(f"{res['events']:,} events in {res['wall_s']:.2f} s wall")
    if res["overloaded"]:
        grew = res["backlog_growth"]
        typer.echo(f"warning: overloaded: the requests waiting for a first token grew by {grew['requests']:,} from "
                   f"{grew['from_s']:g} s to {grew['to_s']:g} s (a stable design explains at most "
                   f"{grew['threshold']:.0f}); {res['requests_in_system']:,} of {res['requests_arrived']:,} requests "
                   "are still in the system; the latency statistics cover only the requests served so far")


@app.command(cls=_LateHelpCommand)
def schema(
    kind: Annotated[str | None, typer.Argument(
        metavar="KIND", help="Input file kind: {schemas}.", show_default=False)] = None,
    write: Annotated[str | None, typer.Option(
        "--write", metavar="DIR", help="Write every kind's schema to DIR/<kind>.schema.json (KIND, when given, "
        "only that one) instead of printing; the bundled copies are instances/schemas/.", show_default=False)] = None,
) -> None:
    """Print the JSON Schema of an input file (scenario, chiplet library, package, workload or model card): every
    field with its type, bounds, default and a description with its unit.

    The bundled YAML files name the bundled copy in their first line (``# yaml-language-server: $schema=...``), so
    an editor with the YAML language server completes and checks them.
    """
    created: list[Path] = []
    folder: Path | None = None
    try:
        folder = _path_option("--write", write)
        api = _inputs()
        if folder is None:
            if kind is None:
                msg = f"KIND: one of {list(api.SCHEMAS)} (or --write DIR for all of them)"
                raise ValueError(msg)
            typer.echo(api.schema_text(kind), nl=False)
            return
        if kind is not None:
            api.json_schema(kind)  # an unknown kind fails before any folder is made
        created = ensure_writable_dir(folder, "--write")
        paths = api.write_schemas(folder, None if kind is None else [kind])
    except (ChipdseError, ValueError, OSError) as exc:
        _fail_writing(exc, created, folder)
    for p in paths:
        typer.echo(f"wrote {p}")


@app.command()
def params(
    study: Annotated[str, typer.Argument(metavar="STUDY", help="hydra, snake or nova.")],
    scenario: Annotated[Path | None, typer.Option(
        "--scenario", metavar="FILE", help="Show the values of this scenario of the study's kind (default: the "
        "study's bundled scenario).", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the register as one JSON list.")] = False,
) -> None:
    """Print a study's parameter register: every number its models use that the paper does not fix (and the ones
    it does), by the dotted path --set takes, with its value, unit, basis (paper, sourced, assumption,
    calibrated), plausible range and source.
    """
    try:
        rows = _inputs().params(study, scenario)
    except (ChipdseError, ValueError, OSError) as exc:
        _fail(exc)
    if as_json:
        typer.echo(json.dumps(rows, default=str))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        rng = "" if r["low"] is None else f"{r['low']:g}..{r['high']:g}"
        value = r["value"] if isinstance(r["value"], list) else ("-" if r["value"] is None else f"{r['value']:g}")
        fitted = f" [fitted to: {', '.join(r['calibrated_on'])}]" if r["calibrated_on"] else ""
        typer.echo(f"{r['name']:{width}s}  {str(value):>12s} {r['unit']:14s} {r['basis']:10s} {rng:>14s}  "
                   f"{' '.join(r['source'].split())}{fitted}")


model_app = typer.Typer(no_args_is_help=True, help="Model cards: import a Hugging Face config.json.")
app.add_typer(model_app, name="model")


@model_app.command("import")
def model_import(
    config: Annotated[Path, typer.Argument(metavar="CONFIG.json", help="A Hugging Face config.json (local file).")],
    name: Annotated[str | None, typer.Option("--name", help="Card name (default: the config's _name_or_path or "
                                             "the file name).")] = None,
    published: Annotated[float | None, typer.Option(
        "--published-params", metavar="P", parser=_finite(1.0, 1e15),
        help="The vendor's published total parameter count (e.g. 7.3e9): prints the difference, and a warning "
             "line above 5%.")] = None,
    out_text: Annotated[str | None, typer.Option("--out", metavar="FILE", help="Card file to write (default: "
                                                 "<name>.json in the current folder).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: name, params, active_params, "
                                          "weight_bytes, dtype, quantization, kv_cache_dtype, kv_bytes_per_token, "
                                          "warnings, card (the card is written as without --json).")] = False,
) -> None:
    """Write a model card (instances/models schema) from a Hugging Face config.json and print its parameter
    count; the card loads as ``model: FILE.json`` in any scenario."""
    out: Path | None = None
    try:
        out = _path_option("--out", out_text)
        out, lines, summary = _inputs().import_model(config, name=name, published_params=published, out=out)
    except ChipdseError as exc:
        _fail(exc)
    except OSError as exc:
        _fail(_os_error_text(exc, [out] if out else []))
    if as_json:
        typer.echo(json.dumps(summary))
        return
    for line in lines:
        typer.echo(line, err=line.startswith("warning:"))
    typer.echo(f"wrote model card: {out}")


def invoke(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return its exit code.

    Every usage error Typer finds (a bad option value such as ``--seed -3``, an unknown command or option, a
    missing argument) is printed as one ``error: ...`` line on stderr, as the commands print bad input, and
    returns 2; ``chipdse`` alone prints the help and returns 2, as Typer does; ``--help`` returns 0.
    """
    try:
        code = app(args=argv, prog_name="chipdse", standalone_mode=False)
    except typer._click.exceptions.NoArgsIsHelpError as exc:  # the help is on stdout already
        if exc.format_message().strip():
            err.print(exc.format_message(), highlight=False, markup=False)
        return EXIT_USER_ERROR
    except typer.exceptions.TyperException as exc:
        ctx = getattr(exc, "ctx", None)
        where = f"{ctx.command_path}: " if ctx is not None and ctx.command_path != "chipdse" else ""
        args = sys.argv[1:] if argv is None else argv
        if args[:1] == ["simulate"] and "--json" in args:  # simulate --json: errors as JSON on stdout too
            param = getattr(exc, "param", None)
            field = param.opts[0] if param is not None and getattr(param, "opts", None) else None
            typer.echo(json.dumps(error_json(where + exc.format_message(), field)))
        _error_line(where + exc.format_message())
        return EXIT_USER_ERROR
    except typer.Abort:
        _error_line("aborted")
        return 1
    return code if isinstance(code, int) else 0


def run() -> None:
    """Console entry point (``chipdse``): :func:`invoke` on the command line; exits with its code."""
    sys.exit(invoke())
