"""A results store on SQLite: one row per finished job, keyed by a hash of what the job computed and the code.

DESIGN.md "Scale": results go to a SQLite store keyed by a hash of (scenario point, code version), written as each
job finishes, so an interrupted sweep resumes where it stopped and loses nothing.

The key of a job is the SHA-256 of the canonical JSON of (job kind, job parameters, model key, workload name,
code version). The code version is chipdse's package version plus a hash of the Python sources of ``chipdse/``,
``evaluators/``, ``formulations/`` and ``solvers/`` and of the installed versions of the numeric and solver packages
(``STACK_PACKAGES``), computed once per process: any edit to the code that computes a result, or another solver or
pandas release, gives new keys, so a stale result is never returned.

The database runs in WAL mode, so one writer and any number of readers (other processes included) can use it at
once; every ``put`` is its own committed transaction.

Besides job results (table ``results``, JSON text), the store keeps whole finished stages of a run (table
``stages``: key, stage name, a one-line note, the stage's value pickled): :class:`Checkpoints` reads a stage
instead of computing it again and writes each stage as it finishes, so ``chipdse explore`` interrupted with Ctrl-C
resumes after its last finished stage. A stage's key holds the code version, so a pickle is only ever read by the
code that wrote it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from chipdse.core.errors import ChipdseError
from chipdse.core.io import canonical_json

SOURCE_PACKAGES = ("chipdse", "evaluators", "formulations", "solvers")
STACK_PACKAGES = ("numpy", "scipy", "pandas", "pyomo", "highspy", "ortools")
"""Installed packages whose release is part of :func:`code_version` (they compute, or pickle, stored results)."""
_SCHEMA = "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, result TEXT NOT NULL, created_s REAL NOT NULL)"
_STAGES_SCHEMA = ("CREATE TABLE IF NOT EXISTS stages (key TEXT PRIMARY KEY, stage TEXT NOT NULL, note TEXT NOT NULL, "
                  "value BLOB NOT NULL, created_s REAL NOT NULL)")
_COLUMNS = {"results": ("key", "result", "created_s"), "stages": ("key", "stage", "note", "value", "created_s")}
PURPOSES = {"sweep": 1, "explore": 2}
"""What a store keeps, recorded in SQLite's ``user_version`` header field (no table of its own): ``chipdse sweep``'s
job results or ``chipdse explore``'s finished stages; a store of one is refused by the other."""
_COMMANDS = {"sweep": "chipdse sweep's job results", "explore": "chipdse explore's finished stages"}
STAGE_JOB_KIND = "run-stage"
"""The ``kind`` of :func:`job_key` for a stage of a run (:class:`Checkpoints`)."""
T = TypeVar("T")


@functools.cache
def code_version() -> str:
    """Return ``"<package version>+<12 hex digits>"``: chipdse's version and a hash of the solver/evaluator sources
    and of the releases of ``STACK_PACKAGES``.

    Computed once per process (sources edited later in the same process are not seen).
    """

    try:
        pkg = version("chipdse")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree that was never installed
        pkg = "0+unknown"
    package_dir = Path(__file__).resolve().parent.parent  # chipdse/
    h = hashlib.sha256()
    for name in STACK_PACKAGES:
        try:
            h.update(f"{name}=={version(name)}\0".encode())
        except PackageNotFoundError:  # pragma: no cover - every one is a dependency
            h.update(f"{name} absent\0".encode())
    for name in SOURCE_PACKAGES:
        # the sub-packages are links to the top-level folders in a checkout: resolve before walking
        folder = package_dir if name == "chipdse" else (package_dir / name).resolve()
        for f in sorted(folder.rglob("*.py")):
            h.update(f"{name}/{f.relative_to(folder).as_posix()}".encode())
            h.update(b"\0")
            h.update(f.read_bytes())
            h.update(b"\0")
    return f"{pkg}+{h.hexdigest()[:12]}"


def job_key(kind: str, params: dict[str, Any], model: str, workload: str, version: str | None = None) -> str:
    """Return the store key of one job: SHA-256 hex of canonical JSON of its identity.

    Parameters
    ----------
    kind : str
        Job kind, e.g. ``"sweep-screen"``.
    params : dict
        Everything else the result depends on (scenario point, design-space settings, file digests), JSON-able.
    model : str
        Model key (e.g. ``"nemotron-h-4b"``).
    workload : str
        Workload name (e.g. ``"arxiv"``).
    version : str, optional
        Code version; default :func:`code_version`.
    """
    ident = {"kind": kind, "params": params, "model": model, "workload": workload,
             "code_version": version if version is not None else code_version()}
    return hashlib.sha256(canonical_json(ident).encode()).hexdigest()


