"""Page size, captions and number formatting shared by every report page."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_pdf import PdfPages

from chipdse.core.layout import SCREEN_LABEL, LayoutKind

PAGE = (11.0, 8.5)

ROLE_STYLE = {"B*": ("*", "#d62728", 260), "M_T": ("D", "#2ca02c", 90)}
"""Marker, colour and size of each finalist on every plot that marks it (B* a red star, M_T a green diamond)."""
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


QuantityKey = tuple[str, ...]
"""What a printed number is, e.g. ``("Ap1-Ad8-...", "exact placement + exact mapping", "throughput_tps")``: the
design, the stage or layout it was computed at, and the quantity with its unit."""

SCREEN = SCREEN_LABEL
"""Stage of a :data:`QuantityKey`: the sweep screen (the estimator's own mapping and hop model)."""
EXACT_LAYOUT = LayoutKind.EXACT.label
"""Stage of a :data:`QuantityKey`: the estimator's re-score of the best exact layout (other layouts: their label)."""
SIMULATED = "simulator, fidelity run"
"""Stage of a :data:`QuantityKey`: the simulation stage's fidelity run on the exact layout."""
TP, TTFT, TPJ, POWER, PEAK = "throughput_tps", "ttft_s", "tokens_per_J", "power_W", "peak_C"
"""Quantity names of a :data:`QuantityKey` (the artifacts' column names, units in the suffix)."""

_LEDGER: ContextVar[dict[QuantityKey, list[float]] | None] = ContextVar("quantity_ledger", default=None)


def quantity(value: Any, spec: str, *key: str) -> str:
    """Format ``value`` with the format spec ``spec`` (``-`` for None / NaN) as the quantity ``key`` (see
    :data:`QuantityKey`); while :func:`recording_quantities` is active, note the value under its key, so a report
    that prints one quantity with two values on two pages can be caught (issue 32: "one quantity, one value")."""
    ledger = _LEDGER.get()
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    if ledger is not None and not missing:
        ledger.setdefault(tuple(key), []).append(float(value))
    return "-" if missing else format(value, spec)


@contextmanager
def recording_quantities() -> Iterator[dict[QuantityKey, list[float]]]:
    """Record every :func:`quantity` printed inside the ``with`` block: yields ``{key: [values as printed, in
    order]}``."""
    ledger: dict[QuantityKey, list[float]] = {}
    token = _LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.reset(token)


def text_colour_on(image: Any, value: float) -> str:
    """Black or white, whichever reads better on ``image``'s colour at ``value`` (an ``AxesImage`` from ``imshow``):
    black where the colour's relative luminance (WCAG 2.x, sRGB) is above 0.179, the point of equal contrast with
    both, so no number is drawn white on yellow."""
    r, g, b = (((c / 12.92) if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
               for c in image.cmap(image.norm(value))[:3])
    return "k" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 else "w"


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
    in a monospace font (not wrapped), ``""`` an empty line. A recording ``pdf``
    (:class:`chipdse.reports.html.RecordingPdf`) keeps the lines for the HTML view."""
    record = getattr(pdf, "record_text", None)
    if record is not None:
        record(title, lines)
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
    end = getattr(pdf, "end_text", None)
    if end is not None:
        end()


def table_page(pdf: PdfPages, title: str, note: str, blocks: list[tuple[str, list[str], list[list[str]]]]) -> None:
    """Add a page of tables: ``blocks`` of (subtitle, column labels, rows of cell strings), stacked top to bottom,
    with ``note`` as the caption. A recording ``pdf`` (:class:`chipdse.reports.html.RecordingPdf`) keeps the rows for
    the HTML view."""
    record = getattr(pdf, "record_table", None)
    if record is not None:
        record(title, note, blocks)
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
            # the widest row must fit the table's width: a character of DejaVu Sans is about 0.6 em wide
            fit_pt = 0.92 * PAGE[0] * 72 / (0.6 * total)
            tb.set_fontsize(min(7.5, fit_pt))
            tb.scale(1, 1.25)
            lines = max(str(c).count("\n") + 1 for c in cols)  # a two-line header needs a row twice as tall
            if lines > 1:
                for (row, _), cell in tb.get_celld().items():
                    if row == 0:
                        cell.set_height(cell.get_height() * lines)
    caption(fig, note)
    pdf.savefig(fig)
    plt.close(fig)


def glossary_pages(pdf: PdfPages, terms: list[str], csv_name: str, cols: dict[str, tuple[str, str]]) -> None:
    """Add the glossary: ``terms`` (lines as :func:`text_pages` takes them), then every column of the study's CSV
    ``csv_name`` as "name [unit]: description" from ``cols`` (``{column: (unit, description)}``)."""
    stem = csv_name.rsplit(".", 1)[0]
    lines = [*terms, f"## {csv_name} columns (also in {stem}.columns.csv beside it)"]
    lines += [f"    {name} [{unit}]: {text}" for name, (unit, text) in cols.items()]
    text_pages(pdf, "Glossary", lines)


LABEL_OFFSETS_PT = ((3, 3), (3, -10), (-10, 3), (-10, -10), (8, -3), (-15, -3), (-3, 8), (-3, -15), (12, 10),
                    (12, -16), (-20, 10), (-20, -16))
"""Offsets (points) :func:`label_points` tries for a label, nearest first."""


def label_points(ax: plt.Axes, xs: np.ndarray, ys: np.ndarray, labels: list[str], fontsize: float = 6.5,
                 merge_pt: float = 8.0) -> None:
    """Label data points without overlapping labels: points closer than ``merge_pt`` points on the page share one
    label ("1,2"); each label takes the first offset of :data:`LABEL_OFFSETS_PT` where it overlaps no label placed
    before it and no legend, else the first offset. Fixes the axes' limits (the current autoscaled ones).

    Parameters
    ----------
    ax : Axes
        Its figure's layout (subplots_adjust) must be final.
    xs, ys : numpy.ndarray, shape (n,)
        Data coordinates.
    labels : list of str, length n
    """
    fig = ax.figure
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    px = ax.transData.transform(np.column_stack([xs, ys]))
    merge_px = merge_pt * fig.dpi / 72
    groups: list[tuple[np.ndarray, list[str], float, float]] = []
    for (x, y), p, text in zip(zip(xs, ys, strict=True), px, labels, strict=True):
        for g in groups:
            if np.hypot(*(g[0] - p)) < merge_px:
                g[1].append(text)
                break
        else:
            groups.append((p, [text], x, y))
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend()
    placed = [legend.get_window_extent(renderer)] if legend is not None else []
    for _, texts, x, y in groups:
        chosen = None
        for off in LABEL_OFFSETS_PT:
            ann = ax.annotate(",".join(texts), (x, y), fontsize=fontsize, xytext=off, textcoords="offset points")
            box = ann.get_window_extent(renderer)
            if not any(box.overlaps(b) for b in placed):
                chosen = (ann, box)
                break
            ann.remove()
        if chosen is None:
            ann = ax.annotate(",".join(texts), (x, y), fontsize=fontsize, xytext=LABEL_OFFSETS_PT[0],
                              textcoords="offset points")
            chosen = (ann, ann.get_window_extent(renderer))
        placed.append(chosen[1])
