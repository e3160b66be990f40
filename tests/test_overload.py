"""The overload flag of a simulation (``evaluators.sim_results.backlog_growth``): M/D/1 runs through the simulator
at 50% and 150% load over 30 s, and hand-made request tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from chipdse.core.workloads import LengthSample
from chipdse.evaluators.sim_arrivals import PoissonArrivalConfig
from chipdse.evaluators.sim_policies import DynamicBatcherConfig
from chipdse.evaluators.sim_results import backlog_growth
from chipdse.evaluators.sim_schedulers import StaticSchedulerConfig
from chipdse.evaluators.simulator import (
    ChipletSpec,
    MemoryGroup,
    NoiSpec,
    PhaseTable,
    ServiceTime,
    SimConfig,
    TaskCost,
    simulate,
)

SERVICE_S = 0.05
"""Deterministic service time of the one prefill chiplet: mu = 20 requests/s."""
ONE_TOKEN = LengthSample(np.array([1]), np.array([1]), None, "one-token requests")


def md1_requests(load: float, seed: int, duration_s: float = 30.0) -> pd.DataFrame:
    """One-token requests at Poisson rate ``load / SERVICE_S`` on one chiplet serving each in SERVICE_S (M/D/1);
    the decode step takes 1 ms on its own chiplet."""
    chips = (ChipletSpec("P", "prefill", "x", 0), ChipletSpec("D", "decode", "x", 1))
    pre = PhaseTable(("p",), {("p", "P"): TaskCost((SERVICE_S, 0.0, 0.0, 0.0))}, {"p": "P"})
    dec = PhaseTable(("d",), {("d", "D"): TaskCost((1e-3, 0.0, 0.0))}, {"d": "D"})
    cfg = SimConfig(chips, pre, dec, (MemoryGroup("m", 1e18),), NoiSpec(1, 2, 100.0, 100.0),
                    PoissonArrivalConfig(load / SERVICE_S), DynamicBatcherConfig(1, math.inf), StaticSchedulerConfig(),
                    duration_s=duration_s, seed=seed, service_time=ServiceTime.DETERMINISTIC)
    return simulate(cfg, ONE_TOKEN).requests


@pytest.mark.parametrize("seed", range(6))
def test_md1_at_half_load_is_not_flagged_and_at_one_and_a_half_is(seed: int) -> None:
    """At rho = 0.5 the M/D/1 queue is stable (mean queue rho^2 / (2 (1 - rho)) = 0.25, Kleinrock 1975, Sec. 5.6):
    no flag. At rho = 1.5 the backlog grows by (lambda - mu) x 15 s = 150 requests over the second half, far above
    3 sqrt(lambda x 15 s) = 64: flagged."""
    stable = backlog_growth(md1_requests(0.5, seed), 30.0)
    assert not stable.overloaded, stable
    assert abs(stable.growth) < 10
    over = backlog_growth(md1_requests(1.5, seed), 30.0)
    assert over.overloaded, over
    assert over.growth == pytest.approx((30.0 - 20.0) * 15.0, rel=0.25)


def test_requests_in_service_are_not_a_backlog() -> None:
    """Long-running requests that all got their first token at once (a window shorter than their decode) leave
    no backlog, however many are still in the system; the same arrivals never served are one."""
    arrival = np.linspace(0.0, 30.0, 301)[1:]  # 10 requests/s, evenly spaced (cv2 0 -> the Poisson floor of 1)
    served = pd.DataFrame({"arrival_s": arrival, "first_token_s": arrival + 0.1, "finish_s": np.nan})
    g = backlog_growth(served, 30.0)
    assert g.growth <= 1 and not g.overloaded
    assert g.arrivals == 150 and g.cv2 == 1.0 and g.threshold == pytest.approx(3.0 * math.sqrt(150.0))
    stuck = served.assign(first_token_s=np.nan)
    g = backlog_growth(stuck, 30.0)
    assert g.growth == 150 and g.overloaded


def test_allowance_and_warmup_move_the_threshold_and_interval() -> None:
    arrival = np.arange(1, 41, dtype=float)  # one per second, never served
    table = pd.DataFrame({"arrival_s": arrival, "first_token_s": np.nan})
    g = backlog_growth(table, 40.0, warmup_s=20.0, allowance=15.0)
    assert (g.start_s, g.end_s) == (30.0, 40.0)
    assert g.growth == 10 and g.threshold == pytest.approx(15.0 + 3.0 * math.sqrt(10.0))
    assert not g.overloaded  # 10 new waiting requests: within a forming batch of 16 plus the noise
