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

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from chipdse.evaluators.thermal_stack import (
    MM,
    ThermalStack,
    load_thermal_stack,
)


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
