"""The simulator pages' text stays where it belongs: every table cell's text inside its cell, and no figure text
(caption, title, key) over a plot or a table, measured on the rendered page with ``get_window_extent``."""

from __future__ import annotations

from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.table import Table
from matplotlib.transforms import Bbox

from chipdse.reports.sim_pages import layout_page, policy_page
from chipdse.studies.hydra.artifacts import ABLATION, PLACEMENT_VARIANTS, SCHEDULER_VARIANTS
from chipdse.studies.hydra.layout_study import LAYOUTS, MAX_LINK_METHOD
from chipdse.studies.hydra.simstudy import mark_validity, simulation_study

matplotlib.use("Agg")

TOLERANCE_PX = 0.5


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return (inner.x0 >= outer.x0 - TOLERANCE_PX and inner.x1 <= outer.x1 + TOLERANCE_PX
            and inner.y0 >= outer.y0 - TOLERANCE_PX and inner.y1 <= outer.y1 + TOLERANCE_PX)


def _overlap(a: Bbox, b: Bbox) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > TOLERANCE_PX and min(a.y1, b.y1) - max(a.y0, b.y0) > TOLERANCE_PX


class Checked:
    """Stands in for PdfPages: draws each page and lists every text out of place."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.cells: list[str] = []

    def savefig(self, fig: Figure, **_: Any) -> None:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        page = fig.bbox
        plots = [ax.get_tightbbox(r) for ax in fig.axes if ax.axison]  # with tick labels, titles, legends
        tables = [t for ax in fig.axes for t in ax.findobj(Table)]
        for table in tables:
            for (row, col), cell in table.get_celld().items():
                text = cell.get_text()
                self.cells.append(text.get_text())
                if text.get_text().strip() and not _inside(text.get_window_extent(r), cell.get_window_extent(r)):
                    self.problems.append(f"cell ({row}, {col}) {text.get_text()!r} leaves its cell")
        boxes = plots + [t.get_window_extent(r) for t in tables]
        for text in fig.texts:
            if not text.get_text().strip():
                continue
            b = text.get_window_extent(r)
            if not _inside(b, page):
                self.problems.append(f"{text.get_text()[:40]!r} leaves the page")
            if any(_overlap(b, box) for box in boxes):
                self.problems.append(f"{text.get_text()[:40]!r} overlaps a plot or a table")


def layouts_table() -> pd.DataFrame:
    """B*'s four layout rows, with the labels explore's layout study gives them."""
    labels = [kind.label for kind in LAYOUTS] + [f"min max-link placement ({MAX_LINK_METHOD}) + LPT mapping"]
    rows = []
    for k, label in enumerate(labels):
        rows.append({"layout": label, "eq2_byte_hops_per_s": 1.234e12 * (1 + k), "max_link_GBps": 123.4 + k,
                     "max_link_bound_GBps": 120.0 if k == 3 else None, "est_throughput_tps": 1234.0 - k,
                     "est_ttft_s": 0.123, "sim_throughput_tps": 1111.0, "sim_ttft_s": 0.456, "sim_ttft_p99_s": 1.234})
    return pd.DataFrame(rows)


def test_layout_page_keeps_every_label_in_its_cell() -> None:
    pages = Checked()
    study = simulation_study(pd.DataFrame(), {}, pd.DataFrame(), {}, [], 0.0, layouts=layouts_table())
    layout_page(pages, study, "Ap2-Ad2-Mp3-Md13-HBM4-640GBps-B16", best_eq2=1.0e12)
    flat = [" ".join(c.split()) for c in pages.cells]
    assert f"min max-link placement ({MAX_LINK_METHOD}) + LPT mapping" in flat  # wrapped, not cut
    assert pages.problems == []


def policies_table() -> pd.DataFrame:
    """Every policy study's runs on 3 models x 4 datasets x (B*, M_T), the longest names the report prints."""
    rng = np.random.default_rng(0)
    studies = {"ablation": [v for v, *_ in ABLATION], "scheduler": list(SCHEDULER_VARIANTS),
               "placement": list(PLACEMENT_VARIANTS)}
    rows = []
    for model in ("nemotron-h-8b", "jamba-tiny-dev", "zamba2-1.2b"):
        for ds in ("arxiv", "longwriter", "lmsys-chat", "bwb"):
            for role in ("B*", "M_T"):
                for study, variants in studies.items():
                    for v in variants:
                        rows.append({"study": study, "model": model, "dataset": ds, "role": role, "variant": v,
                                     "sim_throughput_tps": float(rng.uniform(100, 3000)),
                                     "sim_ttft_s": float(rng.uniform(0.05, 20)), "completed": 500,
                                     "rate_rps": 1.5, "duration_s": 110.0, "warmup_s": 10.0})
    return mark_validity(pd.DataFrame(rows), 10)


@pytest.mark.slow
def test_policy_pages_keep_captions_off_the_plots() -> None:
    pages = Checked()
    policy_page(pages, simulation_study(pd.DataFrame(), {}, policies_table(), {}, [], 0.0), "B*", 0.9)
    assert pages.problems == []