class ResultsStore:
    """Job results as JSON text in a SQLite database (WAL mode; one writer, many readers).

    Parameters
    ----------
    path : str or Path
        Database file; created with its folder if absent.
    purpose : str, optional
        ``"sweep"`` or ``"explore"`` (:data:`PURPOSES`): refuse a store the other command wrote, and record the
        purpose in a new one. None: any store.
    option : str, optional
        How the caller names the file (e.g. ``"--store"``), put before the path in error messages.

    Raises
    ------
    ChipdseError
        When the file cannot be opened as a results database, or is a SQLite database of something else (other
        tables or columns) or the other command's store (the message names the option and file). Nothing is
        written to such a file.

    Examples
    --------
    >>> with ResultsStore(tmp / "results.sqlite") as store:  # doctest: +SKIP
    ...     store.put(key, {"throughput_tps": 1234.5})
    ...     store.get(key)
    {'throughput_tps': 1234.5}
    """

    def __init__(self, path: str | Path, purpose: str | None = None, option: str = "") -> None:
        self.path = Path(path)
        where = f"{option} {self.path}" if option else str(self.path)
        if purpose is not None and purpose not in PURPOSES:
            msg = f"purpose must be one of {sorted(PURPOSES)}, got {purpose!r}"
            raise ValueError(msg)
        conn = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            problem = _foreign(conn, purpose)  # read only: a foreign database is refused before anything is written
            if problem is None:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL mode
                conn.execute(_SCHEMA)
                conn.execute(_STAGES_SCHEMA)
                if purpose is not None and not conn.execute("PRAGMA user_version").fetchone()[0]:
                    conn.execute(f"PRAGMA user_version = {PURPOSES[purpose]}")
        except (sqlite3.Error, OSError) as exc:
            problem = f"cannot open the results store: {exc}"
        if problem is not None:
            if conn is not None:
                conn.close()
            msg = f"{where}: {problem}"
            raise ChipdseError(msg)
        self._conn: sqlite3.Connection | None = conn

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection (raises once the store is closed)."""
        if self._conn is None:
            msg = f"{self.path}: the results store is closed"
            raise ChipdseError(msg)
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the stored result of ``key``, or None when the job has not finished yet."""
        row = self.conn.execute("SELECT result FROM results WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, result: dict[str, Any]) -> None:
        """Store ``result`` under ``key`` (replacing any earlier one) and commit at once.

        Raises
        ------
        TypeError
            When ``result`` is not JSON-encodable.
        """
        text = canonical_json(result)
        self.conn.execute("INSERT OR REPLACE INTO results (key, result, created_s) VALUES (?, ?, ?)",
                          (key, text, time.time()))

    def __contains__(self, key: object) -> bool:
        row = self.conn.execute("SELECT 1 FROM results WHERE key = ?", (key,)).fetchone()
        return row is not None

    def keys(self) -> list[str]:
        """Return every stored key (in insertion order)."""
        return [r[0] for r in self.conn.execute("SELECT key FROM results ORDER BY rowid")]

    def count(self) -> int:
        """Return the number of stored results."""
        return int(self.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def put_stage(self, key: str, stage: str, note: str, value: Any) -> None:
        """Store a finished stage's ``value`` (pickled) under ``key`` with its name and a one-line ``note``.

        Raises
        ------
        pickle.PicklingError, TypeError, AttributeError
            When ``value`` cannot be pickled.
        """
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        self.conn.execute("INSERT OR REPLACE INTO stages (key, stage, note, value, created_s) VALUES (?, ?, ?, ?, ?)",
                          (key, stage, note, blob, time.time()))

    def get_stage(self, key: str) -> tuple[str, Any] | None:
        """Return ``(note, value)`` of the stage stored under ``key``, or None when it is not stored (or its value
        cannot be unpickled)."""
        row = self.conn.execute("SELECT note, value FROM stages WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:  # the key holds the code version, so this code wrote it; a damaged value is recomputed
            return row[0], pickle.loads(row[1])  # noqa: S301
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None

    def stages(self) -> list[tuple[str, str]]:
        """Return ``(stage, note)`` of every stored stage, oldest first."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT stage, note FROM stages ORDER BY created_s, rowid")]

    def is_empty(self) -> bool:
        """True when the store holds neither a job result nor a stage."""
        return self.count() == 0 and not self.stages()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _foreign(conn: sqlite3.Connection, purpose: str | None) -> str | None:
    """Why the database behind ``conn`` is not a store for ``purpose`` (``"sweep"``, ``"explore"`` or None: any),
    or None when it is (an empty database is). Reads only.

    A store holds the tables ``results`` and ``stages`` with their columns and nothing else; its ``user_version``
    is 0 (a store written before the purpose was recorded: the purpose is read from which table has rows) or one
    of :data:`PURPOSES`.
    """
    tables = {name: tuple(c[1] for c in conn.execute(f"PRAGMA table_info({name!r})"))
              for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%'")}
    other = sorted(set(tables) - set(_COLUMNS))
    if other:
        return (f"a SQLite database of something else (tables {other}), not a chipdse store; give a new file name "
                "(chipdse adds no tables to a foreign database)")
    for name, cols in tables.items():
        if cols != _COLUMNS[name]:
            return (f"a SQLite database whose table {name!r} has columns {list(cols)}, not a chipdse store's "
                    f"{list(_COLUMNS[name])}; give a new file name")
    if purpose is None:
        return None
    code = conn.execute("PRAGMA user_version").fetchone()[0]
    kinds = {v: k for k, v in PURPOSES.items()}
    if code and code not in kinds:
        return f"a SQLite database of something else (user_version {code}), not a chipdse store; give a new file name"
    if code:
        kept = kinds[code]
    elif "results" in tables and conn.execute("SELECT 1 FROM results LIMIT 1").fetchone():
        kept = "sweep"
    elif "stages" in tables and conn.execute("SELECT 1 FROM stages LIMIT 1").fetchone():
        kept = "explore"
    else:
        return None
    if kept != purpose:
        return (f"holds {_COMMANDS[kept]}, not {_COMMANDS[purpose]}; give chipdse {purpose} a store file of its own")
    return None


@dataclass
class Checkpoints:
    """The finished stages of one run, kept in a :class:`ResultsStore` so that a rerun resumes after them.

    Each stage is stored under :func:`job_key` of (``STAGE_JOB_KIND``, ``identity`` plus the stage name, model,
    workload, code version): a stage is reused only by a run of the same inputs (``identity``: scenario files,
    seed, solver settings, ...) on the same code.

    Parameters
    ----------
    store : ResultsStore, optional
        Where stages are kept; None keeps nothing (every stage is computed).
    identity : dict
        Everything the run's results depend on besides the code (JSON-able); the run sets it with :meth:`begin`
        when the caller cannot know it (e.g. the solver settings are resolved inside the run).
    model, workload : str
        The run's model key and workload name (parts of the key, as for a job).
    fresh : bool
        Compute every stage even when stored (and replace the stored one).
    on_stage : callable(stage, note, read), optional
        Called when a stage is done: ``read`` is True when it came from the store.

    Attributes
    ----------
    kept : list[tuple[str, str]]
        ``(stage, note)`` of every stage of this run now in the store (read or written), in run order.
    read : list[str]
        The stages read from the store instead of computed.
    """

    store: ResultsStore | None
    identity: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    workload: str = ""
    fresh: bool = False
    on_stage: Callable[[str, str, bool], None] | None = None
    kept: list[tuple[str, str]] = field(default_factory=list)
    read: list[str] = field(default_factory=list)

    def begin(self, identity: dict[str, Any], model: str, workload: str) -> None:
        """Set the run's identity, model key and workload name (before its first :meth:`run`)."""
        self.identity, self.model, self.workload = identity, model, workload

    def key(self, stage: str) -> str:
        """The store key of ``stage`` of this run (:func:`job_key`)."""
        return job_key(STAGE_JOB_KIND, {**self.identity, "stage": stage}, self.model, self.workload)

    def run(self, stage: str, compute: Callable[[], T], note: Callable[[T], str]) -> T:
        """Return the stored value of ``stage``, or ``compute()`` it and store it at once.

        Parameters
        ----------
        stage : str
            Stage name, unique within the run (e.g. ``"screen"``, ``"finalists"``).
        compute : callable() -> value
            Computes the stage (its value must pickle).
        note : callable(value) -> str
            One line saying what the stage holds (e.g. ``"1,785 points scored"``).

        Raises
        ------
        KeyboardInterrupt
            Passed on from ``compute``; the stage is not stored, every earlier one is.
        """
        got = None if self.store is None or self.fresh else self.store.get_stage(self.key(stage))
        if got is not None:
            text, value = got
            self.read.append(stage)
        else:
            value = compute()
            text = note(value)
            if self.store is None:
                return value
            self.store.put_stage(self.key(stage), stage, text, value)
        self.kept.append((stage, text))
        if self.on_stage is not None:
            self.on_stage(stage, text, got is not None)
        return value
