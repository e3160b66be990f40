"""Simulator studies: fidelity metrics by hand, policy gains by hand, the warm-up window, decode concurrency."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from chipdse.core.scenario import load_scenario
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.reports.sim_pages import policy_gains
from chipdse.studies.simstudy import fidelity_metrics, saturation_window


def _table(est_tp, sim_tp, est_tt=None, sim_tt=None) -> pd.DataFrame:
    n = len(est_tp)
    return pd.DataFrame({"est_throughput_tps": est_tp, "sim_throughput_tps": sim_tp,
                         "est_ttft_s": est_tt if est_tt is not None else [math.nan] * n,
                         "sim_ttft_s": sim_tt if sim_tt is not None else [math.nan] * n})


def test_fidelity_metrics_by_hand() -> None:
    # proportional estimates: every metric is perfect
    m = fidelity_metrics(_table([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 2.0, 4.0], [2.0, 4.0, 8.0]))
    assert m["spearman_throughput"] == pytest.approx(1.0)
    assert m["max_throughput_recovery"] == pytest.approx(1.0)
    assert m["cosine"] == pytest.approx(1.0)
    # one swapped pair of four: rho = 1 - 6 sum d^2 / (n (n^2 - 1)) = 1 - 6 * 2 / 60 = 0.8
    m = fidelity_metrics(_table([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]))
    assert m["spearman_throughput"] == pytest.approx(0.8)
    # the estimator's pick (last) simulates at 2, the best simulated is 4: recovery 0.5
    m = fidelity_metrics(_table([1.0, 2.0, 3.0, 5.0], [1.0, 3.0, 4.0, 2.0]))
    assert m["max_throughput_recovery"] == pytest.approx(0.5)
    # cosine of (1, 1) and (1, 0) after scaling: 1 / sqrt(2)
    m = fidelity_metrics(_table([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]))
    assert m["cosine"] == pytest.approx(1 / math.sqrt(2))
    with pytest.raises(ValueError, match="at least 3"):
        fidelity_metrics(_table([1.0, 2.0], [1.0, 2.0]))


def test_policy_gains_by_hand() -> None:
    rows = []
    for ds, (base_tp, full_tp, base_tt, full_tt) in {"a": (100, 150, 2.0, 1.0), "b": (100, 250, 4.0, 3.0)}.items():
        rows += [{"study": "ablation", "dataset": ds, "variant": "baseline", "sim_throughput_tps": base_tp,
                  "sim_ttft_s": base_tt},
                 {"study": "ablation", "dataset": ds, "variant": "CP+ET+DB", "sim_throughput_tps": full_tp,
                  "sim_ttft_s": full_tt},
                 {"study": "scheduler", "dataset": ds, "variant": "static", "sim_throughput_tps": 10,
                  "sim_ttft_s": 1.0},
                 {"study": "scheduler", "dataset": ds, "variant": "elastic", "sim_throughput_tps": 10,
                  "sim_ttft_s": 1.0}]
    g = policy_gains(pd.DataFrame(rows))
    assert g["full_vs_baseline_throughput_x"] == pytest.approx((1.5 + 2.5) / 2)
    assert g["full_vs_baseline_ttft_reduction"] == pytest.approx((0.5 + 0.25) / 2)
    assert g["elastic_vs_static_throughput_x"] == pytest.approx(1.0)


def test_saturation_window_turns_residents_over() -> None:
    dur, warm = saturation_window(capacity_rps=2.0, concurrency=100.0, min_measure_s=40.0, max_s=1000.0)
    assert warm == pytest.approx(75.0)  # 1.5 x 100 / 2 s
    assert dur == pytest.approx(75.0 + 100.0)  # measured part: 2 x 50 s
    dur, warm = saturation_window(2.0, 100.0, 40.0, max_s=120.0)
    assert dur == 120.0 and warm == 60.0


def test_decode_concurrency_by_hand() -> None:
    sc = load_scenario()
    dyn = Screen(sc)
    n, k = dyn.decode_concurrency(np.array([4, 64, 64]), np.array([1000, 346, 10]), np.array([6.0, 6.0, 6.0]))
    assert list(n) == [24, 346, 10] and list(k) == [4, math.ceil(346 / 6), 2]
    est = sc.spec.estimator.model_copy(update={"batching": "static"})
    static = Screen(dataclasses.replace(sc, spec=sc.spec.model_copy(update={"estimator": est})))
    n, k = static.decode_concurrency(np.array([4, 64, 64]), np.array([1000, 346, 10]), np.array([6.0, 6.0, 6.0]))
    assert list(n) == [24, 5 * 64, 64] and list(k) == [4, 64, 64]  # whole batches: floor(r / b), at least one


def test_warmup_excludes_early_tokens_and_requests() -> None:
    """The hand-worked two-request timeline (tests/test_simulator.py): tokens at 0.25, 0.375, 0.75 and 1.375 (two).
    With a 0.5 s warm-up of the 2 s window, 3 tokens count over 1.5 s, and no request arrived after it."""
    from chipdse.core.workloads import LengthSample
    from chipdse.evaluators.simulator import simulate
    from tests.test_simulator import pipeline_config

    sample = LengthSample(np.array([2, 1]), np.array([3, 2]), np.array([0.0, 0.0625]), "hand")
    res = simulate(pipeline_config(warmup_s=0.5), sample)
    assert res.output_tokens == 5
    assert res.throughput_tps == pytest.approx(3 / 1.5)
    assert res.ttft.count == 0 and res.e2e.count == 0
    with pytest.raises(SimulationError, match="warmup_s"):
        pipeline_config(warmup_s=2.0)


def test_policy_page_survives_runs_without_tokens(tmp_path) -> None:
    """All runs saturated before their first token (zero throughput, no TTFT): the page draws, no log-scale error."""
    from matplotlib.backends.backend_pdf import PdfPages

    from chipdse.reports.sim_pages import policy_page
    from chipdse.studies.simstudy import SimulationStudy

    rows = [{"study": s, "dataset": "d", "variant": v, "sim_throughput_tps": 0.0, "sim_ttft_s": math.nan}
            for s, v in (("ablation", "baseline"), ("ablation", "CP+ET+DB"), ("scheduler", "static"),
                         ("scheduler", "elastic"))]
    study = SimulationStudy(pd.DataFrame(), {}, pd.DataFrame(rows), {}, [], 0.0)
    with PdfPages(tmp_path / "p.pdf") as pdf:
        policy_page(pdf, study, "B*", 0.9)
    assert (tmp_path / "p.pdf").stat().st_size > 0
    assert policy_gains(pd.DataFrame(rows))["full_vs_baseline_throughput_x"] is None


def test_arrival_count_is_capped_with_a_clear_error() -> None:
    from chipdse.evaluators.sim_arrivals import PoissonArrivalConfig
    from tests.test_simulator import pipeline_config

    with pytest.raises(SimulationError, match="arrival.rate_rps: rate x duration at most 2,000,000 arrivals"):
        pipeline_config(arrival=PoissonArrivalConfig(1e7), duration_s=1.0)


def test_default_datasets_resolve_from_a_relative_scenario_path(monkeypatch) -> None:
    """A scenario given by a relative path and no simulation.datasets: its own workload must load again."""
    from pathlib import Path

    from chipdse.core.paths import instances_dir
    from chipdse.core.scenario import with_workload
    from chipdse.studies.simstudy import policy_datasets

    monkeypatch.chdir(instances_dir().parent)
    rel = Path(instances_dir().name) / "scenarios" / "hydra-table3-nemotron-h-4b.yaml"
    sc = load_scenario(rel)
    assert not sc.spec.simulation.datasets
    for ds in policy_datasets(sc):
        assert with_workload(sc, ds).workload.name == sc.workload.name
