"""Chiplet placement on an interposer grid (HYDRA Eq. 2, extended): problem type, checker, exact models."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PlacementProblem:
    """Assign chiplets (by type) to the cells of a rows x cols interposer grid.

    Cells are numbered ``r * cols + c``. Chiplets of one type are interchangeable, so a placement is a
    map cell -> type name; every type t must occupy exactly ``counts[t]`` cells, each cell holds at most one
    chiplet, and a type listed in ``allowed`` may only use those cells (HBM groups: ring cells).

    Objective (HYDRA Eq. 2 generalized to all traffic pairs): the sum over unordered pairs of placed
    chiplets {p, q} of ``pair_volume[type(p), type(q)] * manhattan(cell(p), cell(q))``.

    Attributes
    ----------
    rows, cols : int
        Grid size in cells.
    counts : dict[str, int]
        Chiplets per type; HBM groups are types too (e.g. ``"hbm:attention"``).
    allowed : dict[str, tuple[int, ...]]
        Allowed cells per type; a type not listed may use every cell.
    pair_volume : dict[tuple[str, str], float]
        Traffic volume in bytes between ONE chiplet of the first type and ONE of the second, per unit of
        work (e.g. per decode step); keys are symmetric (either order may be given, not both).
    ring_cells : tuple[int, ...]
        The outer ring of the grid, in clockwise order from cell 0 (used by heuristics and reports).
    name : str
        Label for reports.
    """

    rows: int
    cols: int
    counts: dict[str, int]
    pair_volume: dict[tuple[str, str], float]
    allowed: dict[str, tuple[int, ...]] = field(default_factory=dict)
    ring_cells: tuple[int, ...] = ()
    name: str = "placement"
