"""Checks of an explore's ``claims.csv`` shared by the explore tests of the three studies (issue 30)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from chipdse.core.params import fitted_claims, load_register

ISSUE_COLUMNS = ["study", "claim", "kind", "paper", "ours", "ratio", "basis", "holds", "holds_share", "flips_at",
                 "reason"]
"""The columns issue 30 asks of claims.csv, in its order."""


def check_claims_csv(out: Path, study: str) -> pd.DataFrame:
    """``claims.csv`` beside the report: the issue's columns first, a description per column, bases and kinds
    from the issue's lists, ratio = ours / paper, every row a register parameter was fitted to labelled
    calibrated, and the manifest's fidelity count equal to the predicted numbers within 25% in the file."""
    df = pd.read_csv(out / "claims.csv")
    assert list(df.columns[: len(ISSUE_COLUMNS)]) == ISSUE_COLUMNS
    cols = pd.read_csv(out / "claims.columns.csv")
    assert list(cols["column"]) == list(df.columns) and cols["description"].notna().all()
    assert set(df["study"]) == {study}
    assert set(df["kind"]) <= {"number", "ordering"}
    assert set(df["basis"]) <= {"predicted", "calibrated", "input", "construction"}
    done = df[df["ours"].notna()]
    for _, r in done.iterrows():
        assert math.isclose(r["ratio"], r["ours"] / r["paper"], rel_tol=1e-9), r["claim"]
    for key in fitted_claims(load_register(study)):
        assert (df.loc[df["claim"] == key, "basis"] == "calibrated").all(), key
    pred = done[(done["kind"] == "number") & (done["basis"] == "predicted")]
    within = int(((pred["ratio"] - 1).abs() <= 0.25).sum())
    fid = json.loads((out / "manifest.json").read_text())["summary"]["fidelity"]
    assert (fid["predicted"], fid["within"]) == (len(pred), within)
    orders = done[done["kind"] == "ordering"]
    assert orders["holds"].notna().all()
    return df
