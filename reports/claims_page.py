"""The report page "<paper>'s claims, this run": every number of the paper the run computes beside the paper's, with
the ratio and, where they differ by more than 25%, the reason (the rows of the study's claims stage,
:class:`chipdse.studies.claims.ClaimTable`)."""

from __future__ import annotations

from matplotlib.backends.backend_pdf import PdfPages

from chipdse.reports.style import text_pages
from chipdse.studies.claims import TOLERANCE, ClaimRow, fmt_value


def claims_lines(rows: list[ClaimRow], context: str) -> list[str]:
    """The page's lines: the context, then per claim its paper value, this run's, the ratio and the note."""
    off = sum(r.off for r in rows)
    missing = sum(r.this_run is None for r in rows)
    lines = [context, f"{len(rows)} claims: {len(rows) - off - missing} within {TOLERANCE:.0%} of the paper, {off} "
             f"further off (each with its reason), {missing} not computed by this run. Ratio = this run / paper.", ""]
    for r in rows:
        run = "-" if r.this_run is None else fmt_value(r.this_run, r.unit)
        ratio = "" if r.ratio is None else f"   ratio {r.ratio:.2f}" + ("  (off by more than 25%)" if r.off else "")
        lines.append(f"{r.claim}: paper {fmt_value(r.paper, r.unit)} ({r.source}); this run {run}{ratio}")
        if r.note:
            lines.append(f"      {'why: ' if r.off else ''}{r.note}")
    return lines


def claims_page(pdf: PdfPages, rows: list[ClaimRow], context: str, paper: str = "HYDRA") -> None:
    """Add the page(s) "<paper>'s claims, this run" (HYDRA, SNAKE or NOVA) with :func:`claims_lines`."""
    text_pages(pdf, f"{paper}'s claims, this run", claims_lines(rows, context))
