"""Writing a study's report files: every file atomically, the PDF first, so a failure leaves nothing partial."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from chipdse.core.io import atomic_path, write_text_atomic


def strict_json(obj: Any) -> Any:
    """``obj`` with every NaN float replaced by None, recursively through dicts, lists and tuples."""
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [strict_json(v) for v in obj]
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj


def write_study_files(out_dir: Path, draw: Callable[[PdfPages], None], table: pd.DataFrame, csv_name: str,
                      manifest: dict[str, Any]) -> dict[str, Path]:
    """Write ``report.pdf`` (pages drawn by ``draw``), ``csv_name`` (``table``) and ``manifest.json`` into
    ``out_dir``.

    Returns
    -------
    dict[str, Path]
        ``{"pdf": ..., "csv": ..., "manifest": ...}``.

    Notes
    -----
    NaN in the manifest is written as null (strict JSON).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"pdf": out_dir / "report.pdf", "csv": out_dir / csv_name, "manifest": out_dir / "manifest.json"}
    text = json.dumps(strict_json(manifest), indent=2, default=str, allow_nan=False)
    with atomic_path(paths["pdf"]) as tmp, PdfPages(tmp) as pdf:
        draw(pdf)
    with atomic_path(paths["csv"]) as tmp:
        table.to_csv(tmp, index=False)
    write_text_atomic(paths["manifest"], text)
    return paths
