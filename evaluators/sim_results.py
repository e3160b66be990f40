"""Results of a simulation run: latency statistics and the metrics table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from chipdse.evaluators.sim_kernel import EventKind

CROSS_PHASE_KEYS = ("prefill_on_decode", "decode_on_prefill")
"""Keys of :attr:`SimResult.cross_phase_jobs` / ``cross_phase_busy_s``: prefill jobs run by decode-role chiplets,
decode jobs run by prefill-role chiplets."""


@dataclass(frozen=True)
class LatencyStats:
    """Mean and percentiles of one latency, s (``None`` without samples).

    Attributes
    ----------
    mean_s, p50_s, p99_s : float | None
    count : int
        Number of samples.
    """

    mean_s: float | None
    p50_s: float | None
    p99_s: float | None
    count: int

    @classmethod
    def of(cls, values: np.ndarray) -> LatencyStats:
        """Summarize an array of latencies (NaN entries ignored)."""
        v = np.asarray(values, dtype=float)
        v = v[~np.isnan(v)]
        if len(v) == 0:
            return cls(None, None, None, 0)
        p50, p99 = np.percentile(v, [50.0, 99.0])
        return cls(float(v.mean()), float(p50), float(p99), len(v))


@dataclass(frozen=True)
class SimResult:
    """Metrics of one run (everything but ``wall_s`` is identical for identical inputs and seed).

    Attributes
    ----------
    duration_s : float
        Simulated window, s: ``SimConfig.duration_s``, or the end of the run when ``stop_after_finished`` ended it
        earlier.
    warmup_s : float
        Start of the measured part of the window, s (``SimConfig.warmup_s``).
    arrived, finished, in_system : int
        Requests that arrived, finished, and are still in the system at the end.
    output_tokens : int
        Output tokens generated in the window (unfinished requests' tokens included).
    throughput_tps : float
        Output tokens emitted after the warm-up divided by ``duration_s - warmup_s``, tokens/s.
    ttft, tbt, e2e : LatencyStats
        Time to first token of every request that got one, every gap between consecutive tokens of a request,
        and end-to-end latency of finished requests, s; requests that arrived during the warm-up are left out.
    chiplet_utilization : dict[str, float]
        Busy fraction of the window per chiplet id.
    link_utilization : dict[tuple[int, int], float]
        Busy fraction per directed mesh link (from cell, to cell).
    hbm_port_utilization : dict[int, float]
        Busy fraction per HBM stack cell.
    hbm_occupancy_s : numpy.ndarray, shape (m,)
        Times at which memory use changed, s (starting with 0).
    hbm_occupancy_bytes : dict[str, numpy.ndarray]
        Per group, bytes in use from each of those times on, shape (m,).
    hbm_capacity_bytes : dict[str, float]
        Per group, the capacity for KV and state, bytes.
    preemptions : int
    n_events : int
        Events handled.
    wall_s : float
        Wall-clock time of :func:`simulate`, s.
    requests : pandas.DataFrame
        One row per arrived request: arrival_s, prompt_tokens, output_tokens, generated_tokens, state,
        admitted_s, prefill_start_s, first_token_s, finish_s (NaN until they happen), preemptions.
    timeline : tuple[tuple[float, EventKind], ...] | None
        Every handled event when ``record_timeline`` was set.
    cross_phase_jobs : dict[str, int]
        Stage jobs started on a chiplet of the other phase role, by :data:`CROSS_PHASE_KEYS` (0 unless the
        scheduler has ``cross_phase``).
    cross_phase_busy_s : dict[str, float]
        Busy seconds of those jobs within the window, same keys.
    empty : bool
        No request finished in the window: the latency statistics and the throughput describe no completed
        request (window too short for one request, or a design that stalls). Studies mark such runs invalid;
        ``chipdse simulate`` refuses them.
    finished_measured : int
        Requests that arrived at or after the warm-up and finished in the window.
    stop : str
        Which limit ended the run: ``"window"`` (the fixed window, or ``min_duration_s`` when the completed
        requests were reached by then), ``"completed"`` (``stop_after_finished`` measured requests finished) or
        ``"cap"`` (``duration_s`` came first: fewer completed requests than asked).
    """

    duration_s: float
    arrived: int
    finished: int
    in_system: int
    output_tokens: int
    throughput_tps: float
    ttft: LatencyStats
    tbt: LatencyStats
    e2e: LatencyStats
    chiplet_utilization: dict[str, float]
    link_utilization: dict[tuple[int, int], float]
    hbm_port_utilization: dict[int, float]
    hbm_occupancy_s: np.ndarray
    hbm_occupancy_bytes: dict[str, np.ndarray]
    hbm_capacity_bytes: dict[str, float]
    preemptions: int
    n_events: int
    wall_s: float
    requests: pd.DataFrame
    timeline: tuple[tuple[float, EventKind], ...] | None = None
    warmup_s: float = 0.0
    cross_phase_jobs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CROSS_PHASE_KEYS, 0))
    cross_phase_busy_s: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CROSS_PHASE_KEYS, 0.0))
    empty: bool = False
    finished_measured: int = 0
    stop: str = "window"


# --------------------------------------------------------------------------------------------------------------
# Topology: stages, compatible chiplets, per-(stage, chiplet) plans, NoI resources
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BacklogGrowth:
    """Growth of the backlog of waiting requests over the second half of a run, against its arrival noise.

    Attributes
    ----------
    start_s, end_s : float
        The interval compared, s (the second half of the measured window).
    growth : int
        Requests waiting for their first token at ``end_s`` minus those waiting at ``start_s``.
    arrivals : int
        Requests that arrived in the interval.
    cv2 : float
        Squared coefficient of variation of the inter-arrival gaps (at least 1, a Poisson stream's).
    threshold : float
        ``allowance + z * sqrt(cv2 * arrivals)``: the most growth a stable system explains.
    """

    start_s: float
    end_s: float
    growth: int
    arrivals: int
    cv2: float
    threshold: float

    @property
    def overloaded(self) -> bool:
        """Whether the backlog grew by more than :attr:`threshold` (the offered rate exceeds what is served)."""
        return self.growth > self.threshold


OVERLOAD_Z = 3.0
"""One-sided normal quantile of :func:`backlog_growth` (a stable run is flagged with probability ~0.1%)."""


def backlog_growth(requests: pd.DataFrame, duration_s: float, warmup_s: float = 0.0, allowance: float = 0.0,
                   z: float = OVERLOAD_Z) -> BacklogGrowth:
    """Test whether the backlog of requests waiting for their first token grew over the run's second half.

    A request waits from its arrival until its first token (admission, queueing and prefill). In a stable system
    this backlog is stationary once the empty start has faded: over ``[t0, T]`` (``t0`` the middle of the
    measured window ``[warmup_s, duration_s]``) its change ``G = A - F`` (arrivals minus first tokens in the
    interval) has mean 0, and the first-token stream being the arrival stream delayed and smoothed by service,
    ``Var G`` is at most about the arrival count's variance ``cv2 * A`` (a renewal stream's index of dispersion,
    Cox and Lewis 1966, Sec. 4.5). Overload makes ``G`` grow as ``(lambda - mu) (T - t0)``. The run is
    overloaded when ``G > allowance + z sqrt(cv2 A)``. Requests in decode are served, not waiting: a window
    shorter than a request's decode fills up with them at any load (the old rule, a fifth of the arrivals still in
    the system, flagged every 30 s run of the default scenario for that reason).

    Parameters
    ----------
    requests : pandas.DataFrame
        ``SimResult.requests``: one row per arrival, ``arrival_s`` and ``first_token_s`` (NaN: none yet), s.
    duration_s : float
        End of the window, s.
    warmup_s : float
        Start of the measured window, s.
    allowance : float
        Requests that may wait in a stable system beyond the noise (e.g. ``max_batch - 1`` forming a static
        batch), >= 0.
    z : float
        One-sided normal quantile.

    Returns
    -------
    BacklogGrowth
        Its ``overloaded`` property is the verdict.
    """
    t0 = warmup_s + (duration_s - warmup_s) / 2.0
    arrival = requests["arrival_s"].to_numpy(dtype=float)
    first = requests["first_token_s"].to_numpy(dtype=float)

    def waiting(t: float) -> int:
        return int(((arrival <= t) & ~(first <= t)).sum())

    growth = waiting(duration_s) - waiting(t0)
    n_arrived = int(((arrival > t0) & (arrival <= duration_s)).sum())
    gaps = np.diff(np.sort(arrival))
    cv2 = max(1.0, float(gaps.var() / gaps.mean() ** 2)) if len(gaps) >= 10 and gaps.mean() > 0 else 1.0
    return BacklogGrowth(t0, float(duration_s), growth, n_arrived, cv2, allowance + z * math.sqrt(cv2 * n_arrived))

