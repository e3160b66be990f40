"""SNAKE energy and power (evaluators/snake_energy.py) against hand computations from the paper's Fig. 11 and the
energy constants' files."""

from __future__ import annotations

import math

import pytest

from chipdse.core.errors import SpecError
from chipdse.evaluators.energy import EnergyConstant, EnergyTable, load_energy_table
from chipdse.evaluators.snake import SNAKE, Design, GemmOp, SnakeError
from chipdse.evaluators.snake_energy import (
    energy_model,
    gpu_step_energy,
    logic_J,
    op_energy,
    peak_power_W,
    step_energy,
)
from chipdse.evaluators.snake_pu import STRATUM, NmpTemplate, schedule_op

SRAM_7NM_J = 0.31e-12 * 7 / 45  # common.yaml sram_read (32 KB bank, 45 nm) scaled linearly to 7 nm
DRAM_BIT_J = (909.0 / 8192 + 0.2 + 0.05) * 1e-12  # 1 KB page activation read whole + column + TSV, pJ -> J


def test_per_action_energies_come_from_the_paper_power_breakdown_by_hand() -> None:
    em = energy_model(STRATUM)
    pes, f = 16 * 4 * 64 * 64, 800e6
    buffers_w = 64 * f * (8 + 512) * 16 * SRAM_7NM_J  # 8 x 512 reference: 520 FP16 operands per cycle per core
    assert em.mac_J == pytest.approx((38.5 - buffers_w) / (pes * f), rel=1e-12)
    assert em.vector_op_J == pytest.approx(14.2 / (64 * 64 * f), rel=1e-12)
    assert em.control_pe_cycle_J == pytest.approx(4.4 / (pes * f), rel=1e-12)
    assert em.noc_bit_hop_J == pytest.approx(4.8 / (48 * 64e9 * 8), rel=1e-12)  # 24 mesh links, both ways
    assert em.dram_bit_J == pytest.approx(DRAM_BIT_J, rel=1e-12)


def test_power_breakdown_sums_to_its_total_and_snake_reproduces_fig11() -> None:
    em = energy_model(STRATUM)
    parts = peak_power_W(SNAKE, STRATUM, em)
    assert parts == pytest.approx({"matrix": 38.5, "vector": 14.2, "pe_control": 4.4, "noc": 4.8}, rel=1e-12)
    # the paper's parts add to 61.9 W; it prints 61.8 W (rounding of the parts)
    assert sum(parts.values()) == pytest.approx(61.9, rel=1e-12)


def test_24_TBps_meets_the_62_W_budget_and_30_34_TBps_does_not() -> None:
    em = energy_model(STRATUM)
    peak = sum(peak_power_W(SNAKE, STRATUM, em).values())
    assert em.logic_budget_W(24.0) == pytest.approx(62.0, rel=1e-12)
    # the 6.34 TB/s more DRAM traffic heats the same stack: 8 bits x 6.34e12 B/s x 0.361 pJ/bit = 18.3 W less
    uncapped = 62.0 - 6.34e12 * 8 * DRAM_BIT_J
    assert em.logic_budget_W(30.34) == pytest.approx(uncapped, rel=1e-12)
    assert peak <= em.logic_budget_W(24.0)
    assert peak > em.logic_budget_W(30.34)
    # and at the fixed arrays' 1 GHz SNAKE would not fit either: the cores' power grows with the clock (the NoC's
    # links keep their rate)
    fast = sum(peak_power_W(Design("snake1g", "systolic", 1e9, SNAKE.shapes), STRATUM, em).values())
    assert fast == pytest.approx((61.9 - 4.8) * 1e9 / 800e6 + 4.8, rel=1e-12) and fast > 62.0


