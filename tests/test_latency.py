"""HYDRA Eq. 3 task time: the roofline t_comp plus t_comm, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from chipdse.core.models import load_model
from chipdse.evaluators.latency import (
    ChipletCaps,
    block_table,
    decode_costs,
    expected_experts_touched,
    task_time_s,
)


def _caps(matrix_flops: float, vector_flops: float) -> ChipletCaps:
    one = np.ones(1)
    return ChipletCaps(matrix_flops * one, vector_flops * one, one, one, one)


def test_compute_bound_task_by_hand() -> None:
    # 2 TFLOP on 1 TFLOP/s + 0.1 TFLOP on 0.1 TFLOP/s = 3 s of compute against 1 GB at 1 GB/s = 1 s of HBM;
    # Eq. 3: 2 hops x 1 GB / 1 GB/s = 2 s on the NoI
    t = task_time_s(2e12, 1e11, 1e9, _caps(1e12, 1e11), hbm_GBps=1.0, hops=2.0, d2d_GBps=1.0)
    assert t == pytest.approx([5.0])


def test_memory_bound_task_and_transfer_wait_by_hand() -> None:
    # 1 s of compute against 4 GB at 2 GB/s = 2 s of HBM; 1.5 hops x 4 GB / 8 GB/s = 0.75 s of NoI;
    # a wait of 0.5 adds half the transfer time (2 + 0.75 s)
    caps = _caps(1e12, 1e12)
    assert task_time_s(1e12, 0.0, 4e9, caps, 2.0, 1.5, 8.0) == pytest.approx([2.75])
    assert task_time_s(1e12, 0.0, 4e9, caps, 2.0, 1.5, 8.0, transfer_wait=0.5) == pytest.approx([2.75 + 1.375])


def test_broadcasts_over_bandwidths_and_hops() -> None:
    caps = _caps(1e12, 1e12)
    t = task_time_s(0.0, 0.0, np.array([[1e9], [2e9]]), caps, 1e3, np.array([0.0, 1.0, 2.0]), 1.0)
    # HBM time is negligible (1e3 GB/s): t = hops x bytes / 1 GB/s, plus 1 or 2 ms of port
    assert t.shape == (2, 3)
    np.testing.assert_allclose(t, [[1e-3, 1.001, 2.001], [2e-3, 2.002, 4.002]])


@pytest.mark.slow
def test_expected_experts_touched_matches_monte_carlo_routing():
    """E (1 - (1 - k/E)^b) against a Monte Carlo of b tokens each routed to k distinct experts chosen uniformly."""
    rng = np.random.default_rng(7)
    for experts, top_k, batch in ((128, 8, 1), (128, 8, 16), (64, 6, 8), (8, 2, 4), (512, 22, 64)):
        trials = 4000
        touched = np.empty(trials)
        for i in range(trials):
            picks = np.argsort(rng.random((batch, experts)), axis=1)[:, :top_k]
            touched[i] = len(np.unique(picks))
        formula = float(expected_experts_touched(experts, top_k, batch))
        stderr = touched.std(ddof=1) / np.sqrt(trials)
        assert abs(touched.mean() - formula) <= 4 * stderr + 1e-9, (experts, top_k, batch, touched.mean(), formula)


def test_qwen3_moe_decode_reads_only_touched_experts_at_batch_1():
    """Qwen3-30B-A3B at batch 1: the weights one token touches, bf16, with the embedding a row lookup.

    Reference: 6,083,735,552 bytes (3,041,867,776 parameters: attention, norms, router and 8 of 128 experts in each
    of 48 layers, plus the head), from the published Qwen3-30B-A3B configuration. Streaming every expert, as the
    tables did before, reads about ten times that.
    """
    t = block_table(load_model("qwen3-30b-a3b"))
    step = decode_costs(t, 0.0).bytes_at(1)
    weights = float(step.sum() - t.act_bpt)  # minus the one embedding row the request reads
    assert abs(weights / 6_083_735_552 - 1) <= 0.02
    all_experts = float(decode_costs(t, 0.0).bytes_at(10_000).sum() - 10_000 * t.act_bpt)
    assert all_experts > 9 * weights  # a large batch touches every expert: the old per-step stream
