"""Steady-state compact thermal model of an interposer floorplan: a resistive grid of the package cells.

Two layers of ``rows x cols`` nodes, one node per package cell in each:

* the **die layer**: the chiplet (or empty interposer) of the cell, with its power; neighbouring cells exchange
  heat laterally through the silicon interposer;
* the **heat spreader**: copper lid, lateral conduction between neighbouring cells;

a vertical path per cell from the die node through the die, the thermal interface material (TIM) and the spreader,
and the heat sink from the spreader to the ambient: one resistance ``R_sink`` shared in parallel by the cells. The
conductance matrix is assembled and solved with ``scipy.sparse`` (``G T_rise = P``). The model is linear, so the
temperature rise of every die cell is ``R @ p`` with the thermal resistance matrix of
:func:`thermal_resistance_matrix` (what the thermally constrained placement builds on).

The layer constants (``instances/thermal/package.yaml``) follow HotSpot's defaults and TAP-2.5D's layer stack;
the underside path (C4 bumps, substrate, board) is left out, as HotSpot's default ``model_secondary 0`` does.

References
----------
K. Skadron et al., "Temperature-aware microarchitecture: modeling and implementation", ACM TACO 1(1), 2004
(HotSpot: compact RC networks, the grid model); Y. Ma et al., "TAP-2.5D: a thermally-aware chiplet placement
methodology for 2.5D systems", DATE 2021 (the interposer package stack). HYDRA Sec. VII (power and thermal models
named as future work).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from chipdse.core.errors import SpecError, shorten
from chipdse.core.paths import instances_dir
from chipdse.core.specs import ChipletLibrary, read_yaml
from chipdse.evaluators.energy import EnergyTable
from chipdse.evaluators.energy_hydra import chiplet_power_W, hbm_power_W

MM = 1e-3
"""Metres per millimetre."""

STACK_UNITS: dict[str, str] = {
    "die_thickness": "mm", "die_conductivity": "W/(m K)", "interposer_thickness": "mm",
    "interposer_conductivity": "W/(m K)", "tim_thickness": "mm", "tim_conductivity": "W/(m K)",
    "spreader_thickness": "mm", "spreader_conductivity": "W/(m K)", "heat_sink_resistance": "K/W", "ambient": "degC",
}
"""Every entry of a package stack file and the unit it must carry."""

HBM_PREFIX = "hbm:"
"""Placement types that are HBM stacks (``formulations.placement.HBM_PREFIX``)."""


def default_stack_path() -> Path:
    """Return the bundled package stack, ``instances/thermal/package.yaml``."""
    return instances_dir() / "thermal" / "package.yaml"


@dataclass(frozen=True)
class ThermalStack:
    """Layer stack and boundary of the compact model, SI units.

    Attributes
    ----------
    die_thickness_m, interposer_thickness_m, tim_thickness_m, spreader_thickness_m : float
        Layer thicknesses, m.
    die_k_W_per_mK, interposer_k_W_per_mK, tim_k_W_per_mK, spreader_k_W_per_mK : float
        Thermal conductivities, W/(m K).
    heat_sink_K_per_W : float
        Spreader top to ambient, the whole sink, K/W.
    ambient_C : float
        Ambient (chassis air or coolant) temperature, degC.
    """

    die_thickness_m: float
    die_k_W_per_mK: float  # noqa: N815 - unit in name
    interposer_thickness_m: float
    interposer_k_W_per_mK: float  # noqa: N815
    tim_thickness_m: float
    tim_k_W_per_mK: float  # noqa: N815
    spreader_thickness_m: float
    spreader_k_W_per_mK: float  # noqa: N815
    heat_sink_K_per_W: float  # noqa: N815
    ambient_C: float  # noqa: N815

    def vertical_m2K_per_W(self) -> float:  # noqa: N802 - unit in name
        """Area-specific resistance of one cell's vertical path, die node to the spreader top, m^2 K / W.

        ``t_die / k_die + t_TIM / k_TIM + t_spreader / k_spreader``: 1-D conduction through the three slabs.
        """
        return (self.die_thickness_m / self.die_k_W_per_mK + self.tim_thickness_m / self.tim_k_W_per_mK
                + self.spreader_thickness_m / self.spreader_k_W_per_mK)


def stack_entries(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Read a package stack file's entries as written: key -> ``{value, unit, source[, low, high]}``.

    ``low`` / ``high`` are the plausible range of an ``assumption: ...`` entry (the parameter register,
    ``chipdse params hydra``).

    Raises
    ------
    SpecError
        Naming the file and field: a missing or unknown key, an entry that is not ``{value, unit, source[, low,
        high]}``, a unit other than the one in :data:`STACK_UNITS`, a missing source, a non-positive thickness,
        conductivity or resistance, or a range that does not hold the value.
    """
    path = path or default_stack_path()
    data, src = read_yaml(path), str(path)
    out: dict[str, dict[str, Any]] = {}
    for key, raw in data.items():
        if key not in STACK_UNITS:
            raise SpecError(src, key if isinstance(key, str) else shorten(key), f"one of {', '.join(STACK_UNITS)}")
        if not isinstance(raw, dict) or not {"value", "unit", "source"} <= set(raw) <= _ENTRY_KEYS:
            raise SpecError(src, key, f"a mapping {{value, unit, source[, low, high]}}, got {shorten(raw)}")
        for fld in ("value", "low", "high"):
            v = raw.get(fld, 0.0)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise SpecError(src, f"{key}.{fld}", f"a finite number, got {shorten(v)}")
        value, unit, source = raw["value"], raw["unit"], raw["source"]
        if key != "ambient" and value <= 0:
            raise SpecError(src, f"{key}.value", f"a value > 0, got {value!r}")
        if unit != STACK_UNITS[key]:
            raise SpecError(src, f"{key}.unit", f"{STACK_UNITS[key]!r}, got {shorten(unit)}")
        if not isinstance(source, str) or not source.strip():
            raise SpecError(src, f"{key}.source", "a source (publication and section, or 'assumption: ...')")
        if not raw.get("low", value) <= value <= raw.get("high", value):
            raise SpecError(src, f"{key}.low", f"a range low <= value <= high, got {raw.get('low')}..{raw.get('high')}")
        out[key] = {**raw, "value": float(value)}
    missing = [k for k in STACK_UNITS if k not in out]
    if missing:
        raise SpecError(src, missing[0], f"an entry {{value, unit, source}} in {STACK_UNITS[missing[0]]}")
    return out


