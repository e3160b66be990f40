"""The Python API (issue 19 item 3): ``chipdse.load_scenario / explore / sweep / compare / solve / simulate`` return
typed results whose ``to_pandas()`` holds what the command line prints and writes; docs/python.md's notebook session
runs."""

from __future__ import annotations

import json
import re
from itertools import permutations
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import chipdse
from chipdse import api
from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario, StudyScenario

ROOT = Path(__file__).resolve().parents[1]
TINY_SPACE = {"total_chiplets": 12, "hbm_min": 4, "hbm_max": 4, "min_per_type": 1, "d2d_GBps": [256, 512],
              "max_batch": [8, 32]}
TINY_POINTS = 35 * 2 * 2
"""Compositions of 8 compute chiplets into the 4 types of Nemotron-H-4B, at least one each: C(7, 3) = 35; times two
bandwidths and two batches."""


@pytest.fixture
def tiny(write_scenario) -> Path:  # noqa: ANN001
    return write_scenario({"name": "tiny", "design_space": TINY_SPACE, "simulation": {"enabled": False},
                           "work_limit": 0.2, "time_limit_s": 5}, name="tiny.yaml")


def test_the_package_names_are_the_api_functions() -> None:
    for name in ("load_scenario", "explore", "sweep", "compare", "solve", "simulate", "generality"):
        assert getattr(chipdse, name) is getattr(api, name)
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        chipdse.nonsense  # noqa: B018


def test_load_scenario_returns_each_kind() -> None:
    scenarios = instances_dir() / "scenarios"
    hydra = chipdse.load_scenario()
    assert isinstance(hydra, LoadedScenario) and hydra.spec.name == "nemotron-h-4b-arxiv"
    snake = chipdse.load_scenario(scenarios / "snake-stratum.yaml")
    assert isinstance(snake, StudyScenario) and snake.spec.kind == "snake"
    with pytest.raises(SpecError, match="kind"):
        chipdse.sweep(snake)


def test_sweep_to_pandas_has_every_point_and_the_summary_counts_them(tiny: Path) -> None:
    run = chipdse.sweep(tiny)
    df = run.to_pandas()
    assert len(df) == TINY_POINTS == run.summary["points"]
    assert int(df["pareto"].sum()) == run.summary["pareto"]
    assert run.simulated().empty  # the scenario's sweep.simulate is 0


@pytest.mark.slow
def test_explore_to_pandas_is_the_points_csv_it_writes(tiny: Path, tmp_path: Path) -> None:
    run = chipdse.explore(tiny, seed=1)
    assert run.kind == "hydra" and run.paths == {}
    df = run.to_pandas()
    assert len(df) == TINY_POINTS
    written = run.write_report(tmp_path / "out")
    assert written.paths["csv"] == tmp_path / "out" / "points.csv"
    assert written.paths["csv"].read_text() == df.to_csv(index=False)
    assert list(run.columns()["column"]) == list(df.columns)
    assert json.loads(written.paths["manifest"].read_text())["summary"] == json.loads(json.dumps(run.summary))
    # --no-points-csv (issue 34): the same rows only as Parquet, every other file as before
    lean = run.write_report(tmp_path / "lean", csv=False)
    assert "csv" not in lean.paths and not (tmp_path / "lean" / "points.csv").exists()
    assert {p.name for p in (tmp_path / "lean").iterdir()} == {p.name for p in (tmp_path / "out").iterdir()} - {
        "points.csv"}
    pd.testing.assert_frame_equal(pd.read_parquet(lean.paths["parquet"]), df.reset_index(drop=True),
                                  check_exact=True)


def test_compare_to_pandas_is_what_the_cli_prints_as_json(tiny: Path) -> None:
    run = chipdse.compare("hbm-partition", tiny, point="m-t")
    df = run.to_pandas()
    cli = CliRunner().invoke(app, ["compare", "hbm-partition", str(tiny), "--point", "m-t", "--json"])
    assert cli.exit_code == 0, cli.output
    printed = json.loads(cli.stdout)
    assert list(df["method"]) == [r["method"] for r in printed]
    assert list(df["objective"]) == [r["objective"] for r in printed]
    exact = df[df["exact"]]
    assert (exact["objective"] == exact["objective"].iloc[0]).all()  # every exact method proves one optimum
    with pytest.raises(ValueError, match="--point"):
        chipdse.compare("hbm-partition", tiny, point="best")


def test_solve_qap_finds_the_published_optimum_of_a_small_instance(tmp_path: Path) -> None:
    """A 4-facility QAP whose optimum is worked out by brute force here (24 permutations)."""
    flow = [[0, 5, 2, 4], [5, 0, 3, 0], [2, 3, 0, 0], [4, 0, 0, 0]]
    dist = [[0, 22, 53, 53], [22, 0, 40, 62], [53, 40, 0, 55], [53, 62, 55, 0]]
    path = tmp_path / "tiny4.dat"
    path.write_text("4\n\n" + "\n".join(" ".join(map(str, r)) for r in flow) + "\n\n"
                    + "\n".join(" ".join(map(str, r)) for r in dist) + "\n")
    best = min(sum(flow[i][j] * dist[p[i]][p[j]] for i in range(4) for j in range(4)) for p in permutations(range(4)))
    run = chipdse.solve("qap", path, solver="bnb")
    assert run.solution.objective == best
    assert run.to_pandas().loc[0, "objective"] == best


def test_simulate_to_pandas_is_one_row_of_the_metrics(tiny: Path) -> None:
    run = chipdse.simulate(tiny, duration_s=20, seed=3)
    df = run.to_pandas()
    assert len(df) == 1
    assert df.loc[0, "throughput_tps"] == run.metrics["throughput_tps"]
    assert df.loc[0, "ttft_s.count"] == run.metrics["ttft_s"]["count"]
    with pytest.raises(ValueError, match="--scheduler"):
        chipdse.simulate(tiny, scheduler="round-robin")


@pytest.mark.slow
def test_the_readme_notebook_session_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/python.md's session block, run as written from the checkout's root; its numbers are the page's."""
    readme = (ROOT / "docs" / "python.md").read_text()
    block = re.search(r"<!-- ci:notebook -->\n```python\n(.*?)```\n<!-- /ci:notebook -->", readme, re.S)
    assert block is not None, "docs/python.md has no ci:notebook block"
    code = block.group(1)
    assert len([ln for ln in code.splitlines() if ln.strip()]) == 5
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile(code, "docs/python.md", "exec"), scope)  # noqa: S102 - the docs' own example
    stated = int(re.search(r"scores all ([\d,]+) design points", readme).group(1).replace(",", ""))
    assert len(scope["points"]) == stated
    assert set(scope["methods"]["method"]) >= {"milp-highs", "cpsat"}
