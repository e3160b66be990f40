"""``report.html`` and ``figures/`` beside every study's ``report.pdf`` (issue 35 item 2).

One pass draws both: the study's ``draw(pdf, result)`` draws into a :class:`RecordingPdf`, a ``PdfPages`` that also
keeps, page by page, what the HTML view needs: every table page as its rows (:func:`chipdse.reports.style.
table_page` hands them over), every text page as its lines (:func:`chipdse.reports.style.text_pages`), and every
other page (a plot) as PNG and SVG bytes, written to ``figures/NN-<title>.png|svg``. The page then holds, in order:
the study's interactive plots (Plotly; :class:`Plot`, e.g. HYDRA's Pareto front: hover a point for its design and
numbers, click it for its layout and its power / temperature maps), the run's headline numbers, the claims table
with its basis column, and the PDF's pages in the PDF's order (tables as HTML tables, text as text, plots as
images linking their SVG).

Self-contained and deterministic: plotly.js is inlined from the installed ``plotly`` package (no CDN; the page
works offline and from ``file://``), the figures are referenced by relative paths inside the report folder, the
PNG and SVG files carry no date or software version (and a fixed SVG hash salt), and the data are serialized with
sorted keys, so the same result gives the same bytes.

A page opened with ``#selftest`` checks itself once its plots are drawn and writes the outcome, as JSON, into
``<pre id="selftest">``: script errors, the points each plot holds and the points it drew (SVG markers), and what a
click on the first clickable point showed. The browser test (``tests/test_html_report.py``) reads it from headless
Chromium's ``--dump-dom``.
"""

from __future__ import annotations

import html
import io
import json
import math
import re
import shutil
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.backends.backend_pdf import PdfPages

from chipdse.reports.style import fmt

FIGURES_DIR = "figures"
"""The folder (inside the report folder) of the plot pages as PNG and SVG."""
REPORT_HTML = "report.html"
FIGURE_DPI = 110
"""Resolution of the PNG figures (a US-letter page: 1210 x 935 pixels)."""
PNG_METADATA: dict[str, str | None] = {"Software": None}
SVG_METADATA: dict[str, str | None] = {"Date": None, "Creator": "chipdse"}
SVG_HASH_SALT = "chipdse"
"""matplotlib's ``svg.hashsalt``: the SVG's element ids from a fixed salt, so the same figure gives the same bytes."""


def plotly_js() -> str:
    """The plotly.js bundle of the installed ``plotly`` package (inlined into every ``report.html``).

    Raises
    ------
    FileNotFoundError
        The ``plotly`` package is installed without its bundled ``plotly.min.js``.
    """
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Plot:
    """One interactive plot of the page (Plotly's JSON figure format).

    Attributes
    ----------
    id : str
        The plot's element id (letters, digits, ``-``).
    title : str
    note : str
        The caption under the plot.
    data : list[dict]
        Plotly traces (numpy arrays allowed: the page serializes everything through :func:`clean`). A trace's
        ``customdata`` entries that are keys of ``details`` make its points clickable.
    layout : dict
        Plotly layout.
    details : dict[str, dict]
        What a click on a point shows, by its ``customdata`` key: ``{"title": str, "rows": [[name, value], ...],
        "maps": [{"title": str, "z": 2-D list, "text": 2-D list or None, "colorscale": str or list, "unit": str,
        "showscale": bool (optional), "zmin" / "zmax": numbers (optional)}, ...],
        "note": str}``. A clicked point without an entry shows its hover text and ``missing_note``.
    missing_note : str
        Shown for a clicked point that has no ``details`` entry.
    """

    id: str
    title: str
    note: str
    data: list[dict[str, Any]]
    layout: dict[str, Any]
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    missing_note: str = ""


@dataclass(frozen=True)
class _Page:
    """One recorded PDF page: ``kind`` "table" (``blocks``), "text" (``lines``) or "figure" (``stem``)."""

    number: int
    kind: str
    title: str
    note: str = ""
    blocks: tuple[tuple[str, list[str], list[list[str]]], ...] = ()
    lines: tuple[str, ...] = ()
    stem: str = ""


