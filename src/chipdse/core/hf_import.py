"""Hugging Face ``config.json`` -> model card (``instances/models/SOURCE.md`` schema), read from a local file.

One mapping per ``model_type`` turns the config's hyper-parameters into the card's per-layer lists
(``layer_mixer`` / ``layer_ffn``) and sizes; the parameter count is then the block sum of the HYDRA descriptor
(:func:`chipdse.core.models.build_descriptor`), the count every reader of the card agrees with. Families: Llama,
Mistral, Qwen2, Qwen3 (dense and MoE), Phi-3 / Phi-4, Mixtral, DeepSeek-V2 / V3 and Kimi-K2 (MLA, shared experts,
``first_k_dense_replace``), gpt-oss (biases, attention sinks, sliding-window layers), Qwen3-Next (gated DeltaNet +
gated attention + MoE), Nemotron-H (``hybrid_override_pattern``), Jamba, Zamba2, Mamba / Mamba-2 (Hugging Face and
``state-spaces`` formats) and Falcon-H1. Defaults for fields a config may omit are those of the family's
``transformers`` configuration class. Multi-token-prediction modules are not counted (vendors' totals exclude them:
DeepSeek-V3 671B); the card records them under ``extra``. Sliding-window layers (Mistral, gpt-oss) are recorded
under ``extra`` (``sliding_window``, ``layer_types``); the serving model caches every context token on them (an
upper bound on their KV cache).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chipdse.core.errors import SpecError, shorten
from chipdse.core.models import (
    CARD_DTYPES,
    MAX_CARD_DIM,
    build_descriptor,
    check_card,
    derived_layer_fields,
    read_json_object,
)
from chipdse.core.precision import from_hf_config, kv_cache_dtype_from_hf

PUBLISHED_WARN_FRACTION = 0.05
"""Relative gap between the computed and a user-given published count above which the import warns."""


@dataclass(frozen=True)
class Config:
    """A parsed ``config.json`` with its file name (for messages) and ``model_type``."""

    raw: dict[str, Any]
    source: str
    model_type: str

    def has(self, key: str) -> bool:
        """Whether the config gives ``key`` (not null)."""
        return self.raw.get(key) is not None

    def size(self, key: str, default: int | None = None, low: int = 1) -> int:
        """A whole-number field ``low..MAX_CARD_DIM``; ``default`` when absent (None: required).

        Raises
        ------
        SpecError
            Naming the file and field: missing (and required) or not a whole number in range.
        """
        value = self.raw.get(key)
        if value is None:
            if default is None:
                raise SpecError(self.source, key, f"a value (required for model_type {self.model_type!r}), found "
                                "none")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_CARD_DIM:
            raise SpecError(self.source, key, f"a whole number {low}..{MAX_CARD_DIM}, got {shorten(value)}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        """A true / false field; ``default`` when absent."""
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise SpecError(self.source, key, f"true or false, got {shorten(value)}")
        return value

    def get(self, key: str, default: Any = None) -> Any:
        """Any field, ``default`` when absent or null."""
        value = self.raw.get(key)
        return default if value is None else value


def _attention(cfg: Config, qk_norm: bool = False, gate: bool = False) -> dict[str, Any]:
    h, nh = cfg.size("hidden_size"), cfg.size("num_attention_heads")
    kv = cfg.size("num_key_value_heads", nh)
    if h % nh and cfg.get("head_dim") is None and cfg.get("attention_head_dim") is None:
        raise SpecError(cfg.source, "head_dim", f"a value (hidden_size {h} is not a multiple of num_attention_heads "
                        f"{nh}, so the head size cannot be derived), found none")
    hd = cfg.size("head_dim", cfg.size("attention_head_dim", h // nh if h % nh == 0 else None))
    kind = "MHA" if kv == nh else ("MQA" if kv == 1 else "GQA")
    notes = [n for n, on in (("per-head q/k RMSNorm", qk_norm), ("sigmoid output gate", gate)) if on]
    return {"num_attention_heads": nh, "num_key_value_heads": kv, "head_dim": hd,
            "attention_type": kind + (f" (+ {', '.join(notes)})" if notes else ""),
            "position_embedding": "rope", "rope_theta": cfg.get("rope_theta")}


def _layers(n: int, mixer: str | Callable[[int], str], ffn: str | Callable[[int], str]) -> dict[str, list[str]]:
    return {"layer_mixer": [mixer(i) if callable(mixer) else mixer for i in range(n)],
            "layer_ffn": [ffn(i) if callable(ffn) else ffn for i in range(n)]}


def _swiglu(cfg: Config) -> dict[str, Any]:
    return {"intermediate_size": cfg.size("intermediate_size"), "mlp_gated": True,
            "activation": f"{cfg.get('hidden_act', 'silu')} (gated MLP)"}


def _moe(cfg: Config, experts_key: str, inter_key: str = "moe_intermediate_size", shared: int = 0,
         shared_inter: int | None = None, scoring: str = "softmax top-k") -> dict[str, Any]:
    return {"num_experts": cfg.size(experts_key), "num_experts_per_tok": cfg.size("num_experts_per_tok"),
            "moe_intermediate_size": cfg.size(inter_key), "num_shared_experts": shared,
            "shared_expert_intermediate_size": shared_inter if shared else None, "moe_router_scoring": scoring}


def _sparse_ffn(cfg: Config) -> Callable[[int], str]:
    """Qwen2/3-MoE and Qwen3-Next: MoE on layers not in ``mlp_only_layers`` with (i + 1) % decoder_sparse_step
    == 0, dense MLP elsewhere."""
    step, dense = cfg.size("decoder_sparse_step", 1), cfg.get("mlp_only_layers", [])
    if not isinstance(dense, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in dense):
        raise SpecError(cfg.source, "mlp_only_layers", f"a list of layer indices, got {shorten(dense)}")
    return lambda i: "moe" if i not in dense and (i + 1) % step == 0 else "mlp"


def _dense(cfg: Config) -> dict[str, Any]:
    """Llama, Mistral, Qwen2, Qwen3, Phi-3 / Phi-4, Granite (IBM Granite 3.x dense: Llama's weights; its
    embedding / attention / residual / logits multipliers scale activations, no weights): every layer attention +
    gated MLP."""
    n = cfg.size("num_hidden_layers")
    card = _attention(cfg, qk_norm=cfg.model_type == "qwen3") | _swiglu(cfg) | _layers(n, "attention", "mlp")
    extra: dict[str, bool | int] = {"qkv_bias": True} if cfg.model_type == "qwen2" else {}
    if cfg.flag("attention_bias", False):
        extra["attention_bias"] = True
    if cfg.flag("mlp_bias", False):
        extra["mlp_bias"] = True
    if cfg.has("sliding_window") and cfg.flag("use_sliding_window", cfg.model_type == "mistral"):
        extra["sliding_window"] = cfg.size("sliding_window")
    return card | {"architecture_family": "dense_transformer", "extra": extra}


def _mixtral(cfg: Config) -> dict[str, Any]:
    """Mixtral and the families built like it: MoE on every layer, each expert a gated MLP of
    ``intermediate_size``, no shared expert. Granite-MoE (IBM Granite 3.x MoE) the same (its multipliers scale
    activations, no weights); Phi-3.5-MoE (``phimoe``) with attention biases; OLMoE with ``num_experts`` and q/k
    RMSNorms (full-width in OLMoE, counted per head here: 61 k parameters of its 6.9 B)."""
    n = cfg.size("num_hidden_layers")
    olmoe = cfg.model_type == "olmoe"
    card = (_attention(cfg, qk_norm=olmoe) | _swiglu(cfg)
            | _moe(cfg, "num_experts" if olmoe else "num_local_experts", "intermediate_size")
            | _layers(n, "attention", "moe") | {"architecture_family": "moe_transformer"})
    extra = {"attention_bias": True} if cfg.flag("attention_bias", cfg.model_type == "phimoe") else {}
    return card | {"extra": extra}


def _qwen_moe(cfg: Config) -> dict[str, Any]:
    """Qwen2-MoE (qkv biases, one gated shared expert) and Qwen3-MoE (q/k norms, no shared expert)."""
    n, qwen2 = cfg.size("num_hidden_layers"), cfg.model_type == "qwen2_moe"
    shared = cfg.size("shared_expert_intermediate_size", 0, low=0) if qwen2 else 0
    card = (_attention(cfg, qk_norm=not qwen2) | _swiglu(cfg)
            | _moe(cfg, "num_experts", shared=1 if shared else 0, shared_inter=shared)
            | _layers(n, "attention", _sparse_ffn(cfg)))
    extra = {"qkv_bias": True, "shared_expert_gate": True} if qwen2 else {}
    return card | {"architecture_family": "moe_transformer", "extra": extra}


def _deepseek(cfg: Config) -> dict[str, Any]:
    """DeepSeek-V2 / V3 and Kimi-K2: MLA on every layer; MoE from ``first_k_dense_replace`` on, every
    ``moe_layer_freq``-th layer, with ``n_shared_experts`` shared experts of the routed experts' width."""
    n, nh = cfg.size("num_hidden_layers"), cfg.size("num_attention_heads")
    nope, rope, dv = cfg.size("qk_nope_head_dim"), cfg.size("qk_rope_head_dim"), cfg.size("v_head_dim")
    first, freq = cfg.size("first_k_dense_replace", 0, low=0), cfg.size("moe_layer_freq", 1)
    routed = cfg.size("n_routed_experts", 0, low=0)
    shared = cfg.size("n_shared_experts", 0, low=0)
    scoring = f"{cfg.get('scoring_func', 'softmax')}, {cfg.get('topk_method', 'greedy')}"
    if cfg.get("topk_method") == "noaux_tc":
        scoring += " + e_score_correction_bias"
    card = {"num_attention_heads": nh, "num_key_value_heads": nh, "head_dim": nope + rope,
            "attention_type": f"MLA (q/k head dim = nope {nope} + rope {rope}, v head dim {dv})",
            "position_embedding": "rope (decoupled)", "rope_theta": cfg.get("rope_theta"),
            "kv_lora_rank": cfg.size("kv_lora_rank"),
            "q_lora_rank": cfg.size("q_lora_rank") if cfg.has("q_lora_rank") else None,
            "qk_rope_head_dim": rope, "qk_nope_head_dim": nope, "v_head_dim": dv,
            "first_k_dense_replace": first, "routed_scaling_factor": cfg.get("routed_scaling_factor"),
            "architecture_family": "moe_transformer with MLA (multi-head latent attention)",
            "layer_pattern_native": {"first_k_dense_replace": first, "moe_layer_freq": freq}}
    card |= _swiglu(cfg) | _layers(n, "mla", lambda i: "moe" if routed and i >= first and i % freq == 0 else "mlp")
    if routed:
        card |= _moe(cfg, "n_routed_experts", shared=shared, shared_inter=cfg.size("moe_intermediate_size"),
                     scoring=scoring)
        if cfg.has("n_group"):
            card["moe_topk_groups"] = {"n_group": cfg.get("n_group"), "topk_group": cfg.get("topk_group")}
    return card | {"extra": _mtp(cfg, "num_nextn_predict_layers")}


