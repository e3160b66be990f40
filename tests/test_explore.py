"""End-to-end: `chipdse explore` on a reduced default scenario writes the PDF, the CSV and the manifest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from chipdse.cli import app
from tests.claims_checks import check_claims_csv


@pytest.mark.slow
def test_explore_writes_report_csv_manifest(write_scenario, tmp_path: Path) -> None:
    # this small space has B* = M_T (one finalist: the floorplan page draws a single row)
    path = write_scenario({"name": "small", "design_space": {
        "total_chiplets": 24, "hbm_min": 4, "hbm_max": 5, "d2d_GBps": [512], "max_batch": [64]},
        "simulation": {"candidates": 2, "spread": 2, "duration_s": 8, "max_duration_s": 30,
                       "warmup_s": 2, "measure_s": 6, "min_completed": 1,
                       "datasets": ["arxiv.yaml", "chat.yaml"], "workers": 1},
        "generality": {"models": ["nemotron-h-4b", "nemotron-h-8b", "jamba-tiny-dev"]}})
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["explore", str(path), "--out", str(out), "--time-limit", "2", "--seed", "3"])
    assert result.exit_code == 0, result.output
    pdf = (out / "report.pdf").read_bytes()
    assert pdf.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type /Page\b", pdf))
    # title, Pareto, configurations, floorplans, exact-vs-heuristic (x finalists), and the simulator's fidelity,
    # NoI / utilization and policy pages, and the two Table IV pages
    assert pages >= 10
    df = pd.read_csv(out / "points.csv")
    # 4 HBM: C(19, 3) = 969 compositions of 20 compute chiplets into 4 types >= 1; 5 HBM: C(18, 3) = 816
    assert len(df) == (969 + 816) * 1 * 1
    roles = set(df["role"].dropna())
    assert df["pareto"].sum() >= 1 and ("B*,M_T" in roles or {"B*", "M_T"} <= roles)
    assert (df.loc[~df["stable"], "ttft_s"].isna()).all()
    # the same table as Parquet (issue 34): every row and column, numbers to the CSV's printed precision
    pq = pd.read_parquet(out / "points.parquet")
    assert list(pq.columns) == list(df.columns) and len(pq) == len(df)
    numeric = list(pq.select_dtypes("number").columns)
    assert len(numeric) >= 20
    pd.testing.assert_frame_equal(pq[numeric], df[numeric], check_dtype=False, rtol=1e-12)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["solver"]["time_limit_s"] == 2
    assert len(manifest["scenario"]["sha256"]) == 64 and "highspy" in manifest["versions"]
    assert not list(out.glob(".*.tmp"))
    sim = manifest["details"]["simulation"]
    assert sim["fidelity"]["points"] >= 3 and -1.0 <= sim["fidelity"]["spearman_throughput"] <= 1.0
    assert 0.0 < sim["fidelity"]["max_throughput_recovery"] <= 1.0
    layouts = {row["layout"].split(" ")[0]: row for row in sim["layouts"]}
    assert {"exact", "HYDRA", "round-robin", "min"} <= set(layouts)
    # the exact placement is never worse than a heuristic on Eq. 2, and the max-link MILP (warm-started from it)
    # never has a busier link than it
    assert layouts["exact"]["eq2_byte_hops_per_s"] <= layouts["HYDRA"]["eq2_byte_hops_per_s"] * (1 + 1e-9)
    assert layouts["exact"]["eq2_byte_hops_per_s"] <= layouts["round-robin"]["eq2_byte_hops_per_s"] * (1 + 1e-9)
    assert layouts["min"]["max_link_GBps"] <= layouts["exact"]["max_link_GBps"] * (1 + 1e-9)
    assert all(row["sim_throughput_tps"] > 0 for row in sim["layouts"])
    table4 = manifest["details"]["generality"]
    assert table4["models"] == ["nemotron-h-4b", "nemotron-h-8b", "jamba-tiny-dev"] and table4["points"] == len(df)
    assert all(table4["scores"][o][n][n] == 1.0 for o in ("B*", "M_T") for n in table4["names"])
    gains = sim["policy_gains"]
    assert gains["full_vs_baseline_n"] + gains["full_vs_baseline_invalid"] >= 1  # every workload counted
    # a short static-batching window may finish nothing (invalid, no average): None, else a positive ratio
    assert all(gains[k] is None or gains[k] > 0 for k in ("full_vs_baseline_throughput_x",
                                                           "elastic_vs_static_throughput_x"))
    claims = check_claims_csv(out, "hydra")
    assert set(claims.loc[claims["claim"].isin(["hbm_capacity_gib", "hbm_bandwidth_GBps"]), "basis"]) == {"input"}
    orderings = claims[claims["kind"] == "ordering"]
    # HYDRA's conclusions (abstract; Secs. VI-C/D/E), each once, the like-for-like baselines beside the paper's,
    # none with a robustness sweep of this scenario
    assert set(orderings["claim"]) == {
        "order_full_beats_static", "order_db_helps", "order_elastic_beats_static", "order_elastic_beats_fcfs",
        "order_elastic_beats_ws", "order_elastic_beats_fcfs_cross_phase", "order_elastic_beats_ws_cross_phase",
        "order_cp_beats_rr", "order_cp_beats_random", "order_exact_beats_rr", "order_exact_beats_random",
        "order_generality_cost"} and len(orderings) == 12
    assert orderings["holds_share"].isna().all()
