"""The parameter registers (``chipdse params``) and ``--set PATH=VALUE`` (issue 30).

A register row must say where its number comes from; every numeric field of the HYDRA specs, chiplet library,
package, workload and energy / thermal tables must be in the register or named a control, so a new knob cannot
go unregistered; ``--set`` changes exactly the value it names, and a bad path or value is one line, exit 2.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from chipdse.api import load_scenario
from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.overrides import parse_overrides
from chipdse.core.params import BASES, RANGED, RegisterFile, load_register
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario, load
from chipdse.evaluators.energy import load_energy_table, scenario_energy_table
from chipdse.evaluators.thermal_stack import load_thermal_stack, stack_entries
from chipdse.studies.hydra import params as hydra_params
from chipdse.studies.params import study_missing, unregistered

runner = CliRunner()
KEYS = {"name", "value", "low", "high", "unit", "basis", "source", "calibrated_on"}
HYDRA_SCENARIOS = sorted(p for p in (instances_dir() / "scenarios").glob("*.yaml")
                         if yaml.safe_load(p.read_text()).get("kind", "hydra") == "hydra")


@pytest.mark.parametrize("study", ["hydra", "snake", "nova"])
def test_params_json_schema(study: str) -> None:
    """``chipdse params STUDY --json``: a list of objects with exactly the issue's keys; a paper or sourced row
    cites its source, an assumption or calibrated row has a range holding its value and a reason, and a
    calibrated row names the claims it was fitted to."""
    result = runner.invoke(app, ["params", study, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows, "an empty register"
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)), "a parameter listed twice"
    for r in rows:
        assert set(r) == KEYS, r
        assert r["basis"] in BASES, r
        assert r["source"].strip(), r
        if r["basis"] in RANGED:
            assert r["low"] is not None and r["high"] is not None, r
            assert r["low"] <= r["high"], r
            values = r["value"] if isinstance(r["value"], list) else [r["value"]]
            for v in values:
                if isinstance(v, int | float):
                    assert r["low"] - 1e-12 <= v <= r["high"] + 1e-12, r
        assert (r["basis"] == "calibrated") == bool(r["calibrated_on"]), r


@pytest.mark.parametrize("path", HYDRA_SCENARIOS, ids=lambda p: p.stem)
def test_every_hydra_number_is_registered(path: Path) -> None:
    """Every numeric field of each bundled HYDRA scenario, its library, package and workload is a register entry
    or a control."""
    sc = load(path)
    assert isinstance(sc, LoadedScenario)
    assert hydra_params.missing(sc) == []


@pytest.mark.parametrize("study", ["snake", "nova"])
def test_every_study_number_is_registered(study: str) -> None:
    assert study_missing(study) == []


def test_an_unregistered_knob_is_found() -> None:
    """Drop one entry from the register: the walk over the specs names exactly that field."""
    reg = load_register("hydra")
    dropped = "simulation.static_batch_timeout_s"
    smaller = RegisterFile.model_validate({**reg.model_dump(), "parameters": [
        e.model_dump() for e in reg.parameters if e.name != dropped]})
    sc = load(None)
    assert isinstance(sc, LoadedScenario)
    assert unregistered(smaller, hydra_params.parts(sc)) == [dropped]


def test_every_energy_and_thermal_assumption_has_a_range() -> None:
    """Each ``assumption: ...`` entry of the energy scopes and the thermal stack gives low <= value <= high."""
    table = load_energy_table("common", "snake", "nova")
    for key, c in table.constants.items():
        if c.source.lower().startswith("assumption"):
            assert c.low is not None and c.high is not None, key
            assert c.low <= c.value <= c.high, key
    for key, e in stack_entries().items():
        if str(e["source"]).lower().startswith("assumption"):
            assert e.get("low") is not None and e.get("high") is not None, key


def test_register_rejects_an_assumption_without_range(tmp_path: Path) -> None:
    bad = tmp_path / "reg.yaml"
    bad.write_text(yaml.safe_dump({"study": "x", "paper": "X", "parameters": [
        {"name": "a.b", "unit": "s", "basis": "assumption", "source": "a guess"}]}))
    with pytest.raises(SpecError, match="needs its range"):
        load_register("x", bad)


def test_set_changes_the_named_value_only() -> None:
    base = load_scenario(None)
    sc = load_scenario(None, ["simulation.static_batch_timeout_s=0.5", "library.compute.Md.utilization=0.7",
                              "package.hop_latency_ns=35", "workload.arrival_rate_rps=2"])
    assert isinstance(base, LoadedScenario) and isinstance(sc, LoadedScenario)
    assert sc.spec.simulation.static_batch_timeout_s == 0.5
    assert [c.utilization for c in sc.library.compute] == [0.8, 0.8, 0.8, 0.7]
    assert sc.package.hop_latency_ns == 35.0
    assert sc.workload.arrival_rate_rps == 2.0
    assert sc.spec.simulation.model_copy(update={"static_batch_timeout_s": 0.1}) == base.spec.simulation
    assert sc.package.model_copy(update={"hop_latency_ns": 20.0}) == base.package


def test_set_energy_and_thermal_tables() -> None:
    """``energy.table.KEY`` replaces that constant and no other; ``thermal.stack.KEY`` that layer's value."""
    sc = load_scenario(None, ["energy.table.hbm3_read=2.5", "thermal.stack.tim_conductivity=2"])
    assert isinstance(sc, LoadedScenario)
    table, plain = scenario_energy_table(sc), load_energy_table()
    assert table.get("hbm3_read") == 2.5
    assert {k: c.value for k, c in table.constants.items() if k != "hbm3_read"} == \
        {k: c.value for k, c in plain.constants.items() if k != "hbm3_read"}
    stack = load_thermal_stack(values=sc.spec.thermal.stack)
    assert stack.tim_k_W_per_mK == 2.0
    assert math.isclose(stack.die_k_W_per_mK, load_thermal_stack().die_k_W_per_mK)


