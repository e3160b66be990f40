"""HYDRA's evaluation protocol end to end on a tiny space: each workload's own B* / M_T, every study's runs,
validity from the runs' own counts, and the policy pages drawn without overlaps."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from chipdse.core.errors import SpecError
from chipdse.core.scenario import load_scenario
from chipdse.core.specs import SimulationSettings, parse_spec
from chipdse.studies.hydra.artifacts import ABLATION, REFERENCE
from chipdse.studies.hydra.protocol import policy_study
from chipdse.studies.hydra.simstage import protocol_workloads
from chipdse.studies.hydra.simstudy import policy_summary, simulation_study

TINY = {"total_chiplets": 24, "hbm_min": 4, "hbm_max": 5, "min_per_type": 1, "d2d_GBps": [512],
        "max_batch": [8, 64]}


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, list[str]]:
    import yaml

    from chipdse.core.paths import instances_dir

    inst = instances_dir()
    base = yaml.safe_load((inst / "scenarios" / "default.yaml").read_text())
    base |= {"library": str(inst / "chiplets" / "hydra.yaml"), "package": str(inst / "packages" / "hydra-5x5.yaml"),
             "workload": str(inst / "workloads" / "arxiv.yaml"), "name": "tiny-protocol", "work_limit": 0.5,
             "design_space": TINY,
             "simulation": {"warmup_s": 2, "measure_s": 6, "min_completed": 3, "max_measure_s": 30, "load": 0.9,
                            "datasets": ["arxiv.yaml", "chat.yaml"], "workers": 1}}
    path = tmp_path_factory.mktemp("protocol") / "tiny.yaml"
    path.write_text(yaml.safe_dump(base))
    sc = load_scenario(path)
    workloads = protocol_workloads(sc)
    assert [w.workload.name for w in workloads] == ["arxiv", "chat"]
    return policy_study(workloads)


def test_every_study_runs_on_each_workloads_own_designs(tiny_study) -> None:
    table, skipped = tiny_study
    assert set(table["dataset"]) == {"arxiv", "chat"}
    for (ds, role), g in table.groupby(["dataset", "role"]):
        assert role in ("B*", "M_T")
        if role == "M_T":
            assert not any(f"{ds}: M_T is B*" in s for s in skipped)
        variants = {(s, v) for s, v in zip(g["study"], g["variant"], strict=True)}
        assert {("ablation", v) for v, *_ in ABLATION} <= variants
        assert {("scheduler", v) for v in ("static", "fcfs", "work-stealing", "elastic")} <= variants
        assert {("placement", "round-robin"), ("placement", "exact")} <= variants
        # one design per workload and role; one offered load for the ablation and scheduler studies, one for the
        # placement study (B*: at most the others'; M_T: saturated, above); every run warm-up + measured window
        assert g["label"].nunique() == 1
        shared = g[g["study"] != "placement"]["rate_rps"]
        place = g[g["study"] == "placement"]["rate_rps"]
        assert shared.nunique() == 1 and place.nunique() == 1 and shared.iloc[0] > 0
        assert (place.iloc[0] <= shared.iloc[0]) if role == "B*" else (place.iloc[0] > shared.iloc[0])
        assert set(g["warmup_s"]) == {2.0}
        # the stop rule: at least 2 + 6 s, then until 3 measured requests finished, at most 2 + 30 s
        for _, r in g.iterrows():
            assert 8.0 <= r["duration_s"] <= 32.0
            if r["stop"] == "window":
                assert r["duration_s"] == 8.0 and r["completed"] >= 3
            elif r["stop"] == "completed":
                assert r["duration_s"] > 8.0 and r["completed"] >= 3
            else:
                assert r["stop"] == "cap" and r["duration_s"] == 32.0 and r["completed"] < 3


def test_validity_follows_the_reference_runs_counts(tiny_study) -> None:
    table, _ = tiny_study
    for (_ds, _role, study), g in table.groupby(["dataset", "role", "study"]):
        ref = g[g["variant"] == REFERENCE[study]]["completed"].iloc[0]
        expect = (ref >= 3) & (g["completed"] > 0)
        assert (g["valid"] == expect).all()


def test_summary_counts_every_workload(tiny_study) -> None:
    table, _ = tiny_study
    s = policy_summary(table)
    pairs = table[["dataset", "role"]].drop_duplicates()
    assert s["full_vs_baseline_n"] + s["full_vs_baseline_invalid"] == len(pairs)
    if s["full_vs_baseline_n"]:
        assert s["full_vs_baseline_throughput_x"] > 0 and not math.isnan(s["full_vs_baseline_throughput_x"])


def test_policy_pages_have_no_overlapping_text(tiny_study) -> None:
    from chipdse.reports.sim_pages import policy_page
    from tests.test_report import Pages, overlaps

    table, skipped = tiny_study
    pages = Pages()
    policy_page(pages, simulation_study(pd.DataFrame(), {}, table, {}, skipped, 0.0), "B*", 0.9)
    assert len(pages.pages) == 3
    assert overlaps(pages) == []


def test_the_old_validity_field_name_is_refused_with_the_new_one() -> None:
    """``simulation.min_finished`` and ``min_first_tokens`` were replaced by ``min_completed`` (the stop rule)."""
    for old in ("min_finished", "min_first_tokens"):
        with pytest.raises(SpecError, match=f"{old} was replaced by min_completed"):
            parse_spec(SimulationSettings, {old: 10}, "scenario.yaml")
    s = parse_spec(SimulationSettings, {"min_completed": 3, "static_batch_timeout_s": 2.5}, "scenario.yaml")
    assert (s.min_completed, s.static_batch_timeout_s) == (3, 2.5)
    with pytest.raises(SpecError, match="max_measure_s"):
        parse_spec(SimulationSettings, {"measure_s": 200, "max_measure_s": 100}, "scenario.yaml")
    with pytest.raises(SpecError, match="static_batch_timeout_s"):
        parse_spec(SimulationSettings, {"static_batch_timeout_s": -1}, "scenario.yaml")
