"""The HYDRA report's interactive plots for ``report.html`` (:mod:`chipdse.reports.html`).

The Pareto front, throughput vs TTFT as the PDF's Pareto page draws it: the stable points (thinned to one per cell
of a :data:`GRID` grid over log TTFT x throughput when there are more, so a 698,880-point space stays a page a
browser opens at once; the front and the finalists are always drawn), the front, B* and M_T. Hovering a point
gives its design and figures of merit; clicking a finalist shows its numbers, its best exact layout as a power map,
its temperature map and HYDRA's greedy and round-robin placements of it; clicking any other point shows its
numbers (only the finalists are placed).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from chipdse.reports.html import Plot
from chipdse.reports.pdf import TYPE_COLOURS, best_exact, merit_columns, proof
from chipdse.reports.style import ROLE_STYLE
from chipdse.studies.hydra.artifacts import ExploreResult, FinalistResult, ThermalFinalist

GRID = (120, 80)
"""Cells of the thinning grid (log TTFT, throughput): at most this many stable points besides the front."""


def thin(stable: pd.DataFrame, grid: tuple[int, int] = GRID) -> pd.DataFrame:
    """One point per occupied cell of a ``grid`` over (log10 TTFT, throughput) of ``stable``, the one of highest
    throughput (lowest ``point`` on ties): the cloud's shape at any size, deterministic. All of ``stable`` when it
    is no larger than the grid."""
    if len(stable) <= grid[0] * grid[1]:
        return stable
    x = np.log10(stable["ttft_s"].to_numpy(dtype=float))
    y = stable["throughput_tps"].to_numpy(dtype=float)

    def cell(v: np.ndarray, n: int) -> np.ndarray:
        lo, hi = float(np.min(v)), float(np.max(v))
        return np.minimum(((v - lo) / max(hi - lo, 1e-12) * n).astype(np.int64), n - 1)

    key = cell(x, grid[0]) * grid[1] + cell(y, grid[1])
    order = np.lexsort((stable["point"].to_numpy(), -y, key))
    first = np.ones(len(order), dtype=bool)
    first[1:] = key[order][1:] != key[order][:-1]
    return stable.iloc[np.sort(order[first])]


def _merits(r: ExploreResult) -> list[tuple[str, str]]:
    """(column, unit) of every figure of merit (:func:`chipdse.reports.pdf.merit_columns`)."""
    return [(c.name, c.unit) for c in merit_columns(r)]


def _hover(frame: pd.DataFrame, merits: list[tuple[str, str]]) -> list[str]:
    parts = [frame["label"].astype(str)]
    for name, unit in merits:
        parts.append(frame[name].map(lambda v, n=name, u=unit: f"{n} {v:.4g} {u}" if pd.notna(v) else f"{n} -"))
    return ["<br>".join(p) for p in zip(*parts, strict=True)]


def _trace(frame: pd.DataFrame, merits: list[tuple[str, str]], name: str, **style: Any) -> dict[str, Any]:
    return {"type": "scatter", "mode": style.pop("mode", "markers"), "name": name,
            "x": frame["ttft_s"].to_numpy(), "y": frame["throughput_tps"].to_numpy(),
            "customdata": frame["label"].astype(str).tolist(), "text": _hover(frame, merits),
            "hovertemplate": "%{text}<extra></extra>", **style}


def _cells_text(decision: dict[int, str], rows: int, cols: int, values: np.ndarray | None, unit: str
                ) -> list[list[str]]:
    out = []
    for rr in range(rows):
        line = []
        for cc in range(cols):
            ty = decision.get(rr * cols + cc, "")
            short = ty.replace("hbm:attention", "HBM<br>attn").replace("hbm:mamba", "HBM<br>mamba") or "empty"
            line.append(short if values is None else f"{short}<br>{values[rr, cc]:.3g} {unit}")
        out.append(line)
    return out


def _placement_map(decision: dict[int, str], rows: int, cols: int, title: str) -> dict[str, Any]:
    """A floorplan as a heat map whose cells are coloured by chiplet type, as the PDF's floorplans are
    (:data:`chipdse.reports.pdf.TYPE_COLOURS`; an empty cell white): a discrete colour scale, no colour bar."""
    kinds = sorted(set(decision.values()))
    code = {k: i + 1 for i, k in enumerate(kinds)}
    z = [[code.get(decision.get(rr * cols + cc, ""), 0) for cc in range(cols)] for rr in range(rows)]
    colours = ["#ffffff", *(TYPE_COLOURS.get(k, "#cccccc") for k in kinds)]
    n = len(colours)
    scale = [[v, c] for i, c in enumerate(colours) for v in (i / n, (i + 1) / n)]
    return {"title": title, "z": z, "text": _cells_text(decision, rows, cols, None, ""), "colorscale": scale,
            "unit": "type", "showscale": False, "zmin": -0.5, "zmax": n - 0.5}


def _finalist_detail(r: ExploreResult, f: FinalistResult, t: ThermalFinalist | None,
                     merits: list[tuple[str, str]]) -> dict[str, Any]:
    pkg = r.scenario.package
    rows_ = [["role", f.role]]
    rows_ += [[f"{name} ({unit}, screen)", f"{f.row.get(name):.4g}"] for name, unit in merits
              if pd.notna(f.row.get(name))]
    rows_ += [[f"{s.label}: throughput (tok/s)", f"{s.served.throughput_tps:.1f}"] for s in f.serving]
    best = best_exact(f.placement)
    if best is not None:
        rows_.append(["placement (HYDRA Eq. 2)", f"{best.method}: {best.objective:.4g} byte-hops/s ({proof(best)})"])
    maps = []
    if t is not None and t.exact is not None:
        tm = t.exact.thermal
        maps.append({"title": f"{t.exact.name} (best exact): power map", "z": tm.power_W,
                     "text": _cells_text(t.exact.decision, pkg.rows, pkg.cols, tm.power_W, "W"),
                     "colorscale": "Viridis", "unit": "W"})
        maps.append({"title": f"temperature, peak {tm.peak_C:.1f} degC", "z": tm.die_C,
                     "text": _cells_text(t.exact.decision, pkg.rows, pkg.cols, tm.die_C, "degC"),
                     "colorscale": "Inferno", "unit": "degC"})
        rows_.append(["peak die temperature (degC)", f"{tm.peak_C:.1f}"])
    elif best is not None and best.decision:
        maps.append(_placement_map(best.decision, pkg.rows, pkg.cols, f"{best.method} (best exact)"))
    by = {s.method: s for s in f.placement}
    for method, name in (("hydra-greedy", "HYDRA two-stage greedy"), ("round-robin", "round-robin")):
        sol = by.get(method)
        if sol is not None and sol.decision:
            maps.append(_placement_map(sol.decision, pkg.rows, pkg.cols,
                                       f"{name}: {sol.objective:.3e} byte-hops/s"))
    return {"title": f"{f.role}: {f.label}", "rows": rows_, "maps": maps,
            "note": "Power at the finalist's utilization (evaluators/energy_hydra.py), temperature from the compact "
                    "thermal model (evaluators/thermal.py); one cell per chiplet slot."}


def plots(r: ExploreResult) -> list[Plot]:
    """The HYDRA report's interactive plots: the Pareto front (see the module's docstring)."""
    df = r.points
    stable = df[df["stable"]]
    front = df[df["pareto"]].sort_values("ttft_s")
    finals = df[df["role"] != "-"]
    merits = _merits(r)
    others = stable[~stable["pareto"] & (stable["role"] == "-")]  # the front and the finalists have own traces
    shown, rest = thin(others), len(others)
    cloud = (f"other stable points ({len(shown):,} of {rest:,} shown, thinned)" if len(shown) < rest
             else f"other stable points ({len(shown):,})")
    data = [_trace(shown, merits, cloud, marker={"size": 4, "color": "#bbbbbb"}),
            _trace(front, merits, f"Pareto front ({len(front)} points)", mode="lines+markers",
                   marker={"size": 6, "color": "#1f77b4"}, line={"color": "#1f77b4"})]
    for role in ("M_T", "B*"):
        sel = finals[finals["role"].str.contains(role, regex=False)]
        if not sel.empty:
            data.append(_trace(sel.iloc[:1], merits, f"{role}: {sel.iloc[0]['label']}",
                               marker={"size": 18 if role == "B*" else 13, "color": ROLE_STYLE[role][1],
                                       "symbol": "star" if role == "B*" else "diamond",
                                       "line": {"color": "black", "width": 1}}))
    thermal = {t.label: t for t in r.thermal}
    details = {f.label: _finalist_detail(r, f, thermal.get(f.label), merits) for f in r.finalists}
    layout = {"xaxis": {"type": "log", "title": {"text": "mean TTFT at the offered load (s, log scale)"}},
              "yaxis": {"title": {"text": "throughput (output tokens/s)"}}, "hovermode": "closest",
              "legend": {"orientation": "h", "y": -0.18}, "margin": {"l": 60, "r": 20, "t": 30, "b": 40}}
    note = (f"{len(df):,} points scored, {len(stable):,} stable (Markov/fluid estimator; the PDF's Pareto page). "
            "Hover a point for its design and figures of merit; click B* or M_T for its layout and power / "
            "temperature maps.")
    if len(shown) < rest:
        note += (f" The cloud is thinned to one point per cell of a {GRID[0]} x {GRID[1]} grid over log TTFT x "
                 "throughput (the highest throughput of each); points.parquet holds every point.")
    return [Plot("pareto", "Pareto front: throughput vs TTFT", note, data, layout, details,
                 missing_note="Only the finalists (B*, M_T) are placed; this point's numbers are those of the screen "
                              "(points.csv).")]
