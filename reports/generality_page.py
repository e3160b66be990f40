"""Report pages of the specialization-generality study (HYDRA Table IV), next to the paper's values."""

from __future__ import annotations

from matplotlib.backends.backend_pdf import PdfPages

from chipdse.reports.style import fmt, table_page
from chipdse.studies.generality import HYDRA_TABLE_IV, OBJECTIVES, GeneralityResult

TITLES = {"B*": "(a) B*: throughput / TTFT over each model's own B*", "M_T": "(b) M_T: throughput over each "
          "model's own M_T"}


def _cells(r: GeneralityResult, obj: str) -> tuple[list[str], list[list[str]]]:
    """Rows of one matrix: ours, with the paper's value in brackets where HYDRA reports the same cell."""
    paper = HYDRA_TABLE_IV[obj] if r.names == ["Jamba", "Zamba", "Nemo"] else {}
    cols = ["DSE target", *r.names]
    rows = []
    for target, row in r.scores[obj].iterrows():
        cells = [str(target)]
        for j, name in enumerate(r.names):
            mark = "" if r.stable[obj].loc[target, name] else " u"
            ref = paper.get(str(target))
            cells.append(f"{row[name]:.2f}{mark}" + (f" ({ref[j]:.2f})" if ref else ""))
        rows.append(cells)
    return cols, rows


def generality_pages(pdf: PdfPages, r: GeneralityResult) -> None:
    """Add the Table IV page (both matrices) and the page of chosen designs."""
    blocks = [(TITLES[o], *_cells(r, o)) for o in OBJECTIVES]
    note = (f"HYDRA Table IV on {r.workload} at {r.arrival_rate_rps:g} req/s, {r.n_points:,} design points per model. "
            "Rows: the models the design was chosen for; columns: the model it is evaluated on; 1.00 = that model's "
            "own optimum. Brackets: the paper's value. 'u': the design is unstable on that model at the offered "
            "load (B* score 0; M_T keeps its sustainable throughput). Multi-model rows maximize the worst "
            "normalized score over their targets, solved exactly by enumeration of the whole space (HYDRA does "
            "not state its rule).")
    table_page(pdf, "Specialization vs generality (HYDRA Table IV)", note, blocks)
    d = r.designs
    rows = [[x["objective"], x["target"], x["design"], fmt(x["worst_on_target"], spec=".3f"),
             fmt(x["worst_overall"], spec=".3f")] for x in d.to_dict("records")]
    opt = [[x["name"], x["b_star"], fmt(x["b_star_tp_per_ttft"]), x["m_t"], fmt(x["m_t_throughput_tps"])]
           for x in r.optima.to_dict("records")]
    table_page(pdf, "Specialization vs generality: chosen designs", "Worst on target: the lowest normalized "
               "score over the models the design was chosen for (what the maximin choice maximizes); worst "
               "overall: over every model of the study.",
               [("Designs per target set", ["objective", "target", "design", "worst on target", "worst overall"],
                 rows),
                ("Each model's own optimum", ["model", "B*", "throughput/TTFT (tok/s^2)", "M_T", "throughput (tok/s)"],
                 opt)])
