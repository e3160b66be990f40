"""Arrival processes of the serving simulator (trace replay, Poisson, Gamma); see ``sim_policies``."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from chipdse.core.workloads import LengthSample
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.evaluators.sim_policies import _positive, _register


class ArrivalKind(StrEnum):
    """Arrival processes (DESIGN.md, Workload)."""

    TRACE = "trace"
    POISSON = "poisson"
    GAMMA = "gamma"


@dataclass(frozen=True)
class TraceArrivalConfig:
    """Replay the sample's ``arrival_s`` timestamps (shifted to start at 0).

    Attributes
    ----------
    rate_rps : float | None
        Target mean rate, requests/s: timestamps are scaled so the trace's mean rate becomes this one.
        ``None`` replays the timestamps as they are.
    """

    rate_rps: float | None = None
    kind: ArrivalKind = field(default=ArrivalKind.TRACE, init=False)

    def __post_init__(self) -> None:
        if self.rate_rps is not None:
            _positive("TraceArrivalConfig.rate_rps", self.rate_rps)


@dataclass(frozen=True)
class PoissonArrivalConfig:
    """Poisson arrivals: independent exponential gaps.

    Attributes
    ----------
    rate_rps : float
        Mean rate, requests/s.
    """

    rate_rps: float
    kind: ArrivalKind = field(default=ArrivalKind.POISSON, init=False)

    def __post_init__(self) -> None:
        _positive("PoissonArrivalConfig.rate_rps", self.rate_rps)


@dataclass(frozen=True)
class GammaArrivalConfig:
    """Gamma-distributed independent gaps (bursty for cv > 1, smoother than Poisson for cv < 1).

    Attributes
    ----------
    rate_rps : float
        Mean rate, requests/s.
    cv : float
        Coefficient of variation of the gaps (1 gives Poisson).
    """

    rate_rps: float
    cv: float = 1.0
    kind: ArrivalKind = field(default=ArrivalKind.GAMMA, init=False)

    def __post_init__(self) -> None:
        _positive("GammaArrivalConfig.rate_rps", self.rate_rps)
        _positive("GammaArrivalConfig.cv", self.cv)


ArrivalConfig = TraceArrivalConfig | PoissonArrivalConfig | GammaArrivalConfig


class ArrivalProcess(ABC):
    """Generates the arrival times of a run."""

    def __init__(self, config: ArrivalConfig) -> None:
        self.config = config

    @abstractmethod
    def arrival_times_s(self, duration_s: float, rng: np.random.Generator, sample: LengthSample) -> np.ndarray:
        """Return increasing arrival times in ``[0, duration_s)``, s, shape (n,).

        Parameters
        ----------
        duration_s : float
            Length of the simulated window, s.
        rng : numpy.random.Generator
            The run's seeded generator (the only source of randomness).
        sample : LengthSample
            The request sample (trace replay reads its ``arrival_s``).
        """


ARRIVAL_PROCESSES: dict[ArrivalKind, type[ArrivalProcess]] = {}
"""Registry: arrival kind -> class."""


def _renewal_times(gaps: Callable[[int], np.ndarray], rate_rps: float, duration_s: float) -> np.ndarray:
    """Cumulative sums of i.i.d. gaps drawn in blocks until they pass ``duration_s``."""
    block = int(rate_rps * duration_s + 10.0 * math.sqrt(rate_rps * duration_s) + 16)
    parts, t = [], 0.0
    while t < duration_s:
        times = t + np.cumsum(gaps(block))
        parts.append(times)
        t = float(times[-1])
    out = np.concatenate(parts)
    return out[out < duration_s]


@_register(ARRIVAL_PROCESSES, ArrivalKind.POISSON)
class PoissonArrivals(ArrivalProcess):
    """Poisson process: exponential gaps with mean 1 / rate (Kleinrock Vol. 1, Sec. 2.10)."""

    def arrival_times_s(self, duration_s: float, rng: np.random.Generator, sample: LengthSample) -> np.ndarray:
        """Return Poisson arrival times in ``[0, duration_s)``, s."""
        rate = self.config.rate_rps
        return _renewal_times(lambda n: rng.exponential(1.0 / rate, n), rate, duration_s)


@_register(ARRIVAL_PROCESSES, ArrivalKind.GAMMA)
class GammaArrivals(ArrivalProcess):
    """Renewal process with Gamma gaps: shape k = 1 / cv^2, scale 1 / (rate k), so the mean gap is 1 / rate."""

    def arrival_times_s(self, duration_s: float, rng: np.random.Generator, sample: LengthSample) -> np.ndarray:
        """Return Gamma-renewal arrival times in ``[0, duration_s)``, s."""
        cfg = self.config
        shape = 1.0 / cfg.cv**2
        scale = 1.0 / (cfg.rate_rps * shape)
        return _renewal_times(lambda n: rng.gamma(shape, scale, n), cfg.rate_rps, duration_s)


@_register(ARRIVAL_PROCESSES, ArrivalKind.TRACE)
class TraceArrivals(ArrivalProcess):
    """Replay of the sample's timestamps, shifted to 0 and optionally rescaled to a target mean rate.

    With a target rate, times are multiplied by observed_rate / target_rate, where the observed rate is
    (n - 1) / (t_last - t_first). A trace shorter than the window simply ends (it is not repeated).
    """

    def arrival_times_s(self, duration_s: float, rng: np.random.Generator, sample: LengthSample) -> np.ndarray:
        """Return the replayed arrival times in ``[0, duration_s)``, s.

        Raises
        ------
        SimulationError
            When the sample has no timestamps, or too few distinct ones to define a rate.
        """
        if sample.arrival_s is None:
            msg = f"trace arrivals need timestamps; the sample from {sample.source!r} has no arrived_at column"
            raise SimulationError(msg)
        t = np.sort(np.asarray(sample.arrival_s, dtype=float))
        t = t - t[0]
        if self.config.rate_rps is not None:
            span = float(t[-1])
            if len(t) < 2 or span <= 0:
                msg = f"rescaling a trace to a rate needs two distinct timestamps; {sample.source!r} has {len(t)}"
                raise SimulationError(msg)
            t = t * ((len(t) - 1) / span / self.config.rate_rps)
        return t[t < duration_s]


def make_arrival(config: ArrivalConfig) -> ArrivalProcess:
    """Return the arrival process of ``config`` (looked up in :data:`ARRIVAL_PROCESSES` by its kind)."""
    return ARRIVAL_PROCESSES[config.kind](config)
