"""The report page "<paper>'s claims, this run": every number of the paper the run computes beside the paper's, with
the ratio and, where they differ by more than 25%, the reason (the rows of the study's claims stage,
:class:`chipdse.studies.claims.ClaimTable`)."""

from __future__ import annotations

from matplotlib.backends.backend_pdf import PdfPages

from chipdse.reports.style import text_pages
from chipdse.studies.claims import TOLERANCE, ClaimRow, fidelity_line, fmt_value


def claims_lines(rows: list[ClaimRow], context: str) -> list[str]:
    """The page's lines: the fidelity over predicted rows (:func:`chipdse.studies.claims.fidelity_line`), the
    context, then per claim its basis, paper value, this run's, the ratio (numbers) or whether it holds
    (orderings) and the note. The same rows are ``claims.csv``."""
    off = sum(r.off for r in rows)
    missing = sum(r.this_run is None for r in rows)
    lines = [fidelity_line(rows), context,
             f"{len(rows)} claims: {len(rows) - off - missing} within {TOLERANCE:.0%} of the paper or holding, {off} "
             f"further off or not holding (each with its reason), {missing} not computed by this run. Ratio = this "
             "run / paper. [basis] predicted, calibrated, input or construction (claims.csv).", ""]
    for r in rows:
        run = "-" if r.this_run is None else fmt_value(r.this_run, r.unit)
        if r.kind == "ordering":
            verdict = "" if r.holds is None else ("   holds" if r.holds else "   does NOT hold")
            share = "" if r.holds_share is None else f" in {r.holds_share:.0%} of the swept settings"
            flips = f", flips at {r.flips_at}" if r.flips_at else ""
            lines.append(f"[{r.basis}] {r.claim}: threshold {fmt_value(r.paper, r.unit)} ({r.source}); this run "
                         f"{run}{verdict}{share}{flips}")
        else:
            ratio = "" if r.ratio is None else f"   ratio {r.ratio:.2f}" + ("  (off by more than 25%)" if r.off else "")
            lines.append(f"[{r.basis}] {r.claim}: paper {fmt_value(r.paper, r.unit)} ({r.source}); this run "
                         f"{run}{ratio}")
        if r.note:
            lines.append(f"      {'why: ' if r.off else ''}{r.note}")
    return lines


def claims_page(pdf: PdfPages, rows: list[ClaimRow], context: str, paper: str = "HYDRA") -> None:
    """Add the page(s) "<paper>'s claims, this run" (HYDRA, SNAKE or NOVA) with :func:`claims_lines`."""
    text_pages(pdf, f"{paper}'s claims, this run", claims_lines(rows, context))
