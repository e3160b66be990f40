"""Interposer-grid geometry shared by the formulations, the evaluators and the simulator: cells are
``row * cols + col``; links are directed cell pairs; routes are XY (dimension-ordered, columns first)."""

from __future__ import annotations

Link = tuple[int, int]


def xy_route(cols: int, src: int, dst: int) -> list[Link]:
    """Return the directed links of the XY route from cell ``src`` to cell ``dst`` (columns first, then rows).

    Parameters
    ----------
    cols : int
        Grid columns (cells are ``row * cols + col``).
    src, dst : int
        Cells.

    Returns
    -------
    list[tuple[int, int]]
        ``(from_cell, to_cell)`` per hop; its length is the Manhattan distance.
    """
    r, c = divmod(src, cols)
    r1, c1 = divmod(dst, cols)
    out = []
    while c != c1:
        n = c + (1 if c1 > c else -1)
        out.append((r * cols + c, r * cols + n))
        c = n
    while r != r1:
        n = r + (1 if r1 > r else -1)
        out.append((r * cols + c, n * cols + c))
        r = n
    return out
