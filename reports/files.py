"""The one report writer of every study: ``report.pdf`` (the study's pages), the study's CSV and
``manifest.json`` (one schema for every kind), each written atomically, the PDF first, so a failure leaves
nothing partial.

Manifest schema (top-level keys, the same for ``hydra``, ``snake`` and ``nova``; DESIGN.md asks every run for
its scenario hash, seed, versions and solver settings):

``kind``
    The scenario kind.
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
    ``wall_s`` and ``cpu_s`` per stage.
``summary``
    The headline numbers (the study's ``summary(result)``).
``details``
    Everything study-specific (the report module's ``details(result)``).
"""

from __future__ import annotations

import json
import math
import platform
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from matplotlib.backends.backend_pdf import PdfPages

from chipdse.core.io import atomic_path, write_text_atomic
from chipdse.core.specs import file_sha256

PACKAGES = ("chipdse", "pyomo", "highspy", "ortools", "numpy", "scipy", "pandas", "matplotlib", "pydantic")
MANIFEST_KEYS = ("kind", "scenario", "seed", "versions", "solver", "timings", "summary", "details")
"""Top-level keys of every manifest, in order."""


def package_versions() -> dict[str, str]:
    """Return installed versions of chipdse and its solver / numeric stack ("not installed" when absent)."""
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


def strict_json(obj: Any) -> Any:
    """``obj`` with every NaN float replaced by None, recursively through dicts, lists and tuples."""
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [strict_json(v) for v in obj]
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj


def manifest(result: Any, summary: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
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
    """
    sc = result.scenario
    files = {k: {"path": str(p), "sha256": file_sha256(p)} for k, p in sc.named_files.items()}
    return strict_json({
        "kind": sc.spec.kind,
        "scenario": {"name": sc.spec.name, "path": str(sc.path), "sha256": sc.sha256, "files": files},
        "seed": result.solver.seed,
        "versions": {"python": platform.python_version(), **package_versions()},
        "solver": {**result.solver.model_dump(), "solves": result.solves()},
        "timings": {"wall_s": result.timings_s, "cpu_s": result.cpu_s},
        "summary": summary,
        "details": details,
    })


def write_report(result: Any, pages: ModuleType, summary: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write ``report.pdf``, the study's CSV and ``manifest.json`` into ``out_dir``, each atomically.

    Parameters
    ----------
    result
        The study's result (see :func:`manifest`).
    pages : module
        The study's report module: ``draw(pdf, result)`` draws the PDF pages, ``CSV`` is the CSV's
        ``(file name, result attribute)``, ``details(result)`` the manifest's study-specific part.
    summary : dict
        The study's headline numbers (``summary(result)`` of the study module).
    out_dir : Path

    Returns
    -------
    dict[str, Path]
        ``{"pdf": ..., "csv": ..., "manifest": ...}``.

    Raises
    ------
    OSError
        The folder or a file cannot be written. The manifest is serialized (strict JSON: NaN as null) before
        anything is written; the PDF is drawn before the CSV and manifest are written.
    """
    csv_name, attr = pages.CSV
    table = getattr(result, attr)
    text = json.dumps(manifest(result, summary, pages.details(result)), indent=2, default=str, allow_nan=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"pdf": out_dir / "report.pdf", "csv": out_dir / csv_name, "manifest": out_dir / "manifest.json"}
    with atomic_path(paths["pdf"]) as tmp, PdfPages(tmp) as pdf:
        pages.draw(pdf, result)
    with atomic_path(paths["csv"]) as tmp:
        table.to_csv(tmp, index=False)
    write_text_atomic(paths["manifest"], text)
    return paths
