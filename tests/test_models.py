"""Model descriptors against published parameter counts (external truth: vendor totals)."""

from __future__ import annotations

import json

import pytest

from chipdse.core.errors import SpecError
from chipdse.core.models import (
    attention_flops_per_context_token,
    available_models,
    causal_attention_flops,
    kv_cache_bytes_per_token,
    load_model,
)
from chipdse.evaluators.snake import load_card
from chipdse.evaluators.snake_serving import kv_bytes_per_token
from tests.conftest import shared_or_skip

# Published totals, with their source (independent of the cards' own recount).
PUBLISHED = {
    # nvidia/Nemotron-H-4B-Base-8K: 4.49B (HF safetensors metadata), arXiv:2504.03624 family
    "nemotron-h-4b": 4.49e9,
    # meta-llama/Meta-Llama-3-8B: 8,030,261,248 parameters (exact tensor count of the checkpoint)
    "llama-3-8b": 8_030_261_248,
    # state-spaces/mamba2-2.7b: "2.7B" (Mamba-2 paper, Dao & Gu 2024)
    "mamba2-2.7b": 2.7e9,
    # ai21labs/Jamba-tiny-dev: "319M parameters" (AI21 model card)
    "jamba-tiny-dev": 319e6,
    # Zyphra/Zamba2-7B: "7.4B parameters" (Zamba2 suite technical report, arXiv:2411.15242)
    "zamba2-7b": 7.4e9,
}


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_parameter_count_matches_published_within_1pct(key: str) -> None:
    m = load_model(key)
    assert abs(m.total_params / PUBLISHED[key] - 1) < 0.01


@pytest.mark.parametrize("key", available_models())
def test_every_bundled_card_matches_its_published_total(key: str) -> None:
    if key in SERVING_REFUSES:  # read by the SNAKE / NOVA views only; the serving model refuses them clearly
        with pytest.raises(SpecError, match=SERVING_REFUSES[key]):
            load_model(key)
        return
    m = load_model(key)
    assert abs(m.total_params / m.published_params - 1) < 0.01


SERVING_REFUSES = {
    "nemotron3-super-120b-a12b": "multi-token-prediction",  # MTP module
}


def test_nova_view_counts_every_nova_model_within_1pct_of_its_published_total() -> None:
    from chipdse.evaluators.nova_model import load_nova_model

    # NOVA Table II models; Nemotron3-Super's exact 123,611,033,088 includes its MTP module
    for key in ("nemotron3-nano-30b-a3b", "nemotron3-super-120b-a12b", "falcon-h1-7b", "qwen3-30b-a3b"):
        m = load_nova_model(key)
        assert abs(m.total_params / m.published_params - 1) < 0.01, key
    assert load_nova_model("nemotron3-super-120b-a12b").total_params == 123_611_033_088


def test_exact_counts_where_vendor_publishes_exact_totals() -> None:
    # Llama-3-8B and Nemotron-H-8B have exact published tensor counts: the block sum must hit them exactly.
    assert load_model("llama-3-8b").total_params == 8_030_261_248
    assert load_model("nemotron-h-8b").total_params == 8_100_852_736


def test_block_structure_of_nemotron_h_4b() -> None:
    m = load_model("nemotron-h-4b")
    kinds = [b.kind for b in m.blocks]
    # hybrid_override_pattern "M-M-M-M*-..." has 24 Mamba-2, 4 attention and 24 MLP layers
    assert kinds.count("mamba2") == 24 and kinds.count("attention") == 4 and kinds.count("mlp") == 24
    # KV cache per token: 4 layers x 2 (K,V) x 8 KV heads x 128 head_dim x 2 bytes = 16384 bytes
    assert m.kv_bytes_per_token() == 4 * 2 * 8 * 128 * 2
    # SSM state per request: 24 layers x (d_inner 7168 x d_state 128 + conv (7168 + 2*8*128) x 3) x 2 bytes
    assert m.state_bytes_per_request() == 24 * (7168 * 128 + (7168 + 2 * 8 * 128) * 3) * 2


