"""Model descriptors: ordered block lists built from real hyper-parameters (instances/models/*.json).

Each block carries its parameter count, weight bytes and the per-token costs the latency tables need:
matrix FLOPs, vector (element-wise) FLOPs, KV-cache bytes per token and SSM-state bytes per request.
The parameter count summed over the blocks is checked against the published total (tests).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from chipdse.errors import SpecError
from chipdse.paths import instances_dir

BlockKind = Literal["embedding", "attention", "mamba2", "mlp", "moe", "head"]
MemoryGroup = Literal["attention", "mamba"]

#: Mixers and FFNs this version builds; other cards load with a clear error.
SUPPORTED_MIXERS = {"attention", "mamba2", "none"}
SUPPORTED_FFNS = {"mlp", "moe", "none"}


@dataclass(frozen=True)
class Block:
    """One schedulable block of a model (a task of HYDRA Sec. III-B, per phase).

    Attributes
    ----------
    name : str
        E.g. ``"L07.attention"``.
    kind : BlockKind
        Operator family; decides chiplet compatibility (attention -> A chiplets, mamba2 -> M chiplets,
        mlp / moe / embedding / head -> any compute chiplet).
    layer : int
        Layer index (-1 for the embedding, ``num_layers`` for the head).
    params : int
        Parameters of the block (its pre-norm included).
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
        SSM state + conv state bytes per request (mamba2 only).
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
        Bytes per weight / activation / cache element (2 for bf16).
    blocks : tuple[Block, ...]
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

    @cached_property
    def total_params(self) -> int:
        """Parameters summed over all blocks (embedding, head and final norm included)."""
        return sum(b.params for b in self.blocks)

    @cached_property
    def weight_bytes(self) -> float:
        """All weights in bytes at ``dtype_bytes`` per parameter."""
        return float(self.total_params * self.dtype_bytes)

    @cached_property
    def families(self) -> tuple[str, ...]:
        """Chiplet families the model needs: ``"attention"`` and/or ``"mamba"``."""
        fams = []
        if any(b.kind == "attention" for b in self.blocks):
            fams.append("attention")
        if any(b.kind == "mamba2" for b in self.blocks):
            fams.append("mamba")
        return tuple(fams)

    def group_weight_bytes(self, group: str) -> float:
        """Weight bytes of the blocks in one HBM group (HYDRA Eq. 1: L_M * W_M, or the attention side)."""
        return float(sum(b.params for b in self.blocks if b.group == group) * self.dtype_bytes)

    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per context token over all attention layers."""
        return float(sum(b.kv_bytes_per_token for b in self.blocks))

    def state_bytes_per_request(self) -> float:
        """SSM (+ conv) state bytes per request over all Mamba layers (HYDRA Eq. 1: S_M)."""
        return float(sum(b.state_bytes_per_request for b in self.blocks))


def _get(card: dict[str, Any], key: str, source: str) -> Any:
    value = card.get(key)
    if value is None:
        raise SpecError(source, key, "a value is required for this model's layer types, found null/missing")
    return value


def _attention_block(card: dict[str, Any], layer: int, group: MemoryGroup, dt: int, src: str) -> Block:
    h = _get(card, "hidden_size", src)
    nh = _get(card, "num_attention_heads", src)
    kv = _get(card, "num_key_value_heads", src)
    hd = card.get("head_dim") or h // nh
    matmul = h * nh * hd + 2 * h * kv * hd + nh * hd * h
    qk_norm = 2 * hd if "q/k RMSNorm" in str(card.get("attention_type", "")) else 0
    params = matmul + qk_norm + h
    return Block(
        name=f"L{layer:02d}.attention", kind="attention", layer=layer, params=params, active_params=params,
        group=group, matmul_flops_per_token=2.0 * matmul,
        attn_flops_per_token_per_ctx=4.0 * nh * hd, kv_bytes_per_token=2.0 * kv * hd * dt,
    )


def _mamba2_block(card: dict[str, Any], layer: int, dt: int, src: str) -> Block:
    h = _get(card, "hidden_size", src)
    d_in = _get(card, "ssm_d_inner", src)
    g = _get(card, "ssm_n_groups", src)
    n = _get(card, "ssm_state_size", src)
    nh = _get(card, "mamba_num_heads", src)
    k = _get(card, "ssm_conv_kernel", src)
    conv_dim = d_in + 2 * g * n
    in_proj = h * (2 * d_in + 2 * g * n + nh)
    out_proj = d_in * h
    params = in_proj + conv_dim * (k + 1) + 3 * nh + d_in + out_proj + h
    # per token: state update h = exp(dt*A) h + dt*B x (3 ops/element) and read-out y = C h (2 ops/element)
    # over nh * head_dim * N state elements, the causal conv (2k ops per channel) and the gated norm (~5/elt).
    vector = 5.0 * d_in * n + 2.0 * k * conv_dim + 5.0 * d_in
    state = (d_in * n + conv_dim * (k - 1)) * dt
    return Block(
        name=f"L{layer:02d}.mamba2", kind="mamba2", layer=layer, params=params, active_params=params,
        group="mamba", matmul_flops_per_token=2.0 * (in_proj + out_proj), vector_flops_per_token=vector,
        state_bytes_per_request=float(state),
    )


def _mlp_block(card: dict[str, Any], layer: int, group: MemoryGroup, src: str) -> Block:
    h = _get(card, "hidden_size", src)
    inter = _get(card, "intermediate_size", src)
    mats = 3 if card.get("mlp_gated") else 2
    matmul = mats * h * inter
    return Block(
        name=f"L{layer:02d}.mlp", kind="mlp", layer=layer, params=matmul + h, active_params=matmul + h,
        group=group, matmul_flops_per_token=2.0 * matmul, vector_flops_per_token=2.0 * inter,
    )


def _moe_block(card: dict[str, Any], layer: int, group: MemoryGroup, src: str) -> Block:
    h = _get(card, "hidden_size", src)
    e = _get(card, "num_experts", src)
    top_k = _get(card, "num_experts_per_tok", src)
    inter = _get(card, "moe_intermediate_size", src)
    mats = 3 if card.get("mlp_gated") else 2
    n_shared = card.get("num_shared_experts") or 0
    shared_inter = card.get("shared_expert_intermediate_size") or inter
    router_bias = e if "bias" in str(card.get("moe_router_scoring", "")) else 0
    expert = mats * h * inter
    shared = n_shared * mats * h * shared_inter
    router = e * h + router_bias
    params = e * expert + shared + router + h
    active = top_k * expert + shared + router + h
    return Block(
        name=f"L{layer:02d}.moe", kind="moe", layer=layer, params=params, active_params=active, group=group,
        matmul_flops_per_token=2.0 * (top_k * expert + shared + e * h),
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
    (d_in + 2*G*N)*(K+1) + 3*nh + d_in + d_in*H``; MLP ``(2 or 3)*H*I``; MoE experts, shared experts and router;
    one RMSNorm of H per block, embedding ``V*H``, untied head ``V*H``, final norm ``H``.
    """
    dt = 2 if str(card.get("torch_dtype") or "bfloat16") in ("bfloat16", "float16") else 4
    h = _get(card, "hidden_size", source)
    mixers = _get(card, "layer_mixer", source)
    ffns = _get(card, "layer_ffn", source)
    if len(mixers) != len(ffns):
        raise SpecError(source, "layer_ffn", f"same length as layer_mixer ({len(mixers)}), got {len(ffns)}")
    has_attn = "attention" in mixers
    group: MemoryGroup = "attention" if has_attn and "mamba2" not in mixers else "mamba"
    if mixers and mixers[0] == "attention":
        group = "attention"
    vocab = _get(card, "vocab_size", source)
    pad = card.get("vocab_pad_multiple") or 1
    vocab_p = int(math.ceil(vocab / pad) * pad)
    blocks: list[Block] = [
        Block(name="embedding", kind="embedding", layer=-1, params=vocab_p * h, active_params=0,
              group=group, matmul_flops_per_token=0.0)
    ]
    for i, (mixer, ffn) in enumerate(zip(mixers, ffns, strict=True)):
        if mixer not in SUPPORTED_MIXERS:
            raise SpecError(source, f"layer_mixer[{i}]", f"one of {sorted(SUPPORTED_MIXERS)}, got {mixer!r}")
        if ffn not in SUPPORTED_FFNS:
            raise SpecError(source, f"layer_ffn[{i}]", f"one of {sorted(SUPPORTED_FFNS)}, got {ffn!r}")
        if mixer == "attention":
            group = "attention"
            blocks.append(_attention_block(card, i, group, dt, source))
        elif mixer == "mamba2":
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
    return ModelDescriptor(
        name=card.get("name", key), key=key, hidden_size=h, dtype_bytes=dt, blocks=tuple(blocks),
        published_params=float(published), source=str(card.get("published_params_note", "")),
    )


def available_models() -> list[str]:
    """Return the keys of the model cards bundled in ``instances/models``."""
    return sorted(p.stem for p in (instances_dir() / "models").glob("*.json"))


def load_model(name_or_path: str | Path) -> ModelDescriptor:
    """Load a model descriptor by bundled key (e.g. ``"nemotron-h-4b"``) or by path to a card JSON.

    Raises
    ------
    SpecError
        Unknown model name (the message lists the bundled ones), unreadable or malformed card.
    """
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = instances_dir() / "models" / f"{name_or_path}.json"
        if not path.exists():
            msg = f"one of {available_models()}, got {str(name_or_path)!r}"
            raise SpecError("model", "name", msg)
    if not path.exists():
        raise SpecError(str(path), "", "file not found")
    try:
        card = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SpecError(str(path), "", f"valid JSON ({exc.msg} at line {exc.lineno})") from None
    return build_descriptor(card, path.stem, path.name)
