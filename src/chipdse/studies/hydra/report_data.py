"""The summaries explore's report and manifest print, computed once by the ``summaries`` stage (the report pages
only lay them out): the page-1 recommendation, each finalist's screen / estimator / simulator numbers side by side,
the energy summary, the power / thermal summary per finalist and the policy studies' averages."""

from __future__ import annotations

from typing import Any

from chipdse.core.io import strict_json
from chipdse.core.layout import SCREEN_LABEL, LayoutKind
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.cost import package_cost_range_usd
from chipdse.evaluators.energy import scenario_energy_table
from chipdse.evaluators.energy_hydra import D2D_LINK_KEY
from chipdse.evaluators.selection import cheapest_near
from chipdse.studies.hydra.artifacts import DesignTable, FinalistResult, Picks, SimulationStudy, ThermalFinalist
from chipdse.studies.hydra.thermal import thermal_summary

HYDRA_ENERGY_KEYS = ("logic_matrix", "logic_vector", "sram_read", "hbm3_read", "hbm3_activation", "hbm_io",
                     D2D_LINK_KEY, "noi_router", "logic_static", "d2d_phy_static", "hbm3_static")
"""The energy-table entries the HYDRA energy uses (HBM3 ones for the bundled HBM3 library)."""


def finalist_comparison(finalists: list[FinalistResult], simulation: SimulationStudy | None) -> list[dict[str, Any]]:
    """Each finalist's sweep-screen, estimator (exact layout) and simulated throughput and TTFT, for page 1.

    Returns
    -------
    list of dict
        Per finalist (B* first): ``role``, ``label``, ``screen`` and ``estimator`` ({throughput_tps (tok/s),
        ttft_s (s; None when unstable)}; ``estimator`` None without an exact layout), ``simulator`` (from the
        simulation stage's fidelity runs: saturated throughput_tps, ttft_s at the offered load, NaN when the run
        at the offered load was not made; None when not simulated) and ``why_not`` ("not simulated (simulation
        disabled)" or "not simulated (no fidelity run of this design)").
    """
    out = []
    fid = None if simulation is None else simulation.fidelity
    for f in finalists:
        row = f.row
        est = f.served(LayoutKind.EXACT)
        sim = None
        if fid is not None and not fid.empty:
            hit = fid[fid["label"] == f.label]
            if not hit.empty:
                sim = {"throughput_tps": float(hit["sim_throughput_tps"].iloc[0]),
                       "ttft_s": float(hit["sim_ttft_s"].iloc[0])}
        out.append({"role": str(f.role), "label": f.label,
                    "screen": {"throughput_tps": float(row["throughput_tps"]), "ttft_s": float(row["ttft_s"])},
                    "estimator": None if est is None else {
                        "throughput_tps": est.served.throughput_tps,
                        "ttft_s": est.served.ttft_s if est.served.stable else None},
                    "simulator": sim,
                    "why_not": "not simulated (simulation disabled)" if simulation is None
                    else "not simulated (no fidelity run of this design)"})
    return out


def recommendation(sc: LoadedScenario, table: DesignTable, picks: Picks, finalists: list[FinalistResult],
                   simulation: SimulationStudy | None) -> dict[str, Any]:
    """The design page 1 recommends (B*, the first finalist) and what backs it.

    Returns
    -------
    dict
        ``role``, ``label``, ``rule`` (B*'s pick rule); ``counts`` (compute chiplets per type), ``n_hbm``,
        ``hbm_attention``, ``hbm_mamba`` (HBM stacks), ``d2d_GBps``, ``max_batch``, ``batch_eff``; ``screen`` (the
        sweep's throughput_tps, ttft_s), ``estimator`` (the estimator's re-score of the exact layout: throughput_tps
        = capacity x mean output, ttft_s at the offered load; None without it), ``simulator`` (the event simulator
        on the same layout: saturated throughput_tps, ttft_s at the offered load; None when it was not simulated);
        ``solves`` (per problem: each exact solve's method, status, termination, proven gap); ``fidelity`` (the
        run's fidelity metrics, {} without a simulation); ``candidates``, ``stable``, ``points``, ``ties`` (labels
        of other designs with B*'s score) and ``runner_up`` (label, margin, throughput_tps, ttft_s; None when none).
    """
    f = finalists[0]
    row = f.row
    est = f.served(LayoutKind.EXACT)
    sim = finalist_comparison(finalists, simulation)[0]["simulator"]
    solves = {name: [{"method": s.method, "status": s.status.value, "termination": s.termination.value,
                      "proven_gap": s.gap} for s in sols if s.exact]
              for name, sols in (("hbm-partition", f.hbm), ("placement", f.placement), ("mapping", f.mapping))}
    df = table.frame
    runner = None
    if picks.runner_up is not None:
        nxt = df.loc[picks.runner_up]
        runner = {"label": str(nxt["label"]), "margin": picks.runner_up_margin,
                  "throughput_tps": float(nxt["throughput_tps"]), "ttft_s": float(nxt["ttft_s"])}
    return strict_json({
        "role": str(f.role), "label": f.label, "rule": picks.rule.value,
        "counts": {t: int(row[t]) for t in sc.compute_types()},
        "n_hbm": int(row["n_hbm"]), "hbm_attention": int(row["hbm_attention"]), "hbm_mamba": int(row["hbm_mamba"]),
        "d2d_GBps": float(row["d2d_GBps"]), "max_batch": int(row["max_batch"]), "batch_eff": int(row["batch_eff"]),
        "screen": {"throughput_tps": float(row["throughput_tps"]), "ttft_s": float(row["ttft_s"])},
        "estimator": None if est is None else {"throughput_tps": est.served.throughput_tps,
                                               "ttft_s": est.served.ttft_s if est.served.stable else None},
        "simulator": sim, "solves": solves,
        "fidelity": {} if simulation is None else dict(simulation.metrics),
        "candidates": picks.candidates, "stable": int(df["stable"].sum()), "points": len(df),
        "ties": [str(df.loc[i, "label"]) for i in picks.ties if df.loc[i, "label"] != f.label],
        "runner_up": runner})


