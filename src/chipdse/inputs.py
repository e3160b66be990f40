"""The light half of the Python API: input files without the tool behind them.

``chipdse schema``, ``chipdse params``, ``chipdse model import`` and the file check of ``chipdse solve qap`` run
these functions, which import neither a modelling library (Pyomo, OR-Tools), nor SciPy's statistics, pandas or
matplotlib (tests/test_startup.py reads the import set of each command), so a light command starts at once and a
bad file fails before any heavy import. :mod:`chipdse.api` re-exports every name here.

Layer: between :mod:`chipdse.reports` and :mod:`chipdse.api` (import-linter's layers contract in pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chipdse.core.hf_import import card_json, card_key, import_config, import_summary
from chipdse.core.io import write_text_atomic
from chipdse.core.qaplib import QapInstance, read_qaplib
from chipdse.core.schemas import SCHEMAS, json_schema, schema_dir, schema_text, write_schemas
from chipdse.studies.registers import REGISTERS

__all__ = ["SCHEMAS", "import_model", "json_schema", "params", "read_qap", "schema_dir", "schema_text",
           "write_schemas"]


def params(study: str, scenario: str | Path | None = None) -> list[dict[str, Any]]:
    """A study's parameter register with the values of a scenario (``chipdse params``).

    Parameters
    ----------
    study : str
        ``hydra``, ``snake`` or ``nova``.
    scenario : str or Path, optional
        A scenario of that kind whose values to show (default: the study's bundled scenario).

    Returns
    -------
    list of dict
        One per parameter: ``name`` (the dotted ``--set`` path), ``value``, ``low``, ``high`` (an assumption's or
        calibrated value's plausible range, else None), ``unit``, ``basis`` (paper, sourced, assumption,
        calibrated), ``source`` (citation, or the reason for the value and range), ``calibrated_on`` (claim keys).

    Raises
    ------
    ValueError
        An unknown study.
    SpecError
        A malformed register, scenario or table, or a scenario of another kind.
    """
    if study not in REGISTERS:
        msg = f"STUDY: one of {', '.join(REGISTERS)}, got {study!r}"
        raise ValueError(msg)
    return [r.record() for r in REGISTERS[study](None if scenario is None else Path(scenario))]


def import_model(config: str | Path, *, name: str | None = None, published_params: float | None = None,
                 out: str | Path | None = None) -> tuple[Path, list[str], dict[str, Any]]:
    """Write a model card from a Hugging Face ``config.json`` (``chipdse model import``).

    Args:
        config: path of a local config.json.
        name: card name (default: the config's ``_name_or_path`` or the file name).
        published_params: the vendor's published total parameter count; the report lines give the difference
            (a line starting ``warning:`` above 5%).
        out: card file to write (default ``<name>.json`` in the current folder).

    Returns:
        (path written, report lines: the computed parameter count and weight bytes, with ``published_params`` the
        difference, and a ``warning:`` line per config section left out; the ``--json`` summary:
        :func:`chipdse.core.hf_import.import_summary` plus ``card``, the path).

    Raises:
        ChipdseError: unknown ``model_type``, a missing field, a non-JSON or unreadable file, a malformed
            ``quantization_config`` (nothing written).
        OSError: the card cannot be written.
    """
    card, lines = import_config(Path(config), name=name, published_params=published_params)
    summary = import_summary(card, lines, str(config))
    path = Path(out) if out is not None else Path(f"{card_key(card['name'])}.json")
    write_text_atomic(path, card_json(card))
    return path, lines, {**summary, "card": str(path)}


def read_qap(path: str | Path) -> QapInstance:
    """Read and check a QAPLIB ``.dat`` file (``chipdse solve qap`` calls it before loading any solver).

    Returns
    -------
    QapInstance
        Flow and distance matrices, integer arrays of shape (n, n).

    Raises
    ------
    SpecError
        Naming the file: unreadable, not integers, too large, or a count other than 1 + 2 n^2
        (:func:`chipdse.core.qaplib.read_qaplib`).
    """
    return read_qaplib(Path(path))
