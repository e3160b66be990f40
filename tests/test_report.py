"""The reports an architect reads: no overlapping or clipped text on any page, a page-1 recommendation that
names B* with its estimated and simulated numbers and this run's fidelity, a glossary that covers every CSV
column, and the same PDF bytes for the same results."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.table import Table
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from chipdse.core.layout import LayoutKind
from chipdse.core.solution import Solution, SolutionStatus, TerminationCondition, excess, relative_gap
from chipdse.reports import pdf, snake_pages
from chipdse.reports.files import COLUMNS_SUFFIX, MANIFEST_KEYS, write_pdf, write_report
from chipdse.reports.generality_page import generality_pages
from chipdse.reports.registry import REPORTS
from chipdse.reports.style import QuantityKey, recording_quantities, text_colour_on
from chipdse.solvers.compare import comparison_rows
from chipdse.studies.claims import fidelity_line
from chipdse.studies.hydra import explore
from chipdse.studies.hydra.generality import generality
from chipdse.studies.hydra.report_data import report_data

matplotlib.use("Agg")

TOLERANCE_PX = 0.5
"""Extents may touch: boxes must overlap by more than this (pixels at the figure's dpi) to count."""


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return (inner.x0 >= outer.x0 - TOLERANCE_PX and inner.x1 <= outer.x1 + TOLERANCE_PX
            and inner.y0 >= outer.y0 - TOLERANCE_PX and inner.y1 <= outer.y1 + TOLERANCE_PX)


def _table_rows(cells: dict[tuple[int, int], Any]) -> tuple[list[str], list[list[str]]]:
    """A matplotlib table's header row and body rows as cell strings (row 0 is the header)."""
    n_rows = max(r for r, _ in cells) + 1
    n_cols = max(c for _, c in cells) + 1
    grid = [[cells[(r, c)].get_text().get_text() if (r, c) in cells else "" for c in range(n_cols)]
            for r in range(n_rows)]
    return grid[0], grid[1:]


class Pages:
    """Stands in for PdfPages: draws each page's canvas and keeps its text artists' window extents."""

    def __init__(self) -> None:
        self.pages: list[list[tuple[str, Any]]] = []
        self.sizes: list[tuple[float, float]] = []
        self.cell_problems: list[str] = []
        self.tables: list[tuple[int, str, tuple[list[str], list[list[str]]]]] = []

    def savefig(self, fig: Figure, **_: Any) -> None:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        hidden = set()  # labels of ticks outside their axis' view: matplotlib keeps them but does not draw them
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                lo, hi = sorted(axis.get_view_interval())
                for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                    loc = tick.get_loc()
                    if loc is None or not lo - 1e-12 * abs(hi - lo) <= loc <= hi + 1e-12 * abs(hi - lo):
                        hidden |= {id(tick.label1), id(tick.label2)}
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in hidden]
        self.pages.append([(t.get_text(), t.get_window_extent(renderer)) for t in texts])
        self.sizes.append((fig.bbox.width, fig.bbox.height))
        page = len(self.pages)
        titled = [(" ".join((ax.get_title("left") or ax.get_title()).split()), t) for ax in fig.axes
                  for t in ax.findobj(Table)]
        for k, (title, table) in enumerate(titled):
            cells = table.get_celld()
            for (row, col), cell in cells.items():
                text = cell.get_text()
                if text.get_text().strip() and not _inside(text.get_window_extent(renderer),
                                                           cell.get_window_extent(renderer)):
                    self.cell_problems.append(f"page {page} table {k + 1} cell ({row}, {col}) {text.get_text()!r} "
                                              "leaves its cell")
            self.tables.append((page, title, _table_rows(cells)))

    def cells_by_key(self) -> dict[tuple[str, str, str], dict[str, list[int]]]:
        """Every table cell keyed by (table title, row label, column label): the title above the table names what
        it is of (e.g. which finalist's solves), the first column's text the row, the header row's text the column;
        a row label repeated within one table (rows that need more than one column to be told apart) is left out.
        Returns ``{key: {cell text: [pages]}}``."""
        out: dict[tuple[str, str, str], dict[str, list[int]]] = {}
        for page, title, (header, rows) in self.tables:
            labels = [r[0] for r in rows]
            for r in rows:
                if labels.count(r[0]) > 1 or not r[0].strip():
                    continue
                for col, value in zip(header[1:], r[1:], strict=False):
                    out.setdefault((title, " ".join(r[0].split()), " ".join(col.split())), {}).setdefault(
                        value.strip(), []).append(page)
        return out

    def text(self, page: int) -> str:
        return "\n".join(t for t, _ in self.pages[page])