def finalist_energy(finalists: list[FinalistResult]) -> list[dict[str, Any]]:
    """Each finalist's energy at the screen and at each served layout's throughput.

    Returns
    -------
    list of dict
        One per (finalist, screen or layout): role, label, layout, throughput_tps, ttft_s, energy_J_per_token,
        tokens_per_J, power_W (layouts: :class:`chipdse.studies.hydra.artifacts.ServedLayout`'s energy).
    """
    out = []
    for f in finalists:
        row = f.row
        out.append({"role": str(f.role), "label": f.label, "layout": SCREEN_LABEL,
                    "throughput_tps": row["throughput_tps"], "ttft_s": row["ttft_s"],
                    "energy_J_per_token": row["energy_J_per_token"], "tokens_per_J": row["tokens_per_J"],
                    "power_W": row["power_W"]})
        for s in f.serving:
            out.append({"role": str(f.role), "label": f.label, "layout": s.label,
                        "throughput_tps": s.served.throughput_tps, "ttft_s": s.served.ttft_s,
                        "energy_J_per_token": s.energy_J_per_token, "tokens_per_J": s.tokens_per_J,
                        "power_W": s.power_W})
    return out


def energy_summary(sc: LoadedScenario, table: DesignTable, finalists: list[FinalistResult]) -> dict[str, Any]:
    """The manifest's energy keys: front size, the energy pick, the finalists' energy and the constants used.

    Returns
    -------
    dict
        ``pareto_energy_points``, ``best_tokens_per_J`` (label and value among stable points),
        ``finalists`` (:func:`finalist_energy`), ``pick`` (the scenario's ``energy.pick``), ``power_limits``
        and ``constants`` (``{key: {value, unit, source}}`` of :data:`HYDRA_ENERGY_KEYS`).
    """
    df = table.frame
    st = df[df["stable"]]
    best = None if st.empty else st.loc[st["tokens_per_J"].idxmax()]
    energy = scenario_energy_table(sc)
    return {
        "pareto_energy_points": int(df["pareto_energy"].sum()),
        "best_tokens_per_J": None if best is None else {"label": best["label"],
                                                        "tokens_per_J": float(best["tokens_per_J"])},
        "pick": sc.spec.energy.pick,
        "power_limits": sc.spec.energy.model_dump(exclude={"pick"}),
        "finalists": finalist_energy(finalists),
        "constants": {k: {"value": energy.constant(k).value, "unit": energy.constant(k).unit,
                          "source": energy.constant(k).source} for k in HYDRA_ENERGY_KEYS if k in energy.constants},
    }


