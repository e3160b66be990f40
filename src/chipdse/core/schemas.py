"""JSON Schemas of every input file (issue 19): scenario, chiplet library, package, workload and model card.

The scenario, library, package and workload schemas come from the pydantic specs that read those files
(:mod:`chipdse.core.specs`); the model card schema from :class:`ModelCard`, which describes what the one card reader
(:func:`chipdse.core.models.read_card` and :func:`~chipdse.core.models.check_card`) accepts, field by field, with
units. ``chipdse schema KIND`` prints them; the bundled copies in ``instances/schemas/`` are what the bundled YAML
files name in their ``# yaml-language-server: $schema=...`` line, so an editor with the YAML language server
completes and checks them (tests/test_schema.py keeps the copies up to date and validates every bundled file).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from chipdse.core.io import write_text_atomic
from chipdse.core.models import MAX_CARD_DIM
from chipdse.core.paths import instances_dir
from chipdse.core.specs import SCHEMA_VERSION, ChipletLibrary, Package, ScenarioSpec, Workload

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema version pydantic writes (draft 2020-12)."""

_SIZE: dict[str, Any] = {"ge": 1, "le": MAX_CARD_DIM}
_COUNT: dict[str, Any] = {"ge": 0, "le": MAX_CARD_DIM}


def _size(description: str) -> Any:
    """A card size: a whole number 1..:data:`~chipdse.core.models.MAX_CARD_DIM`, or null where the model has none."""
    return Field(None, **_SIZE, description=description)


def _count(description: str) -> Any:
    """A card count: a whole number 0..:data:`~chipdse.core.models.MAX_CARD_DIM`, or null."""
    return Field(None, **_COUNT, description=description)


def _total(description: str) -> Any:
    """A parameter total: a number > 0, or null."""
    return Field(None, gt=0, description=description)


def _text(description: str) -> Any:
    """A free-text field, or null."""
    return Field(None, description=description)