def _mtp(cfg: Config, key: str) -> dict[str, Any]:
    layers = cfg.size(key, 0, low=0)
    return {"mtp_layers_not_counted": layers} if layers else {}


def _gpt_oss(cfg: Config) -> dict[str, Any]:
    """gpt-oss: attention with q/k/v/o biases and one sink logit per head, alternating sliding-window and full
    layers, MoE with biased experts and a biased router on every layer."""
    n = cfg.size("num_hidden_layers")
    card = _attention(cfg) | _layers(n, "attention", "moe") | {"architecture_family": "moe_transformer"}
    card |= {"intermediate_size": cfg.size("intermediate_size"), "mlp_gated": True,
             "activation": "swiglu (clamped, gpt-oss)", "num_experts": cfg.size("num_local_experts"),
             "num_experts_per_tok": cfg.size("num_experts_per_tok", cfg.size("experts_per_token", 4)),
             "moe_intermediate_size": cfg.size("intermediate_size"), "num_shared_experts": 0,
             "moe_router_scoring": "softmax over top-k, router with bias"}
    extra: dict[str, Any] = {"attention_bias": cfg.flag("attention_bias", True), "attention_sinks": True,
                             "mlp_bias": True}
    if cfg.has("sliding_window"):
        extra["sliding_window"] = cfg.size("sliding_window")
        extra["layer_types"] = cfg.get("layer_types") or [
            "sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    return card | {"extra": extra}


def _qwen3_next(cfg: Config) -> dict[str, Any]:
    """Qwen3-Next: gated DeltaNet linear attention, with gated full attention every ``full_attention_interval``-th
    layer (or as ``layer_types`` says), and an MoE with one gated shared expert."""
    n, interval = cfg.size("num_hidden_layers"), cfg.size("full_attention_interval", 4)
    types = cfg.get("layer_types") or ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                                       for i in range(n)]
    if not isinstance(types, list) or len(types) != n or set(types) - {"full_attention", "linear_attention"}:
        raise SpecError(cfg.source, "layer_types", f"{n} entries of 'full_attention' / 'linear_attention', got "
                        f"{shorten(types)}")
    shared = cfg.size("shared_expert_intermediate_size", 0, low=0)
    card = (_attention(cfg, qk_norm=True, gate=True) | _swiglu(cfg)
            | _moe(cfg, "num_experts", shared=1 if shared else 0, shared_inter=shared)
            | _layers(n, lambda i: "attention" if types[i] == "full_attention" else "gated_deltanet",
                      _sparse_ffn(cfg)))
    linear = {k: cfg.size(k, d) for k, d in (("linear_num_key_heads", 16), ("linear_num_value_heads", 32),
                                              ("linear_key_head_dim", 128), ("linear_value_head_dim", 128),
                                              ("linear_conv_kernel_dim", 4))}
    extra = linear | {"attention_output_gate": True, "shared_expert_gate": bool(shared)} | _mtp(
        cfg, "num_nextn_predict_layers")
    return card | {"architecture_family": "hybrid linear attention (gated DeltaNet) + gated attention, MoE",
                   "layer_pattern_native": {"full_attention_interval": interval}, "extra": extra}