def overlaps(pages: Pages) -> list[str]:
    """Every pair of text artists on one page whose extents overlap, every text that leaves its page and every table
    cell's text that leaves its cell."""
    bad = list(pages.cell_problems)
    for k, (texts, (w, h)) in enumerate(zip(pages.pages, pages.sizes, strict=True)):
        for text, b in texts:
            if b.x0 < -TOLERANCE_PX or b.y0 < -TOLERANCE_PX or b.x1 > w + TOLERANCE_PX or b.y1 > h + TOLERANCE_PX:
                bad.append(f"page {k + 1}: {text[:40]!r} leaves the page")
        for (ta, a), (tb, b) in itertools.combinations(texts, 2):
            dx = min(a.x1, b.x1) - max(a.x0, b.x0)
            dy = min(a.y1, b.y1) - max(a.y0, b.y0)
            if dx > TOLERANCE_PX and dy > TOLERANCE_PX:
                bad.append(f"page {k + 1}: {ta[:40]!r} overlaps {tb[:40]!r}")
    return bad


@pytest.fixture(scope="module")
def hydra_pages(hydra: explore.ExploreResult) -> Pages:
    pages = Pages()
    pdf.draw(pages, hydra)
    return pages


def test_hydra_pages_have_no_overlapping_or_clipped_text(hydra_pages: Pages) -> None:
    assert len(hydra_pages.pages) >= 10
    assert overlaps(hydra_pages) == []


def test_generality_pages_have_no_overlapping_text(hydra: explore.ExploreResult) -> None:
    """Table IV and its chosen designs (three models on the small space) with the paper's values in brackets."""
    pages = Pages()
    generality_pages(pages, generality(hydra.scenario, ["nemotron-h-4b", "nemotron-h-8b", "jamba-tiny-dev"]))
    assert len(pages.pages) == 2
    assert overlaps(pages) == []


def test_page_one_recommends_b_star_with_its_numbers_and_fidelity(hydra: explore.ExploreResult,
                                                                  hydra_pages: Pages) -> None:
    text = hydra_pages.text(0)
    b = hydra.finalists[0]
    assert b.role.startswith("B*") and b.row["label"] in text
    # the estimator's re-score of the exact layout and the simulator's run of the same design, read from the result
    exact = b.served(LayoutKind.EXACT)
    assert exact is not None
    est = exact.served
    sim = hydra.simulation.fidelity.set_index("label").loc[b.row["label"]]
    for value, spec in ((b.row["throughput_tps"], ".1f"), (b.row["ttft_s"], ".3f"), (est.throughput_tps, ".1f"),
                        (est.ttft_s, ".3f"), (sim["sim_throughput_tps"], ".1f"), (sim["sim_ttft_s"], ".3f")):
        assert format(float(value), spec) in text, (value, spec)
    flat = " ".join(text.split())  # a wrapped line may break between a name and its value
    for key in ("cosine", "spearman_throughput", "max_throughput_recovery"):
        assert f"{key} = {hydra.simulation.metrics[key]:.3f}" in flat
    # every exact solve behind it is named with its proof status
    for s in (*b.hbm, *b.placement, *b.mapping):
        if s.exact:
            assert s.method in text
    assert "proven optimal" in text or "proven gap" in text
    # B* against M_T from the most faithful stage both have, and B*'s energy, power and heat (issue 32), checked
    # against the artifacts they come from (not the sweep screen when the exact layouts or simulations exist)
    m = hydra.finalists[-1]
    if m is not b:
        fid = hydra.simulation.fidelity.set_index("label")
        if b.row["label"] in fid.index and m.row["label"] in fid.index:
            share = fid.loc[b.row["label"], "sim_throughput_tps"] / fid.loc[m.row["label"], "sim_throughput_tps"]
            assert f"simulated on the exact layouts: B* gives {share:.1%} of its throughput" in flat
    df = hydra.points
    stable = df[df["stable"]]
    pct = float((stable["tokens_per_J"] < b.row["tokens_per_J"]).mean())
    assert f"more tokens/J than {pct:.0%} of the stable points" in flat
    assert f"{exact.tokens_per_J:.3g} tokens/J at {exact.power_W:.0f} W (at its exact layout)" in flat
    best = stable.loc[stable["tokens_per_J"].idxmax()]
    assert f"{best['label']}, reaches {best['tokens_per_J']:.3g}" in flat
    therm = [t for t in hydra.thermal if str(t.role) == str(b.role)]
    if therm and therm[0].exact is not None:
        assert f"peaks at {therm[0].exact.thermal.peak_C:.1f} degC" in flat


