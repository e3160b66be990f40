"""Model descriptors: ordered block lists built from real hyper-parameters (instances/models/*.json).

Each block carries its parameter count, weight bytes and the per-token costs the latency tables need:
matrix FLOPs, vector (element-wise) FLOPs, KV-cache bytes per token and SSM-state bytes per request.
The parameter count summed over the blocks is checked against the published total (tests).
"""

from __future__ import annotations

import difflib
import json
import math
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from chipdse.core.errors import SpecError, shorten
from chipdse.core.io import input_kind_error, read_input_text
from chipdse.core.paths import instances_dir
from chipdse.core.precision import ACTIVATION_DTYPES, KV_CACHE_DTYPES, check_quantization, dtype_bytes
from chipdse.core.specs import check_schema_version

BlockKind = Literal["embedding", "attention", "mamba1", "mamba2", "mlp", "moe", "head"]
MemoryGroup = Literal["attention", "mamba"]
GROUP_NAMES: tuple[MemoryGroup, ...] = ("attention", "mamba")
"""The HBM groups, in the order of every per-group array (HYDRA Step 1: attention vs Mamba group)."""

#: Mixers and FFNs this version builds; other cards load with a clear error.
SUPPORTED_MIXERS = {"attention", "mla", "mamba", "mamba2", "attention||mamba2", "mamba2+shared_attention",
                    "gated_deltanet", "none"}
SUPPORTED_FFNS = {"mlp", "moe", "shared_mlp", "none"}
SSM_KINDS = ("mamba1", "mamba2")
"""Block kinds run on Mamba (SSM) chiplets: Mamba-1 (Jamba) and Mamba-2 mixers (and the gated DeltaNet linear
attention of Qwen3-Next, a recurrent fixed-size-state mixer built as a ``mamba2`` block)."""
CARD_EXTRA_FLAGS = {
    "attention_bias": "q, k, v and output projections carry biases (gpt-oss, Llama attention_bias)",
    "qkv_bias": "q, k and v projections carry biases, the output projection none (Qwen2)",
    "attention_sinks": "one learned sink logit per query head (gpt-oss)",
    "attention_output_gate": "q_proj also emits a sigmoid output gate, doubling its width (Qwen3-Next)",
    "mlp_bias": "dense MLP and expert projections carry biases (gpt-oss experts)",
    "shared_expert_gate": "a Linear(H, 1) sigmoid gate on the shared expert (Qwen2-MoE, Qwen3-Next)",
    "mamba_dt_bc_norms": "Mamba-1 dt / B / C inner RMSNorms (Jamba; default true, false for plain Mamba)",
}
"""Parameter-count switches a card may set under ``extra`` (true / false), each with what it adds; every
bundled card leaves them unset (their counts are unchanged)."""

MAX_CARD_DIM = 2**24
"""Largest size a card may give (a width, head count, expert count or vocabulary): 16,777,216, far above any
published model (hidden sizes reach about 25,000, vocabularies about 260,000)."""
CARD_SIZES = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
              "intermediate_size", "ssm_d_inner", "ssm_state_size", "ssm_conv_kernel", "ssm_n_groups",
              "mamba_num_heads", "mamba_head_dim", "mamba_dt_rank", "ssm_chunk_size", "ssm_expand", "num_experts",
              "num_experts_per_tok", "moe_intermediate_size", "moe_latent_size", "shared_expert_intermediate_size",
              "vocab_size", "vocab_pad_multiple", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
              "qk_rope_head_dim", "v_head_dim", "max_position_embeddings")
"""Card fields that are sizes: whole numbers 1..MAX_CARD_DIM where present (null = not used by the model)."""
CARD_COUNTS = ("num_shared_experts", "num_nextn_predict_layers", "first_k_dense_replace")
"""Card fields that are counts: whole numbers 0..MAX_CARD_DIM where present."""
CARD_TOTALS = ("published_params_total", "published_params_total_exact", "published_params_active",
               "computed_params_total", "computed_params_active")
"""Card fields that are parameter totals: finite numbers > 0 where present."""
CARD_FIELDS = frozenset((
    *CARD_SIZES, *CARD_COUNTS, *CARD_TOTALS, "name", "architecture_family", "hf_model_type", "hf_repo",
    "tie_word_embeddings", "torch_dtype", "norm_type", "norm_eps", "activation", "layer_mixer", "layer_ffn",
    "layer_counts", "attention_layer_indices", "ssm_layer_indices", "moe_layer_indices", "dense_mlp_layer_indices",
    "layer_pattern_native", "attention_type", "position_embedding", "rope_theta", "mlp_gated", "moe_router_scoring",
    "routed_scaling_factor", "moe_topk_groups", "ssm_variant", "extra", "inferred_not_verified",
    "published_params_note", "computed_params_total", "computed_params_active", "computed_params_active_definition",
    "computed_params_formula", "computed_params_breakdown", "computed_vs_published_total", "source",
    "uncertain_fields", "notes", "quantization", "kv_cache_dtype", "activation_dtype", "schema_version"))
"""Every field a card may hold (the schema of ``instances/models/SOURCE.md``); model-specific settings go under
``extra``. Any other field is refused: a misspelt size would otherwise be silently ignored."""
CARD_DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4}
"""Weight data types a card may give (``torch_dtype``), bytes per value; null reads as bfloat16."""
PARAMS_TOLERANCE = 0.01
"""Largest relative gap between a card's ``computed_params_total`` and the parameters its layer lists and sizes
give (every bundled card agrees within 0.1%): a larger gap means the card contradicts itself."""


