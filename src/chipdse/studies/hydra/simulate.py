"""Simulate one design point of a scenario end to end: pick it, place it, map it, run the event simulator.

The point is B* (``"best"``, as ``explore`` picks it) or a row id of the estimator table (its ``point`` column).
The layout uses the exact ``hbm-enum`` placement (within the scenario's work limit) and the fast ``lpt-greedy``
mapping of both phases; :func:`run_simulation` returns the simulator's metrics as one JSON-able dict.
"""

from __future__ import annotations

import math

import numpy as np

from chipdse.core.design_space import ScoredDesign, enumerate_points
from chipdse.core.errors import InfeasibleDesignError, SpecError
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.policies import BATCHER_NAMES, SCHEDULER_NAMES, batcher_config, scheduler_config
from chipdse.evaluators.sim_build import build_sim_config, workload_arrival
from chipdse.evaluators.sim_config import MAX_ARRIVALS
from chipdse.evaluators.sim_results import LatencyStats, backlog_growth
from chipdse.evaluators.simulator import simulate
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import mapping_problem, placement_problem
from chipdse.studies.common import check_replay
from chipdse.studies.hydra.stages import estimator, rate_source, screen_and_pick, screen_table

SCHEDULERS = SCHEDULER_NAMES
"""Task schedulers of the simulator by CLI name (the registry ``chipdse.evaluators.policies``)."""
BATCHING = BATCHER_NAMES
"""Batchers of the simulator by CLI name (the registry ``chipdse.evaluators.policies``)."""
PLACEMENT_METHOD = "hbm-enum"
MAPPING_METHOD = "lpt-greedy"


def _select(sc: LoadedScenario, point: str | int) -> tuple[dict, ScoredDesign]:
    """Return the scored row and design of ``point`` ("best" = B*, picked as explore picks it, or an integer row id
    of the estimator table); a bad id fails before the space is scored."""

    pid: int | None = None
    if isinstance(point, str):
        if not pid_is_best(point):
            try:
                pid = int(point)
            except ValueError:
                msg = f"point must be 'best' or an integer row id of the estimator table, got {point!r}"
                raise ValueError(msg) from None
    elif isinstance(point, (int, np.integer)) and not isinstance(point, bool):
        pid = int(point)
    else:
        msg = f"point must be 'best' or an integer row id of the estimator table, got {point!r}"
        raise ValueError(msg)
    if pid is not None:
        n = len(enumerate_points(sc)[0])  # row ids are the enumeration's order: check before scoring
        if not 0 <= pid < n:
            msg = (f"--point: must be one of 0..{n - 1} ({n} points in the estimator table; --best, or point='best' "
                   f"in the Python API, for B*), got {pid}")
            raise ValueError(msg)
        screen = estimator(sc)
        table = screen_table(screen)
        row = table.row(pid)
        if not bool(row["feasible"]):
            msg = f"point {pid} ({row['label']}) is infeasible: {row['reason'] or 'see the estimator table'}"
            raise ValueError(msg)
        return row, table.design(pid)
    _, _, picks = screen_and_pick(sc)
    return dict(picks.b_star.row), picks.b_star.design


def _stats(s: LatencyStats) -> dict[str, float | int | None]:
    return {"mean": s.mean_s, "p50": s.p50_s, "p99": s.p99_s, "count": int(s.count)}


def _summary(values: dict) -> dict:
    v = np.array(list(values.values()), dtype=float)
    if len(v) == 0:
        return {"mean": None, "max": None, "count": 0}
    return {"mean": float(v.mean()), "max": float(v.max()), "count": len(v)}


