"""The robustness sweep of orderings (issue 30) on a case small enough to work out by hand."""

from __future__ import annotations

import pytest

from chipdse.core.params import ParamRow
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