def test_table_iv_models_have_hydras_block_counts() -> None:
    # HYDRA Sec. VI-C: "Jamba contains 2 Attention and 14 Mamba blocks, Zamba contains 13 Attention and 81 Mamba
    # blocks, and Nemotron-H contains 4 Attention and 24 Mamba blocks."
    for key, attn, ssm in (("jamba-tiny-dev", 2, 14), ("zamba2-7b", 13, 81), ("nemotron-h-4b", 4, 24)):
        kinds = [b.kind for b in load_model(key).blocks]
        assert kinds.count("attention") == attn
        assert kinds.count("mamba1") + kinds.count("mamba2") == ssm


def test_zamba2_shared_blocks_are_stored_once_and_read_by_every_hybrid_layer() -> None:
    m = load_model("zamba2-7b")
    attn = [b for b in m.blocks if b.kind == "attention"]
    # 2 shared transformer blocks (num_mem_blocks) serve 13 hybrid layers: weights stored by the first two uses
    assert sum(b.params > 0 for b in attn) == 2
    # every use reads the whole block: q, k, v on the 2H = 7168 wide input (3 x 7168^2), o back to H (7168 x 3584)
    assert all(b.streamed_params == 3 * 7168**2 + 7168 * 3584 + 7168 for b in attn)
    # KV cache on the 13 hybrid layers only: 2 (K,V) x 32 heads x 224 head_dim x 2 bytes each
    assert m.kv_bytes_per_token() == 13 * 2 * 32 * 224 * 2


def test_jamba_mamba1_state_per_request() -> None:
    # 14 Mamba-1 layers x (d_inner 1024 x d_state 16 + conv 1024 x 3) x 2 bytes
    assert load_model("jamba-tiny-dev").state_bytes_per_request() == 14 * (1024 * 16 + 1024 * 3) * 2


def test_recount_agrees_with_shared_cards() -> None:
    folder = shared_or_skip("models")
    for key in ("nemotron-h-4b", "llama-3-8b", "mamba2-2.7b", "jamba-tiny-dev", "zamba2-7b"):
        card = json.loads((folder / f"{key}.json").read_text())
        assert abs(load_model(key).total_params / card["computed_params_total"] - 1) < 1e-3


def test_unknown_model_name_lists_bundled_models() -> None:
    with pytest.raises(SpecError, match="nemotron-h-4b"):
        load_model("gpt-17")


def test_kv_cache_bytes_per_token_of_llama3() -> None:
    """Llama-3-8B: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes = 128 KiB per token; Llama-3-70B: 80 layers,
    320 KiB, and 40 KiB per device with 8-way tensor parallelism (one KV head each)."""
    assert kv_cache_bytes_per_token(8, 128, 2) == 4096
    assert load_model("llama-3-8b").kv_bytes_per_token() == 128 * 1024
    card = load_card("llama-3-70b")
    assert kv_bytes_per_token(card, 1) == 320 * 1024 and kv_bytes_per_token(card, 8) == 40 * 1024


def test_causal_attention_flops_counts_the_lower_triangle() -> None:
    """Token i attends to i tokens (itself and the earlier ones): sum_i 4 h d i = 4 h d L (L + 1) / 2; the
    formula keeps the L^2 / 2 leading term (relative error 1 / L)."""
    heads, head_dim, length = 32, 128, 1024
    per_ctx = attention_flops_per_context_token(heads, head_dim)
    assert per_ctx == 2 * head_dim * heads * 2  # QK^T and PV, one multiply-add (2 FLOPs) per element each
    brute = sum(per_ctx * i for i in range(1, length + 1))
    got = causal_attention_flops(per_ctx, length**2)
    assert got < brute and abs(brute - got) / brute == pytest.approx(1 / (length + 1))
