"""Near-memory stack model (NOVA): tier rooflines, execution modes per operator, decode Op/B per operator.

NOVA stacks a peri-die NMP (Tier-1, high internal bandwidth over hybrid bonding, modest compute) and a base-die
NMP (Tier-2, TSV-limited bandwidth, high compute) on the same cell dies. Each tier attains the roofline
``T_k(I) = min(C_k, I * B_k)`` at arithmetic intensity ``I`` (FLOP per byte, "Op/B"). Both tiers can run at
once (cross-tier execution), during which pCH interleaving halves Tier-1 to ``T_1'(I)``.

Everything here is closed form and vectorized over numpy arrays; nothing is solved. The indivisible version of
the cross-tier split (MoE experts) is the decision problem in :mod:`formulations.expert_split`.

References
----------
NOVA Sec. IV-B (2-tier architecture), Sec. V-B (three execution modes), Sec. VI-A (peak FLOPS, bandwidths),
Sec. VI-B (2-tier roofline), Sec. VI-E "Data Assignment Policy" (``T_k``, ``T_1'``, ``alpha*``, ``k*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from chipdse.core.errors import SpecError

SOURCE = "evaluators.nmp"


@dataclass(frozen=True)
class NovaTiers:
    """Peak compute and bandwidth of NOVA's two NMP tiers (one stack), and the cross-tier derating.

    Attributes
    ----------
    tier1_peak_flops : float
        Tier-1 (peri-die NMP) peak, FLOP/s: 32 TFLOPS (NOVA Sec. VI-A; Sec. VI-E ``C_1``).
    tier1_bandwidth_Bps : float
        Tier-1 internal bandwidth over hybrid bonding, bytes/s: 16 TB/s (NOVA Sec. VI-E ``B_1``; the peri-die
        reaches its peak at 2 Op/B, Sec. VI-A).
    tier2_peak_flops : float
        Tier-2 (base-die NMP) peak, FLOP/s: 64 TFLOPS (NOVA Sec. VI-A; Sec. VI-E ``C_2``).
    tier2_bandwidth_Bps : float
        Tier-2 TSV bandwidth, bytes/s: 4 TB/s (NOVA Sec. V-C "4 TB/s" TSV; Sec. VI-E ``B_2``; peak at 16 Op/B).
    cross_tier_factor : float
        Share of Tier-1 compute and bandwidth left during cross-tier execution: 0.5, i.e. Tier-1 drops to
        (16 TFLOPS, 8 TB/s) because pCH interleaving lends half of it to Tier-2 transfers (NOVA Sec. VI-E).
    """

    tier1_peak_flops: float = 32e12
    tier1_bandwidth_Bps: float = 16e12
    tier2_peak_flops: float = 64e12
    tier2_bandwidth_Bps: float = 4e12
    cross_tier_factor: float = 0.5

    def __post_init__(self) -> None:
        """Reject non-positive peaks or bandwidths and a derating outside (0, 1]."""
        for name in ("tier1_peak_flops", "tier1_bandwidth_Bps", "tier2_peak_flops", "tier2_bandwidth_Bps"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                msg = f"a positive finite value, got {value!r}"
                raise SpecError("NovaTiers", name, msg)
        if not 0 < self.cross_tier_factor <= 1:
            msg = f"a factor in (0, 1], got {self.cross_tier_factor!r}"
            raise SpecError("NovaTiers", "cross_tier_factor", msg)


NOVA_TIERS = NovaTiers()
"""NOVA's published tier parameters (NOVA Sec. VI-A, VI-E)."""


class ExecutionMode(IntEnum):
    """NOVA's three execution modes (NOVA Sec. V-B, Fig. 8(c)); the value order is the tie-break order."""

    TIER1 = 1
    """Peri-die NMP only, at full Tier-1 rate."""
    TIER2 = 2
    """Base-die NMP only."""
    CROSS = 3
    """Both tiers in parallel, Tier-1 halved, work split by ``alpha*``."""


def _intensity_array(intensity: ArrayLike, field: str = "intensity") -> NDArray[np.float64]:
    """Return ``intensity`` as a float array, rejecting negative or non-finite values."""
    arr = np.asarray(intensity, dtype=float)
    if np.any(~np.isfinite(arr)) or np.any(arr < 0):
        msg = f"non-negative finite Op/B values, got {arr[~np.isfinite(arr) | (arr < 0)][:3]!r}"
        raise SpecError(SOURCE, field, msg)
    return arr


