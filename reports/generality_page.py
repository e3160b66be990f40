"""Report pages of the specialization-generality study (HYDRA Table IV), next to the paper's values."""

from __future__ import annotations

import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from chipdse.reports.style import fmt, table_page
from chipdse.studies.hydra.artifacts import HYDRA_TABLE_IV, OBJECTIVES, GeneralityResult

TITLES = {"B*": "(a) B*: throughput / TTFT over each model's own B*", "M_T": "(b) M_T: throughput over each "
          "model's own M_T"}


def _cells(r: GeneralityResult, obj: str, scores: pd.DataFrame | None = None, stable: pd.DataFrame | None = None
           ) -> tuple[list[str], list[list[str]]]:
    """Rows of one matrix (the estimator's, or ``scores`` / ``stable`` given), with the paper's value in brackets
    where HYDRA reports the same cell."""
    paper = HYDRA_TABLE_IV[obj] if r.names == ["Jamba", "Zamba", "Nemo"] else {}
    scores = r.scores[obj] if scores is None else scores
    stable = r.stable[obj] if stable is None else stable
    cols = ["DSE target", *r.names]
    rows = []
    for target, row in scores.iterrows():
        cells = [str(target)]
        for j, name in enumerate(r.names):
            mark = "" if stable.loc[target, name] else " u"
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
    sim = r.simulated
    if sim is not None:
        blocks = [(TITLES[o] + ", simulated", *_cells(r, o, sim.scores[o], sim.stable[o])) for o in OBJECTIVES]
        rates = ", ".join(f"{m} {v:.3g} req/s" for m, v in sim.rates_rps.items())
        table_page(pdf, "Specialization vs generality, simulated (HYDRA Table IV)",
                   f"The same designs as the previous page, each placed ({sim.placement}) and simulated on every "
                   f"model: saturated for throughput, at the model's own rate for TTFT. Rates: {sim.load:.0%} of "
                   f"the simulated capacity of each model's own B* design ({rates}). 1.00 = the best simulated "
                   f"design for that model among those simulated (so no cell exceeds 1); mean of {sim.seeds} "
                   "simulator seed(s), the spread is in the manifest. 'u': the "
                   "design cannot sustain that model's rate; its cell is then its saturated throughput over the "
                   "best saturated throughput, not 0. Brackets: the paper's value."
                   + (f" Not simulated: {'; '.join(sim.skipped)}." if sim.skipped else ""), blocks)
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
