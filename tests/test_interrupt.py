"""Ctrl-C during an exact solve raises KeyboardInterrupt instead of returning a cut-short result that a resumable
sweep would store as finished (HiGHS through Pyomo and CP-SAT both catch SIGINT themselves by default)."""

from __future__ import annotations

import os
import signal
import threading
import time

import highspy
import numpy as np
import pytest
from ortools.sat.python import cp_model

from chipdse.formulations.qap import QapInstance
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.qap import solve_qap


def _hard_qap(n: int = 14) -> QapInstance:
    rng = np.random.default_rng(3)
    flow = rng.integers(0, 10, (n, n))
    dist = rng.integers(1, 10, (n, n))
    return QapInstance("random14", np.triu(flow, 1) + np.triu(flow, 1).T, np.triu(dist, 1) + np.triu(dist, 1).T)


@pytest.mark.parametrize(("solver", "limit_s"), [("highs", 4.0), ("cpsat", 2.0)])
def test_sigint_during_a_solve_raises_keyboard_interrupt(solver: str, limit_s: float,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = []

    def start_timer_with(run):  # noqa: ANN001, ANN202
        def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            started.append(time.perf_counter())
            timer.start()  # the signal lands 0.5 s into the solver call itself, not in the model build
            return run(*args, **kwargs)
        return wrapped

    if solver == "highs":
        monkeypatch.setattr(highspy.Highs, "run", start_timer_with(highspy.Highs.run))
    else:
        monkeypatch.setattr(cp_model.CpSolver, "Solve", start_timer_with(cp_model.CpSolver.Solve))
    try:
        with pytest.raises(KeyboardInterrupt):
            solve_qap(_hard_qap(), solver, SolverConfig(time_limit_s=limit_s))
    finally:
        timer.cancel()
    assert started, "the solver was never called"
    t0 = started[0]
    # Both finish their (short) time limit at the latest, then the interrupt is raised: CP-SAT with its own SIGINT
    # handler off, HiGHS (highspy >= 1.8) because it runs in the calling thread; neither returns a result
    assert time.perf_counter() - t0 < limit_s + 5.0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is restored
