"""HBM partition between block groups (HYDRA Eq. 1): problem type, checker, exact model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HbmPartitionProblem:
    """Split ``n_hbm`` identical HBM stacks among memory groups to maximize the smallest concurrency.

    Group g with N_g stacks supports ``r_g = floor((N_g * capacity_bytes - weight_bytes[g]) /
    per_request_bytes[g])`` concurrent requests (HYDRA Eq. 1: Mamba group with L_M * W_M weights and S_M state
    per request; attention group with its weights and KV cache per request at the workload's context length).
    Maximize ``min_g r_g`` subject to ``sum_g N_g = n_hbm``, ``N_g >= 1`` and every group's weights fitting.

    Attributes
    ----------
    n_hbm : int
        Number of HBM stacks to split.
    capacity_bytes : float
        Capacity of one stack in bytes.
    weight_bytes : dict[str, float]
        Weights each group must hold, bytes.
    per_request_bytes : dict[str, float]
        KV cache or SSM state per request in each group, bytes (> 0).
    name : str
        Label for reports.
    """

    n_hbm: int
    capacity_bytes: float
    weight_bytes: dict[str, float]
    per_request_bytes: dict[str, float]
    name: str = "hbm-partition"