@dataclass(frozen=True)
class Block:
    """One schedulable block of a model (a task of HYDRA Sec. III-B, per phase).

    Attributes
    ----------
    name : str
        E.g. ``"L07.attention"``.
    kind : BlockKind
        Operator family; decides chiplet compatibility (attention -> A chiplets, mamba1 / mamba2 -> M chiplets,
        mlp / moe / embedding / head -> any compute chiplet).
    layer : int
        Layer index (-1 for the embedding, ``num_layers`` for the head).
    params : int
        Parameters stored for the block (its pre-norm included); 0 for a re-use of weight-shared weights.
    active_params : int
        Parameters touched per token (MoE: shared + top-k experts + router).
    group : MemoryGroup
        HBM group holding the block's weights and its KV cache / state (HYDRA Step 1: Mamba vs attention
        group); FFN blocks belong to the group of the mixer before them.
    matmul_flops_per_token : float
        2 x active matmul parameters.
    attn_flops_per_token_per_ctx : float
        Score + value FLOPs per token per context token (attention only): 4 * heads * head_dim.
    vector_flops_per_token : float
        Element-wise FLOPs per token (SSM state update and read-out, conv, gating).
    kv_bytes_per_token : float
        KV cache bytes added per token of context (attention only).
    state_bytes_per_request : float
        SSM state + conv state bytes per request (mamba1 / mamba2 only).
    shared_params : int
        Parameters of weight-shared weights stored with another block and read again by this one (Zamba2's
        shared transformer blocks): they cost HBM traffic here but no capacity.
    routed_experts, experts_per_token, expert_params : int
        MoE only: E routed experts, top-k per token and parameters of one routed expert (0 elsewhere). A step
        over b tokens reads only the experts its tokens touch: E (1 - (1 - k / E)^b) of them on average
        (``chipdse.evaluators.latency.expected_experts_touched``).
    """

    name: str
    kind: BlockKind
    layer: int
    params: int
    active_params: int
    group: MemoryGroup
    matmul_flops_per_token: float
    attn_flops_per_token_per_ctx: float = 0.0
    vector_flops_per_token: float = 0.0
    kv_bytes_per_token: float = 0.0
    state_bytes_per_request: float = 0.0
    shared_params: int = 0
    routed_experts: int = 0
    experts_per_token: int = 0
    expert_params: int = 0

    @property
    def streamed_params(self) -> int:
        """Parameters read from HBM per use of the block (stored plus weight-shared)."""
        return self.params + self.shared_params


