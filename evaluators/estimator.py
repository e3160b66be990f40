"""Markov / fluid performance estimator (HYDRA Sec. V), vectorized over a whole design space.

For each design point (composition, HBM count, D2D bandwidth, max batch):

1. Memory concurrency r = min(r_M, r_A) from the best HBM partition (HYDRA Eq. 1), and the effective
   batch b = min(max batch, r).
2. Service capacities (HYDRA Eqs. 6-7 with static scheduling: prefill-optimized chiplets serve prefill,
   decode-optimized ones serve decode, s = number of prefill chiplets). The bottleneck stage time of each
   phase (Eq. 5) is the fluid (divisible-task) optimum of the mapping: attention-only work on attention
   chiplets, Mamba-only work on Mamba chiplets, shared work (MLP, embedding, head) split to balance them,
   plus the HBM-group bandwidth bound. G_p = prefill tokens/s, G_d(k) = decode tokens/s at batch k.
3. Throughput (Eq. 8 with pi concentrated on the static split) = sustainable output tokens/s:
   min(G_p / E[L_p], G_d(b) / E[L_d]) * E[L_d]. A point whose capacity is at or below the offered load
   lambda is reported **unstable** (TTFT = NaN), never as a number.
4. TTFT at the offered load: a birth-death CTMC on the number of requests in the system (arrivals lambda,
   departures mu(n) = G_d(min(n, b)) / E[L_d]; product-form pi with a geometric tail beyond b) gives the
   wait for a batch slot E[(N - b)^+] / lambda (Little's law); prefill is an M/G/1 queue (Pollaczek-Khinchine
   with the trace's E[L_p^2]); plus the chunk-pipelined prefill latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from chipdse.design_space import DesignPoints
from chipdse.scenario import LoadedScenario
from evaluators.latency import (
    FAMILY_ATTENTION,
    FAMILY_MAMBA,
    FAMILY_SHARED,
    GROUP_ATTENTION,
    GROUP_MAMBA,
    BlockTable,
    ChipletCaps,
    PhaseCosts,
    block_table,
    chiplet_caps,
    decode_costs,
    prefill_costs,
)


@dataclass(frozen=True)
class MemoryNeeds:
    """Per-group weights and per-request bytes (HYDRA Eq. 1 inputs), group order (attention, mamba)."""

    weight_bytes: np.ndarray
    per_request_bytes: np.ndarray
    present: np.ndarray
    capacity_bytes: float


def memory_needs(sc: LoadedScenario) -> MemoryNeeds:
    """Return the Eq. 1 inputs: group weights, KV bytes per request at the mean context, state per request.

    Weights of a group the model does not have (e.g. a pure transformer's Mamba group, which holds only its
    embedding/head when those are assigned there) are folded into the group it has.
    """
    m = sc.model
    ctx = sc.lengths.mean_prefill + sc.lengths.mean_decode
    weights = np.array([m.group_weight_bytes("attention"), m.group_weight_bytes("mamba")])
    per_req = np.array([m.kv_bytes_per_token() * ctx, m.state_bytes_per_request()])
    present = np.array(["attention" in m.families, "mamba" in m.families])
    if not present.all():
        weights[present] += weights[~present].sum()
    return MemoryNeeds(weights, per_req, present, sc.library.memory.capacity_GB * 1e9)


def best_partition(needs: MemoryNeeds, n_hbm: int) -> tuple[np.ndarray, int]:
    """Return (stacks per group, min concurrency) maximizing min_g r_g by enumeration (HYDRA Eq. 1).

    Groups absent from the model get 0 stacks (their weights are already folded in by :func:`memory_needs`).
    Returns concurrency -1 when the weights do not fit in any split.
    """
    w = needs.weight_bytes
    best_n, best_r = np.zeros(2, dtype=int), -1
    present = np.flatnonzero(needs.present)
    splits = [(n_hbm,)] if len(present) == 1 else [(k, n_hbm - k) for k in range(1, n_hbm)]
    for split in splits:
        stacks = np.zeros(2, dtype=int)
        stacks[present] = split
        free = stacks[present] * needs.capacity_bytes - w[present]
        if np.any(free < 0):
            continue
        r = int(np.min(np.floor(free / needs.per_request_bytes[present])))
        if r > best_r:
            best_n, best_r = stacks, r
    return best_n, best_r


def _family_sums(t: BlockTable, costs: PhaseCosts) -> dict[str, np.ndarray]:
    """Sum a phase's per-block costs by operator family and by HBM group (arrays of shape (3,) / (2,))."""
    out = {}
    for name in ("mat0", "mat1", "vec0", "vec1", "bytes0", "bytes1"):
        v = getattr(costs, name)
        out[name] = np.array([v[t.family == f].sum() for f in (FAMILY_ATTENTION, FAMILY_MAMBA, FAMILY_SHARED)])
        out["g" + name] = np.array([v[t.group == g].sum() for g in (GROUP_ATTENTION, GROUP_MAMBA)])
    return out


