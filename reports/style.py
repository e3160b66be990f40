"""Page size, captions and number formatting shared by every report page."""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.backends.backend_pdf import PdfPages

PAGE = (11.0, 8.5)
"""US letter, landscape, inches."""


def fmt(v: Any, digits: int = 4, spec: str | None = None) -> str:
    """Format a table cell: ``-`` for None / NaN, yes / no for booleans, ``spec`` (a format spec) or ``digits``
    significant digits for floats, ``str`` otherwise."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if spec is not None:
        return format(v, spec)
    if isinstance(v, float):
        return f"{v + 0.0:.{digits}g}"  # + 0.0 turns -0.0 into 0.0
    return str(v)


CAPTION_CHARS = 170
"""Characters per caption line (8 pt on the page width)."""
LINE_H = 1.45 / 72 / PAGE[1]
"""Height of one 1 pt text line in figure fraction (1.45 x the font size, on the page height)."""


def caption(fig: plt.Figure, text: str, y: float = 0.02) -> float:
    """Write a caption wrapped to the page width with equal side margins, its bottom at ``y`` (figure fraction).

    Returns
    -------
    float
        The caption's top, figure fraction: place axes (and their tick labels) above it.
    """
    lines = textwrap.wrap(text, CAPTION_CHARS)
    fig.text(0.04, y, "\n".join(lines), fontsize=8, va="bottom")
    return y + len(lines) * 8 * LINE_H


def text_pages(pdf: PdfPages, title: str, lines: list[str], fontsize: float = 8.5, width: int = 150) -> None:
    """Add as many pages as ``lines`` need: a bold title, then one text line each, wrapped at ``width`` characters
    (continuations indented); a line starting with ``"## "`` is a bold heading, one starting with ``"| "`` is set
    in a monospace font (not wrapped), ``""`` an empty line."""
    wrapped: list[tuple[str, str]] = []
    for line in lines:
        if line.startswith(("## ", "| ")):
            wrapped.append((line[2:].lstrip(" ") if line.startswith("#") else line[2:], line[0]))
            continue
        lead = " " * (len(line) - len(line.lstrip()))
        parts = textwrap.wrap(line.strip(), width, initial_indent=lead, subsequent_indent=lead + "    ") or [""]
        wrapped += [(p, "") for p in parts]
    step = fontsize * LINE_H
    per_page = int((0.86 - 0.04) / step)
    for start in range(0, max(len(wrapped), 1), per_page):
        fig = plt.figure(figsize=PAGE)
        more = " (continued)" if start else ""
        fig.text(0.04, 0.93, title + more, fontsize=14, fontweight="bold")
        for i, (text, kind) in enumerate(wrapped[start:start + per_page]):
            fig.text(0.04, 0.86 - i * step, text, fontsize=fontsize, va="top",
                     fontweight="bold" if kind == "#" else "normal", family="monospace" if kind == "|" else None)
        pdf.savefig(fig)
        plt.close(fig)


def table_page(pdf: PdfPages, title: str, note: str, blocks: list[tuple[str, list[str], list[list[str]]]]) -> None:
    """Add a page of tables: ``blocks`` of (subtitle, column labels, rows of cell strings), stacked top to bottom,
    with ``note`` as the caption."""
    fig = plt.figure(figsize=PAGE)
    fig.suptitle(title, fontsize=14, fontweight="bold", y=0.97)
    n = len(blocks)
    for i, (sub, cols, rows) in enumerate(blocks):
        ax = fig.add_axes((0.04, 0.1 + (n - 1 - i) * 0.83 / n, 0.92, 0.83 / n - 0.05))
        ax.axis("off")
        ax.set_title(sub, fontsize=10, loc="left")
        if rows:
            widths = [max(len(str(r[k])) for r in [cols, *rows]) + 2 for k in range(len(cols))]
            total = sum(widths)
            tb = ax.table(cellText=rows, colLabels=cols, loc="upper center", cellLoc="center",
                          colWidths=[w / total for w in widths])
            tb.auto_set_font_size(False)
            tb.set_fontsize(7.5)
            tb.scale(1, 1.25)
    caption(fig, note)
    pdf.savefig(fig)
    plt.close(fig)
