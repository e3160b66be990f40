"""What every study (HYDRA explore, SNAKE, NOVA) shares: run settings, stage timings and solve records.

Each study module (``chipdse.studies.hydra.explore``, ``snake``, ``nova``) exposes the same functions, listed by kind in
:mod:`chipdse.studies.registry`:

* ``KIND``: the scenario kind it runs;
* ``load(path) -> scenario``: the scenario file through :func:`chipdse.core.scenario.load`, refused unless of
  this kind, then the study's own checks (``check(loaded)``);
* ``label(scenario) -> str``: one line saying what ``run`` will do (for a progress display);
* ``run(scenario, settings, progress) -> result``: every table of the study's report;
* ``summary(result) -> dict``: the headline numbers (the manifest's ``summary``);
* ``headline(result) -> list[str]``: the lines ``chipdse explore`` prints.

A result carries what the manifest needs besides its tables: ``scenario`` (with ``path``, ``sha256`` and
``named_files``), ``solver`` (a :class:`SolverConfig`), ``timings_s`` and ``cpu_s`` (per stage) and
``solves()`` (one :func:`solve_record` per solve).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chipdse.core.errors import SpecError
from chipdse.core.scenario import AnyScenario, LoadedScenario, load
from chipdse.core.solution import Solution


def check_replay(sc: LoadedScenario) -> None:
    """Refuse ``arrival: replay`` on a workload whose requests carry no timestamps (nothing to replay).

    Raises
    ------
    SpecError
        Naming the workload file and its ``arrival`` field, and the trace without an ``arrived_at`` column.
    """
    wl = sc.workload
    if wl.arrival == "replay" and sc.lengths.arrival_s is None:
        source = f"the trace {wl.trace}" if wl.trace else "parametric lengths"
        raise SpecError(str(sc.workload_path), "arrival", f"'replay' needs request timestamps, but {source} has no "
                        "arrived_at column; use poisson or gamma, or a trace with arrival times")


@dataclass(frozen=True)
class Settings:
    """Command-line overrides of a scenario's run settings.

    Attributes
    ----------
    work_limit : float, optional
        Deterministic work limit per exact solve, work units (default: the scenario's ``work_limit``;
        :mod:`chipdse.solvers.config`).
    time_limit_s : float, optional
        Wall-clock safety cap per exact solve, s (default: the scenario's ``time_limit_s``, else 10 x the work
        limit + 30 s).
    seed : int, optional
        Seed for randomized heuristics and solvers (default: the scenario's; 0 for SNAKE and NOVA solves).
    """

    work_limit: float | None = None
    time_limit_s: float | None = None
    seed: int | None = None


def solve_record(sol: Solution, **where: Any) -> dict[str, Any]:
    """One solve for the manifest: its problem (the registry's name, ``Solution.problem``), the instance
    (``where``), method, status and which limit ended it (``termination``)."""
    return {"problem": sol.problem, **where, "method": sol.method, "exact": sol.exact, "status": sol.status.value,
            "termination": sol.termination.value, "objective": sol.objective, "bound": sol.bound,
            "wall_s": sol.wall_s}


def load_kind(path: Path | None, kind: str) -> AnyScenario:
    """Load any scenario file (:func:`chipdse.core.scenario.load`) and refuse it unless it is of ``kind``.

    Raises
    ------
    SpecError
        As :func:`chipdse.core.scenario.load`; or field ``kind`` naming the kind found.
    """
    loaded = load(path)
    if loaded.spec.kind != kind:
        raise SpecError(str(loaded.path), "kind", f"{kind}, got {loaded.spec.kind!r}")
    return loaded
