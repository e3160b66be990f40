"""Specialization vs generality (HYDRA Table IV): single-model rows reproduce each model's own B* / M_T, and the
multi-model choice equals brute force over every point and is never worse than any other row's design."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.backends.backend_pdf import PdfPages
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.design_space import enumerate_points
from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load_scenario, model_scenarios
from chipdse.core.specs import Workload, load_spec
from chipdse.evaluators.selection import pick_finalists
from chipdse.reports.generality_page import generality_pages
from chipdse.studies.hydra.artifacts import PickRule, SimulatedTableIV
from chipdse.studies.hydra.generality import (
    generality,
    normalize_table_iv,
    simulate_table_iv,
    target_sets,
)
from chipdse.studies.hydra.stages import screen_and_pick
from tests.test_report import Pages, overlaps

MODELS = ["jamba-tiny-dev", "zamba2-7b", "nemotron-h-4b"]
SMALL_SPACE = {"total_chiplets": 24, "hbm_min": 4, "hbm_max": 8, "d2d_GBps": [640], "max_batch": [16, 64]}


@pytest.fixture(scope="module")
def table4_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    inst = instances_dir()
    spec = yaml.safe_load((inst / "scenarios" / "hydra-table4-chat.yaml").read_text())
    spec.update(library=str(inst / "chiplets" / "hydra.yaml"), package=str(inst / "packages" / "hydra-5x5.yaml"),
                workload=str(inst / "workloads" / "chat.yaml"), design_space=SMALL_SPACE)
    path = tmp_path_factory.mktemp("t4") / "table4-small.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.fixture(scope="module")
def result(table4_path: Path):
    return generality(load_scenario(table4_path))


def test_single_model_rows_are_each_models_own_optimum(table4_path: Path, result) -> None:
    sc = load_scenario(table4_path)
    pts, _ = enumerate_points(sc)
    for m, variant in enumerate(model_scenarios(sc, MODELS)):
        _, table, picks = screen_and_pick(variant, PickRule.THROUGHPUT_TTFT)
        assert len(table) == len(pts)
        name = result.names[m]
        d = result.designs.set_index(["objective", "target"])
        assert d.loc[("B*", name), "design"] == picks.b_star.label
        assert d.loc[("M_T", name), "design"] == picks.m_t.label
        assert result.scores["B*"].loc[name, name] == 1.0 and result.scores["M_T"].loc[name, name] == 1.0


def test_multi_model_choice_equals_brute_force(table4_path: Path, result) -> None:
    """A plain loop over every point and target set finds the same best worst-case score (maximin)."""
    sc = load_scenario(table4_path)
    pts, _ = enumerate_points(sc)
    frames = [screen_and_pick(v, PickRule.THROUGHPUT_TTFT)[1].frame for v in model_scenarios(sc, MODELS)]
    own = [pick_finalists(f) for f in frames]
    opt_b = [float(f.loc[o.b_star, "throughput_tps"] / f.loc[o.b_star, "ttft_s"])
             for f, o in zip(frames, own, strict=True)]
    opt_t = [float(f.loc[o.m_t, "throughput_tps"]) for f, o in zip(frames, own, strict=True)]
    means = [f.loc[f["stable"], "throughput_tps"].mean() for f in frames]
    records = [f[["stable", "throughput_tps", "ttft_s"]].to_dict("records") for f in frames]
    for targets in target_sets(3):
        best_b = best_t = -1.0
        for p in range(len(pts)):
            rows = [records[m][p] for m in targets]
            if not all(r["stable"] for r in rows):
                continue
            best_t = max(best_t, min(r["throughput_tps"] / opt_t[m] for m, r in zip(targets, rows, strict=True)))
            if all(r["throughput_tps"] >= means[m] for m, r in zip(targets, rows, strict=True)):
                best_b = max(best_b, min(r["throughput_tps"] / r["ttft_s"] / opt_b[m]
                                         for m, r in zip(targets, rows, strict=True)))
        name = " + ".join(result.names[m] for m in targets)
        d = result.designs.set_index(["objective", "target"])
        assert d.loc[("B*", name), "worst_on_target"] == pytest.approx(best_b, rel=1e-12)
        assert d.loc[("M_T", name), "worst_on_target"] == pytest.approx(best_t, rel=1e-12)


def test_m_t_target_design_is_never_worse_on_its_targets_than_any_other_rows_design(result) -> None:
    """Every other row's M_T design that is stable on my targets is a candidate of my maximin choice."""
    scores, stable = result.scores["M_T"], result.stable["M_T"]
    for target in scores.index:
        members = target.split(" + ")
        mine = scores.loc[target, members].min()
        for other in scores.index:
            if stable.loc[other, members].all():
                assert mine >= scores.loc[other, members].min() * (1 - 1e-12)


