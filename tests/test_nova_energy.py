"""NOVA energy: one decode step by hand (bytes x pJ/bit + FLOPs x pJ/FLOP + static x time), the energy-first mode
policy, and the Fig. 13 breakdown adding up."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipdse.core.errors import SpecError
from chipdse.evaluators.energy import load_energy_table
from chipdse.evaluators.nova_model import LayerWork, NovaModel, load_nova_model
from chipdse.evaluators.nova_system import (
    GPU,
    NOVA,
    NOVA_ENERGY,
    SYSTEM,
    NovaDesign,
    decode_step_s,
    e2e,
    expert_split_cases,
    routed_tokens,
)

T = load_energy_table("common", "nova")
PJ = 1e-12


def test_gpu_decode_step_energy_by_hand() -> None:
    """One layer of 1e9 GPU-side parameters at batch 8 on the GPU: it reads 2 GB at 3.9 (HBM) + 2.0 (on-chip) pJ/bit,
    runs 2 x 1e9 x 8 FLOPs at 0.71 pJ/FLOP, and the H100 (70 W) and five HBM4 cubes (2 W each) idle through the
    step, which streams at 70% of 5 x 2.048 TB/s."""
    m = NovaModel("toy", "toy", 1e9, {"other": 10**9}, (LayerWork(10**9),), 0)
    step_s = 2e9 / (5 * 2.048e12 * 0.7)
    hand = 2e9 * 8 * (3.9 + 2.0) * PJ + 2e9 * 8 * 0.71 * PJ + (70 + 5 * 2.0) * step_s
    r = decode_step_s(m, GPU, 8, 0)
    assert r["step_s"] == pytest.approx(step_s, rel=1e-12)
    assert r["energy_J"] == pytest.approx(hand, rel=1e-9)
    assert r["e_static_J"] == pytest.approx(80 * step_s, rel=1e-12)


def test_nova_ssm_step_energy_by_hand() -> None:
    """A Mamba-2 layer (d_inner 1024, state 128) at batch 256 on NOVA's Tier-1 (1.25 Op/B: min(32, 1.25 x 16) = 20
    TFLOPS per cube beats Tier-2's 5 and cross-tier's 15): it reads and writes 2 x 1024 x 128 x 2 B per request, each
    bit paying 8 row activations of 818.1 pJ per 8192 bits (all-bank, POC) and 0.3 pJ bank access; 5 x 1024 x 128
    element-wise FLOPs per request at 2.3 pJ x 7/45 (7 nm peri-die); static 70 W + 5 x 1.4 W (NOVA's cube) over the
    step (Tier-1 time plus one 2 us hand-off)."""
    m = NovaModel("toy", "toy", 0.0, {"ssm": 0}, (LayerWork(gpu_params=0, ssm=(1024, 128)),))
    b = 256
    flops, nbytes = 5 * 1024 * 128 * b, 2 * 1024 * 128 * 2 * b
    step_s = flops / 5 / 20e12 + 2e-6
    per_bit = 818.1 * 8 / 8192 + 0.3
    assert T.get("nova_peri_activation") == 818.1 and T.get("nova_bank_read") == 0.3
    hand = nbytes * 8 * per_bit * PJ + flops * 2.3 * 7 / 45 * PJ + (70 + 5 * 1.4) * step_s
    r = decode_step_s(m, NOVA, b, 0)
    assert r["step_s"] == pytest.approx(step_s, rel=1e-12)
    assert r["energy_J"] == pytest.approx(hand, rel=1e-9)
    assert r["e_nmp_activation_J"] == pytest.approx(nbytes * 8 * 818.1 * 8 / 8192 * PJ, rel=1e-12)


def _two_experts() -> tuple[NovaModel, object, dict]:
    """One MoE layer of two experts of 1e8 parameters, top-2, uniform routing: at batch 4 each expert gets 4 tokens
    (4 Op/B). Per cube each expert is 2 x 1e8 x 4 / 5 = 1.6e8 FLOPs: Tier-1 alone runs both at 32 TFLOPS in 10 us,
    Tier-2 alone at min(64, 4 x 4) = 16 TFLOPS in 20 us, one per tier (Tier-1 halved: min(16, 4 x 8) = 16) in
    10 us."""
    m = NovaModel("toy", "toy", 2e8, {"routed_experts": 2 * 10**8}, (LayerWork(0, moe=(2, 2, 10**8)),), 0)
    system = replace(SYSTEM, routing="uniform")
    assert routed_tokens(4, 2, 2, "uniform") == (4, 4)
    return m, system, {c: 1.6e8 / 16e12 for c in expert_split_cases(m, NOVA, 4, system)}


def test_energy_first_picks_tier2_where_it_costs_less() -> None:
    """By hand: an expert's 1.6e9 bits cost, on Tier-1, 4 row sweeps (one per token) x 8 x 818.1 / 8192 pJ plus
    0.3 pJ per bit and 8e8 FLOPs at 0.75 x 7/45 pJ; on Tier-2 one sweep at 818.1 / 8192 pJ plus 1.1 (read) + 0.3
    (base die) pJ per bit and 8e8 FLOPs at 0.75 x 4/45 pJ; static 77 W over 10 us (Tier-1) or 20 us (Tier-2). Tier-1
    alone costs 12.0 mJ, Tier-2 alone 6.3 mJ, the split 8.8 mJ: the energy-first policy takes Tier-2 only, the
    latency-first one Tier-1 (10 us, the first of the tied fastest)."""
    m, system, splits = _two_experts()
    bits, fl = 2e8 * 8, 8e8
    static_W = 70 + 5 * 1.4
    t1 = 2 * (bits * (4 * 8 * 818.1 / 8192 + 0.3) + fl * 0.75 * 7 / 45) * PJ + static_W * 10e-6
    t2 = 2 * (bits * (818.1 / 8192 + 1.1 + 0.3) + fl * 0.75 * 4 / 45) * PJ + static_W * 20e-6
    split = t1 / 2 + t2 / 2 - static_W * 5e-6
    assert t2 < split < t1
    energy_first = decode_step_s(m, NOVA_ENERGY, 4, 0, system, splits)
    latency_first = decode_step_s(m, NOVA, 4, 0, system, splits)
    assert energy_first["nmp_s"] == pytest.approx(20e-6, rel=1e-12)
    assert latency_first["nmp_s"] == pytest.approx(10e-6, rel=1e-12)
    sync_J = static_W * 2e-6
    assert energy_first["energy_J"] == pytest.approx(t2 + sync_J, rel=1e-9)
    assert latency_first["energy_J"] == pytest.approx(t1 + sync_J, rel=1e-9)


def test_fig13_breakdown_adds_up_and_tokens_per_joule() -> None:
    """NOVA's E2E energy of a Nemotron3-Nano batch is its GPU prefill plus L_out decode steps, split into the three
    parts of NOVA Fig. 13; tokens per joule is batch x L_out over it."""
    m = load_nova_model("nemotron3-nano-30b-a3b")
    splits = {c: 1e-3 for c in expert_split_cases(m, NOVA, 8)}
    r = e2e(m, NOVA, 8, 1024, 64, expert_splits=splits)
    parts = r["e2e_gpu_prefill_J"] + r["e2e_nmp_decode_J"] + r["e2e_gpu_decode_J"]
    assert parts == pytest.approx(r["e2e_J"], rel=1e-12)
    assert r["e2e_J"] == pytest.approx(r["prefill_J"] + 64 * r["energy_J"], rel=1e-12)
    assert r["tokens_per_J"] == pytest.approx(8 * 64 / r["e2e_J"], rel=1e-12)
    assert r["power_W"] == pytest.approx(r["energy_J"] / r["step_s"], rel=1e-12)


def test_unknown_priority_rejected() -> None:
    with pytest.raises(SpecError, match="priority"):
        NovaDesign("x", priority="cheapest")


def test_nmp_power_per_cube_by_hand_and_budget() -> None:
    """The SSM layer above at batch 256: its near-memory energy (row activations, bank accesses, peri-die FLOPs,
    no static power) over the step time over the five cubes is 67.4 W per cube by hand: SNAKE Sec. 6.2's 62 W
    budget marks the run over it, a 100 W budget does not; the GPU draws no near-memory power."""
    m = NovaModel("toy", "toy", 0.0, {"ssm": 0, "routed_experts": 0}, (LayerWork(gpu_params=0, ssm=(1024, 128)),))
    b = 256
    flops, nbytes = 5 * 1024 * 128 * b, 2 * 1024 * 128 * 2 * b
    step_s = flops / 5 / 20e12 + 2e-6
    nmp_J = nbytes * 8 * (818.1 * 8 / 8192 + 0.3) * PJ + flops * 2.3 * 7 / 45 * PJ
    hand_W = nmp_J / step_s / 5
    r = e2e(m, NOVA, b, 128, 16)
    assert r["nmp_W_per_cube"] == pytest.approx(hand_W, rel=1e-9)
    assert hand_W == pytest.approx(67.43, abs=0.01)
    assert SYSTEM.cube_nmp_budget_W == 62.0 and r["over_power_budget"]
    assert not e2e(m, NOVA, b, 128, 16, replace(SYSTEM, cube_nmp_budget_W=100.0))["over_power_budget"]
    assert e2e(m, GPU, b, 128, 16)["nmp_W_per_cube"] == 0.0