_ENTRY_KEYS = {"value", "unit", "source", "low", "high"}


def load_thermal_stack(path: Path | None = None, heat_sink_K_per_W: float | None = None,  # noqa: N803
                       ambient_C: float | None = None,  # noqa: N803
                       values: dict[str, float] | None = None) -> ThermalStack:
    """Read a package stack file (``instances/thermal/package.yaml`` by default).

    Parameters
    ----------
    path : Path, optional
        A YAML file with every key of :data:`STACK_UNITS`, each ``{value, unit, source[, low, high]}``
        (:func:`stack_entries`).
    heat_sink_K_per_W, ambient_C : float, optional
        Replace the file's heat-sink resistance (K/W) and ambient temperature (degC), e.g. from a scenario.
    values : dict, optional
        Replace entries by key, in the entry's unit (a scenario's ``thermal.stack``); ``heat_sink_K_per_W`` and
        ``ambient_C`` win over it.

    Returns
    -------
    ThermalStack

    Raises
    ------
    SpecError
        As :func:`stack_entries`; also a key of ``values`` the file does not have, or a replaced thickness,
        conductivity or resistance that is not positive.
    """
    entries = stack_entries(path)
    v = {k: e["value"] for k, e in entries.items()}
    for key, val in (values or {}).items():
        if key not in v:
            raise SpecError("thermal.stack", key, f"one of {', '.join(STACK_UNITS)}")
        if key != "ambient" and val <= 0:
            raise SpecError("thermal.stack", key, f"a value > 0, got {val!r}")
        v[key] = float(val)
    return ThermalStack(
        v["die_thickness"] * MM, v["die_conductivity"], v["interposer_thickness"] * MM,
        v["interposer_conductivity"], v["tim_thickness"] * MM, v["tim_conductivity"],
        v["spreader_thickness"] * MM, v["spreader_conductivity"],
        v["heat_sink_resistance"] if heat_sink_K_per_W is None else heat_sink_K_per_W,
        v["ambient"] if ambient_C is None else ambient_C)


