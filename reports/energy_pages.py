"""The HYDRA report's energy page (issue 17): tokens per joule of the designs on the 3-objective Pareto front with
their energy breakdown, and the finalists' J/token next to their throughput and TTFT (the ``summaries`` stage's
``energy``: :func:`chipdse.studies.hydra.report_data.energy_summary`)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from chipdse.evaluators.energy_hydra import ENERGY_PARTS  # noqa: E402
from chipdse.reports.style import PAGE, POWER, ROLE_STYLE, TPJ, caption, fmt, quantity  # noqa: E402
from chipdse.studies.hydra.artifacts import ExploreResult  # noqa: E402

PART_COLOURS = {"compute": "#1f77b4", "sram": "#9467bd", "hbm": "#2ca02c", "d2d": "#ff7f0e", "static": "#7f7f7f"}

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
    for (lab, rw), role in zip(shown[:len(rows)], ("B*", "M_T"), strict=False):
        marker, colour, size = ROLE_STYLE[role]
        ax.scatter([rw["throughput_tps"]], [rw["tokens_per_J"]], marker=marker, s=size, c=colour,
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


def finalists_energy_table(r: ExploreResult) -> tuple[str, list[str], list[list[str]]]:
    """The finalists' J/token, tokens/J and power at the screen and at each served layout (throughput and TTFT are in
    the table above it) (:func:`chipdse.studies.hydra.report_data.finalist_energy`): ``(title, columns, rows)`` for the
    configurations page's third table (:func:`chipdse.reports.style.table_page`)."""
    cols = ["finalist", "layout", "J/token", "tokens/J", "power (W)"]
    rows = [[e["role"], e["layout"], fmt(e["energy_J_per_token"], spec=".4f"),
             quantity(e["tokens_per_J"], ".3g", e["label"], e["layout"], TPJ),
             quantity(e["power_W"], ".0f", e["label"], e["layout"], POWER)] for e in r.reports["energy"]["finalists"]]
    return ("Energy per output token with each layout (the screen's dynamic J/token, static power over the "
            "layout's re-scored throughput)", cols, rows)
