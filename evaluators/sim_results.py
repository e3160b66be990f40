"""Results of a simulation run: latency statistics and the metrics table."""

from __future__ import annotations

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
        Simulated window, s.
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


# --------------------------------------------------------------------------------------------------------------
# Topology: stages, compatible chiplets, per-(stage, chiplet) plans, NoI resources
# --------------------------------------------------------------------------------------------------------------
