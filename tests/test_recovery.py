"""Max-throughput recovery against exhaustive simulation (HYDRA Table V): the metric on a constructed table worked
out by hand, and the sub-space selection."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from chipdse.core.errors import SpecError
from chipdse.core.scenario import load_scenario
from chipdse.studies.hydra.recovery import recovery_metrics, subspace

NAN = math.nan


def _table() -> pd.DataFrame:
    #        est TP, est TTFT, roof TP, roof TTFT, sim TP, sim TTFT
    data = [(100.0, 1.0, 500.0, 0.1, 80.0, 1.0),    # 0
            (300.0, 2.0, 100.0, 0.5, 200.0, 2.0),   # 1  the estimator's pick
            (250.0, 1.5, 200.0, 0.4, 250.0, 1.0),   # 2  the best simulated, and best TP / TTFT (250)
            (50.0, NAN, 50.0, 0.3, 40.0, NAN)]      # 3  unstable in the estimator and the simulator
    cols = ["est_throughput_tps", "est_ttft_s", "roof_throughput_tps", "roof_ttft_s", "sim_throughput_tps",
            "sim_ttft_s"]
    return pd.DataFrame(data, columns=cols)


def test_recovery_metrics_by_hand() -> None:
    m = recovery_metrics(_table())
    assert m["points"] == 4 and m["best_sim_throughput_tps"] == 250.0
    # simulated front: point 2 dominates 0 (more TP, same TTFT) and 1 (more TP, less TTFT): {2}
    assert m["exhaustive_front_points"] == 1
    assert m["est_pick"] == 1 and m["est_recovery"] == pytest.approx(200 / 250)
    assert m["roof_pick"] == 0 and m["roof_recovery"] == pytest.approx(80 / 250)
    # estimator front: (TP, TTFT) = (100, 1), (300, 2), (250, 1.5): all three non-dominated; holds point 2
    assert m["est_front_points"] == 3 and m["est_front_hits"] == 1
    assert m["est_front_best_tp_recovery"] == pytest.approx(1.0)
    assert m["est_front_tp_per_ttft_recovery"] == pytest.approx(1.0)
    # roofline front: (500, 0.1) dominates all: {0}; best simulated TP/TTFT on it 80 of 250
    assert m["roof_front_points"] == 1 and m["roof_front_hits"] == 0
    assert m["roof_front_tp_per_ttft_recovery"] == pytest.approx(80 / 250)


def test_recovery_needs_a_positive_throughput() -> None:
    t = _table()
    t["sim_throughput_tps"] = 0.0
    with pytest.raises(ValueError, match="positive throughput"):
        recovery_metrics(t)


def test_subspace_holds_every_composition_once() -> None:
    sc = load_scenario()
    pts = subspace(sc, 16, 512, 16)
    # 24 - 16 = 8 compute chiplets over 4 types, at least one each: C(8 - 1, 3) = 35 compositions
    assert len(pts) == math.comb(7, 3)
    assert len({tuple(c) for c in pts.counts}) == len(pts)
    assert (pts.counts.sum(axis=1) == 8).all() and (pts.n_hbm == 16).all()
    with pytest.raises(SpecError, match="no buildable point"):
        subspace(sc, 16, 513, 16)


def test_pick_breaks_exact_throughput_ties_by_lower_ttft() -> None:
    """Two points tie on estimated throughput; the pick is the one with the lower estimated TTFT (row 1 here,
    although row 0 comes first), so its simulated throughput is the recovery."""
    t = _table()
    t.loc[0, ["est_throughput_tps", "est_ttft_s"]] = (300.0, 3.0)  # tie with row 1 (300, 2.0), higher TTFT
    m = recovery_metrics(t)
    assert m["est_pick"] == 1 and m["est_recovery"] == pytest.approx(200 / 250)
