"""Pareto fronts (throughput vs TTFT, and with tokens/J) and the one rule for the two configurations HYDRA reports:
B* and M_T."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import pandas as pd


def pareto_mask(throughput: np.ndarray, ttft: np.ndarray) -> np.ndarray:
    """Return a boolean mask of points not dominated in (maximize throughput, minimize TTFT).

    Parameters
    ----------
    throughput : numpy.ndarray, shape (n,)
        Tokens/s (higher is better).
    ttft : numpy.ndarray, shape (n,)
        Seconds (lower is better); NaN entries (unstable points) are never on the front.

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
        True where no other point has throughput >= and TTFT <= with one strict. Exact duplicates are all kept.

    Notes
    -----
    O(n log n): sort by TTFT ascending (throughput descending on ties) and keep the running maximum.
    """
    tp = np.asarray(throughput, dtype=float)
    tt = np.asarray(ttft, dtype=float)
    mask = np.zeros(len(tp), dtype=bool)
    valid = np.flatnonzero(~np.isnan(tt) & ~np.isnan(tp))
    if len(valid) == 0:
        return mask
    order = valid[np.lexsort((-tp[valid], tt[valid]))]
    best = -np.inf
    last_tt, last_tp = None, None
    for i in order:
        if tp[i] > best:
            mask[i] = True
            best = tp[i]
            last_tt, last_tp = tt[i], tp[i]
        elif tp[i] == last_tp and tt[i] == last_tt:
            mask[i] = True
    return mask


def pareto_mask_3(throughput: np.ndarray, ttft: np.ndarray, tokens_per_j: np.ndarray) -> np.ndarray:
    """Return a boolean mask of points not dominated in (maximize throughput, minimize TTFT, maximize tokens/J).

    Parameters
    ----------
    throughput : numpy.ndarray, shape (n,)
        Tokens/s (higher is better).
    ttft : numpy.ndarray, shape (n,)
        Seconds (lower is better).
    tokens_per_j : numpy.ndarray, shape (n,)
        Output tokens per joule (higher is better).

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
        True where no other point is at least as good in all three objectives and strictly better in one; a
        NaN in any objective is never on the front; exact duplicates are all kept.

    Notes
    -----
    O(n log n) comparisons (plus list edits): distinct points sorted by TTFT ascending (throughput, then tokens/J
    descending on ties); a point is dominated iff an earlier one has throughput >= and tokens/J >= its own, which
    a staircase of the non-dominated (throughput, tokens/J) pairs so far answers by bisection.
    """
    cols = np.column_stack([np.asarray(throughput, dtype=float), np.asarray(ttft, dtype=float),
                            np.asarray(tokens_per_j, dtype=float)])
    mask = np.zeros(len(cols), dtype=bool)
    valid = np.flatnonzero(~np.isnan(cols).any(axis=1))
    if len(valid) == 0:
        return mask
    uniq, inv = np.unique(cols[valid], axis=0, return_inverse=True)
    order = np.lexsort((-uniq[:, 2], -uniq[:, 0], uniq[:, 1]))
    stair_tp: list[float] = []  # ascending throughput
    stair_e: list[float] = []  # descending tokens/J along it
    keep = np.zeros(len(uniq), dtype=bool)
    for i in order:
        tp, e = uniq[i, 0], uniq[i, 2]
        j = bisect.bisect_left(stair_tp, tp)
        if j < len(stair_tp) and stair_e[j] >= e:
            continue  # an earlier (TTFT <=) distinct point has throughput >= and tokens/J >=: dominated
        keep[i] = True
        # drop staircase pairs this one dominates (throughput <= tp, tokens/J <= e): a run ending at j
        lo = j
        while lo > 0 and stair_e[lo - 1] <= e:
            lo -= 1
        if j < len(stair_tp) and stair_tp[j] == tp:
            j += 1  # same throughput, lower tokens/J: dominated too
        del stair_tp[lo:j], stair_e[lo:j]
        stair_tp.insert(lo, tp)
        stair_e.insert(lo, e)
    mask[valid] = keep[np.asarray(inv).ravel()]
    return mask


def pareto_mask_max(objectives: np.ndarray, block: int = 1024) -> np.ndarray:
    """Return a boolean mask of points not dominated when every column of ``objectives`` is maximized (negate a
    column to minimize it): any number of objectives, e.g. throughput, -TTFT, tokens/J and -package cost.

    Parameters
    ----------
    objectives : numpy.ndarray, shape (n, k)
        One row per point; a row with a NaN is never on the front.
    block : int
        Points compared at once (memory ``block x block`` booleans; the answer does not depend on it).

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
        True where no other row is >= in every column and > in one; exact duplicates are all kept.

    Notes
    -----
    Sort-filter-skyline: the distinct rows in descending lexicographic order, so a row can only be dominated by
    an earlier one (a dominating row is >= in every column, hence lexicographically greater); each block is
    compared with the front found so far, then within itself, as 2-D numpy compares one column at a time (about
    0.03 CPU-s for the 49,000 stable points of a Table III workload with a front of 173).
    """
    x = np.asarray(objectives, dtype=float)
    mask = np.zeros(len(x), dtype=bool)
    valid = np.flatnonzero(~np.isnan(x).any(axis=1)) if x.ndim == 2 else np.array([], dtype=int)
    if len(valid) == 0:
        return mask
    rows = x[valid]
    srt = np.lexsort(tuple(-rows[:, j] for j in range(rows.shape[1] - 1, -1, -1)))  # descending, column 0 first
    first = np.ones(len(srt), dtype=bool)
    first[1:] = (rows[srt[1:]] != rows[srt[:-1]]).any(axis=1)
    uniq = rows[srt[first]]  # distinct rows, already in the scan order
    inv = np.empty(len(srt), dtype=np.intp)
    inv[srt] = np.cumsum(first) - 1
    k = uniq.shape[1]
    front = np.empty((0, k))
    keep = np.zeros(len(uniq), dtype=bool)
    for start in range(0, len(uniq), block):
        idx = np.arange(start, min(start + block, len(uniq)))
        cand = uniq[idx]
        if len(front):  # column 0 needs no test: every earlier row is >= there (the sort)
            dominated = np.zeros(len(cand), dtype=bool)
            for f0 in range(0, len(front), block):
                f = front[f0:f0 + block]
                ge = np.ones((len(f), len(cand)), dtype=bool)
                for j in range(1, k):  # 2-D compares, column by column: no reduction over a short last axis
                    ge &= f[:, j, None] >= cand[None, :, j]
                dominated |= ge.any(axis=0)
            idx, cand = idx[~dominated], cand[~dominated]
        # within the block: row j is dominated by an earlier distinct row i (i < j in lexicographic order)
        ge = np.ones((len(cand), len(cand)), dtype=bool)
        for j in range(1, k):
            ge &= cand[:, j, None] >= cand[None, :, j]
        inner = np.triu(ge, k=1).any(axis=0)
        keep[idx[~inner]] = True
        front = np.vstack([front, cand[~inner]])
    mask[valid] = keep[inv]
    return mask


PICK_RULES = ("throughput-ttft", "energy")
"""B*'s rules: the highest throughput / TTFT ratio (HYDRA Fig. 8) or the most tokens per joule."""