def run_simulation(
    sc: LoadedScenario,
    point: str | int,
    duration_s: float | None = None,
    rate_rps: float | None = None,
    scheduler: str = "static",
    batching: str | None = None,
    seed: int | None = None,
) -> dict:
    """Place, map and simulate one design point and return its serving metrics.

    Parameters
    ----------
    sc : LoadedScenario
    point : str | int
        ``"best"`` (B*, as ``explore`` picks it: the screen and pick stages, ``energy.pick`` and the power limits
        included) or an integer row id of the estimator table (``point`` column).
    duration_s : float, optional
        Simulated window, s (default: the workload's ``duration_s``).
    rate_rps : float, optional
        Mean arrival rate, requests/s (default: the workload's).
    scheduler : str
        One of :data:`SCHEDULERS`.
    batching : str, optional
        One of :data:`BATCHING` (default: the scenario's ``estimator.batching``).
    seed : int, optional
        Simulator seed (default: the scenario's).

    Returns
    -------
    dict
        JSON-able: ``design`` (the simulated design's label), ``point`` (id and label), ``policies``,
        ``throughput_tps``, ``ttft_s`` / ``tbt_s`` / ``e2e_s`` (mean, p50, p99, count; ``None`` without samples),
        ``utilization`` (chiplets with a per-chiplet map, links and HBM ports: mean and max), ``preemptions``,
        ``requests_arrived``, ``requests_finished``, ``requests_in_system``, ``overloaded`` (the backlog of requests
        waiting for a first token grew beyond what the arrival noise and a forming batch explain,
        :func:`chipdse.evaluators.sim_results.backlog_growth`; the latency statistics then cover only the requests
        served so far), ``backlog_growth`` (its ``requests``, ``threshold``, ``from_s``, ``to_s``), ``output_tokens``,
        ``empty`` (``SimResult.empty``: no request finished; the metrics then describe none), ``cross_phase`` (``jobs``
        and ``busy_s`` of prefill jobs on decode chiplets and the reverse), ``events``, ``wall_s`` (simulator wall time;
        the only entry that differs between runs with the same inputs).

    Raises
    ------
    ValueError
        Unknown scheduler or batching, a bad point id, an infeasible point, or a non-positive duration / rate.
    ChipdseError
        No stable point for ``"best"`` (``InfeasibleDesignError``), no placement found, or a simulator input
        error (``SimulationError``, also a ``ValueError``).
    """

    sched_cfg = scheduler_config(scheduler)
    batching = sc.spec.estimator.batching if batching is None else batching
    if batching not in BATCHING:
        msg = f"--batching: must be one of {list(BATCHING)}, got {batching!r}"
        raise ValueError(msg)
    for name, value in (("duration_s", duration_s), ("rate_rps", rate_rps)):
        if value is not None and not (math.isfinite(value) and value > 0):
            msg = f"{name} must be a positive number, got {value!r}"
            raise ValueError(msg)
    if seed is not None and seed < 0:
        msg = f"seed must be >= 0, got {seed}"
        raise ValueError(msg)
    check_replay(sc)
    check_arrivals(sc, duration_s, rate_rps)

    row, design = _select(sc, point)
    spec = design.point
    batcher_cfg = batcher_config(batching, spec.batch)
    place = solve_placement(placement_problem(sc, spec, design.capacity_rps), PLACEMENT_METHOD,
                            SolverConfig.of(sc.spec, seed=sc.spec.seed))
    if place.decision is None:
        msg = f"{row['label']}: {PLACEMENT_METHOD} found no placement ({place.status.value}: {place.reason})"
        raise InfeasibleDesignError(msg)
    maps = {}
    for phase in ("prefill", "decode"):
        sol = solve_mapping(mapping_problem(sc, spec, place.decision, phase, spec.batch), MAPPING_METHOD)
        if sol.decision is None:
            msg = f"{row['label']}: no {phase} mapping ({sol.status.value}: {sol.reason})"
            raise InfeasibleDesignError(msg)
        maps[phase] = sol.decision
    arrival = workload_arrival(sc, rate_rps)
    cfg = build_sim_config(sc, spec, place.decision, maps["prefill"], maps["decode"], batcher=batcher_cfg,
                           scheduler=sched_cfg, arrival=arrival, duration_s=duration_s, seed=seed)
    res = simulate(cfg, sc.lengths)
    backlog = backlog_growth(res.requests, res.duration_s, res.warmup_s, allowance=spec.batch - 1)

    return {
        "scenario": sc.spec.name,
        "design": design.label,
        "point": {"id": int(row["point"]), "label": design.label, "best": pid_is_best(point)},
        "policies": {
            "batching": batching,
            "max_batch": int(spec.batch),
            "scheduler": scheduler,
            "arrival": str(arrival.kind),
            "rate_rps": float(sc.workload.arrival_rate_rps if rate_rps is None else rate_rps),
            "duration_s": float(cfg.duration_s),
            "seed": int(cfg.seed),
            "placement": PLACEMENT_METHOD,
            "mapping": MAPPING_METHOD,
        },
        "throughput_tps": float(res.throughput_tps),
        "ttft_s": _stats(res.ttft),
        "tbt_s": _stats(res.tbt),
        "e2e_s": _stats(res.e2e),
        "utilization": {
            "chiplets": {**_summary(res.chiplet_utilization),
                         "per_chiplet": {k: float(v) for k, v in sorted(res.chiplet_utilization.items())}},
            "links": _summary(res.link_utilization),
            "hbm_ports": _summary(res.hbm_port_utilization),
        },
        "preemptions": int(res.preemptions),
        "requests_arrived": int(res.arrived),
        "requests_finished": int(res.finished),
        "requests_in_system": int(res.in_system),
        "overloaded": backlog.overloaded,
        "backlog_growth": {"requests": backlog.growth, "threshold": backlog.threshold,
                           "from_s": backlog.start_s, "to_s": backlog.end_s},
        "output_tokens": int(res.output_tokens),
        "empty": bool(res.empty),
        "cross_phase": {"jobs": {k: int(v) for k, v in res.cross_phase_jobs.items()},
                        "busy_s": {k: float(v) for k, v in res.cross_phase_busy_s.items()}},
        "events": int(res.n_events),
        "wall_s": float(res.wall_s),
    }


