"""HYDRA's claims table (issue 15): ratio arithmetic, the 25% flag and its note, "not run" rows, the policy
numbers from a constructed table of runs, and the claims page's lines."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from chipdse.reports.claims_page import claims_lines
from chipdse.studies.claims import NOT_RUN, Claim, claim_rows
from chipdse.studies.hydra.claims import CLAIMS, measure_policies, measure_table_iv

PAPER = {c.key: c.paper for c in CLAIMS}


def test_rows_cover_every_claim_once_in_order() -> None:
    rows = claim_rows({}, claims=CLAIMS)
    assert [r.key for r in rows] == [c.key for c in CLAIMS]
    assert len({c.key for c in CLAIMS}) == len(CLAIMS)
    assert all(r.note == NOT_RUN and r.ratio is None and not r.off for r in rows)


def test_ratio_flag_and_notes() -> None:
    measured = {"full_tp_mean": 1.55 * 1.10,       # 10% over: no note
                "full_tp_max": 2.3 * 2.0,          # twice the paper: off, the claim's own cause
                "cosine": 0.9 * 0.74,              # 26% under: off, the caller's measured note
                "est_recovery": float("nan"),      # not computed
                "roof_recovery": 0.74 * 1.25}      # exactly 25% over: not flagged (strictly more than 25% is)
    rows = {r.key: r for r in claim_rows(measured, {"cosine": "measured: 3 points only"}, claims=CLAIMS)}
    assert rows["full_tp_mean"].ratio == pytest.approx(1.10)
    assert not rows["full_tp_mean"].off and rows["full_tp_mean"].note == ""
    assert rows["full_tp_max"].ratio == pytest.approx(2.0) and rows["full_tp_max"].off
    claim = next(c for c in CLAIMS if c.key == "full_tp_max")
    cause = "parameters the paper does not give: " + claim.cause + (claim.swept and "; range tried: " + claim.swept)
    assert rows["full_tp_max"].note == cause
    assert rows["cosine"].off and rows["cosine"].note.startswith("measured: 3 points only; parameters the paper")
    assert rows["est_recovery"].this_run is None and rows["est_recovery"].note == NOT_RUN
    assert rows["roof_recovery"].ratio == pytest.approx(1.25) and not rows["roof_recovery"].off
    # a negative change: -21.85% against the paper's -43.7% is a ratio of one half
    half = {r.key: r for r in claim_rows({"full_ttft_change": -21.85}, claims=CLAIMS)}["full_ttft_change"]
    assert half.ratio == pytest.approx(0.5) and half.off


def test_a_swept_claim_names_its_range_only_when_off() -> None:
    """A claim's sweep (range tried, range of the value, where the paper falls) follows its cause in the note."""
    c = Claim("k", "a ratio", 2.0, "x", "Sec. X", "the load (not given)", "load 50-120%: 1.1-1.4x; paper above")
    off, near = claim_rows({"k": 1.2}, claims=(c,))[0], claim_rows({"k": 1.9}, claims=(c,))[0]
    assert off.off and off.note == ("parameters the paper does not give: the load (not given); range tried: load "
                                    "50-120%: 1.1-1.4x; paper above")
    assert not near.off and near.note == ""


def test_page_lines_show_the_reason_only_for_rows_off_by_more_than_25_percent() -> None:
    rows = claim_rows({"full_tp_mean": 1.55, "full_tp_max": 9.2}, {"full_tp_max": "measured reason X"}, claims=CLAIMS)
    lines = claims_lines(rows, "context")
    assert any(ln.strip().startswith("why: measured reason X; parameters the paper does not give") for ln in lines)
    assert not any("why:" in ln for ln in lines if "full_tp_mean" in ln)
    i = next(k for k, ln in enumerate(lines)
             if ln.startswith("[predicted] CP+ET+DB over the static baseline: throughput, mean"))
    assert "ratio 1.00" in lines[i] and not lines[i + 1].strip().startswith("why")
    # the two numbers given, and the ordering that reads the mean (CP+ET+DB beats static: 1.55 > 1, holds)
    assert [ln for ln in lines if "ordering: CP+ET+DB beats the static baseline" in ln][0].endswith("holds")
    not_run = [r for r in rows if r.this_run is None]
    assert len(not_run) == len(CLAIMS) - 3 and all(r.note.startswith(NOT_RUN) for r in not_run)
    assert sum(ln.strip().startswith(NOT_RUN) for ln in lines) == len(CLAIMS) - 3


def _runs() -> pd.DataFrame:
    """Two valid workloads and one whose static baseline gave no first token (left out of the ablation numbers)."""
    rows = []
    ablation = {"arxiv": {"baseline": (100, 2.0), "CP": (110, 2.0), "CP+ET": (120, 1.6), "CP+ET+DB": (150, 1.0)},
                "chat": {"baseline": (200, 4.0), "CP": (300, 4.0), "CP+ET": (400, 3.0), "CP+ET+DB": (500, 1.5)},
                "bwb": {"baseline": (0, math.nan), "CP": (10, 9.0), "CP+ET": (10, 9.0), "CP+ET+DB": (90, 1.0)}}
    for ds, variants in ablation.items():
        for v, (tp, tt) in variants.items():
            rows.append({"study": "ablation", "variant": v, "dataset": ds, "sim_throughput_tps": tp,
                         "sim_ttft_s": tt, "completed": 0 if tp == 0 else 10})
    sched = {"arxiv": {"static": 100, "fcfs": 150, "work-stealing": 170, "elastic": 160},
             "chat": {"static": 200, "fcfs": 220, "work-stealing": 200, "elastic": 300}}
    for ds, variants in sched.items():
        for v, tp in variants.items():
            rows.append({"study": "scheduler", "variant": v, "dataset": ds, "sim_throughput_tps": tp,
                         "sim_ttft_s": 1.0, "completed": 10})
    return pd.DataFrame(rows)


