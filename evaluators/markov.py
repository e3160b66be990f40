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
from scipy.special import gammaln, ndtr, xlog1py, xlogy


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


def deterministic_cycle_s(slowest_traversal_s: np.ndarray, bottleneck_s: np.ndarray, jobs: np.ndarray
                          ) -> np.ndarray:
    """Round time of a closed cyclic pipeline of single FIFO servers with deterministic service, s.

    ``jobs`` micro-batches circulate through the stages in a fixed order (each stage is one chiplet serving its
    FIFO queue, as the simulator's static task scheduling runs them); a round is the time for every micro-batch to
    pass all stages once, i.e. the time between two tokens of one request. The round time of such a network is
    the largest mean weight of a circuit of its event graph (max-plus algebra): a micro-batch's own trip through
    all stages (one round) and a stage serving every micro-batch once (one round) are the two elementary circuits,
    and every other circuit mixes the two, so its mean weight lies between them. With equal micro-batches this is
    the exact ``max(W, N t_bn)`` (``W`` the sum of the stage times, ``t_bn`` the slowest stage); with unequal ones
    the slowest micro-batch's trip sets the first term and the bottleneck stage's total work the second.

    Parameters
    ----------
    slowest_traversal_s : numpy.ndarray, shape (n,)
        Sum of the stage times of the slowest micro-batch, s.
    bottleneck_s : numpy.ndarray, shape (n,)
        Mean time of the slowest stage per micro-batch, s.
    jobs : numpy.ndarray, shape (n,)
        Micro-batches circulating N (values below 1 count as 1).

    Returns
    -------
    numpy.ndarray, shape (n,)
        ``max(slowest_traversal_s, N bottleneck_s)``, s.

    References
    ----------
    Baccelli, Cohen, Olsder and Quadrat, Synchronization and Linearity (1992), Thm. 3.23 (the cycle time of a
    timed event graph is its maximum circuit mean); Dallery and Towsley, "Symmetry property of the throughput in
    closed tandem queueing networks with finite buffers", Oper. Res. Lett. 10 (1991) (deterministic tandem lines).
    """
    n = np.maximum(np.asarray(jobs, dtype=float), 1.0)
    return np.maximum(np.asarray(slowest_traversal_s, dtype=float), n * np.asarray(bottleneck_s, dtype=float))


def binomial_pmf(n: int, p: np.ndarray) -> np.ndarray:
    """P(X = m), m = 0..n, of X ~ Binomial(n, p) for each success probability in ``p``, in log space.

    Parameters
    ----------
    n : int
        Trials (>= 0).
    p : numpy.ndarray, shape (s,)
        Success probabilities in [0, 1] (0 and 1 give point masses at 0 and n).

    Returns
    -------
    numpy.ndarray, shape (s, n + 1)
        Rows summing to 1; equal to ``scipy.stats.binom.pmf`` (a test checks it), several times faster at the
        sizes the estimator uses (a few thousand probabilities, n <= 64).
    """
    p = np.asarray(p, dtype=float)[:, None]
    m = np.arange(n + 1, dtype=float)[None, :]
    log_choose = gammaln(n + 1.0) - gammaln(m + 1.0) - gammaln(n - m + 1.0)
    return np.exp(log_choose + xlogy(m, p) + xlog1py(n - m, -p))


def active_count_pmf(lengths: np.ndarray, batch: int) -> np.ndarray:
    """Distribution of the requests still decoding at a random iteration of a static batch.

    A static batch of ``batch`` requests with i.i.d. output lengths L (drawn from the empirical ``lengths``)
    runs max L decode iterations; iteration j (j = 0, 1, ...) carries A_j = #{i : L_i > j} ~ Binomial(b,
    P(L > j)) requests (finished ones cannot be replaced). An iteration picked uniformly over many batches
    (renewal-reward) has P(A = m) = sum_j P(A_j = m) / sum_j P(A_j >= 1) for m = 1..b; the denominator is
    E[max L]. Its mean is b E[L] / E[max L].

    Parameters
    ----------
    lengths : numpy.ndarray, shape (s,)
        Output lengths of the workload sample, tokens (>= 1).
    batch : int
        Requests per batch b >= 1.

    Returns
    -------
    numpy.ndarray, shape (b + 1,)
        P(A = m), m = 0..b (``[0] = 0``), summing to 1.

    Raises
    ------
    ValueError
        An empty sample or a batch below 1.
    """
    vals, cnt = np.unique(np.asarray(lengths, dtype=float), return_counts=True)
    if len(vals) == 0 or batch < 1:
        msg = f"active_count_pmf needs lengths and batch >= 1, got {len(vals)} lengths and batch {batch}"
        raise ValueError(msg)
    alive = 1.0 - np.concatenate([[0.0], np.cumsum(cnt)[:-1] / cnt.sum()])  # P(L > j) for j in [v_{i-1}, v_i)
    steps = np.diff(np.concatenate([[0.0], vals]))  # iterations j with that survival probability
    pmf = steps @ binomial_pmf(batch, alive)
    pmf[0] = 0.0
    return pmf / pmf.sum()


