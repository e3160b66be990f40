"""The scheduler and batcher registry: complete over the spec enums, and the single source of every name list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.specs import BatcherKind, EstimatorSettings, SchedulerKind
from chipdse.evaluators.policies import (
    BATCHER_NAMES,
    BATCHER_POLICIES,
    SCHEDULER_NAMES,
    SCHEDULER_POLICIES,
    batcher_config,
    make_scheduler,
    scheduler_config,
)
from chipdse.evaluators.sim_policies import Batcher
from chipdse.evaluators.sim_schedulers import TaskScheduler
from chipdse.studies.hydra.artifacts import SCHEDULER_STUDY
from chipdse.studies.hydra.simulate import BATCHING, SCHEDULERS

README = Path(__file__).resolve().parents[1] / "docs" / "tour.md"


def test_every_enum_member_is_registered_once_with_a_matching_config() -> None:
    assert list(SCHEDULER_POLICIES) == list(SchedulerKind)
    assert list(BATCHER_POLICIES) == list(BatcherKind)
    for kind, policy in SCHEDULER_POLICIES.items():
        assert policy.kind is kind and issubclass(policy.implementation, TaskScheduler)
        cfg = scheduler_config(str(kind))
        assert isinstance(cfg, policy.config) and cfg.kind is kind
        assert isinstance(make_scheduler(cfg), policy.implementation)
    for kind, policy in BATCHER_POLICIES.items():
        assert policy.kind is kind and issubclass(policy.implementation, Batcher)
        cfg = batcher_config(str(kind), 4)
        assert cfg.kind is kind and cfg.max_batch == 4


def test_hydra_sec_vi_e_schedulers_and_sec_iv_b_batchers() -> None:
    """HYDRA Sec. VI-E compares static, FCFS, work stealing and elastic; Sec. IV-B static and dynamic batching."""
    assert SCHEDULER_NAMES == ("static", "fcfs", "work-stealing", "elastic")
    assert BATCHER_NAMES == ("static", "dynamic")


def test_every_name_list_derives_from_the_registry() -> None:
    assert SCHEDULERS == SCHEDULER_NAMES == tuple(dict.fromkeys(s for _, s, _ in SCHEDULER_STUDY))
    assert BATCHING == BATCHER_NAMES
    help_text = re.sub(r"[\s│]+", " ", CliRunner().invoke(app, ["simulate", "--help"], env={"COLUMNS": "200"}).output)
    assert "Task scheduler: static, fcfs, work-stealing or elastic." in help_text
    assert "static or dynamic (default" in help_text
    readme = README.read_text()
    assert f"[--scheduler {'|'.join(SCHEDULER_NAMES)}]" in readme
    assert f"[--batching {'|'.join(BATCHER_NAMES)}]" in readme


@pytest.mark.parametrize(("call", "names"), [
    (lambda: scheduler_config("round-robin"), SCHEDULER_NAMES),
    (lambda: batcher_config("greedy", 4), BATCHER_NAMES),
])
def test_unknown_names_list_the_registered_ones(call, names: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="must be one of") as info:
        call()
    assert all(n in str(info.value) for n in names)


def test_spec_batching_is_the_batcher_enum() -> None:
    assert EstimatorSettings(batching="static").batching is BatcherKind.STATIC
    assert EstimatorSettings().model_dump(mode="json")["batching"] == "dynamic"
    with pytest.raises(ValueError, match="dynamic"):
        EstimatorSettings(batching="greedy")
