"""The shared energy core (issue 17): loader errors, the node-scaling rule, breakdown arithmetic, power helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.core.specs import ChipletLibrary, load_spec
from chipdse.evaluators.energy import PJ, EnergyBreakdown, load_energy_table, node_scale
from chipdse.evaluators.energy_hydra import chiplet_power_W, hbm_power_W, sim_energy
from chipdse.evaluators.sim_results import LatencyStats, SimResult


def _write(tmp_path: Path, text: str, name: str = "scope.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


GOOD = "x_link:\n  value: 1.5\n  unit: pJ/bit\n  source: 'a paper, Table 2'\n"


def test_common_table_loads_with_sources_and_hydra_link() -> None:
    t = load_energy_table()
    assert len(t.keys()) >= 20
    assert all(t.constant(k).source for k in t.keys())
    # HYDRA Sec. VI-A, ref. [42]: the D2D link is a 1.17 pJ/b GRS link
    assert t.get("d2d_grs") == pytest.approx(1.17)
    assert "[42]" in t.constant("d2d_grs").source
    assert "[43]" in t.constant("d2d_ucie_advanced").source
    for gen in ("hbm3", "hbm3e", "hbm4"):
        for action in ("activation", "read", "write", "static"):
            assert f"{gen}_{action}" in t.constants


def test_unknown_field_names_file_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD + "  colour: red\n")
    with pytest.raises(SpecError, match=r"scope\.yaml: x_link\.colour: no such field"):
        load_energy_table(path)


def test_missing_source_names_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "x_link:\n  value: 1.5\n  unit: pJ/bit\n")
    with pytest.raises(SpecError, match=r"scope\.yaml: x_link\.source"):
        load_energy_table(path)


def test_blank_source_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "x_link:\n  value: 1.5\n  unit: pJ/bit\n  source: '   '\n")
    with pytest.raises(SpecError, match=r"x_link\.source"):
        load_energy_table(path)


def test_bad_unit_names_field_and_value(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("pJ/bit", "furlongs"))
    with pytest.raises(SpecError, match=r"x_link\.unit: a unit among .*got 'furlongs'"):
        load_energy_table(path)


def test_negative_value_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("1.5", "-1.5"))
    with pytest.raises(SpecError, match=r"x_link\.value"):
        load_energy_table(path)


def test_key_in_two_scopes_names_both_files(tmp_path: Path) -> None:
    a = _write(tmp_path, GOOD, "a.yaml")
    b = _write(tmp_path, GOOD, "b.yaml")
    with pytest.raises(SpecError, match=r"b\.yaml: x_link: each energy key once.*a\.yaml"):
        load_energy_table(a, b)


def test_get_unknown_key_is_a_clear_error(tmp_path: Path) -> None:
    t = load_energy_table(_write(tmp_path, GOOD))
    with pytest.raises(SpecError, match=r"scope\.yaml: no_such_key: an energy constant"):
        t.get("no_such_key")


def test_integer_value_reads_as_float(tmp_path: Path) -> None:
    t = load_energy_table(_write(tmp_path, GOOD.replace("1.5", "2")))
    assert t.get("x_link") == 2.0


def test_node_scale_follows_the_linear_rule_by_hand() -> None:
    # the rule: E(to) = E(from) * to / from  (C V^2, capacitance linear in feature size)
    assert node_scale(0.75, 45, 22) == pytest.approx(0.75 * 22 / 45)
    assert node_scale(1.0, 7, 14) == pytest.approx(2.0)
    assert node_scale(3.0, 16, 16) == 3.0
    with pytest.raises(ValueError, match="positive"):
        node_scale(1.0, 0, 7)


def test_get_scales_only_entries_with_a_node(tmp_path: Path) -> None:
    text = GOOD + "x_mac:\n  value: 1.0\n  unit: pJ/FLOP\n  node_nm: 40\n  source: 'assumption: test'\n"
    t = load_energy_table(_write(tmp_path, text))
    assert t.get("x_mac", node_nm=10) == pytest.approx(0.25)
    assert t.get("x_link", node_nm=10) == 1.5  # links do not scale with the logic node


def test_breakdown_arithmetic() -> None:
    a = EnergyBreakdown({"compute": 1.0, "hbm": 2.0})
    b = EnergyBreakdown({"hbm": 0.5, "d2d": 4.0})
    s = a + b
    assert s.parts_J == {"compute": 1.0, "hbm": 2.5, "d2d": 4.0}
    assert s.total_J == pytest.approx(7.5)
    assert a.scaled(0.5).parts_J == {"compute": 0.5, "hbm": 1.0}
    assert s.to_dict()["total"] == pytest.approx(7.5)
    assert (a + EnergyBreakdown()).parts_J == a.parts_J
    assert PJ * 1e12 == pytest.approx(1.0)


def _library() -> ChipletLibrary:
    return load_spec(ChipletLibrary, instances_dir() / "chiplets" / "hydra.yaml")


def test_hbm_power_by_hand() -> None:
    lib, t = _library(), load_energy_table()
    # 896 GB/s x 8 bit/B x (read + io + activation / 8192 bit) pJ/bit + static
    per_bit = t.get("hbm3_read") + t.get("hbm_io") + t.get("hbm3_activation") / 8192
    full = 896e9 * 8 * per_bit * 1e-12 + t.get("hbm3_static")
    got = hbm_power_W(lib.memory, t, np.array([0.0, 1.0]))
    assert got[0] == pytest.approx(t.get("hbm3_static"))
    assert got[1] == pytest.approx(full)
    with pytest.raises(ValueError, match="utilization"):
        hbm_power_W(lib.memory, t, 1.5)


def test_chiplet_power_is_static_at_idle_and_linear_in_utilization() -> None:
    lib, t = _library(), load_energy_table()
    ad = lib.by_name("Ad")
    p = chiplet_power_W(ad, lib, t, 100.0, np.array([0.0, 0.5, 1.0]))
    # idle: leakage of the 121 mm^2 die + 4 ports x 1 PHY (100 GB/s = 4 x 25 GB/s per port -> 4 PHYs each)
    n_phy = 4 * 4
    assert p[0] == pytest.approx(121.0 * t.get("logic_static") + n_phy * t.get("d2d_phy_static"))
    assert p[1] - p[0] == pytest.approx((p[2] - p[0]) / 2)
    assert 1.0 < p[2] < 200.0  # a 121 mm^2 22 nm die: watts to tens of watts, not kW


def _run(util_chip: dict[str, float], util_link: dict[tuple[int, int], float], util_hbm: dict[int, float],
         tokens: int, duration_s: float) -> SimResult:
    stats = LatencyStats(None, None, None, 0)
    return SimResult(duration_s=duration_s, arrived=0, finished=0, in_system=0, output_tokens=tokens,
                     throughput_tps=0.0, ttft=stats, tbt=stats, e2e=stats, chiplet_utilization=util_chip,
                     link_utilization=util_link, hbm_port_utilization=util_hbm, hbm_occupancy_s=np.zeros(1),
                     hbm_occupancy_bytes={}, hbm_capacity_bytes={}, preemptions=0, n_events=0, wall_s=0.0,
                     requests=pd.DataFrame())


def test_simulated_run_energy_per_chiplet_link_and_stack_by_hand() -> None:
    lib, t = _library(), load_energy_table()
    dur, d2d = 10.0, 256.0
    run = _run({"Ad@7": 0.5, "Mp@12": 0.0}, {(7, 12): 0.25}, {0: 1.0}, tokens=2000, duration_s=dur)
    e = sim_energy(run, lib, t, d2d)
    idle_ad = float(chiplet_power_W(lib.by_name("Ad"), lib, t, d2d, 0.0))
    full_ad = float(chiplet_power_W(lib.by_name("Ad"), lib, t, d2d, 1.0))
    assert e.per_chiplet_J["Ad@7"] == pytest.approx((idle_ad + 0.5 * (full_ad - idle_ad)) * dur)
    assert e.per_chiplet_J["Mp@12"] == pytest.approx(float(chiplet_power_W(lib.by_name("Mp"), lib, t, d2d, 0.0))
                                                     * dur)
    # a quarter of 10 s at 256 GB/s = 640 GB moved, x 8 bit x (1.17 + router) pJ/bit
    router = t.get("noi_router", 22)
    assert e.per_link_J[(7, 12)] == pytest.approx(640e9 * 8 * (1.17 + router) * 1e-12)
    assert e.per_hbm_J[0] == pytest.approx(float(hbm_power_W(lib.memory, t, 1.0)) * dur)
    assert e.breakdown.total_J == pytest.approx(sum(e.per_chiplet_J.values()) + e.per_link_J[(7, 12)]
                                                + e.per_hbm_J[0])
    assert e.joules_per_token == pytest.approx(e.breakdown.total_J / 2000)
