"""Python-first scenarios (issue 35 item 3): ``chipdse.load_scenario`` takes a mapping and ``overrides=``, validated
exactly as a file is (the same one-line errors), ``chipdse.grid`` screens a grid of overrides into one DataFrame,
and results have a one-line ``repr``."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import chipdse
from chipdse import api
from chipdse.core.errors import SpecError
from chipdse.core.overrides import parse_overrides
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import DICT_NAME, LoadedScenario, reload
from chipdse.studies.hydra.stages import screen_and_pick

TINY_SPACE = {"total_chiplets": 12, "hbm_min": 4, "hbm_max": 4, "min_per_type": 1, "d2d_GBps": [256, 512],
              "max_batch": [8, 32]}
TINY_POINTS = 35 * 2 * 2
"""Compositions of 8 compute chiplets into the 4 types of Nemotron-H-4B, at least one each: C(7, 3) = 35; times two
bandwidths and two batches."""

UTIL_AXIS = [0.5, 0.7, 0.9]


def notebook_scenario() -> dict:
    """What a notebook user writes: the scenario as a dict, the files by their bundled names."""
    return {"name": "notebook", "model": "nemotron-h-4b", "library": "hydra.yaml", "package": "hydra-5x5.yaml",
            "workload": "arxiv.yaml", "design_space": dict(TINY_SPACE), "estimator": {"batching": "dynamic"},
            "simulation": {"enabled": False}}


def test_a_mapping_loads_like_the_file_it_would_be(tmp_path: Path) -> None:
    data = notebook_scenario()
    from_dict = chipdse.load_scenario(data, base_dir=tmp_path)
    file = tmp_path / "notebook.yaml"
    file.write_text(yaml.safe_dump(data))
    from_file = chipdse.load_scenario(file)
    assert isinstance(from_dict, LoadedScenario)
    assert from_dict.spec == from_file.spec
    assert from_dict.path == tmp_path.resolve() / DICT_NAME and from_dict.data == data
    assert from_dict.package_path == from_file.package_path and from_dict.workload_path == from_file.workload_path
    assert np.array_equal(from_dict.lengths.decode_tokens, from_file.lengths.decode_tokens)
    data["design_space"]["hbm_max"] = 5  # the caller's dict changing later does not change the loaded scenario
    assert from_dict.spec.design_space.hbm_max == 4


def test_overrides_from_python_are_the_set_options_of_the_command_line(tmp_path: Path) -> None:
    file = tmp_path / "notebook.yaml"
    file.write_text(yaml.safe_dump(notebook_scenario()))
    by_dict = chipdse.load_scenario(file, overrides={"design_space.d2d_GBps": [640], "library.compute.Ad.utilization":
                                                     0.9, "simulation.static_batch_timeout_s": 0.5})
    by_set = chipdse.load_scenario(file, ["design_space.d2d_GBps=[640]", "library.compute.Ad.utilization=0.9",
                                          "simulation.static_batch_timeout_s=0.5"])
    assert by_dict.spec == by_set.spec and by_dict.library == by_set.library
    assert by_dict.spec.design_space.d2d_GBps == [640]
    assert {c.name: c.utilization for c in by_dict.library.compute}["Ad"] == 0.9
    assert {o.source for o in by_dict.overrides} == {"overrides"} and {o.source for o in by_set.overrides} == {"--set"}


def test_a_negative_bandwidth_fails_with_the_files_own_message(tmp_path: Path) -> None:
    bad = notebook_scenario()
    bad["design_space"]["d2d_GBps"] = [-5]
    file = tmp_path / "bad.yaml"
    file.write_text(yaml.safe_dump(bad))
    with pytest.raises(SpecError) as in_file:
        chipdse.load_scenario(file)
    with pytest.raises(SpecError) as in_dict:
        chipdse.load_scenario(bad, base_dir=tmp_path)
    with pytest.raises(SpecError) as as_override:
        chipdse.load_scenario(notebook_scenario(), base_dir=tmp_path, overrides={"design_space.d2d_GBps": [-5]})
    assert in_file.value.field == in_dict.value.field == "design_space.d2d_GBps[0]"
    assert in_file.value.expected == in_dict.value.expected
    assert "greater than or equal to 1 (got -5)" in in_file.value.expected
    assert in_dict.value.source == str(tmp_path.resolve() / DICT_NAME)
    ov = as_override.value
    assert (ov.source, ov.field) == ("overrides", "design_space.d2d_GBps=[-5]")
    assert ov.expected.startswith(in_file.value.expected)  # then "(as <dict>: design_space.d2d_GBps[0])"
    for err in (in_file.value, in_dict.value, ov):
        assert "\n" not in str(err)


@pytest.mark.parametrize(("scenario", "kwargs", "source", "words"), [
    ([1, 2], {}, "scenario", "a YAML file's path, a mapping"),
    ("default.yaml", {"base_dir": "."}, "base_dir", "a scenario mapping"),
    (None, {"overrides": {"design_space..x": 1}}, "overrides", "a dotted path"),
    (None, {"overrides": {"design_space.d2d_GBps": None}}, "overrides", "a value"),
    (None, {"overrides": [("design_space.d2d_GBps", [1])]}, "overrides", "a mapping of dotted paths"),
    (None, {"overrides": {"library.compute.Zz.utilization": 0.5}}, "overrides", "an entry of the list by name"),
    ({**notebook_scenario(), "design_spac": {}}, {}, DICT_NAME, "Extra inputs are not permitted"),
    (7, {}, "scenario", "a mapping of scenario fields"),
    (notebook_scenario(), {"base_dir": 42}, "base_dir", "a folder path"),
    (notebook_scenario(), {"base_dir": "/no/such/folder"}, "base_dir", "an existing folder"),
    (None, {"sets": "design_space.max_batch=[8]"}, "sets", "a list of PATH=VALUE strings"),
])
def test_bad_python_input_is_one_line(scenario: object, kwargs: dict, source: str, words: str) -> None:
    with pytest.raises(SpecError) as err:
        chipdse.load_scenario(scenario, **kwargs)  # type: ignore[arg-type]
    assert err.value.source.endswith(source) and words in str(err.value) and "\n" not in str(err.value)


def test_a_3x3_grid_is_one_dataframe_each_row_as_the_file_route_picks_it(tmp_path: Path) -> None:
    axes = {"library.compute.Ap.utilization": UTIL_AXIS, "library.compute.Mp.utilization": UTIL_AXIS}
    df = chipdse.grid(notebook_scenario(), axes, base_dir=tmp_path)
    assert isinstance(df, pd.DataFrame) and "combination_reason" not in df
    assert sorted(df["combination"].unique()) == list(range(9))
    assert set(df["role"]) <= {"B*", "M_T", "B*,M_T"}
    combos = list(itertools.product(*axes.values()))
    file = tmp_path / "notebook.yaml"
    file.write_text(yaml.safe_dump(notebook_scenario()))
    for i, (ap, mp) in enumerate(combos):
        mine = df[df["combination"] == i]
        assert mine["library.compute.Ap.utilization"].tolist() == [ap] * len(mine)
        assert mine["library.compute.Mp.utilization"].tolist() == [mp] * len(mine)
        # the same point through the command line's route: the file and --set strings
        sc = chipdse.load_scenario(file, [f"library.compute.Ap.utilization={ap}",
                                          f"library.compute.Mp.utilization={mp}"])
        _, table, picks = screen_and_pick(sc)
        assert dict(zip(mine["label"], mine["role"], strict=True)) == \
            {table.frame.loc[k, "label"]: role for k, role in picks.roles().items()}
    # physics, not code: prefill chiplets that reach more of their peak FLOP/s cannot lower the best throughput of
    # the same design space (M_T is its highest-throughput stable point). (D2D bandwidth is not such an axis:
    # its PHY takes core area, so more of it can slow a design.)
    m_t = df[df["role"].str.contains("M_T")].set_index("combination")["throughput_tps"]
    best = np.array([m_t[i] for i in range(9)]).reshape(3, 3)
    assert np.all(np.diff(best, axis=0) >= -1e-9) and np.all(np.diff(best, axis=1) >= -1e-9)
    assert best[2, 2] > 1.2 * best[0, 0]  # and the Mamba prefill chiplets' efficiency buys something here


def test_a_bad_value_on_an_axis_fails_before_any_combination_is_screened(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    def no_screen(*args: object) -> None:
        raise AssertionError("screened before the last combination was checked")

    monkeypatch.setattr(api, "screen_only", no_screen)
    with pytest.raises(SpecError) as err:
        chipdse.grid(notebook_scenario(), {"design_space.d2d_GBps": [[256], [2048]]}, base_dir=tmp_path)
    assert (err.value.source, err.value.field) == ("overrides", "design_space.d2d_GBps=[2048]")
    assert "of D2D PHY on chiplet" in err.value.expected


def test_grid_rows_keeps_every_point_or_the_front_and_names_a_combination_with_none(tmp_path: Path) -> None:
    base = notebook_scenario()
    points = chipdse.grid(base, {"design_space.max_batch": [[8], [32]]}, base_dir=tmp_path, rows="points")
    assert points.groupby("combination").size().tolist() == [TINY_POINTS // 2] * 2
    front = chipdse.grid(base, {"design_space.max_batch": [[8], [32]]}, base_dir=tmp_path, rows="pareto")
    assert front["pareto"].all() and len(front) == int(points["pareto"].sum())
    starved = chipdse.grid(base, {"arrival_rate_rps": [0.5, 1e4]}, base_dir=tmp_path)
    reasons = starved.groupby("combination")["combination_reason"].first()
    assert pd.isna(reasons[0]) and "no stable design point" in reasons[1]
    with pytest.raises(SpecError, match="a non-empty list of values"):
        chipdse.grid(base, {"design_space.d2d_GBps": 512}, base_dir=tmp_path)
    with pytest.raises(SpecError, match="overrides: .*a mapping of dotted paths"):
        chipdse.grid(base, {"seed": [0]}, base_dir=tmp_path, overrides=[1])  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="scenario: 42"):
        chipdse.sweep(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rows: must be one of"):
        chipdse.grid(base, {"seed": [0]}, base_dir=tmp_path, rows="all")
    calls: list[tuple[str, float, float]] = []
    chipdse.grid(base, {"seed": [0, 1]}, base_dir=tmp_path, progress=lambda *a: calls.append(a))
    assert calls == [("grid", 0, 2), ("grid", 1, 2), ("grid", 2, 2)]


def test_loading_again_with_more_overrides_keeps_the_first(tmp_path: Path) -> None:
    sc = chipdse.load_scenario(notebook_scenario(), base_dir=tmp_path, overrides={"design_space.d2d_GBps": [640]})
    again = reload(sc, parse_overrides(["design_space.max_batch=[16]"]))
    assert again.spec.design_space.d2d_GBps == [640] and again.spec.design_space.max_batch == [16]
    assert again.path == sc.path and again.data == sc.data
    run = chipdse.sweep(sc, sets=["design_space.max_batch=[16]"])
    assert run.summary["points"] == TINY_POINTS // 4  # one bandwidth, one batch


def test_reprs_are_one_line() -> None:
    sc = chipdse.load_scenario(overrides={"design_space.max_batch": [8]})
    text = repr(sc)
    assert text.startswith("LoadedScenario(kind='hydra', name='nemotron-h-4b-arxiv'") and "\n" not in text
    assert "'design_space.max_batch': [8]" in text and len(text) < 400
    study = chipdse.load_scenario(instances_dir() / "scenarios" / "snake-stratum.yaml")
    assert repr(study).startswith("StudyScenario(kind='snake'") and "\n" not in repr(study)


@pytest.mark.parametrize(("where", "key", "hint"), [
    ((), "design_spac", "did you mean 'design_space'?"),
    (("design_space",), "d2d_gbps", "did you mean 'd2d_GBps'?"),
    (("simulation",), "duraton_s", "did you mean 'duration_s'?"),
    ((), "zzzz", "known fields: kind, name, model"),
])
def test_an_unknown_key_names_the_field_it_was_meant_to_be(tmp_path: Path, where: tuple[str, ...], key: str,
                                                            hint: str) -> None:
    data = notebook_scenario()
    node = data
    for part in where:
        node = node.setdefault(part, {})
    node[key] = 1
    file = tmp_path / "typo.yaml"
    file.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError) as err:
        chipdse.load_scenario(file)
    assert err.value.field == ".".join((*where, key)) and hint in err.value.expected


def test_the_readme_grid_session_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/python.md's scenario-from-Python block, run as written from the checkout's root."""
    readme = (Path(__file__).resolve().parents[1] / "docs" / "python.md").read_text()
    block = re.search(r"<!-- ci:grid -->\n```python\n(.*?)```\n<!-- /ci:grid -->", readme, re.S)
    assert block is not None, "docs/python.md has no ci:grid block"
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    scope: dict = {}
    exec(compile(block.group(1), "docs/python.md", "exec"), scope)  # noqa: S102 - the docs' own example
    table = scope["table"]
    assert sorted(table["combination"].unique()) == list(range(9))
    assert "\n" not in repr(scope["sc"]) and scope["sc"].spec.design_space.max_batch == [8]
    assert set(table["max_batch"].dropna()) == {8}


