"""The one rule of a design limit (power, package cost): the points that break it become infeasible, with the limit
as their reason (:func:`mark_infeasible`; used by :mod:`chipdse.evaluators.energy_hydra` and
:mod:`chipdse.evaluators.cost`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def mark_infeasible(df: pd.DataFrame, hit: np.ndarray, reason: np.ndarray | str) -> None:
    """Make the rows ``hit`` of a scored table infeasible because a limit fails.

    Parameters
    ----------
    df : pandas.DataFrame
        A scored table (columns ``feasible``, ``stable``, ``ttft_s``, ``reason``); changed in place.
    hit : numpy.ndarray of bool, shape (n,)
        The rows to mark (nothing is done when none is).
    reason : str or numpy.ndarray of str, shape (n,)
        The reason of every hit row, or one per row of ``df`` (the hit rows' are used).

    Hit rows get ``feasible`` and ``stable`` False, ``ttft_s`` NaN and their reason.
    """
    if not hit.any():
        return
    df.loc[hit, "feasible"] = False
    df.loc[hit, "stable"] = False
    df.loc[hit, "ttft_s"] = np.nan
    df.loc[hit, "reason"] = reason if isinstance(reason, str) else reason[hit]
