"""Serving latency of an NMP decode device with GPU prefill (SNAKE Sec. 6.4, Fig. 10): a small event simulation.

Requests arrive as a Poisson process. Each is prefilled on the GPU (one FIFO server; compute-bound roofline of
the prompt's GEMMs and causal attention), then joins the NMP's continuous decode batch (at most ``max_batch``
requests, new ones admitted at iteration boundaries). An iteration with ``b`` running requests takes
``step_s[b]``: the weight GEMMs of one decode step at batch ``b`` on the design (:mod:`evaluators.snake_pu`) plus
streaming every running request's KV cache at the stack's DRAM bandwidth. Every running request gets one token
per iteration; TBT is the iteration time, E2E the time from arrival to the last token.

References
----------
SNAKE Sec. 6.4 (E2E under full serving, TBT under decode stress, 8K input / 1K output, GPU prefill).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from chipdse.core.models import attention_flops_per_context_token, causal_attention_flops, kv_cache_bytes_per_token
from chipdse.evaluators.nova_system import H100_FLOPS
from chipdse.evaluators.snake import Design, SnakeError, decode_gemms
from chipdse.evaluators.snake_pu import NmpTemplate, decode_step_s


def kv_bytes_per_token(card: dict, tp: int) -> float:
    """KV-cache bytes per context token on one device (BF16; MLA keeps its compressed latent, not split by TP)."""
    counts = card.get("layer_counts") or {}
    if counts.get("mixer:mla"):
        return float(counts["mixer:mla"] * (card["kv_lora_rank"] + card["qk_rope_head_dim"]) * 2)
    layers = counts.get("mixer:attention", 0)
    kv, hd = int(card["num_key_value_heads"]), int(card.get("head_dim") or 0)
    return float(layers * kv_cache_bytes_per_token(max(1, kv // tp), hd, 2))


def step_table_s(card: dict, design: Design, template: NmpTemplate, max_batch: int, context: float,
                 tp: int = 8) -> np.ndarray:
    """``step[b]`` for b = 0..max_batch: one decode iteration of ``b`` requests at ``context`` tokens, s."""
    kv = kv_bytes_per_token(card, tp) * context / (template.dram_TBps * 1e12)
    out = np.zeros(max_batch + 1)
    for b in range(1, max_batch + 1):
        out[b] = decode_step_s(decode_gemms(card, b, tp), design, template) + b * kv
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
