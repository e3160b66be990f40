"""Weight precision: quantized formats, their bits per weight with block scales, and a Hugging Face
``quantization_config`` read into a card's ``quantization`` field.

A card's ``quantization`` is ``{"format": "fp8", "bits_per_weight": 8.002, "block_kinds": ["attention", "mlp",
"moe"], "from": "..."}``: the blocks of those kinds store their weights at ``bits_per_weight`` (scales included),
every other block (embedding, head, and any kind not listed) at the card's ``torch_dtype``; HYDRA's descriptor and
NOVA's model (:mod:`chipdse.evaluators.nova_model`: experts, GPU-side projections, capacity) read it, SNAKE's
operator lists stay BF16. The KV cache is stored
at the card's ``kv_cache_dtype`` and activations move at its ``activation_dtype`` (:data:`KV_CACHE_DTYPES`,
:data:`ACTIVATION_DTYPES`), each ``torch_dtype`` when absent.

Bits per weight, scales included (the sources of :data:`WEIGHT_FORMATS`):

- ``fp8``: E4M3 values with one FP32 scale per 128 x 128 block (DeepSeek-V3 technical report, arXiv:2412.19437,
  Sec. 3.3; the ``weight_block_size`` of its ``quantization_config``): 8 + 32 / 16,384 bits.
- ``mxfp4``: FP4 (E2M1) values with one E8M0 scale per 32 values (OCP Microscaling Formats (MX) Specification
  v1.0, 2023, Sec. 5): 4 + 8 / 32 = 4.25 bits; gpt-oss stores its MoE weights so (gpt-oss model card, OpenAI 2025).
- ``int8`` / ``int4``: integers with an FP16 scale and an integer zero point per group of ``group_size`` values
  (GPTQ, arXiv:2210.17323; AWQ, arXiv:2306.00978; ``group_size`` of the config, 128 by default).
"""

from __future__ import annotations

import math
from typing import Any

from chipdse.core.errors import SpecError, shorten

LINEAR_KINDS = ("attention", "mamba1", "mamba2", "mlp", "moe")
"""Block kinds whose weights are linear layers a weight-only quantization converts (embedding and head are not
by default: every published FP8 / MXFP4 / GPTQ checkpoint of the families imported keeps them in 16 bits)."""

WEIGHT_FORMATS = ("fp8", "mxfp4", "int8", "int4")
"""Quantized weight formats a card's ``quantization.format`` may name."""

FP8_BLOCK = (128, 128)
"""Default FP8 weight block (DeepSeek-V3 technical report Sec. 3.3), when the config gives none."""
MX_BLOCK = 32
"""OCP MX v1.0 block: 32 values share one 8-bit (E8M0) scale."""
DEFAULT_GROUP = 128
"""GPTQ / AWQ default group size."""


KV_CACHE_DTYPES: dict[str, int] = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "fp8_e4m3": 1,
                                   "fp8_e5m2": 1, "int8": 1}
"""KV-cache data types a card's ``kv_cache_dtype`` may name, bytes per cached value: vLLM's ``kv_cache_dtype``
choices (``fp8`` = ``fp8_e4m3``, ``fp8_e5m2``; vLLM documentation, "Quantized KV Cache"), whose scale is one FP32
per tensor (a few bytes per layer, left out), and INT8 (compressed-tensors' ``kv_cache_scheme`` with
``num_bits: 8, type: int``)."""
ACTIVATION_DTYPES: dict[str, int] = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "int8": 1}
"""Activation data types a card's ``activation_dtype`` may name (W8A8 FP8 / INT8 serving passes 8-bit activations
between layers), bytes per value."""


def dtype_bytes(card: dict[str, Any], field: str, known: dict[str, int], default: int, source: str) -> int:
    """Bytes per value of the card's ``field`` (``kv_cache_dtype`` or ``activation_dtype``), ``default`` (the
    card's ``torch_dtype``) when absent.

    Raises
    ------
    SpecError
        ``field`` names a type not in ``known``.
    """
    name = card.get(field)
    if name is None:
        return default
    if not isinstance(name, str) or name not in known:
        raise SpecError(source, field, f"one of {list(known)} (or absent: torch_dtype), got {shorten(name)}")
    return known[name]