def max_and_sum_moments(pmf: np.ndarray, n: np.ndarray) -> dict[str, np.ndarray]:
    """Moments of the max M and the sum S of n i.i.d. draws A_1..A_n of a distribution on 0..b, vectorized over n.

    Parameters
    ----------
    pmf : numpy.ndarray, shape (b + 1,)
        P(A = m), m = 0..b.
    n : numpy.ndarray, shape (k,)
        Draws (>= 1; fractional n interpolates the CDF powers).

    Returns
    -------
    dict of numpy.ndarray, shape (k,)
        ``mean_max`` E[M], ``var_max`` Var M, ``mean_sum`` E[S] = n E[A], ``var_sum`` Var S = n Var A and
        ``cov`` Cov(M, S) = n Cov(M, A_1), from E[M A_1] = sum_a P(A = a) a E[max(a, M')] with M' the max of the
        other n - 1 draws (E[max(a, M')] = a + sum_{m >= a} (1 - F(m)^(n-1))).
    """
    p = np.asarray(pmf, dtype=float)
    vals = np.arange(len(p), dtype=float)
    n = np.maximum(np.asarray(n, dtype=float), 1.0)[:, None]
    cdf = np.clip(np.cumsum(p), 0.0, 1.0)[None, :]
    tail_n = 1.0 - cdf[:, :-1] ** n  # P(M > m), m = 0..b-1
    mean_max = tail_n.sum(axis=1)
    # E[M^2] = sum_m (2 m + 1) P(M > m)
    mean_max2 = (tail_n * (2 * vals[:-1] + 1)[None, :]).sum(axis=1)
    mean_a = float(p @ vals)
    var_a = float(p @ vals**2) - mean_a**2
    tail_rest = 1.0 - cdf[:, :-1] ** (n - 1.0)  # P(M' > m)
    # sum_{m >= a} P(M' > m) for every a: reversed cumulative sums, shape (k, b + 1)
    above = np.concatenate([np.cumsum(tail_rest[:, ::-1], axis=1)[:, ::-1], np.zeros((len(n), 1))], axis=1)
    e_ma = ((vals + above) * (p * vals)[None, :]).sum(axis=1)
    nn = n[:, 0]
    return {"mean_max": mean_max, "var_max": np.maximum(mean_max2 - mean_max**2, 0.0), "mean_sum": nn * mean_a,
            "var_sum": nn * var_a, "cov": nn * (e_ma - mean_max * mean_a)}


def clark_expected_max(mean_x: np.ndarray, var_x: np.ndarray, mean_y: np.ndarray, var_y: np.ndarray,
                       cov_xy: np.ndarray) -> np.ndarray:
    """E[max(X, Y)] of two jointly normal variables (Clark 1961), vectorized.

    ``theta^2 = Var X + Var Y - 2 Cov``, ``alpha = (E X - E Y) / theta``; ``E max = E X Phi(alpha) +
    E Y Phi(-alpha) + theta phi(alpha)``; ``max(E X, E Y)`` where theta = 0.

    Parameters
    ----------
    mean_x, var_x, mean_y, var_y, cov_xy : numpy.ndarray, shape (n,)

    Returns
    -------
    numpy.ndarray, shape (n,)

    References
    ----------
    C. E. Clark, "The greatest of a finite set of random variables", Operations Research 9(2), 1961, Eqs. 2-5.
    """
    mx, my = np.asarray(mean_x, dtype=float), np.asarray(mean_y, dtype=float)
    with np.errstate(all="ignore"):  # infinite stage times (unservable states) give max(E X, E Y) = inf below
        theta = np.sqrt(np.maximum(np.asarray(var_x) + np.asarray(var_y) - 2 * np.asarray(cov_xy), 0.0))
        # |alpha| > 40: Phi is 0 or 1 and phi 0 in double precision
        alpha = np.clip(np.nan_to_num((mx - my) / theta), -40.0, 40.0)
        out = mx * ndtr(alpha) + my * ndtr(-alpha) + theta * np.exp(-0.5 * alpha**2) / np.sqrt(2 * np.pi)
    return np.where((theta > 0) & np.isfinite(out), out, np.maximum(mx, my))
