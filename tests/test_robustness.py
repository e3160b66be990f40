"""The robustness sweep of orderings (issue 30) on a case small enough to work out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chipdse.core.params import ParamRow
from chipdse.core.paths import instances_dir
from chipdse.core.specs import file_sha256
from chipdse.studies.claims import Claim, claim_rows
from chipdse.studies.robustness import settings_for, sweep_orderings, swept_parameters

A = ParamRow("a", 1.0, 0.0, 2.0, "s", "assumption", "a guess")
B = ParamRow("b", 10, 5, 10, "W", "assumption", "another guess")  # high equals the value: only low is swept
PAPER = ParamRow("c", 3.0, None, None, "s", "paper", "Sec. 1")
ABOVE = Claim("x_above", "x above 1.6", 1.6, "x", "Sec. 2", "a and b", kind="ordering", of="x")
BELOW = Claim("x_below", "x below 4", 4.0, "x", "Sec. 3", "a and b", kind="ordering", of="x", direction="<")


def _x(sets: tuple[str, ...]) -> dict[str, float]:
    """x = a + b / 10 with a = 1, b = 10 unless overridden."""
    v = {"a": 1.0, "b": 10.0}
    for s in sets:
        k, _, val = s.partition("=")
        v[k] = float(val)
    return {"x": v["a"] + v["b"] / 10}


def test_one_at_a_time_by_hand() -> None:
    # a=0 -> x = 1.0 (fails > 1.6: the first flip); a=2 -> x = 3.0 (holds); b=5 -> x = 1.5 (fails)
    # below 4: 1.0, 3.0, 1.5 all hold
    rob = sweep_orderings(_x, [ABOVE, BELOW], swept_parameters([A, B, PAPER]))
    assert [s.label for s in rob.settings] == ["a=0", "a=2", "b=5"]
    assert [s.measured["x"] for s in rob.settings] == [1.0, 3.0, 1.5]
    assert rob.orderings["x_above"] == (pytest.approx(1 / 3), "a=0")
    assert rob.orderings["x_below"] == (1.0, "")


def test_joint_draws_stay_in_range_and_are_seeded() -> None:
    first = settings_for([A, B], joint=3, seed=7)
    assert first == settings_for([A, B], joint=3, seed=7)
    joint = [sets for label, sets in first if label.startswith("joint")]
    assert len(joint) == 3
    for sets in joint:
        vals = dict(s.split("=") for s in sets)
        assert 0.0 <= float(vals["a"]) <= 2.0
        assert vals["b"].isdigit() and 5 <= int(vals["b"]) <= 10  # an integer parameter stays an integer


def test_rows_carry_share_flip_and_basis() -> None:
    rows = claim_rows({"x": 1.0}, claims=(ABOVE, BELOW), calibrated={"x_below": ["a"]},
                      robustness={"x_above": (1 / 3, "a=0")})
    above, below = rows
    assert (above.kind, above.holds, above.off, above.holds_share, above.flips_at) == ("ordering", False, True,
                                                                                       1 / 3, "a=0")
    assert (below.holds, below.basis) == (True, "calibrated")
    assert "fitted: a" in below.note


def test_unknown_parameter_is_refused() -> None:
    with pytest.raises(ValueError, match="c"):
        swept_parameters([A, PAPER], ["c"])


def _record(path: Path, scenario: Path, orderings: dict[str, float | None]) -> None:
    path.write_text(json.dumps({
        "scenario": scenario.name, "scenario_sha256": file_sha256(scenario), "commit": "c0", "date": "d",
        "reduction": ["r"], "swept": [{"name": "p"}], "joint": 0, "settings": [{}, {}],
        "orderings": {k: {"holds_share": v, "flips_at": "p=1" if v and v < 1 else ""} for k, v in orderings.items()}}))


def test_default_scenario_borrows_only_table_iv_orderings(tmp_path, monkeypatch) -> None:
    """The bundled default scenario has no generality stage: its generality row reads the Table IV scenario's
    record and nothing else from it; its other orderings read its own record; a --set run reads none."""
    from chipdse.core.overrides import parse_overrides
    from chipdse.core.scenario import load_scenario
    from chipdse.studies.hydra import claims as hc

    monkeypatch.setattr(hc, "ROBUSTNESS_DIR", tmp_path)
    scen = instances_dir() / "scenarios"
    _record(tmp_path / "hydra-default.json", scen / "default.yaml",
            {"order_db_helps": 0.5, "order_generality_cost": None})
    _record(tmp_path / "hydra-table4-chat.json", scen / "hydra-table4-chat.yaml",
            {"order_db_helps": 0.1, "order_generality_cost": 0.75})
    rows, where = hc.robustness_for(load_scenario())
    assert rows == {"order_db_helps": (0.5, "p=1"), "order_generality_cost": (0.75, "p=1")}
    assert "hydra-default.json" in where and "hydra-table4-chat.json" in where
    assert hc.robustness_for(load_scenario(overrides=parse_overrides(["seed=1"]))) == ({}, "")
    # the Table IV scenario reads its own record whole
    own, _ = hc.robustness_for(load_scenario(scen / "hydra-table4-chat.yaml"))
    assert own == {"order_db_helps": (0.1, "p=1"), "order_generality_cost": (0.75, "p=1")}
    # a record swept on another version of the scenario file does not apply
    _record(tmp_path / "hydra-table4-chat.json", scen / "default.yaml", {"order_generality_cost": 0.75})
    rows, where = hc.robustness_for(load_scenario())
    assert rows == {"order_db_helps": (0.5, "p=1")} and "hydra-table4-chat.json" not in where
