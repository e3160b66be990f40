"""The one registry of the scored design table's columns: name, unit, description and the stage that makes each.

``points.csv``, its ``points.columns.csv`` and the report's glossary are all read from here
(:meth:`chipdse.studies.hydra.artifacts.DesignTable.columns`), so a column is described once.

Adding a metric to the sweep (e.g. a package cost) takes a spec field for its inputs (``chipdse/core/specs.py``),
an evaluator function that computes it for every point (``evaluators/<metric>.py``: ``(screen, points, table) ->
array``) and one :class:`Metric` entry in :data:`METRICS` here: the screen stage computes every registered metric
(:func:`chipdse.studies.hydra.stages.screen_points`), the CSV and the glossary describe it, and the report's Pareto
page lists it for the finalists and the front (its ``sense`` says which way is better).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from chipdse.core.design_space import DesignPoints
from chipdse.evaluators.cost import package_cost_metric
from chipdse.evaluators.energy_hydra import ENERGY_PARTS
from chipdse.evaluators.estimator import Screen

Stage = Literal["screen", "energy", "metrics", "pareto", "pick"]
"""The stage that makes a column: the estimator's screen, its energy and power limits, a registered metric, the
Pareto flags, the pick."""


@dataclass(frozen=True)
class Column:
    """One column of the scored design table.

    Attributes
    ----------
    name : str
        The column's name in ``points.csv``.
    unit : str
        Its unit (``"-"`` when unitless, ``"yes/no"`` for flags).
    description : str
        What it holds, in one sentence.
    stage : str
        The stage that makes it (:data:`Stage`).
    sense : {"max", "min"} or None
        For a figure of merit: which way is better (the Pareto page lists these); None otherwise.
    """

    name: str
    unit: str
    description: str
    stage: str
    sense: Literal["max", "min"] | None = None


@dataclass(frozen=True)
class Metric:
    """A metric column the screen stage computes for every point, beside the estimator's and the energy model's.

    Attributes
    ----------
    column : Column
        Its name, unit, description (stage ``"metrics"``) and sense.
    compute : callable(Screen, DesignPoints, pandas.DataFrame) -> numpy.ndarray
        The evaluator function: the estimator, the points and the table scored so far, to one value per point.
    """

    column: Column
    compute: Callable[[Screen, DesignPoints, pd.DataFrame], np.ndarray]


METRICS: tuple[Metric, ...] = (
    Metric(Column("package_cost_usd", "USD", "package cost: known-good dies and stacks, silicon interposer and "
                  "substrate over the assembly yields, plus NRE amortized over cost.table.volume "
                  "(evaluators/cost.py, Chiplet Actuary)", "metrics", "min"), package_cost_metric),
)
"""The registered metrics beyond the estimator's and the energy model's columns: the package cost (issue 33)."""


def _col(name: str, unit: str, description: str, stage: str = "screen",
         sense: Literal["max", "min"] | None = None) -> Column:
    return Column(name, unit, description, stage, sense)


FIXED: tuple[Column, ...] = (
    _col("point", "-", "row number of the design point in the sweep"),
    _col("label", "-", "the point's label (format: see the glossary)"),
    _col("n_hbm", "stacks", "{memory} stacks in the package"),
    _col("d2d_GBps", "GB/s", "die-to-die link bandwidth of every mesh port (1e9 bytes/s)"),
    _col("max_batch", "requests", "largest decode batch the design allows (a design choice)"),
    _col("hbm_attention", "stacks", "{memory} stacks holding the attention blocks' weights and KV cache"),
    _col("hbm_mamba", "stacks", "{memory} stacks holding the Mamba blocks' weights and SSM state"),
    _col("r_mem", "requests", "requests the HBM holds at once next to the weights, min(r_M, r_A) (HYDRA Eq. 1); "
                              "0 = the weights and one request do not fit"),
    _col("batch_eff", "requests", "effective batch: max_batch capped by r_mem (at least 1)"),
    _col("decode_stages", "stages", "decode pipeline stages (chiplets the decode blocks are spread over)"),
    _col("decode_concurrency", "requests", "requests decoding at once at full load"),
    _col("decode_iteration_s", "s", "time between two output tokens of one request at full load (the TBT at "
                                    "saturation)"),
    _col("prefill_rps", "requests/s", "prefill capacity: 1 / prefill bottleneck stage time"),
    _col("decode_rps", "requests/s", "decode capacity: concurrent requests / (iteration time x mean output tokens)"),
    _col("capacity_rps", "requests/s", "sustainable request rate: min(prefill_rps, decode_rps); 0 when infeasible"),
    _col("throughput_tps", "tokens/s", "sustainable output tokens/s: capacity_rps x mean output tokens (HYDRA Eq. 8)",
         sense="max"),
    _col("ttft_s", "s", "mean time to first token at the offered load; empty when unstable", sense="min"),
    _col("stable", "yes/no", "capacity above the offered load (a finite TTFT)"),
    _col("feasible", "yes/no", "the weights and one request fit the HBM stacks (and every power limit holds)"),
    _col("reason", "-", "why a point is infeasible or unstable; empty otherwise"),
    *(_col(f"energy_{p}_J_per_token", "J/token", f"{p} energy per output token at the sustainable throughput "
           "(evaluators/energy_hydra.py)", "energy") for p in ENERGY_PARTS),
    _col("energy_J_per_token", "J/token", "energy per output token at the sustainable throughput: the parts' sum",
         "energy"),
    _col("tokens_per_J", "tokens/J", "output tokens per joule, 1 / energy_J_per_token (the third objective)",
         "energy", "max"),
    _col("power_W", "W", "average package power at the sustainable throughput (dynamic + static)", "energy"),
    _col("static_power_W", "W", "static power of the chiplets, their D2D PHYs and the HBM stacks", "energy"),
    _col("d2d_hops_mean", "hops", "mean D2D hops of a byte of HBM traffic (bytes-weighted over chiplet types)",
         "energy"),
    _col("chiplet_peak_W", "W", "power of the most power-hungry compute chiplet at full utilization", "energy"),
    _col("chiplet_peak_W_per_mm2", "W/mm^2", "that chiplet's power over its die area (power density of its cell)",
         "energy"),
    _col("power_ok", "yes/no", "every power limit of the scenario's energy section holds", "energy"),
    _col("cost_ok", "yes/no", "package_cost_usd within cost.package_max_usd (yes when no limit is set)", "metrics"),
    _col("pareto", "yes/no", "on the throughput-TTFT Pareto front among stable points", "pareto"),
    _col("pareto_energy", "yes/no", "on the 3-objective Pareto front (throughput, TTFT, tokens/J) among stable "
                                    "points", "pareto"),
    _col("pareto_cost", "yes/no", "on the 4-objective Pareto front (throughput, TTFT, tokens/J, package cost) "
                                  "among stable points", "pareto"),
    _col("role", "-", "B*, M_T, B*,M_T (both) or - (neither)", "pick"),
)
"""Every column whose meaning does not depend on the library (``{memory}`` is the library's memory name)."""



def registry() -> dict[str, Column]:
    """Column name -> description, for every column but the per-type chiplet counts (:data:`FIXED` and the
    columns of :data:`METRICS`)."""
    return {c.name: c for c in (*FIXED, *(m.column for m in METRICS))}


def table_columns(names: tuple[str, ...], types: tuple[str, ...], type_notes: Mapping[str, str] | None = None,
                  memory: str = "HBM") -> dict[str, Column]:
    """The description of every column of a scored table, in the table's order, then the registered columns it
    lacks (``role``, which explore adds after the pick).

    Parameters
    ----------
    names : tuple of str
        The table's columns, in order.
    types : tuple of str
        The compute chiplet types (their count columns).
    type_notes : mapping of str to str, optional
        Type -> what it runs (e.g. ``"attention blocks, prefill phase"``), from the library.
    memory : str
        The library's memory chiplet name (e.g. ``"HBM3"``).

    Returns
    -------
    dict[str, Column]
        Name -> column; a column the registry does not know is a defect of the stage that made it (KeyError).
    """
    notes = type_notes or {}
    per_type = {t: Column(t, "chiplets", f"number of {t} chiplets" + (f" ({notes[t]})" if t in notes else ""),
                          "screen") for t in types}
    known = {**per_type, **{k: Column(c.name, c.unit, c.description.format(memory=memory), c.stage, c.sense)
                            for k, c in registry().items()}}
    out = {n: known[n] for n in names}
    return out | {k: v for k, v in known.items() if k not in out and k not in per_type}