def test_all_model_design_is_stable_everywhere_and_pages_draw(result, tmp_path: Path) -> None:
    everything = " + ".join(result.names)
    assert result.stable["B*"].loc[everything].all() and result.stable["M_T"].loc[everything].all()
    out = tmp_path / "t4.pdf"
    with PdfPages(out) as pdf:
        generality_pages(pdf, result)
    assert len(re.findall(rb"/Type /Page\b", out.read_bytes())) == 2
    assert json.loads(json.dumps(result.to_json()))["scores"]["B*"][everything]


def test_models_with_other_chiplet_types_or_unknown_names_are_refused(table4_path: Path) -> None:
    sc = load_scenario(table4_path)
    with pytest.raises(SpecError, match=r"generality.models\[1\].*same chiplet types"):
        model_scenarios(sc, ["nemotron-h-4b", "llama-3-8b"])  # attention only: Ap/Ad, not Ap/Ad/Mp/Md
    with pytest.raises(SpecError, match=r"generality.models\[0\].*nemotron-h-4b"):
        model_scenarios(sc, ["gpt-17", "nemotron-h-4b"])
    with pytest.raises(SpecError, match="nemotron-h-4b is listed twice"):
        model_scenarios(sc, ["nemotron-h-4b", "zamba2-7b", "nemotron-h-4b"])
    # models of another family compare among themselves: attention-only Llama-3 8B and 70B share Ap/Ad
    assert [v.model.key for v in model_scenarios(sc, ["llama-3-8b", "llama-3-70b"], "--model")] == \
        ["llama-3-8b", "llama-3-70b"]


