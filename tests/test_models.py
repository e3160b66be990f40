"""Model descriptors against published parameter counts (external truth: vendor totals)."""

from __future__ import annotations

import json

import pytest

from chipdse.errors import SpecError
from chipdse.models import available_models, load_model
from tests.conftest import shared_or_skip

# Published totals, with their source (independent of the cards' own recount).
PUBLISHED = {
    # nvidia/Nemotron-H-4B-Base-8K: 4.49B (HF safetensors metadata), arXiv:2504.03624 family
    "nemotron-h-4b": 4.49e9,
    # meta-llama/Meta-Llama-3-8B: 8,030,261,248 parameters (exact tensor count of the checkpoint)
    "llama-3-8b": 8_030_261_248,
    # state-spaces/mamba2-2.7b: "2.7B" (Mamba-2 paper, Dao & Gu 2024)
    "mamba2-2.7b": 2.7e9,
}


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_parameter_count_matches_published_within_1pct(key: str) -> None:
    m = load_model(key)
    assert abs(m.total_params / PUBLISHED[key] - 1) < 0.01


@pytest.mark.parametrize("key", available_models())
def test_every_bundled_card_matches_its_published_total(key: str) -> None:
    m = load_model(key)
    assert abs(m.total_params / m.published_params - 1) < 0.01


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


def test_recount_agrees_with_shared_cards() -> None:
    folder = shared_or_skip("models")
    for key in ("nemotron-h-4b", "llama-3-8b", "mamba2-2.7b"):
        card = json.loads((folder / f"{key}.json").read_text())
        assert abs(load_model(key).total_params / card["computed_params_total"] - 1) < 1e-3


def test_unknown_model_name_lists_bundled_models() -> None:
    with pytest.raises(SpecError, match="nemotron-h-4b"):
        load_model("gpt-17")
