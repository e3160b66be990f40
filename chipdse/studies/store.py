"""A results store on SQLite: one row per finished job, keyed by a hash of what the job computed and the code.

DESIGN.md "Scale": results go to a SQLite store keyed by a hash of (scenario point, code version), written as each
job finishes, so an interrupted sweep resumes where it stopped and loses nothing.

The key of a job is the SHA-256 of the canonical JSON of (job kind, job parameters, model key, workload name,
code version). The code version is chipdse's package version plus a hash of the Python sources of ``chipdse/``,
``evaluators/``, ``formulations/`` and ``solvers/``, computed once per process: any edit to the code that computes
a result gives new keys, so a stale result is never returned.

The database runs in WAL mode, so one writer and any number of readers (other processes included) can use it at
once; every ``put`` is its own committed transaction.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import TracebackType
from typing import Any

from chipdse.core.errors import ChipdseError
from chipdse.core.io import canonical_json

SOURCE_PACKAGES = ("chipdse", "evaluators", "formulations", "solvers")
_SCHEMA = "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, result TEXT NOT NULL, created_s REAL NOT NULL)"


@functools.cache
def code_version() -> str:
    """Return ``"<package version>+<12 hex digits>"``: chipdse's version and a hash of the solver/evaluator sources.

    Computed once per process (sources edited later in the same process are not seen).
    """

    try:
        pkg = version("chipdse")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree that was never installed
        pkg = "0+unknown"
    package_dir = Path(__file__).resolve().parent.parent  # chipdse/
    h = hashlib.sha256()
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

    Raises
    ------
    ChipdseError
        When the file cannot be opened as a results database (the message names it).

    Examples
    --------
    >>> with ResultsStore(tmp / "results.sqlite") as store:  # doctest: +SKIP
    ...     store.put(key, {"throughput_tps": 1234.5})
    ...     store.get(key)
    {'throughput_tps': 1234.5}
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn: sqlite3.Connection | None = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL mode
            self._conn.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            msg = f"{self.path}: cannot open the results store: {exc}"
            raise ChipdseError(msg) from None

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