class ModelCard(BaseModel):
    """A model card (``instances/models/<key>.json``): the architecture hyper-parameters of one public model, with
    its published and recounted parameter counts (``instances/models/SOURCE.md``). ``null`` = not applicable or
    not verified. Only what :func:`chipdse.core.models.check_card` accepts; the readers ask for the sizes their
    layer types need."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False,
                              json_schema_extra={"title": "chipdse model card"})

    schema_version: int | None = Field(None, ge=1, le=SCHEMA_VERSION, description=f"The input schema version the "
                                       f"card was written for (this chipdse reads up to {SCHEMA_VERSION}); absent: "
                                       "the current one.")
    name: str | None = _text("Display name, e.g. 'Llama-3-8B' (default: the file's key).")
    architecture_family: str | None = _text("Free-text family, e.g. 'dense_transformer' or 'hybrid_mamba2_attention'.")
    hf_model_type: str | None = _text("The Hugging Face config's model_type, e.g. 'llama', 'nemotron_h'.")
    hf_repo: str | None = _text("The Hugging Face repository the hyper-parameters come from, e.g. "
                                "'meta-llama/Meta-Llama-3-8B'.")
    hidden_size: int = Field(ge=1, le=MAX_CARD_DIM, description="Model width H, values per token (1..16,777,216).")
    num_hidden_layers: int = Field(ge=1, le=MAX_CARD_DIM, description="Layers, each one entry of layer_mixer and "
                                   "layer_ffn (must equal their length).")
    layer_mixer: list[str] = Field(min_length=1, description="Token mixer of each layer: attention, mla, mamba "
                                   "(Mamba-1), mamba2, attention||mamba2 (both in parallel, Falcon-H1), "
                                   "mamba2+shared_attention (Zamba2) or none.")
    layer_ffn: list[str] = Field(min_length=1, description="Feed-forward of each layer: mlp (dense), moe, shared_mlp "
                                 "(Zamba2's weight-shared MLP) or none.")
    layer_counts: dict[str, int] | None = Field(None, description="Derived: layers per 'mixer:<name>' and "
                                                "'ffn:<name>' (must agree with the lists).")
    attention_layer_indices: list[int] | None = Field(None, description="Derived: layers holding a KV cache "
                                                      "(attention or MLA mixers), 0-based.")
    ssm_layer_indices: list[int] | None = Field(None, description="Derived: layers holding SSM conv and state, "
                                                "0-based.")
    moe_layer_indices: list[int] | None = Field(None, description="Derived: MoE layers, 0-based.")
    dense_mlp_layer_indices: list[int] | None = Field(None, description="Derived: dense (or shared) MLP layers, "
                                                      "0-based.")
    layer_pattern_native: dict[str, Any] | None = Field(None, description="The model's own layer encoding, kept "
                                                        "for reference (e.g. hybrid_override_pattern).")
    num_attention_heads: int | None = _size("Query heads per attention layer.")
    num_key_value_heads: int | None = _size("KV heads per attention layer (GQA; a divisor of the query heads).")
    head_dim: int | None = _size("Values per attention head (default hidden_size / num_attention_heads).")
    attention_type: str | None = _text("Free text, e.g. 'GQA', 'MHA', 'MLA ...'.")
    position_embedding: str | None = _text("Free text, e.g. 'rope', 'none (NoPE)'.")
    rope_theta: float | None = Field(None, gt=0, description="RoPE base (unitless).")
    kv_lora_rank: int | None = _size("MLA: compressed KV latent width, values per token per layer.")
    q_lora_rank: int | None = _size("MLA: compressed query width, values.")
    qk_rope_head_dim: int | None = _size("MLA: decoupled RoPE key width per head, values.")
    qk_nope_head_dim: int | None = _size("MLA: non-RoPE query / key width per head, values.")
    v_head_dim: int | None = _size("MLA: value width per head, values.")
    intermediate_size: int | None = _size("Dense MLP inner width, values.")
    mlp_gated: bool | None = Field(None, description="Gated MLP (SwiGLU: 3 matrices) or plain (2 matrices).")
    activation: str | None = _text("Free text, e.g. 'silu (SwiGLU)', 'relu2'.")
    num_experts: int | None = _size("Routed experts per MoE layer.")
    num_experts_per_tok: int | None = _size("Routed experts per token (top-k; at most num_experts).")
    moe_intermediate_size: int | None = _size("Inner width of one routed expert, values.")
    num_shared_experts: int | None = _count("Shared (always active) experts per MoE layer.")
    shared_expert_intermediate_size: int | None = _size("Inner width of the shared experts together, values.")
    moe_router_scoring: str | None = _text("Free text, e.g. 'softmax', 'sigmoid'.")
    routed_scaling_factor: float | None = Field(None, gt=0, description="Scale of the routed experts' output "
                                                "(unitless).")
    moe_latent_size: int | None = _size("Latent MoE: width the experts run at (projected from and back to H), "
                                        "values.")
    first_k_dense_replace: int | None = _count("Leading layers with a dense MLP instead of MoE (DeepSeek).")
    moe_topk_groups: dict[str, Any] | None = Field(None, description="Group-limited routing, e.g. {n_group, "
                                                   "topk_group}.")
    num_nextn_predict_layers: int | None = _count("Multi-token-prediction layers (not served; counted apart).")
    ssm_variant: str | None = _text("mamba (Mamba-1) or mamba2.")
    ssm_state_size: int | None = _size("SSM state per channel d_state, values.")
    ssm_expand: int | None = _size("SSM expansion factor (d_inner = expand x H when ssm_d_inner is null).")
    ssm_d_inner: int | None = _size("SSM inner width, values.")
    ssm_n_groups: int | None = _size("Mamba-2 B / C groups.")
    ssm_conv_kernel: int | None = _size("Causal convolution width, tokens.")
    mamba_head_dim: int | None = _size("Mamba-2 head width, values.")
    mamba_num_heads: int | None = _size("Mamba-2 heads (x mamba_head_dim = ssm_d_inner).")
    ssm_chunk_size: int | None = _size("Mamba-2 scan chunk, tokens.")
    mamba_dt_rank: int | None = _size("Mamba-1 dt projection rank, values.")
    vocab_size: int = Field(ge=1, le=MAX_CARD_DIM, description="Vocabulary, tokens (1..16,777,216).")
    vocab_pad_multiple: int | None = _size("Embedding rows padded to a multiple of this, tokens.")
    tie_word_embeddings: bool | None = Field(None, description="The LM head shares the input embedding's weights.")
    max_position_embeddings: int | None = _size("Longest context, tokens.")
    torch_dtype: Literal["bfloat16", "float16", "float32"] | None = Field(
        None, description="Weight data type: bfloat16 / float16 (2 bytes per value) or float32 (4); null reads as "
        "bfloat16.")
    norm_type: str | None = _text("Free text, e.g. 'RMSNorm', 'LayerNorm'.")
    norm_eps: float | None = Field(None, ge=0, description="Normalization epsilon (unitless).")
    extra: dict[str, Any] | None = Field(None, description="Model-specific settings (e.g. Zamba2's shared block, "
                                         "rope_scaling).")
    inferred_not_verified: dict[str, Any] | None = Field(None, description="Values assumed rather than read, and why.")
    published_params_total: float | None = _total("Published total parameters, as the vendor rounds them (e.g. "
                                                  "8.03e9).")
    published_params_total_exact: float | None = _total("Exact published total parameters, where a tensor count "
                                                        "is published.")
    published_params_active: float | None = _total("Published active parameters per token (MoE).")
    published_params_note: str | None = _text("Where the published counts come from.")
    computed_params_total: float | None = _total("Independent recount of the total parameters (must be within 1% "
                                                 "of what the layer lists and sizes give).")
    computed_params_active: float | None = _total("Recount of the active parameters per token.")
    computed_params_active_definition: str | None = _text("What 'active' counts.")
    computed_params_formula: str | None = _text("The recount's formula, one line.")
    computed_params_breakdown: dict[str, Any] | None = Field(None, description="The recount per part, parameters.")
    computed_vs_published_total: str | None = _text("The recount against the published total, e.g. '-0.02%'.")
    source: list[dict[str, Any]] | str | None = Field(None, description="References: a list of {ref, fields}.")
    uncertain_fields: list[str] | None = Field(None, description="Fields not verified, and why.")
    notes: str | None = _text("Anything else a reader should know.")
    quantization: dict[str, Any] | None = Field(None, description="Quantized weights (chipdse.core.precision): "
                                                "{format: fp8|mxfp4|int8|int4, bits_per_weight: bits with block "
                                                "scales, block_kinds: the linear block kinds stored so, from: text}.")
    kv_cache_dtype: Literal["bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2", "int8"] | None = Field(
        None, description="Data type of the KV cache (chipdse.core.precision.KV_CACHE_DTYPES); torch_dtype when "
                          "absent.")
    activation_dtype: Literal["bfloat16", "float16", "float32", "fp8", "int8"] | None = Field(
        None, description="Data type of the activations passed between blocks (W8A8 serving: fp8 or int8); "
                          "torch_dtype when absent.")


SCHEMAS: dict[str, Any] = {"scenario": ScenarioSpec, "library": ChipletLibrary, "package": Package,
                           "workload": Workload, "model": ModelCard}
"""The pydantic type of each input file kind ``chipdse schema`` prints."""

TITLES = {"scenario": "chipdse scenario (kind: hydra, snake or nova)", "library": "chipdse chiplet library",
          "package": "chipdse package", "workload": "chipdse workload", "model": "chipdse model card"}
"""The title of each schema."""


def schema_dir() -> Path:
    """The bundled schema files: ``instances/schemas/<kind>.schema.json``."""
    return instances_dir() / "schemas"


def json_schema(kind: str) -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of one input file kind, from its pydantic model.

    Parameters
    ----------
    kind : str
        One of :data:`SCHEMAS`: ``scenario``, ``library``, ``package``, ``workload`` or ``model``.

    Returns
    -------
    dict
        The schema: every field with its type, bounds, default and description (units included), its ``version``
        (:data:`chipdse.core.specs.SCHEMA_VERSION`, also in its ``$id``: ``urn:chipdse:schema:<kind>:v<N>``).

    Raises
    ------
    ValueError
        An unknown ``kind``, listing the kinds.
    """
    if kind not in SCHEMAS:
        msg = f"KIND: must be one of {list(SCHEMAS)}, got {kind!r}"
        raise ValueError(msg)
    schema = TypeAdapter(SCHEMAS[kind]).json_schema()
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": f"urn:chipdse:schema:{kind}:v{SCHEMA_VERSION}",
            "title": TITLES[kind], "version": SCHEMA_VERSION, **{k: v for k, v in schema.items() if k != "title"}}


def schema_text(kind: str) -> str:
    """:func:`json_schema` as the text of a schema file: indented JSON ending in a newline."""
    return json.dumps(json_schema(kind), indent=2) + "\n"


def write_schemas(folder: Path, kinds: Sequence[str] | None = None) -> list[Path]:
    """Write each kind's schema (default: every kind of :data:`SCHEMAS`) to ``folder/<kind>.schema.json``, each
    atomically, and return the paths in that order.

    Raises
    ------
    ValueError
        An unknown kind (nothing is written).
    OSError
        The folder or a file cannot be written.
    """
    texts = {kind: schema_text(kind) for kind in (SCHEMAS if kinds is None else kinds)}
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind, text in texts.items():
        path = folder / f"{kind}.schema.json"
        write_text_atomic(path, text)
        paths.append(path)
    return paths
