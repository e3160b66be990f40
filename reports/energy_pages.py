"""The HYDRA report's energy page (issue 17): tokens per joule of the designs on the 3-objective Pareto front with
their energy breakdown, the finalists' J/token next to their throughput and TTFT, the points.csv energy columns'
glossary and the manifest's energy keys."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from chipdse.evaluators.energy import load_energy_table  # noqa: E402
from chipdse.evaluators.energy_hydra import (  # noqa: E402
    D2D_LINK_KEY,
    ENERGY_PARTS,
    energy_at_throughput,
)
from chipdse.reports.style import PAGE, caption, fmt, table_page  # noqa: E402
from chipdse.studies.hydra.explore import ExploreResult  # noqa: E402

PART_COLOURS = {"compute": "#1f77b4", "sram": "#9467bd", "hbm": "#2ca02c", "d2d": "#ff7f0e", "static": "#7f7f7f"}

HYDRA_ENERGY_KEYS = ("logic_matrix", "logic_vector", "sram_read", "hbm3_read", "hbm3_activation", "hbm_io",
                     D2D_LINK_KEY, "noi_router", "logic_static", "d2d_phy_static", "hbm3_static")
"""The energy-table entries the HYDRA energy uses (HBM3 ones for the bundled HBM3 library)."""

ENERGY_COLUMN_DOCS: dict[str, tuple[str, str]] = {
    **{f"energy_{p}_J_per_token": ("J/token", f"{p} energy per output token at the sustainable throughput "
                                               "(evaluators/energy_hydra.py)") for p in ENERGY_PARTS},
    "energy_J_per_token": ("J/token", "energy per output token at the sustainable throughput: the parts' sum"),
    "tokens_per_J": ("tokens/J", "output tokens per joule, 1 / energy_J_per_token (the third objective)"),
    "power_W": ("W", "average package power at the sustainable throughput (dynamic + static)"),
    "static_power_W": ("W", "static power of the chiplets, their D2D PHYs and the HBM stacks"),
    "d2d_hops_mean": ("hops", "mean D2D hops of a byte of HBM traffic (bytes-weighted over chiplet types)"),
    "chiplet_peak_W": ("W", "power of the most power-hungry compute chiplet at full utilization"),
    "chiplet_peak_W_per_mm2": ("W/mm^2", "that chiplet's power over its die area (power density of its cell)"),
    "power_ok": ("yes/no", "every power limit of the scenario's energy section holds"),
    "pareto_energy": ("yes/no", "on the 3-objective Pareto front (throughput, TTFT, tokens/J) among stable points"),
}
"""points.csv's energy columns: ``{name: (unit, description)}``."""


def finalist_energy(r: ExploreResult) -> list[dict[str, Any]]:
    """Each finalist's energy at the screen and at each served layout's throughput.

    Returns
    -------
    list of dict
        One per (finalist, screen or layout): role, label, layout, throughput_tps, ttft_s, energy_J_per_token,
        tokens_per_J, power_W (layouts: :func:`energy_at_throughput` with the layout's throughput).
    """
    out = []
    for f in r.finalists:
        row = f.row
        out.append({"role": f.role, "label": row["label"], "layout": "screen (estimator)",
                    "throughput_tps": row["throughput_tps"], "ttft_s": row["ttft_s"],
                    "energy_J_per_token": row["energy_J_per_token"], "tokens_per_J": row["tokens_per_J"],
                    "power_W": row["power_W"]})
        for s in f.serving:
            j = energy_at_throughput(row, s["throughput_tps"])
            out.append({"role": f.role, "label": row["label"], "layout": s["layout"],
                        "throughput_tps": s["throughput_tps"], "ttft_s": s["ttft_s"], "energy_J_per_token": j,
                        "tokens_per_J": 1.0 / j if j > 0 else float("nan"),
                        "power_W": j * s["throughput_tps"] if j == j else float("nan")})
    return out


def energy_summary(r: ExploreResult) -> dict[str, Any]:
    """The manifest's energy keys: front size, the energy pick, the finalists' energy and the constants used.

    Returns
    -------
    dict
        ``pareto_energy_points``, ``best_tokens_per_J`` (label and value among stable points),
        ``finalists`` (:func:`finalist_energy`), ``pick`` (the scenario's ``energy.pick``), ``power_limits``
        and ``constants`` (``{key: {value, unit, source}}`` of :data:`HYDRA_ENERGY_KEYS`).
    """
    df = r.points
    st = df[df["stable"]]
    best = None if st.empty else st.loc[st["tokens_per_J"].idxmax()]
    table = load_energy_table()
    return {
        "pareto_energy_points": int(df["pareto_energy"].sum()),
        "best_tokens_per_J": None if best is None else {"label": best["label"],
                                                        "tokens_per_J": float(best["tokens_per_J"])},
        "pick": r.scenario.spec.energy.pick,
        "power_limits": r.scenario.spec.energy.model_dump(exclude={"pick"}),
        "finalists": finalist_energy(r),
        "constants": {k: {"value": table.constant(k).value, "unit": table.constant(k).unit,
                          "source": table.constant(k).source} for k in HYDRA_ENERGY_KEYS if k in table.constants},
    }


