"""HYDRA energy (issue 17): J/token of designs by hand, the 3-objective Pareto front against brute force, the energy
pick, power limits and their one-line error."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.design_space import enumerate_points, subset_points
from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.scenario import load_scenario
from chipdse.core.specs import EnergySettings
from chipdse.evaluators.energy import load_energy_table
from chipdse.evaluators.energy_hydra import (
    apply_power_limits,
    check_power_limits,
    energy_at_throughput,
    score_with_energy,
)
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.selection import (
    pareto_mask,
    pareto_mask_3,
    pick_finalists,
)

TINY_SPACE = {"total_chiplets": 24, "hbm_min": 4, "hbm_max": 4, "min_per_type": 1, "d2d_GBps": [256],
              "max_batch": [8]}

# round-number constants at the library's 22 nm (so no node scaling enters the hand sums)
HAND_TABLE = {
    "logic_matrix": ("pJ/FLOP", 0.5, 22), "logic_vector": ("pJ/FLOP", 2.0, 22), "sram_read": ("pJ/bit", 0.25, 22),
    "hbm3_read": ("pJ/bit", 3.0, None), "hbm3_activation": ("pJ/activation", 8192.0, None),
    "hbm_io": ("pJ/bit", 1.0, None), "d2d_grs": ("pJ/bit", 1.17, None), "noi_router": ("pJ/bit", 0.33, 22),
    "logic_static": ("W/mm2", 0.01, None), "d2d_phy_static": ("W", 0.1, None), "hbm3_static": ("W", 2.0, None),
}


def _hand_table(tmp_path: Path) -> Path:
    lines = []
    for key, (unit, value, node) in HAND_TABLE.items():
        lines += [f"{key}:", f"  value: {value}", f"  unit: {unit}", "  source: 'assumption: test value'"]
        if node is not None:
            lines.append(f"  node_nm: {node}")
    path = tmp_path / "hand.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_joules_per_token_by_hand(write_scenario, tmp_path: Path) -> None:
    """Issue 17: bytes x pJ/bit + FLOPs x pJ/FLOP + static W x time, summed by hand for a few designs of a tiny
    space under the fixed hop model (every HBM byte crosses exactly ``screen_hops`` links)."""
    hops = 2.0
    sc = load_scenario(write_scenario({"design_space": TINY_SPACE,
                                       "estimator": {"batching": "dynamic", "hop_model": "fixed",
                                                     "screen_hops": hops}}))
    pts, _ = enumerate_points(sc)
    pts = subset_points(pts, np.arange(min(6, len(pts))))
    screen = Screen(sc)
    table = load_energy_table(str(_hand_table(tmp_path)))
    df = score_with_energy(screen, pts, table)
    ld = sc.lengths.mean_decode
    pre, dec = screen.pre_costs, screen.dec_costs
    flops_mat = pre.mat0.sum() + ld * dec.mat1.sum()
    flops_vec = pre.vec0.sum() + ld * dec.vec1.sum()
    checked = 0
    for _, row in df.iterrows():
        if row["capacity_rps"] <= 0:
            continue
        # the micro-batch each decode iteration runs: ceil(concurrent requests / stages) under dynamic batching
        k = math.ceil(row["decode_concurrency"] / row["decode_stages"])
        bytes_req = pre.bytes0.sum() + ld / k * dec.bytes_at(float(k)).sum()
        bits = 8 * bytes_req
        dynamic_pj = (flops_mat * 0.5 + flops_vec * 2.0 + bits * 2 * 0.25  # SRAM written and read once
                      + bits * (3.0 + 1.0 + 8192.0 / 8192) + bits * hops * (1.17 + 0.33))
        n_chiplets = sum(int(row[t]) for t in pts.types)
        phys = 4 * math.ceil(256 / 25)  # 4 ports, 25 GB/s per 8-lane x 25 Gb/s PHY
        static_w = n_chiplets * (121.0 * 0.01 + phys * 0.1) + 4 * 2.0
        j_per_token = (dynamic_pj * 1e-12 + static_w / row["capacity_rps"]) / ld
        assert row["energy_J_per_token"] == pytest.approx(j_per_token, rel=1e-9)
        assert row["tokens_per_J"] == pytest.approx(1 / j_per_token, rel=1e-9)
        assert row["power_W"] == pytest.approx(dynamic_pj * 1e-12 * row["capacity_rps"] + static_w, rel=1e-9)
        assert row["static_power_W"] == pytest.approx(static_w)
        assert row["d2d_hops_mean"] == pytest.approx(hops)
        parts = sum(row[f"energy_{p}_J_per_token"] for p in ("compute", "sram", "hbm", "d2d", "static"))
        assert parts == pytest.approx(row["energy_J_per_token"], rel=1e-12)
        # a layout serving half the throughput pays twice the static energy per token, the same dynamic
        half = energy_at_throughput(row["energy_J_per_token"], row["energy_static_J_per_token"],
                                    row["static_power_W"], row["throughput_tps"] / 2)
        assert half == pytest.approx(j_per_token + static_w / (row["capacity_rps"] * ld), rel=1e-9)
        checked += 1
    assert checked >= 3


def _brute_front(tp: np.ndarray, tt: np.ndarray, e: np.ndarray) -> np.ndarray:
    n = len(tp)
    out = np.zeros(n, dtype=bool)
    for i in range(n):
        if np.isnan(tp[i]) or np.isnan(tt[i]) or np.isnan(e[i]):
            continue
        dominated = False
        for j in range(n):
            if j == i or np.isnan(tp[j]) or np.isnan(tt[j]) or np.isnan(e[j]):
                continue
            if (tp[j] >= tp[i] and tt[j] <= tt[i] and e[j] >= e[i]
                    and (tp[j] > tp[i] or tt[j] < tt[i] or e[j] > e[i])):
                dominated = True
                break
        out[i] = not dominated
    return out


@pytest.mark.parametrize("seed", range(6))
def test_three_objective_front_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    # few distinct values: many ties and exact duplicates
    tp = rng.integers(0, 8, n).astype(float)
    tt = rng.integers(0, 8, n).astype(float)
    e = rng.integers(0, 8, n).astype(float)
    tt[rng.random(n) < 0.1] = np.nan
    got = pareto_mask_3(tp, tt, e)
    assert (got == _brute_front(tp, tt, e)).all()


def test_three_objective_front_contains_the_two_objective_front() -> None:
    rng = np.random.default_rng(7)
    tp, tt, e = rng.random(500), rng.random(500), rng.random(500)
    assert not (pareto_mask(tp, tt) & ~pareto_mask_3(tp, tt, e)).any()


def test_energy_pick_and_default_pick() -> None:
    df = pd.DataFrame({"stable": [True, True, True, True, False],
                       "throughput_tps": [10.0, 20.0, 30.0, 40.0, 99.0],
                       "ttft_s": [1.0, 1.0, 1.0, 2.0, np.nan],
                       "tokens_per_J": [9.0, 5.0, 3.0, 4.0, 99.0]})
    # above-average throughput (mean 25): rows 2 and 3; most tokens/J among them is row 3
    plain, energy = pick_finalists(df), pick_finalists(df, "energy")
    assert (plain.b_star, plain.m_t) == (2, 3)  # ratio 30 vs 20; M_T the highest stable throughput
    assert (energy.b_star, energy.m_t) == (3, 3)
    assert plain.candidates == energy.candidates == 2
    assert (plain.runner_up, plain.runner_up_margin) == (3, pytest.approx(1 - 20 / 30))
    assert (energy.runner_up, energy.runner_up_margin) == (2, pytest.approx(1 - 3 / 4))
    with pytest.raises(ValueError, match="pick"):
        pick_finalists(df, "cheapest")


def _small(write_scenario, energy: dict | None = None):
    over = {"design_space": TINY_SPACE | {"hbm_max": 6, "d2d_GBps": [256, 512]}}
    if energy is not None:
        over["energy"] = energy
    return load_scenario(write_scenario(over))


def test_package_limit_marks_points_over_it_infeasible(write_scenario) -> None:
    sc = _small(write_scenario)
    pts, _ = enumerate_points(sc)
    df = score_with_energy(Screen(sc), pts)
    assert df["power_ok"].all()  # no limits: nothing marked
    power = df.loc[df["feasible"], "power_W"]
    limit = float(power.median())
    limited = apply_power_limits(df, EnergySettings(package_max_W=limit))
    over = df["feasible"] & (df["power_W"] > limit)
    assert over.any() and (~over & df["feasible"]).any()
    assert (~limited.loc[over, "feasible"]).all() and (~limited.loc[over, "stable"]).all()
    assert limited.loc[over, "ttft_s"].isna().all()
    assert (limited.loc[over, "reason"] == f"power: package power above energy.package_max_W = {limit:g} W").all()
    kept = df["feasible"] & ~over
    pd.testing.assert_frame_equal(limited.loc[kept, df.columns], df.loc[kept])
    check_power_limits(limited, EnergySettings(package_max_W=limit), "s.yaml")  # some design meets it


def test_chiplet_density_limit_no_design_meets_names_limit_and_lowest(write_scenario) -> None:
    sc = _small(write_scenario)
    pts, _ = enumerate_points(sc)
    df = score_with_energy(Screen(sc), pts)
    lowest = float(df.loc[df["feasible"], "chiplet_peak_W_per_mm2"].min())
    limits = EnergySettings(chiplet_max_W_per_mm2=lowest / 2)
    limited = apply_power_limits(df, limits)
    with pytest.raises(InfeasibleDesignError, match=r"s\.yaml: energy\.chiplet_max_W_per_mm2: no design meets the "
                       r"chiplet power density limit of .* W/mm2; the lowest chiplet power density found is "
                       f"{lowest:.4g} W/mm2"):
        check_power_limits(limited, limits, "s.yaml")


def test_explore_with_an_unmeetable_package_limit_exits_2_and_writes_nothing(write_scenario,
                                                                            tmp_path: Path) -> None:
    """Issue 17 bad input: a power limit no design meets is one line naming the limit and the lowest power."""
    path = write_scenario({"design_space": TINY_SPACE, "energy": {"package_max_W": 1.0}})
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["explore", str(path), "--out", str(out)])
    lines = [ln for ln in result.output.strip().splitlines() if ln.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert len(lines) == 1
    assert "energy.package_max_W: no design meets the package power limit of 1 W; the lowest package power " \
           "found is" in lines[0]
    assert not out.exists()


def test_default_finalists_do_not_change_without_an_energy_pick() -> None:
    """B* and M_T are HYDRA's whatever the energy columns say (issue 17: unchanged unless asked)."""
    sc = load_scenario()
    pts, _ = enumerate_points(sc)
    pts = subset_points(pts, np.arange(0, len(pts), 40))
    screen = Screen(sc)
    plain = screen.score(pts)
    with_energy = score_with_energy(screen, pts)
    pd.testing.assert_frame_equal(with_energy[plain.columns], plain)
    a, b = pick_finalists(with_energy), pick_finalists(plain)
    assert (a.b_star, a.m_t) == (b.b_star, b.m_t)