def test_glossary_covers_every_points_column_and_the_chiplet_types(hydra: explore.ExploreResult,
                                                                    hydra_pages: Pages) -> None:
    glossary = "\n".join(hydra_pages.text(k) for k in range(len(hydra_pages.pages))
                         if hydra_pages.text(k).startswith("Glossary"))
    for col in hydra.points.columns:
        assert f"{col} [" in glossary, col
    for t in hydra.scenario.compute_types():
        assert f"{t}: " in glossary
    assert set(pdf.columns(hydra)) == set(hydra.points.columns)


def test_two_writes_of_one_result_give_the_same_pdf_bytes(hydra: explore.ExploreResult, tmp_path: Path) -> None:
    a, b = tmp_path / "a.pdf", tmp_path / "b.pdf"
    write_pdf(hydra, pdf, a)
    write_pdf(hydra, pdf, b)
    assert a.read_bytes() == b.read_bytes()
    assert b"CreationDate" not in a.read_bytes()


def test_report_writes_column_descriptions_and_command_line(hydra: explore.ExploreResult, tmp_path: Path) -> None:
    paths = write_report(hydra, REPORTS["hydra"], explore.summary(hydra), tmp_path)
    cols = pd.read_csv(paths["columns"])
    assert paths["columns"].name == "points" + COLUMNS_SUFFIX
    assert list(cols.columns) == ["column", "unit", "description"]
    assert set(cols["column"]) == set(pd.read_csv(paths["csv"]).columns)
    assert cols["description"].str.len().min() > 5
    man = json.loads(paths["manifest"].read_text())
    assert tuple(man) == MANIFEST_KEYS
    assert man["command"] == sys.argv
    assert man["code_version"]["package"] == metadata.version("chipdse")
    root = Path(__file__).resolve().parent.parent
    if (root / ".git").exists():  # a checkout: the commit git reports for it
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert man["code_version"]["git_commit"] == head.stdout.strip()
    rec = man["details"]["recommendation"]
    assert rec["label"] == hydra.finalists[0].row["label"]


@pytest.fixture(scope="module")
def other_study(bundled_study: tuple[Any, Any]) -> tuple[Any, Any, Pages, dict[QuantityKey, list[float]]]:
    """A bundled SNAKE or NOVA run, its report drawn: (result, report module, pages, the printed quantities)."""
    result, pages = bundled_study
    rec = Pages()
    with recording_quantities() as printed:
        pages.draw(rec, result)
    return result, pages, rec, printed


def two_values(printed: dict[QuantityKey, list[float]]) -> dict[QuantityKey, list[float]]:
    """The quantities a report printed with more than one value (relative 1e-9: formatting precision may differ
    between pages, the number behind it may not)."""
    return {k: v for k, v in printed.items() if any(not math.isclose(x, v[0], rel_tol=1e-9, abs_tol=1e-12)
                                                     for x in v)}


