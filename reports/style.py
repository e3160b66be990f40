"""Page size, captions and number formatting shared by every report page."""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib.pyplot as plt

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


def caption(fig: plt.Figure, text: str, y: float = 0.02) -> None:
    """Write a caption wrapped to the page width with equal side margins."""
    fig.text(0.04, y, "\n".join(textwrap.wrap(text, 170)), fontsize=8, va="bottom")