def _balance(a: np.ndarray, m: np.ndarray, f_a: np.ndarray, f_m: np.ndarray,
             n_a: np.ndarray, n_m: np.ndarray) -> np.ndarray:
    """Fluid optimum of Eq. 5 for two chiplet families: min over x in [0,1] of
    max((a + x f_a) / n_a, (m + (1 - x) f_m) / n_m), with a family of zero chiplets taking no work."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (n_a * (m + f_m) - n_m * a) / (n_m * f_a + n_a * f_m)
    x = np.clip(np.nan_to_num(x, nan=1.0), 0.0, 1.0)
    x = np.where(n_m == 0, 1.0, np.where(n_a == 0, 0.0, x))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_a = np.where(n_a > 0, (a + x * f_a) / np.maximum(n_a, 1), np.where(a > 0, np.inf, 0.0))
        t_m = np.where(n_m > 0, (m + (1 - x) * f_m) / np.maximum(n_m, 1), np.where(m > 0, np.inf, 0.0))
    return np.maximum(t_a, t_m)


class Screen:
    """Vectorized estimator for one scenario (build once, score many points)."""

    def __init__(self, sc: LoadedScenario) -> None:
        self.sc = sc
        self.table = block_table(sc.model)
        ln = sc.lengths
        self.mean_lp, self.mean_ld = ln.mean_prefill, ln.mean_decode
        self.lp2 = ln.second_moment_prefill
        self.chunks = max(1.0, float(np.ceil(self.mean_lp / sc.spec.estimator.chunk_tokens)))
        self.pre = _family_sums(self.table, prefill_costs(self.table, self.mean_lp, self.lp2,
                                                          sc.spec.estimator.chunk_tokens))
        self.dec = _family_sums(self.table, decode_costs(self.table, self.mean_lp + self.mean_ld / 2.0))
        self.needs = memory_needs(sc)
        self.hbm_GBps = sc.library.memory.bandwidth_GBps
        self.hops = sc.spec.estimator.screen_hops
        self.lam = sc.workload.arrival_rate_rps
        self.batching = sc.spec.estimator.batching

    def _type_for(self, family: str, phase: str, types: list[str]) -> int | None:
        for i, name in enumerate(types):
            c = self.sc.library.by_name(name)
            if c.family == family and c.phase == phase:
                return i
        return None

    def _caps(self, types: list[str], d2d: np.ndarray) -> dict[str, ChipletCaps]:
        """Capabilities of every type at each point's bandwidth (computed once per distinct bandwidth)."""
        uniq, inv = np.unique(d2d, return_inverse=True)
        out = {}
        for name in types:
            c = chiplet_caps(self.sc.library.by_name(name), self.sc.library, uniq)
            out[name] = ChipletCaps(*(getattr(c, f)[inv] for f in ChipletCaps.__dataclass_fields__))
        return out

    def _phase_time(self, s: dict[str, np.ndarray], batch: np.ndarray, counts: np.ndarray,
                    types: list[str], phase: str, d2d: np.ndarray, stacks: np.ndarray,
                    caps_by_type: dict[str, ChipletCaps]) -> np.ndarray:
        """Bottleneck time of one phase unit (fluid Eq. 5 + HBM-group bound), per point."""
        idx = {fam: self._type_for(fam, phase, types) for fam in ("attention", "mamba")}
        mat = s["mat0"][:, None] + np.outer(s["mat1"], batch)
        vec = s["vec0"][:, None] + np.outer(s["vec1"], batch)
        by = s["bytes0"][:, None] + np.outer(s["bytes1"], batch)
        times = {}
        n = {}
        for fam, i in idx.items():
            if i is None:
                times[fam] = np.full((3, len(d2d)), np.inf)
                n[fam] = np.zeros(len(d2d))
                continue
            caps = caps_by_type[types[i]]
            comp = mat / caps.matrix_flops + vec / caps.vector_flops
            times[fam] = np.maximum(comp, by / (self.hbm_GBps * 1e9)) + self.hops * by / (d2d * 1e9)
            n[fam] = counts[:, i].astype(float)
        ta, tm = times["attention"], times["mamba"]
        t = _balance(np.where(n["attention"] > 0, ta[FAMILY_ATTENTION], 0.0),
                     np.where(n["mamba"] > 0, tm[FAMILY_MAMBA], 0.0),
                     ta[FAMILY_SHARED], tm[FAMILY_SHARED], n["attention"], n["mamba"])
        gby = s["gbytes0"][:, None] + np.outer(s["gbytes1"], batch)
        with np.errstate(divide="ignore", invalid="ignore"):
            hbm_bound = np.where(stacks.T > 0, gby / (stacks.T * self.hbm_GBps * 1e9), 0.0).max(axis=0)
        return np.maximum(t, hbm_bound)

    def score(self, pts: DesignPoints) -> pd.DataFrame:
        """Score every point; return one row per point with throughput, TTFT, stability and intermediates.

        Returns
        -------
        pandas.DataFrame
            Columns: label parts (counts per type, n_hbm, d2d_GBps, max_batch), hbm_attention, hbm_mamba,
            r_mem, batch_eff, prefill_rps, decode_rps, capacity_rps, throughput_tps, ttft_s (NaN when
            unstable), stable, feasible, reason.
        """
        n = len(pts)
        stacks = np.zeros((n, 2), dtype=int)
        r_mem = np.zeros(n, dtype=int)
        for h in np.unique(pts.n_hbm):
            split, r = best_partition(self.needs, int(h))
            sel = pts.n_hbm == h
            stacks[sel] = split
            r_mem[sel] = r
        feasible = r_mem >= 1
        b_eff = np.maximum(1, np.minimum(pts.max_batch, r_mem))
        d2d = pts.d2d_GBps.astype(float)
        caps = self._caps(pts.types, d2d)
        # one prefill unit is one request (no batch terms)
        t_p = self._phase_time(self.pre, np.ones(n), pts.counts, pts.types, "prefill", d2d, stacks, caps)
        bmax = int(b_eff.max())
        mu = np.zeros((bmax, n))
        for k in range(1, bmax + 1):
            kk = np.minimum(k, b_eff).astype(float)
            t_d = self._phase_time(self.dec, kk, pts.counts, pts.types, "decode", d2d, stacks, caps)
            mu[k - 1] = kk / t_d / self.mean_ld  # requests/s completing with min(k, b) in decode
        n_pre = sum(pts.counts[:, i] for i, t in enumerate(pts.types)
                    if self.sc.library.by_name(t).phase == "prefill")
        m = self.serving_metrics(t_p, mu, b_eff, n_pre, feasible)
        prefill_rps, decode_rps, capacity, stable, ttft = (
            m["prefill_rps"], m["decode_rps"], m["capacity_rps"], m["stable"], m["ttft_s"])
        lam = self.lam
        df = pd.DataFrame({"point": np.arange(n)})
        for i, t in enumerate(pts.types):
            df[t] = pts.counts[:, i]
        label = pd.Series("", index=df.index)
        for t in pts.types:
            label = label + t + df[t].astype(str) + "-"
        df["label"] = (label + "HBM" + pd.Series(pts.n_hbm).astype(str) + "-"
                       + pd.Series(pts.d2d_GBps).round().astype(int).astype(str) + "GBps-B"
                       + pd.Series(pts.max_batch).astype(str))
        df["n_hbm"] = pts.n_hbm
        df["d2d_GBps"] = d2d
        df["max_batch"] = pts.max_batch
        df["hbm_attention"] = stacks[:, GROUP_ATTENTION]
        df["hbm_mamba"] = stacks[:, GROUP_MAMBA]
        df["r_mem"] = r_mem
        df["batch_eff"] = b_eff
        df["prefill_rps"] = prefill_rps
        df["decode_rps"] = decode_rps
        df["capacity_rps"] = np.where(feasible, capacity, 0.0)
        df["throughput_tps"] = df["capacity_rps"] * self.mean_ld
        df["ttft_s"] = ttft
        df["stable"] = stable
        df["feasible"] = feasible
        df["reason"] = np.where(~feasible, "weights + one request do not fit the HBM stacks",
                                np.where(~stable, f"unstable: capacity <= offered load {lam:g} req/s", ""))
        return df

    def serving_metrics(self, t_p: np.ndarray, mu: np.ndarray, b_eff: np.ndarray, n_prefill_chiplets: np.ndarray,
                        feasible: np.ndarray) -> dict[str, np.ndarray]:
        """Turn phase times into capacity, stability and TTFT at the offered load (steps 3-4 above).

        Parameters
        ----------
        t_p : numpy.ndarray, shape (n,)
            Prefill bottleneck time per request, s.
        mu : numpy.ndarray, shape (b_max, n)
            Decode completion rate, requests/s, with k = 1..b_max requests decoding (constant beyond b_eff).
        b_eff : numpy.ndarray, shape (n,), int
            Effective batch (max batch capped by memory concurrency).
        n_prefill_chiplets : numpy.ndarray, shape (n,)
            Pipeline depth of prefill (for the chunk-pipelined prefill latency).
        feasible : numpy.ndarray of bool, shape (n,)

        Returns
        -------
        dict
            prefill_rps, decode_rps, capacity_rps, stable, ttft_s (NaN where unstable).
        """
        n = len(t_p)
        lam = self.lam
        if self.batching == "static":
            return self._static_metrics(t_p, mu[b_eff - 1, np.arange(n)], b_eff, n_prefill_chiplets, feasible)
        prefill_rps = 1.0 / t_p
        decode_rps = mu[b_eff - 1, np.arange(n)]
        capacity = np.minimum(prefill_rps, decode_rps)
        stable = feasible & (capacity > lam)
        wait_slot = self._slot_wait(mu, b_eff, lam, stable)
        rho_p = lam * t_p
        es2 = t_p**2 * self.lp2 / self.mean_lp**2
        with np.errstate(divide="ignore", invalid="ignore"):
            wait_prefill = np.where(rho_p < 1, lam * es2 / (2 * (1 - rho_p)), np.inf)
        latency_p = t_p * (1.0 + (np.asarray(n_prefill_chiplets) - 1) / self.chunks)
        ttft = np.where(stable, wait_slot + wait_prefill + latency_p, np.nan)
        return {"prefill_rps": prefill_rps, "decode_rps": decode_rps, "capacity_rps": capacity,
                "stable": stable, "ttft_s": ttft}

    def _static_metrics(self, t_p: np.ndarray, mu_b: np.ndarray, b: np.ndarray, n_pre: np.ndarray,
                        feasible: np.ndarray) -> dict[str, np.ndarray]:
        """Static batching (HYDRA Sec. IV-B, Fig. 5 top; the DSE setting of Sec. VI-B).

        A batch of b requests is prefilled together (b * t_p on the prefill chiplets) and then decoded for
        E[max of b output lengths] iterations of T_d(b) (finished requests cannot be replaced); prefill of the
        next batch overlaps decode of this one, so the cycle is C = max(b t_p, E[max L_d] T_d(b)) and the
        capacity b / C. TTFT = batch formation (b - 1) / (2 lambda) + M/D/1 wait of the batch for the pipeline
        (rho C / (2 (1 - rho)), rho = lambda C / b) + the batch's chunk-pipelined prefill.
        """
        lam = self.lam
        bf = b.astype(float)
        t_step = bf / (mu_b * self.mean_ld)  # T_d(b) from mu(b) = b / T_d(b) / E[L_d]
        decode_cycle = self.expected_max_decode(b) * t_step
        prefill_cycle = bf * t_p
        cycle = np.maximum(prefill_cycle, decode_cycle)
        capacity = bf / cycle
        stable = feasible & (capacity > lam)
        rho = lam * cycle / bf
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = np.where(rho < 1, rho * cycle / (2 * (1 - rho)), np.inf)
        latency_p = prefill_cycle * (1.0 + (np.asarray(n_pre) - 1) / (self.chunks * bf))
        ttft = np.where(stable, (bf - 1) / (2 * lam) + wait + latency_p, np.nan)
        return {"prefill_rps": bf / prefill_cycle, "decode_rps": bf / decode_cycle, "capacity_rps": capacity,
                "stable": stable, "ttft_s": ttft}

    def expected_max_decode(self, b: np.ndarray) -> np.ndarray:
        """E[max of b output lengths drawn from the workload's sample], tokens (exact for the empirical CDF).

        E[max] = sum_i (v_i - v_{i-1}) (1 - F(v_{i-1})^b) over the sorted distinct lengths v_i (v_0 = 0).
        """
        b = np.asarray(b)
        vals, cnt = np.unique(self.sc.lengths.decode_tokens, return_counts=True)
        cdf_prev = np.concatenate([[0.0], np.cumsum(cnt)[:-1] / cnt.sum()])
        steps = np.diff(np.concatenate([[0.0], vals.astype(float)]))
        ub = np.unique(b)
        table = {int(k): float(np.sum(steps * (1 - cdf_prev ** int(k)))) for k in ub}
        return np.vectorize(table.__getitem__, otypes=[float])(b)

    @staticmethod
    def _slot_wait(mu: np.ndarray, b: np.ndarray, lam: float, stable: np.ndarray) -> np.ndarray:
        """Mean wait for a batch slot, E[(N - b)^+] / lambda, from the birth-death chain's product form.

        pi_n proportional to prod_{k<=n} lambda / mu(k); for n >= b, mu is constant so the tail is geometric
        with ratio rho = lambda / mu(b) < 1: E[(N-b)^+] = pi_b * rho / (1 - rho)^2 and the tail mass is
        pi_b / (1 - rho). Computed in log space.
        """
        n_pts = mu.shape[1]
        idx = np.arange(n_pts)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_ratio = np.log(lam) - np.log(mu)
        log_pi = np.vstack([np.zeros(n_pts), np.cumsum(log_ratio, axis=0)])  # log pi_0 .. pi_bmax (unnorm.)
        k = np.arange(log_pi.shape[0])[:, None]
        head_mask = k < b[None, :]
        log_pi_b = log_pi[b, idx]
        rho = np.where(stable, lam / mu[b - 1, idx], 0.5)
        shift = np.maximum(np.max(np.where(head_mask, log_pi, -np.inf), axis=0), log_pi_b)
        head = np.sum(np.where(head_mask, np.exp(log_pi - shift), 0.0), axis=0)
        pib = np.exp(log_pi_b - shift)
        total = head + pib / (1 - rho)
        excess = pib * rho / (1 - rho) ** 2 / total
        return np.where(stable, excess / lam, np.nan)