def test_policy_numbers_from_constructed_runs() -> None:
    m, notes = measure_policies(_runs())
    # CP+ET+DB / baseline per valid workload: 150/100 = 1.5 and 500/200 = 2.5 (bwb's baseline finished nothing);
    # means are geometric: sqrt(1.5 x 2.5)
    assert m["full_tp_mean"] == pytest.approx((1.5 * 2.5) ** 0.5)
    assert m["full_tp_max"] == pytest.approx(2.5)
    # TTFT ratios 1.0/2.0 and 1.5/4.0: geometric mean sqrt(0.5 x 0.375) = 0.4330, a change of -56.70%
    assert m["full_ttft_change"] == pytest.approx(100 * ((0.5 * 0.375) ** 0.5 - 1))
    # ET over CP: 120/110 and 400/300; DB over CP+ET: 150/120 and 500/400
    assert m["et_tp_min"] == pytest.approx(120 / 110) and m["et_tp_max"] == pytest.approx(400 / 300)
    assert m["db_tp_mean"] == pytest.approx((150 / 120 * 500 / 400) ** 0.5)
    # elastic / static 1.6 and 1.5; over FCFS 160/150 and 300/220; beats work stealing on 1 of 2
    assert m["elastic_vs_static_tp_min"] == pytest.approx(1.5)
    assert m["elastic_vs_static_tp_max"] == pytest.approx(1.6)
    assert m["elastic_vs_fcfs_min"] == pytest.approx(160 / 150)
    assert m["elastic_beats_ws_share"] == pytest.approx(0.5)
    assert "2 of 3 workloads valid" in notes["full_tp_mean"]
    assert "cp_vs_random_tp_min" not in m  # no placement study in the runs: that row stays "not run"


def test_single_model_rows_say_they_span_one_of_the_papers_three_models() -> None:
    """HYDRA's Figs. 9, 10, 12 span its three Table III models (the protocol scenario's simulation.models); a
    policy table of one model says so in every policy row, a table of all three does not."""
    from chipdse.core.paths import instances_dir
    from chipdse.core.scenario import load_scenario
    from chipdse.studies.hydra.claims import PAPER_MODELS

    protocol = load_scenario(instances_dir() / "scenarios" / "hydra-protocol.yaml")
    assert set(PAPER_MODELS) == set(protocol.spec.simulation.models)
    one = _runs().assign(model="nemotron-h-4b")
    _, notes = measure_policies(one)
    assert "1 of the paper's 3 models (nemotron-h-4b)" in notes["full_tp_mean"]
    three = pd.concat([one.assign(model=m) for m in PAPER_MODELS], ignore_index=True)
    _, notes = measure_policies(three)
    assert "of the paper's 3 models" not in notes["full_tp_mean"]
    # the like-for-like scheduler rows: elastic 160 / 300 over cross-phase FCFS 150 / 200
    xp = pd.concat([one, pd.DataFrame([{"study": "scheduler", "variant": "fcfs (cross-phase)", "dataset": d,
                                        "sim_throughput_tps": tp, "sim_ttft_s": 1.0, "completed": 10,
                                        "model": "nemotron-h-4b"} for d, tp in (("arxiv", 150), ("chat", 200))])])
    m, _ = measure_policies(xp)
    assert m["elastic_vs_fcfs_cross_phase_min"] == pytest.approx(160 / 150)


def test_table_iv_cells_are_read_by_row_and_column() -> None:
    names = ["Jamba", "Zamba", "Nemo"]
    idx = ["Jamba", "Zamba", "Nemo", "Jamba + Zamba", "Jamba + Nemo", "Zamba + Nemo", "Jamba + Zamba + Nemo"]
    b = pd.DataFrame([[1.0, 0.4, 0.3], [0.9, 1.0, 0.7], [0.8, 0.2, 1.0], [1, 1, 1], [1, 1, 1], [1, 1, 1],
                      [0.95, 0.85, 0.9]], index=idx, columns=names)
    m = measure_table_iv({"B*": b, "M_T": b})
    assert m["t4_b_jamba_on_nemo"] == 0.3 and m["t4_b_nemo_on_zamba"] == 0.2 and m["t4_b_jamba_on_zamba"] == 0.4
    assert m["t4_b_all_worst"] == 0.85 and m["t4_t_all_worst"] == 0.85


def test_finalist_gap_compares_the_layout_estimate_with_its_simulation() -> None:
    """Like for like (issue 30): B*'s gap uses the estimate of the simulated (exact) layout, not the screen's."""
    from chipdse.studies.hydra.claims import measure_fidelity

    fid = pd.DataFrame([{"label": "b", "est_throughput_tps": 100.0, "sim_throughput_tps": 80.0},
                        {"label": "m", "est_throughput_tps": 200.0, "sim_throughput_tps": 150.0}])
    labels = {"B*": "b", "M_T": "m"}
    screen = measure_fidelity(fid, labels)
    assert screen["est_gap_b_star"] == pytest.approx(0.2) and screen["est_gap_m_t"] == pytest.approx(0.25)
    layout = measure_fidelity(fid, labels, layout_estimates={"B*": 90.0})
    assert layout["est_gap_b_star"] == pytest.approx(1 - 80 / 90) and layout["est_gap_m_t"] == pytest.approx(0.25)
