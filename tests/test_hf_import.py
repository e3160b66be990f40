"""Hugging Face config.json import (chipdse.core.hf_import, `chipdse model import`) and MLA in the serving model.

External truths: vendors' published parameter totals (cited per model), the bundled cards (the project's
transcriptions, each with its own recount), MLA cache sizes by hand from the DeepSeek-V2 paper, and hand counts of
small configs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.hf_import import import_config
from chipdse.core.models import build_descriptor, load_model
from chipdse.core.paths import instances_dir
from chipdse.evaluators.nova_model import load_nova_model
from chipdse.evaluators.snake import decode_gemms, load_card

DATA = Path(__file__).parent / "data" / "hf_configs"

# Held-out models (not bundled): published total parameters and where they are published.
HELD_OUT = {
    "llama-3.1-405b": 405e9,  # Llama 3 Herd of Models (arXiv:2407.21783), Table 3: 405B
    "qwen2.5-72b": 72.7e9,  # Qwen/Qwen2.5-72B model card: "Number of Parameters: 72.7B"
    "qwen2.5-0.5b": 0.49e9,  # Qwen/Qwen2.5-0.5B model card: "Number of Parameters: 0.49B" (tied embeddings)
    "qwen3-235b-a22b": 235e9,  # Qwen/Qwen3-235B-A22B model card: "235B in total and 22B activated"
    "qwen3-next-80b-a3b": 80e9,  # Qwen/Qwen3-Next-80B-A3B-Instruct model card: "80B in total and 3B activated"
    "deepseek-v3": 671e9,  # DeepSeek-V3 technical report (arXiv:2412.19437): 671B total, 37B activated
    "deepseek-v2-lite": 15.7e9,  # DeepSeek-V2 paper (arXiv:2405.04434) App. B: V2-Lite 15.7B total, 2.4B active
    "gpt-oss-120b": 116.83e9,  # gpt-oss-120b & gpt-oss-20b model card (OpenAI, 2025), Table 1: 116.83B total
    "mistral-7b": 7.3e9,  # Mistral AI, "Mistral 7B" announcement (2023): "a 7.3B parameter model"
    "mixtral-8x7b": 46.7e9,  # Mistral AI, "Mixtral of experts" announcement (2023): "46.7B total parameters"
    "phi-3-mini": 3.8e9,  # Phi-3 technical report (arXiv:2404.14219): phi-3-mini, 3.8 billion parameters
    "jamba-1.5-mini": 52e9,  # AI21 Jamba-1.5 report (arXiv:2408.12570): Mini 52B total, 12B active
    "olmoe-1b-7b": 6.9e9,  # OLMoE paper (arXiv:2409.02060): OLMoE-1B-7B, 6.9B total, 1.3B active parameters
    "phi-3.5-moe": 41.9e9,  # microsoft/Phi-3.5-MoE-instruct model card: 41.9B parameters, 6.6B active
    "granite-3.1-8b": 8.17e9,  # ibm-granite/granite-3.1-8b-instruct on Hugging Face: 8.17B parameters (safetensors)
    "granite-3.1-3b-a800m": 3.3e9,  # ibm-granite/granite-3.1-3b-a800m-instruct model card: 3.3B total, 800M active
}


@pytest.mark.parametrize("key", sorted(HELD_OUT))
def test_held_out_configs_import_within_1pct_of_published_totals(key: str) -> None:
    card, lines = import_config(DATA / "heldout" / f"{key}.json", published_params=HELD_OUT[key])
    assert abs(card["computed_params_total"] / HELD_OUT[key] - 1) < 0.01
    assert not any(line.startswith("warning: the computed count") for line in lines)


# Active counts published beside the totals; ours include the input embedding and the LM head (SOURCE.md),
# so a vendor that leaves the input embedding out (gpt-oss: 5.13B) sits below by its size.
PUBLISHED_ACTIVE = {"qwen3-235b-a22b": 22e9, "deepseek-v3": 37e9, "mixtral-8x7b": 12.9e9, "jamba-1.5-mini": 12e9,
                    "olmoe-1b-7b": 1.3e9, "phi-3.5-moe": 6.6e9}


@pytest.mark.parametrize("key", sorted(PUBLISHED_ACTIVE))
def test_active_counts_within_2pct_of_published(key: str) -> None:
    card, _ = import_config(DATA / "heldout" / f"{key}.json")
    assert abs(card["computed_params_active"] / PUBLISHED_ACTIVE[key] - 1) < 0.02


def test_gpt_oss_active_without_the_input_embedding_is_the_published_5_13b() -> None:
    card, _ = import_config(DATA / "heldout" / "gpt-oss-120b.json")
    embedding = 201088 * 2880  # the input embedding (config: vocab 201088, hidden 2880); the LM head is active
    assert abs((card["computed_params_active"] - embedding) / 5.13e9 - 1) < 0.005


def _bundled(key: str) -> dict:
    return json.loads((instances_dir() / "models" / f"{key}.json").read_text())


ARCH_FIELDS = ("hidden_size", "num_hidden_layers", "vocab_size", "tie_word_embeddings", "layer_mixer", "layer_ffn",
               "layer_counts", "attention_layer_indices", "ssm_layer_indices", "moe_layer_indices",
               "dense_mlp_layer_indices", "num_attention_heads", "num_key_value_heads", "head_dim",
               "intermediate_size", "mlp_gated", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
               "num_shared_experts", "shared_expert_intermediate_size", "moe_latent_size", "first_k_dense_replace",
               "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
               "ssm_state_size", "ssm_d_inner", "ssm_n_groups", "ssm_conv_kernel", "mamba_head_dim",
               "mamba_num_heads", "ssm_chunk_size", "mamba_dt_rank", "vocab_pad_multiple")


@pytest.mark.parametrize("path", sorted((DATA / "bundled").glob("*.json")), ids=lambda p: p.stem)
def test_config_written_from_a_bundled_card_gives_that_card(path: Path) -> None:
    ref = _bundled(path.stem)
    card, _ = import_config(path)
    for field in ARCH_FIELDS:
        if ref.get(field) is not None:
            assert card[field] == ref[field], field
    expected = ref["computed_params_total"]
    if ref.get("num_nextn_predict_layers"):  # the import leaves MTP out (the serving model runs none)
        expected -= load_nova_model(path.stem).params["mtp"]
        assert card["extra"]["mtp_layers_not_counted"] == ref["num_nextn_predict_layers"]
    assert card["computed_params_total"] == expected


def test_bundled_families_are_all_covered() -> None:
    covered = {p.stem for p in (DATA / "bundled").glob("*.json")}
    # OPT (learned positions, LayerNorm biases) is not among the families the import maps
    assert covered == {p.stem for p in (instances_dir() / "models").glob("*.json")} - {"opt-66b"}


def test_mla_kv_bytes_per_token_by_hand() -> None:
    # DeepSeek-V2 Sec. 2.1.2: the cache holds d_c = 512 latent + d_h^R = 64 rope values per token and layer, BF16
    assert load_model("deepseek-v2").kv_bytes_per_token() == 60 * (512 + 64) * 2
    card, _ = import_config(DATA / "heldout" / "deepseek-v3.json")
    assert card["layer_mixer"] == ["mla"] * 61
    model = build_descriptor(card, "deepseek-v3", "test")
    assert model.kv_bytes_per_token() == 61 * (512 + 64) * 2
    # per head, MHA with these heads would cache K (192) and V (128): 128 x 320 values, 71x the latent's 576
    assert 61 * 128 * (192 + 128) * 2 / model.kv_bytes_per_token() == pytest.approx(128 * 320 / 576)


def test_mla_layer_parameters_match_the_cards_independent_recount() -> None:
    # deepseek-v2 card, computed_params_breakdown.per_layer_mla (a recount done when the card was transcribed)
    mla = [b for b in load_model("deepseek-v2").blocks if b.name == "L00.mla"][0]
    assert mla.params == 149_227_520 + 5120  # + the block's RMSNorm (hidden 5120)
    assert mla.kind == "attention"


def test_gpt_oss_biases_sinks_and_router_bias_by_hand() -> None:
    card, _ = import_config(DATA / "heldout" / "gpt-oss-120b.json")
    model = build_descriptor(card, "test", "test")
    h, nh, kv, hd, e, inter = 2880, 64, 8, 64, 128, 2880
    attn = [b for b in model.blocks if b.kind == "attention"][0]
    assert attn.params == h * nh * hd + 2 * h * kv * hd + nh * hd * h + (nh + 2 * kv) * hd + h + nh + h
    moe = [b for b in model.blocks if b.kind == "moe"][0]
    expert = 3 * h * inter + 2 * inter + h  # gate_up (2I x H) and down (H x I) with their biases
    assert moe.params == e * expert + e * h + e + h  # experts, router weight and bias, norm
    assert card["extra"]["layer_types"][:2] == ["sliding_attention", "full_attention"]


def test_qwen2_tied_embedding_and_qkv_bias_by_hand() -> None:
    card, _ = import_config(DATA / "heldout" / "qwen2.5-0.5b.json")
    h, layers, nh, kv, hd, inter, vocab = 896, 24, 14, 2, 64, 4864, 151936
    per_layer = h * nh * hd + 2 * h * kv * hd + nh * hd * h + (nh + 2 * kv) * hd + 3 * h * inter + 2 * h
    assert card["tie_word_embeddings"] is True
    assert card["computed_params_total"] == layers * per_layer + vocab * h + h  # one shared embedding, final norm


def test_plain_mamba_has_no_inner_norms_by_hand() -> None:
    card, _ = import_config(DATA / "heldout" / "mamba-2.8b.json")
    h, e, n, k, r, layers, vocab = 2560, 5120, 16, 4, 160, 64, 50280
    per_layer = 2 * h * e + e * k + e + e * (r + 2 * n) + r * e + e + e * n + e + e * h + h
    assert card["computed_params_total"] == layers * per_layer + vocab * h + h  # tied head


def test_qwen3_next_layers_and_gated_deltanet_state() -> None:
    card, _ = import_config(DATA / "heldout" / "qwen3-next-80b-a3b.json")
    assert card["layer_mixer"].count("attention") == 12 and card["layer_mixer"][3] == "attention"
    model = build_descriptor(card, "test", "test")
    gdn = [b for b in model.blocks if b.name.endswith("gated_deltanet")]
    assert len(gdn) == 36 and all(b.kind == "mamba2" for b in gdn)
    # recurrent state 32 value heads x 128 x 128 + conv (2 x 16 x 128 + 32 x 128) x 3 rows, BF16
    assert gdn[0].state_bytes_per_request == (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3) * 2


def test_kimi_k2_is_the_deepseek_v3_architecture() -> None:
    k2, _ = import_config(DATA / "heldout" / "kimi-k2.json")
    assert k2["hf_model_type"] == "kimi_k2" and k2["layer_ffn"] == ["mlp"] + ["moe"] * 60
    assert k2["num_experts"] == 384 and k2["num_shared_experts"] == 1 and k2["kv_lora_rank"] == 512
    # Kimi-K2 tech report (arXiv:2507.20534): "1.04 trillion total parameters"; the config's tensors give 1.026T
    assert abs(k2["computed_params_total"] / 1.04e12 - 1) < 0.015


def _invoke(*args: str):
    return CliRunner().invoke(app, ["model", "import", *args])


def test_cli_writes_a_card_every_reader_loads(tmp_path: Path) -> None:
    out = tmp_path / "mistral.json"
    result = _invoke(str(DATA / "heldout" / "mistral-7b.json"), "--name", "Mistral-7B", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "7,241,732,096 parameters computed" in result.output
    assert load_model(out).total_params == 7_241_732_096
    card = load_card(out)
    assert {op.name for op in decode_gemms(card, 8)} >= {"qkv", "attn_out", "ffn_up_gate", "ffn_down"}
    assert load_nova_model(str(out)).total_params == 7_241_732_096


def test_cli_prints_the_difference_to_the_published_count(tmp_path: Path) -> None:
    result = _invoke(str(DATA / "heldout" / "mixtral-8x7b.json"), "--published-params", "46.7e9", "--out",
                     str(tmp_path / "m.json"))
    assert result.exit_code == 0 and "difference +0.01%" in result.output and "warning" not in result.output


def test_published_count_more_than_5pct_off_is_a_warning_line(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = _invoke(str(DATA / "heldout" / "mistral-7b.json"), "--published-params", "8e9", "--out", str(out))
    assert result.exit_code == 0 and out.exists()
    warnings = [ln for ln in result.output.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "-9.5%" in warnings[0]


@pytest.mark.parametrize(("text", "needle"), [
    (json.dumps({"model_type": "bert", "num_hidden_layers": 12}), "model_type: one of"),
    (json.dumps({"model_type": "llama", "hidden_size": 64, "vocab_size": 10}), "num_hidden_layers: a value"),
    (json.dumps({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10,
                 "num_attention_heads": 4}), "intermediate_size: a value"),
    (json.dumps({"model_type": "llama", "num_hidden_layers": "2"}), "num_hidden_layers: a whole number"),
    ("{not json", "valid JSON"),
    (json.dumps([1, 2]), "a JSON object"),
    # 4096 / 30 heads is no whole head size: the config must give head_dim (not "attention_head_dim ... none")
    (json.dumps({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 4096, "vocab_size": 10,
                 "num_attention_heads": 30, "num_key_value_heads": 10, "intermediate_size": 64}),
     "head_dim: a value (hidden_size 4096 is not a multiple of num_attention_heads 30"),
])
def test_bad_config_is_one_line_exit_2_nothing_written(tmp_path: Path, text: str, needle: str) -> None:
    config, out = tmp_path / "config.json", tmp_path / "card.json"
    config.write_text(text)
    result = _invoke(str(config), "--out", str(out))
    assert result.exit_code == 2 and not out.exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(config) in lines[0] and needle in lines[0], result.output


@pytest.mark.parametrize("make", [lambda p: p, lambda p: (p.mkdir(), p)[1]], ids=["missing", "directory"])
def test_unreadable_config_is_one_line_exit_2(tmp_path: Path, make) -> None:
    config = make(tmp_path / "config.json")
    result = _invoke(str(config), "--out", str(tmp_path / "card.json"))
    assert result.exit_code == 2 and not (tmp_path / "card.json").exists()
    assert len(result.output.strip().splitlines()) == 1 and str(config) in result.output


def test_unwritable_out_names_the_output(tmp_path: Path) -> None:
    """--out in a missing folder: the line names the output (not the temporary file beside it as an input)."""
    out = tmp_path / "no" / "such" / "card.json"
    result = _invoke(str(DATA / "heldout" / "mistral-7b.json"), "--out", str(out))
    assert result.exit_code == 2 and not out.exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"cannot write output {out}" in lines[0] and ".tmp" not in lines[0], result.output


def test_import_error_names_the_file_and_field() -> None:
    with pytest.raises(SpecError) as info:
        import_config(DATA / "heldout" / "mistral-7b.json", published_params=-1.0)
    assert "--published-params" in str(info.value)


# `chipdse explore` end to end on cards imported from config.json: dense, MoE, MLA (+ MoE), hybrid SSM.
EXPLORE = {
    "dense": ("heldout/mistral-7b", {}),
    "moe": ("heldout/mixtral-8x7b", {"arrival_rate_rps": 0.1}),  # 93 GB of weights: a light load keeps it stable
    "mla": ("heldout/deepseek-v2-lite", {"simulation": {
        "candidates": 1, "spread": 0, "duration_s": 4, "max_duration_s": 8, "warmup_s": 1, "measure_s": 3,
        "min_completed": 1, "datasets": ["arxiv.yaml"], "workers": 1}}),
    "hybrid-ssm": ("bundled/nemotron-h-4b", {}),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(EXPLORE))
def test_explore_runs_on_an_imported_model(kind: str, tmp_path: Path) -> None:
    config, overrides = EXPLORE[kind]
    card = tmp_path / "card.json"
    assert _invoke(str(DATA / f"{config}.json"), "--out", str(card)).exit_code == 0
    inst = instances_dir()
    scenario = yaml.safe_load((inst / "scenarios" / "default.yaml").read_text()) | {
        "name": f"imported-{kind}", "model": "card.json", "library": str(inst / "chiplets" / "hydra.yaml"),
        "package": str(inst / "packages" / "hydra-5x5.yaml"), "workload": str(inst / "workloads" / "arxiv.yaml"),
        "estimator": {"batching": "dynamic"}, "simulation": {"enabled": False},
        "design_space": {"total_chiplets": 10, "hbm_min": 4, "hbm_max": 4, "d2d_GBps": [512], "max_batch": [16]},
    } | overrides
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["explore", str(path), "--out", str(out), "--time-limit", "2"])
    assert result.exit_code == 0, result.output
    assert (out / "report.pdf").read_bytes().startswith(b"%PDF") and (out / "points.csv").exists()
    points = (out / "points.csv").read_text().splitlines()
    assert len(points) > 1  # a header and at least one design point