class RecordingPdf(PdfPages):
    """A ``PdfPages`` that also records each page for the HTML view (see the module's docstring).

    Parameters
    ----------
    target : file-like
        Where the PDF goes (as ``PdfPages``).
    metadata : dict
        The PDF's metadata (as ``PdfPages``).
    """

    def __init__(self, target: Any, metadata: dict[str, Any]) -> None:
        super().__init__(target, metadata=metadata)
        self.pages: list[_Page] = []
        self.figures: dict[str, bytes] = {}
        self._pending: _Page | None = None
        self._in_text = False  # after a text page: its continuation pages record nothing

    def record_table(self, title: str, note: str, blocks: list[tuple[str, list[str], list[list[str]]]]) -> None:
        """Record the next page as a table page (called by :func:`chipdse.reports.style.table_page`)."""
        self._pending = _Page(0, "table", title, note, blocks=tuple(blocks))

    def record_text(self, title: str, lines: list[str]) -> None:
        """Record the next page(s) as one text page (called by :func:`chipdse.reports.style.text_pages`); its
        continuation pages add nothing."""
        self._pending = _Page(0, "text", title, lines=tuple(lines))

    def savefig(self, figure: Any = None, **kwargs: Any) -> None:
        """Add ``figure`` to the PDF (as ``PdfPages.savefig``) and record it: a pending table or text page as such
        (its continuation pages as nothing), any other page as a figure (PNG and SVG bytes)."""
        super().savefig(figure, **kwargs)
        number = self.get_pagecount()
        fig = figure if isinstance(figure, matplotlib.figure.Figure) else plt.gcf()
        if self._pending is not None:
            self.pages.append(replace(self._pending, number=number))
            self._in_text, self._pending = self._pending.kind == "text", None
            return
        if self._in_text:
            return  # a continuation page of the text just recorded
        title = _figure_title(fig) or f"page {number}"
        stem = f"{number:02d}-{_slug(title)}"
        self.pages.append(_Page(number, "figure", title, stem=stem))
        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png", dpi=FIGURE_DPI, metadata=PNG_METADATA)
        with matplotlib.rc_context({"svg.hashsalt": SVG_HASH_SALT}):
            fig.savefig(svg, format="svg", metadata=SVG_METADATA)
        self.figures[f"{stem}.png"] = png.getvalue()
        self.figures[f"{stem}.svg"] = svg.getvalue()

    def end_text(self) -> None:
        """End a text page's run of continuation pages (called by :func:`chipdse.reports.style.text_pages`)."""
        self._in_text = False


def _figure_title(fig: Any) -> str:
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text().strip():
        return " ".join(sup.get_text().split())
    texts = [t for t in fig.texts if t.get_text().strip()]
    if texts:  # a page titled by a figure text (e.g. the title page): its largest
        return " ".join(max(texts, key=lambda t: t.get_fontsize()).get_text().split()[:16])
    for ax in fig.axes:
        if ax.get_title().strip():
            return " ".join(ax.get_title().split())
    return ""


