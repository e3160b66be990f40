"""Simulator studies: fidelity metrics by hand, policy gains by hand, the warm-up window, decode concurrency."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from chipdse.core.scenario import load_scenario
from chipdse.core.workloads import LengthSample
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.policies import scheduler_config
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.evaluators.simulator import simulate
from chipdse.studies.hydra.artifacts import ABLATION, SCHEDULER_VARIANTS
from chipdse.studies.hydra.simstudy import (
    ANOTHER_RUN,
    compare,
    fidelity_metrics,
    first_tokens_in_window,
    geomean,
    mark_validity,
    placement_rate_rps,
    policy_jobs,
    policy_report,
    policy_rows,
    protocol_warmup_s,
    saturation_window,
    simulation_study,
)
from tests.test_simulator import pipeline_config


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
    """Geometric means of the per-workload ratios: throughput 1.5 and 2.5, TTFT 1/2 and 3/4."""
    rows = []
    for ds, (base_tp, full_tp, base_tt, full_tt) in {"a": (100, 150, 2.0, 1.0), "b": (100, 250, 4.0, 3.0)}.items():
        rows += [{"study": "ablation", "dataset": ds, "variant": "baseline", "sim_throughput_tps": base_tp,
                  "sim_ttft_s": base_tt, "completed": 50},
                 {"study": "ablation", "dataset": ds, "variant": "CP+ET+DB", "sim_throughput_tps": full_tp,
                  "sim_ttft_s": full_tt, "completed": 50},
                 {"study": "scheduler", "dataset": ds, "variant": "static", "sim_throughput_tps": 10,
                  "sim_ttft_s": 1.0, "completed": 50},
                 {"study": "scheduler", "dataset": ds, "variant": "elastic", "sim_throughput_tps": 10,
                  "sim_ttft_s": 1.0, "completed": 50}]
    g = policy_report(mark_validity(pd.DataFrame(rows), min_completed=10))["gains"]
    assert g["full_vs_baseline_throughput_x"] == pytest.approx(math.sqrt(1.5 * 2.5))
    assert g["full_vs_baseline_ttft_reduction"] == pytest.approx(1 - math.sqrt(0.5 * 0.75))
    assert g["full_vs_baseline_throughput_x_min"] == 1.5 and g["full_vs_baseline_throughput_x_max"] == 2.5
    # no role column: every workload is scored as B*, target = TP/TTFT: 1.5 / 0.5 = 3 and 2.5 / 0.75
    assert g["full_vs_baseline_target_x"] == pytest.approx(math.sqrt(3.0 * 2.5 / 0.75))
    assert g["full_vs_baseline_n"] == 2 and g["full_vs_baseline_invalid"] == 0
    assert g["elastic_vs_static_throughput_x"] == pytest.approx(1.0) and g["elastic_vs_static_wins"] == 0


def _run(ds: str, role: str, study: str, variant: str, tp: float, ttft: float, completed: int) -> dict:
    return {"model": "m", "dataset": ds, "role": role, "study": study, "variant": variant,
            "sim_throughput_tps": tp, "sim_ttft_s": ttft, "completed": completed}


def test_invalid_baseline_is_marked_and_left_out_of_the_averages() -> None:
    """Workload c's baseline completed 3 < 10 requests by its cap: c's ablation rows are invalid, shown with the
    reason and left out; d's CP+ET+DB completed none: that row is invalid and with it the whole of workload d (the one
    validity rule, issue 29: a workload counts with every run or not at all). The average is over a and b only."""
    data = {"a": ((100, 2.0, 40), (200, 1.0, 80)), "b": ((100, 2.0, 40), (800, 1.0, 90)),
            "c": ((1, 90.0, 3), (900, 1.0, 99)), "d": ((100, 2.0, 40), (0, 0.0, 0))}
    runs = [_run(ds, "M_T", "ablation", v, *x) for ds, pair in data.items()
            for v, x in zip(("baseline", "CP+ET+DB"), pair, strict=True)]
    t = mark_validity(pd.DataFrame(runs), min_completed=10)
    by = t.set_index(["dataset", "variant"])
    assert not by.loc[("c", "baseline"), "valid"] and not by.loc[("c", "CP+ET+DB"), "valid"]
    assert by.loc[("c", "CP+ET+DB"), "invalid_reason"] == ("baseline completed 3 < 10 requests by the cap "
                                                            "(simulation.max_measure_s)")
    assert not by.loc[("d", "CP+ET+DB"), "valid"] and not by.loc[("d", "baseline"), "valid"]
    assert by.loc[("d", "CP+ET+DB"), "invalid_reason"] == "no request completed in its window"
    assert by.loc[("d", "baseline"), "invalid_reason"] == f"{ANOTHER_RUN}: no request completed in its window"
    assert by.loc[("a", "CP+ET+DB"), "valid"] and by.loc[("b", "baseline"), "valid"]
    c = compare(t, "ablation", "CP+ET+DB", "baseline")
    assert (c["n"], c["invalid"]) == (2, 2)
    assert c["throughput_x"] == pytest.approx(math.sqrt(2.0 * 8.0))  # = 4, not pulled up by c's 900x
    assert c["target_x"] == pytest.approx(4.0)  # M_T: the target metric is throughput
    assert c["wins"] == 2
    # a workload with no reference run at all is invalid too
    t2 = mark_validity(pd.DataFrame([_run("e", "B*", "ablation", "CP", 5, 1.0, 50)]), min_completed=10)
    assert not t2["valid"].iloc[0] and "no run" in t2["invalid_reason"].iloc[0]


def test_first_tokens_in_window_counts_requests_that_outlive_the_window() -> None:
    """Hand timeline (tests.test_simulator's pipeline: 0.125 s per prompt token): A (prompt 2) at 0 gets its first
    token at 0.25, B (prompt 1) at 1/16 at 0.375; both want 1000 tokens, so neither finishes in the 2 s window. With
    a 0.3 s warm-up only B's first token is in the measured window."""
    sample = LengthSample(np.array([2, 1]), np.array([1000, 1000]), np.array([0.0, 0.0625]), "hand")
    res = simulate(pipeline_config(), sample)
    assert res.requests["first_token_s"].tolist() == [0.25, 0.375] and res.finished == 0
    assert first_tokens_in_window(res.requests, 0.3, 2.0) == 1 and first_tokens_in_window(res.requests, 0.0, 2.0) == 2


def test_geomean_ignores_non_positive_and_nan() -> None:
    assert geomean([2.0, 8.0, math.nan, 0.0, -1.0]) == pytest.approx(4.0)
    assert math.isnan(geomean([]))


def test_policy_rows_copy_the_shared_runs_into_every_study() -> None:
    """The scheduler study's static / elastic runs are the ablation's CP / CP+ET runs (static batching, Sec. VI-B)
    and the placement study's round-robin / exact runs its baseline / CP runs: copied, not simulated twice."""
    tp = {"baseline": 1.0, "CP": 2.0, "CP+ET": 3.0, "CP+ET+DB": 4.0}
    res = [{**_run("a", "B*", "ablation", v, x, 1.0, 20), "chiplet_utilization": {"c": 0.5}} for v, x in tp.items()]
    res += [_run("a", "B*", "scheduler", "fcfs", 5.0, 1.0, 20), _run("a", "B*", "placement", "random", 6.0, 1.0, 20)]
    t = policy_rows(res, min_completed=10).set_index(["study", "variant"])["sim_throughput_tps"]
    assert t[("scheduler", "static")] == 2.0 and t[("scheduler", "elastic")] == 3.0
    assert t[("placement", "round-robin")] == 1.0 and t[("placement", "exact")] == 2.0
    assert t[("scheduler", "fcfs")] == 5.0 and t[("placement", "random")] == 6.0
    assert len(t) == 4 + 2 + 1 + 2 + 1
    assert ("scheduler", "static") in dict.fromkeys(
        (s, v) for s, v in [("scheduler", x) for x in SCHEDULER_VARIANTS if x not in ("fcfs", "work-stealing")])


def test_policy_jobs_windows_and_offered_load() -> None:
    """Every run: warm-up + measured window, the warm-up excluded, offered load x capacity; the shared runs once."""
    sentinel = {k: object() for k in ("exact", "round-robin", "random")}
    jobs = policy_jobs(None, sentinel, 2.0, "ds", load=0.9, warmup_s=20.0, measure_s=100.0,  # type: ignore[arg-type]
                       tags={"role": "B*"})
    assert {(j.duration_s, j.warmup_s, j.rate_rps) for j in jobs} == {(120.0, 20.0, 1.8)}
    names = [(j.tags["study"], j.tags["variant"]) for j in jobs]
    ablation = [("ablation", v) for v, p, *_ in ABLATION if p != "hydra-greedy"]  # no greedy layout given
    assert names == ablation + [("scheduler", "fcfs"), ("scheduler", "work-stealing"),
                                ("scheduler", "fcfs (cross-phase)"), ("scheduler", "work-stealing (cross-phase)"),
                                ("placement", "random")]
    sched = [j for j in jobs if j.tags["study"] == "scheduler"]
    assert all(j.batching == "static" and j.layout is sentinel["exact"] for j in sched)
    # like for like with elastic (cross-phase by default): FCFS and work stealing run again with the same access
    access = {j.tags["variant"]: dataclasses.replace(scheduler_config(j.scheduler), **dict(j.scheduler_options))
              .cross_phase for j in sched}
    assert access == {"fcfs": False, "work-stealing": False, "fcfs (cross-phase)": True,
                      "work-stealing (cross-phase)": True}
    assert scheduler_config("elastic").cross_phase is True
    assert all(j.tags["role"] == "B*" and j.tags["load"] == 0.9 for j in jobs)


def test_placement_study_runs_every_layout_at_its_own_load() -> None:
    """B*: 0.9 x the weakest of capacities 2, 0.5, 1 req/s = 0.45 req/s; M_T: 2 x the strongest = 4 req/s. With its
    own rate the placement study simulates round-robin and exact itself instead of copying the ablation's runs."""
    assert placement_rate_rps("B*", 0.9, [2.0, 0.5, 1.0, 0.0]) == pytest.approx(0.45)
    assert placement_rate_rps("M_T", 0.9, [2.0, 0.5, 1.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="positive layout capacity"):
        placement_rate_rps("B*", 0.9, [0.0])
    sentinel = {k: object() for k in ("exact", "round-robin", "random")}
    jobs = policy_jobs(None, sentinel, 2.0, "ds", load=0.9, warmup_s=20.0, measure_s=100.0,  # type: ignore[arg-type]
                       tags={"role": "B*"}, placement_rate=0.45)
    place = [j for j in jobs if j.tags["study"] == "placement"]
    assert [j.tags["variant"] for j in place] == ["round-robin", "random", "exact"]
    assert {j.rate_rps for j in place} == {0.45} and {j.rate_rps for j in jobs if j not in place} == {1.8}
    assert all(j.layout is sentinel[j.tags["variant"]] for j in place)
    runs = [{**_run("a", "B*", "ablation", v, 1.0, 1.0, 20)} for v, p, *_ in ABLATION if p != "hydra-greedy"]
    runs += [_run("a", "B*", "placement", v, 7.0, 1.0, 20) for v in ("round-robin", "random", "exact")]
    t = policy_rows(runs, min_completed=10)
    assert (t[t["study"] == "placement"]["sim_throughput_tps"] == 7.0).all() and (t["study"] == "placement").sum() == 3


def test_protocol_warmup_by_hand() -> None:
    """One static batch: 8 requests at 0.5 req/s fill it in 16 s, 100 output tokens at 0.1 s per iteration decode
    it in 10 s; 2 lifetimes = 52 s, above the fixed 20 s; 0 lifetimes keeps 20 s; the cap wins when lower."""
    assert protocol_warmup_s(20.0, 2.0, 8, 0.5, 100.0, 0.1, cap_s=3500.0) == pytest.approx(52.0)
    assert protocol_warmup_s(20.0, 0.0, 8, 0.5, 100.0, 0.1, cap_s=3500.0) == 20.0
    assert protocol_warmup_s(20.0, 2.0, 8, 0.5, 100.0, 0.1, cap_s=30.0) == 30.0


def test_measured_window_gives_the_closed_form_throughput() -> None:
    """Two long requests decode together on the hand-worked pipeline (tests/test_simulator.py): an iteration at
    batch 2 takes D1 0.25 + 2 x 0.125 = 0.5 s then D2 0.125 s, so 2 tokens per 0.625 s = 3.2 tok/s once both are in
    decode. Measured over [5, 105] s the throughput is 3.2 tok/s; a 2 s window from 0 s is not (its two first
    tokens come from the prefills, 0.125 s each: 7 tokens in 2 s)."""
    from chipdse.core.workloads import LengthSample
    from chipdse.evaluators.simulator import simulate
    from tests.test_simulator import pipeline_config

    sample = LengthSample(np.array([1, 1]), np.array([10_000, 10_000]), np.array([0.0, 0.0]), "hand")
    res = simulate(pipeline_config(duration_s=105.0, warmup_s=5.0, record_timeline=False), sample)
    assert res.throughput_tps == pytest.approx(2 / 0.625, rel=0.01)
    short = simulate(pipeline_config(duration_s=2.0, record_timeline=False), sample)
    assert short.throughput_tps == pytest.approx(7 / 2.0)


def test_saturation_window_turns_residents_over() -> None:
    dur, warm = saturation_window(capacity_rps=2.0, concurrency=100.0, min_measure_s=40.0, max_s=1000.0)
    assert warm == pytest.approx(75.0)  # 1.5 x 100 / 2 s
    assert dur == pytest.approx(75.0 + 100.0)  # measured part: 2 x 50 s
    dur, warm = saturation_window(2.0, 100.0, 40.0, max_s=120.0)
    assert dur == 120.0 and warm == 60.0


def test_decode_concurrency_by_hand() -> None:
    sc = load_scenario()
    est = sc.spec.estimator.model_copy(update={"batching": "dynamic"})
    dyn = Screen(dataclasses.replace(sc, spec=sc.spec.model_copy(update={"estimator": est})))
    n, k = dyn.serving.decode_concurrency(np.array([4, 64, 64]), np.array([1000, 346, 10]), np.array([6.0, 6.0, 6.0]))
    assert list(n) == [24, 346, 10] and list(k) == [4, math.ceil(346 / 6), 2]
    est = sc.spec.estimator.model_copy(update={"batching": "static"})
    static = Screen(dataclasses.replace(sc, spec=sc.spec.model_copy(update={"estimator": est})))
    n, k = static.serving.decode_concurrency(np.array([4, 64, 64]), np.array([1000, 346, 10]),
                                             np.array([6.0, 6.0, 6.0]))
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

    rows = [{"study": s, "dataset": "d", "variant": v, "sim_throughput_tps": 0.0, "sim_ttft_s": math.nan}
            for s, v in (("ablation", "baseline"), ("ablation", "CP+ET+DB"), ("scheduler", "static"),
                         ("scheduler", "elastic"))]
    rows = [{**r, "completed": 0, "rate_rps": 1.0, "duration_s": 10.0, "warmup_s": 2.0} for r in rows]
    study = simulation_study(pd.DataFrame(), {}, mark_validity(pd.DataFrame(rows), 10), {}, [], 0.0)
    with PdfPages(tmp_path / "p.pdf") as pdf:
        policy_page(pdf, study, "B*", 0.9)
    assert (tmp_path / "p.pdf").stat().st_size > 0
    gains = policy_report(mark_validity(pd.DataFrame(rows), 10))["gains"]
    assert gains["full_vs_baseline_throughput_x"] is None and gains["full_vs_baseline_invalid"] == 1


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
    from chipdse.studies.hydra.simstudy import policy_datasets

    monkeypatch.chdir(instances_dir().parent)
    rel = Path(instances_dir().name) / "scenarios" / "hydra-table3-nemotron-h-4b.yaml"
    sc = load_scenario(rel)
    assert not sc.spec.simulation.datasets
    for ds in policy_datasets(sc):
        assert with_workload(sc, ds).workload.name == sc.workload.name
