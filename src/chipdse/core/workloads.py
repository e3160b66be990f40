"""Request-length samples from real traces or parametric distributions, and their moments."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

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
    columns = dict(zip(header, zip(*(fields for _, fields in body), strict=True), strict=False)) if body else {}
    for col in TRACE_COLUMNS:
        if col not in header:
            raise SpecError(str(path), col, f"a column named {col!r}; columns are {shorten(header)}")
    arrays = {}
    for col in TRACE_COLUMNS + (("arrived_at",) if "arrived_at" in header else ()):
        text_values = columns.get(col, ())
        values = np.array([_number(v) for v in text_values], dtype=float)
        bad = ~np.isfinite(values) | (values < (0 if col == "arrived_at" else 1))
        if col != "arrived_at":
            bad |= np.isfinite(values) & ((values != np.round(values)) | (values > MAX_TOKENS))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            expected = ("a finite number of seconds >= 0" if col == "arrived_at" else
                        f"a whole number of tokens 1..{MAX_TOKENS:,} (ten times the longest context of any "
                        "bundled model)")
            msg = f"{expected}, got {shorten(text_values[row])} (data row {row + 1}, line {lines[row]})"
            raise SpecError(str(path), col, msg)
        arrays[col] = values
    if "arrived_at" in arrays and len(body) > 1:  # a replayed trace is in arrival order
        back = np.flatnonzero(np.diff(arrays["arrived_at"]) < 0)
        if back.size:
            row = int(back[0]) + 1
            arrived = columns["arrived_at"]
            msg = (f"arrival times in non-decreasing order (the trace is replayed as written), got "
                   f"{shorten(arrived[row])} after {shorten(arrived[row - 1])} "
                   f"(data row {row + 1}, line {lines[row]})")
            raise SpecError(str(path), "arrived_at", msg)
    if not body:
        raise SpecError(str(path), "", "at least one request row after the header")
    return LengthSample(
        prefill_tokens=arrays["num_prefill_tokens"].astype(np.int64),
        decode_tokens=arrays["num_decode_tokens"].astype(np.int64),
        arrival_s=arrays.get("arrived_at"),
        source=path.name,
    )


def _number(text: str) -> float:
    """A CSV field as a float: NaN unless it is a plain ASCII decimal number (``1_000``, other scripts' digits such
    as ``١٢`` and a no-break space are refused, as pandas' ``to_numeric`` did)."""
    if "_" in text or not text.isascii():
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan


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


LENGTH_PHASES = ("prefill", "decode")
LENGTH_FITS = (("median", "sigma"), ("mean", "sigma"), ("mean", "median"), ("mean", "sd"), ("min", "max", "n"))
"""Statistic sets a phase's lognormal is fitted from (each key prefixed with ``prefill_`` or ``decode_``)."""
LENGTH_SCALE_KEY = "tokens_per_unit"
"""Optional per-phase key: tokens per unit of the statistics (e.g. 1.333 tokens per English word); default 1."""
MAX_SIGMA = 10.0
"""Largest log-space sigma a parametric length may have (e^10 = 22,026 is already a wider spread than any dataset's
published lengths)."""
MAX_RANGE_DRAWS = 1_000_000_000
"""Largest ``n`` of a ``min`` / ``max`` / ``n`` fit (the size of the data set the extremes were observed in)."""


def fit_lognormal(stats: dict[str, float]) -> tuple[float, float]:
    """Location and log-space spread of the lognormal with the given published statistics.

    Parameters
    ----------
    stats : dict
        One of the sets of :data:`LENGTH_FITS`, in the statistics' own unit (all > 0):

        * ``median`` + ``sigma``: mu = ln(median).
        * ``mean`` + ``sigma``: mu = ln(mean) - sigma^2 / 2.
        * ``mean`` + ``median`` (mean > median): sigma = sqrt(2 ln(mean / median)), mu = ln(median).
        * ``mean`` + ``sd`` (standard deviation): sigma^2 = ln(1 + (sd / mean)^2), mu = ln(mean) - sigma^2 / 2.
        * ``min`` + ``max`` + ``n``: the smallest and largest of ``n`` observations, taken at the quantiles
          1 / (n + 1) and n / (n + 1) (their expected ranks); z = Phi^-1(n / (n + 1)), sigma = ln(max / min) / (2 z),
          mu = (ln(min) + ln(max)) / 2.

    Returns
    -------
    tuple of float
        ``(mu, sigma)``: mu = ln(median) in the statistics' unit, sigma >= 0 in log space.

    Raises
    ------
    ValueError
        A set not in :data:`LENGTH_FITS`, ``mean <= median``, ``min >= max`` or ``n < 2``.

    Notes
    -----
    The closed forms are those of the lognormal (mean e^(mu + sigma^2/2), median e^mu, variance
    (e^(sigma^2) - 1) e^(2 mu + sigma^2)); the order-statistic rank is the usual plotting position i / (n + 1).
    """
    keys = tuple(sorted(stats))
    if keys == ("median", "sigma"):
        return float(np.log(stats["median"])), float(stats["sigma"])
    if keys == ("mean", "sigma"):
        return float(np.log(stats["mean"]) - stats["sigma"] ** 2 / 2), float(stats["sigma"])
    if keys == ("mean", "median"):
        if not stats["mean"] > stats["median"]:
            msg = f"a lognormal's mean exceeds its median, got mean {stats['mean']} <= median {stats['median']}"
            raise ValueError(msg)
        return float(np.log(stats["median"])), float(np.sqrt(2 * np.log(stats["mean"] / stats["median"])))
    if keys == ("mean", "sd"):
        var_log = float(np.log1p((stats["sd"] / stats["mean"]) ** 2))
        return float(np.log(stats["mean"]) - var_log / 2), float(np.sqrt(var_log))
    if keys == ("max", "min", "n"):
        if not stats["min"] < stats["max"] or stats["n"] < 2:
            msg = f"min < max and n >= 2, got min {stats['min']}, max {stats['max']}, n {stats['n']}"
            raise ValueError(msg)
        z = NormalDist().inv_cdf(stats["n"] / (stats["n"] + 1))
        lo, hi = np.log(stats["min"]), np.log(stats["max"])
        return float((lo + hi) / 2), float((hi - lo) / (2 * z))
    msg = f"one of the statistic sets {[' + '.join(f) for f in LENGTH_FITS]}, got {' + '.join(keys) or 'none'}"
    raise ValueError(msg)


def _phase_lognormal(lengths: dict[str, float], phase: str, source: str) -> tuple[float, float]:
    """(mu in tokens, sigma) of one phase's parametric length; SpecError naming ``lengths.<key>`` otherwise."""
    prefix = f"{phase}_"
    given = {k[len(prefix):]: v for k, v in lengths.items() if k.startswith(prefix)}
    scale = given.pop(LENGTH_SCALE_KEY, 1.0)
    if not 0 < scale <= 100:
        raise SpecError(source, f"lengths.{prefix}{LENGTH_SCALE_KEY}", f"a positive number of tokens per unit at "
                        f"most 100, got {shorten(scale)}")
    for key, value in given.items():
        limit = {"sigma": MAX_SIGMA, "n": MAX_RANGE_DRAWS}.get(key, MAX_TOKENS)
        if not 0 < value <= limit:
            what = {"sigma": "(log-space)", "n": "(observations)"}.get(key, "(in the statistics' unit)")
            raise SpecError(source, f"lengths.{prefix}{key}", f"a positive number at most {limit:,g} {what}, "
                            f"got {shorten(value)}")
    sets = [" + ".join(prefix + k for k in f) for f in LENGTH_FITS]
    if tuple(sorted(given)) not in {tuple(sorted(f)) for f in LENGTH_FITS}:
        field = f"lengths.{prefix}{sorted(given)[0] if given else 'median'}"
        raise SpecError(source, field, f"one of the statistic sets {sets} (a lognormal is fitted from two "
                        f"published statistics), got {shorten(sorted(prefix + k for k in given))}")
    try:
        mu, sigma = fit_lognormal(given)
    except ValueError as exc:
        raise SpecError(source, f"lengths.{prefix}{sorted(given)[0]}", str(exc)) from None
    if sigma > MAX_SIGMA:
        raise SpecError(source, f"lengths.{prefix}{sorted(given)[0]}", f"statistics whose fitted log-space sigma "
                        f"is at most {MAX_SIGMA:g}, got {sigma:.3g}")
    return mu + float(np.log(scale)), sigma


def sample_parametric(lengths: dict[str, float], n: int, seed: int, source: str) -> LengthSample:
    """Draw ``n`` requests from lognormal prompt / output lengths fitted to published statistics.

    Parameters
    ----------
    lengths : dict
        Per phase (keys prefixed ``prefill_`` and ``decode_``) one statistic set of :data:`LENGTH_FITS`
        (see :func:`fit_lognormal`): e.g. ``prefill_median`` and ``prefill_sigma`` (log-space), or
        ``decode_mean`` and ``decode_sd``; plus optionally ``<phase>_tokens_per_unit`` when the statistics are in
        words or characters (default 1: they are tokens).
    n : int
        Number of requests.
    seed : int
        Seed of the numpy Generator (prefill lengths are drawn first, then decode lengths).

    Returns
    -------
    LengthSample
        Lengths rounded to whole tokens and clipped to 1..:data:`~chipdse.core.specs.MAX_TOKENS`; no arrival times.

    Raises
    ------
    SpecError
        A non-positive or too large statistic, an unknown key, a phase without exactly one statistic set, or
        statistics no lognormal has (mean <= median, min >= max): the field names the ``lengths`` key.
    """
    known = {f"{p}_{k}" for p in LENGTH_PHASES for f in LENGTH_FITS for k in f} | {
        f"{p}_{LENGTH_SCALE_KEY}" for p in LENGTH_PHASES}
    unknown = sorted(set(lengths) - known)
    if unknown:
        raise SpecError(source, f"lengths.{unknown[0]}", f"one of {sorted(known)} (a parametric length's key)")
    mu_p, sigma_p = _phase_lognormal(lengths, "prefill", source)
    mu_d, sigma_d = _phase_lognormal(lengths, "decode", source)
    rng = np.random.default_rng(seed)
    pre = rng.lognormal(mu_p, sigma_p, n)
    dec = rng.lognormal(mu_d, sigma_d, n)
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
