"""Shared formulation building blocks: tick rounding, bound conversion, variables, decoding."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import pyomo.environ as pyo
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from chipdse.formulations import common


@pytest.mark.parametrize(
    ("time_s", "resolution_s", "expected"),
    [
        (0.0, 1e-9, 0),
        (5e-10, 1e-9, 0),  # shorter than one tick
        (3.0, 1.0, 3),  # an exact multiple stays
        (0.3, 0.1, 2),  # 3 * 0.1 = 0.30000000000000004 > 0.3 in floating point, so 2
        (0.7, 0.1, 6),  # 7 * 0.1 = 0.7000000000000001 > 0.7, so 6
        (0.6, 0.2, 2),  # 3 * 0.2 = 0.6000000000000001 > 0.6, so 2
    ],
)
def test_time_ticks_on_hand_picked_floats(time_s: float, resolution_s: float, expected: int) -> None:
    """Floor of the quotient, but never a tick count whose floating-point product exceeds the time."""
    assert common.time_ticks(time_s, resolution_s) == expected


@given(
    st.floats(min_value=0.0, max_value=1e3, allow_nan=False),
    st.floats(min_value=1e-12, max_value=1.0, allow_nan=False),
)
def test_time_ticks_is_the_largest_count_not_above_the_time(time_s: float, resolution_s: float) -> None:
    """``ticks * res <= t`` and ``(ticks + 1) * res > t`` in floating point; within one tick of the exact floor."""
    ticks = common.time_ticks(time_s, resolution_s)
    assert ticks >= 0
    assert ticks * resolution_s <= time_s
    assert (ticks + 1) * resolution_s > time_s
    exact = math.floor(Fraction(time_s) / Fraction(resolution_s))
    assert abs(ticks - exact) <= 1


@dataclass
class _Ticked(common.TickedCpsat):
    resolution_s: float


@pytest.mark.parametrize("resolution_s", [1e-9, 1e-6, 0.1, 1.0])
@pytest.mark.parametrize("bound_ticks", [0.0, 1.0, 7.0, 7.0 - 1e-12, 7.5, 123456789.0])
def test_bound_s_never_exceeds_the_bound_in_seconds(resolution_s: float, bound_ticks: float) -> None:
    """A lower bound may only be rounded down: ``bound_s <= floor(ticks) * res`` (exact), and close to it."""
    got = _Ticked(resolution_s).bound_s(bound_ticks)
    floor_ticks = math.floor(bound_ticks + 1e-9)
    assert Fraction(got) <= floor_ticks * Fraction(resolution_s)
    assert got == pytest.approx(floor_ticks * resolution_s, rel=1e-12, abs=1e-300)


def test_choice_and_makespan_variables_are_binary_and_non_negative() -> None:
    """The helper adds the named components, binary over the index and a non-negative continuous makespan."""
    m = pyo.ConcreteModel()
    m.things = pyo.Set(initialize=["a", "b"], ordered=True)
    common.add_choice_and_makespan_variables(m, m.things, "pick", "span")
    assert [v.domain for v in m.pick.values()] == [pyo.Binary, pyo.Binary]
    assert m.span.domain is pyo.NonNegativeReals and not m.span.is_indexed()
    assert common.binary_value(m.pick["a"]) == 0.0  # no value yet
    m.pick["a"].set_value(1)
    assert common.binary_value(m.pick["a"]) == 1.0


def test_chosen_keys_reads_the_true_booleans_in_order() -> None:
    """On a model whose only solution is known (exactly b and c true), the decoder returns b, c."""
    cp = common.new_cpsat_model("tiny")
    x = {k: cp.NewBoolVar(k) for k in ("a", "b", "c")}
    cp.Add(x["a"] == 0)
    cp.Add(x["b"] + x["c"] == 2)
    solver = cp_model.CpSolver()
    solver.parameters.catch_sigint_signal = False  # CP-SAT's own handler would outlive the test and eat Ctrl-C
    assert solver.Solve(cp) == cp_model.OPTIMAL
    assert cp.Name() == "tiny"
    assert common.chosen_keys(solver, x) == ["b", "c"]