@pytest.mark.parametrize(("command", "option", "needle"), [
    ("explore", "simulation.nope=1", "simulation.nope"),
    ("explore", "simulation.static_batch_timeout_s=-1", "greater than or equal to 0"),
    ("explore", "package.hop_latency_ns=fast", "valid number"),
    ("explore", "library.compute.Zz.utilization=0.5", "Ap, Ad, Mp, Md"),
    ("explore", "energy.table.nokey=1", "a key of"),
    ("explore", "cost.table.nokey=1", "a key of"),
    ("sweep", "cost.package_max_usd=cheap", "valid number"),
    ("explore", "no-equals-sign", "PATH=VALUE"),
    ("simulate", "seed.x=1", "a path through mappings"),
    ("compare", "design_space.max_batch=[0]", "greater than or equal to 1"),
    ("sweep", "estimator.chunk_tokens=0", "greater than 0"),
])
def test_set_bad_path_or_value_is_one_line(tmp_path: Path, command: str, option: str, needle: str) -> None:
    args = [command, *(["placement"] if command == "compare" else []), "--set", option]
    if command == "explore":
        args += ["--out", str(tmp_path / "out")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --set"), result.output
    assert needle in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("scenario", "key", "value"), [("snake-stratum.yaml", "gpu_h100_flop", 1.42),
                                                        ("nova-nemotron3-nano.yaml", "hbm4_static", 9.0)])
def test_set_energy_table_on_a_study_scenario(scenario: str, key: str, value: float) -> None:
    """``chipdse params snake|nova`` lists energy.table.* rows: ``--set`` reaches them (the study reads the
    changed constant and no other), and an unknown key is one --set line."""
    from chipdse.evaluators.nova_system import scenario_system
    from chipdse.evaluators.snake_energy import snake_table

    path = instances_dir() / "scenarios" / scenario
    sc = load(path, parse_overrides([f"energy.table.{key}={value}"]))
    assert sc.spec.energy.table == {key: value}  # type: ignore[union-attr]
    if scenario.startswith("snake"):
        table, plain = snake_table(sc.spec.energy.table), snake_table()  # type: ignore[union-attr]
        assert table.get(key) == value
        assert {k: c.value for k, c in table.constants.items() if k != key} == \
            {k: c.value for k, c in plain.constants.items() if k != key}
    else:  # hbm4_static is a conventional HBM4 cube's background power (W), nothing else
        changed, plain_sys = scenario_system(sc.spec), scenario_system(load(path).spec)  # type: ignore[arg-type]
        assert changed.energy_model.cube_static_W == value != plain_sys.energy_model.cube_static_W
        assert changed.energy_model.gpu_static_W == plain_sys.energy_model.gpu_static_W
    with pytest.raises(SpecError) as info:
        load(path, parse_overrides(["energy.table.nokey=1"]))
    assert info.value.source == "--set" and "a key of" in str(info.value)


def test_set_cube_power_budget_reaches_the_nova_system() -> None:
    """``--set system.cube_nmp_budget_W=1000`` reaches the NOVA system (the default is SNAKE Sec. 6.2's 62 W);
    a negative budget is refused as a --set error naming the field."""
    from chipdse.evaluators.nova_system import scenario_system

    path = instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml"
    assert scenario_system(load(path).spec).cube_nmp_budget_W == 62.0  # type: ignore[arg-type]
    sc = load(path, parse_overrides(["system.cube_nmp_budget_W=1000"]))
    assert scenario_system(sc.spec).cube_nmp_budget_W == 1000.0  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="cube_nmp_budget_W"):
        load(path, parse_overrides(["system.cube_nmp_budget_W=-5"]))


def test_set_file_paths_refused_on_a_study_scenario() -> None:
    snake = instances_dir() / "scenarios" / "snake-stratum.yaml"
    with pytest.raises(SpecError, match="HYDRA scenario"):
        load(snake, parse_overrides(["library.compute.Ap.utilization=0.5"]))
    sc = load(snake, parse_overrides(["template.link_GBps=128"]))
    assert sc.spec.template.link_GBps == 128.0  # type: ignore[union-attr]