@dataclass(frozen=True)
class ThermalGrid:
    """The package grid the model is built on: ``rows x cols`` square cells of ``cell_pitch_mm``, cell
    ``r * cols + c``, and its layer stack."""

    rows: int
    cols: int
    cell_pitch_mm: float
    stack: ThermalStack

    @property
    def n_cells(self) -> int:
        """Cells per layer."""
        return self.rows * self.cols

    def conductances_W_per_K(self) -> dict[str, float]:  # noqa: N802 - unit in name
        """Return the four conductances of the network, W/K.

        Returns
        -------
        dict[str, float]
            ``die_lateral`` (interposer sheet between neighbouring cells: ``k t w / L`` with ``w = L`` the
            pitch, so ``k t``), ``vertical`` (die node to spreader node: die, TIM and half the spreader over the
            cell area), ``spreader_lateral`` (``k t`` of the spreader) and ``ambient`` (spreader node to ambient:
            the other half of the spreader in series with ``R_sink * n_cells``, the sink shared by the cells).
        """
        s = self.stack
        area_m2 = (self.cell_pitch_mm * MM) ** 2
        half_spreader = s.spreader_thickness_m / (2 * s.spreader_k_W_per_mK)
        vertical = (s.vertical_m2K_per_W() - half_spreader) / area_m2
        ambient = s.heat_sink_K_per_W * self.n_cells + half_spreader / area_m2
        return {"die_lateral": s.interposer_k_W_per_mK * s.interposer_thickness_m, "vertical": 1.0 / vertical,
                "spreader_lateral": s.spreader_k_W_per_mK * s.spreader_thickness_m, "ambient": 1.0 / ambient}


def package_grid(rows: int, cols: int, cell_pitch_mm: float, stack: ThermalStack | None = None) -> ThermalGrid:
    """Return the thermal grid of a package (``Package.rows``, ``cols``, ``cell_pitch_mm``).

    Raises
    ------
    ValueError
        A grid smaller than 1 x 1 or a pitch that is not positive.
    """
    if rows < 1 or cols < 1 or not cell_pitch_mm > 0:
        msg = f"a grid of at least 1 x 1 cells and a pitch > 0 mm, got {rows} x {cols}, {cell_pitch_mm!r} mm"
        raise ValueError(msg)
    return ThermalGrid(rows, cols, float(cell_pitch_mm), stack or load_thermal_stack())


def conductance_matrix(grid: ThermalGrid) -> sp.csc_matrix:
    """Assemble the conductance (Laplacian plus ambient) matrix G of the two-layer network, W/K.

    Returns
    -------
    scipy.sparse.csc_matrix
        ``(2 n, 2 n)`` with ``n = rows * cols``: die nodes ``0..n-1``, spreader nodes ``n..2n-1`` (cell order).
        ``G @ T_rise = P`` with ``T_rise`` the rise over ambient, K, and ``P`` the heat injected, W.
        Symmetric positive definite (every node reaches the ambient).
    """
    g = grid.conductances_W_per_K()
    n, cols = grid.n_cells, grid.cols
    rows_i: list[int] = []
    cols_j: list[int] = []
    vals: list[float] = []

    def link(i: int, j: int, gij: float) -> None:
        rows_i.extend((i, j, i, j))
        cols_j.extend((i, j, j, i))
        vals.extend((gij, gij, -gij, -gij))

    for cell in range(n):
        r, c = divmod(cell, cols)
        link(cell, n + cell, g["vertical"])
        for nb in ((cell + 1) if c + 1 < cols else None, (cell + cols) if r + 1 < grid.rows else None):
            if nb is not None:
                link(cell, nb, g["die_lateral"])
                link(n + cell, n + nb, g["spreader_lateral"])
        rows_i.append(n + cell)
        cols_j.append(n + cell)
        vals.append(g["ambient"])
    return sp.csc_matrix((vals, (rows_i, cols_j)), shape=(2 * n, 2 * n))


@dataclass(frozen=True)
class ThermalMap:
    """Steady-state temperatures of one power map.

    Attributes
    ----------
    power_W : numpy.ndarray
        ``(rows, cols)`` power per cell, W.
    die_C, spreader_C : numpy.ndarray
        ``(rows, cols)`` temperature of each cell's die node and spreader node, degC.
    ambient_C : float
    """

    power_W: np.ndarray
    die_C: np.ndarray  # noqa: N815 - unit in name
    spreader_C: np.ndarray  # noqa: N815
    ambient_C: float  # noqa: N815

    @property
    def peak_C(self) -> float:  # noqa: N802 - unit in name
        """Hottest die node, degC."""
        return float(self.die_C.max())

    @property
    def hottest_cell(self) -> int:
        """Cell index ``r * cols + c`` of the hottest die node (the first one on ties)."""
        return int(np.argmax(self.die_C))


def _power_array(grid: ThermalGrid, power_W: np.ndarray) -> np.ndarray:  # noqa: N803
    """Validate a power map and return it flat (length ``n_cells``), W."""
    p = np.asarray(power_W, dtype=float)
    if p.size != grid.n_cells or (p.ndim == 2 and p.shape != (grid.rows, grid.cols)) or p.ndim > 2:
        msg = f"a power map of {grid.rows} x {grid.cols} cells (W), got shape {p.shape}"
        raise ValueError(msg)
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        msg = f"power per cell must be finite and >= 0 W, got {p.min():g}..{p.max():g}"
        raise ValueError(msg)
    return p.reshape(-1)


