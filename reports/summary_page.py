"""Page 1 of the SNAKE and NOVA reports: the run summary (issue 32).

What the study recommends and the numbers that decide it, taken from the study's own summaries (the artifacts the
other pages and the manifest print), the energy and power of the recommended design, the proof status of every
exact solve, the claims page's fidelity line, and what would change the recommendation (the runner-up's margin and
the register parameters chosen with a claim in view). The lines are built by each study's pages module
(:func:`reports.nova_pages.summary_lines`, :func:`reports.snake_pages.summary_lines`); this module holds the shared
parts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.backends.backend_pdf import PdfPages

from chipdse.core.params import load_register
from chipdse.reports.style import text_pages
from chipdse.studies.claims import ClaimRow, fidelity_line


def solve_lines(solves: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per (problem, method) of the run's solves: how many, their statuses and what ended them, and the
    largest proven gap of an exact method that did not prove its optimum."""
    groups: dict[tuple[str, str, bool], list[Mapping[str, Any]]] = {}
    for s in solves:
        groups.setdefault((str(s["problem"]), str(s["method"]), bool(s["exact"])), []).append(s)
    out = []
    for (problem, method, exact), rows in groups.items():
        status = Counter(str(r["status"]) for r in rows)
        ended = Counter(str(r["termination"]) for r in rows)
        gaps = [abs(r["objective"] - r["bound"]) / abs(r["objective"]) for r in rows
                if exact and r["status"] != "optimal" and r.get("objective") and r.get("bound") is not None]
        worst = f"; largest proven gap {max(gaps):.2%}" if gaps else ""
        out.append(f"    {problem} by {method} ({'exact' if exact else 'heuristic'}): {len(rows)} solve(s), "
                   + ", ".join(f"{n} {k}" for k, n in status.most_common())
                   + "; ended by " + ", ".join(f"{k} {n}" for k, n in ended.most_common()) + worst)
    return out or ["    no optimization solve in this run"]


def fitted_parameters(study: str) -> list[str]:
    """Names of the study's register parameters chosen with a claim in view (basis ``calibrated``)."""
    return [p.name for p in load_register(study).parameters if p.basis == "calibrated"]


def caveat_lines(study: str, rows: list[ClaimRow] | None) -> list[str]:
    """The fidelity line of the claims page and the fitted parameters the numbers rest on."""
    out = ["## How far to trust it"]
    out.append("    " + (fidelity_line(rows) if rows else "no claims table in this run"))
    fitted = fitted_parameters(study)
    out.append("    Parameters chosen with a paper number in view (chipdse params " + study + "): "
               + (", ".join(fitted) if fitted else "none") + "; a conclusion that rests on them is unproven on a "
               "design nobody has built.")
    return out


def summary_page(pdf: PdfPages, title: str, lines: list[str]) -> None:
    """Add the run summary (``title``, then ``lines``) as the report's first page(s)."""
    text_pages(pdf, title, lines)
