"""The compact thermal model (issue 17 item 3): closed forms, superposition, a point source, bad stack files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.errors import SpecError
from chipdse.evaluators.thermal import (
    package_grid,
    placement_power_map,
    solve_temperature,
    thermal_resistance_matrix,
)
from chipdse.evaluators.thermal_stack import default_stack_path, load_thermal_stack

STACK = yaml.safe_load(default_stack_path().read_text())
"""The bundled layer stack as written (mm, W/(m K), K/W, degC): the test's inputs."""


def _v(key: str) -> float:
    return float(STACK[key]["value"])


def test_uniform_heat_source_on_a_slab_matches_the_closed_form_issue_17() -> None:
    """Uniform flux q'' over the whole package: no lateral flow, so every die cell rises by 1-D slab conduction
    through die, TIM and spreader, q'' (t_die/k_die + t_TIM/k_TIM + t_sp/k_sp), plus the total power through the
    sink, Q R_sink (Incropera, Fundamentals of Heat and Mass Transfer, Sec. 3.1: resistances in series)."""
    rows, cols, pitch_mm, per_cell_W = 3, 4, 11.0, 30.0
    grid = package_grid(rows, cols, pitch_mm)
    tmap = solve_temperature(grid, np.full((rows, cols), per_cell_W))
    flux_W_per_m2 = per_cell_W / (pitch_mm * 1e-3) ** 2
    slab_m2K_per_W = sum(_v(f"{layer}_thickness") * 1e-3 / _v(f"{layer}_conductivity")
                         for layer in ("die", "tim", "spreader"))
    expected_C = _v("ambient") + per_cell_W * rows * cols * _v("heat_sink_resistance") + flux_W_per_m2 * slab_m2K_per_W
    rise = expected_C - _v("ambient")
    assert np.all(np.abs(tmap.die_C - expected_C) <= 0.02 * rise)  # the issue's 2%
    assert tmap.peak_C == pytest.approx(expected_C, rel=1e-9)


def test_two_cells_one_heated_match_the_hand_solution() -> None:
    """A 1 x 2 package with power P in cell 0 only: split into a symmetric half (P/2 in each cell: the slab
    solution) and an antisymmetric half (+P/2, -P/2: no net flow to the sink's common node), each solved by hand
    from the four nodal balances; lateral conduction in both layers is what the antisymmetric half measures."""
    pitch_mm, p_W = 11.0, 40.0
    grid = package_grid(1, 2, pitch_mm)
    area = (pitch_mm * 1e-3) ** 2
    half_sp = _v("spreader_thickness") * 1e-3 / (2 * _v("spreader_conductivity"))
    g_v = area / (_v("die_thickness") * 1e-3 / _v("die_conductivity")
                  + _v("tim_thickness") * 1e-3 / _v("tim_conductivity") + half_sp)
    g_a = 1.0 / (2 * _v("heat_sink_resistance") + half_sp / area)
    g_die = _v("interposer_conductivity") * _v("interposer_thickness") * 1e-3
    g_sp = _v("spreader_conductivity") * _v("spreader_thickness") * 1e-3
    sym_die = (p_W / 2) * (1 / g_v + 1 / g_a)
    # antisymmetric: P/2 = g_v (a - b) + 2 g_die a ;  0 = g_v (b - a) + 2 g_sp b + g_a b
    a = (p_W / 2) / (g_v + 2 * g_die - g_v**2 / (g_v + 2 * g_sp + g_a))
    tmap = solve_temperature(grid, np.array([[p_W, 0.0]]))
    assert tmap.die_C[0, 0] - _v("ambient") == pytest.approx(sym_die + a, rel=1e-9)
    assert tmap.die_C[0, 1] - _v("ambient") == pytest.approx(sym_die - a, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 60), min_size=12, max_size=12), st.lists(st.floats(0, 60), min_size=12, max_size=12),
       st.floats(0, 3), st.floats(0, 3))
def test_superposition(p: list[float], q: list[float], alpha: float, beta: float) -> None:
    """Rise(alpha p + beta q) = alpha rise(p) + beta rise(q), and rise(p) = R @ p (the placement MILP's premise)."""
    grid = package_grid(3, 4, 11.0)
    amb = grid.stack.ambient_C
    p_arr, q_arr = np.array(p), np.array(q)

    def rise(x: np.ndarray) -> np.ndarray:
        return solve_temperature(grid, x).die_C.reshape(-1) - amb

    combined = rise(alpha * p_arr + beta * q_arr)
    np.testing.assert_allclose(combined, alpha * rise(p_arr) + beta * rise(q_arr), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(thermal_resistance_matrix(grid) @ p_arr, rise(p_arr), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("cell", [0, 6, 12, 19])
def test_a_point_source_is_hottest_at_its_cell(cell: int) -> None:
    grid = package_grid(4, 5, 11.0)
    power = np.zeros(20)
    power[cell] = 50.0
    tmap = solve_temperature(grid, power)
    assert tmap.hottest_cell == cell
    assert np.all(np.delete(tmap.die_C.reshape(-1), cell) < tmap.peak_C)


def test_resistance_matrix_is_symmetric_and_positive() -> None:
    """Reciprocity of a passive resistive network: the rise at i per W at j equals the rise at j per W at i."""
    r = thermal_resistance_matrix(package_grid(3, 5, 11.0))
    np.testing.assert_allclose(r, r.T, rtol=1e-9)
    assert np.all(r > 0)


def test_placement_power_map_places_each_type_power() -> None:
    grid = package_grid(2, 2, 11.0)
    pmap = placement_power_map(grid, {0: "A", 3: "B"}, {"A": 10.0, "B": 2.5})
    np.testing.assert_array_equal(pmap, [[10.0, 0.0], [0.0, 2.5]])
    with pytest.raises(ValueError, match="type with a power"):
        placement_power_map(grid, {0: "C"}, {"A": 1.0})


def test_bad_power_maps_are_refused() -> None:
    grid = package_grid(2, 2, 11.0)
    with pytest.raises(ValueError, match="2 x 2"):
        solve_temperature(grid, np.zeros(5))
    with pytest.raises(ValueError, match=">= 0 W"):
        solve_temperature(grid, np.array([1.0, -1.0, 0.0, 0.0]))


@pytest.mark.parametrize(("key", "entry", "field"), [
    ("tim_conductivity", {"value": 4.0, "unit": "W/mK", "source": "x"}, "tim_conductivity.unit"),
    ("die_thickness", {"value": -1.0, "unit": "mm", "source": "x"}, "die_thickness.value"),
    ("ambient", {"value": 45.0, "unit": "degC", "source": " "}, "ambient.source"),
    ("copper", {"value": 1.0, "unit": "mm", "source": "x"}, "copper"),
])
def test_bad_stack_file_names_the_file_and_field(tmp_path: Path, key: str, entry: dict, field: str) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(yaml.safe_dump({**STACK, key: entry}))
    with pytest.raises(SpecError) as err:
        load_thermal_stack(path)
    assert err.value.field == field and str(path) in str(err.value)


def test_missing_stack_entry_is_named(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in STACK.items() if k != "heat_sink_resistance"}))
    with pytest.raises(SpecError, match="heat_sink_resistance"):
        load_thermal_stack(path)