def deciding_numbers(table: DesignTable, comparison: list[dict[str, Any]], finalists: list[FinalistResult],
                     thermal: list[ThermalFinalist]) -> dict[str, Any]:
    """The numbers page 1 argues on, each from the most faithful stage that has it (issue 32).

    Parameters
    ----------
    table : DesignTable
        The scored sweep (its stable points rank B*'s tokens/J).
    comparison : list of dict
        :func:`finalist_comparison` (B* first, M_T last).
    finalists, thermal : lists
        The finalists and their power / thermal results (may be empty).

    Returns
    -------
    dict
        ``b_vs_m``: B*'s throughput and TTFT as shares of M_T's (``throughput_share``, ``ttft_share``; None where
        a value is missing) and ``stage`` (``"simulator"`` when both finalists were simulated, else
        ``"estimator"`` when both have an exact layout, else ``"screen"``); None with one finalist.
        ``energy``: B*'s ``tokens_per_J`` and ``power_W`` at its exact layout's throughput (the screen's where it
        has none; ``energy_stage`` says which), ``percentile`` (share of the stable points whose screen tokens/J is
        below B*'s screen tokens/J, 0-1), ``best_label`` / ``best_tokens_per_J`` (the stable point with the most
        tokens/J, screen), ``peak_C`` (B*'s exact layout's steady-state peak, None without the thermal stage).
    """
    b, m = comparison[0], comparison[-1]
    b_vs_m = None
    if len(comparison) > 1:
        stage = next(k for k in ("simulator", "estimator", "screen") if b[k] is not None and m[k] is not None
                     and b[k].get("throughput_tps") and m[k].get("throughput_tps"))
        bt, mt = b[stage], m[stage]

        def share(key: str) -> float | None:
            x, y = bt.get(key), mt.get(key)
            ok = x is not None and y is not None and x == x and y == y and y > 0
            return float(x / y) if ok else None

        b_vs_m = {"stage": stage, "throughput_share": share("throughput_tps"), "ttft_share": share("ttft_s")}
    f = finalists[0]
    df = table.frame
    st = df[df["stable"]]
    row = f.row
    exact = f.served(LayoutKind.EXACT)
    use_exact = exact is not None and exact.tokens_per_J == exact.tokens_per_J
    best = None if st.empty or "tokens_per_J" not in st else st.loc[st["tokens_per_J"].idxmax()]
    therm = next((t for t in thermal if str(t.role) == str(f.role)), None)
    tpj, pw = ((exact.tokens_per_J, exact.power_W) if exact is not None and use_exact
               else (row["tokens_per_J"], row["power_W"]))
    energy = {"energy_stage": "estimator" if use_exact else "screen",
              "tokens_per_J": float(tpj), "power_W": float(pw),
              "percentile": None if st.empty else float((st["tokens_per_J"] < row["tokens_per_J"]).mean()),
              "best_label": None if best is None else str(best["label"]),
              "best_tokens_per_J": None if best is None else float(best["tokens_per_J"]),
              "peak_C": None if therm is None or therm.exact is None else float(therm.exact.thermal.peak_C)}
    return {"b_vs_m": b_vs_m, "energy": energy}


def report_data(sc: LoadedScenario, table: DesignTable, picks: Picks, finalists: list[FinalistResult],
                thermal: list[ThermalFinalist], simulation: SimulationStudy | None) -> dict[str, Any]:
    """Everything the HYDRA report and manifest print besides the artifacts themselves.

    Returns
    -------
    dict
        ``recommendation`` (:func:`recommendation`), ``finalists_fidelity`` (:func:`finalist_comparison`),
        ``deciding`` (:func:`deciding_numbers`),
        ``energy`` (:func:`energy_summary`, NaN as None), ``cost`` (:func:`cost_summary`), ``thermal`` (role -> its
        power / thermal summary).
    """
    comparison = finalist_comparison(finalists, simulation)
    return {"recommendation": recommendation(sc, table, picks, finalists, simulation),
            "finalists_fidelity": strict_json(comparison),
            "deciding": strict_json(deciding_numbers(table, comparison, finalists, thermal)),
            "energy": strict_json(energy_summary(sc, table, finalists)),
            "cost": cost_summary(sc, table, picks),
            "thermal": {str(t.role): strict_json(thermal_summary(t)) for t in thermal}}


NEAR_M_T = 0.05
"""How much of M_T's throughput the cheapest-design line may give up (issue 33: within 5%)."""


def cost_summary(sc: LoadedScenario, table: DesignTable, picks: Picks) -> dict[str, Any] | None:
    """B*'s and M_T's ``package_cost_usd`` and the cheapest stable design within :data:`NEAR_M_T` of M_T's
    throughput (label, row, cost USD, throughput tok/s; :func:`chipdse.evaluators.selection.cheapest_near`), each
    with its cost range over the cost table's assumptions (``*_range_usd``: low, high;
    :func:`chipdse.evaluators.cost.package_cost_range_usd`); None without a cost column."""
    df = table.frame
    near = cheapest_near(df, picks.m_t.index, NEAR_M_T)
    if near is None:
        return None
    rows = [picks.b_star.index, picks.m_t.index, near]
    types = table.types
    low, high = package_cost_range_usd(sc, types, df.loc[rows, list(types)].to_numpy(),
                                       df.loc[rows, "n_hbm"].to_numpy())
    rng = [[float(a), float(b)] for a, b in zip(low, high, strict=True)]
    return {"b_star_usd": float(df.at[picks.b_star.index, "package_cost_usd"]), "b_star_range_usd": rng[0],
            "m_t_usd": float(df.at[picks.m_t.index, "package_cost_usd"]), "m_t_range_usd": rng[1],
            "cheapest_near_m_t": {"design": str(df.at[near, "label"]), "point": near,
                                  "package_cost_usd": float(df.at[near, "package_cost_usd"]), "range_usd": rng[2],
                                  "throughput_tps": float(df.at[near, "throughput_tps"]),
                                  "within": NEAR_M_T}}
