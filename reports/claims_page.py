"""The report page "HYDRA's claims, this run": every HYDRA number the run computes beside the paper's, with the
ratio and, where they differ by more than 25%, the reason (rows from :mod:`chipdse.studies.claims`)."""

from __future__ import annotations

from typing import Any

from matplotlib.backends.backend_pdf import PdfPages

from chipdse.reports.style import text_pages
from chipdse.studies.claims import TOLERANCE, ClaimRow, claim_rows, fmt_value, measured_from
from chipdse.studies.hydra.claims import CLAIMS, measure_fidelity, measure_library, measure_policies, measure_table_iv

ESTIMATOR_ONLY = "estimator only (Table IV not simulated in this run): "
"""Prefix of a Table IV row's note when the run scored Table IV with the estimator alone."""


def explore_claims(r: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """What an explore run measured, keyed like :data:`chipdse.studies.claims.CLAIMS`, and the measured notes.

    Parameters
    ----------
    r : ExploreResult
        Its simulation stage (policy runs, fidelity table and metrics; None when disabled), finalists, Table IV
        (simulated when :attr:`GeneralityResult.simulated` is set, else the estimator's) and chiplet library.

    Returns
    -------
    (measured, notes) : tuple of dict
    """
    mem = r.scenario.library.memory
    parts = [(measure_library(mem.capacity_GB, mem.bandwidth_GBps), {})]
    if r.simulation is not None:
        labels = {"B*": r.finalists[0].row["label"], "M_T": r.finalists[-1].row["label"]}
        parts.append(measure_policies(r.simulation.policies))
        parts.append((measure_fidelity(r.simulation.fidelity, labels, r.simulation.metrics), {}))
    if r.generality is not None:
        sim = r.generality.simulated
        t4 = measure_table_iv(r.generality.scores if sim is None else sim.scores)
        note = {} if sim is not None else {k: ESTIMATOR_ONLY + "the estimator's unstable designs score 0 on B*"
                                           for k in t4}
        parts.append((t4, note))
    return measured_from(parts)


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


def draw(pdf: PdfPages, r: Any) -> None:
    """Add the claims page of an explore run (:func:`explore_claims`)."""
    measured, notes = explore_claims(r)
    sc = r.scenario
    context = (f"Run: {sc.spec.name} ({sc.model.name} on {sc.workload.name}). The recovery and roofline rows need "
               "an exhaustively simulated sub-space: benchmarks/bench_hydra_claims.py computes them.")
    claims_page(pdf, claim_rows(measured, notes, claims=CLAIMS), context)
