"""Decode view of a hybrid LLM for NOVA: parameters by kind, and the per-step work of each offloadable operator.

NOVA offloads three decode operator classes to near-memory processing (NOVA Sec. VI-A): **GQA** (the attention
core over the KV cache), **SSM** (the Mamba-2 state update) and **MoE** (the routed experts). Everything else
(QKV / output projections, SSM in / out projections, routers, shared experts, dense MLPs, latent projections,
embedding and LM head) stays on the GPU.

Parameter counts follow each card's own formula (``computed_params_formula``): Mamba-2
``H(2 d_in + 2 G N + nh) + (d_in + 2 G N)(K + 1) + 3 nh + d_in + d_in H``; GQA ``H nh hd + 2 H kv hd + nh hd H``;
MLP ``(2 or 3) H I``; MoE ``E m d_e I + m_s H I_s + E H (+ E bias) (+ 2 H latent)`` with ``d_e`` the latent
size when there is one; one RMSNorm of H per block, untied embedding and head, final norm; Falcon-H1's parallel
layer holds both mixers; an MTP module is counted in the stored weights but not run.

References
----------
NOVA Sec. III-A (per-operator Op/B), Sec. VI-A (offloaded operators, Table II models).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chipdse.core.errors import SpecError
from chipdse.core.models import gqa_projection_params, kv_cache_bytes_per_token, mamba2_params, moe_params, read_card
from chipdse.core.precision import KV_CACHE_DTYPES, dtype_bytes

BYTES = 2
"""BF16 weights, KV cache and state (NOVA Sec. VI-A)."""


@dataclass(frozen=True)
class LayerWork:
    """One layer's decode work per request (GQA, SSM) or per step (MoE), and its GPU-side parameters.

    Attributes
    ----------
    gpu_params : int
        Parameters the GPU reads each step for this layer (projections, router, shared experts, dense MLP).
    attention : tuple[int, int, int] or None
        (query heads, KV heads, head dim) of a GQA core.
    ssm : tuple[int, int] or None
        (d_inner, d_state) of a Mamba-2 state update.
    moe : tuple[int, int, int] or None
        (experts, top-k, parameters per expert) of the routed experts.
    parallel : bool
        Attention and SSM run side by side on the same input (Falcon-H1).
    conv_state : int
        Elements of the Mamba-2 causal-conv state per request, ``(d_inner + 2 G N)(K - 1)`` (0 without SSM).
    gpu_bytes : float or None
        Bytes of ``gpu_params`` at each part's stored precision (the card's ``quantization``); None: BF16
        (``gpu_params x`` :data:`BYTES`).
    """

    gpu_params: int
    attention: tuple[int, int, int] | None = None
    ssm: tuple[int, int] | None = None
    moe: tuple[int, int, int] | None = None
    parallel: bool = False
    conv_state: int = 0
    gpu_bytes: float | None = None

    @property
    def gpu_weight_bytes(self) -> float:
        """Bytes the GPU reads for ``gpu_params`` each step."""
        return float(self.gpu_params * BYTES) if self.gpu_bytes is None else self.gpu_bytes


@dataclass(frozen=True)
class NovaModel:
    """A model as NOVA sees it.

    Attributes
    ----------
    key, name : str
    published_params : float
        The vendor's total (exact where published).
    params : dict[str, int]
        Stored parameters by kind: ``attention``, ``ssm``, ``routed_experts``, ``other`` (projections of MoE
        layers, routers, shared experts, dense MLPs, norms), ``embedding_head`` and ``mtp``.
    layers : tuple[LayerWork, ...]
    gpu_fixed_params : int
        Parameters read once per step outside the layers (the LM head).
    """

    key: str
    name: str
    published_params: float
    params: dict[str, int] = field(default_factory=dict)
    layers: tuple[LayerWork, ...] = ()
    gpu_fixed_params: int = 0
    kv_cache_bytes: int = BYTES
    """Bytes per cached K / V value: the card's ``kv_cache_dtype`` (:data:`chipdse.core.precision.KV_CACHE_DTYPES`),
    BF16 by default (NOVA Sec. VI-A)."""
    expert_param_bytes: float = BYTES
    """Bytes per routed-expert weight: the card's ``quantization.bits_per_weight / 8`` when it quantizes ``moe``
    blocks, else BF16."""
    stored_bytes: float | None = None
    """All stored weights in bytes at each part's precision; None: BF16 (``total_params x`` :data:`BYTES`)."""

    @property
    def weight_bytes(self) -> float:
        """All stored weights in bytes (:attr:`stored_bytes`)."""
        return float(self.total_params * BYTES) if self.stored_bytes is None else self.stored_bytes

    @property
    def total_params(self) -> int:
        """All stored parameters."""
        return sum(self.params.values())

    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per context token over every attention layer."""
        return float(sum(kv_cache_bytes_per_token(a[1], a[2], self.kv_cache_bytes)
                         for a in (w.attention for w in self.layers) if a))

    def state_bytes_per_request(self) -> float:
        """Recurrent state bytes per request: per Mamba-2 layer the SSM state (``d_inner x d_state``) and the
        causal-conv state (``(d_inner + 2 G N)(K - 1)``, about 3% of it), in BF16 (NOVA Sec. V-A, Fig. 8(b))."""
        return float(sum((w.ssm[0] * w.ssm[1] + w.conv_state) * BYTES for w in self.layers if w.ssm))


def _get(card: dict, key: str) -> int:
    value = card.get(key)
    if value is None:
        raise SpecError(card.get("name", "model card"), key, "a value for this model's layer types")
    return int(value)


def _mamba2(card: dict) -> tuple[int, tuple[int, int], int, int]:
    """(mixer parameters, (d_inner, d_state), in/out projection parameters, conv-state elements per request) of one
    Mamba-2 mixer."""
    h, d_in, g, n, nh, k = (_get(card, f) for f in ("hidden_size", "ssm_d_inner", "ssm_n_groups", "ssm_state_size",
                                                    "mamba_num_heads", "ssm_conv_kernel"))
    mixer, proj = mamba2_params(h, d_in, g, n, nh, k)
    return mixer, (d_in, n), proj, (d_in + 2 * g * n) * (k - 1)


def _gqa(card: dict) -> tuple[int, tuple[int, int, int]]:
    h, nh, kv = (_get(card, f) for f in ("hidden_size", "num_attention_heads", "num_key_value_heads"))
    hd = int(card.get("head_dim") or h // nh)
    return gqa_projection_params(h, nh, kv, hd), (nh, kv, hd)


def _moe(card: dict) -> tuple[int, int, tuple[int, int, int]]:
    """(other MoE parameters, routed expert parameters, (experts, top-k, per-expert parameters))."""
    h, e, top_k, inter = (_get(card, f) for f in ("hidden_size", "num_experts", "num_experts_per_tok",
                                                  "moe_intermediate_size"))
    per_expert, shared, router, projections = moe_params(card, h, e, inter)
    return shared + router + projections, e * per_expert, (e, top_k, per_expert)


def build_nova_model(card: dict, key: str) -> NovaModel:
    """Build the NOVA decode view of a model card (schema of ``instances/models/SOURCE.md``).

    Raises
    ------
    SpecError
        A layer type NOVA's offload model does not cover (e.g. MLA) or a missing hyper-parameter.
    """
    h = _get(card, "hidden_size")
    q = card.get("quantization") or {}
    kinds, bits = set(q.get("block_kinds") or ()), float(q.get("bits_per_weight") or 8 * BYTES)

    def width(kind: str) -> float:  # bytes per stored weight of a block kind (core.precision)
        return bits / 8.0 if kind in kinds else float(BYTES)

    params = dict.fromkeys(("attention", "ssm", "routed_experts", "other", "embedding_head", "mtp"), 0)
    layers, stored = [], 0.0
    for i, (mixer, ffn) in enumerate(zip(card["layer_mixer"], card["layer_ffn"], strict=True)):
        gpu, gpu_b, att, ssm, moe, conv = 0, 0.0, None, None, None, 0
        if mixer in ("attention", "attention||mamba2"):
            p, att = _gqa(card)
            params["attention"] += p + h
            gpu += p
            gpu_b += p * width("attention")
            stored += p * width("attention") + h * BYTES
        if mixer in ("mamba2", "attention||mamba2"):
            p, ssm, proj, conv = _mamba2(card)
            params["ssm"] += p + (h if mixer == "mamba2" else 0)
            gpu += proj
            gpu_b += proj * width("mamba2")
            stored += p * width("mamba2") + (h if mixer == "mamba2" else 0) * BYTES
        if mixer not in ("attention", "mamba2", "attention||mamba2", "none"):
            raise SpecError(str(card.get("name", key)), f"layer_mixer[{i}]", f"GQA / Mamba-2 layers, got {mixer!r}")
        if ffn == "mlp":
            p = (3 if card.get("mlp_gated") else 2) * h * _get(card, "intermediate_size")
            params["other"] += p + h
            gpu += p
            gpu_b += p * width("mlp")
            stored += p * width("mlp") + h * BYTES
        elif ffn == "moe":
            other, routed, moe = _moe(card)
            params["other"] += other + h
            params["routed_experts"] += routed
            gpu += other
            gpu_b += other * width("moe")
            stored += (other + routed) * width("moe") + h * BYTES
        elif ffn != "none":
            raise SpecError(str(card.get("name", key)), f"layer_ffn[{i}]", f"mlp, moe or none, got {ffn!r}")
        layers.append(LayerWork(gpu, att, ssm, moe, parallel=mixer == "attention||mamba2", conv_state=conv,
                                gpu_bytes=gpu_b))
    vocab = _get(card, "vocab_size")
    head = 0 if card.get("tie_word_embeddings") else vocab * h
    params["embedding_head"] = vocab * h + head + h
    stored += params["embedding_head"] * BYTES  # embedding and head stay 16-bit (core.precision.LINEAR_KINDS)
    if card.get("num_nextn_predict_layers"):
        att_p, _ = _gqa(card)
        other, routed, _ = _moe(card)
        params["mtp"] = 2 * h * h + 3 * h + att_p + h + other + routed + h  # eh_proj, norms, one attn + one MoE
        stored += params["mtp"] * BYTES
    published = card.get("published_params_total_exact") or card.get("published_params_total")
    name = str(card.get("name", key))
    return NovaModel(key, name, float(published), params, tuple(layers), gpu_fixed_params=vocab * h,
                     kv_cache_bytes=dtype_bytes(card, "kv_cache_dtype", KV_CACHE_DTYPES, BYTES, name),
                     expert_param_bytes=width("moe"), stored_bytes=stored)


def load_nova_model(key: str) -> NovaModel:
    """Load a bundled card (``instances/models``) as a :class:`NovaModel`.

    Raises
    ------
    SpecError
        Missing or malformed card (from :func:`chipdse.core.models.read_card`) or unsupported layer type.
    """
    return build_nova_model(read_card(key)[0], key)
