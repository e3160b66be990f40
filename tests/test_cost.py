"""Package cost (issue 33, item 3): the negative-binomial yield and dies per wafer against hand-computed values,
a larger die never cheaper per good die, the package cost against a hand sum, the 4-objective front against
brute force, and the cost limit (infeasible points; one line naming the lowest cost when nothing fits)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.overrides import parse_overrides
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.cost import (
    PackageCostModel,
    dies_per_wafer,
    good_die_cost_usd,
    load_cost_table,
    negative_binomial_yield,
)
from chipdse.evaluators.selection import pareto_mask_max
from chipdse.studies.hydra.stages import screen_and_pick


def test_negative_binomial_yield_by_hand() -> None:
    """100 mm^2 at 0.1 defects/cm^2: one expected defect per 10 dies; clustering 2 gives (1 + 0.1 / 2)^-2 =
    1 / 1.1025 = 0.907029..., and a very large clustering parameter the Poisson e^-0.1 = 0.904837..."""
    assert float(negative_binomial_yield(100.0, 0.1, 2.0)) == pytest.approx(0.9070294784580499, rel=1e-12)
    assert float(negative_binomial_yield(100.0, 0.1, 1e9)) == pytest.approx(0.9048374180359595, rel=1e-6)
    assert float(negative_binomial_yield(0.0, 0.1, 2.0)) == 1.0
    with pytest.raises(ValueError, match="clustering"):
        negative_binomial_yield(100.0, 0.1, 0.0)


def test_dies_per_wafer_by_hand() -> None:
    """A 10 x 10 mm die, no scribe, 300 mm wafer with 5 mm edge loss: pi 145^2 / 100 = 660.52 minus the rim
    pi 290 / sqrt(200) = 64.42, 596.10 dies; the library's 121 mm^2 die with a 0.2 mm scribe lane is an
    11.2 x 11.2 mm site: 66,052 / 125.44 - 911.06 / 15.839 = 469.04."""
    assert float(dies_per_wafer(100.0, 300.0, 5.0, 0.0)) == pytest.approx(596.098, abs=1e-3)
    assert float(dies_per_wafer(121.0, 300.0, 5.0, 0.2)) == pytest.approx(469.043, abs=1e-3)
    with pytest.raises(ValueError, match="does not fit"):
        dies_per_wafer(80_000.0, 300.0, 5.0, 0.2)


def test_good_die_cost_by_hand() -> None:
    """The bundled 22 nm die: 3,480 USD per wafer over 469.04 dies at yield (1 + 0.07 x 1.21 / 10)^-10 = 0.91912
    is 8.072 USD per known-good die."""
    assert float(good_die_cost_usd(121.0, 3480.0, 0.07, 10.0)) == pytest.approx(8.0723, abs=1e-3)


@settings(max_examples=200, deadline=None)
@given(a=st.floats(1.0, 800.0), grow=st.floats(1.001, 3.0), d0=st.floats(0.0, 0.5), c=st.floats(0.3, 20.0),
       scribe=st.floats(0.0, 0.5))
def test_a_larger_die_is_never_cheaper_per_good_die(a: float, grow: float, d0: float, c: float,
                                                    scribe: float) -> None:
    """Fewer dies fit a wafer and fewer of them work: cost per good die grows with area."""
    small = float(good_die_cost_usd(a, 3000.0, d0, c, 300.0, 5.0, scribe))
    big = float(good_die_cost_usd(min(a * grow, 2000.0), 3000.0, d0, c, 300.0, 5.0, scribe))
    assert big >= small * (1 - 1e-12)


def test_package_cost_is_the_hand_sum_of_its_parts() -> None:
    """Packages of the bundled scenario summed by hand from the cost table (121 mm^2 compute dies and stacks on
    the 3,000 mm^2 interposer): two of each type and 4 stacks; one more stack; one more die; a type left out
    (its NRE not charged)."""
    sc = load_scenario(None)
    t = load_cost_table()
    types = tuple(sc.compute_types())
    m = PackageCostModel.of(sc, types)
    v = {k: t.get(k) for k in t.keys()}
    site = (math.sqrt(121.0) + v["scribe_lane"]) ** 2
    dpw = math.pi * 145.0 ** 2 / site - math.pi * 290.0 / math.sqrt(2 * site)
    kgd = v["die_wafer_price"] / (dpw * (1 + v["die_defect_density"] * 1.21 / v["die_clustering"])
                                  ** -v["die_clustering"]) + v["micro_bump_cost"] * 121.0
    stack = v["hbm_price_per_GB"] * sc.library.memory.capacity_GB + v["micro_bump_cost"] * 121.0
    site_i = (math.sqrt(3000.0) + v["scribe_lane"]) ** 2
    dpw_i = math.pi * 145.0 ** 2 / site_i - math.pi * 290.0 / math.sqrt(2 * site_i)
    interposer = v["interposer_wafer_price"] / dpw_i + v["c4_bump_cost"] * 3000.0
    y_int = (1 + v["interposer_defect_density"] * 30.0 / v["interposer_clustering"]) ** -v["interposer_clustering"]
    substrate = v["substrate_cost"] * v["substrate_area_factor"] * 3000.0
    y_s = v["substrate_bonding_yield"]
    nre_die = v["die_nre"] * (v["nre_fixed_share"] + v["die_nre_area_share"] * 121.0 / 300.0)
    nre_int = v["interposer_nre_factor"] * v["interposer_node_nre"] * (
        v["nre_fixed_share"] + v["interposer_nre_area_share"] * 3000.0 / 300.0)

    def hand(counts: list[int], h: int) -> float:
        y_b = v["die_bonding_yield"] ** (sum(counts) + h)
        return ((sum(counts) * kgd + h * stack) / (y_b * y_s) + interposer / (y_int * y_b * y_s) + substrate / y_s
                + (sum(1 for c in counts if c) * nre_die + nre_int) / v["volume"])

    n = len(types)
    cases = [([2] * n, 4), ([2] * n, 5), ([3] + [2] * (n - 1), 4), ([0] + [2] * (n - 1), 4)]
    got = m.package_cost_usd(np.array([c for c, _ in cases]), np.array([h for _, h in cases]))
    assert got == pytest.approx([hand(c, h) for c, h in cases], rel=1e-12)
    assert got[1] > got[0] and got[2] > got[0] > got[3]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.integers(0, 4)] * 4), min_size=1, max_size=60), st.integers(1, 64))
def test_pareto_mask_max_matches_brute_force(rows: list[tuple[int, ...]], block: int) -> None:
    """The k-objective front equals the O(n^2) definition (ties kept), for any block size."""
    x = np.array(rows, dtype=float)
    ge = (x[:, None, :] >= x[None, :, :]).all(axis=2)
    gt = (x[:, None, :] > x[None, :, :]).any(axis=2)
    brute = ~(ge & gt).any(axis=0)
    assert (pareto_mask_max(x, block=block) == brute).all()


SMALL = {"design_space": {"total_chiplets": 24, "hbm_min": 4, "hbm_max": 6, "d2d_GBps": [512],
                         "max_batch": [16, 64]}}


def test_the_cost_limit_makes_dearer_designs_infeasible(write_scenario) -> None:  # noqa: ANN001 - fixture
    """Under a limit between the cheapest and the dearest package, every point above it is infeasible with the
    limit as its reason, and B* and M_T cost at most the limit; ``--set cost.table.KEY`` moves the cost."""
    _, table, _ = screen_and_pick(load_scenario(write_scenario(SMALL)))
    cost = table.frame["package_cost_usd"]
    limit = float(cost.quantile(0.3))
    _, limited, picks = screen_and_pick(load_scenario(write_scenario({**SMALL, "cost": {"package_max_usd": limit}})))
    df = limited.frame
    over = df["package_cost_usd"] > limit
    assert over.any() and not df.loc[over, "feasible"].any() and not df.loc[over, "cost_ok"].any()
    assert df.loc[over & table.frame["feasible"], "reason"].str.startswith("cost: package cost above").all()
    assert df.loc[picks.b_star.index, "package_cost_usd"] <= limit
    assert df.loc[picks.m_t.index, "package_cost_usd"] <= limit
    dearer = load_scenario(write_scenario(SMALL), parse_overrides(["cost.table.hbm_price_per_GB=20"]))
    _, t20, _ = screen_and_pick(dearer)
    assert (t20.frame["package_cost_usd"] > cost).all()


def test_a_cost_limit_nothing_meets_names_the_lowest_cost(write_scenario, tmp_path: Path) -> None:  # noqa: ANN001
    """No design under the limit: one line naming the field and the lowest cost found, exit 2, nothing written."""
    from typer.testing import CliRunner

    from chipdse.cli import app

    _, table, _ = screen_and_pick(load_scenario(write_scenario(SMALL)))
    low = float(table.frame["package_cost_usd"].min())
    path = write_scenario({**SMALL, "cost": {"package_max_usd": round(low * 0.5)}})
    with pytest.raises(InfeasibleDesignError) as err:
        screen_and_pick(load_scenario(path))
    msg = str(err.value)
    assert "\n" not in msg and "cost.package_max_usd" in msg and f"{low:.6g} USD" in msg
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["sweep", str(path), "--out", str(out)])
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "cost.package_max_usd" in lines[-1], result.output
    assert not out.exists()


def test_cheapest_near_by_hand() -> None:
    """Among stable rows within 5% of row 0's 100 tok/s (>= 95), the cheapest: row 2 (96 tok/s, 4,000 USD); row 3
    is cheaper but too slow, row 4 cheaper but unstable."""
    import pandas as pd

    from chipdse.evaluators.selection import cheapest_near

    df = pd.DataFrame({"throughput_tps": [100.0, 99.0, 96.0, 94.0, 99.0],
                       "stable": [True, True, True, True, False],
                       "package_cost_usd": [6000.0, 5000.0, 4000.0, 1000.0, 500.0]})
    assert cheapest_near(df, 0, 0.05) == 2
    assert cheapest_near(df, 0, 0.0) == 0
    assert cheapest_near(df.drop(columns="package_cost_usd"), 0) is None


@pytest.mark.parametrize(("option", "needle"), [("cost.table.volume=0", "cost.table.volume: a value > 0"),
                                                 ("cost.table.die_bonding_yield=1.5", "a yield in (0, 1]"),
                                                 ("cost.table.nre_fixed_share=2", "a share in [0, 1]")])
def test_a_cost_constant_outside_its_meaning_is_one_line(write_scenario, tmp_path: Path, option: str,
                                                         needle: str) -> None:  # noqa: ANN001 - fixture
    from typer.testing import CliRunner

    from chipdse.cli import app

    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["sweep", str(write_scenario(SMALL)), "--set", option, "--out", str(out)])
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert result.exit_code == 2 and needle in lines[-1] and len(lines) == 1, result.output
    assert not out.exists()


def test_the_cost_range_is_the_cheapest_and_dearest_corner_by_brute_force() -> None:
    """Over every corner of the ranged cost constants (2^5 settings), the lowest and highest cost of one package
    are the range's ends, and the bundled values lie inside it."""
    import itertools

    from chipdse.evaluators.cost import assumption_keys, package_cost_range_usd, scenario_cost_table

    sc = load_scenario(None)
    types = tuple(sc.compute_types())
    counts, h = np.array([[2, 8, 6, 5]]), np.array([3])
    table = scenario_cost_table(sc)
    keys = assumption_keys(table)
    assert len(keys) == 5
    corners = [float(PackageCostModel.of(sc, types, table.with_values(dict(zip(keys, ends, strict=True))))
                     .package_cost_usd(counts, h)[0])
               for ends in itertools.product(*[(table.constant(k).low, table.constant(k).high) for k in keys])]
    low, high = package_cost_range_usd(sc, types, counts, h)
    assert float(low[0]) == pytest.approx(min(corners), rel=1e-12)
    assert float(high[0]) == pytest.approx(max(corners), rel=1e-12)
    assert low[0] < PackageCostModel.of(sc, types).package_cost_usd(counts, h)[0] < high[0]