@dataclass(frozen=True)
class ModelDescriptor:
    """A model as an ordered block list plus its card's published numbers.

    Attributes
    ----------
    name : str
        Card name (e.g. ``"Nemotron-H-4B"``).
    key : str
        File stem in ``instances/models`` (e.g. ``"nemotron-h-4b"``).
    hidden_size : int
    dtype_bytes : int
        Bytes per weight element of an unquantized block (the card's ``torch_dtype``; 2 for bf16).
    blocks : tuple[Block, ...]
        Each attention block's ``kv_bytes_per_token`` at :attr:`kv_cache_bytes` per cached value.
    published_params : float
        Published total (exact where the vendor publishes one).
    source : str
        Where the published total comes from.
    """

    name: str
    key: str
    hidden_size: int
    dtype_bytes: int
    blocks: tuple[Block, ...]
    published_params: float
    source: str
    quantized_kinds: frozenset[str] = frozenset()
    """Block kinds whose weights are stored quantized (the card's ``quantization.block_kinds``)."""
    quantized_bits: float = 0.0
    """Bits per quantized weight, scales included (``quantization.bits_per_weight``; :mod:`chipdse.core.precision`)."""
    quantized_format: str = ""
    """The quantized format (``quantization.format``: fp8, mxfp4, int8, int4), ``""`` when none."""
    kv_cache_bytes: int = 2
    """Bytes per cached K / V value (the card's ``kv_cache_dtype``, else ``torch_dtype``;
    :data:`chipdse.core.precision.KV_CACHE_DTYPES`)."""
    activation_bytes: int = 2
    """Bytes per activation value passed between blocks (``activation_dtype``, else ``torch_dtype``)."""
    kv_cache_dtype: str = "bfloat16"
    """The KV cache's data type by name."""

    def param_bytes(self, block: Block) -> float:
        """Bytes per stored weight of ``block``: the quantized width for a quantized kind, else ``dtype_bytes``."""
        return self.quantized_bits / 8.0 if block.kind in self.quantized_kinds else float(self.dtype_bytes)

    @cached_property
    def weight_dtype(self) -> str:
        """The weights' precision as a name: ``16-bit`` (bf16 or fp16), ``fp32``, or e.g. ``fp8, 8.002 bits/weight
        (attention, mlp, moe); 16-bit elsewhere``."""
        base = {2: "16-bit", 4: "fp32"}.get(self.dtype_bytes, f"{8 * self.dtype_bytes}-bit")
        if not self.quantized_kinds:
            return base
        kinds = ", ".join(sorted(self.quantized_kinds))
        return f"{self.quantized_format}, {self.quantized_bits:.4g} bits/weight ({kinds}); {base} elsewhere"

    @cached_property
    def total_params(self) -> int:
        """Parameters summed over all blocks (embedding, head and final norm included)."""
        return sum(b.params for b in self.blocks)

    @cached_property
    def weight_bytes(self) -> float:
        """All weights in bytes: each block's parameters at :meth:`param_bytes` (``dtype_bytes``, or the quantized
        width for the card's quantized kinds)."""
        return float(sum(b.params * self.param_bytes(b) for b in self.blocks))

    @cached_property
    def families(self) -> tuple[str, ...]:
        """Chiplet families the model needs: ``"attention"`` and/or ``"mamba"``."""
        fams = []
        if any(b.kind == "attention" for b in self.blocks):
            fams.append("attention")
        if any(b.kind in SSM_KINDS for b in self.blocks):
            fams.append("mamba")
        return tuple(fams)

    def group_weight_bytes(self, group: str) -> float:
        """Weight bytes of the blocks in one HBM group (HYDRA Eq. 1: L_M * W_M, or the attention side)."""
        return float(sum(b.params * self.param_bytes(b) for b in self.blocks if b.group == group))

    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per context token over all attention layers."""
        return float(sum(b.kv_bytes_per_token for b in self.blocks))

    def state_bytes_per_request(self) -> float:
        """SSM (+ conv) state bytes per request over all Mamba layers (HYDRA Eq. 1: S_M)."""
        return float(sum(b.state_bytes_per_request for b in self.blocks))


def attention_flops_per_context_token(heads: int, head_dim: int) -> float:
    """Return the attention-core FLOPs of one query token per context token: ``4 h d``.

    Parameters
    ----------
    heads : int
        Query heads ``h`` (of one device, if tensor-parallel).
    head_dim : int
        Head dimension ``d``.

    Returns
    -------
    float
        ``QK^T`` and ``PV`` each take ``2 d`` FLOPs per head and context token (softmax neglected).

    References
    ----------
    Standard transformer FLOP count (Kaplan et al. 2020, Table 1, "Attention: QK logits" and "Attention:
    reduce"); NOVA Sec. III-A and HYDRA Sec. III-B use the same count for GQA decode.
    """
    return 4.0 * heads * head_dim


def causal_attention_flops(flops_per_context_token: ArrayLike, prompt_tokens_squared: ArrayLike) -> ArrayLike:
    """Return the attention-core FLOPs of prefilling a prompt of L tokens with a causal mask: ``f L^2 / 2``.

    ``flops_per_context_token`` is :func:`attention_flops_per_context_token` (``f = 4 h d``, times the layers
    where the caller sums them); ``prompt_tokens_squared`` is ``L^2``, or ``E[L^2]`` for the mean over a length
    distribution. Token ``i`` attends to ``i`` earlier tokens, about ``L^2 / 2`` pairs in all. Broadcasts; FLOPs.
    References: HYDRA Sec. III-B (prefill attention), NOVA Sec. VI-A and SNAKE Sec. 6.4 (GPU prefill).
    """
    return np.asarray(flops_per_context_token) * np.asarray(prompt_tokens_squared) / 2.0


def kv_cache_bytes_per_token(kv_heads: int, head_dim: int, bytes_per_element: float) -> float:
    """Return the KV-cache bytes one context token holds in one attention layer: ``2 h_kv d b``.

    One K and one V vector of ``head_dim`` (``d``) elements of ``bytes_per_element`` (``b``, 2 for BF16) bytes
    for each of the ``kv_heads`` (``h_kv``, of one device if tensor-parallel) KV heads; returns bytes (float).

    References
    ----------
    GQA (Ainslie et al. 2023): ``h_kv`` shared K/V heads; HYDRA Eq. 1 (KV memory per request), NOVA Sec. III-A.
    """
    return 2.0 * kv_heads * head_dim * bytes_per_element


def mla_kv_cache_bytes_per_token(kv_lora_rank: int, qk_rope_head_dim: int, bytes_per_element: float) -> float:
    """Return the KV-cache bytes one context token holds in one MLA layer: ``(r_kv + d_rope) b``.

    Multi-head latent attention caches one compressed latent of ``kv_lora_rank`` (``r_kv``) values and one
    decoupled RoPE key of ``qk_rope_head_dim`` (``d_rope``) values per token, shared by all heads, at
    ``bytes_per_element`` (``b``) bytes each; returns bytes (float). E.g. DeepSeek-V2/V3: (512 + 64) x 2 = 1152 B.

    References
    ----------
    DeepSeek-V2 (arXiv:2405.04434) Sec. 2.1.2 and Table 1: KV cache per token ``(d_c + d_h^R) l`` elements.
    """
    return float((kv_lora_rank + qk_rope_head_dim) * bytes_per_element)


def mla_attention_flops_per_context_token(heads: int, kv_lora_rank: int, qk_rope_head_dim: int) -> float:
    """Return the attention-core FLOPs of one query token per context token in an MLA layer (weight-absorbed).

    With the up-projections absorbed into the query and output projections (DeepSeek-V2 Sec. 2.1.3), each of the
    ``heads`` query heads scores against the cached ``kv_lora_rank + qk_rope_head_dim`` values (``2 (r_kv +
    d_rope)`` FLOPs) and reads back the ``kv_lora_rank`` latent (``2 r_kv``): ``2 h (2 r_kv + d_rope)`` FLOPs.
    """
    return 2.0 * heads * (2 * kv_lora_rank + qk_rope_head_dim)


def mla_params(hidden: int, heads: int, q_lora_rank: int | None, kv_lora_rank: int, qk_nope_head_dim: int,
               qk_rope_head_dim: int, v_head_dim: int) -> tuple[int, int]:
    """Return (all weights, projection weights) of one MLA mixer, block norm excluded.

    Query: ``H r_q + r_q + r_q h (d_nope + d_rope)`` (low-rank with its RMSNorm) or ``H h (d_nope + d_rope)``
    when ``q_lora_rank`` is None (DeepSeek-V2-Lite); key/value: ``H (r_kv + d_rope) + r_kv + r_kv h (d_nope +
    d_v)``; output ``h d_v H``. Sizes are the card's MLA fields (``kv_lora_rank`` r_kv, ...), H = ``hidden``.
    References: DeepSeek-V2 (arXiv:2405.04434) Sec. 2.1 and the deepseek-v2 card's ``computed_params_formula``.
    """
    qk = qk_nope_head_dim + qk_rope_head_dim
    q = hidden * q_lora_rank + q_lora_rank * heads * qk if q_lora_rank else hidden * heads * qk
    kv = hidden * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank * heads * (qk_nope_head_dim + v_head_dim)
    projections = q + kv + heads * v_head_dim * hidden
    return projections + (q_lora_rank or 0) + kv_lora_rank, projections


def gqa_projection_params(hidden: int, heads: int, kv_heads: int, head_dim: int, in_width: int | None = None) -> int:
    """Return the weights of a GQA block's Q, K, V and output projections: ``w h d + 2 w h_kv d + h d H``.

    ``hidden`` is H, ``heads`` / ``kv_heads`` the query / KV heads h / h_kv, ``head_dim`` d and ``in_width`` w
    the width of the block's input (default H; Zamba2's shared block reads 2H). Norms are not included.
    References: the cards' ``computed_params_formula`` (``instances/models/SOURCE.md``); GQA (Ainslie et al.).
    """
    w = in_width or hidden
    return w * heads * head_dim + 2 * w * kv_heads * head_dim + heads * head_dim * hidden


def mamba2_params(hidden: int, d_inner: int, groups: int, state: int, heads: int, conv_kernel: int
                  ) -> tuple[int, int]:
    """Return (mixer weights, in + out projection weights) of one Mamba-2 mixer, block norm excluded.

    Mixer: ``H (2 d_in + 2 G N + nh) + (d_in + 2 G N)(K + 1) + 3 nh + d_in + d_in H`` with H ``hidden``, d_in
    ``d_inner``, G ``groups``, N ``state``, nh ``heads`` and K ``conv_kernel`` (in_proj, conv weights and bias,
    A / D / dt bias, gated norm, out_proj). References: Mamba-2 (Dao and Gu 2024, Sec. 7); the cards'
    ``computed_params_formula``.
    """
    conv_dim = d_inner + 2 * groups * state
    projections = hidden * (2 * d_inner + 2 * groups * state + heads) + d_inner * hidden
    return projections + conv_dim * (conv_kernel + 1) + 3 * heads + d_inner, projections


def moe_params(card: dict[str, Any], hidden: int, experts: int, intermediate: int) -> tuple[int, int, int, int]:
    """Return (weights per routed expert, shared experts, router, latent projections) of one MoE layer.

    An expert has ``(2 or 3) d_e I`` weights (3 when ``mlp_gated``) with ``d_e`` the card's ``moe_latent_size``
    when it has one (LatentMoE, with ``2 H d_e`` projections in and out) and H otherwise; shared experts
    ``m_s (2 or 3) H I_s``; the router ``E H`` plus ``E`` biases when its scoring has a bias; with the card's
    ``extra`` switches (:data:`CARD_EXTRA_FLAGS`) expert biases ``(1 or 2) I + d_e`` and a shared-expert gate H.
    References: the cards' ``computed_params_formula`` (``instances/models/SOURCE.md``).
    """
    mats = 3 if card.get("mlp_gated") else 2
    latent = card.get("moe_latent_size") or 0
    n_shared = card.get("num_shared_experts") or 0
    shared_inter = int(card.get("shared_expert_intermediate_size") or intermediate)
    router_bias = experts if "bias" in str(card.get("moe_router_scoring", "")) else 0
    extra = card.get("extra") or {}
    expert_bias = (mats - 1) * intermediate + (latent or hidden) if extra.get("mlp_bias") else 0
    gate = hidden if extra.get("shared_expert_gate") and n_shared else 0
    return (mats * (latent or hidden) * intermediate + expert_bias, n_shared * mats * hidden * shared_inter,
            experts * hidden + router_bias + gate, 2 * hidden * latent)


def _get(card: dict[str, Any], key: str, source: str) -> Any:
    value = card.get(key)
    if value is None:
        raise SpecError(source, key, "a value is required for this model's layer types, found null/missing")
    return value


def _attention_block(card: dict[str, Any], layer: int, group: MemoryGroup, dt: int, src: str,
                     in_width: int | None = None, stored: bool = True, norm: bool = True) -> Block:
    """GQA block; ``in_width``: width of its input when not the hidden size (Zamba2's shared block reads
    concat[h, embedding], 2H wide); ``stored=False``: a re-use of weight-shared weights; biases, sinks and an
    output gate where the card's ``extra`` sets them (:data:`CARD_EXTRA_FLAGS`); ``norm``: the block's pre-norm."""
    h = _get(card, "hidden_size", src)
    nh = _get(card, "num_attention_heads", src)
    kv = _get(card, "num_key_value_heads", src)
    hd = card.get("head_dim") or h // nh
    w = in_width or h
    extra = card.get("extra") or {}
    gate = nh * hd * w if extra.get("attention_output_gate") else 0
    matmul = gqa_projection_params(h, nh, kv, hd, w) + gate
    qk_norm = 2 * hd if "q/k RMSNorm" in str(card.get("attention_type", "")) else 0
    bias = (nh + 2 * kv) * hd if extra.get("attention_bias") or extra.get("qkv_bias") else 0
    bias += h if extra.get("attention_bias") else 0
    params = matmul + qk_norm + bias + (nh if extra.get("attention_sinks") else 0) + (w if norm else 0)
    return Block(
        name=f"L{layer:02d}.attention", kind="attention", layer=layer, params=params if stored else 0,
        active_params=params, group=group, matmul_flops_per_token=2.0 * matmul,
        attn_flops_per_token_per_ctx=attention_flops_per_context_token(nh, hd),
        kv_bytes_per_token=kv_cache_bytes_per_token(kv, hd, dt),
        shared_params=0 if stored else params,
    )


def _mamba1_block(card: dict[str, Any], layer: int, dt: int, src: str) -> Block:
    """Mamba-1 mixer (Jamba): in_proj H->2E, depthwise conv K, x_proj E->(R+2N), dt_proj R->E, A (E x N), D,
    out_proj E->H, Jamba's dt/B/C RMSNorms (R + 2N; none when the card's ``extra.mamba_dt_bc_norms`` is false,
    plain Mamba), block norm H."""
    h = _get(card, "hidden_size", src)
    e = _get(card, "ssm_d_inner", src)
    n = _get(card, "ssm_state_size", src)
    k = _get(card, "ssm_conv_kernel", src)
    r = _get(card, "mamba_dt_rank", src)
    in_proj, x_proj, dt_proj, out_proj = h * 2 * e, e * (r + 2 * n), r * e, e * h
    inner_norms = r + 2 * n if (card.get("extra") or {}).get("mamba_dt_bc_norms", True) else 0
    params = in_proj + e * k + e + x_proj + dt_proj + e + e * n + e + out_proj + inner_norms + h
    # per token: selective scan over E x N state elements (discretize, update, read-out: ~5 ops each), the
    # causal conv (2k ops per channel) and gating / softplus (~5 per channel)
    vector = 5.0 * e * n + 2.0 * k * e + 5.0 * e
    state = (e * n + e * (k - 1)) * dt
    return Block(
        name=f"L{layer:02d}.mamba1", kind="mamba1", layer=layer, params=params, active_params=params,
        group="mamba", matmul_flops_per_token=2.0 * (in_proj + x_proj + dt_proj + out_proj),
        vector_flops_per_token=vector, state_bytes_per_request=float(state),
    )


def _mamba2_block(card: dict[str, Any], layer: int, dt: int, src: str, norm: bool = True) -> Block:
    """Mamba-2 mixer (:func:`mamba2_params`) with its pre-norm (``norm=False``: Falcon-H1's Mamba-2 half, which
    shares the attention half's input norm)."""
    h = _get(card, "hidden_size", src)
    d_in = _get(card, "ssm_d_inner", src)
    g = _get(card, "ssm_n_groups", src)
    n = _get(card, "ssm_state_size", src)
    nh = _get(card, "mamba_num_heads", src)
    k = _get(card, "ssm_conv_kernel", src)
    conv_dim = d_in + 2 * g * n
    mixer, projections = mamba2_params(h, d_in, g, n, nh, k)
    params = mixer + (h if norm else 0)
    # per token: state update h = exp(dt*A) h + dt*B x (3 ops/element) and read-out y = C h (2 ops/element)
    # over nh * head_dim * N state elements, the causal conv (2k ops per channel) and the gated norm (~5/elt).
    vector = 5.0 * d_in * n + 2.0 * k * conv_dim + 5.0 * d_in
    state = (d_in * n + conv_dim * (k - 1)) * dt
    return Block(
        name=f"L{layer:02d}.mamba2", kind="mamba2", layer=layer, params=params, active_params=params,
        group="mamba", matmul_flops_per_token=2.0 * projections, vector_flops_per_token=vector,
        state_bytes_per_request=float(state),
    )


def _mla_block(card: dict[str, Any], layer: int, dt: int, src: str) -> Block:
    """MLA mixer (DeepSeek-V2/V3, Kimi-K2): projections of :func:`mla_params`, block norm H; KV cache = the latent
    plus the RoPE key (:func:`mla_kv_cache_bytes_per_token`), attention core weight-absorbed."""
    h = _get(card, "hidden_size", src)
    nh = _get(card, "num_attention_heads", src)
    r_kv, rope = _get(card, "kv_lora_rank", src), _get(card, "qk_rope_head_dim", src)
    params, projections = mla_params(h, nh, card.get("q_lora_rank"), r_kv, _get(card, "qk_nope_head_dim", src),
                                     rope, _get(card, "v_head_dim", src))
    return Block(
        name=f"L{layer:02d}.mla", kind="attention", layer=layer, params=params + h, active_params=params + h,
        group="attention", matmul_flops_per_token=2.0 * projections,
        attn_flops_per_token_per_ctx=mla_attention_flops_per_context_token(nh, r_kv, rope),
        kv_bytes_per_token=mla_kv_cache_bytes_per_token(r_kv, rope, dt),
    )


def _extra_size(card: dict[str, Any], key: str, src: str) -> int:
    value = (card.get("extra") or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CARD_DIM:
        raise SpecError(src, f"extra.{key}", f"a whole number 1..{MAX_CARD_DIM} for this model's layer types, got "
                        f"{shorten(value)}")
    return value


def _gated_deltanet_block(card: dict[str, Any], layer: int, dt: int, src: str) -> Block:
    """Gated DeltaNet linear attention (Qwen3-Next), sizes under the card's ``extra`` (``linear_num_key_heads``
    n_k, ``linear_num_value_heads`` n_v, ``linear_key_head_dim`` d_k, ``linear_value_head_dim`` d_v,
    ``linear_conv_kernel_dim`` K): in_proj_qkvz ``H (2 n_k d_k + 2 n_v d_v)``, in_proj_ba ``2 H n_v``, conv
    ``(2 n_k d_k + n_v d_v) K`` (no bias), dt bias and A (``2 n_v``), gated norm ``d_v``, out_proj ``n_v d_v H``,
    block norm H. Its state is fixed-size (``n_v d_k d_v`` + conv ``(K - 1)`` rows per request), so the serving
    model places it with the SSM mixers (a ``mamba2``-kind block, M chiplets). Reference: Qwen3-Next model code
    in Hugging Face transformers (``Qwen3NextGatedDeltaNet``); Gated DeltaNet (Yang et al. 2024)."""
    h = _get(card, "hidden_size", src)
    nk, nv, dk, dv, k = (_extra_size(card, f, src) for f in (
        "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim"))
    key_dim, value_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + value_dim
    projections = h * (2 * key_dim + 2 * value_dim) + 2 * h * nv + value_dim * h
    params = projections + conv_dim * k + 2 * nv + dv + h
    # per token: delta-rule update and read-out over n_v d_k d_v state elements (~6 ops each: decay, k^T S,
    # rank-1 update, q S), the causal conv (2K per channel) and the gated norm (~5 per value element)
    vector = 6.0 * nv * dk * dv + 2.0 * k * conv_dim + 5.0 * value_dim
    return Block(
        name=f"L{layer:02d}.gated_deltanet", kind="mamba2", layer=layer, params=params, active_params=params,
        group="mamba", matmul_flops_per_token=2.0 * projections, vector_flops_per_token=vector,
        state_bytes_per_request=float((nv * dk * dv + conv_dim * (k - 1)) * dt),
    )


def _mlp_block(card: dict[str, Any], layer: int, group: MemoryGroup, src: str) -> Block:
    h = _get(card, "hidden_size", src)
    inter = _get(card, "intermediate_size", src)
    mats = 3 if card.get("mlp_gated") else 2
    matmul = mats * h * inter
    bias = (mats - 1) * inter + h if (card.get("extra") or {}).get("mlp_bias") else 0
    return Block(
        name=f"L{layer:02d}.mlp", kind="mlp", layer=layer, params=matmul + bias + h, active_params=matmul + bias + h,
        group=group, matmul_flops_per_token=2.0 * matmul, vector_flops_per_token=2.0 * inter,
    )


def _shared_mlp_block(card: dict[str, Any], layer: int, group: MemoryGroup, src: str, stored: bool) -> Block:
    """Zamba2 hybrid layer after its shared attention: the shared gated MLP (stored once per shared block),
    plus this layer's own LoRA adapter on it (H*r + r*2I) and its H x H output linear."""
    h = _get(card, "hidden_size", src)
    inter = _get(card, "intermediate_size", src)
    rank = int((card.get("extra") or {}).get("adapter_rank") or 0)
    shared = (3 if card.get("mlp_gated") else 2) * h * inter + h
    own = h * h + h * rank + rank * 2 * inter
    return Block(
        name=f"L{layer:02d}.mlp", kind="mlp", layer=layer, params=own + (shared if stored else 0),
        active_params=own + shared, group=group, matmul_flops_per_token=2.0 * (own + shared - h),
        vector_flops_per_token=2.0 * inter, shared_params=0 if stored else shared,
    )


def _moe_block(card: dict[str, Any], layer: int, group: MemoryGroup, src: str) -> Block:
    h = _get(card, "hidden_size", src)
    e = _get(card, "num_experts", src)
    top_k = _get(card, "num_experts_per_tok", src)
    inter = _get(card, "moe_intermediate_size", src)
    expert, shared, router, projections = moe_params(card, h, e, inter)
    params = e * expert + shared + router + projections + h
    active = top_k * expert + shared + router + projections + h
    return Block(
        name=f"L{layer:02d}.moe", kind="moe", layer=layer, params=params, active_params=active, group=group,
        matmul_flops_per_token=2.0 * (top_k * expert + shared + e * h + projections),
        routed_experts=e, experts_per_token=top_k, expert_params=expert,
    )


def build_descriptor(card: dict[str, Any], key: str, source: str) -> ModelDescriptor:
    """Build the block list of a model from its architecture card.

    Parameters
    ----------
    card : dict
        Parsed card (schema in ``instances/models/SOURCE.md``).
    key : str
        Model key (file stem).
    source : str
        File name, for error messages.

    Returns
    -------
    ModelDescriptor

    Raises
    ------
    SpecError
        A layer type this version does not model, or a missing hyper-parameter.

    Notes
    -----
    Parameter counts: attention ``H*nh*hd + 2*H*kv*hd + nh*hd*H``; Mamba-2 ``H*(2*d_in + 2*G*N + nh) +
    (d_in + 2*G*N)*(K+1) + 3*nh + d_in + d_in*H``; Mamba-1 ``H*2E + E*K + E + E*(R+2N) + R*E + E + E*N + E +
    E*H + R + 2N``; MLP ``(2 or 3)*H*I``; MoE experts, shared experts and router; one RMSNorm of H per block,
    embedding ``V*H``, untied head ``V*H``, final norm ``H``. Zamba2's ``num_mem_blocks`` shared transformer
    blocks (attention on a 2H input, gated MLP) are stored once and re-read by every hybrid layer that uses them
    (``Block.shared_params``); each hybrid layer adds its own LoRA adapter and H x H linear. MLA layers
    (:func:`mla_params`) are attention blocks caching ``(r_kv + d_rope)`` values per token; Falcon-H1's
    ``attention||mamba2`` layer is an attention block and a Mamba-2 block sharing one norm; Qwen3-Next's
    ``gated_deltanet`` layer is a fixed-state block on the SSM side (:data:`SSM_KINDS`). Biases, sinks and gates
    follow the card's ``extra`` switches (:data:`CARD_EXTRA_FLAGS`).
    """
    dt = CARD_DTYPES[card.get("torch_dtype") or "bfloat16"]
    kv_dt = dtype_bytes(card, "kv_cache_dtype", KV_CACHE_DTYPES, dt, source)
    act_dt = dtype_bytes(card, "activation_dtype", ACTIVATION_DTYPES, dt, source)
    h = _get(card, "hidden_size", source)
    if card.get("num_nextn_predict_layers"):
        raise SpecError(source, "num_nextn_predict_layers", "no multi-token-prediction module: the serving model "
                        "does not place or run one (NOVA's decode view, evaluators/nova_model.py, counts it)")
    mixers = _get(card, "layer_mixer", source)
    ffns = _get(card, "layer_ffn", source)
    if len(mixers) != len(ffns):
        raise SpecError(source, "layer_ffn", f"same length as layer_mixer ({len(mixers)}), got {len(ffns)}")
    has_attn = any(m in ("attention", "mla", "attention||mamba2") for m in mixers)
    has_ssm = any(m.startswith("mamba") or m in ("gated_deltanet", "attention||mamba2") for m in mixers)
    group: MemoryGroup = "attention" if has_attn and not has_ssm else "mamba"
    if mixers and mixers[0] in ("attention", "mla"):
        group = "attention"
    vocab = _get(card, "vocab_size", source)
    pad = card.get("vocab_pad_multiple") or 1
    vocab_p = int(math.ceil(vocab / pad) * pad)
    blocks: list[Block] = [
        Block(name="embedding", kind="embedding", layer=-1, params=vocab_p * h, active_params=0,
              group=group, matmul_flops_per_token=0.0)
    ]
    extra = card.get("extra") or {}
    n_shared_blocks = int(extra.get("num_mem_blocks") or 1)
    hybrid = 0  # Zamba2 hybrid layers seen so far; they use shared blocks A, B, A, B, ...
    for i, (mixer, ffn) in enumerate(zip(mixers, ffns, strict=True)):
        if mixer not in SUPPORTED_MIXERS:
            raise SpecError(source, f"layer_mixer[{i}]", f"one of {sorted(SUPPORTED_MIXERS)}, got {shorten(mixer)}")
        if ffn not in SUPPORTED_FFNS:
            raise SpecError(source, f"layer_ffn[{i}]", f"one of {sorted(SUPPORTED_FFNS)}, got {shorten(ffn)}")
        if (ffn == "shared_mlp") != (mixer == "mamba2+shared_attention"):
            msg = f"'shared_mlp' exactly on 'mamba2+shared_attention' layers, got {shorten(mixer)} with {shorten(ffn)}"
            raise SpecError(source, f"layer_ffn[{i}]", msg)
        if mixer == "attention":
            group = "attention"
            blocks.append(_attention_block(card, i, group, kv_dt, source))
        elif mixer == "mla":
            group = "attention"
            blocks.append(_mla_block(card, i, kv_dt, source))
        elif mixer == "attention||mamba2":  # Falcon-H1: both halves read the same normed input
            blocks.append(_attention_block(card, i, "attention", kv_dt, source))
            group = "mamba"
            blocks.append(_mamba2_block(card, i, dt, source, norm=False))
        elif mixer == "gated_deltanet":
            group = "mamba"
            blocks.append(_gated_deltanet_block(card, i, dt, source))
        elif mixer == "mamba":
            group = "mamba"
            blocks.append(_mamba1_block(card, i, dt, source))
        elif mixer == "mamba2":
            group = "mamba"
            blocks.append(_mamba2_block(card, i, dt, source))
        elif mixer == "mamba2+shared_attention":  # shared block (attention, MLP) -> linear -> Mamba-2
            stored = hybrid < n_shared_blocks
            hybrid += 1
            width = int(extra.get("attention_hidden_size") or 2 * h)
            blocks.append(_attention_block(card, i, "attention", kv_dt, source, in_width=width,
                                            stored=stored))
            blocks.append(_shared_mlp_block(card, i, "attention", source, stored))
            group = "mamba"
            blocks.append(_mamba2_block(card, i, dt, source))
        if ffn == "mlp":
            blocks.append(_mlp_block(card, i, group, source))
        elif ffn == "moe":
            blocks.append(_moe_block(card, i, group, source))
    # The LM head is split by vocabulary into shards no larger than the largest layer block (vocab-parallel
    # head), so that no single indivisible task is several layers long; shard parameters add up exactly.
    head_params = (0 if card.get("tie_word_embeddings") else vocab_p * h) + h
    largest = max((b.params for b in blocks[1:]), default=head_params)
    shards = max(1, math.ceil(head_params / largest))
    for s in range(shards):
        share = head_params // shards + (head_params % shards if s == 0 else 0)
        blocks.append(Block(name=f"head.{s}" if shards > 1 else "head", kind="head", layer=len(mixers),
                            params=share, active_params=share, group=group,
                            matmul_flops_per_token=2.0 * vocab_p * h / shards))
    published = card.get("published_params_total_exact") or _get(card, "published_params_total", source)
    q = card.get("quantization") or {}
    return ModelDescriptor(
        name=card.get("name", key), key=key, hidden_size=h, dtype_bytes=dt, blocks=tuple(blocks),
        published_params=float(published), source=str(card.get("published_params_note", "")),
        quantized_kinds=frozenset(q.get("block_kinds") or ()), quantized_bits=float(q.get("bits_per_weight") or 0.0),
        quantized_format=str(q.get("format") or ""), kv_cache_bytes=kv_dt, activation_bytes=act_dt,
        kv_cache_dtype=str(card.get("kv_cache_dtype") or card.get("torch_dtype") or "bfloat16"),
    )


def available_models() -> list[str]:
    """Return the keys of the model cards bundled in ``instances/models``."""
    return sorted(p.stem for p in (instances_dir() / "models").glob("*.json"))


def find_card(ref: str | Path) -> Path:
    """The card file of a bundled key (``instances/models/<key>.json``) or a path to a card JSON.

    Raises
    ------
    SpecError
        An unknown key (source ``model``, field ``name``, listing the bundled keys) or a missing file.
    """
    path = Path(ref)
    if path.suffix != ".json":
        path = instances_dir() / "models" / f"{ref}.json"
        if input_kind_error(path) is not None:
            msg = f"one of {available_models()}, got {shorten(str(ref))}"
            raise SpecError("model", "name", msg)
    problem = input_kind_error(path)
    if problem is not None:
        raise SpecError(str(path), "", problem)
    return path


def check_card(card: dict[str, Any], source: str) -> None:
    """Check a card's numbers and layer lists before any reader uses them.

    Sizes (:data:`CARD_SIZES`) are whole numbers 1..:data:`MAX_CARD_DIM`, counts (:data:`CARD_COUNTS`) 0..that,
    totals (:data:`CARD_TOTALS`) finite and positive; ``layer_mixer`` and ``layer_ffn`` are lists of names and
    ``num_hidden_layers`` equals their length (every layer is in the list the blocks are built from), each name one
    of :data:`SUPPORTED_MIXERS` / :data:`SUPPORTED_FFNS`; every field
    is one of :data:`CARD_FIELDS`; ``torch_dtype`` is one of :data:`CARD_DTYPES`; head and expert counts are
    possible (KV heads divide the attention heads, Mamba heads x head dim = ``ssm_d_inner``, top-k <= experts);
    the derived layer fields (``layer_counts``, ``*_layer_indices``) agree with ``layer_mixer`` / ``layer_ffn``.

    Raises
    ------
    SpecError
        Naming ``source`` (the card file) and the field, e.g. ``hidden_size: a whole number 1..16777216, got 'big'``.
    """
    for key in (*CARD_SIZES, *CARD_COUNTS):
        value, low = card.get(key), 1 if key in CARD_SIZES else 0
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not low <= value <= MAX_CARD_DIM):
            raise SpecError(source, key, f"a whole number {low}..{MAX_CARD_DIM} (a size of the model; null where "
                            f"the model has none), got {shorten(value)}")
    for key in CARD_TOTALS:
        value = card.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value) or value <= 0):
            raise SpecError(source, key, f"a finite parameter count > 0, got {shorten(value)}")
    for key in ("layer_mixer", "layer_ffn"):
        value = card.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise SpecError(source, key, f"a list of layer type names, one per layer, got {shorten(value)}")
    for key, names in (("layer_mixer", SUPPORTED_MIXERS), ("layer_ffn", SUPPORTED_FFNS)):
        for i, v in enumerate(card.get(key) or []):  # before the derived fields, which a bad name also breaks
            if v not in names:
                raise SpecError(source, f"{key}[{i}]", f"one of {sorted(names)}, got {shorten(v)}")
    layers, mixers = card.get("num_hidden_layers"), card.get("layer_mixer")
    if layers is not None and mixers is not None and layers != len(mixers):
        raise SpecError(source, "num_hidden_layers", f"the number of entries of layer_mixer ({len(mixers)}; the "
                        f"blocks are built from that list), got {layers}")
    unknown = sorted(set(card) - CARD_FIELDS)
    if unknown:
        close = difflib.get_close_matches(unknown[0], CARD_FIELDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise SpecError(source, unknown[0][:60], f"a card field of instances/models/SOURCE.md (model-specific "
                        f"settings go under 'extra'), got this unknown field{hint}")
    if card.get("extra") is not None and not isinstance(card["extra"], dict):
        raise SpecError(source, "extra", f"a JSON object of model-specific settings, got {shorten(card['extra'])}")
    dtype = card.get("torch_dtype")
    if dtype is not None and dtype not in CARD_DTYPES:
        raise SpecError(source, "torch_dtype", f"one of {sorted(CARD_DTYPES)} (null reads as bfloat16), got "
                        f"{shorten(dtype)}")
    check_quantization(card.get("quantization"), source)
    try:
        check_schema_version(card.get("schema_version"))
    except ValueError as exc:
        raise SpecError(source, "schema_version", f"{exc} (got {shorten(card.get('schema_version'))})") from None
    dtype_bytes(card, "kv_cache_dtype", KV_CACHE_DTYPES, 2, source)
    dtype_bytes(card, "activation_dtype", ACTIVATION_DTYPES, 2, source)
    for field, expected in _impossible_sizes(card):
        raise SpecError(source, field, expected)
    for field, want in derived_layer_fields(card).items():
        if card.get(field) is not None and card[field] != want:
            raise SpecError(source, field, f"{shorten(want)} as layer_mixer / layer_ffn give (a derived field; "
                            f"correct or remove it), got {shorten(card[field])}")


def _impossible_sizes(card: dict[str, Any]) -> list[tuple[str, str]]:
    """Head and expert counts no model can have, as (field, what was expected); the checks use only sizes the
    card gives (some real models have heads x head_dim != hidden_size, e.g. Qwen3, so that is not one)."""
    h, nh, kv, hd = (card.get(k) for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim"))
    out = []
    if nh and kv and (kv > nh or nh % kv):
        out.append(("num_key_value_heads", f"a divisor of num_attention_heads ({nh}; each KV head serves a whole "
                    f"group of query heads), got {kv}"))
    if h and nh and not hd and h % nh:
        out.append(("num_attention_heads", f"a divisor of hidden_size ({h}) when the card gives no head_dim "
                    f"(head_dim = hidden_size / heads), got {nh}"))
    d_in, mh, mhd = (card.get(k) for k in ("ssm_d_inner", "mamba_num_heads", "mamba_head_dim"))
    if d_in and mh and mhd and mh * mhd != d_in:
        out.append(("mamba_num_heads", f"ssm_d_inner / mamba_head_dim = {d_in} / {mhd} = {d_in / mhd:g} heads "
                    f"(the Mamba-2 heads split the inner width), got {mh}"))
    elif d_in and mh and not mhd and d_in % mh:
        out.append(("mamba_num_heads", f"a divisor of ssm_d_inner ({d_in}), got {mh}"))
    e, k = card.get("num_experts"), card.get("num_experts_per_tok")
    if e and k and k > e:
        out.append(("num_experts_per_tok", f"at most num_experts ({e}; a token is routed to distinct experts), "
                    f"got {k}"))
    return out


def derived_layer_fields(card: dict[str, Any]) -> dict[str, Any]:
    """The card's derived layer fields (SOURCE.md) as its ``layer_mixer`` and ``layer_ffn`` give them: the layers
    holding a KV cache (attention or MLA mixers), SSM state, MoE and dense MLPs, and the count of each type."""
    mixers, ffns = card.get("layer_mixer"), card.get("layer_ffn")
    if mixers is None or ffns is None:
        return {}
    counts = {f"mixer:{m}": mixers.count(m) for m in dict.fromkeys(mixers)}
    counts |= {f"ffn:{f}": ffns.count(f) for f in dict.fromkeys(ffns)}
    return {
        "attention_layer_indices": [i for i, m in enumerate(mixers) if "attention" in m or m == "mla"],
        "ssm_layer_indices": [i for i, m in enumerate(mixers) if "mamba" in m],
        "moe_layer_indices": [i for i, f in enumerate(ffns) if f == "moe"],
        "dense_mlp_layer_indices": [i for i, f in enumerate(ffns) if f in ("mlp", "shared_mlp")],
        "layer_counts": counts,
    }


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


@dataclass(frozen=True)
class _BadNumber:
    """A JSON number a card cannot hold (what :func:`_parse_int` / :func:`_parse_float` return in its place):
    ``expected`` says what was expected, ``text`` is the number as written."""

    text: str
    expected: str


class _BadNumberError(Exception):
    def __init__(self, key: str, bad: _BadNumber) -> None:
        super().__init__(key)
        self.key, self.bad = key, bad


def _parse_int(text: str) -> int | _BadNumber:
    """``json.loads`` ``parse_int``: Python refuses to convert an integer of more than
    ``sys.get_int_max_str_digits()`` digits (a ValueError); mark it so the object hook can name its field."""
    try:
        return int(text)
    except ValueError:
        return _BadNumber(text, f"a number of at most {sys.get_int_max_str_digits()} digits")


def _parse_float(text: str) -> float | _BadNumber:
    """``json.loads`` ``parse_float`` / ``parse_constant``: ``1e400`` reads as infinity and ``NaN`` /
    ``Infinity`` are accepted by Python's json; a card's numbers are finite."""
    value = float(text)
    return value if math.isfinite(value) else _BadNumber(text, "a finite number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` object hook: a key given twice in one object raises (``json`` keeps the last silently), and so
    does a number :func:`_parse_int` / :func:`_parse_float` marked (as the value or an entry of a list value)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        for v in value if isinstance(value, list) else (value,):
            if isinstance(v, _BadNumber):
                raise _BadNumberError(key, v)
        out[key] = value
    return out


def read_card(ref: str | Path) -> tuple[dict[str, Any], Path]:
    """Find and read a model card: by bundled key (e.g. ``"llama-3-70b"``, ``instances/models/<key>.json``) or by
    path to a card JSON. The one card reader: the HYDRA descriptor (:func:`load_model`), the SNAKE operator
    lists and the NOVA layer view are built from its output.

    Returns
    -------
    (dict, Path)
        The parsed card and its file.

    Raises
    ------
    SpecError
        One line: an unknown key (source ``model``, field ``name``, listing the bundled keys), a file that cannot be
        read (:func:`~chipdse.core.io.read_input_text`), invalid JSON or a key given twice, or a field that is
        unknown, out of range or contradicts another (:func:`check_card`; source: the card's path).
    """
    path = find_card(ref)
    card = read_json_object(path, "card fields")
    check_card(card, str(path))
    return card, path


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """Read a JSON file holding one object (a model card, a Hugging Face ``config.json``).

    ``what`` names the object's contents for the message (e.g. ``"card fields"``). Returns the parsed dict.

    Raises
    ------
    SpecError
        One line naming ``path``: a file that cannot be read (:func:`~chipdse.core.io.read_input_text`), invalid
        JSON (with its line), a key given twice, a non-finite or oversized number (naming its key), nesting too
        deep, or a top level that is not an object.
    """
    text = read_input_text(path, "JSON")
    try:
        obj = json.loads(text, object_pairs_hook=_unique_keys, parse_int=_parse_int, parse_float=_parse_float,
                         parse_constant=_parse_float)
    except _BadNumberError as exc:
        raise SpecError(str(path), str(exc.key)[:60], f"{exc.bad.expected}, got {shorten(exc.bad.text)}") from None
    except _DuplicateKey as exc:
        raise SpecError(str(path), str(exc.key)[:60], f"each key once in a JSON object; {shorten(exc.key)} is "
                        "given twice") from None
    except json.JSONDecodeError as exc:
        raise SpecError(str(path), "", f"valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise SpecError(str(path), "", "JSON nested at most a few hundred levels deep") from None
    if not isinstance(obj, dict):
        raise SpecError(str(path), "", f"a JSON object of {what}, got {type(obj).__name__}")
    return obj


def load_model(name_or_path: str | Path) -> ModelDescriptor:
    """Load a model descriptor by bundled key (e.g. ``"nemotron-h-4b"``) or by path to a card JSON.

    Raises
    ------
    SpecError
        Unknown model name (the message lists the bundled ones), unreadable or malformed card.
    """
    card, path = read_card(name_or_path)
    model = build_descriptor(card, path.stem, str(path))
    recount = card.get("computed_params_total")
    if recount is not None and abs(model.total_params / recount - 1) > PARAMS_TOLERANCE:
        msg = (f"within {PARAMS_TOLERANCE:.0%} of the {model.total_params:,} parameters the card's layer lists and "
               f"sizes give (an independent recount; correct or remove it after changing a size), got {recount:,}")
        raise SpecError(str(path), "computed_params_total", msg)
    return model
