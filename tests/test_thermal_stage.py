"""Explore's power / thermal stage and its report page on a 3 x 3 package (issue 17 items 3 and 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario
from chipdse.reports.thermal_pages import thermal_page
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra import explore
from chipdse.studies.hydra.artifacts import FinalistResult, ThermalFinalist
from chipdse.studies.hydra.stages import screen_and_pick
from chipdse.studies.hydra.thermal import thermal_finalist, thermal_summary
from tests.test_report import Pages, overlaps

CFG = SolverConfig(work_limit=5.0)


def _scenario(tmp: Path, thermal: dict | None = None) -> LoadedScenario:
    """The default scenario on a 3 x 3 package of the same pitch: 8 chiplets, 2-3 HBM stacks."""
    inst = instances_dir()
    pkg = yaml.safe_load((inst / "packages" / "hydra-5x5.yaml").read_text())
    pkg |= {"name": "hydra-3x3", "rows": 3, "cols": 3, "interposer_area_mm2": 1089.0}
    (tmp / "p3.yaml").write_text(yaml.safe_dump(pkg))
    base = yaml.safe_load((inst / "scenarios" / "default.yaml").read_text())
    base |= {"library": str(inst / "chiplets" / "hydra.yaml"), "package": str(tmp / "p3.yaml"),
             "workload": str(inst / "workloads" / "arxiv.yaml"), "name": "thermal-3x3",
             "estimator": {"batching": "dynamic"},
             "design_space": {"total_chiplets": 8, "hbm_min": 2, "hbm_max": 3, "d2d_GBps": [512], "max_batch": [16]}}
    base.pop("generality", None)
    base.pop("simulation", None)
    if thermal is not None:
        base["thermal"] = thermal
    (tmp / "s.yaml").write_text(yaml.safe_dump(base))
    return explore.load(tmp / "s.yaml")


def _stage(sc: LoadedScenario) -> ThermalFinalist:
    screen, _, picks = screen_and_pick(sc)
    fin = picks.b_star
    pp = placement_problem(sc, fin.design.point, fin.design.capacity_rps)
    sols = [solve_placement(pp, m, CFG) for m in ("milp-highs", "hydra-greedy", "round-robin")]
    return thermal_finalist(sc, screen, FinalistResult(fin, [], sols, [], []), CFG)


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> tuple[ThermalFinalist, ThermalFinalist]:
    """B*'s stage without a limit, then with the limit 1 K below its exact layout's peak."""
    tmp = tmp_path_factory.mktemp("thermal")
    free = _stage(_scenario(tmp))
    sc = _scenario(tmp, {"limit_C": round(free.exact.thermal.peak_C - 1.0, 3)})
    return free, _stage(sc)


def test_stage_maps_every_placement_and_power_sums_to_the_map(stages: tuple[ThermalFinalist, ThermalFinalist]) -> None:
    free, _ = stages
    assert [lay.name for lay in free.layouts] == ["milp-highs", "hydra-greedy", "round-robin"]
    assert free.constrained is None and free.served == {}
    for lay in free.layouts:
        want = sum(free.power_by_type_W[t] for t in lay.decision.values())
        assert float(lay.thermal.power_W.sum()) == pytest.approx(want, rel=1e-12)
        assert lay.thermal.peak_C > lay.thermal.ambient_C


def test_limit_is_met_by_the_constrained_layout_and_broken_by_the_free_one_issue_17(
        stages: tuple[ThermalFinalist, ThermalFinalist]) -> None:
    free, hot = stages
    assert hot.limit_C is not None and free.exact.thermal.peak_C > hot.limit_C
    assert hot.limited is not None and hot.limited.thermal.peak_C <= hot.limit_C + 1e-6
    s = thermal_summary(hot)
    assert s["constrained_peak_C"] <= s["limit_C"] + 1e-6 < s["peak_C"]
    assert s["eq2_ratio"] == pytest.approx(hot.limited.objective / hot.exact.objective)
    assert set(hot.served) == {"unconstrained", "thermal-limit"}
    assert all(v.served.throughput_tps > 0 for v in hot.served.values())


def test_thermal_pages_have_no_overlapping_text(stages: tuple[ThermalFinalist, ThermalFinalist]) -> None:
    for t in stages:
        pages = Pages()
        thermal_page(pages, t)
        assert len(pages.pages) == 1 and overlaps(pages) == []
    assert "costs" in pages.text(0) and f"Limit {stages[1].limit_C:g} degC" in pages.text(0)


@pytest.mark.parametrize(("thermal", "field"), [({"limit_C": -5}, "thermal.limit_C"),
                                                 ({"utilization": 1.5}, "thermal.utilization"),
                                                 ({"sink": 1}, "thermal.sink")])
def test_bad_thermal_settings_name_the_field(tmp_path: Path, thermal: dict, field: str) -> None:
    with pytest.raises(SpecError) as err:
        _scenario(tmp_path, thermal)
    assert field in str(err.value)


def test_heat_sink_override_raises_the_mean_spreader_temperature_by_q_dr(
        tmp_path: Path, stages: tuple[ThermalFinalist, ThermalFinalist]) -> None:
    """The sink carries the whole power Q (energy balance), spread over the n cells as n R_sink each in series with
    half the spreader: the mean spreader rise is Q R_sink + const, so doubling R_sink adds Q R_sink to it."""
    free, _ = stages
    r_sink = yaml.safe_load((instances_dir() / "thermal" / "package.yaml").read_text())["heat_sink_resistance"]
    sc = _scenario(tmp_path, {"heat_sink_K_per_W": 2 * r_sink["value"]})
    hotter = _stage(sc)
    q_W = float(free.exact.thermal.power_W.sum())
    assert hotter.exact.decision == free.exact.decision
    delta = hotter.exact.thermal.spreader_C.mean() - free.exact.thermal.spreader_C.mean()
    assert delta == pytest.approx(q_W * r_sink["value"], rel=1e-9)
    assert (hotter.exact.thermal.die_C > free.exact.thermal.die_C).all()


def test_limit_the_free_layout_meets_costs_nothing(tmp_path: Path,
                                                   stages: tuple[ThermalFinalist, ThermalFinalist]) -> None:
    """A limit above the exact layout's peak: that layout is feasible with the limit, so the constrained one is no
    worse in Eq. 2 (the exact layout is its start, or its proof when proven optimal)."""
    free, _ = stages
    loose = _stage(_scenario(tmp_path, {"limit_C": round(free.exact.thermal.peak_C + 1.0, 3)}))
    assert loose.limited is not None and loose.limited.thermal.peak_C <= loose.limit_C
    assert thermal_summary(loose)["eq2_ratio"] <= 1 + 1e-9
