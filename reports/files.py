"""The one report writer of every study: ``report.pdf`` (the study's pages), ``report.html`` and ``figures/`` (the
same pages with interactive plots, :mod:`chipdse.reports.html`), the study's CSV and ``manifest.json`` (one schema
for every kind), each written atomically, the PDF first, so a failure leaves nothing partial.

Manifest schema (top-level keys, the same for ``hydra``, ``snake`` and ``nova``; DESIGN.md asks every run for
its scenario hash, seed, versions and solver settings):

``kind``
    The scenario kind.
``command``
    The command line as given (``sys.argv``).
``code_version``
    ``package`` (chipdse's installed version) and ``git_commit`` (the commit of the checkout chipdse runs from,
    "unknown" outside a git checkout).
``scenario``
    ``name``, ``path``, ``sha256`` of the file, and ``files``: path and sha256 of every file it names (package,
    library, workload and model card for HYDRA; the model cards for SNAKE and NOVA), by field.
``seed``
    The solver seed of the run.
``versions``
    Python and the installed versions of chipdse and its solver / numeric stack.
``solver``
    Settings (``work_limit``, the wall cap ``time_limit_s``, relative gap, threads, seed, ...) and ``solves``: each
    solve's problem, method, status and ``termination`` (which limit ended it: ``work_limit`` or the cap's
    ``time_limit``), objective, bound and wall seconds.
``timings``
    ``wall_s`` and ``cpu_s`` per stage, ``report_s`` (drawing the PDF) among them, and ``process_cpu_s``: the
    CPU seconds of the whole process tree (the run's process since it started, imports included, and its finished
    worker processes) when the manifest is written. These are the only wall-clock and CPU times of a run: the PDF
    prints none, so the same results give the same PDF bytes.
``summary``
    The headline numbers (the study's ``summary(result)``).
``details``
    Everything study-specific (the report module's ``details(result)``).
"""

from __future__ import annotations

import io
import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as papq
from matplotlib.backends.backend_pdf import PdfPages

from chipdse.core.cpu import tree_cpu_s
from chipdse.core.io import atomic_path, strict_json, write_text_atomic
from chipdse.core.specs import file_sha256
from chipdse.reports.html import REPORT_HTML, Plot, RecordingPdf, html_document, write_figures
from chipdse.studies.claims import CSV_COLUMNS

PACKAGES = ("chipdse", "pyomo", "highspy", "ortools", "numpy", "scipy", "pandas", "pyarrow", "matplotlib", "pydantic")
MANIFEST_KEYS = ("kind", "command", "code_version", "scenario", "seed", "versions", "solver", "timings", "summary",
                 "details")
"""Top-level keys of every manifest, in order."""
CLAIMS_CSV = "claims.csv"
"""The claims stage's rows beside every explore's outputs (:meth:`chipdse.studies.claims.ClaimTable.frame`)."""

COLUMNS_SUFFIX = ".columns.csv"
"""The companion of a study's CSV (``points.csv`` -> ``points.columns.csv``): one row per column of the CSV with
its ``column``, ``unit`` and ``description``."""
PARQUET_COMPRESSION = "zstd"
"""The Parquet files' codec (pyarrow)."""
PDF_METADATA = {"CreationDate": None, "Creator": "chipdse", "Producer": "chipdse"}
"""PDF metadata without a date or a library version, so the same pages give the same bytes."""


@dataclass(frozen=True)
class ReportPages:
    """What the report writer needs of a study's report.

    Attributes
    ----------
    draw : callable(PdfPages, result)
        Draws the PDF pages.
    csv : tuple[str, str]
        The CSV's file name and the result's attribute holding its table.
    columns : callable(result) -> dict
        ``{column: (unit, description)}`` of the CSV.
    details : callable(result) -> dict
        The manifest's study-specific part.
    parquet : bool
        Also write the CSV's table as Parquet beside it (``points.csv`` -> ``points.parquet``): HYDRA's scored
        design space, which grows with the space.
    plots : callable(result) -> list[Plot]
        The interactive plots of ``report.html`` (:class:`chipdse.reports.html.Plot`); none by default.
    """

    draw: Callable[[PdfPages, Any], None]
    csv: tuple[str, str]
    columns: Callable[[Any], dict[str, tuple[str, str]]]
    details: Callable[[Any], dict[str, Any]]
    parquet: bool = False
    plots: Callable[[Any], list[Plot]] = lambda _result: []


