"""Score a scenario's whole design space with the vectorized estimator, as storable, distributable jobs.

The space is cut into one job per HBM count (HYDRA Table III has 15: 2..16). Each job enumerates the space, keeps
its HBM count and scores those points with :class:`evaluators.estimator.Screen`; the estimator is pointwise, so
the concatenated chunks equal one ``Screen.score`` over every point. The Pareto front is computed afterwards over
the whole space.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from chipdse.design_space import DesignPoints, enumerate_points
from chipdse.parallel import Backend, run_jobs
from chipdse.scenario import LoadedScenario
from chipdse.specs import file_sha256
from chipdse.store import ResultsStore, job_key
from reports.pareto import pareto_mask

JOB_KIND = "sweep-screen"


@dataclass
class SweepResult:
    """A scored design space.

    Attributes
    ----------
    points : pandas.DataFrame
        One row per buildable point, in :func:`chipdse.design_space.enumerate_points` order, with the estimator's
        columns (``Screen.score``) plus ``pareto``.
    n_points, n_feasible, n_infeasible, n_pareto : int
        Feasible: fits the HBM stacks and is stable at the offered load (empty ``reason``); infeasible: the rest.
    infeasible_reasons : dict[str, int]
        Points per reason (the ``reason`` column of infeasible points).
    unbuildable : list[str]
        Kinds of design point dropped before scoring (e.g. too much interposer area), with counts.
    wall_s : float
        Wall time of the sweep, s (store look-ups included).
    jobs, jobs_stored : int
        Jobs in the sweep, and how many of them were read from the store instead of being run.
    """

    points: pd.DataFrame
    n_points: int
    n_feasible: int
    n_infeasible: int
    n_pareto: int
    infeasible_reasons: dict[str, int]
    unbuildable: list[str]
    wall_s: float
    jobs: int
    jobs_stored: int
    backend: str = field(default="in-process")


def subset_points(pts: DesignPoints, mask: np.ndarray) -> DesignPoints:
    """Return the points where ``mask`` (bool, shape (n,)) is true."""
    return DesignPoints(pts.types, pts.counts[mask], pts.n_hbm[mask], pts.d2d_GBps[mask], pts.max_batch[mask])


def frame_to_json(df: pd.DataFrame) -> dict[str, Any]:
    """Encode a DataFrame as a JSON-able dict (columns, dtypes, column lists) that :func:`frame_from_json` restores."""
    return {"columns": list(df.columns), "dtypes": {c: str(df[c].dtype) for c in df.columns},
            "data": {c: df[c].tolist() for c in df.columns}}


def frame_from_json(obj: dict[str, Any]) -> pd.DataFrame:
    """Rebuild a DataFrame written by :func:`frame_to_json` (same columns, order and dtypes)."""
    df = pd.DataFrame({c: obj["data"][c] for c in obj["columns"]}, columns=obj["columns"])
    return df.astype(obj["dtypes"])


def score_hbm_chunk(sc: LoadedScenario, n_hbm: int) -> dict[str, Any]:
    """Score every buildable point of the scenario with ``n_hbm`` HBM stacks (one sweep job).

    Returns
    -------
    dict
        :func:`frame_to_json` of ``Screen.score`` on those points (no rows when none is buildable).
    """
    from evaluators.estimator import Screen

    pts, _ = enumerate_points(sc)
    df = Screen(sc).score(subset_points(pts, pts.n_hbm == n_hbm))
    return frame_to_json(df)


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
        h.update(b"\0")
    return h.hexdigest()


def scenario_identity(sc: LoadedScenario) -> dict[str, Any]:
    """Everything a sweep job's result depends on besides the code: settings, file digests, the request sample.

    The scenario's name, solver time limit and file paths are left out (they do not change a screen score).
    """
    spec = sc.spec.model_dump(mode="json")
    return {
        "design_space": spec["design_space"],
        "estimator": spec["estimator"],
        "seed": spec["seed"],
        "package_sha256": file_sha256(sc.package_path),
        "library": sc.library.model_dump(mode="json"),
        "model_sha256": hashlib.sha256(repr(sc.model).encode()).hexdigest(),
        "workload": sc.workload.model_dump(mode="json"),
        "lengths_sha256": _digest(sc.lengths.prefill_tokens, sc.lengths.decode_tokens),
    }


def sweep_jobs(sc: LoadedScenario) -> tuple[list[int], list[str]]:
    """Return the HBM counts to score (one job each) and the reasons points were dropped before scoring.

    Raises
    ------
    InfeasibleDesignError
        When no design point can be built.
    """
    pts, reasons = enumerate_points(sc)
    return sorted(int(h) for h in np.unique(pts.n_hbm)), reasons


def sweep(sc: LoadedScenario, backend: Backend | None = None, store: ResultsStore | None = None,
          fresh: bool = False, progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Score the scenario's whole design space, one job per HBM count, reusing stored jobs.

    Parameters
    ----------
    sc : LoadedScenario
    backend : Backend, optional
        Where jobs run (default in-process).
    store : ResultsStore, optional
        Results store; jobs already in it are read, not run, and each finished job is written at once.
    fresh : bool
        Recompute every job even when stored.
    progress : callable(done, total), optional
        Jobs done out of the total (see :func:`chipdse.parallel.run_jobs`).

    Returns
    -------
    SweepResult

    Raises
    ------
    InfeasibleDesignError
        When no design point can be built.
    ChipdseError
        Dask selected but not installed, or an unreachable scheduler.
    """
    t0 = time.perf_counter()
    backend = backend or Backend.in_process()
    hbm_counts, reasons = sweep_jobs(sc)
    ident = scenario_identity(sc)

    def key(h: int) -> str:
        return job_key(JOB_KIND, {**ident, "n_hbm": h}, sc.model.key, sc.workload.name)

    stored = 0 if (store is None or fresh) else sum(key(h) in store for h in hbm_counts)
    chunks = run_jobs(partial(score_hbm_chunk, sc), hbm_counts, backend, store=store,
                      key_fn=key if store is not None else None, progress=progress, fresh=fresh)
    frames = [frame_from_json(c) for c in chunks]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    df["point"] = np.arange(len(df))
    df["pareto"] = pareto_mask(df["throughput_tps"].to_numpy(), df["ttft_s"].to_numpy())
    ok = df["reason"] == ""
    counts = df.loc[~ok, "reason"].value_counts()
    return SweepResult(
        points=df, n_points=len(df), n_feasible=int(ok.sum()), n_infeasible=int((~ok).sum()),
        n_pareto=int(df["pareto"].sum()), infeasible_reasons={str(k): int(v) for k, v in counts.items()},
        unbuildable=reasons, wall_s=time.perf_counter() - t0, jobs=len(hbm_counts), jobs_stored=stored,
        backend=backend.describe(),
    )


def summary_json(result: SweepResult) -> dict[str, Any]:
    """Return the sweep's counts as a JSON-able dict.

    Keys: points, feasible, infeasible, pareto, wall_s, plus infeasible_reasons (points per reason), unbuildable,
    jobs, jobs_stored and backend.
    """
    return {
        "points": result.n_points,
        "feasible": result.n_feasible,
        "infeasible": result.n_infeasible,
        "pareto": result.n_pareto,
        "wall_s": round(result.wall_s, 3),
        "infeasible_reasons": result.infeasible_reasons,
        "unbuildable": result.unbuildable,
        "jobs": result.jobs,
        "jobs_stored": result.jobs_stored,
        "backend": result.backend,
    }