def kv_cache_dtype_from_hf(qc: Any, source: str = "config.json") -> str | None:
    """The KV-cache data type a Hugging Face ``quantization_config`` stores its cache in, if it says: NVIDIA
    ModelOpt's ``kv_cache_quant_algo: "FP8"`` and compressed-tensors' ``kv_cache_scheme`` (``num_bits`` 8,
    ``type`` ``float`` or ``int``); None when it says nothing (the cache then follows ``torch_dtype``).

    Raises
    ------
    SpecError
        Field ``quantization_config.kv_cache_scheme`` (an object with ``num_bits`` 8 and ``type`` float or int, or
        null) or ``quantization_config.kv_cache_quant_algo`` (FP8 or null) holding anything else: a KV-cache
        format the import cannot size is refused, not read as 16-bit.
    """
    if not isinstance(qc, dict):
        return None
    algo = qc.get("kv_cache_quant_algo")
    if algo is not None:
        if not (isinstance(algo, str) and algo.upper() == "FP8"):
            raise SpecError(source, "quantization_config.kv_cache_quant_algo", f"FP8 (or null), got {shorten(algo)}")
        return "fp8"
    scheme = qc.get("kv_cache_scheme")
    if scheme is None:
        return None
    dtype = ({"float": "fp8", "int": "int8"}.get(str(scheme.get("type", "")).lower())
             if isinstance(scheme, dict) and scheme.get("num_bits") == 8
             and not isinstance(scheme.get("num_bits"), bool) else None)
    if dtype is None:
        raise SpecError(source, "quantization_config.kv_cache_scheme", "an object with num_bits 8 and type float "
                        f"(FP8) or int (INT8), or null, got {shorten(scheme)}")
    return dtype


def fp8_bits(block: tuple[int, int] = FP8_BLOCK) -> float:
    """Bits per FP8 weight with one FP32 scale per ``block`` (rows x cols): ``8 + 32 / (rows cols)``."""
    return 8.0 + 32.0 / (block[0] * block[1])


def mxfp4_bits() -> float:
    """Bits per MXFP4 weight: 4 + 8 / 32 = 4.25 (OCP MX v1.0)."""
    return 4.0 + 8.0 / MX_BLOCK


def int_bits(bits: int, group_size: int = DEFAULT_GROUP) -> float:
    """Bits per group-quantized integer weight: ``bits`` plus an FP16 scale and a ``bits``-bit zero per group."""
    return bits + (16.0 + bits) / group_size


