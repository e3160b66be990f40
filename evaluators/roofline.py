"""Roofline-only design scoring: HYDRA Table V's "Roofline [33]" DSE baseline, vectorized over a design space.

Each phase's work is held against the package's aggregate compute and HBM bandwidth, with ideal execution: no
queueing, no batching dynamics (every decode iteration runs the full effective batch), no NoI time or contention,
the HBM stacks pooled. Per design point:

* prefill time of one request ``t_p = max(T_comp(prefill chiplets), V_p / (n_hbm B_HBM))``;
* decode time of one iteration of ``b`` requests ``t_d = max(T_comp(decode chiplets, b), V_d(b) / (n_hbm B_HBM))``;
* capacity ``min(1 / t_p, b / (t_d E[L_d]))`` requests/s; throughput = capacity x E[L_d] tokens/s; TTFT = ``t_p``
  (the prefill latency; no wait), for points whose capacity exceeds the offered load.

``T_comp`` is the fluid makespan of a phase on its chiplets: attention blocks run on attention chiplets, Mamba
blocks on Mamba chiplets, shared blocks (MLP, embedding, head) are split between the two families to balance them
(:func:`fluid_makespan_s`). ``b`` is the max batch capped by what the pooled HBM holds next to the weights. This is
an evaluator: it scores, it does not choose (the studies pick its best point).

References
----------
S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model for multicore
architectures", CACM 52(4), 2009 (HYDRA ref. [33]); HYDRA Sec. VI-F, Table V (the roofline DSE's pick reaches 74%
of the throughput exhaustive simulation finds).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from chipdse.core.design_space import DesignPoints
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.estimator import _balance_times
from chipdse.evaluators.latency import (
    FAMILY_ATTENTION,
    FAMILY_MAMBA,
    FAMILY_SHARED,
    PhaseCosts,
    block_table,
    chiplet_caps,
    decode_costs,
    prefill_costs,
)

FAMILIES = {"attention": FAMILY_ATTENTION, "mamba": FAMILY_MAMBA}
"""Chiplet family name -> the block-family code its chiplets run (besides the shared blocks)."""


def fluid_makespan_s(own_a_s: np.ndarray, own_m_s: np.ndarray, shared_a_s: np.ndarray, shared_m_s: np.ndarray,
                     n_a: np.ndarray, n_m: np.ndarray) -> np.ndarray:
    """Shortest time for n_a attention and n_m Mamba chiplets to finish one phase unit, work divisible at will.

    Parameters
    ----------
    own_a_s, own_m_s : array_like, shape (n,)
        Chiplet-seconds of the attention-only work on one attention chiplet, and of the Mamba-only work on one Mamba
        chiplet.
    shared_a_s, shared_m_s : array_like, shape (n,)
        Chiplet-seconds of the shared work if all of it ran on attention chiplets, or all on Mamba chiplets.
    n_a, n_m : array_like, shape (n,)
        Chiplets of each family serving the phase (>= 0).

    Returns
    -------
    numpy.ndarray, shape (n,)
        ``min over x in [0, 1] of max((A + x S_a) / n_a, (M + (1 - x) S_m) / n_m)`` seconds; ``inf`` where a
        family's own work has no chiplet to run on. A family with no chiplet takes no shared work.

    Notes
    -----
    The two terms cross at ``x* = (n_a (M + S_m) - n_m A) / (n_m S_a + n_a S_m)``; clipped to [0, 1] that is the
    optimum, since one term rises and the other falls in x. The split is the estimator's fluid Eq. 5 split
    (``chipdse.evaluators.estimator._balance_times``).
    """
    t_a, t_m = _balance_times(*(np.asarray(v, dtype=float) for v in (own_a_s, own_m_s, shared_a_s, shared_m_s,
                                                                     n_a, n_m)))
    return np.maximum(t_a, t_m)


def _family_seconds(costs: PhaseCosts, family: np.ndarray, mat_flops: np.ndarray, vec_flops: np.ndarray,
                    fam_code: int) -> tuple[np.ndarray, np.ndarray]:
    """Chiplet-seconds of one phase unit on one chiplet: (own-family, shared) blocks, each shape (2, k).

    Row 0 is the batch-independent part (``mat0``, ``vec0``), row 1 the per-request part (``mat1``, ``vec1``);
    columns follow the capability arrays (one per distinct D2D bandwidth).
    """
    parts = [np.outer(mat, 1.0 / mat_flops) + np.outer(vec, 1.0 / vec_flops)
             for mat, vec in ((costs.mat0, costs.vec0), (costs.mat1, costs.vec1))]
    own, shared = family == fam_code, family == FAMILY_SHARED
    return np.stack([x[own].sum(axis=0) for x in parts]), np.stack([x[shared].sum(axis=0) for x in parts])


def roofline_scores(sc: LoadedScenario, pts: DesignPoints) -> pd.DataFrame:
    """Score every design point with the static roofline (see the module docstring).

    Parameters
    ----------
    sc : LoadedScenario
        Model, chiplet library (compute densities, HBM stack capacity and bandwidth), workload lengths (E[L_p],
        E[L_p^2], E[L_d]), the estimator's prefill chunk size and the offered load.
    pts : DesignPoints
        n points (counts per compute type, HBM stacks, D2D bandwidth, max batch).

    Returns
    -------
    pandas.DataFrame
        n rows, in ``pts`` order: ``point``, ``label``, ``batch_eff`` (requests), ``prefill_s`` (s per request),
        ``decode_iteration_s`` (s per iteration of ``batch_eff`` requests), ``capacity_rps``, ``throughput_tps``
        (output tokens/s), ``ttft_s`` (s; NaN when unstable), ``stable``, ``feasible`` (the weights and one request
        fit the pooled HBM).

    Raises
    ------
    ValueError
        From :func:`chipdse.evaluators.latency.chiplet_caps` when a D2D bandwidth leaves a chiplet no core area.
    """
    model, lib, ln = sc.model, sc.library, sc.lengths
    table = block_table(model)
    pre = prefill_costs(table, ln.mean_prefill, ln.second_moment_prefill, sc.spec.estimator.chunk_tokens)
    dec = decode_costs(table, ln.mean_prefill + ln.mean_decode / 2.0)
    n = len(pts)
    uniq_bw, inv = np.unique(pts.d2d_GBps.astype(float), return_inverse=True)
    # per-request and weight bytes against the pooled stacks: the batch the memory allows
    per_req = model.kv_bytes_per_token() * (ln.mean_prefill + ln.mean_decode) + model.state_bytes_per_request()
    free = pts.n_hbm * lib.memory.capacity_GB * 1e9 - float(table.stored_weight_bytes.sum())
    r_mem = np.floor(np.maximum(free, 0.0) / max(per_req, 1e-30)).astype(int)
    feasible = r_mem >= 1
    b = np.maximum(1, np.minimum(pts.max_batch, r_mem)).astype(float)
    hbm_Bps = np.maximum(pts.n_hbm, 1) * lib.memory.bandwidth_GBps * 1e9  # noqa: N806
    phase_t = {}
    for phase, costs in (("prefill", pre), ("decode", dec)):
        own, shared, count = {}, {}, {}
        for fam, code in FAMILIES.items():
            idx = [i for i, t in enumerate(pts.types) if lib.by_name(t).family == fam and lib.by_name(t).phase == phase]
            count[fam] = pts.counts[:, idx].sum(axis=1) if idx else np.zeros(n)
            if idx:
                caps = chiplet_caps(lib.by_name(pts.types[idx[0]]), lib, uniq_bw)
                o, s = _family_seconds(costs, table.family, caps.matrix_flops, caps.vector_flops, code)
            else:  # the model has no block of this family (compute_types lists the families it has)
                o = s = np.zeros((2, len(uniq_bw)))
            batch = b if phase == "decode" else np.ones(n)
            own[fam] = o[0][inv] + batch * o[1][inv]
            shared[fam] = s[0][inv] + batch * s[1][inv]
        comp = fluid_makespan_s(own["attention"], own["mamba"], shared["attention"], shared["mamba"],
                                count["attention"], count["mamba"])
        by = costs.bytes_at(b).sum(axis=0) if phase == "decode" else np.full(n, costs.bytes_at(1.0).sum())
        phase_t[phase] = np.maximum(comp, by / hbm_Bps)
    t_p, t_d = phase_t["prefill"], phase_t["decode"]
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(feasible, np.minimum(1.0 / t_p, b / (t_d * ln.mean_decode)), 0.0)
    cap = np.nan_to_num(cap, nan=0.0, posinf=0.0)
    stable = feasible & (cap > sc.workload.arrival_rate_rps)
    return pd.DataFrame({
        "point": np.arange(n), "label": [pts.label(i) for i in range(n)], "batch_eff": b.astype(int),
        "prefill_s": t_p, "decode_iteration_s": t_d, "capacity_rps": cap, "throughput_tps": cap * ln.mean_decode,
        "ttft_s": np.where(stable, t_p, np.nan), "stable": stable, "feasible": feasible})
