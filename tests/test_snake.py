"""SNAKE decode evaluator: per-operator shape choice, Table 1 GEMM shapes, MAC-tree cycles (issue 6)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.evaluators.snake import (
    SA_8X288,
    SA_48X48,
    SNAKE,
    SNAKE_DATAFLOWS,
    SNAKE_SHAPES,
    GemmOp,
    SnakeError,
    best_shape,
    decode_gemms,
    load_card,
    mac_tree_cycles,
    op_time_s,
    speedups,
)
from chipdse.evaluators.systolic import compute_cycles
from tests.conftest import shared_or_skip

dims = st.integers(min_value=1, max_value=20_000)


@settings(deadline=None, max_examples=50)
@given(m=st.integers(min_value=1, max_value=128), k=dims, n=dims)
def test_best_shape_never_slower_than_any_fixed_choice(m: int, k: int, n: int) -> None:
    """Issue 6: the per-operator choice is at least as fast as every fixed (shape, dataflow) it chooses from."""
    choice = best_shape(m, k, n)
    for rows, cols in SNAKE_SHAPES:
        for flow in SNAKE_DATAFLOWS:
            assert choice.cycles <= compute_cycles(m, k, n, rows, cols, flow)
    assert choice.cycles == compute_cycles(m, k, n, choice.rows, choice.cols, choice.dataflow)
    assert choice.time_s == pytest.approx(choice.cycles / 800e6)


def test_best_shape_small_m_picks_a_short_side_of_8() -> None:
    """M = 8 under OS on 8x512: one row fold, ceil(1280 / 512) = 3 column folds of 8192 + 8 + 512 - 2 cycles."""
    choice = best_shape(8, 8192, 1280)
    assert (choice.rows, choice.cols, choice.dataflow) == (8, 512, "os")
    assert choice.cycles == 3 * (8192 + 8 + 512 - 2) - 1


def test_best_shape_rejects_empty_candidates() -> None:
    """Empty shape lists and non-positive clocks are user errors."""
    with pytest.raises(SnakeError, match="at least one shape"):
        best_shape(8, 8, 8, shapes=())
    with pytest.raises(SnakeError, match="freq_hz"):
        best_shape(8, 8, 8, freq_hz=0.0)


def test_mac_tree_cycles_hand_cases() -> None:
    """16x16x16 tree: ceil(m/16) ceil(n/16) ceil(k/16) block products plus log2(16) = 4 pipeline stages."""
    # (8, 8192, 1280): 1 * 80 * 512 = 40960 blocks, + 4.
    assert mac_tree_cycles(8, 8192, 1280) == 40964
    # (17, 16, 16): 2 * 1 * 1 = 2 blocks, + 4.
    assert mac_tree_cycles(17, 16, 16) == 6
    # 8-lane tree: (8, 8, 8) is 1 block + log2(8) = 3.
    assert mac_tree_cycles(8, 8, 8, lanes=8) == 4
    with pytest.raises(SnakeError, match="positive integer"):
        mac_tree_cycles(0, 16, 16)


def test_op_time_splits_n_over_cores() -> None:
    """64 cores share N = 1280 as ceil(1280 / 64) = 20 columns each; the fixed arrays run at 1 GHz."""
    op = GemmOp("qkv", 8, 8192, 1280, 1)
    assert op_time_s(op, SA_48X48, cores=64) == pytest.approx(best_shape(8, 8192, 20, ((48, 48),), freq_hz=1e9).time_s)
    assert op_time_s(op, SNAKE, cores=1) == pytest.approx(best_shape(8, 8192, 1280).time_s)
    assert op_time_s(op, SA_8X288, cores=1) <= op_time_s(op, SA_48X48, cores=1)


def _shape(op: GemmOp) -> tuple[str, int, int, int, int]:
    return op.name, op.m, op.k, op.n, op.count


def test_llama3_70b_decode_gemms_at_tp8() -> None:
    """Llama-3-70B, TP = 8, batch 8 (hidden 8192, 64 q / 8 kv heads of 128, FFN 28672 gated, 80 layers)."""
    shared_or_skip("models", "llama-3-70b.json")
    ops = {op.name: op for op in decode_gemms(load_card("llama-3-70b"), batch=8, tp=8)}
    # QKV: N = (64 + 2 * 8) * 128 / 8 = 80 * 16 = 1280, K = hidden = 8192.
    assert _shape(ops["qkv"]) == ("qkv", 8, 8192, 1280, 80)
    # Attention output: K = 64 * 128 / 8 = 1024, N = 8192.
    assert _shape(ops["attn_out"]) == ("attn_out", 8, 1024, 8192, 80)
    # Gate and up fused: N = 2 * 28672 / 8 = 7168.
    assert _shape(ops["ffn_up_gate"]) == ("ffn_up_gate", 8, 8192, 7168, 80)
    # Down: K = 28672 / 8 = 3584, N = 8192.
    assert _shape(ops["ffn_down"]) == ("ffn_down", 8, 3584, 8192, 80)
    assert set(ops) == {"qkv", "attn_out", "ffn_up_gate", "ffn_down"}


def test_qwen3_moe_expected_tokens_per_expert() -> None:
    """Qwen3-30B-A3B: 128 experts, top-8, expert FFN 768 -> 96 per device at TP = 8."""
    shared_or_skip("models", "qwen3-30b-a3b.json")
    card = load_card("qwen3-30b-a3b")
    # Batch 8: 8 * 8 = 64 routed tokens < 128 experts -> 64 experts with 1 token each, 48 layers.
    ops = {op.name: op for op in decode_gemms(card, batch=8)}
    assert _shape(ops["expert_up_gate"]) == ("expert_up_gate", 1, 2048, 2 * 96, 48 * 64)
    assert _shape(ops["expert_down"]) == ("expert_down", 1, 96, 2048, 48 * 64)
    # Batch 64: 512 routed tokens over 128 experts -> 512 / 128 = 4 tokens each.
    ops = {op.name: op for op in decode_gemms(card, batch=64)}
    assert _shape(ops["expert_down"]) == ("expert_down", 4, 96, 2048, 48 * 128)
    assert _shape(ops["router"]) == ("router", 64, 2048, 128, 48)


def test_deepseek_mla_and_shared_experts() -> None:
    """DeepSeek-V2 MLA at TP = 8: q_b N = 128 * (128 + 64) / 8 = 3072; kv_b N = 128 * (128 + 128) / 8 = 4096."""
    shared_or_skip("models", "deepseek-v2.json")
    ops = {op.name: op for op in decode_gemms(load_card("deepseek-v2"), batch=16, lm_head=True)}
    assert _shape(ops["q_b"]) == ("q_b", 16, 1536, 3072, 60)
    assert _shape(ops["kv_a"]) == ("kv_a", 16, 5120, 512 + 64, 60)
    assert _shape(ops["kv_b"]) == ("kv_b", 16, 512, 4096, 60)
    # Two shared experts of 1536: N = 2 * 2 * 1536 / 8 = 768.
    assert _shape(ops["shared_up_gate"]) == ("shared_up_gate", 16, 5120, 768, 59)
    assert _shape(ops["lm_head"]) == ("lm_head", 16, 5120, 102400 // 8, 1)


def test_unsupported_layer_type_and_missing_card() -> None:
    """Mamba layers and unknown cards raise SnakeError with the offending name."""
    with pytest.raises(SnakeError, match="not supported"):
        decode_gemms({"name": "x", "hidden_size": 64, "layer_counts": {"mixer:mamba2": 2}}, batch=8)
    shared_or_skip("models")
    with pytest.raises(SnakeError, match="not found"):
        load_card("no-such-model")


def test_speedups_are_positive_for_paper_models() -> None:
    """Every baseline gets a finite positive speedup entry."""
    shared_or_skip("models", "llama-3-70b.json")
    result = speedups("llama-3-70b", 16)
    assert set(result) == {"mac_tree", "sa48x48", "sa8x288"}
    assert all(0 < v < 1e3 for v in result.values())