def test_one_decode_step_energy_by_hand_on_a_tiny_array() -> None:
    # 4 PUs of one 4 x 4 OS array at 1 GHz; one GEMM (4 x 8) x (8 x 16), three times per step
    t = NmpTemplate("tiny", pus=4, cores_per_pu=1, dram_TBps=1.0, pu_area_mm2=1.0, link_GBps=64.0,
                    link_latency_s=0.0, bytes_per_element=2, mesh_side=2)
    tiny = Design("tiny4x4", "systolic", 1e9, ((4, 4),), ("os",))
    op = GemmOp("proj", 4, 8, 16, 3, nonlinear=1.0)
    em = energy_model(STRATUM)
    s = schedule_op(op, tiny, t)
    assert (s.mode, s.dims, s.units) == ("OS-S", (4, 8, 4), 4)  # n split over the 4 cores: 4 columns each
    # per core, OS on 4 x 4: A (4 x 8) and B (8 x 4) read once (one fold each way), C (4 x 4) written once
    buffer_elements = 4 * (4 * 8 + 8 * 4 + 4 * 4)
    e = op_energy(s, tiny, t, em).parts_J
    assert e["mac"] == pytest.approx(4 * 8 * 16 * em.mac_J, rel=1e-12)
    assert e["sram"] == pytest.approx(buffer_elements * 16 * em.sram_bit_J, rel=1e-12)
    assert e["vector"] == pytest.approx(4 * 16 * 1.0 * em.vector_op_J, rel=1e-12)
    assert e["control"] == pytest.approx(4 * 16 * 1e9 * s.compute_s * em.control_pe_cycle_J, rel=1e-12)
    # all-gather of A (4 x 8 FP16 = 64 B) around the ring of 4 PUs: 3 x 64 B over one hop each
    assert e["noc"] == pytest.approx(3 * 64 * 8 * em.noc_bit_hop_J, rel=1e-12)
    assert e["dram"] == pytest.approx(buffer_elements * 16 * DRAM_BIT_J, rel=1e-12)
    step_s, total = step_energy([op], tiny, t, em)
    assert step_s == pytest.approx(3 * s.time_s, rel=1e-12)
    assert total.total_J == pytest.approx(3 * sum(e.values()), rel=1e-12)
    assert logic_J(total) == pytest.approx(3 * (sum(e.values()) - e["dram"]), rel=1e-12)


def test_mac_tree_pays_block_rereads_and_its_wiring_by_hand() -> None:
    # one 16x16x16 tree per PU: per PU n = 64 / 16 = 4; A re-read per 16 columns (once), B per 16 rows (once)
    op = GemmOp("proj", 8, 32, 64, 1)
    tree = Design("mac_tree", "mac_tree", 1e9, lanes=16)
    em = energy_model(STRATUM)
    s = schedule_op(op, tree, STRATUM)
    e = op_energy(s, tree, STRATUM, em).parts_J
    assert e["mac"] == pytest.approx(8 * 32 * 64 * (em.mac_J + 0.09e-12), rel=1e-12)
    per_pu = 8 * 32 * math.ceil(4 / 16) + 32 * 4 * math.ceil(8 / 16) + 8 * 4
    assert e["sram"] == pytest.approx(16 * per_pu * 16 * em.sram_bit_J, rel=1e-12)


def test_gpu_step_energy_by_hand() -> None:
    em = energy_model(STRATUM)
    op = GemmOp("proj", 2, 1000, 500, 4)
    e = gpu_step_energy([op], 1e-3, em).parts_J
    assert e["compute"] == pytest.approx(4 * 2 * 2 * 1000 * 500 * 0.71e-12, rel=1e-12)
    assert e["hbm"] == pytest.approx(4 * (2 * 1000 + 1000 * 500 + 2 * 500) * 16 * 3.9e-12, rel=1e-12)
    assert e["static"] == pytest.approx(70.0 * 1e-3, rel=1e-12)


def test_a_matrix_power_below_its_buffer_reads_is_refused() -> None:
    tab = load_energy_table("common", "snake")
    low = EnergyTable({**tab.constants, "snake_matrix_power": EnergyConstant(10.0, "W", "test")})
    with pytest.raises(SnakeError, match="snake_matrix_power"):
        energy_model(STRATUM, low)
    missing = EnergyTable({k: v for k, v in tab.constants.items() if k != "snake_noc_power"})
    with pytest.raises(SpecError, match="snake_noc_power"):
        energy_model(STRATUM, missing)