def test_cli_generality_json_and_errors(table4_path: Path, write_scenario) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["generality", str(table4_path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["names"] == ["Jamba", "Zamba", "Nemo"] and out["points"] == 6960
    assert out["scores"]["M_T"]["Nemo"]["Nemo"] == 1.0 and out["stable"]["B*"]["Nemo"]["Nemo"] is True
    res = runner.invoke(app, ["generality", str(table4_path), "--model", "gpt-17", "--model", "zamba2-7b"])
    assert res.exit_code == 2 and "--model gpt-17" in res.output and "Traceback" not in res.output
    # no generality section and no --model: one line naming the field
    res = runner.invoke(app, ["generality", str(write_scenario())])
    assert res.exit_code == 2 and "generality.models" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["generality", str(table4_path), "--model", "zamba2-7b"])
    assert res.exit_code == 2 and "at least two" in res.output
    # a load no design sustains for Zamba2-7B: the error says which model and what to change
    spec = yaml.safe_load(table4_path.read_text())
    spec["arrival_rate_rps"] = 50.0
    hot = table4_path.with_name("hot.yaml")
    hot.write_text(yaml.safe_dump(spec))
    res = runner.invoke(app, ["generality", str(hot)])
    assert res.exit_code == 2 and "no stable design point" in res.output and "arrival_rate_rps" in res.output


def test_arrival_rate_override_replaces_the_workload_rate(table4_path: Path) -> None:
    spec = yaml.safe_load(table4_path.read_text())
    own = load_spec(Workload, Path(spec["workload"])).arrival_rate_rps
    spec["arrival_rate_rps"] = 2 * own  # a rate the workload file does not have
    path = table4_path.with_name("override.yaml")
    path.write_text(yaml.safe_dump(spec))
    sc = load_scenario(path)
    assert sc.workload.arrival_rate_rps == 2 * own  # the scenario's override, not the workload file's
    assert np.isclose(sc.workload.model_dump()["arrival_rate_rps"], 2 * own)


@pytest.mark.slow
def test_bundled_table_iv_all_model_design_within_hydras_14_percent() -> None:
    """docs/tour.md's `chipdse generality --json` on the bundled Table IV scenario (174,720 points x 3 models): the
    all-model B* design stays within 14% of every model's own optimum, HYDRA Table IV's headline."""
    res = CliRunner().invoke(app, ["generality", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["points"] == 174_720 and out["names"] == ["Jamba", "Zamba", "Nemo"]
    everything = out["scores"]["B*"]["Jamba + Zamba + Nemo"]
    # HYDRA: the all-model design "limits the worst-case degradation to 14%" (0.86); held here to 10% of it (the
    # claims page reports the exact ratio; with the estimator's transfer wait behind the other sources' share of
    # the busiest group's bytes the worst cell, Nemo's, is 0.88; it was Jamba's 0.81 when only the group's family
    # counted): it must not fall below 0.774
    assert min(everything.values()) >= 0.86 * 0.90
    assert all(out["stable"]["B*"]["Jamba + Zamba + Nemo"].values())


def test_simulated_table_iv_normalization_by_hand() -> None:
    """Two models A and B; B* rows chose points 1 (A), 2 (B), 3 (A + B); M_T rows 4 (A), 2 (B), 3 (A + B)."""
    designs = pd.DataFrame([{"objective": o, "target": t, "point": p} for o, t, p in (
        ("B*", "A", 1), ("B*", "B", 2), ("B*", "A + B", 3), ("M_T", "A", 4), ("M_T", "B", 2), ("M_T", "A + B", 3))])
    #            point, model, TP (tok/s), TTFT (s), sustains the model's rate
    runs = pd.DataFrame([(1, "A", 100.0, 1.0, True), (2, "A", 50.0, 2.0, True), (3, "A", 80.0, 1.0, True),
                         (4, "A", 120.0, 3.0, True), (1, "B", 30.0, np.nan, False), (2, "B", 60.0, 1.0, True),
                         (3, "B", 45.0, 1.5, True), (4, "B", 90.0, 2.0, True)],
                        columns=["point", "model", "sim_throughput_tps", "sim_ttft_s", "stable"])
    scores, stable = normalize_table_iv(runs, designs, ["A", "B"])
    b, t = scores["B*"], scores["M_T"]
    # each model's reference is its best simulated result over every design simulated for it:
    # A: TP / TTFT 100, 25, 80, 40 -> 100 (point 1), TP max 120 (point 4);
    # B: stable TP / TTFT 60, 30, 45 -> 60 (point 2), TP max 90 (point 4)
    assert b.loc["A", "A"] == pytest.approx(1.0) and b.loc["B", "B"] == pytest.approx(1.0)
    assert b.loc["A", "B"] == pytest.approx(30 / 90) and not stable["B*"].loc["A", "B"]  # unstable: TP / best TP
    assert b.loc["B", "A"] == pytest.approx(25 / 100)
    assert b.loc["A + B", "A"] == pytest.approx(0.8) and b.loc["A + B", "B"] == pytest.approx(30 / 60)
    assert t.loc["A", "A"] == pytest.approx(1.0) and t.loc["A", "B"] == pytest.approx(90 / 90)
    assert t.loc["B", "A"] == pytest.approx(50 / 120) and t.loc["B", "B"] == pytest.approx(60 / 90)
    assert t.loc["A + B", "B"] == pytest.approx(45 / 90)
    assert (b.to_numpy() <= 1 + 1e-12).all() and (t.to_numpy() <= 1 + 1e-12).all()  # no cell above the optimum
    assert stable["M_T"].loc["A", "B"]


def test_simulated_table_iv_page_draws_without_overlaps(result) -> None:
    """The simulated matrices sit on their own page beside the estimator's (constructed runs, no simulation)."""
    pages = Pages()
    runs = pd.DataFrame([{"point": int(p), "model": m, "sim_throughput_tps": 100.0 + i, "sim_ttft_s": 1.0,
                          "stable": i % 3 > 0} for i, (p, m) in enumerate(
                              (p, m) for p in sorted(set(result.designs["point"])) for m in result.names)])
    scores, stable = normalize_table_iv(runs, result.designs, result.names)
    sim = SimulatedTableIV(scores, stable, runs, dict.fromkeys(result.names, 1.0), 0.7, "hydra-greedy", [], 0.0)
    generality_pages(pages, dataclasses.replace(result, simulated=sim))
    assert len(pages.pages) == 3
    assert "simulated" in pages.text(1) and overlaps(pages) == []
    with pytest.raises(ValueError, match="load must be in"):
        simulate_table_iv(load_scenario(), result, load=0.0)