def empty_run_text(res: dict) -> str:
    """The one-line error for a run of :func:`run_simulation` that finished no request: the cause and what to
    change."""
    pol = res["policies"]
    if res["requests_arrived"] == 0:
        cause = (f"no request arrived in the {pol['duration_s']:g} s window at {pol['rate_rps']:g} req/s; "
                 "lengthen --duration or raise --rate")
    else:
        cause = (f"{res['requests_arrived']:,} requests arrived but none finished in the {pol['duration_s']:g} s "
                 f"window ({res['output_tokens']:,} output tokens so far); lengthen --duration (a request needs "
                 "its prefill and all its decode iterations inside the window)")
    return f"the simulation finished no request: {cause}"


def check_arrivals(sc: LoadedScenario, duration_s: float | None, rate_rps: float | None) -> None:
    """Refuse a window whose expected arrivals (rate x duration) exceed the simulator's
    :data:`~chipdse.evaluators.sim_config.MAX_ARRIVALS`, before any point is scored.

    The error names where each number came from: the ``chipdse simulate`` options ``--rate`` / ``--duration``
    when given, else the workload file's ``arrival_rate_rps`` / ``duration_s``.

    Raises
    ------
    SpecError
        Too many arrivals; ``source`` is the option(s) or the workload file.
    """
    wl, where = sc.workload, rate_source(sc)
    rate = wl.arrival_rate_rps if rate_rps is None else rate_rps
    dur = wl.duration_s if duration_s is None else duration_s
    if rate * dur <= MAX_ARRIVALS:
        return
    rate_from = "--rate" if rate_rps is not None else f"arrival_rate_rps of {where}"
    dur_from = "--duration" if duration_s is not None else f"duration_s of {sc.workload_path}"
    options = [o for o, given in (("--rate", rate_rps), ("--duration", duration_s)) if given is not None]
    source, field = (" and ".join(options), "") if options else (where, "arrival_rate_rps x duration_s")
    raise SpecError(source, field, f"rate x duration at most {MAX_ARRIVALS:,} arrivals per run (simulator memory), "
                    f"got {rate:g} req/s ({rate_from}) x {dur:g} s ({dur_from}) = {rate * dur:,.0f}; shorten the "
                    "window or lower the rate")


def pid_is_best(point: str | int) -> bool:
    """Whether ``point`` asks for B*."""
    return isinstance(point, str) and point.strip().lower() in ("best", "b-star", "b*")