def solve_temperature(grid: ThermalGrid, power_W: np.ndarray) -> ThermalMap:  # noqa: N803
    """Return the steady-state temperature map of ``power_W`` on ``grid``.

    Parameters
    ----------
    grid : ThermalGrid
    power_W : numpy.ndarray
        ``(rows, cols)`` or flat ``(rows * cols,)`` power dissipated in each cell's die node, W.

    Returns
    -------
    ThermalMap
        Die and spreader temperatures, degC (ambient + the rise ``G^-1 P``).

    Raises
    ------
    ValueError
        A power map of the wrong size, negative or not finite.
    """
    p = _power_array(grid, power_W)
    n = grid.n_cells
    rise = splu(conductance_matrix(grid)).solve(np.concatenate([p, np.zeros(n)]))
    amb = grid.stack.ambient_C
    shape = (grid.rows, grid.cols)
    return ThermalMap(p.reshape(shape), amb + rise[:n].reshape(shape), amb + rise[n:].reshape(shape), amb)


def thermal_resistance_matrix(grid: ThermalGrid) -> np.ndarray:
    """Return R, the die-temperature rise of every cell per watt in every cell, K/W.

    Returns
    -------
    numpy.ndarray
        ``(n, n)``, ``n = rows * cols``: ``R[i, j]`` = rise of die node i (K) per W dissipated in die node j, the
        die block of ``G^-1``; symmetric with positive entries. By linearity (superposition) the die temperatures
        of a power map ``p`` (W, flat) are ``ambient_C + R @ p``.
    """
    n = grid.n_cells
    rhs = np.zeros((2 * n, n))
    rhs[np.arange(n), np.arange(n)] = 1.0
    return splu(conductance_matrix(grid)).solve(rhs)[:n]


def placement_power_map(grid: ThermalGrid, decision: Mapping[int, str],
                        power_by_type_W: Mapping[str, float]) -> np.ndarray:  # noqa: N803
    """Return the ``(rows, cols)`` power map of a placement, W (empty cells 0).

    Parameters
    ----------
    decision : mapping int -> str
        Cell -> chiplet type (``formulations.placement``).
    power_by_type_W : mapping str -> float
        Power of ONE chiplet of each type, W.

    Raises
    ------
    ValueError
        A cell outside the grid, or a type without a power.
    """
    p = np.zeros(grid.n_cells)
    for cell, t in decision.items():
        if not 0 <= cell < grid.n_cells or t not in power_by_type_W:
            msg = f"a cell in 0..{grid.n_cells - 1} holding a type with a power, got cell {cell} of type {t!r}"
            raise ValueError(msg)
        p[cell] = power_by_type_W[t]
    return p.reshape(grid.rows, grid.cols)


def hydra_power_by_type_W(library: ChipletLibrary, types: list[str], table: EnergyTable,  # noqa: N802
                          d2d_GBps: float, utilization: float) -> dict[str, float]:  # noqa: N803
    """Return the power of one chiplet of each placement type, W: compute chiplets by name, HBM groups
    (``"hbm:<group>"``) as the library's stack.

    Parameters
    ----------
    library : ChipletLibrary
    types : list[str]
        Placement type names (compute chiplet names and ``hbm:`` groups).
    table : EnergyTable
        The shared energy table (``load_energy_table("common")``).
    d2d_GBps : float
        The design's D2D bandwidth per link, GB/s.
    utilization : float
        Busy fraction of compute units and of HBM bandwidth, in [0, 1] (1: full load, the thermal design point).

    Returns
    -------
    dict[str, float]
        W per chiplet (:func:`~chipdse.evaluators.energy_hydra.chiplet_power_W`,
        :func:`~chipdse.evaluators.energy_hydra.hbm_power_W`).

    Raises
    ------
    ValueError
        A type that is neither an HBM group nor a compute chiplet of the library, or a utilization outside [0, 1].
    """
    by_name = {c.name: c for c in library.compute}
    out: dict[str, float] = {}
    for t in types:
        if t.startswith(HBM_PREFIX):
            out[t] = float(hbm_power_W(library.memory, table, utilization))
        elif t in by_name:
            out[t] = float(chiplet_power_W(by_name[t], library, table, d2d_GBps, utilization))
        else:
            msg = f"a compute chiplet of the library ({sorted(by_name)}) or an hbm: group, got {t!r}"
            raise ValueError(msg)
    return out