def tier_throughput_flops(intensity: ArrayLike, peak_flops: float, bandwidth_Bps: float) -> NDArray[np.float64]:
    """Return the roofline throughput ``T(I) = min(C, I * B)`` of one tier.

    Parameters
    ----------
    intensity : array_like
        Arithmetic intensity ``I``, FLOP per byte (Op/B), any shape, ``>= 0``.
    peak_flops : float
        Peak compute ``C``, FLOP/s.
    bandwidth_Bps : float
        Memory bandwidth ``B``, bytes/s.

    Returns
    -------
    ndarray
        Attainable FLOP/s, same shape as ``intensity``.

    Raises
    ------
    SpecError
        A negative or non-finite intensity, or a non-positive peak or bandwidth.

    References
    ----------
    NOVA Sec. VI-E ("The attainable throughput of tier k at intensity I is T_k(I) = min(C_k, I B_k)"),
    Sec. VI-B (Fig. 10 roofline).
    """
    arr = _intensity_array(intensity)
    if not (np.isfinite(peak_flops) and peak_flops > 0 and np.isfinite(bandwidth_Bps) and bandwidth_Bps > 0):
        msg = f"positive finite peak and bandwidth, got C={peak_flops!r} FLOP/s, B={bandwidth_Bps!r} B/s"
        raise SpecError(SOURCE, "tier", msg)
    return np.minimum(peak_flops, arr * bandwidth_Bps)


def tier1_throughput_flops(intensity: ArrayLike, tiers: NovaTiers = NOVA_TIERS) -> NDArray[np.float64]:
    """Return Tier-1 alone, ``T_1(I) = min(C_1, I B_1)``, FLOP/s (NOVA Sec. VI-E)."""
    return tier_throughput_flops(intensity, tiers.tier1_peak_flops, tiers.tier1_bandwidth_Bps)


def tier1_cross_throughput_flops(intensity: ArrayLike, tiers: NovaTiers = NOVA_TIERS) -> NDArray[np.float64]:
    """Return Tier-1 during cross-tier execution, ``T_1'(I) = min(f C_1, I f B_1)`` with f = 0.5, FLOP/s.

    References
    ----------
    NOVA Sec. VI-E ("pCH interleaving halves Tier-1 to (16, 8) during cross-tier execution").
    """
    f = tiers.cross_tier_factor
    return tier_throughput_flops(intensity, f * tiers.tier1_peak_flops, f * tiers.tier1_bandwidth_Bps)


def tier2_throughput_flops(intensity: ArrayLike, tiers: NovaTiers = NOVA_TIERS) -> NDArray[np.float64]:
    """Return Tier-2, ``T_2(I) = min(C_2, I B_2)``, FLOP/s (NOVA Sec. VI-E)."""
    return tier_throughput_flops(intensity, tiers.tier2_peak_flops, tiers.tier2_bandwidth_Bps)


def cross_tier_fraction(intensity: ArrayLike, tiers: NovaTiers = NOVA_TIERS) -> NDArray[np.float64]:
    """Return ``alpha*``, the share of a divisible operator's FLOPs given to Tier-1 in cross-tier mode.

    Parameters
    ----------
    intensity : array_like
        Operator intensity, Op/B, ``> 0`` for a defined fraction.
    tiers : NovaTiers
        Tier parameters.

    Returns
    -------
    ndarray
        ``alpha* = T_1'(I) / (T_1'(I) + T_2(I))`` in [0, 1]; NaN where ``I = 0`` (no work to split).

    Raises
    ------
    SpecError
        A negative or non-finite intensity.

    Notes
    -----
    Tier-1 finishes ``alpha F`` in ``alpha F / T_1'`` and Tier-2 the rest in ``(1 - alpha) F / T_2``; they
    finish together at ``alpha*``, and the operator then takes ``F / (T_1' + T_2)``.

    References
    ----------
    NOVA Sec. VI-E ("Splitting work so that both tiers finish together assigns a fraction alpha* ...").
    """
    t1 = tier1_cross_throughput_flops(intensity, tiers)
    t2 = tier2_throughput_flops(intensity, tiers)
    total = t1 + t2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, t1 / np.where(total > 0, total, 1.0), np.nan)