def energy_page(pdf: PdfPages, r: ExploreResult, top: int = 12) -> None:
    """Draw the energy page: throughput vs tokens/J of the stable points with the 3-objective front, and the
    J/token breakdown of the front's ``top`` most efficient designs and the finalists."""
    df = r.points
    st = df[df["stable"]]
    front = df[df["pareto_energy"]].sort_values("tokens_per_J", ascending=False)
    fig, (ax, bars) = plt.subplots(1, 2, figsize=PAGE, gridspec_kw={"width_ratios": [1, 1.3]})
    rows = [f.row for f in r.finalists]
    pick = front.head(top)
    shown = [*[(f"{f.role}: {f.row['label']}", f.row) for f in r.finalists],
             *[(lab, rw) for lab, rw in zip(pick["label"], pick.to_dict("records"), strict=True)
               if lab not in {x["label"] for x in rows}]]
    note = (f"{len(st):,} stable points; {len(front):,} on the 3-objective Pareto front (max throughput, min TTFT, "
            "max tokens/J). Energy at each design's sustainable throughput: compute (pJ/FLOP by operator class, "
            "22 nm), SRAM staging, HBM (read + I/O + row activation), D2D (HYDRA's 1.17 pJ/b GRS link per hop, "
            "ref. [42]) and static power x time; constants and sources in instances/energy/common.yaml. HYDRA "
            "publishes no energy numbers of its own besides the link.")
    top_y = caption(fig, note)
    fig.subplots_adjust(bottom=top_y + 0.08, top=0.9, wspace=0.45, left=0.07, right=0.98)
    ax.scatter(st["throughput_tps"], st["tokens_per_J"], s=3, c="#bbbbbb", rasterized=True,
               label=f"stable points ({len(st):,})")
    ax.scatter(front["throughput_tps"], front["tokens_per_J"], s=12, c="#1f77b4", label="3-objective front")
    for (lab, rw), marker in zip(shown[:len(rows)], ("*", "D"), strict=False):
        ax.scatter([rw["throughput_tps"]], [rw["tokens_per_J"]], marker=marker, s=160, c="#d62728",
                   edgecolors="k", zorder=5, label=lab)
    ax.set_xlabel("throughput (output tokens/s)")
    ax.set_ylabel("output tokens per joule")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    names = [lab for lab, _ in shown]
    left = np.zeros(len(shown))
    for part in ENERGY_PARTS:
        vals = np.array([float(rw[f"energy_{part}_J_per_token"]) for _, rw in shown]) * 1e3
        bars.barh(names, vals, left=left, color=PART_COLOURS[part], label=part)
        left += vals
    bars.invert_yaxis()
    bars.tick_params(axis="y", labelsize=6.5)
    bars.set_xlabel("energy per output token (mJ)")
    bars.legend(fontsize=7, loc="lower right")
    for i, (_, rw) in enumerate(shown):
        bars.text(left[i], i, f" {float(rw['tokens_per_J']):.3g} tok/J, {float(rw['power_W']):.0f} W",
                  va="center", fontsize=6)
    bars.set_xlim(0, left.max() * 1.45 if len(left) else 1)
    fig.suptitle("Energy: tokens per joule and its breakdown (finalists first, then the front's most "
                 "efficient)", fontsize=12)
    pdf.savefig(fig)
    plt.close(fig)


def finalists_energy_page(pdf: PdfPages, r: ExploreResult) -> None:
    """Add a table of the finalists' J/token, tokens/J and power next to their throughput and TTFT, at the screen
    and at each served layout (:func:`finalist_energy`)."""
    cols = ["finalist", "design", "layout", "throughput (tok/s)", "TTFT (s)", "J/token", "tokens/J", "power (W)"]
    rows = [[e["role"], e["label"], e["layout"], fmt(e["throughput_tps"], spec=".0f"), fmt(e["ttft_s"], spec=".3f"),
             fmt(e["energy_J_per_token"], spec=".4f"), fmt(e["tokens_per_J"], spec=".3g"),
             fmt(e["power_W"], spec=".0f")] for e in finalist_energy(r)]
    table_page(pdf, "Energy of the finalists", "Layouts: the same work per token as the screen (dynamic J/token), "
               "static power spread over the layout's re-scored throughput.", [("J per output token next to "
                                                                                "throughput and TTFT", cols, rows)])