@dataclass(frozen=True)
class FinalistIndices:
    """The rows of B* and M_T in a scored table, and how clear B*'s lead is.

    Attributes
    ----------
    b_star, m_t : int
        Row indices (the same row when one design is both).
    candidates : int
        Stable rows with throughput at or above the stable rows' mean (B*'s candidates).
    ties : tuple[int, ...]
        Other candidates with B*'s score to within 1e-12 (B* is the first in the table's order).
    runner_up : int or None
        The best candidate below B*'s score.
    runner_up_margin : float or None
        1 - its score / B*'s score.
    """

    b_star: int
    m_t: int
    candidates: int
    ties: tuple[int, ...] = ()
    runner_up: int | None = None
    runner_up_margin: float | None = None


def pick_finalists(df: pd.DataFrame, rule: str = "throughput-ttft") -> FinalistIndices:
    """Return the rows of B* and M_T: the one rule every HYDRA command picks its finalists by.

    Parameters
    ----------
    df : pandas.DataFrame
        A scored table (``stable``, ``throughput_tps``, ``ttft_s``; ``tokens_per_J`` for the energy rule).
    rule : {"throughput-ttft", "energy"}
        B*'s score among the stable rows with above-average throughput: throughput / TTFT (HYDRA Fig. 8) or
        tokens per joule (the scenario's ``energy.pick``). M_T is the stable row with the highest throughput (the
        lowest TTFT on ties) either way.

    Returns
    -------
    FinalistIndices
        B*'s row is the first with the highest score (table order).

    Raises
    ------
    ValueError
        When no point is stable, or an unknown ``rule``.

    References
    ----------
    HYDRA Fig. 8 caption: "B*: configurations achieving the highest throughput-TTFT ratio"; DESIGN.md: among
    points above average throughput.
    """
    if rule not in PICK_RULES:
        msg = f"pick must be one of {list(PICK_RULES)}, got {rule!r}"
        raise ValueError(msg)
    st = df[df["stable"]]
    if st.empty:
        msg = "no stable design point: every configuration's capacity is at or below the offered load"
        raise ValueError(msg)
    above = st[st["throughput_tps"] >= st["throughput_tps"].mean()]
    score = above["tokens_per_J"] if rule == "energy" else above["throughput_tps"] / above["ttft_s"]
    b_star = int(score.idxmax())
    ranked = score.sort_values(ascending=False, kind="stable")
    top = float(ranked.loc[b_star])
    tied = ranked[ranked >= top * (1 - 1e-12)]
    rest = ranked[ranked < top * (1 - 1e-12)]
    best = st["throughput_tps"].max()
    m_t = int(st[st["throughput_tps"] >= best * (1 - 1e-12)]["ttft_s"].idxmin())
    return FinalistIndices(b_star, m_t, len(above), tuple(int(i) for i in tied.index if i != b_star),
                           int(rest.index[0]) if len(rest) else None,
                           float(1 - rest.iloc[0] / top) if len(rest) else None)


def cheapest_near(df: pd.DataFrame, index: int, share: float = 0.05, cost: str = "package_cost_usd") -> int | None:
    """The cheapest stable row whose throughput is within ``share`` of row ``index``'s (issue 33: what the
    throughput of M_T costs at the least).

    Parameters
    ----------
    df : pandas.DataFrame
        A scored table (``stable``, ``throughput_tps`` and the ``cost`` column).
    index : int
        The reference row (e.g. M_T).
    share : float
        How much throughput may be given up, a fraction (0.05 = within 5%).

    Returns
    -------
    int or None
        The row (the first in table order among equal costs); None when the table has no ``cost`` column.
    """
    if cost not in df:
        return None
    floor = (1.0 - share) * float(df.at[index, "throughput_tps"])
    pool = df[df["stable"].astype(bool) & (df["throughput_tps"] >= floor)]
    if pool.empty:
        return None
    return int(pool[cost].idxmin())