def from_hf_config(qc: Any, source: str) -> tuple[dict[str, Any] | None, list[str]]:
    """A Hugging Face ``quantization_config`` as a card's ``quantization`` field.

    Parameters
    ----------
    qc : mapping
        The config's ``quantization_config``.
    source : str
        The config file, for errors.

    Returns
    -------
    (dict or None, list of str)
        The field (None for a method this import does not read) and ``warning:`` lines (a method not read, its
        weights then sized at ``torch_dtype``).

    Raises
    ------
    SpecError
        Field ``quantization_config``: not a mapping, or a block / group / bit width that is not a positive
        whole number.
    """
    if not isinstance(qc, dict):
        raise SpecError(source, "quantization_config", f"a JSON object, got {shorten(qc)}")
    method = str(qc.get("quant_method", "")).lower()
    raw_skip = qc.get("modules_to_not_convert") or []
    if not isinstance(raw_skip, list) or not all(isinstance(p, str) for p in raw_skip):
        raise SpecError(source, "quantization_config.modules_to_not_convert", f"a list of module names, got "
                        f"{shorten(raw_skip)}")
    skip = list(raw_skip)
    kinds = [k for k in LINEAR_KINDS if not _kind_excluded(k, skip)]
    if method == "fp8":
        block = qc.get("weight_block_size") or list(FP8_BLOCK)
        if not (isinstance(block, list) and len(block) == 2 and all(_whole(b) for b in block)):
            raise SpecError(source, "quantization_config.weight_block_size", f"two whole numbers, got {shorten(block)}")
        fmt, bits, how = "fp8", fp8_bits((int(block[0]), int(block[1]))), f"fp8 e4m3, {block[0]}x{block[1]} blocks"
    elif method == "mxfp4":
        fmt, bits, how = "mxfp4", mxfp4_bits(), "mxfp4 (OCP MX), 32-value blocks"
    elif method in ("gptq", "awq"):
        w = qc.get("bits", qc.get("w_bit"))  # AWQ's own configs name them w_bit / q_group_size
        group = qc.get("group_size", qc.get("q_group_size", DEFAULT_GROUP))
        group = DEFAULT_GROUP if group in (-1, None) else group
        if not (_whole(w) and w in (4, 8) and _whole(group)):
            raise SpecError(source, "quantization_config", f"bits (or w_bit) 4 or 8 and a whole group_size, got bits "
                            f"{shorten(w)}, group_size {shorten(group)}")
        fmt, bits, how = f"int{w}", int_bits(int(w), int(group)), f"{method} int{w}, groups of {group}"
    else:
        got = method or "none"
        kv = kv_cache_dtype_from_hf(qc, source)
        also = f"; its KV-cache scheme is read ({kv} cache)" if kv else ""
        return None, [f"warning: quantization_config: quant_method {got!r}: its weight format is not read (fp8, "
                      f"mxfp4, gptq and awq are); weights are sized at torch_dtype{also}"]
    field = {"format": fmt, "bits_per_weight": round(bits, 6), "block_kinds": kinds,
             "from": f"quantization_config: {how}" + (f"; not converted: {', '.join(skip)}" if skip else "")}
    return field, []


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _kind_excluded(kind: str, skip: list[str]) -> bool:
    """Whether ``modules_to_not_convert`` keeps a block kind's linear layers unconverted: attention by an
    ``attn`` module, Mamba by ``mamba`` / ``mixer``, the dense MLP by an ``mlp`` module that is not its router or
    gate (the router is a sliver of the MoE block), the MoE by ``experts``."""
    for p in (s.lower() for s in skip):
        last = p.rstrip(".*").rsplit(".", 1)[-1]
        if kind == "attention" and "attn" in p:
            return True
        if kind in ("mamba1", "mamba2") and ("mamba" in p or "mixer" in p):
            return True
        if kind == "mlp" and last == "mlp":
            return True
        if kind == "moe" and "experts" in p:
            return True
    return False


def check_quantization(q: Any, source: str) -> None:
    """Check a card's ``quantization`` field.

    Raises
    ------
    SpecError
        Field ``quantization`` (or one of its keys): not an object, an unknown format, bits per weight outside
        (1, 16], block kinds that are not a list of linear block kinds.
    """
    if q is None:
        return
    if not isinstance(q, dict):
        raise SpecError(source, "quantization", f"a JSON object (format, bits_per_weight, block_kinds), got "
                        f"{shorten(q)}")
    unknown = sorted(set(q) - {"format", "bits_per_weight", "block_kinds", "from"})
    if unknown:
        raise SpecError(source, f"quantization.{unknown[0]}", "one of format, bits_per_weight, block_kinds, from")
    if q.get("format") not in WEIGHT_FORMATS:
        raise SpecError(source, "quantization.format", f"one of {list(WEIGHT_FORMATS)}, got {shorten(q.get('format'))}")
    bits = q.get("bits_per_weight")
    if isinstance(bits, bool) or not isinstance(bits, int | float) or not math.isfinite(bits) or not 1 < bits <= 16:
        raise SpecError(source, "quantization.bits_per_weight", f"bits per weight with scales, in (1, 16], got "
                        f"{shorten(bits)}")
    kinds = q.get("block_kinds")
    if not isinstance(kinds, list) or not kinds or not set(kinds) <= set(LINEAR_KINDS):
        raise SpecError(source, "quantization.block_kinds", f"a non-empty list of {list(LINEAR_KINDS)}, got "
                        f"{shorten(kinds)}")