def test_python_api_edges_fail_in_one_line(tmp_path: Path) -> None:
    """Edges a notebook user hits: a loaded scenario given back to load_scenario / grid is used as it is (with
    further overrides); a non-string key deep in a mapping is named by its path; a progress that is neither a flag
    nor a callable and a worker count that is not a number are refused; dir(chipdse) lists the API."""
    import yaml as _yaml

    import chipdse
    from chipdse.core.errors import ChipdseError, SpecError

    sc = chipdse.load_scenario(instances_dir() / "scenarios" / "snake-stratum.yaml")
    again = chipdse.load_scenario(sc, overrides={"work_limit": 2})
    assert again.spec.work_limit == 2 and again.spec.name == sc.spec.name
    with pytest.raises(SpecError, match="base_dir"):
        chipdse.load_scenario(sc, base_dir=tmp_path)
    base = _yaml.safe_load((instances_dir() / "scenarios" / "default.yaml").read_text())
    bad = {**base, "design_space": {**base["design_space"], 2: 3}}
    with pytest.raises(SpecError) as err:
        chipdse.load_scenario(bad, base_dir=instances_dir() / "scenarios")
    assert err.value.field == "design_space" and "key 2 (int)" in err.value.expected
    with pytest.raises(ValueError, match="progress"):
        chipdse.grid(base, {"design_space.max_batch": [[8]]}, base_dir=instances_dir() / "scenarios", progress="yes")
    with pytest.raises(ChipdseError, match="whole number"):
        chipdse.sweep(workers="x")
    assert dir(chipdse) == sorted([*chipdse.API_NAMES, "__version__"])
