"""Pareto front (throughput vs TTFT) and the two configurations HYDRA reports: B* and M_T."""

from __future__ import annotations

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
    st = df[df["stable"]]
    if st.empty:
        msg = "no stable design point: every configuration's capacity is at or below the offered load"
        raise ValueError(msg)
    above = st[st["throughput_tps"] >= st["throughput_tps"].mean()]
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