def _mamba2_fields(d_inner: int, heads: int, head_dim: int, groups: int, state: int, conv: int, chunk: int,
                   expand: int | None) -> dict[str, Any]:
    return {"ssm_variant": "mamba2", "ssm_d_inner": d_inner, "mamba_num_heads": heads, "mamba_head_dim": head_dim,
            "ssm_n_groups": groups, "ssm_state_size": state, "ssm_conv_kernel": conv, "ssm_chunk_size": chunk,
            "ssm_expand": expand}


NEMOTRON_H_LAYERS = {"M": ("mamba2", "none"), "*": ("attention", "none"), "-": ("none", "mlp"), "E": ("none", "moe")}
"""Nemotron-H ``hybrid_override_pattern`` characters -> (mixer, FFN) of the card's layer lists."""


def _nemotron_h(cfg: Config) -> dict[str, Any]:
    n, pattern = cfg.size("num_hidden_layers"), cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set(NEMOTRON_H_LAYERS):
        raise SpecError(cfg.source, "hybrid_override_pattern", f"{n} characters of {''.join(NEMOTRON_H_LAYERS)} "
                        f"(one per layer), got {shorten(pattern)}")
    heads, head_dim = cfg.size("mamba_num_heads"), cfg.size("mamba_head_dim")
    card = _attention(cfg) | {
        "position_embedding": "none (NoPE in attention layers)",
        "layer_mixer": [NEMOTRON_H_LAYERS[c][0] for c in pattern],
        "layer_ffn": [NEMOTRON_H_LAYERS[c][1] for c in pattern],
        "layer_pattern_native": {"hybrid_override_pattern": pattern},
        "intermediate_size": cfg.size("intermediate_size"), "mlp_gated": False,
        "activation": f"{cfg.get('mlp_hidden_act', 'relu2')} (plain MLP); mamba gate silu",
        "architecture_family": "hybrid_mamba2_attention (sequential; each layer is ONE of mamba2 / attention / "
                               "mlp / moe)",
    } | _mamba2_fields(heads * head_dim, heads, head_dim, cfg.size("n_groups", 8), cfg.size("ssm_state_size", 128),
                       cfg.size("conv_kernel", 4), cfg.size("chunk_size", 128), cfg.get("expand"))
    if "E" in pattern:
        shared = cfg.size("moe_shared_expert_intermediate_size", 0, low=0)
        card |= _moe(cfg, "n_routed_experts", shared=cfg.size("n_shared_experts", 1) if shared else 0,
                     shared_inter=shared, scoring="sigmoid + e_score_correction_bias")
        card |= {"moe_latent_size": cfg.get("moe_latent_size"),
                 "routed_scaling_factor": cfg.get("routed_scaling_factor")}
    return card | {"extra": _mtp(cfg, "num_nextn_predict_layers")}


