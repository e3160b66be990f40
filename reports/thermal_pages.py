"""HYDRA report: the power / thermal page of each finalist (issue 17 item 5).

Per finalist (B*, M_T): the floorplan of the best exact placement as a power map (each cell labelled with its chiplet
type and W) beside its steady-state temperature map (degC), and the same for the thermally constrained placement
when the scenario sets ``thermal.limit_C``; the caption gives the peak of every placement method, the limit and what
the constrained layout costs in HYDRA Eq. 2 and in re-scored throughput.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.backends.backend_pdf import PdfPages

from chipdse.reports.style import EXACT_LAYOUT, PAGE, PEAK, caption, quantity, text_colour_on
from chipdse.studies.hydra.artifacts import ThermalFinalist, ThermalLayout

SERVE_MAPPING = "lpt-greedy"
"""The mapping both layouts of the throughput comparison got (:data:`chipdse.studies.hydra.thermal.SERVE_MAPPING`)."""


def _short(t: str) -> str:
    return t.replace("hbm:attention", "HBM attn").replace("hbm:mamba", "HBM mamba")


def _map_panel(fig: plt.Figure, ax: plt.Axes, lay: ThermalLayout, kind: str, title: str) -> None:
    """Draw one heat map: ``kind`` ``"power"`` (W, cells labelled with their type) or ``"temperature"`` (degC)."""
    tm = lay.thermal
    data = tm.power_W if kind == "power" else tm.die_C
    im = ax.imshow(data, cmap="viridis" if kind == "power" else "inferno", origin="upper")
    rows, cols = data.shape
    ax.set_xticks(range(cols), [str(c) for c in range(cols)])
    ax.set_yticks(range(rows), [str(r) for r in range(rows)])
    ax.tick_params(labelsize=6, length=0)
    ax.set_xlabel("column", fontsize=7)
    ax.set_ylabel("row", fontsize=7)
    for cell in range(rows * cols):
        r, c = divmod(cell, cols)
        v = float(data[r, c])
        text = f"{_short(lay.decision[cell])}\n{v:.0f} W" if kind == "power" and cell in lay.decision else (
            "empty" if kind == "power" else f"{v:.1f}")
        ax.text(c, r, text, ha="center", va="center", fontsize=6, color=text_colour_on(im, v))
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("W per cell" if kind == "power" else "die temperature, degC", fontsize=7)
    bar.ax.tick_params(labelsize=6)
    ax.set_title(title, fontsize=8)


def _stage(t: ThermalFinalist, lay: ThermalLayout) -> str:
    """The stage name of a placed layout's numbers (:data:`chipdse.reports.style.QuantityKey`): the best exact
    layout's is the one page 1 quotes."""
    return EXACT_LAYOUT if lay is t.exact else f"placement {lay.name}"


def _caption_text(t: ThermalFinalist) -> str:
    ex, lim = t.exact, t.limited
    peaks = ", ".join(f"{lay.name} {quantity(lay.thermal.peak_C, '.1f', t.label, _stage(t, lay), PEAK)}"
                      for lay in t.layouts)
    powers = ", ".join(f"{_short(k)} {v:.1f} W" for k, v in t.power_by_type_W.items())
    text = (f"Steady-state compact thermal model (chipdse/evaluators/thermal.py; HotSpot / TAP-2.5D layer stack, "
            f"instances/thermal/package.yaml): one node per cell in the die / interposer layer and in the heat "
            f"spreader, a heat sink to the ambient ({ex.thermal.ambient_C:.0f} degC) shared by the cells. Power "
            f"per chiplet at {100 * t.utilization:.0f}% utilization (evaluators/energy_hydra.py): {powers}. Peak "
            f"die temperature by placement method, degC: {peaks}.")
    if t.limit_C is None:
        return text + " No temperature limit set (scenario thermal.limit_C): no constrained placement."
    if lim is None:
        reason = t.constrained.reason if t.constrained is not None else ""
        return text + f" Limit {t.limit_C:g} degC: no placement found ({reason or 'solver found none'})."
    text += (f" Limit {t.limit_C:g} degC (thermal.limit_C): the constrained exact placement (HYDRA Eq. 2 MILP with "
             f"T_i = T_amb + sum_j R_ij p_j <= limit per cell) costs {100 * (lim.objective / ex.objective - 1):+.1f}% "
             f"in Eq. 2 ({lim.objective:.3e} vs {ex.objective:.3e} byte-hops/s; {t.constrained.status.value}")
    if t.constrained.gap is not None:
        text += f", gap {100 * t.constrained.gap:.2g}%"
    text += ")"
    a, b = t.served.get("unconstrained"), t.served.get("thermal-limit")
    if a is not None and b is not None and a.served.throughput_tps > 0:
        x, y = a.served.throughput_tps, b.served.throughput_tps
        text += (f"; serving re-score with {SERVE_MAPPING} mapping on both layouts: {x:.0f} -> {y:.0f} tok/s "
                 f"({100 * (y / x - 1):+.1f}%)")
    return text + "."


def thermal_page(pdf: PdfPages, t: ThermalFinalist) -> None:
    """Draw one finalist's power / thermal page into ``pdf`` (nothing when the finalist has no placed layout)."""
    ex = t.exact
    if ex is None:
        return
    shown = [(ex, f"{ex.name} (best exact)")]
    if t.limited is not None:
        shown.append((t.limited, f"thermally constrained, limit {t.limit_C:g} degC"))
    fig, axes = plt.subplots(len(shown), 2, figsize=PAGE, squeeze=False)
    for i, (lay, name) in enumerate(shown):
        _map_panel(fig, axes[i][0], lay, "power", f"{t.role}: {name}:\npower map (floorplan)")
        _map_panel(fig, axes[i][1], lay, "temperature", f"{t.role}: {name}:\ntemperature, peak "
                   f"{quantity(lay.thermal.peak_C, '.1f', t.label, _stage(t, lay), PEAK)} degC")
    fig.suptitle(f"Power and temperature: {t.role} {t.label}", fontsize=11)
    top = caption(fig, _caption_text(t), y=0.01)
    fig.tight_layout(rect=(0, top, 1, 0.95))
    pdf.savefig(fig)
    plt.close(fig)


def thermal_pages(pdf: PdfPages, thermal: list[ThermalFinalist]) -> None:
    """Draw the power / thermal page of every finalist (explore's ``ExploreResult.thermal``)."""
    for t in thermal:
        thermal_page(pdf, t)
