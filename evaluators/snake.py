"""SNAKE decode evaluator: decode operators as GEMMs, per-operator logical shape and dataflow, baselines.

A decode step of a transformer at tensor parallelism ``TP`` is a list of GEMMs ``C[m x n] = A[m x k] B[k x n]``
per device, with ``m`` = batch tokens (SNAKE Sec. 3, Table 1). Each GEMM is split evenly along ``n`` over the
``cores`` compute cores of one device (16 PUs x 4 cores = 64 by default; an OS-S-like spatial partition, SNAKE
Sec. 5) and timed on one core. Four compute substrates are compared at equal core count (SNAKE Sec. 6.1.2):

* ``snake``: one 64x64 physical array per core reconfigured per operator into a logical shape 8x512, 16x256,
  32x128 or 64x64 (either orientation, so the short side can hold ``m`` under OS or IS), with the dataflow
  OS or IS chosen per operator, at 800 MHz.
* ``sa48x48`` and ``sa8x288``: fixed 48x48 and 8x288 arrays at 1 GHz. The dataflow is the better of OS and IS
  per operator, which is generous to the baselines (the paper does not state their dataflow).
* ``mac_tree``: a 16x16x16 MAC tree (Stratum-like) at 1 GHz, see :func:`mac_tree_cycles`; the multi-PU
  study (:mod:`evaluators.snake_pu`) gives one tree per PU, the area-normalized comparison of SNAKE Sec. 6.2.

Cycles of systolic arrays come from :func:`evaluators.systolic.compute_cycles_array` (compute only, no memory
stalls). Time is ``cycles / freq_hz``; a decode latency is the sum of operator times (no overlap, no collectives).
This single-core, compute-only view is the building block; the study the report and RESULTS.md quote is
:mod:`evaluators.snake_pu` (multi-PU modes, collectives, DRAM streaming, one MAC tree per PU).

References
----------
SNAKE Secs. 3-6 and Table 1 (decode GEMM shapes at TP = 8, logical shapes, baselines, 800 MHz vs 1 GHz).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chipdse.core.errors import ChipdseError, SpecError
from chipdse.core.models import read_card
from chipdse.core.paths import instances_dir
from chipdse.evaluators.systolic import DATAFLOWS, compute_cycles_array

#: SNAKE logical shapes (rows, cols) carved from one 64x64 physical array, both orientations (SNAKE Sec. 4).
SNAKE_SHAPES: tuple[tuple[int, int], ...] = (
    (8, 512),
    (512, 8),
    (16, 256),
    (256, 16),
    (32, 128),
    (128, 32),
    (64, 64),
)
#: Dataflows SNAKE chooses from per operator (SNAKE Sec. 3).
SNAKE_DATAFLOWS: tuple[str, ...] = ("os", "is")
#: Clock of the reconfigurable design and of the fixed baselines, Hz (SNAKE Sec. 6.1.2).
SNAKE_FREQ_HZ = 800e6
BASELINE_FREQ_HZ = 1e9
#: Tensor parallelism and cores per device of the paper's system (SNAKE Secs. 4.1, 6.1).
DEFAULT_TP = 8
DEFAULT_CORES = 64
#: Models of the paper's Table 1, by card file stem.
PAPER_MODELS: tuple[str, ...] = ("opt-66b", "llama-3-70b", "mixtral-8x22b", "qwen3-30b-a3b", "deepseek-v2")


class SnakeError(ChipdseError, ValueError):
    """A SNAKE evaluation got a bad model card, GEMM, design or missing shared data."""


@dataclass(frozen=True)
class GemmOp:
    """One decode GEMM on one device, repeated ``count`` times per decode step.

    Attributes
    ----------
    name : str
        Operator name, e.g. ``"qkv"``, ``"ffn_up_gate"``, ``"expert_down"``.
    m, k, n : int
        GEMM dimensions, elements (``m`` = tokens through the operator on this device).
    count : int
        Executions per decode step (layers times experts evaluated).
    group : int
        Independent executions of one layer that may run at the same time on different PUs (the active experts of
        an MoE layer; the (request, KV head) pairs of an attention product); 1 for a plain weight GEMM.
    combine_rows : int
        Rows (tokens) of the output a grouped execution sums across PUs afterwards (the batch for
        ``expert_down``: each token's top-k expert outputs are added); 0 when nothing is combined.
    nonlinear : float
        Vector-core operations per output element of the element-wise stage that follows (SiLU and the gate
        product, softmax, norm and residual; SNAKE Fig. 9); 0 for none.
    head_parallel : bool
        An attention product (``qk``, ``pv``): runs head-parallel, one (request, KV head) per PU or core
        (SNAKE Sec. 5b, after Stratum), never split over the PUs.
    """

    name: str
    m: int
    k: int
    n: int
    count: int
    group: int = 1
    combine_rows: int = 0
    nonlinear: float = 0.0
    head_parallel: bool = False


@dataclass(frozen=True)
class ShapeChoice:
    """The fastest (shape, dataflow) of a GEMM on a systolic design.

    Attributes
    ----------
    rows, cols : int
        Logical array shape, PEs.
    dataflow : str
        ``"os"``, ``"ws"`` or ``"is"``.
    cycles : int
        Compute cycles (no stalls).
    time_s : float
        ``cycles / freq_hz``, seconds.
    """

    rows: int
    cols: int
    dataflow: str
    cycles: int
    time_s: float


@dataclass(frozen=True)
class Design:
    """A compute substrate of one core.

    Attributes
    ----------
    name : str
        Label used in tables.
    kind : str
        ``"systolic"`` or ``"mac_tree"``.
    freq_hz : float
        Clock, Hz.
    shapes : tuple of (int, int)
        Candidate (rows, cols) shapes (systolic only).
    dataflows : tuple of str
        Candidate dataflows (systolic only).
    lanes : int
        MAC-tree size ``L`` of an ``L x L x L`` tree (MAC tree only).
    reconfigurable : bool
        SNAKE-style: shape, dataflow and multi-PU mode chosen per operator (``evaluators.snake_pu``); fixed
        designs run the template's own split.
    pipelined : bool
        Weight-Load / Feed / Drain sub-stages overlap consecutive folds
        (:func:`evaluators.systolic.pipelined_cycles_array`, SNAKE Sec. 4.2.4); else every fold fills and drains
        (SCALE-Sim's count, :func:`evaluators.systolic.compute_cycles_array`).
    """

    name: str
    kind: str
    freq_hz: float
    shapes: tuple[tuple[int, int], ...] = ()
    dataflows: tuple[str, ...] = SNAKE_DATAFLOWS
    lanes: int = 16
    reconfigurable: bool = False
    pipelined: bool = False


SNAKE = Design("snake", "systolic", SNAKE_FREQ_HZ, SNAKE_SHAPES, SNAKE_DATAFLOWS, reconfigurable=True, pipelined=True)
SA_48X48 = Design("sa48x48", "systolic", BASELINE_FREQ_HZ, ((48, 48),), SNAKE_DATAFLOWS)
SA_8X288 = Design("sa8x288", "systolic", BASELINE_FREQ_HZ, ((8, 288),), SNAKE_DATAFLOWS)
MAC_TREE = Design("mac_tree", "mac_tree", BASELINE_FREQ_HZ, lanes=16)
#: The paper's baselines, in the order of its speedup figures (SNAKE Sec. 6.3).
BASELINES: tuple[Design, ...] = (MAC_TREE, SA_48X48, SA_8X288)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        msg = f"{name} must be a positive integer; got {value!r}"
        raise SnakeError(msg)
    return int(value)


def models_dir() -> Path:
    """Return the folder of the bundled model cards, ``instances/models``.

    Returns
    -------
    Path
        Folder of the JSON model cards (the SNAKE Table 1 models included).
    """
    return instances_dir() / "models"


def load_card(model: str | Path) -> dict:
    """Return a model card as a dict, by file stem under ``instances/models`` or by path.

    Parameters
    ----------
    model : str or Path
        Card stem such as ``"llama-3-70b"`` or a path to a JSON card.

    Returns
    -------
    dict
        The parsed card.

    Raises
    ------
    SnakeError
        If the card is missing or not valid JSON (read by :func:`chipdse.core.models.read_card`).
    """
    try:
        return read_card(model)[0]
    except SpecError as exc:
        what = ("not found" if exc.source == "model" or exc.expected == "file not found" else
                f"{exc.field}: {exc.expected}" if exc.field else exc.expected)
        msg = f"model card {model}: {what}"
        raise SnakeError(msg) from None


def _field(card: dict, key: str) -> int:
    value = card.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"model card {card.get('name', '?')!r}: field {key!r} must be a positive integer; got {value!r}"
        raise SnakeError(msg)
    return value


def _split(card: dict, key: str, value: int, tp: int) -> int:
    if value % tp:
        msg = f"model card {card.get('name', '?')!r}: {key} = {value} is not divisible by TP = {tp}"
        raise SnakeError(msg)
    return value // tp


#: Vector-core operations per output element of the element-wise stage after each operator (SNAKE Fig. 9), counted
#: from the stage's arithmetic: SiLU (exp, add, divide, multiply) and the gate product on half of the up-gate outputs
#: (5 / 2), ReLU (1), RMSNorm and residual after a projection back to the hidden size (square, sum, scale, add: 4),
#: RoPE on the query / key part of QKV (about 2 per output), softmax of scores and of the router (max, exp, sum,
#: divide: 4), the weighted sum of expert outputs (multiply, add: 2).
NONLINEAR_OPS = {"up_gate": 2.5, "up": 1.0, "down": 4.0, "attn_out": 4.0, "qkv": 2.0, "q_b": 2.0, "kv_b": 2.0,
                 "router": 4.0, "qk": 4.0, "expert_down": 2.0, "lm_head": 4.0}


def _nonlinear(name: str) -> float:
    """Vector operations per output element after operator ``name`` (:data:`NONLINEAR_OPS`, by suffix)."""
    if name in NONLINEAR_OPS:
        return NONLINEAR_OPS[name]
    return next((v for key, v in NONLINEAR_OPS.items() if name.endswith("_" + key)), 0.0)


def _op(name: str, m: int, k: int, n: int, count: int, **kw: object) -> GemmOp:
    return GemmOp(name, m, k, n, count, nonlinear=_nonlinear(name), **kw)  # type: ignore[arg-type]


def _ffn_ops(prefix: str, m: int, hidden: int, inter_tp: int, gated: bool, count: int, group: int = 1,
             combine_rows: int = 0) -> list[GemmOp]:
    up_n = 2 * inter_tp if gated else inter_tp
    return [
        _op(f"{prefix}_up_gate" if gated else f"{prefix}_up", m, hidden, up_n, count, group=group),
        _op(f"{prefix}_down", m, inter_tp, hidden, count, group=group, combine_rows=combine_rows),
    ]


def attention_ops(card: dict, batch: int, context: int, tp: int = DEFAULT_TP) -> list[GemmOp]:
    """Return the attention score and context products ``QK^T`` and ``PV`` of one decode step on one device.

    Parameters
    ----------
    card : dict
        Model card with ``attention`` or ``mla`` mixers.
    batch : int
        Decode batch, requests.
    context : int
        Tokens in each request's KV cache (SNAKE Fig. 13: 4K, 8K, 16K).
    tp : int
        Tensor-parallel degree: each device holds ``h_q / TP`` query heads and ``max(1, h_kv / TP)`` KV heads.

    Returns
    -------
    list of GemmOp
        Per (request, KV head) pair, with ``g = h_q / h_kv`` query heads sharing that KV head (GQA):
        ``qk`` ``(g, d, L)`` and ``pv`` ``(g, L, d)``, ``count`` = layers x batch x KV heads per device,
        ``group`` = batch x KV heads per device, ``head_parallel``. MLA runs weight-absorbed over its latent cache
        (the cache :func:`evaluators.snake_serving.kv_bytes_per_token` streams): all ``h / TP`` heads share one
        latent, ``qk`` ``(h / TP, r_kv + d_rope, L)``, ``pv`` ``(h / TP, L, r_kv)``. Empty when ``context`` is 0.

    Raises
    ------
    SnakeError
        A bad batch, context or head field.

    References
    ----------
    SNAKE Sec. 5b (head-level parallelism for QK and AV, as Stratum), Fig. 13 (4K / 8K / 16K inputs).
    """
    b = _positive_int("batch", batch)
    if isinstance(context, bool) or not isinstance(context, int | np.integer) or context < 0:
        msg = f"context must be a non-negative integer; got {context!r}"
        raise SnakeError(msg)
    if context == 0:
        return []
    tp = _positive_int("tp", tp)
    ops: list[GemmOp] = []
    counts = card.get("layer_counts") or {}
    for key, layers in counts.items():
        if key == "mixer:attention":
            hq, hkv, d = (_field(card, f) for f in ("num_attention_heads", "num_key_value_heads", "head_dim"))
            kv_dev = max(1, hkv // tp)
            g = max(1, -(-hq // tp) // kv_dev)
            qk_k, pv_n = d, d
        elif key == "mixer:mla":
            h = _field(card, "num_attention_heads")
            rkv, rope = _field(card, "kv_lora_rank"), _field(card, "qk_rope_head_dim")
            kv_dev, g = 1, max(1, h // tp)
            qk_k, pv_n = rkv + rope, rkv
        else:
            continue
        pairs = b * kv_dev
        ops.append(_op("qk", g, qk_k, int(context), layers * pairs, group=pairs, head_parallel=True))
        ops.append(_op("pv", g, int(context), pv_n, layers * pairs, group=pairs, head_parallel=True))
    return ops


def decode_gemms(card: dict, batch: int, tp: int = DEFAULT_TP, lm_head: bool = False, context: int = 0
                 ) -> list[GemmOp]:
    """Return the weight GEMMs of one decode step on one device of a ``TP``-way tensor-parallel model.

    Parameters
    ----------
    card : dict
        Model card (schema of ``../shared/models/README.md``); mixers ``attention`` or ``mla``, FFNs ``mlp``
        or ``moe``.
    batch : int
        Decode batch, tokens (one new token per request).
    tp : int
        Tensor-parallel degree; heads, intermediate sizes and the vocabulary are split by it.
    lm_head : bool
        Append the LM head ``(batch, hidden, vocab / tp)``.
    context : int
        KV-cache tokens per request; above 0 the attention products of :func:`attention_ops` are appended.

    Returns
    -------
    list of GemmOp
        Per layer type, with ``count`` = number of such layers (times experts for MoE):

        * attention: ``qkv`` ``(B, H, (h_q + 2 h_kv) d / TP)``, ``attn_out`` ``(B, h_q d / TP, H)``;
        * MLA (naive, not weight-absorbed): ``q_a`` ``(B, H, r_q)``, ``q_b`` ``(B, r_q, h (d_nope + d_rope) / TP)``,
          ``kv_a`` ``(B, H, r_kv + d_rope)``, ``kv_b`` ``(B, r_kv, h (d_nope + d_v) / TP)``,
          ``attn_out`` ``(B, h d_v / TP, H)``;
        * dense FFN: ``ffn_up_gate`` ``(B, H, 2 I / TP)`` (``I / TP`` if not gated), ``ffn_down`` ``(B, I / TP, H)``;
        * MoE: ``router`` ``(B, H, E)``, shared experts as a dense FFN of ``I_s * n_shared``, and per expert
          ``expert_up_gate`` / ``expert_down`` with ``m = ceil(B k / e)`` over ``e = min(E, B k)`` experts
          (uniform routing: ``B k / E`` expected tokens per expert; experts keep TP, SNAKE Sec. 6.1.1), with
          ``group = e`` (the layer's experts are independent GEMMs) and ``combine_rows = B`` on ``expert_down``;
        * with ``context > 0``: ``qk`` and ``pv`` (:func:`attention_ops`).

        Every operator carries the vector work of the element-wise stage after it (:data:`NONLINEAR_OPS`).

    Raises
    ------
    SnakeError
        On a missing or non-divisible field, or an unsupported mixer / FFN type (e.g. Mamba).

    References
    ----------
    SNAKE Sec. 6.1.1, Table 1.
    """
    b = _positive_int("batch", batch)
    tp = _positive_int("tp", tp)
    hidden = _field(card, "hidden_size")
    counts = card.get("layer_counts") or {}
    ops: list[GemmOp] = []
    for key, layers in counts.items():
        kind, _, what = key.partition(":")
        if kind == "mixer" and what == "attention":
            hq, hkv, d = (_field(card, f) for f in ("num_attention_heads", "num_key_value_heads", "head_dim"))
            ops.append(_op("qkv", b, hidden, _split(card, "qkv width", (hq + 2 * hkv) * d, tp), layers))
            ops.append(_op("attn_out", b, _split(card, "attention width", hq * d, tp), hidden, layers))
        elif kind == "mixer" and what == "mla":
            h = _field(card, "num_attention_heads")
            rq, rkv = _field(card, "q_lora_rank"), _field(card, "kv_lora_rank")
            nope, rope, dv = (_field(card, f) for f in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
            ops += [
                _op("q_a", b, hidden, rq, layers),
                _op("q_b", b, rq, _split(card, "q_b width", h * (nope + rope), tp), layers),
                _op("kv_a", b, hidden, rkv + rope, layers),
                _op("kv_b", b, rkv, _split(card, "kv_b width", h * (nope + dv), tp), layers),
                _op("attn_out", b, _split(card, "attention width", h * dv, tp), hidden, layers),
            ]
        elif kind == "ffn" and what == "mlp":
            inter = _split(card, "intermediate_size", _field(card, "intermediate_size"), tp)
            ops += _ffn_ops("ffn", b, hidden, inter, bool(card.get("mlp_gated")), layers)
        elif kind == "ffn" and what == "moe":
            n_exp, top_k = _field(card, "num_experts"), _field(card, "num_experts_per_tok")
            inter = _split(card, "moe_intermediate_size", _field(card, "moe_intermediate_size"), tp)
            ops.append(_op("router", b, hidden, n_exp, layers))
            n_shared = card.get("num_shared_experts") or 0
            if n_shared:
                shared = n_shared * _field(card, "shared_expert_intermediate_size")
                ops += _ffn_ops(
                    "shared",
                    b,
                    hidden,
                    _split(card, "shared expert width", shared, tp),
                    bool(card.get("mlp_gated")),
                    layers,
                )
            active = min(n_exp, b * top_k)
            m_exp = math.ceil(b * top_k / active)
            ops += _ffn_ops("expert", m_exp, hidden, inter, bool(card.get("mlp_gated")), layers * active, group=active,
                            combine_rows=b)
        else:
            msg = f"model card {card.get('name', '?')!r}: layer type {key!r} is not supported by the SNAKE evaluator"
            raise SnakeError(msg)
    if lm_head:
        ops.append(_op("lm_head", b, hidden, math.ceil(_field(card, "vocab_size") / tp), 1))
    return ops + attention_ops(card, b, context, tp)


def best_shape(
    m: int,
    k: int,
    n: int,
    shapes: tuple[tuple[int, int], ...] = SNAKE_SHAPES,
    dataflows: tuple[str, ...] = SNAKE_DATAFLOWS,
    freq_hz: float = SNAKE_FREQ_HZ,
) -> ShapeChoice:
    """Return the (shape, dataflow) pair with the least compute time for one GEMM.

    Parameters
    ----------
    m, k, n : int
        GEMM dimensions, elements.
    shapes : sequence of (int, int)
        Candidate (rows, cols) shapes, PEs.
    dataflows : sequence of str
        Candidate dataflows among ``"os"``, ``"ws"``, ``"is"``.
    freq_hz : float
        Clock, Hz.

    Returns
    -------
    ShapeChoice
        The minimizer of ``compute_cycles / freq_hz``; ties go to the first shape, then the first dataflow.

    Raises
    ------
    SnakeError
        If ``shapes`` or ``dataflows`` is empty or ``freq_hz`` is not positive (bad dimensions raise
        :class:`evaluators.systolic.SystolicError`).

    References
    ----------
    SNAKE Secs. 3-4 (per-operator logical shape and dataflow).
    """
    if not shapes or not dataflows:
        msg = f"best_shape needs at least one shape and one dataflow; got shapes={shapes!r}, dataflows={dataflows!r}"
        raise SnakeError(msg)
    if not freq_hz > 0:
        msg = f"freq_hz must be positive; got {freq_hz!r}"
        raise SnakeError(msg)
    rc = np.asarray(shapes, dtype=np.int64).reshape(-1, 1, 2)
    flows = np.asarray([d.lower() for d in dataflows]).reshape(1, -1)
    cycles = compute_cycles_array(m, k, n, rc[..., 0], rc[..., 1], flows)
    i, j = np.unravel_index(int(np.argmin(cycles)), cycles.shape)
    best = int(cycles[i, j])
    return ShapeChoice(int(rc[i, 0, 0]), int(rc[i, 0, 1]), str(flows[0, j]), best, best / freq_hz)


def mac_tree_cycles(m: int, k: int, n: int, lanes: int = 16) -> int:
    """Return the compute cycles of a GEMM on an ``L x L x L`` MAC tree (``L = lanes``).

    Parameters
    ----------
    m, k, n : int
        GEMM dimensions, elements.
    lanes : int
        ``L``: the tree takes an ``L x L`` block of ``A`` (``m x k``) and an ``L x L`` block of ``B`` (``k x n``)
        per cycle, i.e. ``L^2`` dot-product trees of length ``L`` (``L^3`` MACs per cycle).

    Returns
    -------
    int
        ``ceil(m / L) * ceil(n / L) * ceil(k / L) + log2(L)``: one block product per cycle, fully pipelined,
        plus the adder-tree depth ``ceil(log2 L)`` to drain the last block. Partial blocks cost a full cycle.

    Examples
    --------
    >>> mac_tree_cycles(8, 8192, 1280)  # 1 * 80 * 512 + 4
    40964
    """
    dims = [_positive_int(name, v) for name, v in zip(("m", "k", "n", "lanes"), (m, k, n, lanes), strict=True)]
    mm, kk, nn, ll = dims
    blocks = (-(-mm // ll)) * (-(-nn // ll)) * (-(-kk // ll))
    return blocks + math.ceil(math.log2(ll))


def op_time_s(op: GemmOp, design: Design, cores: int = DEFAULT_CORES) -> float:
    """Return the time of one execution of ``op`` on ``design``, with ``n`` split evenly over ``cores``.

    Parameters
    ----------
    op : GemmOp
        The GEMM (``count`` is ignored here).
    design : Design
        Substrate of every core.
    cores : int
        Cores sharing the GEMM along ``n`` (each gets ``ceil(n / cores)`` columns; no collective cost).

    Returns
    -------
    float
        Seconds.
    """
    cores = _positive_int("cores", cores)
    n_core = -(-op.n // cores)
    if design.kind == "mac_tree":
        return mac_tree_cycles(op.m, op.k, n_core, design.lanes) / design.freq_hz
    if design.kind == "systolic":
        return best_shape(op.m, op.k, n_core, design.shapes, design.dataflows, design.freq_hz).time_s
    msg = f"design {design.name!r}: kind must be 'systolic' or 'mac_tree'; got {design.kind!r}"
    raise SnakeError(msg)


def decode_latency_s(ops: list[GemmOp], design: Design, cores: int = DEFAULT_CORES) -> float:
    """Return the compute latency of one decode step: ``sum(count * op_time_s)``, seconds.

    No memory stalls, no overlap between operators and no all-reduce / all-gather costs are modelled.
    """
    return float(sum(op.count * op_time_s(op, design, cores) for op in ops))


def speedups(
    model: str | dict,
    batch: int,
    baselines: tuple[Design, ...] = BASELINES,
    tp: int = DEFAULT_TP,
    cores: int = DEFAULT_CORES,
    lm_head: bool = False,
) -> dict[str, float]:
    """Return ``latency(baseline) / latency(SNAKE)`` of one decode step, keyed by baseline name.

    Parameters
    ----------
    model : str or dict
        Card stem (see :func:`load_card`) or a loaded card.
    batch : int
        Decode batch, tokens.
    baselines : tuple of Design
        Designs to compare against.
    tp, cores, lm_head
        As in :func:`decode_gemms` and :func:`op_time_s`.

    Returns
    -------
    dict
        ``{baseline name: speedup}``; above 1 means SNAKE is faster.

    Notes
    -----
    Compute cycles only, on the single-core view of this module (each GEMM's ``n`` split over ``cores``, no
    collectives, no DRAM, the MAC tree per core). The report's speedups come from
    :func:`evaluators.snake_pu.design_speedups`.

    References
    ----------
    SNAKE Sec. 6.3 (2.90x vs MAC tree, 2.33x vs 48x48, 3.00x vs 8x288, averaged over models).
    """
    card = load_card(model) if not isinstance(model, dict) else model
    ops = decode_gemms(card, batch, tp, lm_head)
    ours = decode_latency_s(ops, SNAKE, cores)
    return {d.name: decode_latency_s(ops, d, cores) / ours for d in baselines}


__all__ = [
    "BASELINES",
    "DATAFLOWS",
    "MAC_TREE",
    "PAPER_MODELS",
    "SA_48X48",
    "SA_8X288",
    "SNAKE",
    "SNAKE_SHAPES",
    "Design",
    "GemmOp",
    "ShapeChoice",
    "SnakeError",
    "attention_ops",
    "best_shape",
    "decode_gemms",
    "decode_latency_s",
    "load_card",
    "mac_tree_cycles",
    "models_dir",
    "op_time_s",
    "speedups",
]
