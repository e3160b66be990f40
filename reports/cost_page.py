"""The HYDRA report's package-cost page (issue 33): throughput against package cost of the stable points, the
4-objective front (throughput, TTFT, tokens/J, cost), the finalists and the cheapest design within 5% of M_T's
throughput (the ``summaries`` stage's ``cost``: :func:`chipdse.studies.hydra.report_data.cost_summary`)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from chipdse.reports.style import PAGE, ROLE_STYLE, caption  # noqa: E402
from chipdse.studies.hydra.artifacts import ExploreResult  # noqa: E402


def cost_page(pdf: PdfPages, r: ExploreResult) -> None:
    """Draw the cost page (nothing when the table has no ``package_cost_usd``)."""
    df = r.points
    summary = r.reports.get("cost")
    if "package_cost_usd" not in df or summary is None:
        return
    st = df[df["stable"]]
    front = df[df["pareto_cost"]] if "pareto_cost" in df else df.iloc[:0]
    near = summary["cheapest_near_m_t"]
    fig, ax = plt.subplots(figsize=PAGE)
    note = (f"{len(st):,} stable points; {len(front):,} on the 4-objective Pareto front (max throughput, min TTFT, "
            "max tokens/J, min package cost). Package cost on the line of Chiplet Actuary (Feng and Ma, DAC 2022, "
            "HYDRA ref. [44]): known-good dies (wafer price, dies per wafer, negative-binomial yield), stacks per "
            "GB, the silicon interposer and substrate over the bonding yields, and NRE over the volume; constants "
            "with sources and ranges in instances/cost/common.yaml (chipdse params hydra: cost.table.*). "
            f"B* costs {summary['b_star_usd']:,.0f} USD, M_T {summary['m_t_usd']:,.0f} USD (over the cost "
            f"assumptions' ranges {_range(summary['b_star_range_usd'])} and {_range(summary['m_t_range_usd'])}: "
            "the absolute cost is loosely known, the comparison between designs far less so, as every design "
            "shares the NRE and the yields); the cheapest design "
            f"within {100 * near['within']:.0f}% of M_T's throughput is {near['design']}, "
            f"{near['package_cost_usd']:,.0f} USD at {near['throughput_tps']:.0f} tok/s. HYDRA publishes no cost.")
    top_y = caption(fig, note)
    fig.subplots_adjust(bottom=top_y + 0.08, top=0.9, left=0.08, right=0.97)
    ax.scatter(st["package_cost_usd"], st["throughput_tps"], s=3, c="#bbbbbb", rasterized=True,
               label=f"stable points ({len(st):,})")
    ax.scatter(front["package_cost_usd"], front["throughput_tps"], s=12, c="#1f77b4", label="4-objective front")
    for f in r.finalists:
        role = "B*" if str(f.role).startswith("B*") else "M_T"
        marker, colour, size = ROLE_STYLE[role]
        ax.scatter([f.row["package_cost_usd"]], [f.row["throughput_tps"]], marker=marker, s=size, c=colour,
                   edgecolors="k", zorder=5, label=f"{f.role}: {f.row['label']}")
    ax.scatter([near["package_cost_usd"]], [near["throughput_tps"]], marker="o", s=90, facecolors="none",
               edgecolors="#ff7f0e", linewidths=2, zorder=6,
               label=f"cheapest within {100 * near['within']:.0f}% of M_T: {near['design']}")
    ax.set_xlabel("package cost (USD)")
    ax.set_ylabel("throughput (output tokens/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Package cost: what throughput costs", fontsize=12)
    pdf.savefig(fig)
    plt.close(fig)


def _range(pair: list[float]) -> str:
    """``[low, high]`` USD as ``"2,119-34,957 USD"``."""
    return f"{pair[0]:,.0f}-{pair[1]:,.0f} USD"

