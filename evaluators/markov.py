"""HYDRA's allocation-state Markov model (Sec. V-A to V-C, Eqs. 6-8), vectorized over design points.

A state s is the number of compute chiplets serving prefill; the other N - s serve decode. s* (the preferred
allocation) has every prefill-optimized chiplet on prefill and every decode-optimized one on decode. A state
above s* lends s - s* decode-optimized chiplets to prefill, a state below lends s* - s prefill-optimized chiplets
to decode (Eqs. 6-7's cross terms c_p,D g_p,D and c_d,P g_d,P: a lent chiplet runs the other phase at its own
roofline rate). Static scheduling pins s = s*; elastic scheduling lets the fluid model of the offered work move
s (the occupancies pi_s), and throughput is sum_s pi_s G_d(s) (Eq. 8).
"""

from __future__ import annotations

import numpy as np


def allocation_counts(n_prefill_opt: np.ndarray, n_decode_opt: np.ndarray, s: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return (c_p,P, c_p,D, c_d,D, c_d,P) of state ``s`` (HYDRA Sec. V-B's chiplet counts).

    Parameters
    ----------
    n_prefill_opt, n_decode_opt : array_like, shape (n,)
        Prefill- and decode-optimized compute chiplets N_P, N_D of each point.
    s : array_like, shape (n,)
        Chiplets serving prefill, 0 <= s <= N_P + N_D (may be fractional in the fluid model).

    Returns
    -------
    tuple of numpy.ndarray, shape (n,)
        Prefill-optimized on prefill, decode-optimized on prefill, decode-optimized on decode, prefill-optimized
        on decode.

    Raises
    ------
    ValueError
        A state outside [0, N_P + N_D] (the message names the first one).
    """
    n_p = np.asarray(n_prefill_opt, dtype=float)
    n_d = np.asarray(n_decode_opt, dtype=float)
    s = np.asarray(s, dtype=float)
    bad = (s < 0) | (s > n_p + n_d)
    if np.any(bad):
        i = int(np.flatnonzero(np.atleast_1d(bad))[0])
        msg = f"state s = {np.atleast_1d(s)[i]:g} outside [0, {np.atleast_1d(n_p + n_d)[i]:g}] (point {i})"
        raise ValueError(msg)
    c_pp = np.minimum(s, n_p)
    c_pd = np.maximum(s - n_p, 0.0)
    return c_pp, c_pd, n_d - c_pd, n_p - c_pp


def state_capacities(g_pp: np.ndarray, g_pd: np.ndarray, g_dd: np.ndarray, g_dp: np.ndarray,
                     n_prefill_opt: np.ndarray, n_decode_opt: np.ndarray, s: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Return the aggregate prefill and decode capacities of state ``s`` (HYDRA Eqs. 6-7).

    Parameters
    ----------
    g_pp, g_pd : array_like, shape (n,)
        Prefill rate of one prefill-optimized (g_p,P) and of one decode-optimized chiplet (g_p,D), e.g. tokens/s.
    g_dd, g_dp : array_like, shape (n,)
        Decode rate of one decode-optimized (g_d,D) and of one prefill-optimized chiplet (g_d,P), tokens/s.
    n_prefill_opt, n_decode_opt, s
        As in :func:`allocation_counts`.

    Returns
    -------
    (G_p, G_d) : tuple of numpy.ndarray, shape (n,)
        ``G_p = c_p,P g_p,P + c_p,D g_p,D`` and ``G_d = c_d,D g_d,D + c_d,P g_d,P``, in the rates' unit.
    """
    c_pp, c_pd, c_dd, c_dp = allocation_counts(n_prefill_opt, n_decode_opt, s)
    return c_pp * g_pp + c_pd * g_pd, c_dd * g_dd + c_dp * g_dp


def birth_death_stationary(birth: np.ndarray, death: np.ndarray) -> np.ndarray:
    """Stationary distribution of a birth-death CTMC on states 0..K, vectorized over rows.

    Parameters
    ----------
    birth : numpy.ndarray, shape (..., K)
        Rate from state k to k + 1 (k = 0..K-1), >= 0.
    death : numpy.ndarray, shape (..., K)
        Rate from state k + 1 to k, > 0.

    Returns
    -------
    numpy.ndarray, shape (..., K + 1)
        pi_k proportional to prod_{j<k} birth_j / death_j (detailed balance), normalized to sum 1.

    Raises
    ------
    ValueError
        A death rate that is not positive (the chain would have no stationary distribution on 0..K).

    References
    ----------
    Bolch et al., Queueing Networks and Markov Chains (2006), Sec. 3.1 (birth-death processes; HYDRA ref. [34]).
    """
    birth = np.asarray(birth, dtype=float)
    death = np.asarray(death, dtype=float)
    if np.any(death <= 0):
        msg = f"death rates must be > 0, got {death.min():g}"
        raise ValueError(msg)
    with np.errstate(divide="ignore"):
        logs = np.cumsum(np.log(birth) - np.log(death), axis=-1)
    logs = np.concatenate([np.zeros((*logs.shape[:-1], 1)), logs], axis=-1)
    w = np.exp(logs - logs.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


def fluid_bracket_occupancy(surplus_lo: np.ndarray, surplus_hi: np.ndarray) -> np.ndarray:
    """Occupancy of the upper of two adjacent states the fluid model alternates between at saturation.

    In state lo the prefill side delivers less than decode consumes (surplus ``f_lo = G_p - G_d / L_d < 0``,
    requests/s), so the decode backlog drains and elastic scheduling moves a chiplet to prefill; in state hi it
    grows (``f_hi >= 0``) and a chiplet goes back. The backlog balances over time when
    ``pi_lo f_lo + pi_hi f_hi = 0``: the two-state birth-death chain with birth rate -f_lo and death rate f_hi.

    Parameters
    ----------
    surplus_lo, surplus_hi : numpy.ndarray, shape (n,)
        f at the lower (<= 0) and the upper state (>= 0), requests/s.

    Returns
    -------
    numpy.ndarray, shape (n,)
        pi_hi in [0, 1] (1 where both are 0: the upper state serves as well).
    """
    lo = np.minimum(np.asarray(surplus_lo, dtype=float), 0.0)
    hi = np.maximum(np.asarray(surplus_hi, dtype=float), 0.0)
    degenerate = hi <= 0
    pi = birth_death_stationary((-lo)[:, None], np.where(degenerate, 1.0, hi)[:, None])
    return np.where(degenerate, 1.0, pi[:, 1])


def finite_source_throughput(sources: np.ndarray, think_s: np.ndarray, service_s: np.ndarray) -> np.ndarray:
    """Completions per second of a single server fed by a finite population (the machine-repairman model).

    Each of m sources alternates an exponential "think" time (mean ``think_s``) with a visit to one shared
    server (service mean ``service_s``, FIFO). The number of sources at the server is a birth-death chain
    with birth rate (m - k) / think and death rate 1 / service; the server completes (1 - pi_0) / service
    visits per second. Between the limits m / (think + service) (no waiting) and 1 / service (server always
    busy), it is lower than both near balance: the coupling a min() of the two capacities misses. A
    fractional m (a fluid state) interpolates linearly between floor(m) and ceil(m).

    Parameters
    ----------
    sources : numpy.ndarray, shape (n,)
        Population m >= 1.
    think_s, service_s : numpy.ndarray, shape (n,)
        Mean think and service times, s (> 0).

    Returns
    -------
    numpy.ndarray, shape (n,)
        Throughput, visits/s.

    References
    ----------
    Kleinrock, Queueing Systems Vol. 1 (1975), Sec. 3.8 (finite customer population, M/M/1//M); Bolch et al.
    (2006), Sec. 6.5 (HYDRA ref. [34]).
    """
    m = np.maximum(np.asarray(sources, dtype=float), 1.0)
    think = np.asarray(think_s, dtype=float)
    service = np.asarray(service_s, dtype=float)
    lo, hi = np.floor(m), np.ceil(m)
    k_max = int(hi.max())
    k = np.arange(k_max, dtype=float)[None, :]

    ratio = np.minimum(service / think, 1e10)[:, None]  # birth / death of the first step, clipped: no overflow

    def tput(pop: np.ndarray) -> np.ndarray:
        # pi_k / pi_0 = prod_{j<k} (m - j) S / D (the birth-death product form, without logarithms: m <= K)
        terms = np.cumprod(np.maximum(pop[:, None] - k, 0.0) * ratio, axis=1)
        return (1.0 - 1.0 / (1.0 + terms.sum(axis=1))) / service

    t_lo = tput(lo)
    t_hi = np.where(hi > lo, tput(hi), t_lo)
    return t_lo + (m - lo) * (t_hi - t_lo)
