"""The SNAKE study's averages and shares (its summaries stage): what the report and the manifest print beside the
tables, and what the claims measure."""

from __future__ import annotations

import pandas as pd

from chipdse.evaluators.snake_pu import GROUPED, MODES
from chipdse.studies.snake.artifacts import BASELINES, SnakeStudy, SnakeSummaries


def mode_distribution(modes: pd.DataFrame) -> pd.DataFrame:
    """Share of weight operators choosing each mode, per model (SNAKE Fig. 13a), over operators x batches x
    contexts; the four modes and ``grouped`` (MoE experts as a grouped GEMM). Attention products (head-parallel, as
    the paper schedules them apart) are left out."""
    if "head_parallel" in modes.columns:
        modes = modes[~modes["head_parallel"].astype(bool)]
    counts = modes.groupby(["model", "mode"]).size().unstack(fill_value=0).reindex(columns=[*MODES, GROUPED],
                                                                                   fill_value=0)
    return counts.div(counts.sum(axis=1), axis=0)


def average_speedups(speedups: pd.DataFrame, column: str = "speedup") -> dict[str, float]:
    """Mean speedup over SNAKE per baseline across models, batches and contexts (SNAKE Sec. 6.3 averages over
    models): the mean per model, then over models; ``column="energy_ratio"`` averages the energy-efficiency
    ratios the same way."""
    per_model = speedups.groupby(["baseline", "model"])[column].mean()
    return {b: float(per_model[b].mean()) for b in BASELINES if b in per_model.index.get_level_values(0)}


def snake_summaries(s: SnakeStudy) -> SnakeSummaries:
    """Every average and share of a finished study the report prints (:class:`SnakeSummaries`)."""
    sweep = s.link_sweep
    links = sorted(sweep["speedups"]["link_GBps"].unique()) if sweep else []
    link_speedups = {float(x): average_speedups(sweep["speedups"][sweep["speedups"]["link_GBps"] == x])
                     for x in links}
    md = sweep["modes"] if sweep else pd.DataFrame()
    link_modes = {(float(x), m): mode_distribution(md[(md["link_GBps"] == x) & (md["model"] == m)])
                  for x in links for m in s.spec.mode_models}
    return SnakeSummaries(
        average_speedups(s.speedups), s.speedups.groupby(["model", "baseline"])["speedup"].mean().unstack(),
        average_speedups(s.speedups, "energy_ratio") if "energy_ratio" in s.speedups else {},
        mode_distribution(s.modes),
        s.slowdowns.groupby(["model", "mode"])["slowdown"].agg(["min", "max"]).reset_index(),
        link_speedups, link_modes)