def test_snake_and_nova_pages_have_no_overlapping_text_and_described_columns(
        other_study: tuple[Any, Any, Pages, dict[QuantityKey, list[float]]]) -> None:
    result, pages, rec, _ = other_study
    assert len(rec.pages) >= 3
    assert overlaps(rec) == []
    table = getattr(result, pages.CSV[1])
    assert set(pages.columns(result)) == set(table.columns)
    # page 1 is the run summary, its numbers read from the study's own artifacts (issue 32)
    first = " ".join(rec.text(0).split())
    assert first.startswith("chipdse ") and "the run" in first
    assert " ".join(fidelity_line(result.claims.rows).split()) in first
    sm = result.summaries
    if pages is snake_pages:
        for b, x in sm.average_speedups.items():
            assert f"{x:.2f}x over {snake_pages.BASELINE_LABELS.get(b, b)}" in first
        snake_row = result.power.set_index("design").loc["snake"]
        assert f"SNAKE: peak {snake_row['peak_W']:.1f} W" in first
    else:
        served = {d: v["serve_decode_x"] for d, v in sm.numbers["per_design"].items()
                  if d != "GPU" and v["serve_decode_x"] is not None}
        best = max(served.values())
        tied = " = ".join(d for d, v in served.items() if round(v, 9) == round(best, 9))
        assert f"{tied}: {best:.2f}x the GPU's decode throughput" in first
    for sol in result.solves():
        assert f"{sol['problem']} by {sol['method']}" in first


def test_each_gap_has_one_definition_used_by_compare() -> None:
    """Hand-computed: a heuristic at 4.408 against an exact incumbent 2.584 is 70.6% in excess (the issue's
    "+70.6%" of the headline, printed as 41.4% on a page that divided by the heuristic instead); a maximization
    at 90 against 100 is 10% short; a solve at 120 with bound 100 has a proven gap of 1/6."""
    assert excess(4.408, 2.584) == pytest.approx(0.70588, rel=1e-4)
    assert excess(90.0, 100.0, "max") == pytest.approx(0.1)
    assert excess(1.0, None) is None and excess(1.0, 0.0) is None
    assert str(excess(710.0, 710.0, "max")) == "0.0"  # equal is 0, never -0 (printed "-0%")
    assert relative_gap(120.0, 100.0) == pytest.approx(1 / 6)
    # rounding is not a gap: 0.1 + 0.2 and 0.3 differ by 5.6e-17 in double precision, a relative 1.9e-16
    assert 0.1 + 0.2 != 0.3 and relative_gap(0.1 + 0.2, 0.3) == 0.0 and excess(0.1 + 0.2, 0.3) == 0.0
    sols = [Solution("p", "milp", True, SolutionStatus.FEASIBLE, TerminationCondition.TIME_LIMIT, objective=120.0,
                     bound=100.0),
            Solution("p", "cpsat", True, SolutionStatus.FEASIBLE, TerminationCondition.TIME_LIMIT, objective=110.0,
                     bound=105.0),
            Solution("p", "greedy", False, SolutionStatus.FEASIBLE, TerminationCondition.HEURISTIC_DONE,
                     objective=126.0)]
    rows = {r["method"]: r for r in comparison_rows(sols)}
    assert rows["milp"]["gap"] == pytest.approx(20 / 120)
    assert rows["greedy"]["gap"] is None
    # excess over the tightest bound, 105: (126 - 105) / 105 = 20%
    assert rows["greedy"]["gap_to_best_bound"] == pytest.approx(0.2)
    assert rows["cpsat"]["gap_to_best_bound"] == pytest.approx(5 / 105)


def test_page_one_shows_every_finalists_simulated_numbers_or_not_simulated(hydra: explore.ExploreResult,
                                                                          hydra_pages: Pages) -> None:
    """Issue 15: each finalist's simulated throughput and TTFT beside the estimator's, read from the fidelity runs;
    "not simulated" when the scenario disables simulation; the claims page is drawn."""
    text = hydra_pages.text(0)
    fid = hydra.simulation.fidelity.set_index("label")
    for f in hydra.finalists:
        assert f.role in text
        if f.row["label"] in fid.index:
            assert format(float(fid.loc[f.row["label"], "sim_throughput_tps"]), ".1f") in text
    assert any("HYDRA's claims, this run" in hydra_pages.text(k) for k in range(len(hydra_pages.pages)))
    bare = Pages()
    # the same run with the simulation stage off: its summaries stage sees no simulation
    no_sim = dataclasses.replace(hydra, simulation=None, reports=report_data(
        hydra.scenario, hydra.table, hydra.picks, hydra.finalists, hydra.thermal, None))
    pdf.draw(bare, no_sim)
    assert text.count("not simulated") == 0 or hydra.simulation is None
    assert bare.text(0).count("not simulated (simulation disabled)") == 2 * len(hydra.finalists)
    assert overlaps(bare) == []


