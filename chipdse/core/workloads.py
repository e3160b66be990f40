"""Request-length samples from real traces or parametric distributions, and their moments."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from chipdse.core.errors import SpecError, shorten
from chipdse.core.io import read_input_text
from chipdse.core.specs import MAX_TOKENS, Workload, resolve

TRACE_COLUMNS = ("num_prefill_tokens", "num_decode_tokens")
MAX_TRACE_ROWS = 1_000_000
"""Most requests a trace may hold: every request's lengths are held in memory and scanned by every estimator and
simulator run (the bundled traces have about 20,000 and 28,000)."""


@dataclass(frozen=True)
class LengthSample:
    """Per-request token counts (and arrival times where the trace has them).

    Attributes
    ----------
    prefill_tokens, decode_tokens : numpy.ndarray, shape (n,), int64
        Prompt and output lengths per request; every entry >= 1.
    arrival_s : numpy.ndarray | None, shape (n,)
        Arrival timestamps in seconds (replayable traces only).
    source : str
        File or distribution the sample came from.
    """

    prefill_tokens: np.ndarray
    decode_tokens: np.ndarray
    arrival_s: np.ndarray | None
    source: str

    @property
    def mean_prefill(self) -> float:
        """Mean prompt length, tokens."""
        return float(self.prefill_tokens.mean())

    @property
    def mean_decode(self) -> float:
        """Mean output length, tokens."""
        return float(self.decode_tokens.mean())

    @property
    def second_moment_prefill(self) -> float:
        """E[L_p^2], tokens^2 (Pollaczek-Khinchine needs it)."""
        return float(np.mean(self.prefill_tokens.astype(float) ** 2))


def load_trace(path: Path) -> LengthSample:
    """Read a trace CSV with columns ``num_prefill_tokens`` and ``num_decode_tokens`` (``arrived_at`` optional).

    Token counts are whole numbers 1..:data:`~chipdse.core.specs.MAX_TOKENS`, arrival times finite and >= 0, and
    the trace holds 1..:data:`MAX_TRACE_ROWS` requests.

    Raises
    ------
    SpecError
        Any problem of :func:`~chipdse.core.io.read_input_text` (missing, a directory or device, too large,
        unreadable, not UTF-8); a missing column, an empty (0-byte or header-only) or too long trace, a row with
        more or fewer fields than the header, or a malformed value: the message names the file, the column, the
        1-based data row and the line as a text editor counts it (header = line 1), and the bad value (cut to
        about 60 characters).
    """
    text = read_input_text(path, "CSV")
    rows = _csv_rows(text, path)
    if not rows:
        raise SpecError(str(path), "", f"a CSV header {','.join(TRACE_COLUMNS)} and at least one request row, "
                        "got an empty file")
    (_, header), body = rows[0], rows[1:]
    if len(body) > MAX_TRACE_ROWS:
        raise SpecError(str(path), "", f"at most {MAX_TRACE_ROWS:,} request rows (every run scans every request), "
                        f"got {len(body):,}")
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        raise SpecError(str(path), "line 1", f"each column name once in the header, got {shorten(repeated)} twice")
    for line, fields in body:
        if len(fields) != len(header):
            msg = (f"{len(header)} comma-separated fields, one per header column "
                   f"({shorten(','.join(header))}), got {len(fields)}")
            raise SpecError(str(path), f"line {line}", msg)
    lines = np.array([line for line, _ in body], dtype=np.int64)
    df = pd.DataFrame([fields for _, fields in body], columns=header, dtype=str)
    for col in TRACE_COLUMNS:
        if col not in df.columns:
            raise SpecError(str(path), col, f"a column named {col!r}; columns are {shorten(list(df.columns))}")
    arrays = {}
    for col in TRACE_COLUMNS + (("arrived_at",) if "arrived_at" in df.columns else ()):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna() | ~np.isfinite(values) | (values < (0 if col == "arrived_at" else 1))
        if col != "arrived_at":
            bad |= values.notna() & ((values != values.round()) | (values > MAX_TOKENS))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            expected = ("a finite number of seconds >= 0" if col == "arrived_at" else
                        f"a whole number of tokens 1..{MAX_TOKENS:,} (ten times the longest context of any "
                        "bundled model)")
            msg = f"{expected}, got {shorten(df[col].iloc[row])} (data row {row + 1}, line {lines[row]})"
            raise SpecError(str(path), col, msg)
        arrays[col] = values.to_numpy()
    if "arrived_at" in arrays and len(df) > 1:  # a replayed trace is in arrival order
        back = np.flatnonzero(np.diff(arrays["arrived_at"]) < 0)
        if back.size:
            row = int(back[0]) + 1
            msg = (f"arrival times in non-decreasing order (the trace is replayed as written), got "
                   f"{shorten(df['arrived_at'].iloc[row])} after {shorten(df['arrived_at'].iloc[row - 1])} "
                   f"(data row {row + 1}, line {lines[row]})")
            raise SpecError(str(path), "arrived_at", msg)
    if len(df) == 0:
        raise SpecError(str(path), "", "at least one request row after the header")
    return LengthSample(
        prefill_tokens=arrays["num_prefill_tokens"].astype(np.int64),
        decode_tokens=arrays["num_decode_tokens"].astype(np.int64),
        arrival_s=arrays.get("arrived_at"),
        source=path.name,
    )


def _csv_rows(text: str, path: Path) -> list[tuple[int, list[str]]]:
    """The non-empty rows of a CSV text, each with its 1-based line number (SpecError naming ``path`` on a
    malformed row, e.g. an unclosed quote or a field above the CSV reader's size limit)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = [(reader.line_num, fields) for fields in reader if fields]
    except csv.Error as exc:
        limit = csv.field_size_limit()
        why = f"a field of at most {limit:,} characters" if "field limit" in str(exc) else str(exc)
        raise SpecError(str(path), f"line {reader.line_num}", f"a CSV row ({why})") from None
    return rows


def sample_parametric(lengths: dict[str, float], n: int, seed: int, source: str) -> LengthSample:
    """Draw ``n`` requests from lognormal prompt / output lengths.

    Parameters
    ----------
    lengths : dict
        ``prefill_median``, ``prefill_sigma``, ``decode_median``, ``decode_sigma`` (tokens; log-space sigma).
    n : int
        Number of requests.
    seed : int
        Seed of the numpy Generator.

    Raises
    ------
    SpecError
        A missing or non-positive parameter.
    """
    keys = ("prefill_median", "prefill_sigma", "decode_median", "decode_sigma")
    for k in keys:
        if k not in lengths or not 0 < lengths[k] <= (MAX_TOKENS if k.endswith("median") else 10):
            limit = f"{MAX_TOKENS:,} tokens" if k.endswith("median") else "10 (log-space)"
            raise SpecError(source, f"lengths.{k}", f"a positive number at most {limit}, got {shorten(lengths.get(k))}")
    unknown = sorted(set(lengths) - set(keys))
    if unknown:
        raise SpecError(source, f"lengths.{unknown[0]}", f"one of {list(keys)} (a parametric length's key)")
    rng = np.random.default_rng(seed)
    pre = rng.lognormal(np.log(lengths["prefill_median"]), lengths["prefill_sigma"], n)
    dec = rng.lognormal(np.log(lengths["decode_median"]), lengths["decode_sigma"], n)
    return LengthSample(
        prefill_tokens=np.clip(np.rint(pre), 1, MAX_TOKENS).astype(np.int64),
        decode_tokens=np.clip(np.rint(dec), 1, MAX_TOKENS).astype(np.int64),
        arrival_s=None,
        source=source,
    )


def load_lengths(workload: Workload, base: Path, seed: int, path: Path | None = None) -> LengthSample:
    """Return the request-length sample of a workload (its trace, or 20,000 parametric draws).

    ``base`` is the folder trace paths are relative to; ``path``, the workload file, is named by errors in its
    ``trace`` and ``lengths`` fields.

    Raises
    ------
    SpecError
        A missing or malformed trace (:func:`load_trace`) or parametric length (:func:`sample_parametric`), or
        ``arrival: replay`` without a trace that has ``arrived_at`` timestamps (naming the workload file).
    """
    where = "" if path is None else str(path)
    if workload.trace is not None:
        sample = load_trace(resolve(workload.trace, base, "traces", where, "trace"))
        if workload.arrival == "replay" and sample.arrival_s is None:
            msg = (f"poisson or gamma: replay needs the trace's arrived_at timestamps and {sample.source} has no "
                   "arrived_at column")
            raise SpecError(where or workload.name, "arrival", msg)
        return sample
    assert workload.lengths is not None
    if workload.arrival == "replay":
        msg = "poisson or gamma: replay needs a trace with arrived_at timestamps, and this workload draws its lengths"
        raise SpecError(where or workload.name, "arrival", msg)
    try:
        return sample_parametric(workload.lengths, 20_000, seed, workload.name)
    except SpecError as exc:
        raise SpecError(where or exc.source, exc.field, exc.expected) from None