def mode_times_s(flops: ArrayLike, intensity: ArrayLike, tiers: NovaTiers = NOVA_TIERS) -> NDArray[np.float64]:
    """Return an operator's time in each execution mode.

    Parameters
    ----------
    flops : array_like
        Operator work ``F``, FLOP, ``>= 0``; broadcast against ``intensity``.
    intensity : array_like
        Operator intensity ``I``, Op/B (so it reads ``F / I`` bytes).
    tiers : NovaTiers
        Tier parameters.

    Returns
    -------
    ndarray, shape ``broadcast(flops, intensity).shape + (3,)``
        Seconds in modes ``TIER1``, ``TIER2``, ``CROSS`` (last axis in :class:`ExecutionMode` order):
        ``F / T_1(I)``, ``F / T_2(I)`` and ``F / (T_1'(I) + T_2(I))``. Zero work takes 0 s in every mode.

    Raises
    ------
    SpecError
        Negative or non-finite FLOPs or intensity, or positive FLOPs at zero intensity (unbounded bytes).

    References
    ----------
    NOVA Sec. V-B (three modes, Fig. 8(c)), Sec. VI-E (``alpha*`` split: both tiers finish together).
    """
    f = _intensity_array(flops, "flops")
    i = _intensity_array(intensity)
    f, i = np.broadcast_arrays(f, i)
    if np.any((f > 0) & (i == 0)):
        msg = "positive intensity wherever flops > 0 (zero Op/B means infinite bytes)"
        raise SpecError(SOURCE, "intensity", msg)
    rates = np.stack(
        [tier1_throughput_flops(i, tiers), tier2_throughput_flops(i, tiers),
         tier1_cross_throughput_flops(i, tiers) + tier2_throughput_flops(i, tiers)],
        axis=-1,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        times = f[..., None] / np.where(rates > 0, rates, 1.0)
    return np.where(f[..., None] > 0, times, 0.0)


def best_mode(flops: ArrayLike, intensity: ArrayLike,
              tiers: NovaTiers = NOVA_TIERS) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Choose the fastest execution mode per operator.

    Parameters
    ----------
    flops, intensity : array_like
        As in :func:`mode_times_s`.
    tiers : NovaTiers
        Tier parameters.

    Returns
    -------
    (ndarray of int, ndarray of float)
        The :class:`ExecutionMode` value of the fastest mode (ties to the lower value: Tier-1, then Tier-2,
        then cross-tier) and its time in seconds.

    Raises
    ------
    SpecError
        As :func:`mode_times_s`.

    Notes
    -----
    By throughput alone Tier-2-only never beats cross-tier, since ``T_1' + T_2 >= T_2``; with NOVA's numbers
    Tier-1-only wins for ``I < 4`` (``16 I > 12 I`` up to 2 Op/B, then ``32 > 16 + 4 I`` up to 4), they tie
    at ``I = 4`` and cross-tier wins above. NOVA picks Tier-2-only
    when energy is prioritized (Sec. VI-E, Ablation): that policy, which scores each mode's energy, is
    :func:`chipdse.evaluators.nova_system.choose`.

    References
    ----------
    NOVA Sec. V-B, Sec. VI-B (superimposed rooflines, Fig. 10).
    """
    times = mode_times_s(flops, intensity, tiers)
    idx = np.argmin(times, axis=-1)
    return idx + 1, np.take_along_axis(times, idx[..., None], axis=-1)[..., 0]


def gqa_decode_intensity(group_size: ArrayLike, kv_bytes_per_element: float = 2.0) -> NDArray[np.float64]:
    """Return the decode Op/B of grouped-query attention over the KV cache.

    Parameters
    ----------
    group_size : array_like
        Query heads per KV head ``g`` (16 for 16:1 grouping).
    kv_bytes_per_element : float
        Bytes per cached K or V element (2 for BF16).

    Returns
    -------
    ndarray
        ``2 g / b``: per cached token and KV head, K and V (``2 d b`` bytes) are read once and used by ``g``
        query heads for ``QK^T`` and ``PV`` (``2 d + 2 d`` FLOPs each), so ``4 g d / (2 d b)``; 16 at 16:1 in
        BF16. Softmax and the query / output vectors are neglected.

    References
    ----------
    NOVA Sec. III-A ("GQA achieves an Op/B of approximately 16 owing to its 16:1 KV cache reuse ratio").
    """
    g = _intensity_array(group_size, "group_size")
    return 2.0 * g / kv_bytes_per_element


SSM_FLOPS_PER_STATE_ELEMENT = 5.0
"""FLOPs per Mamba-2 state element per decoded token: ``dA * h``, ``dB * x``, their sum and the ``C h`` multiply-add."""
SSM_STATE_ACCESSES = 2.0
"""Times each state element crosses the memory interface per decoded token (read ``S_{t-1}``, write ``S_t``)."""


def ssm_decode_intensity(flops_per_state_element: float = SSM_FLOPS_PER_STATE_ELEMENT,
                         state_bytes_per_element: float = 2.0, state_accesses: float = SSM_STATE_ACCESSES) -> float:
    """Return the decode Op/B of a selective-SSM (Mamba-2) state update.

    Parameters
    ----------
    flops_per_state_element : float
        FLOPs per state element per token: ``dA * h`` (1), ``dB * x`` (1), their sum (1) and the ``C h``
        multiply-add (2), i.e. 5.
    state_bytes_per_element : float
        Bytes per state element (2 for BF16).
    state_accesses : float
        Times each state element crosses the memory interface per token (read ``S_{t-1}``, write ``S_t``: 2).

    Returns
    -------
    float
        ``flops / (bytes * accesses)``: 1.25 with the defaults. Each request has its own state, so batching
        does not raise it. NOVA reports "only about 2" on Nemotron3-Nano (Fig. 4(a)), counting the element-wise
        operations on the intermediates as well; pass its counts to reproduce it.

    References
    ----------
    NOVA Sec. III-A (SSM Op/B about 2), Sec. V-C "SSM Execution" (read ``S_{t-1}``, EWM / EWA update, write
    back ``S_t``, GEMV with ``C``).
    """
    return flops_per_state_element / (state_bytes_per_element * state_accesses)


def moe_expert_intensity(tokens_routed: ArrayLike, bytes_per_param: float = 2.0) -> NDArray[np.float64]:
    """Return the decode Op/B of one MoE expert given the tokens routed to it.

    Parameters
    ----------
    tokens_routed : array_like
        Tokens routed to the expert in this decode step ``n_e``, ``>= 0``.
    bytes_per_param : float
        Bytes per weight (2 for BF16).

    Returns
    -------
    ndarray
        ``2 n_e / bytes_per_param``: the expert's weights (``P b`` bytes) are read once and used by each of
        its ``n_e`` tokens for ``2 P`` FLOPs; equal to ``n_e`` in BF16. Activations are neglected.

    References
    ----------
    NOVA Sec. VI-E ("the per-expert intensity equals its routed token count (I_e ~ n_e)"), Sec. III-A
    (Nemotron3-Nano, 6 of 128 experts, average Op/B about 3).
    """
    n = _intensity_array(tokens_routed, "tokens_routed")
    return 2.0 * n / bytes_per_param


def mean_tokens_per_expert(batch: int, top_k: int, n_experts: int) -> float:
    """Return the mean tokens routed per expert in one decode step, ``batch * top_k / n_experts``.

    Raises
    ------
    SpecError
        A negative batch, ``top_k`` outside ``[1, n_experts]``.

    References
    ----------
    NOVA Sec. III-A (fine-grained MoE lowers the average Op/B: 64 x 6 / 128 = 3 for Nemotron3-Nano).
    """
    if batch < 0 or n_experts < 1 or not 1 <= top_k <= n_experts:
        msg = f"batch >= 0 and 1 <= top_k <= n_experts, got batch={batch}, top_k={top_k}, n_experts={n_experts}"
        raise SpecError(SOURCE, "moe", msg)
    return batch * top_k / n_experts


NOVA_DENSITY = 2.09
"""Memory density of NOVA's cube over a conventional 6F^2 cube at iso-area, as the paper states it: the 4F^2 VCT cell
(6/4 = 1.5x) times the peri-over-cell overlap (chip area to about 72%, 1.39x), "2.09x (1.5 x 1.39)" (NOVA Sec.
IV-A)."""


def single_tier_expert_times_s(flops: ArrayLike, intensity: ArrayLike,
                               tiers: NovaTiers = NOVA_TIERS) -> tuple[float, float]:
    """Return an MoE layer's time with every expert on Tier-1 alone, and on Tier-2 alone, seconds.

    Parameters
    ----------
    flops : array_like, shape (experts,)
        Each expert's work ``F_e``, FLOP, ``>= 0`` (0 for an expert without routed tokens).
    intensity : array_like, shape (experts,)
        Each expert's Op/B ``I_e`` (``= n_e`` in BF16, :func:`moe_expert_intensity`), ``> 0`` where ``F_e > 0``.
    tiers : NovaTiers
        Tier parameters.

    Returns
    -------
    (float, float)
        ``sum_e F_e / T_1(I_e)`` (Tier-1 at its full rate: Tier-2 idle, no pCH interleaving) and
        ``sum_e F_e / T_2(I_e)``; experts run back to back on the one tier.

    Raises
    ------
    SpecError
        Negative or non-finite FLOPs or intensities, or work at zero intensity (from :func:`mode_times_s`).

    Notes
    -----
    With the split of :mod:`formulations.expert_split` (both tiers, Tier-1 halved) these are NOVA's three modes
    applied to a whole MoE layer (Sec. V-B): below 4 Op/B an expert is faster on the full-rate Tier-1 than on
    either tier of a split, so a layer of cold experts runs Tier-1 only.

    References
    ----------
    NOVA Sec. V-B (three modes, Fig. 8(c)), Sec. VI-E (``T_k(I)``, ``T_1'``).
    """
    times = mode_times_s(flops, intensity, tiers)
    return float(np.sum(times[..., 0])), float(np.sum(times[..., 1]))
