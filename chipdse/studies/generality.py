"""Specialization vs generality (HYDRA Sec. VI-C, Table IV): designs chosen for one, two or three models.

Every model of the study is scored by the vectorized estimator on the same design space (same chiplet types,
package and workload). For model m and point p:

* B* score  ``s_B(m, p) = throughput / TTFT`` at the offered load (HYDRA Table IV(a), "norm. TP/TTFT");
* M_T score ``s_T(m, p) = throughput`` (Table IV(b), "norm. TP");

each divided by the model's own single-model optimum (its B* from :func:`evaluators.selection.pick_b_star`, its M_T
from :func:`evaluators.selection.pick_m_t`), so 1.00 is the workload-specific optimum, as in the paper.

HYDRA does not say how it combines several target models. chipdse solves the multi-target choice exactly, by
enumeration over the whole space: the target set's design maximizes the **worst normalized score over its
targets** (maximin), among points that are stable for every target (and, for B*, above each target's average
stable throughput, the same filter as the single-model B*). Ties go to the lowest mean normalized TTFT over the
targets. With one target this is exactly the single-model B* / M_T. Maximin is chosen because the paper's
headline for the all-model design is a worst case ("limits the worst-case degradation to 14%").
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from chipdse.core.design_space import enumerate_points
from chipdse.core.errors import SpecError
from chipdse.core.scenario import LoadedScenario, model_scenarios
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.selection import pick_b_star, pick_m_t

OBJECTIVES = ("B*", "M_T")

HYDRA_TABLE_IV: dict[str, dict[str, list[float]]] = {
    "B*": {"Jamba": [1.00, 0.42, 0.31], "Zamba": [0.91, 1.00, 0.76], "Nemo": [0.87, 0.32, 1.00],
           "Jamba + Zamba": [0.97, 0.94, 0.71], "Jamba + Nemo": [0.91, 0.29, 0.92],
           "Zamba + Nemo": [0.96, 0.91, 0.86], "Jamba + Zamba + Nemo": [0.96, 0.91, 0.86]},
    "M_T": {"Jamba": [1.00, 0.44, 0.36], "Zamba": [0.97, 1.00, 0.80], "Nemo": [0.98, 0.62, 1.00],
            "Jamba + Zamba": [0.97, 1.00, 0.80], "Jamba + Nemo": [0.98, 0.62, 1.00],
            "Zamba + Nemo": [0.99, 0.96, 0.84], "Jamba + Zamba + Nemo": [0.99, 0.96, 0.84]},
}
"""HYDRA Table IV as published (rows: DSE target; columns: Jamba-tiny, Zamba2-7B, Nemotron-H-4B on Chat)."""

SHORT_NAMES = {"jamba-tiny-dev": "Jamba", "zamba2-7b": "Zamba", "nemotron-h-4b": "Nemo"}


@dataclass
class GeneralityResult:
    """The specialization-generality matrices.

    Attributes
    ----------
    models : list[str]
        Model keys, in column order.
    names : list[str]
        Short column names (``Jamba``, ``Zamba``, ``Nemo`` for HYDRA's three; the key otherwise).
    scores : dict[str, pandas.DataFrame]
        Per objective (``"B*"``, ``"M_T"``): rows = target sets (``"Jamba + Nemo"``), columns = ``names``,
        values = the target design's score on that model over the model's own optimum. A design unstable on a
        model at the offered load scores 0 for B* (no finite TTFT); for M_T it keeps its sustainable throughput.
    stable : dict[str, pandas.DataFrame]
        Same shape: whether the row's design is stable on the column's model at the offered load.
    designs : pandas.DataFrame
        One row per (objective, target): the chosen point's label, its worst score over its targets
        (``worst_on_target``) and over all models (``worst_overall``).
    optima : pandas.DataFrame
        Per model: its single-model B* and M_T labels and raw scores (throughput / TTFT in tok/s^2; tok/s).
    n_points : int
        Design points scored per model.
    workload : str
    arrival_rate_rps : float
    wall_s : float
    """

    models: list[str]
    names: list[str]
    scores: dict[str, pd.DataFrame]
    stable: dict[str, pd.DataFrame]
    designs: pd.DataFrame
    optima: pd.DataFrame
    n_points: int
    workload: str
    arrival_rate_rps: float
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary: matrices as {target: {model: score}} (keys: the short names), whether each design is
        stable on each model, designs, optima and counts."""
        return {
            "models": self.models, "names": self.names, "points": self.n_points, "workload": self.workload,
            "arrival_rate_rps": self.arrival_rate_rps, "wall_s": round(self.wall_s, 3),
            "scores": {o: {t: {m: round(float(v), 4) for m, v in row.items()} for t, row in df.iterrows()}
                       for o, df in self.scores.items()},
            "stable": {o: {t: {m: bool(v) for m, v in row.items()} for t, row in df.iterrows()}
                       for o, df in self.stable.items()},
            "designs": self.designs.to_dict("records"),
            "optima": self.optima.to_dict("records"),
        }


def target_sets(n: int) -> list[tuple[int, ...]]:
    """All non-empty subsets of ``range(n)``: singles first, then pairs, ... (HYDRA Table IV row order)."""
    return [c for k in range(1, n + 1) for c in itertools.combinations(range(n), k)]


def _score_arrays(frames: list[pd.DataFrame]) -> dict[str, Any]:
    """Per-model arrays (models x points): stable, normalized B* / M_T scores, eligibility, normalized TTFT."""
    stable = np.array([f["stable"].to_numpy(dtype=bool) for f in frames])
    tp = np.array([f["throughput_tps"].to_numpy(dtype=float) for f in frames])
    ttft = np.array([f["ttft_s"].to_numpy(dtype=float) for f in frames])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(stable, tp / ttft, 0.0)
    b_idx = [pick_b_star(f) for f in frames]
    t_idx = [pick_m_t(f) for f in frames]
    opt_b = np.array([ratio[m, i] for m, i in enumerate(b_idx)])
    opt_t = np.array([tp[m, i] for m, i in enumerate(t_idx)])
    mean_tp = np.array([tp[m][stable[m]].mean() for m in range(len(frames))])
    return {
        "stable": stable, "tp": tp, "ttft": ttft, "b_idx": b_idx, "t_idx": t_idx, "opt_b": opt_b, "opt_t": opt_t,
        "B*": ratio / opt_b[:, None], "M_T": np.nan_to_num(tp) / opt_t[:, None],
        "eligible_B*": stable & (tp >= mean_tp[:, None]), "eligible_M_T": stable,
        "ttft_norm": np.where(stable, ttft / np.array([ttft[m, i] for m, i in enumerate(b_idx)])[:, None], np.inf),
    }


def choose(score: np.ndarray, eligible: np.ndarray, ttft_norm: np.ndarray, targets: tuple[int, ...]) -> int:
    """Index of the point maximizing the worst normalized score over ``targets`` (exact, by enumeration).

    Parameters
    ----------
    score, eligible, ttft_norm : numpy.ndarray, shape (n_models, n_points)
        Normalized scores, eligibility, and TTFT over the model's B* TTFT (the tie-break, lower wins).
    targets : tuple of int
        Model rows of the target set.

    Raises
    ------
    ValueError
        When no point is eligible for every target.
    """
    t = list(targets)
    ok = eligible[t].all(axis=0)
    if not ok.any():
        msg = "no design point is stable for every target model at the offered load"
        raise ValueError(msg)
    worst = np.where(ok, score[t].min(axis=0), -np.inf)
    best = worst.max()
    tied = np.flatnonzero(worst >= best * (1 - 1e-12))
    return int(tied[np.argmin(ttft_norm[t][:, tied].mean(axis=0))])


def generality(sc: LoadedScenario, models: list[str] | None = None) -> GeneralityResult:
    """Compute HYDRA Table IV on the scenario's design space and workload.

    Parameters
    ----------
    sc : LoadedScenario
        Supplies the design space, package, library and workload (its offered load included).
    models : list of str, optional
        Model keys or card paths; default the scenario's ``generality.models``.

    Returns
    -------
    GeneralityResult

    Raises
    ------
    SpecError
        No model list, or a model with other chiplet types than the scenario's model.
    InfeasibleDesignError
        When no design point can be built.
    ValueError
        A model, or a target set, with no stable point at the offered load (the message names it).
    """

    t0 = time.perf_counter()
    field = "--model"
    if models is None:
        if sc.spec.generality is None:
            raise SpecError(str(sc.path), "generality.models", "a list of at least two models (or give --model "
                            "twice or more)")
        models, field = sc.spec.generality.models, "generality.models"
    variants = model_scenarios(sc, models, field)
    pts, _ = enumerate_points(variants[0])  # the models' shared chiplet types span the space
    frames = []
    for v in variants:
        df = Screen(v).score(pts)
        if not df["stable"].any():
            msg = (f"{v.model.key} has no stable design point at {sc.workload.arrival_rate_rps:g} req/s (best "
                   f"capacity {df['capacity_rps'].max():.3g} req/s); lower arrival_rate_rps in {sc.path}")
            raise ValueError(msg)
        frames.append(df)
    a = _score_arrays(frames)
    keys = [v.model.key for v in variants]
    names = [SHORT_NAMES.get(k, k) for k in keys]
    labels = frames[0]["label"].tolist()
    scores, stable, designs = {}, {}, []
    for obj in OBJECTIVES:
        rows, st_rows, index = [], [], []
        for targets in target_sets(len(keys)):
            name = " + ".join(names[i] for i in targets)
            try:
                p = choose(a[obj], a[f"eligible_{obj}"], a["ttft_norm"], targets)
            except ValueError as exc:
                msg = f"{obj} target {name}: {exc}"
                raise ValueError(msg) from None
            col = a[obj][:, p]
            rows.append(col)
            st_rows.append(a["stable"][:, p])
            index.append(name)
            designs.append({"objective": obj, "target": name, "design": labels[p], "point": p,
                            "worst_on_target": float(col[list(targets)].min()), "worst_overall": float(col.min())})
        scores[obj] = pd.DataFrame(rows, index=index, columns=names)
        stable[obj] = pd.DataFrame(st_rows, index=index, columns=names)
    optima = pd.DataFrame([{"model": k, "name": n, "b_star": labels[a["b_idx"][m]],
                            "b_star_tp_per_ttft": float(a["opt_b"][m]), "m_t": labels[a["t_idx"][m]],
                            "m_t_throughput_tps": float(a["opt_t"][m])} for m, (k, n) in enumerate(zip(keys, names,
                                                                                                  strict=True))])
    return GeneralityResult(keys, names, scores, stable, pd.DataFrame(designs), optima, len(pts),
                            sc.workload.name, sc.workload.arrival_rate_rps, time.perf_counter() - t0)
