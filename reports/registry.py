"""The report module of each study, keyed by scenario kind: each has ``draw(pdf, result)``, ``CSV`` (file name,
result attribute) and ``details(result)``, read by :func:`chipdse.reports.files.write_report`."""

from __future__ import annotations

from types import ModuleType

from chipdse.core.specs import SCENARIO_KINDS
from chipdse.reports import nova_pages, pdf, snake_pages

REPORTS: dict[str, ModuleType] = {"hydra": pdf, "snake": snake_pages, "nova": nova_pages}
"""Report pages by scenario kind."""

assert tuple(REPORTS) == SCENARIO_KINDS