def _jamba(cfg: Config) -> dict[str, Any]:
    n, h = cfg.size("num_hidden_layers"), cfg.size("hidden_size")
    a_per, a_off = cfg.size("attn_layer_period", 8), cfg.size("attn_layer_offset", 4, low=0)
    e_per, e_off = cfg.size("expert_layer_period", 2), cfg.size("expert_layer_offset", 1, low=0)
    experts = cfg.size("num_experts", 16)
    expand, rank = cfg.size("mamba_expand", 2), cfg.get("mamba_dt_rank", "auto")
    card = _attention(cfg) | _swiglu(cfg) | _layers(
        n, lambda i: "attention" if i % a_per == a_off else "mamba",
        lambda i: "moe" if experts > 1 and i % e_per == e_off else "mlp")
    if experts > 1:
        card |= _moe(cfg, "num_experts", "intermediate_size")
    return card | {
        "position_embedding": "none (no RoPE in Jamba attention)",
        "architecture_family": "hybrid_mamba1_attention_moe (each layer = mixer + FFN)",
        "layer_pattern_native": {"attn_layer_period": a_per, "attn_layer_offset": a_off,
                                 "expert_layer_period": e_per, "expert_layer_offset": e_off},
        "ssm_variant": "mamba1 (with dt/B/C inner RMSNorms)", "ssm_state_size": cfg.size("mamba_d_state", 16),
        "ssm_expand": expand, "ssm_d_inner": expand * h, "ssm_conv_kernel": cfg.size("mamba_d_conv", 4),
        "mamba_dt_rank": math.ceil(h / 16) if rank == "auto" else cfg.size("mamba_dt_rank"), "extra": {}}


