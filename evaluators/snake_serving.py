"""Serving latency of an NMP decode device with GPU prefill (SNAKE Sec. 6.4, Fig. 10): a small event simulation.

Requests arrive as a Poisson process. Each is prefilled on the GPU (one FIFO server; compute-bound roofline of
the prompt's GEMMs and causal attention), then joins the NMP's continuous decode batch (at most ``max_batch``
requests, new ones admitted at iteration boundaries). An iteration with ``b`` running requests takes
``step_s[b]``: the weight GEMMs and the head-parallel attention products (streaming every running request's KV
cache) of one decode step at batch ``b`` on the design (:mod:`evaluators.snake_pu`). Every running request gets one
token per iteration; TBT is the iteration time, E2E the time from arrival to the last token.

The GPU decode baseline (:func:`gpu_step_s`) runs the same operators on an H100 as a roofline at a stated share of
its published peaks.

References
----------
SNAKE Sec. 6.4 (E2E under full serving, TBT under decode stress, 8K input / 1K output, GPU prefill), Sec. 6.3
(11.47x over GPU decode); NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOPS dense BF16, 3.35 TB/s HBM3).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from chipdse.core.models import attention_flops_per_context_token, causal_attention_flops, kv_cache_bytes_per_token
from chipdse.core.precision import KV_CACHE_DTYPES, dtype_bytes
from chipdse.evaluators.gpu import H100_FLOPS, H100_HBM_Bps
from chipdse.evaluators.snake import Design, GemmOp, SnakeError, decode_gemms
from chipdse.evaluators.snake_pu import NmpTemplate, decode_step_s

GPU = "gpu"
"""The name of the H100 decode baseline in speedup and serving tables."""


def kv_bytes_per_token(card: dict, tp: int) -> float:
    """KV-cache bytes per context token on one device, at the card's ``kv_cache_dtype`` (BF16 when absent,
    :data:`chipdse.core.precision.KV_CACHE_DTYPES`); MLA keeps its compressed latent, not split by TP.

    Raises
    ------
    SpecError
        An unknown ``kv_cache_dtype``.
    """
    b = dtype_bytes(card, "kv_cache_dtype", KV_CACHE_DTYPES, 2, str(card.get("name", "model card")))
    counts = card.get("layer_counts") or {}
    if counts.get("mixer:mla"):
        return float(counts["mixer:mla"] * (card["kv_lora_rank"] + card["qk_rope_head_dim"]) * b)
    layers = counts.get("mixer:attention", 0)
    kv, hd = int(card["num_key_value_heads"]), int(card.get("head_dim") or 0)
    return float(layers * kv_cache_bytes_per_token(max(1, kv // tp), hd, b))


def gpu_step_s(ops: list[GemmOp], efficiency: float) -> float:
    """One decode step of ``ops`` on one H100 (TP shard), s: each operator the larger of its FLOPs at
    ``efficiency`` x 989 TFLOPS and its bytes (``(m k + k n + m n)`` BF16 elements: weights or KV cache, inputs,
    outputs) at ``efficiency`` x 3.35 TB/s, summed over ``count`` executions.

    Parameters
    ----------
    ops : list of GemmOp
        The decode operators (:func:`evaluators.snake.decode_gemms`, with attention products for a context).
    efficiency : float
        Sustained share of the H100's peak FLOPs and HBM bandwidth, in (0, 1] (an assumption: the paper runs
        Duplex's GPU model and states none).

    Returns
    -------
    float
        Seconds. No kernel-launch gaps and no NVLink all-reduce (the NMP side models no inter-device traffic either).

    Raises
    ------
    SnakeError
        An efficiency outside (0, 1].
    """
    if not 0 < efficiency <= 1:
        msg = f"efficiency must be in (0, 1], got {efficiency!r}"
        raise SnakeError(msg)
    return float(sum(o.count * max(2.0 * o.m * o.k * o.n / (H100_FLOPS * efficiency),
                                   (o.m * o.k + o.k * o.n + o.m * o.n) * 2.0 / (H100_HBM_Bps * efficiency))
                     for o in ops))


def step_table_s(card: dict, design: Design | str, template: NmpTemplate, max_batch: int, context: float,
                 tp: int = 8, gpu_efficiency: float = 0.7) -> np.ndarray:
    """``step[b]`` for b = 0..max_batch: one decode iteration of ``b`` requests at ``context`` tokens, s.

    ``design`` is an NMP design (:func:`evaluators.snake_pu.decode_step_s`) or :data:`GPU` (:func:`gpu_step_s` at
    ``gpu_efficiency``); the attention products stream ``round(context)`` tokens of KV cache per request.
    """
    out = np.zeros(max_batch + 1)
    ctx = round(context)
    for b in range(1, max_batch + 1):
        ops = decode_gemms(card, b, tp, context=ctx)
        out[b] = gpu_step_s(ops, gpu_efficiency) if design == GPU else decode_step_s(ops, design, template)
    return out


def prefill_s(card: dict, prompt: int, tp: int = 8, efficiency: float = 0.7) -> float:
    """GPU prefill of one prompt on one device's GPU: the decode GEMMs' FLOPs per token (at batch 64, so every
    expert is active) times the prompt, plus causal attention, over the sustained H100 rate, s."""
    ops = decode_gemms(card, 64, tp)
    per_token = sum(2.0 * o.m * o.k * o.n * o.count for o in ops) / 64
    counts = card.get("layer_counts") or {}
    heads = int(card.get("num_attention_heads") or 0) // tp
    hd = int(card.get("head_dim") or card.get("v_head_dim") or 0)
    attn_layers = counts.get("mixer:attention", 0) + counts.get("mixer:mla", 0)
    attention = causal_attention_flops(attn_layers * attention_flops_per_context_token(heads, hd), prompt * prompt)
    return (per_token * prompt + attention) / (H100_FLOPS * efficiency)


@dataclass(frozen=True)
class ServingResult:
    """Means over the finished requests of one run."""

    e2e_s: float
    tbt_s: float
    finished: int


def simulate(step_s: np.ndarray, prefill_time_s: float, rate_rps: float, l_out: int, requests: int,
             seed: int = 0) -> ServingResult:
    """Run ``requests`` Poisson arrivals at ``rate_rps`` through GPU prefill and continuous NMP decode.

    Raises
    ------
    SnakeError
        A non-positive rate, output length or request count.
    """
    if not (rate_rps > 0 and l_out >= 1 and requests >= 1):
        msg = f"rate_rps > 0, l_out >= 1 and requests >= 1, got {rate_rps!r}, {l_out!r}, {requests!r}"
        raise SnakeError(msg)
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate_rps, requests))
    ready = np.empty(requests)
    free = 0.0
    for i, a in enumerate(arrival):  # one FIFO prefill server
        free = max(free, a) + prefill_time_s
        ready[i] = free
    max_batch = len(step_s) - 1
    waiting = deque(range(requests))
    running: dict[int, int] = {}
    t, e2e, tbt_sum, tbt_n = 0.0, [], 0.0, 0
    while waiting or running:
        if not running:
            t = max(t, ready[waiting[0]])
        while waiting and len(running) < max_batch and ready[waiting[0]] <= t:
            running[waiting.popleft()] = l_out
        dt = float(step_s[len(running)])
        t += dt
        tbt_sum += dt * len(running)
        tbt_n += len(running)
        for r in list(running):
            running[r] -= 1
            if running[r] == 0:
                del running[r]
                e2e.append(t - arrival[r])
    return ServingResult(float(np.mean(e2e)), tbt_sum / tbt_n, len(e2e))