def _to_parquet(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` without its index as Parquet at ``path`` (pyarrow, :data:`PARQUET_COMPRESSION`)."""
    frame.to_parquet(path, engine="pyarrow", index=False, compression=PARQUET_COMPRESSION)


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    """Write ``frame`` (without its index) as Parquet (pyarrow, zstd) at ``path``, atomically: the same columns and
    dtypes ``pandas.read_parquet`` gives back.

    Raises
    ------
    OSError
        The file cannot be written.
    """
    with atomic_path(path) as tmp:
        _to_parquet(frame, tmp)


def write_table_files(frame: pd.DataFrame | Iterable[pd.DataFrame], cols: dict[str, tuple[str, str]], out_dir: Path,
                      stem: str = "points") -> dict[str, Path]:
    """Write a table as ``<stem>.parquet`` and its column descriptions as ``<stem>.columns.csv``
    (:data:`COLUMNS_SUFFIX`) into ``out_dir``, each atomically (``chipdse sweep --out``).

    Parameters
    ----------
    frame : pandas.DataFrame, or an iterable of them
        The rows (e.g. every scored point of a sweep); chunks with the same columns are written one row group
        each as they come (one chunk in memory at a time), and read back as one table.
    cols : dict
        ``{column: (unit, description)}`` of every column of ``frame``.
    out_dir : Path
        Created when missing.

    Returns
    -------
    dict[str, Path]
        ``{"parquet": ..., "columns": ...}``.

    Raises
    ------
    OSError
        The folder or a file cannot be written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"parquet": out_dir / f"{stem}.parquet", "columns": out_dir / f"{stem}{COLUMNS_SUFFIX}"}
    with atomic_path(paths["parquet"]) as pq, atomic_path(paths["columns"]) as csv:  # both written, then renamed
        if isinstance(frame, pd.DataFrame):
            _to_parquet(frame, pq)
        else:
            _chunks_to_parquet(frame, pq)
        columns_table(cols).to_csv(csv, index=False)
    return paths


def _chunks_to_parquet(frames: Iterable[pd.DataFrame], path: Path) -> None:
    """Write DataFrames with the same columns to one Parquet file at ``path``, a row group per chunk (the first
    chunk's schema; an empty iterable writes nothing)."""
    writer = None
    try:
        for df in frames:
            if writer is None:
                table = pa.Table.from_pandas(df, preserve_index=False)
                writer = papq.ParquetWriter(path, table.schema, compression=PARQUET_COMPRESSION)
            else:
                table = pa.Table.from_pandas(df, schema=writer.schema, preserve_index=False)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def package_versions() -> dict[str, str]:
    """Return installed versions of chipdse and its solver / numeric stack ("not installed" when absent)."""
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


def code_version() -> dict[str, str]:
    """chipdse's installed version and the git commit of the checkout it runs from.

    Returns
    -------
    dict
        ``package`` (e.g. "0.1.0", "unknown" when not installed) and ``git_commit`` (40 hex digits, or "unknown"
        when the package is not in a git checkout or git is not available).
    """
    try:
        package = metadata.version("chipdse")
    except metadata.PackageNotFoundError:
        package = "unknown"
    root = Path(__file__).resolve().parent.parent
    commit = "unknown"
    if (root / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                 timeout=10, check=True)
            commit = out.stdout.strip() or "unknown"
        except (OSError, subprocess.SubprocessError):
            commit = "unknown"
    return {"package": package, "git_commit": commit}


def manifest(result: Any, summary: dict[str, Any], details: dict[str, Any],
             report_s: tuple[float, float] | None = None) -> dict[str, Any]:
    """The run manifest of a study result (see the module docstring for the schema).

    Parameters
    ----------
    result
        A study result: ``scenario`` (with ``spec``, ``path``, ``sha256``, ``named_files``), ``solver``,
        ``timings_s``, ``cpu_s`` and ``solves()`` (:mod:`chipdse.studies.common`).
    summary : dict
        The study's headline numbers.
    details : dict
        Study-specific content.
    report_s : (float, float), optional
        Wall and CPU seconds of drawing the report, added to the timings as the stage ``report_s``.
    """
    sc = result.scenario
    wall_s, cpu_s = dict(result.timings_s), dict(result.cpu_s)
    if report_s is not None:
        wall_s["report_s"], cpu_s["report_s"] = report_s
    files = {k: {"path": str(p), "sha256": file_sha256(p)} for k, p in sc.named_files.items()}
    return strict_json({
        "kind": sc.spec.kind,
        "command": list(sys.argv),
        "code_version": code_version(),
        "scenario": {"name": sc.spec.name, "path": str(sc.path), "sha256": sc.sha256, "files": files,
                     "overrides": {ov.path: ov.value for ov in getattr(sc, "overrides", ())}},
        "seed": result.solver.seed,
        "versions": {"python": platform.python_version(), **package_versions()},
        "solver": {**result.solver.model_dump(), "solves": result.solves()},
        "timings": {"wall_s": wall_s, "cpu_s": cpu_s, "process_cpu_s": tree_cpu_s()},
        "summary": summary,
        "details": details,
    })


def columns_table(cols: dict[str, tuple[str, str]]) -> pd.DataFrame:
    """The column-description table of a study's CSV: ``cols`` (``{column: (unit, description)}``) as rows of
    ``column``, ``unit``, ``description``."""
    return pd.DataFrame([{"column": k, "unit": u, "description": d} for k, (u, d) in cols.items()],
                        columns=["column", "unit", "description"])


def pdf_bytes(result: Any, pages: ReportPages) -> bytes:
    """The study's pages (``pages.draw``) as a PDF, with :data:`PDF_METADATA`: the same result gives the same
    bytes."""
    buf = io.BytesIO()
    with PdfPages(buf, metadata=PDF_METADATA) as pdf:
        pages.draw(pdf, result)
    return buf.getvalue()


@dataclass(frozen=True)
class DrawnReport:
    """Every file of a study's report, drawn in one pass and not yet written (:func:`draw_report`).

    Attributes
    ----------
    pdf : bytes
        ``report.pdf``.
    html : str
        ``report.html`` (:func:`chipdse.reports.html.html_document`).
    figures : dict[str, bytes]
        ``figures/``: file name -> bytes (every plot page as PNG and SVG).
    """

    pdf: bytes
    html: str
    figures: dict[str, bytes]


def draw_report(result: Any, pages: ReportPages, summary: dict[str, Any]) -> DrawnReport:
    """Draw the study's pages once into a :class:`chipdse.reports.html.RecordingPdf`: the PDF bytes (the same as
    :func:`pdf_bytes`), the figures and ``report.html`` from the recorded pages, the study's interactive plots
    (``pages.plots``), ``summary`` and the claims.

    Parameters
    ----------
    result
        The study's result (``scenario.spec`` with ``kind`` and ``name``, ``claims`` if any).
    pages : ReportPages
    summary : dict
        The study's headline numbers.
    """
    buf = io.BytesIO()
    with RecordingPdf(buf, PDF_METADATA) as pdf:
        pages.draw(pdf, result)
    sc = result.scenario
    title = f"chipdse {sc.spec.kind.upper()} report: {sc.spec.name}"
    subtitle = (f"Scenario {sc.path.name}, sha256 {sc.sha256[:16]}; chipdse {code_version()['package']}. The same "
                "pages as report.pdf, with interactive plots; the figures are under figures/.")
    text = html_document(title, subtitle, summary, pages.plots(result), getattr(result, "claims", None), pdf.pages)
    return DrawnReport(buf.getvalue(), text, dict(pdf.figures))


def write_pdf(result: Any, pages: ReportPages, path: Path) -> None:
    """Write :func:`pdf_bytes` to ``path``, atomically."""
    data = pdf_bytes(result, pages)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_report(result: Any, pages: ReportPages, summary: dict[str, Any], out_dir: Path, csv: bool = True
                 ) -> dict[str, Path]:
    """Write ``report.pdf``, ``report.html`` with ``figures/``, the study's CSV, its column descriptions
    (:data:`COLUMNS_SUFFIX`) and ``manifest.json`` into ``out_dir``, each atomically (all drawn first).

    Parameters
    ----------
    result
        The study's result (see :func:`manifest`).
    pages : ReportPages
        The study's report (:class:`chipdse.reports.registry.ReportPages`): ``draw(pdf, result)`` draws the PDF
        pages, ``csv`` is the CSV's ``(file name, result attribute)``, ``columns(result)`` its
        ``{column: (unit, description)}``, ``details(result)`` the manifest's study-specific part.
    summary : dict
        The study's headline numbers (``summary(result)`` of the study module).
    out_dir : Path
    csv : bool
        Write the study's CSV (default). False leaves it out where the table is also written as Parquet
        (``pages.parquet``, HYDRA: a big space's ``points.csv`` is about five times its ``points.parquet``).

    Returns
    -------
    dict[str, Path]
        ``{"pdf": ..., "html": ..., "figures": ..., "csv": ..., "columns": ..., "manifest": ...}`` (no ``csv`` when
        ``csv`` is false; ``figures`` is the folder),
        ``claims`` / ``claims_columns`` (``claims.csv`` and its column descriptions) when the result has claims, and
        ``parquet`` (the CSV's table as Parquet) when ``pages.parquet``.

    Raises
    ------
    OSError
        The folder or a file cannot be written. The PDF is drawn and the manifest serialized (strict JSON: NaN as
        null) before anything is written.
    ValueError
        ``csv`` false for a study whose table has no Parquet copy (nothing is written).
    """
    csv_name, attr = pages.csv
    if not csv and not pages.parquet:
        msg = f"the {csv_name} table is written only as CSV here; it cannot be left out"
        raise ValueError(msg)
    table = getattr(result, attr)
    w0, c0 = time.perf_counter(), tree_cpu_s()
    drawn = draw_report(result, pages, summary)
    pdf = drawn.pdf
    report_s = (time.perf_counter() - w0, tree_cpu_s() - c0)
    text = json.dumps(manifest(result, summary, pages.details(result), report_s), indent=2, default=str,
                      allow_nan=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    cols = columns_table(pages.columns(result))
    paths = {"pdf": out_dir / "report.pdf", "csv": out_dir / csv_name,
             "columns": out_dir / (Path(csv_name).stem + COLUMNS_SUFFIX), "manifest": out_dir / "manifest.json"}
    claims = getattr(result, "claims", None)
    tables = [(paths["csv"], table), (paths["columns"], cols)]
    if not csv:
        del tables[0], paths["csv"]
    if claims is not None:
        paths |= {"claims": out_dir / CLAIMS_CSV, "claims_columns": out_dir / (Path(CLAIMS_CSV).stem + COLUMNS_SUFFIX)}
        tables += [(paths["claims"], claims.frame()), (paths["claims_columns"], columns_table(CSV_COLUMNS))]
    with atomic_path(paths["pdf"]) as tmp:
        tmp.write_bytes(pdf)
    paths["figures"] = write_figures(out_dir, drawn.figures)
    paths["html"] = out_dir / REPORT_HTML
    write_text_atomic(paths["html"], drawn.html)
    for path, frame in tables:
        with atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False)
    if pages.parquet:
        paths["parquet"] = out_dir / (Path(csv_name).stem + ".parquet")
        write_parquet(paths["parquet"], table)
    write_text_atomic(paths["manifest"], text)
    return paths
