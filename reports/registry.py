"""The report of each study, keyed by scenario kind: one typed :class:`ReportPages` record each, read by
:func:`chipdse.reports.files.write_report`."""

from __future__ import annotations

from chipdse.core.specs import SCENARIO_KINDS
from chipdse.reports import hydra_html, nova_pages, pdf, snake_pages
from chipdse.reports.files import ReportPages

REPORTS: dict[str, ReportPages] = {
    "hydra": ReportPages(pdf.draw, pdf.CSV, pdf.columns, pdf.details, parquet=True,
                         plots=hydra_html.plots),
    "snake": ReportPages(snake_pages.draw, snake_pages.CSV, snake_pages.columns, snake_pages.details,
                         plots=snake_pages.plots),
    "nova": ReportPages(nova_pages.draw, nova_pages.CSV, nova_pages.columns, nova_pages.details,
                        plots=nova_pages.plots),
}
"""Report pages by scenario kind."""

assert tuple(REPORTS) == SCENARIO_KINDS