def test_every_quantity_printed_twice_has_one_value(hydra: explore.ExploreResult,
                                                    other_study: tuple[Any, Any, Pages, dict[QuantityKey, list[float]]]
                                                    ) -> None:
    """Issue 32 item 2 ("one quantity, two values"): every number a report prints through its quantity key (design,
    stage or layout, quantity) has one value wherever it appears. HYDRA: B*'s exact-layout throughput stands on page
    1 (twice), the configurations page and the layout page; each layout's throughput and TTFT on the configurations
    and layout pages; energy and peak temperature on page 1, the configurations and thermal pages. SNAKE: the mean
    speedups and energy ratios on page 1 and the chart captions; NOVA: the energy table and its ablation."""
    with recording_quantities() as printed:
        pdf.draw(Pages(), hydra)
    _, _, _, other = other_study
    for report in (printed, other):
        repeated = {k: v for k, v in report.items() if len(v) > 1}
        assert len(repeated) >= 5, "the check needs quantities printed more than once"
        assert two_values(report) == {}
    b = hydra.finalists[0]
    key = (b.label, LayoutKind.EXACT.label, "throughput_tps")
    assert printed[key][0] == pytest.approx(b.served(LayoutKind.EXACT).served.throughput_tps)
    assert len(printed[key]) >= 3


def test_one_quantity_has_one_value_across_pages(hydra_pages: Pages) -> None:
    """CP+ET+DB's gain is printed on the ablation page, the claims page and the orderings page (issue 32 item 2: p15
    said 1.54x on 8 of 8 valid, p18 1.38x on 7 of 8): the mean, best workload and TTFT change agree wherever they
    appear."""
    text = " ".join(" ".join(hydra_pages.text(k).split()) for k in range(len(hydra_pages.pages)))
    abl = re.search(r"CP\+ET\+DB: throughput ([\d.]+)x \(([\d.]+)x-([\d.]+)x\), TTFT (-?[\d.]+)%", text)
    assert abl is not None, "the ablation page's CP+ET+DB summary"
    mean, _, best, ttft = abl.groups()
    claims_best = re.search(r"CP\+ET\+DB over the static baseline: throughput, best workload: .*? this run ([\d.]+)x",
                            text)
    claims_ttft = re.search(r"CP\+ET\+DB over the static baseline: TTFT change, mean: .*? this run (-?[\d.]+)%", text)
    claims_mean = re.search(r"CP\+ET\+DB over the static baseline: throughput, mean over workloads: .*? this run "
                            r"([\d.]+)x", text)
    ordering = re.search(r"CP\+ET\+DB beats the static baseline .*? this run ([\d.]+)x", text)
    for found in (claims_best, claims_ttft, claims_mean, ordering):
        assert found is not None
    assert (claims_mean.group(1), claims_best.group(1), claims_ttft.group(1), ordering.group(1)) == (
        mean, best, ttft, mean)


def test_cell_numbers_are_dark_on_light_colours() -> None:
    """The text colour on a heat map follows the cell's luminance (issue 32: white numbers on viridis_r's yellow):
    viridis' ends are #fde725 (yellow, luminance 0.77) and #440154 (dark purple, 0.03)."""
    fig, ax = plt.subplots()
    im = ax.imshow(np.array([[0.0, 1.0]]), cmap="viridis_r")
    assert (text_colour_on(im, 0.0), text_colour_on(im, 1.0)) == ("k", "w")
    im = ax.imshow(np.array([[0.0, 1.0]]), cmap="inferno")  # the thermal maps: black to pale yellow
    assert (text_colour_on(im, 0.0), text_colour_on(im, 1.0)) == ("w", "k")
    plt.close(fig)
