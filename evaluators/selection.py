"""Pareto front (throughput vs TTFT) and the two configurations HYDRA reports: B* and M_T."""

from __future__ import annotations

import bisect

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


def pick_b_star(df: pd.DataFrame) -> int:
    """Return the row index of B*: the best throughput/TTFT ratio among stable points with above-average throughput.

    Raises
    ------
    ValueError
        When no point is stable.

    References
    ----------
    HYDRA Fig. 8 caption: "B*: configurations achieving the highest throughput-TTFT ratio".
    DESIGN.md: among points above average throughput.
    """
    above = _above_average(df)
    ratio = above["throughput_tps"] / above["ttft_s"]
    return int(ratio.idxmax())


def pick_m_t(df: pd.DataFrame) -> int:
    """Return the row index of M_T: the stable point with the highest throughput (lowest TTFT on ties).

    Raises
    ------
    ValueError
        When no point is stable.
    """
    st = df[df["stable"]]
    if st.empty:
        msg = "no stable design point: every configuration's capacity is at or below the offered load"
        raise ValueError(msg)
    best = st["throughput_tps"].max()
    top = st[st["throughput_tps"] >= best * (1 - 1e-12)]
    return int(top["ttft_s"].idxmin())


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


def pick_energy(df: pd.DataFrame) -> int:
    """Return the row index of the energy pick: the most tokens per joule among stable points with
    above-average throughput (B*'s rule with tokens/J in place of the throughput / TTFT ratio).

    Raises
    ------
    ValueError
        When no point is stable.
    """
    return int(_above_average(df)["tokens_per_J"].idxmax())


def _above_average(df: pd.DataFrame) -> pd.DataFrame:
    """The stable rows with throughput at or above the stable rows' mean (B*'s candidates; ValueError if none)."""
    st = df[df["stable"]]
    if st.empty:
        msg = "no stable design point: every configuration's capacity is at or below the offered load"
        raise ValueError(msg)
    return st[st["throughput_tps"] >= st["throughput_tps"].mean()]


def pick_finalists(df: pd.DataFrame, pick: str = "throughput-ttft") -> tuple[int, int]:
    """Return the row indices of B* and M_T.

    Parameters
    ----------
    df : pandas.DataFrame
        A scored table (``stable``, ``throughput_tps``, ``ttft_s``; ``tokens_per_J`` for the energy pick).
    pick : {"throughput-ttft", "energy"}
        B*'s rule: :func:`pick_b_star` (HYDRA) or :func:`pick_energy` (the scenario's ``energy.pick``).

    Raises
    ------
    ValueError
        When no point is stable, or an unknown ``pick``.
    """
    if pick not in ("throughput-ttft", "energy"):
        msg = f"pick must be 'throughput-ttft' or 'energy', got {pick!r}"
        raise ValueError(msg)
    b_star = pick_energy(df) if pick == "energy" else pick_b_star(df)
    return b_star, pick_m_t(df)