def _slug(title: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return words[:48].rstrip("-") or "figure"


def clean(value: Any, digits: int = 6) -> Any:
    """``value`` made plain JSON: floats to ``digits`` significant digits, NaN / inf as None, numpy scalars and
    arrays to Python numbers and lists, tuples to lists, mappings with string keys (recursively)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {str(k): clean(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, digits) for v in value]
    return str(value)


def _json(value: Any) -> str:
    """Deterministic JSON for a ``<script>`` element (sorted keys; ``</`` escaped)."""
    return json.dumps(clean(value), sort_keys=True, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table(columns: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _lines_html(lines: tuple[str, ...]) -> str:
    out: list[str] = []
    for line in lines:
        if line.startswith("## "):
            out.append(f"<h4>{_e(line[3:])}</h4>")
        elif line.startswith("| "):
            out.append(f'<pre class="mono">{_e(line[2:])}</pre>')
        elif not line.strip():
            continue
        else:
            indent = len(line) - len(line.lstrip())
            out.append(f'<p style="margin-left:{indent // 2}em">{_e(line.strip())}</p>')
    return "\n".join(out)


def _page_html(p: _Page) -> str:
    anchor = f'id="page-{p.number}"'
    if p.kind == "table":
        tables = "".join(f"<h4>{_e(sub)}</h4>" + _table(cols, rows) for sub, cols, rows in p.blocks if rows)
        return (f'<section class="page" {anchor}><h3>Page {p.number}: {_e(p.title)}</h3>{tables}'
                f'<p class="note">{_e(p.note)}</p></section>')
    if p.kind == "text":
        return (f'<section class="page" {anchor}><details><summary><h3>Page {p.number}: {_e(p.title)}</h3>'
                f"</summary>{_lines_html(p.lines)}</details></section>")
    return (f'<section class="page" {anchor}><h3>Page {p.number}: {_e(p.title)}</h3><figure>'
            f'<a href="{FIGURES_DIR}/{p.stem}.svg"><img src="{FIGURES_DIR}/{p.stem}.png" alt="{_e(p.title)}" '
            f'loading="lazy"></a><figcaption>{FIGURES_DIR}/{p.stem}.png (<a href="{FIGURES_DIR}/{p.stem}.svg">SVG'
            "</a>)</figcaption></figure></section>")


CLAIMS_COLUMNS = ("claim", "description", "basis", "unit", "paper", "ours", "ratio", "holds", "source", "reason")
"""The claims table's columns on the page (of ``claims.csv``)."""


def _claims_html(claims: Any) -> str:
    if claims is None:
        return ""
    frame = claims.frame()
    cols = [c for c in CLAIMS_COLUMNS if c in frame.columns]
    rows = [[fmt(v) for v in rec] for rec in frame[cols].itertuples(index=False, name=None)]
    return (f'<section id="claims"><h2>{_e(claims.paper)}\'s claims, this run</h2><p class="note">Every number of '
            "the paper this run computes: the paper's value, this run's, the ratio (this run / paper) and the basis "
            "(predicted, calibrated, input or construction); the same rows are claims.csv.</p>"
            + _table(cols, rows, "claims") + "</section>")


def _flat(prefix: str, value: Any) -> list[list[str]]:
    """Rows ``[dotted key, value]`` of a nested summary: mappings flattened, lists of mappings by position."""
    if isinstance(value, dict):
        return [row for k, v in value.items() for row in _flat(f"{prefix}.{k}" if prefix else str(k), v)]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [row for i, v in enumerate(value) for row in _flat(f"{prefix}[{i}]", v)]
    if isinstance(value, str):
        return [[prefix, value]]
    return [[prefix, json.dumps(clean(value))]]


def _summary_html(summary: dict[str, Any]) -> str:
    rows = _flat("", summary)
    return '<section id="summary"><h2>Headline numbers</h2>' + _table(["quantity", "value"], rows) + "</section>"


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;max-width:1250px;
color:#222;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0 1em}td,th{border:1px solid #ccc;padding:.2em .5em;
text-align:left;vertical-align:top}th{background:#f3f3f3}.note{font-size:.85em;color:#555}
figure{margin:0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.8em;color:#555}
details summary h3{display:inline}.mono{margin:0;font-size:.8em}section.page p{margin:.15em 0;font-size:.88em}
#detail{border:1px solid #bbb;padding:.6em;margin:.6em 0;background:#fafafa}.maps{display:flex;flex-wrap:wrap}
.maps>div{width:380px;height:330px}nav a{margin-right:1em}
"""

SCRIPT = r"""
(function(){
  var PLOTS = JSON.parse(document.getElementById('plots-data').textContent);
  var ENT = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'};
  function esc(s){return String(s).replace(/[&<>"]/g, function(c){return ENT[c];});}
  function show(plot, key, hover){
    var box = document.getElementById('detail-' + plot.id);
    var d = plot.details[key];
    var html = '';
    if(!d){
      html = '<h3>' + esc(key) + '</h3><p>' + esc(hover || '') + '</p>';
      html += '<p class="note">' + esc(plot.missing_note) + '</p>';
      box.innerHTML = html; box.dataset.shown = key; box.dataset.maps = '0'; return 0;
    }
    html = '<h3>' + esc(d.title) + '</h3><table><tbody>';
    d.rows.forEach(function(r){html += '<tr><th>' + esc(r[0]) + '</th><td>' + esc(r[1]) + '</td></tr>';});
    html += '</tbody></table><div class="maps">';
    d.maps.forEach(function(m, i){html += '<div id="' + plot.id + '-map-' + i + '"></div>';});
    html += '</div><p class="note">' + esc(d.note || '') + '</p>';
    box.innerHTML = html; box.dataset.shown = key;
    var drawn = d.maps.map(function(m, i){
      var tr = {type:'heatmap', z:m.z, colorscale:m.colorscale, colorbar:{title:{text:m.unit}}, hoverongaps:false,
                showscale: m.showscale !== false, zmin: m.zmin, zmax: m.zmax, textfont: {size: 9}};
      if(m.text){
        tr.text = m.text; tr.texttemplate = '%{text}';
        tr.hovertemplate = '%{text}<br>%{z:.4g} ' + m.unit + '<extra></extra>';
      }
      return Plotly.newPlot(plot.id + '-map-' + i, [tr], {title:{text:m.title, font:{size:12}},
        margin:{l:40,r:10,t:50,b:30}, yaxis:{autorange:'reversed', dtick:1}, xaxis:{dtick:1}},
        {displaylogo:false, responsive:true, displayModeBar:false});
    });
    box.dataset.maps = String(d.maps.length);
    return drawn.length;
  }
  window.chipdseShow = function(id, key){
    var p = PLOTS.filter(function(q){return q.id === id;})[0];
    return p ? show(p, key, '') : -1;
  };
  var ready = PLOTS.map(function(p){
    var gd = document.getElementById(p.id);
    return Plotly.newPlot(gd, p.data, p.layout, {displaylogo:false, responsive:true}).then(function(){
      gd.on('plotly_click', function(ev){
        var pt = ev.points[0];
        if(pt && pt.customdata !== undefined){
          var key = Array.isArray(pt.customdata) ? pt.customdata[0] : pt.customdata;
          show(p, key, pt.text || '');
        }
      });
      return gd;
    });
  });
  Promise.all(ready).then(function(gds){
    document.body.dataset.ready = '1';
    if(location.hash !== '#selftest'){return;}
    var out = {errors: window.chipdseErrors, plots: {}, click: null};
    gds.forEach(function(gd, i){
      var held = 0;
      gd.data.forEach(function(t){held += t.x ? t.x.length : 0;});
      out.plots[PLOTS[i].id] = {held: held, drawn: gd.querySelectorAll('.scatterlayer .point').length};
    });
    var first = null;
    PLOTS.forEach(function(p){if(!first){var ks = Object.keys(p.details); if(ks.length){first = [p, ks[0]];}}});
    var done = Promise.resolve();
    if(first){
      show(first[0], first[1], '');
      done = new Promise(function(res){setTimeout(res, 50);}).then(function(){
        var box = document.getElementById('detail-' + first[0].id);
        var drawn = 0;
        box.querySelectorAll('.maps > div').forEach(function(div){
          if(div.querySelector('.main-svg') && div.querySelector('.heatmaplayer image')){drawn += 1;}
        });
        out.click = {plot: first[0].id, key: first[1], shown: box.dataset.shown,
                     maps: Number(box.dataset.maps), drawn_maps: drawn};
      });
    }
    done.then(function(){
      out.errors = window.chipdseErrors;
      document.getElementById('selftest').textContent = JSON.stringify(out);
    });
  }).catch(function(e){
    window.chipdseErrors.push(String(e && e.stack || e));
    document.getElementById('selftest').textContent = JSON.stringify({errors: window.chipdseErrors, plots: {}});
  });
})();
"""

ERROR_HOOK = ("window.chipdseErrors=[];window.addEventListener('error',function(e){window.chipdseErrors.push("
              "String(e.message||e))});window.addEventListener('unhandledrejection',function(e){"
              "window.chipdseErrors.push(String(e.reason))});")


def _plot_html(p: Plot) -> str:
    return (f'<section class="plot"><h2>{_e(p.title)}</h2><div id="{_e(p.id)}" style="height:560px"></div>'
            f'<p class="note">{_e(p.note)}</p><div id="detail-{_e(p.id)}" class="detail"><p class="note">Click a point '
            "to see its design here.</p></div></section>")


def html_document(title: str, subtitle: str, summary: dict[str, Any], plots: list[Plot], claims: Any,
                  pages: list[_Page]) -> str:
    """The whole ``report.html`` text (see the module's docstring).

    Parameters
    ----------
    title, subtitle : str
        The page's heading and the line under it.
    summary : dict
        The study's headline numbers (``summary(result)``).
    plots : list[Plot]
        The study's interactive plots.
    claims : ClaimTable or None
        The run's claims (:class:`chipdse.studies.claims.ClaimTable`).
    pages : list
        The recorded PDF pages (:attr:`RecordingPdf.pages`).
    """
    plots_json = _json([{"id": p.id, "data": p.data, "layout": p.layout, "details": p.details,
                         "missing_note": p.missing_note} for p in plots])
    nav = " ".join(f'<a href="#{_e(p.id)}">{_e(p.title)}</a>' for p in plots)
    nav += ' <a href="#summary">headline numbers</a>'
    nav += ' <a href="#claims">claims</a> <a href="#pages">report pages</a>' if claims is not None else (
        ' <a href="#pages">report pages</a>')
    body = "\n".join([
        f"<h1>{_e(title)}</h1>", f'<p class="note">{_e(subtitle)}</p>', f"<nav>{nav}</nav>",
        *(_plot_html(p) for p in plots), _summary_html(summary), _claims_html(claims),
        '<h2 id="pages">The report\'s pages (report.pdf)</h2>',
        '<p class="note">Every page of report.pdf in its order: tables and text as such, plots as the PNG files under '
        f'{FIGURES_DIR}/ (click one for its SVG).</p>',
        *(_page_html(p) for p in pages),
        '<pre id="selftest" hidden></pre>',
    ])
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style>'
            f"<script>{ERROR_HOOK}</script><script>{plotly_js()}</script></head>\n<body>\n{body}\n"
            f'<script type="application/json" id="plots-data">{plots_json}</script>\n<script>{SCRIPT}</script>\n'
            "</body></html>\n")


def write_figures(out_dir: Path, figures: dict[str, bytes]) -> Path:
    """Replace ``out_dir/figures`` with ``figures`` (``{file name: bytes}``): written into a fresh sibling folder
    first, then swapped in, so a failure leaves the old folder whole.

    Returns
    -------
    Path
        The figures folder.
    """
    final = out_dir / FIGURES_DIR
    tmp = out_dir / f".{FIGURES_DIR}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for name, data in sorted(figures.items()):
        (tmp / name).write_bytes(data)
    old = out_dir / f".{FIGURES_DIR}.old"
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    if old.exists():
        shutil.rmtree(old)
    return final


SYMBOLS = ("circle-open", "diamond", "square-open", "x", "triangle-up-open", "cross", "star-open", "circle")
"""Marker symbols of :func:`table_scatter`'s traces, in order (with shrinking sizes): series that coincide (e.g.
two NOVA split policies with the same numbers) stay visible on top of each other."""


def table_scatter(plot_id: str, title: str, note: str, frame: Any, x: tuple[str, str], y: tuple[str, str],
                  group: str, hover: list[str], log_x: bool = False) -> Plot:
    """A scatter of one study table's rows, one trace per value of ``group``.

    Parameters
    ----------
    plot_id, title, note : str
        As :class:`Plot`.
    frame : pandas.DataFrame
        The study's table (e.g. SNAKE's ``speedups.csv`` rows).
    x, y : (str, str)
        Column and axis title of each axis.
    group : str
        The column whose values make the traces (e.g. the design).
    hover : list[str]
        Columns listed in each point's hover text (after ``group``, ``x`` and ``y``).
    log_x : bool
        A log x axis.
    """
    cols = [group, x[0], y[0], *[c for c in hover if c not in (group, x[0], y[0])]]
    data = []
    for j, (value, part) in enumerate(frame.groupby(group, sort=True)):
        part = part[part[x[0]].notna() & part[y[0]].notna()]
        text = ["<br>".join(f"{c} {v:.4g}" if isinstance(v, float) else f"{c} {v}" for c, v in zip(cols, row,
                                                                                                     strict=True))
                for row in part[cols].itertuples(index=False, name=None)]
        data.append({"type": "scatter", "mode": "markers", "name": str(value), "x": part[x[0]].to_numpy(),
                     "y": part[y[0]].to_numpy(), "text": text, "customdata": [str(value)] * len(part),
                     "hovertemplate": "%{text}<extra></extra>",
                     "marker": {"size": 11 - 2 * (j % 4), "symbol": SYMBOLS[j % len(SYMBOLS)],
                                "line": {"width": 1}}})
    layout = {"xaxis": {"title": {"text": x[1]}, **({"type": "log"} if log_x else {})},
              "yaxis": {"title": {"text": y[1]}}, "hovermode": "closest", "legend": {"orientation": "h", "y": -0.18},
              "margin": {"l": 60, "r": 20, "t": 30, "b": 40}}
    return Plot(plot_id, title, note, data, layout,
                missing_note="Every row of the study's table is a point; its numbers are in the hover text and the "
                             "CSV.")
