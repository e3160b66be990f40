"""Claims against a paper, shared by the three studies: one row per number a paper reports that chipdse computes.

A study lists its paper's numbers as :class:`Claim` records (HYDRA: :mod:`chipdse.studies.hydra.claims`; SNAKE and
NOVA: ``chipdse.studies.snake.claims``, ``chipdse.studies.nova.claims``). :func:`claim_rows` turns what a run measured
(a dict keyed like the claims) into the rows "claim | paper | this run | ratio | note"; the note names the measured
reason where the two differ by more than :data:`TOLERANCE` (the claim's default cause, or the caller's measured
note), or says "not run in this scenario" when the run did not compute the number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

TOLERANCE = 0.25
"""A row whose this-run / paper ratio is off 1 by more than this shows its note (issue 15, "Done when")."""

NOT_RUN = "not run in this scenario"

KINDS = ("number", "ordering")
"""``number``: a value the paper reports; ``ordering``: a conclusion "A beats B", true or false in a run."""

BASES = ("predicted", "calibrated", "input", "construction")
"""Why a row agrees or not (issue 30): ``predicted`` (emergent from the models), ``calibrated`` (a parameter was
chosen with it in view; the register's ``calibrated_on`` names it), ``input`` (restates a paper input),
``construction`` (the code makes it true)."""


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
    kind : str
        ``number`` or ``ordering`` (:data:`KINDS`). An ordering's ``paper`` is the threshold its measured value must
        pass (``direction``) for the paper's conclusion to hold, e.g. a throughput ratio above 1.
    basis : str
        ``predicted``, ``input`` or ``construction`` (:data:`BASES`); ``calibrated`` comes from the parameter
        register, not from here (:func:`claim_rows`).
    of : str
        An ordering reads the measured value of this key (default: its own ``key``).
    direction : str
        ``">"`` (the conclusion holds when the value is above ``paper``) or ``"<"``.
    """

    key: str
    claim: str
    paper: float
    unit: str
    source: str
    cause: str
    swept: str = ""
    kind: str = "number"
    basis: str = "predicted"
    of: str = ""
    direction: str = ">"

    def holds(self, value: float) -> bool:
        """Whether an ordering's conclusion holds at ``value`` (:attr:`direction` against :attr:`paper`)."""
        return value > self.paper if self.direction == ">" else value < self.paper


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
    kind: str = "number"
    basis: str = "predicted"
    holds: bool | None = None
    holds_share: float | None = None
    flips_at: str = ""

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
               tolerance: float = TOLERANCE, *, claims: tuple[Claim, ...],
               calibrated: Mapping[str, list[str]] | None = None,
               robustness: Mapping[str, tuple[float, str]] | None = None) -> list[ClaimRow]:
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
    calibrated : mapping, optional
        Claim key -> the parameters chosen with it in view (:func:`chipdse.core.params.fitted_claims` of the
        study's register): those rows' basis is ``calibrated`` and their note names the parameters.
    robustness : mapping, optional
        Ordering key -> (share of the swept settings in which it holds, where it first flips)
        (:func:`chipdse.studies.robustness.sweep_orderings`).

    Returns
    -------
    list of ClaimRow
        In ``claims`` order. ``ratio`` = this run / paper. A number is ``off`` when |ratio - 1| > ``tolerance``;
        an ordering when its conclusion does not hold (``holds``). The note of an off row is the caller's note (if
        any), the claim's cause and its sweep (``Claim.swept``); "not run in this scenario" when there is no
        value; empty otherwise; a calibrated row's note also names its fitted parameters.
    """
    notes, calibrated, robustness = notes or {}, calibrated or {}, robustness or {}
    rows = []
    for c in claims:
        basis = "calibrated" if c.key in calibrated else c.basis
        fitted = f"fitted: {', '.join(calibrated[c.key])} chosen with this row in view" if c.key in calibrated else ""
        share, flips = robustness.get(c.key, (None, ""))
        v = measured.get(c.of or c.key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            rows.append(ClaimRow(c.key, c.claim, c.unit, c.source, c.paper, None, None, False,
                                 "; ".join(x for x in (NOT_RUN, fitted) if x), c.kind, basis, None, share, flips))
            continue
        ratio = float(v) / c.paper
        holds = c.holds(float(v)) if c.kind == "ordering" else None
        off = (holds is False) if c.kind == "ordering" else abs(ratio - 1.0) > tolerance
        note = "; ".join(x for x in (notes.get(c.key) or notes.get(c.of), "parameters the paper does not give: "
                                     + c.cause, c.swept and "range tried: " + c.swept) if x)
        text = "; ".join(x for x in (note if off else "", fitted) if x)
        rows.append(ClaimRow(c.key, c.claim, c.unit, c.source, c.paper, float(v), ratio, off, text, c.kind, basis,
                             holds, share, flips))
    return rows


def fidelity(rows: list[ClaimRow], tolerance: float = TOLERANCE) -> dict[str, int]:
    """The one fidelity figure (issue 30): of the ``predicted`` number rows this run computed, how many are within
    ``tolerance`` of the paper. Returns ``{"predicted": n, "within": k, "calibrated": c, "input": i,
    "construction": j, "orderings": o, "orderings_hold": h}`` (counts of computed rows)."""
    done = [r for r in rows if r.this_run is not None]
    numbers = [r for r in done if r.kind == "number"]
    pred = [r for r in numbers if r.basis == "predicted"]
    orders = [r for r in done if r.kind == "ordering"]
    return {"predicted": len(pred), "within": sum(not r.off for r in pred),
            **{b: sum(r.basis == b for r in numbers) for b in BASES[1:]},
            "orderings": len(orders), "orderings_hold": sum(bool(r.holds) for r in orders)}


def fidelity_line(rows: list[ClaimRow], tolerance: float = TOLERANCE) -> str:
    """:func:`fidelity` in words, the claims page's first line (the orderings clause only where the study has
    ordering rows: NOVA scores its orderings as shares of runs, "0 of 0" says nothing)."""
    f = fidelity(rows, tolerance)
    order = (f"; {f['orderings_hold']} of {f['orderings']} of the paper's orderings hold in this run"
             if f["orderings"] else "")
    return (f"Fidelity: {f['within']} of {f['predicted']} predicted numbers within {tolerance:.0%} of the paper "
            f"(not counted: {f['calibrated']} calibrated, {f['input']} inputs, {f['construction']} by construction)"
            f"{order}.")


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
        """The rows as JSON-able dicts (the manifest's ``claims``): key, claim, unit, source, paper, this_run,
        ratio, off, note, kind, basis, holds, holds_share, flips_at."""
        return [{"key": r.key, "claim": r.claim, "unit": r.unit, "source": r.source, "paper": r.paper,
                 "this_run": r.this_run, "ratio": r.ratio, "off": r.off, "note": r.note, "kind": r.kind,
                 "basis": r.basis, "holds": r.holds, "holds_share": r.holds_share, "flips_at": r.flips_at}
                for r in self.rows]

    def fidelity(self) -> dict[str, int]:
        """:func:`fidelity` of the rows (the manifest's ``summary.fidelity``)."""
        return fidelity(self.rows)

    def frame(self) -> pd.DataFrame:
        """``claims.csv``: one row per claim, the columns of :data:`CSV_COLUMNS` in that order."""
        study = self.paper.lower()
        return pd.DataFrame([{
            "study": study, "claim": r.key, "kind": r.kind, "paper": r.paper, "ours": r.this_run,
            "ratio": r.ratio, "basis": r.basis, "holds": r.holds, "holds_share": r.holds_share,
            "flips_at": r.flips_at, "reason": r.note, "unit": r.unit, "description": r.claim, "source": r.source}
            for r in self.rows], columns=list(CSV_COLUMNS))


CSV_COLUMNS: dict[str, tuple[str, str]] = {
    "study": ("", "hydra, snake or nova"),
    "claim": ("", "the claim's key (the manifest's claims and summary use it)"),
    "kind": ("", "number (a value the paper reports) or ordering (a conclusion 'A beats B')"),
    "paper": ("unit", "the paper's value; for an ordering, the threshold its value must pass (above, or below for "
                      "the generality cost) for the conclusion to hold"),
    "ours": ("unit", "this run's value; empty when this run does not compute it"),
    "ratio": ("", "ours / paper"),
    "basis": ("", "predicted (emergent), calibrated (a parameter was chosen with this row in view: chipdse params "
                  "lists it under calibrated_on), input (restates a paper input), construction (the code makes it "
                  "true)"),
    "holds": ("", "orderings: whether the paper's conclusion holds in this run"),
    "holds_share": ("share", "orderings: share of the robustness sweep's settings (each assumption parameter at its "
                             "low and high, one at a time) in which it holds; empty when not swept"),
    "flips_at": ("", "orderings: the first parameter=value of that sweep at which it stops holding; empty when it "
                     "never flips or was not swept"),
    "reason": ("", "past 25% (numbers) or not holding (orderings): the measured reason and the parameters the paper "
                   "does not give; for a calibrated row the parameters fitted with it in view"),
    "unit": ("", "unit of paper and ours: x (ratio), % (change), share, W, GiB, GB/s"),
    "description": ("", "what is measured, in words"),
    "source": ("", "where the paper states it"),
}
"""The columns of ``claims.csv`` with unit and description (``claims.columns.csv``)."""
