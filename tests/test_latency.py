"""HYDRA Eq. 3 task time: the roofline t_comp plus t_comm, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from chipdse.evaluators.latency import ChipletCaps, task_time_s


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
