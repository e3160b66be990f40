"""Claims against a paper, shared by the three studies: one row per number a paper reports that chipdse computes.

A study lists its paper's numbers as :class:`Claim` records (HYDRA: :mod:`chipdse.studies.hydra.claims`; SNAKE and
NOVA: ``chipdse.studies.snake.claims``, ``chipdse.studies.nova.claims``). :func:`claim_rows` turns what a run measured
(a dict keyed like the claims) into the rows "claim | paper | this run | ratio | note"; the note names the measured
reason where the two differ by more than :data:`TOLERANCE` (the claim's default cause, or the caller's measured
note), or says "not run in this scenario" when the run did not compute the number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

TOLERANCE = 0.25
"""A row whose this-run / paper ratio is off 1 by more than this shows its note (issue 15, "Done when")."""

NOT_RUN = "not run in this scenario"


@dataclass(frozen=True)
class Claim:
    """One number HYDRA reports.

    Attributes
    ----------
    key : str
        The key of the measured value (see the ``measure_*`` functions).
    claim : str
        What is measured, in words.
    paper : float
        The paper's value, in ``unit``.
    unit : str
        ``x`` (a ratio), ``%`` (a change), ``share`` (a fraction of 1), ``GB`` (GiB for HBM capacity), ``GB/s``.
    source : str
        Where the paper states it (section, table, figure).
    cause : str
        The reason chipdse's number can differ (a parameter or mechanism the paper does not give), shown when this
        run is off by more than :data:`TOLERANCE` and the caller gives no measured note.
    swept : str
        That parameter's range tried and the range of this number over it, with where the paper's value falls
        (measured by ``benchmarks/bench_claims_sweeps.py``; "" when not swept); shown with ``cause``.
    """

    key: str
    claim: str
    paper: float
    unit: str
    source: str
    cause: str
    swept: str = ""


@dataclass(frozen=True)
class ClaimRow:
    """One row of the claims table: the claim, the paper's value, this run's, their ratio and the note."""

    key: str
    claim: str
    unit: str
    source: str
    paper: float
    this_run: float | None
    ratio: float | None
    off: bool
    note: str

    def cells(self) -> list[str]:
        """The row as printed: claim, paper, this run, ratio, note."""
        return [self.claim, f"{fmt_value(self.paper, self.unit)} ({self.source})",
                "-" if self.this_run is None else fmt_value(self.this_run, self.unit),
                "-" if self.ratio is None else f"{self.ratio:.2f}", self.note]


def fmt_value(v: float, unit: str) -> str:
    """A value with its unit: ``1.55x``, ``-43.7%``, ``0.93``, ``24 GiB``, ``896 GB/s``."""
    if unit == "x":
        return f"{v:.2f}x"
    if unit == "%":
        return f"{v:+.1f}%"
    if unit in ("GB", "GiB", "GB/s"):
        return f"{v:.4g} {unit}"
    return f"{v:.2f}"


def claim_rows(measured: dict[str, float | None], notes: dict[str, str] | None = None,
               tolerance: float = TOLERANCE, *, claims: tuple[Claim, ...]) -> list[ClaimRow]:
    """Compare what a run measured with a paper's numbers, one row per entry of ``claims``.

    Parameters
    ----------
    measured : dict
        Claim key -> this run's value in the claim's unit; a missing key, None or NaN means the run did not
        compute it.
    notes : dict, optional
        Claim key -> what the run measured behind a difference (e.g. "4 of 12 baselines finish no request"); put
        before the claim's cause in the note.
    tolerance : float
        Largest |ratio - 1| shown without a note.
    claims : tuple of Claim
        The paper's numbers (HYDRA's :data:`chipdse.studies.hydra.claims.CLAIMS`, SNAKE's, NOVA's).

    Returns
    -------
    list of ClaimRow
        In ``claims`` order. ``ratio`` = this run / paper. ``off`` when |ratio - 1| > ``tolerance``; the note
        is then the caller's note (if any), the claim's cause and its sweep (``Claim.swept``); "not run in this
        scenario" when there is no value; empty otherwise.
    """
    notes = notes or {}
    rows = []
    for c in claims:
        v = measured.get(c.key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            rows.append(ClaimRow(c.key, c.claim, c.unit, c.source, c.paper, None, None, False, NOT_RUN))
            continue
        ratio = float(v) / c.paper
        off = abs(ratio - 1.0) > tolerance
        note = "; ".join(x for x in (notes.get(c.key), "parameters the paper does not give: " + c.cause,
                                     c.swept and "range tried: " + c.swept) if x)
        rows.append(ClaimRow(c.key, c.claim, c.unit, c.source, c.paper, float(v), ratio, off, note if off else ""))
    return rows


def render_text(rows: list[ClaimRow], paper: str = "HYDRA") -> str:
    """The rows as a Markdown table: ``paper`` claim | paper value | this run | ratio | note."""
    out = [f"| {paper} claim | paper value | this run | ratio | note |", "| --- | --- | --- | --- | --- |"]
    out += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(out)


def measured_from(parts: list[tuple[dict[str, Any], dict[str, str]]]) -> tuple[dict[str, Any], dict[str, str]]:
    """Merge (measured, notes) pairs; later ones win."""
    m: dict[str, Any] = {}
    n: dict[str, str] = {}
    for a, b in parts:
        m |= a
        n |= b
    return m, n


@dataclass(frozen=True)
class ClaimTable:
    """A study's claims against one run, as its claims stage computed them (the report prints them as they are).

    Attributes
    ----------
    rows : list[ClaimRow]
        One per claim of the paper, in the paper's order (:func:`claim_rows`).
    measured : dict
        Claim key -> this run's value (what the rows were made from).
    notes : dict
        Claim key -> what the run measured behind a difference (before the claim's cause in the row's note).
    context : str
        One line saying which run the rows describe.
    paper : str
        ``"HYDRA"``, ``"SNAKE"`` or ``"NOVA"``.
    summary : dict
        The measured values as the manifest prints them (rounded by the study).
    """

    rows: list[ClaimRow]
    measured: dict[str, Any]
    notes: dict[str, str]
    context: str
    paper: str
    summary: dict[str, Any] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        """The rows as JSON-able dicts (the manifest's ``claims`` and ``claims.csv``): key, claim, unit, source,
        paper, this_run, ratio, off, note."""
        return [{"key": r.key, "claim": r.claim, "unit": r.unit, "source": r.source, "paper": r.paper,
                 "this_run": r.this_run, "ratio": r.ratio, "off": r.off, "note": r.note} for r in self.rows]