def _zamba2(cfg: Config) -> dict[str, Any]:
    """Zamba2: Mamba-2 layers, some of which ('hybrid' in ``layers_block_type``) first run one of
    ``num_mem_blocks`` weight-shared transformer blocks (attention on concat[h, embedding], gated MLP with a
    per-layer LoRA adapter)."""
    n, h = cfg.size("num_hidden_layers"), cfg.size("hidden_size")
    types = cfg.get("layers_block_type")
    if not isinstance(types, list) or len(types) != n or set(types) - {"mamba", "hybrid"}:
        raise SpecError(cfg.source, "layers_block_type", f"{n} entries of 'mamba' / 'hybrid', got {shorten(types)}")
    nh, width = cfg.size("num_attention_heads"), cfg.size("attention_hidden_size", 2 * h)
    expand, head_dim = cfg.size("mamba_expand", 2), cfg.size("mamba_headdim", 64)
    d_inner = expand * h
    return {
        "num_attention_heads": nh, "num_key_value_heads": cfg.size("num_key_value_heads", nh),
        "head_dim": cfg.size("attention_head_dim", width // nh), "attention_type": "MHA on the 2*hidden input",
        "position_embedding": "rope" if cfg.flag("use_mem_rope", False) else "none",
        "rope_theta": cfg.get("rope_theta"),
        "intermediate_size": cfg.size("intermediate_size"), "mlp_gated": True,
        "activation": f"{cfg.get('hidden_act', 'gelu')} (gated); mamba gate silu",
        "architecture_family": "hybrid_mamba2 + shared attention blocks",
        "layer_pattern_native": {"layers_block_type": types},
        **_layers(n, lambda i: "mamba2+shared_attention" if types[i] == "hybrid" else "mamba2",
                  lambda i: "shared_mlp" if types[i] == "hybrid" else "none"),
        **_mamba2_fields(d_inner, cfg.size("n_mamba_heads", d_inner // head_dim), head_dim,
                         cfg.size("mamba_ngroups", 1), cfg.size("mamba_d_state", 64), cfg.size("mamba_d_conv", 4),
                         cfg.size("chunk_size", 256), expand),
        "extra": {"num_mem_blocks": cfg.size("num_mem_blocks", 1), "adapter_rank": cfg.size("adapter_rank", 128),
                  "use_shared_mlp_adapter": cfg.flag("use_shared_mlp_adapter", True),
                  "use_shared_attention_adapter": cfg.flag("use_shared_attention_adapter", False),
                  "attention_hidden_size": width, "num_hybrid_layers": types.count("hybrid")},
    }


def _falcon_h1(cfg: Config) -> dict[str, Any]:
    """Falcon-H1: every layer runs attention and Mamba-2 in parallel on the same input, then a gated MLP."""
    n, h = cfg.size("num_hidden_layers"), cfg.size("hidden_size")
    expand = cfg.size("mamba_expand", 2)
    d_ssm = cfg.size("mamba_d_ssm", expand * h)
    heads = cfg.size("mamba_n_heads")
    return _attention(cfg) | _swiglu(cfg) | _layers(n, "attention||mamba2", "mlp") | _mamba2_fields(
        d_ssm, heads, cfg.size("mamba_d_head", d_ssm // heads), cfg.size("mamba_n_groups", 1),
        cfg.size("mamba_d_state", 256), cfg.size("mamba_d_conv", 4), cfg.size("mamba_chunk_size", 256), expand,
    ) | {"architecture_family": "parallel_hybrid (attention || Mamba-2 in every layer, then gated MLP)",
         "extra": {"mamba_d_ssm": d_ssm}}


def _mamba(cfg: Config) -> dict[str, Any]:
    """Mamba-1 without attention or MLP (Hugging Face ``mamba``): no inner dt/B/C norms."""
    n, h = cfg.size("num_hidden_layers"), cfg.size("hidden_size")
    expand, rank = cfg.size("expand", 2), cfg.get("time_step_rank", "auto")
    return _layers(n, "mamba", "none") | {
        "architecture_family": "ssm (pure Mamba-1)", "ssm_variant": "mamba1", "ssm_expand": expand,
        "ssm_d_inner": cfg.size("intermediate_size", expand * h), "ssm_state_size": cfg.size("state_size", 16),
        "ssm_conv_kernel": cfg.size("conv_kernel", 4),
        "mamba_dt_rank": math.ceil(h / 16) if rank == "auto" else cfg.size("time_step_rank"),
        "extra": {"mamba_dt_bc_norms": False}}


def _mamba2(cfg: Config) -> dict[str, Any]:
    """Mamba-2 without attention or MLP (Hugging Face ``mamba2``)."""
    n, h = cfg.size("num_hidden_layers"), cfg.size("hidden_size")
    expand, head_dim = cfg.size("expand", 2), cfg.size("head_dim", 64)
    heads = cfg.size("num_heads", expand * h // head_dim)
    return _layers(n, "mamba2", "none") | _mamba2_fields(
        heads * head_dim, heads, head_dim, cfg.size("n_groups", 1), cfg.size("state_size", 128),
        cfg.size("conv_kernel", 4), cfg.size("chunk_size", 256), expand,
    ) | {"architecture_family": "ssm (pure Mamba-2)", "extra": {}}


FAMILIES: dict[str, Callable[[Config], dict[str, Any]]] = {
    "llama": _dense, "mistral": _dense, "qwen2": _dense, "qwen3": _dense, "phi3": _dense, "granite": _dense,
    "mixtral": _mixtral, "granitemoe": _mixtral, "phimoe": _mixtral, "olmoe": _mixtral,
    "qwen2_moe": _qwen_moe, "qwen3_moe": _qwen_moe,
    "deepseek_v2": _deepseek, "deepseek_v3": _deepseek, "kimi_k2": _deepseek,
    "gpt_oss": _gpt_oss, "qwen3_next": _qwen3_next, "nemotron_h": _nemotron_h, "jamba": _jamba,
    "zamba2": _zamba2, "falcon_h1": _falcon_h1, "mamba": _mamba, "mamba2": _mamba2,
}
"""``model_type`` -> mapping to card fields. ``state-spaces/mamba`` configs (``d_model``, ``n_layer``,
``ssm_cfg``; no ``model_type``) are read as ``mamba`` / ``mamba2`` (:func:`_state_spaces`)."""

TIED_BY_DEFAULT = {"zamba2", "mamba"}
"""Families whose ``transformers`` configuration ties the LM head to the embedding when the config is silent."""


def _state_spaces(raw: dict[str, Any]) -> dict[str, Any]:
    """A ``state-spaces/mamba`` ``MambaConfig`` (``d_model``, ``n_layer``, ``ssm_cfg``) in Hugging Face terms,
    with that package's defaults (Mamba-2: d_state 128, headdim 64; Mamba-1: d_state 16)."""
    ssm = raw.get("ssm_cfg") or {}
    v2 = ssm.get("layer") == "Mamba2"
    return {"model_type": "mamba2" if v2 else "mamba", "hidden_size": raw.get("d_model"),
            "num_hidden_layers": raw.get("n_layer"), "vocab_size": raw.get("vocab_size"),
            "tie_word_embeddings": raw.get("tie_embeddings", True),
            "pad_vocab_size_multiple": raw.get("pad_vocab_size_multiple"),
            "state_size": ssm.get("d_state", 128 if v2 else 16), "conv_kernel": ssm.get("d_conv", 4),
            "expand": ssm.get("expand", 2), "head_dim": ssm.get("headdim", 64), "n_groups": ssm.get("ngroups", 1),
            "chunk_size": ssm.get("chunk_size", 256), "rms_norm_eps": raw.get("norm_epsilon", 1e-5)}


def card_from_config(raw: dict[str, Any], source: str, name: str | None = None) -> dict[str, Any]:
    """Map a parsed Hugging Face ``config.json`` to a model card.

    Parameters
    ----------
    raw : dict
        The config (a multimodal wrapper's ``text_config`` is read when it has no ``num_hidden_layers`` itself).
    source : str
        The config's file name, for messages and the card's ``source``.
    name : str, optional
        Card name; default the config's ``_name_or_path`` or the file stem.

    Returns
    -------
    dict
        A card (every field of ``instances/models/SOURCE.md``; derived layer fields filled) without counts;
        :func:`import_config` adds them.

    Raises
    ------
    SpecError
        One line naming ``source`` and the field: no or an unknown ``model_type`` (listing the supported ones),
        a missing required field (e.g. ``num_hidden_layers``) or one out of range.
    """
    outer = raw
    if "text_config" in raw and "num_hidden_layers" not in raw and isinstance(raw["text_config"], dict):
        raw = {**raw["text_config"], **({"quantization_config": outer["quantization_config"]}
                                        if "quantization_config" in outer else {})}
    if "model_type" not in raw and "d_model" in raw and "n_layer" in raw:
        raw = _state_spaces(raw)
    model_type = raw.get("model_type")
    if model_type not in FAMILIES:
        got = "none" if model_type is None else shorten(model_type)
        raise SpecError(source, "model_type", f"one of {sorted(FAMILIES)} (the families this import maps), got "
                        f"{got}")
    cfg = Config(raw, source, str(model_type))
    n = cfg.size("num_hidden_layers")
    h, vocab = cfg.size("hidden_size"), cfg.size("vocab_size")
    card = FAMILIES[cfg.model_type](cfg)
    dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    extra = card.pop("extra", {})
    if dtype is not None and dtype not in CARD_DTYPES:
        extra["config_dtype"] = dtype
    pad = cfg.get("pad_vocab_size_multiple")
    card = {
        "name": name or str(raw.get("_name_or_path") or Path(source).stem),
        "hf_repo": raw.get("_name_or_path"), "hf_model_type": cfg.model_type,
        "hidden_size": h, "num_hidden_layers": n, "vocab_size": vocab,
        "vocab_pad_multiple": pad if isinstance(pad, int) and pad > 1 else None,
        "tie_word_embeddings": cfg.flag("tie_word_embeddings", cfg.model_type in TIED_BY_DEFAULT),
        "max_position_embeddings": raw.get("max_position_embeddings"),
        "torch_dtype": dtype if dtype in CARD_DTYPES else None, "norm_type": "RMSNorm",
        "norm_eps": cfg.get("rms_norm_eps", cfg.get("layer_norm_epsilon")),
    } | card
    card["extra"] = extra or None
    if "quantization_config" in raw:
        card["quantization"] = from_hf_config(raw["quantization_config"], source)[0]
        kv_dtype = kv_cache_dtype_from_hf(raw["quantization_config"], source)
        if kv_dtype is not None:
            card["kv_cache_dtype"] = kv_dtype
    card |= derived_layer_fields(card)
    return card


def ignored_sections(raw: dict[str, Any], source: str) -> list[str]:
    """``warning:`` lines, one per config section the card leaves out: a vision (or audio) tower beside the
    language model, multi-token-prediction layers, a ``quantization_config`` this import does not read.

    Raises
    ------
    SpecError
        A malformed ``quantization_config`` (:func:`chipdse.core.precision.from_hf_config`).
    """
    lines = [f"warning: {key}: the {what} is not modelled (the card holds the language model only)"
             for key, what in (("vision_config", "vision tower"), ("audio_config", "audio tower"))
             if isinstance(raw.get(key), dict)]
    inner = raw.get("text_config")
    text: dict[str, Any] = inner if isinstance(inner, dict) else raw
    mtp = text.get("num_nextn_predict_layers") or text.get("num_mtp_layers") or text.get("mtp_num_hidden_layers")
    if isinstance(mtp, int) and mtp > 0:
        lines.append(f"warning: num_nextn_predict_layers: {mtp} multi-token-prediction layer(s) left out (not counted, "
                     "placed or run)")
    if "quantization_config" in raw:
        lines += from_hf_config(raw["quantization_config"], source)[1]
    return lines


def import_config(path: Path, name: str | None = None, published_params: float | None = None
                  ) -> tuple[dict[str, Any], list[str]]:
    """Read a local ``config.json`` and return its model card and the lines to print.

    Parameters
    ----------
    path : Path
        The Hugging Face ``config.json`` (no network access).
    name : str, optional
        Card name (default: the config's ``_name_or_path`` or the file stem).
    published_params : float, optional
        The vendor's published total parameter count, > 0.

    Returns
    -------
    (dict, list of str)
        The card, counts filled (``computed_params_total`` / ``_active`` = the HYDRA descriptor's block sum,
        embedding and head included, MTP excluded; ``published_params_total`` = ``published_params`` or, when not
        given, the computed count, noted as such), and the report lines: the computed count, and with
        ``published_params`` the difference, plus a ``warning:`` line when it exceeds
        :data:`PUBLISHED_WARN_FRACTION`.

    Raises
    ------
    SpecError
        One line naming the file and field: unreadable or non-JSON file, unknown ``model_type``, a missing or
        malformed required field (:func:`card_from_config`), or a card the descriptor cannot build.
    """
    source = str(path)
    raw = read_json_object(path, "config fields")
    card = card_from_config(raw, source, name)
    if published_params is not None and (not math.isfinite(published_params) or published_params <= 0):
        raise SpecError("--published-params", "", f"a parameter count > 0, got {published_params!r}")
    card["published_params_total"] = float(published_params or 1.0)
    check_card(card, source)
    model = build_descriptor(card, card_key(card["name"]), source)
    if card.get("quantization"):  # only the kinds the model has
        kinds = [k for k in card["quantization"]["block_kinds"] if any(b.kind == k for b in model.blocks)]
        card["quantization"] = {**card["quantization"], "block_kinds": kinds} if kinds else None
        model = build_descriptor(card, card_key(card["name"]), source)
    total = model.total_params
    unused = sum(b.params - b.active_params for b in model.blocks if b.kind == "moe")
    card |= {
        "published_params_total": float(published_params) if published_params else float(total),
        "published_params_note": ("given at import (--published-params)" if published_params else
                                  "no published count given at import: the computed count stands in"),
        "computed_params_total": total, "computed_params_active": total - unused,
        "computed_params_formula": "block sum of chipdse.core.models.build_descriptor (embedding, head and norms "
                                   "included; MTP modules excluded)",
        "computed_params_active_definition": "total minus the routed experts not selected in each MoE layer",
        "source": [{"ref": f"Hugging Face config.json read from {path.name} (chipdse model import)",
                    "fields": "every architecture field"}],
    }
    lines = [f"{card['name']}: {total:,} parameters computed ({total / 1e9:.3f}B; "
             f"active {(total - unused) / 1e9:.3f}B); weights {model.weight_bytes / 1e9:.4g} GB at "
             f"{model.weight_dtype}; KV cache {model.kv_cache_dtype}, {model.kv_bytes_per_token():,.0f} bytes "
             "per token", *ignored_sections(raw, source)]
    if published_params:
        diff = total / published_params - 1
        card["computed_vs_published_total"] = f"{diff:+.2%} vs the published figure given at import"
        lines.append(f"published {published_params:,.0f}: difference {diff:+.2%}")
        if abs(diff) > PUBLISHED_WARN_FRACTION:
            lines.append(f"warning: the computed count differs from the published one by {diff:+.1%} (more than "
                         f"{PUBLISHED_WARN_FRACTION:.0%}); check the config and the published figure")
    return card, lines


def import_summary(card: dict[str, Any], lines: list[str], source: str) -> dict[str, Any]:
    """What ``chipdse model import --json`` prints: ``name``, ``params`` and ``active_params`` (the computed
    counts), ``weight_bytes`` (every block at its stored precision, :attr:`ModelDescriptor.weight_bytes`),
    ``dtype`` (the weights' precision, :attr:`ModelDescriptor.weight_dtype`), ``quantization`` (the card's field,
    or None), ``kv_cache_dtype`` and ``kv_bytes_per_token`` (the KV cache per context token over every layer, at
    that type) and ``warnings`` (the ``warning:`` lines, prefix cut)."""
    model = build_descriptor(card, card_key(card["name"]), source)
    return {"name": card["name"], "params": card["computed_params_total"],
            "active_params": card["computed_params_active"], "weight_bytes": model.weight_bytes,
            "dtype": model.weight_dtype, "quantization": card.get("quantization"),
            "kv_cache_dtype": model.kv_cache_dtype, "kv_bytes_per_token": model.kv_bytes_per_token(),
            "warnings": [ln.removeprefix("warning: ") for ln in lines if ln.startswith("warning:")]}


def card_key(name: str) -> str:
    """The default file stem of an imported card named ``name``: lower case, every run of characters other than
    letters, digits and dots -> ``-`` (e.g. ``"Qwen/Qwen2.5-72B"`` -> ``"qwen-qwen2.5-72b"``)."""
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-") or "model"


def card_json(card: dict[str, Any]) -> str:
    """The card as the bundled cards are written: indented JSON, fields in schema order, newline at the end."""
    return json.dumps(card, indent=2) + "\n"
