"""Workloads: the bundled traces reproduce their published statistics; every bundled spec loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load_scenario
from chipdse.core.specs import Workload, load_spec
from chipdse.core.workloads import load_lengths, load_trace, sample_parametric
from chipdse.studies.registry import load_study


@pytest.mark.parametrize(("name", "rows", "pre", "dec"), [
    # traces/SOURCE.md (Vidur processed traces): rows; prefill mean/median/p99; decode mean/median/p99
    ("arxiv.csv", 28_257, (2588, 2730, 3934), (291, 167, 3273)),
    ("azure_conv.csv", 19_366, (1155, 1020, 4142), (211, 129, 601)),
])
def test_trace_statistics_match_source_note(name: str, rows: int, pre: tuple, dec: tuple) -> None:
    s = load_trace(instances_dir() / "traces" / name)
    assert len(s.prefill_tokens) == rows
    for arr, (mean, median, p99) in ((s.prefill_tokens, pre), (s.decode_tokens, dec)):
        assert round(arr.mean()) == mean and round(np.median(arr)) == median
        assert abs(np.percentile(arr, 99) - p99) <= 2


def test_conversation_trace_rate_is_about_5_5_per_second() -> None:
    s = load_trace(instances_dir() / "traces" / "azure_conv.csv")
    rate = len(s.arrival_s) / (s.arrival_s.max() - s.arrival_s.min())
    assert 5.2 < rate < 5.8  # SOURCE.md: one hour, about 5.5 req/s


@pytest.mark.parametrize("path", sorted((instances_dir() / "workloads").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_bundled_workload_loads(path: Path) -> None:
    wl = load_spec(Workload, path)
    s = load_lengths(wl, path.parent, seed=0)
    assert s.prefill_tokens.min() >= 1 and s.decode_tokens.min() >= 1


@pytest.mark.parametrize("path", sorted((instances_dir() / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_bundled_scenario_loads(path: Path) -> None:
    kind = yaml.safe_load(path.read_text()).get("kind", "hydra")
    study, sc = load_study(path)
    assert study.kind == kind == sc.spec.kind
    if kind in ("snake", "nova"):
        assert study.load(path).spec.models
    else:
        assert load_scenario(path).model.total_params > 0


def test_parametric_lengths_are_seeded_and_lognormal() -> None:
    params = {"prefill_median": 150, "prefill_sigma": 0.6, "decode_median": 5000, "decode_sigma": 0.6}
    a = sample_parametric(params, 20_000, seed=7, source="t")
    b = sample_parametric(params, 20_000, seed=7, source="t")
    assert np.array_equal(a.decode_tokens, b.decode_tokens)
    # lognormal median = exp(mu): the sample median is within 3% at n = 20,000
    assert abs(np.median(a.decode_tokens) / 5000 - 1) < 0.03


def test_parametric_lengths_reject_bad_parameters() -> None:
    with pytest.raises(SpecError, match="decode_sigma"):
        sample_parametric({"prefill_median": 1, "prefill_sigma": 1, "decode_median": 1, "decode_sigma": -1},
                          10, 0, "w.yaml")


def test_trace_rows_are_reported_by_line(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("num_prefill_tokens,num_decode_tokens\n10,2\n5,-3\n")
    with pytest.raises(SpecError, match=r"num_decode_tokens.*'-3'.*line 3"):
        load_trace(p)
