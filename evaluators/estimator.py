"""Markov / fluid performance estimator (HYDRA Sec. V), vectorized over a whole design space.

For each design point (composition, HBM count, D2D bandwidth, max batch):

1. Memory concurrency r = min(r_M, r_A) from the best HBM partition (HYDRA Eq. 1), and the effective
   batch b = min(max batch, r).
2. Stage times (HYDRA Eqs. 3-5 with static scheduling: prefill-optimized chiplets serve prefill,
   decode-optimized ones serve decode). Each phase's mapping is the fluid (divisible-task) optimum:
   attention-only work on attention chiplets, Mamba-only work on Mamba chiplets, shared work (MLP, embedding,
   head) split to balance them; the bottleneck stage time T_bn adds the HBM-group bandwidth bound, and the
   stages' sum W is one micro-batch's trip through the pipeline.
3. Decode pipelining as the simulator runs it: one micro-batch of at most b requests per decode stage (S
   slots), all resident requests in memory, so n_conc = min(S b, r) requests decode at once (static
   batching: whole batches, floor(r / b) of them). The slots circulate through the stages, each a FIFO server
   with deterministic service: a closed cyclic network whose round (the time between two tokens of a request)
   is max(slowest micro-batch's trip, bottleneck stage's work on all of them)
   (:func:`chipdse.evaluators.markov.deterministic_cycle_s`): max(W_d, active slots x T_bn) with equal
   micro-batches (dynamic batching); static batches shrink as their requests finish, so the slots carry unequal
   micro-batches and the round is the mean of that max over their independent ages (Clark's formula on the
   moments of the largest and the total active count). Transfers wait at the busiest of the HBM ports and the
   NoI links (M/D/1 at the load of the other sources, :func:`transfer_wait`), the capacity and the waits solved as
   one fixed point.
   Throughput (Eq. 8 with pi concentrated on the full-load state) = sustainable output tokens/s,
   min(1 / t_p, decode rate) x E[L_d]. A point whose capacity is at or below the offered load lambda is
   reported **unstable** (TTFT = NaN), never as a number.
4. TTFT at the offered load: the birth-death CTMC on the number of decoding requests (mu(n) = n mu_1 up to
   n_conc: Erlang C) gives the wait for a decode place; prefill is an M/G/1 queue (Pollaczek-Khinchine with the
   trace's E[L_p^2]); plus the chunk-pipelined prefill latency. Static batching: batch formation, an M/D/m wait
   for a slot and the batch's prefill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from chipdse.core.design_space import DesignPoints
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.latency import (
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
    task_time_parts_s,
    touched_fraction,
)
from chipdse.evaluators.markov import clark_expected_max, deterministic_cycle_s, fluid_bracket_occupancy
from chipdse.evaluators.markov_hops import placement_geometry
from chipdse.evaluators.queueing import MAX_TRANSFER_UTILIZATION, ServingModel, transfer_wait


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


def memory_concurrency(needs: MemoryNeeds, stacks: dict[str, int]) -> int:
    """Requests whose KV / state fit next to the weights in a given split, min over present groups (Eq. 1)."""
    r = None
    for gi, g in enumerate(("attention", "mamba")):
        if not needs.present[gi]:
            continue
        free = stacks.get(g, 0) * needs.capacity_bytes - needs.weight_bytes[gi]
        rg = int(np.floor(free / needs.per_request_bytes[gi])) if needs.per_request_bytes[gi] > 0 else 10**9
        r = rg if r is None else min(r, rg)
    return -1 if r is None else r


def _family_sums(t: BlockTable, costs: PhaseCosts) -> dict[str, np.ndarray]:
    """Sum a phase's per-block costs by operator family and by HBM group (arrays of shape (3,) / (2,))."""
    out = {}
    z = np.zeros_like(costs.bytes0)
    views = {name: getattr(costs, name) for name in ("mat0", "mat1", "vec0", "vec1", "bytes0", "bytes1")}
    views["bytes_e"] = z if costs.expert_bytes is None else costs.expert_bytes
    for name, v in views.items():
        out[name] = np.array([v[t.family == f].sum() for f in (FAMILY_ATTENTION, FAMILY_MAMBA, FAMILY_SHARED)])
        out["g" + name] = np.array([v[t.group == g].sum() for g in (GROUP_ATTENTION, GROUP_MAMBA)])
    # MoE layers of one model share E and k, so one touch probability serves every family sum
    out["expert_p"] = float(costs.expert_p.max()) if costs.expert_p is not None and len(costs.expert_p) else 0.0
    return out


def _bytes_at(s: dict[str, np.ndarray], batch: np.ndarray, prefix: str = "") -> np.ndarray:
    """Family (or group, ``prefix="g"``) HBM bytes at each point's batch, shape (3 or 2, n): V0 + b V1 plus the
    routed experts the batch touches (``PhaseCosts.bytes_at``)."""
    return (s[prefix + "bytes0"][:, None] + np.outer(s[prefix + "bytes1"], batch)
            + np.outer(s[prefix + "bytes_e"], touched_fraction(s["expert_p"], batch)))


def _balance_times(a: np.ndarray, m: np.ndarray, f_a: np.ndarray, f_m: np.ndarray,
                   n_a: np.ndarray, n_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-chiplet stage times (attention family, Mamba family) of the fluid Eq. 5 optimum: the split x in
    [0, 1] of the shared work minimizing max((a + x f_a) / n_a, (m + (1 - x) f_m) / n_m), with a family of zero
    chiplets taking no work."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (n_a * (m + f_m) - n_m * a) / (n_m * f_a + n_a * f_m)
    x = np.clip(np.nan_to_num(x, nan=1.0), 0.0, 1.0)
    x = np.where(n_m == 0, 1.0, np.where(n_a == 0, 0.0, x))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_a = np.where(n_a > 0, (a + x * f_a) / np.maximum(n_a, 1), np.where(a > 0, np.inf, 0.0))
        t_m = np.where(n_m > 0, (m + (1 - x) * f_m) / np.maximum(n_m, 1), np.where(m > 0, np.inf, 0.0))
    return t_a, t_m


def _choice(field: str, value: str, allowed: tuple[str, ...]) -> str:
    """Return ``value`` when it is one of ``allowed``, else raise ValueError naming the field and the value."""
    if value not in allowed:
        msg = f"estimator {field} must be one of {', '.join(allowed)}, got {value!r}"
        raise ValueError(msg)
    return value


CONTENTION_ITERATIONS = 6
"""Regula falsi (Illinois) steps on the busiest transfer resource's utilization for the capacity / transfer-wait
fixed point. The fixed point is unique: capacity falls as the waits grow and the waits grow with the capacity.
Plain iteration from zero wait oscillates (a design with fewer hops could score lower than the same design with
more); bisection needs 9 steps to resolve the utilization to 0.002 (at 0.015, six steps, a faster HBM could score
up to 2.6% lower where the busiest NoI link sets the waits)."""


class Screen:
    """Vectorized estimator for one scenario (build once, score many points).

    Parameters
    ----------
    sc : LoadedScenario
    batching : {"static", "dynamic"}, optional
        Overrides the scenario's ``estimator.batching`` (score the same scenario under another policy without
        copying it).
    scheduling : {"static", "elastic"}, optional
        Overrides ``estimator.scheduling``: static pins the allocation to the preferred split (HYDRA Sec. VI-B's
        DSE setting); elastic lets chiplets serve the other phase (:mod:`chipdse.evaluators.markov`).
    hop_model : {"placement", "fixed"}, optional
        Overrides ``estimator.hop_model``.

    Raises
    ------
    ValueError
        An unknown batching, scheduling or hop model (the message gives the value).
    """

    def __init__(self, sc: LoadedScenario, *, batching: str | None = None, scheduling: str | None = None,
                 hop_model: str | None = None) -> None:
        est = sc.spec.estimator
        self.sc = sc
        self.table = block_table(sc.model)
        ln = sc.lengths
        self.mean_lp, self.mean_ld = ln.mean_prefill, ln.mean_decode
        self.lp2 = ln.second_moment_prefill
        self.chunks = max(1.0, float(np.ceil(self.mean_lp / est.chunk_tokens)))
        self.pre_costs = prefill_costs(self.table, self.mean_lp, self.lp2, est.chunk_tokens)
        self.dec_costs = decode_costs(self.table, self.mean_lp + self.mean_ld / 2.0)
        self.pre = _family_sums(self.table, self.pre_costs)
        self.dec = _family_sums(self.table, self.dec_costs)
        self.needs = memory_needs(sc)
        self.hbm_GBps = sc.library.memory.bandwidth_GBps
        self.fixed_hops = est.screen_hops
        self.hop_latency_s = sc.package.hop_latency_ns * 1e-9
        self.lam = sc.workload.arrival_rate_rps
        self.serving = ServingModel.of(sc, batching)
        """Capacity, stability and TTFT from the stage times (:mod:`chipdse.evaluators.queueing`)."""
        self.batching = self.serving.batching
        self.scheduling = _choice("scheduling", est.scheduling if scheduling is None else scheduling,
                                  ("static", "elastic"))
        self.hop_model = _choice("hop_model", est.hop_model if hop_model is None else hop_model,
                                 ("placement", "fixed"))
        # the exact placement the pipeline simulates puts the heaviest traffic nearest the stacks and the two groups
        # on opposite edges (measured against hbm-enum in benchmarks/bench_fidelity.py)
        self.hop_order, self.hbm_layout = "volume", "opposite"
        # the last :meth:`geometry` call's class key and result: the energy pass asks again for the points the
        # score just placed (at the same batch under static batching), and a construction is a fifth of a score
        self._geometry_memo: tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray] | None = None

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

    def type_hops(self, pts: DesignPoints, stacks: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """Mean hops of each compute type to its HBM traffic at every point, shape (n, T).

        ``hop_model == "placement"``: the greedy placement of the point's composition class (counts, HBM split),
        each type weighted by :meth:`hop_weights` (:func:`chipdse.evaluators.markov_hops.placement_hops`, one
        construction per class and batch). ``"fixed"``: ``estimator.screen_hops`` everywhere.

        Parameters
        ----------
        pts : DesignPoints
        stacks : numpy.ndarray, shape (n, 2), int
            Stacks per HBM group (attention, mamba).
        batch : numpy.ndarray, shape (n,), int
            Effective decode batch.
        """
        return self.geometry(pts, stacks, batch)[0]

    def geometry(self, pts: DesignPoints, stacks: np.ndarray, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean hops per type and the share of the HBM bytes crossing the busiest NoI link, at every point.

        ``pts``, ``stacks`` (n, 2) and ``batch`` (n,) as in :meth:`type_hops`; the batch sets the traffic weights
        (:meth:`hop_weights`).

        Returns
        -------
        (hops, share) : tuple of numpy.ndarray, shapes (n, T) and (n,)
            :meth:`type_hops` and the busiest link's share of a request's HBM bytes
            (:func:`chipdse.evaluators.markov_hops.placement_geometry`, one construction per class); share 0 with
            the fixed hop model, which has no placement.
        """
        n, n_types = pts.counts.shape
        if self.hop_model == "fixed":
            return np.full((n, n_types), float(self.fixed_hops)), np.zeros(n)
        key = np.concatenate([pts.counts, stacks, np.asarray(batch)[:, None]], axis=1).astype(np.int64)
        memo = self._geometry_memo
        if memo is not None and memo[0] == tuple(pts.types) and memo[1].shape == key.shape and np.array_equal(
                memo[1], key):
            return memo[2], memo[3]
        dims = key.max(axis=0) + 1
        if float(np.prod(dims.astype(float))) < 2.0**62:  # one integer per row: much faster than unique(axis=0)
            _, first, inv = np.unique(np.ravel_multi_index(key.T, dims), return_index=True, return_inverse=True)
            uniq = key[first]
        else:
            uniq, inv = np.unique(key, axis=0, return_inverse=True)
        counts, cls_stacks, cls_batch = uniq[:, :n_types], uniq[:, n_types:n_types + 2], uniq[:, -1]
        weights = self.hop_weights(pts.types, counts, cls_stacks, cls_batch)
        pkg = self.sc.package
        hops, share = placement_geometry(pkg.rows, pkg.cols, pkg.ring_cells(), tuple(pts.types), counts, cls_stacks,
                                         weights, self.hop_order, self.hbm_layout)
        inv = np.asarray(inv).ravel()
        hops, share = hops[inv], share[inv]
        hops.flags.writeable = share.flags.writeable = False  # shared with the next call on the same points
        self._geometry_memo = (tuple(pts.types), key, hops, share)
        return hops, share

    def hop_weights(self, types: list[str], counts: np.ndarray, stacks: np.ndarray, batch: np.ndarray
                    ) -> np.ndarray:
        """HBM bytes each chiplet type's phase work reads from each group per request, shape (n, T, 2).

        Attention- or Mamba-only blocks on their family, shared blocks in proportion to the phase's chiplet
        counts, prefill of one request and its L_d / b decode iterations at ``batch``: the weights of
        ``chipdse.solvers.problems.placement_problem``'s HBM volumes. A group without stacks holds nothing; its
        blocks live in the present group (as :func:`best_partition` folds them).

        Parameters
        ----------
        types : list of str, length T
        counts : numpy.ndarray, shape (n, T)
        stacks : numpy.ndarray, shape (n, 2)
        batch : numpy.ndarray, shape (n,)
        """
        n, n_types = counts.shape
        t = self.table
        lib = self.sc.library
        fam = np.array([FAMILY_ATTENTION if lib.by_name(x).family == "attention" else FAMILY_MAMBA for x in types])
        is_pre = self._prefill_mask(types)
        weights = np.zeros((n, n_types, 2))
        ub, b_inv = np.unique(np.asarray(batch), return_inverse=True)
        b_inv = np.asarray(b_inv).ravel()
        dec_by = self.dec_costs.bytes_at(ub.astype(float))  # (blocks, len(ub))
        cf = np.asarray(counts, dtype=float)
        for ti in range(n_types):
            phase_n = (cf * (is_pre == is_pre[ti])).sum(axis=1)
            share = np.divide(cf[:, ti], phase_n, out=np.zeros(n), where=phase_n > 0)
            for g in (GROUP_ATTENTION, GROUP_MAMBA):
                own = (t.family == fam[ti]) & (t.group == g)
                shared = (t.family == FAMILY_SHARED) & (t.group == g)
                if is_pre[ti]:
                    weights[:, ti, g] = self.pre_costs.bytes0[own].sum() + share * self.pre_costs.bytes0[shared].sum()
                else:  # one request's share of its decode iterations: L_d / b of them
                    per_req = self.mean_ld / np.asarray(batch, dtype=float)
                    weights[:, ti, g] = per_req * (dec_by[own].sum(axis=0)[b_inv]
                                                   + share * dec_by[shared].sum(axis=0)[b_inv])
        has = np.asarray(stacks)[:, None, :] > 0
        return np.where(has, weights + weights[:, :, ::-1] * ~has[:, :, ::-1], 0.0)

    def _family_mask(self, types: list[str], family: str) -> np.ndarray:
        """Bool mask (shape (T,)) of the compute types of ``family`` (the HBM group of the same name holds its
        weights and state)."""
        return np.array([self.sc.library.by_name(x).family == family for x in types])

    def _prefill_mask(self, types: list[str]) -> np.ndarray:
        """Bool mask (shape (T,)) of the prefill compute types (the others decode)."""
        return np.array([self.sc.library.by_name(x).phase == "prefill" for x in types])

    def transfer_sources(self, types: list[str], counts: np.ndarray, stacks: np.ndarray, batch: np.ndarray
                         ) -> np.ndarray:
        """Sources m competing at each HBM group's ports, as a decode chiplet of the group's family sees them,
        shape (n, 2): m = 1 / s, s = that chiplet's share of the bytes all decode chiplets read from the group per
        request (:meth:`hop_weights`).

        The wait its transfers see is the M/D/1 wait at the load of the others, rho (1 - s) (:func:`transfer_wait`
        with ``sources=m``). When the family's m decode chiplets are the group's only readers, s = 1 / m. But a
        group also holds the shared blocks of its layers (MLP, MoE, embedding, head), which the chiplets running
        them read, of either family: on Jamba-tiny the 16 attention-decode chiplets of Ap1-Ad16-Mp2-Md2 read 72%
        of the Mamba group's decode bytes (its layers' MoE experts), so each of the 2 Mamba-decode chiplets reads
        14% of them, not half (m = 7.2, not 2). A family that reads nothing from the group gets m = inf (the open
        wait).

        Parameters
        ----------
        types : list of str, length T
        counts : numpy.ndarray, shape (n, T)
            Chiplets of each type (their phase is the type's).
        stacks : numpy.ndarray, shape (n, 2)
        batch : numpy.ndarray, shape (n,)
            Effective decode batch.

        Returns
        -------
        numpy.ndarray, shape (n, 2)
            m per group (attention, mamba), >= 1 where finite.
        """
        w = self.hop_weights(types, counts, stacks, batch)  # bytes per request of each type from each group
        c = np.asarray(counts, dtype=float)
        is_dec = ~self._prefill_mask(types)
        out = np.empty((len(c), 2))
        for g, fam in enumerate(GROUP_NAMES):
            own = self._family_mask(types, fam) & is_dec
            fam_bytes, fam_n = w[:, own, g].sum(axis=1), c[:, own].sum(axis=1)
            out[:, g] = np.divide(w[:, is_dec, g].sum(axis=1) * fam_n, fam_bytes, out=np.full(len(c), np.inf),
                                  where=fam_bytes > 0)
        return out

    def _phase_plan(self, s: dict[str, np.ndarray], batch: np.ndarray, alloc: np.ndarray,
                    types: list[str], d2d: np.ndarray, stacks: np.ndarray,
                    caps_by_type: dict[str, ChipletCaps], hops: np.ndarray
                    ) -> Callable[[np.ndarray | float], tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Stage times of one phase unit at ``batch`` requests per point (fluid Eq. 5 + HBM-group bound), as a
        function of the transfer wait.

        ``alloc`` (shape (n, T), may be fractional) gives the chiplets of each type serving this phase: a type
        optimized for the other phase runs it at its own roofline rate (HYDRA Eqs. 6-7's cross terms). A family's
        chiplets form one pool whose speed on each kind of work is the sum of its members' rates, so the fluid
        balance sees ``n`` chiplets each as fast as the pool's mean member. ``hops`` (shape (n, T)) are each
        type's mean hops to its HBM traffic.

        Returns a function of ``wait`` (shape (n,) or scalar: queueing on the shared HBM ports and links, every
        transfer taking ``1 + wait`` times its uncontended time, :func:`transfer_wait`) that gives (bottleneck
        stage time T_bn, sum of the stage times W, number of stages S), each shape (n,): the fluid mapping
        spreads each family's work evenly over its chiplets, so a micro-batch passing all S stages takes W, and
        the pipeline starts one every T_bn. What does not depend on the wait (FLOPs, bytes, each type's
        uncontended and transfer times, :func:`chipdse.evaluators.latency.task_time_parts_s`, the HBM-group
        bound) is computed once, so the contention fixed point re-evaluates only the rates, with the same
        floating-point operations as :func:`chipdse.evaluators.latency.task_time_s`."""
        mat = s["mat0"][:, None] + np.outer(s["mat1"], batch)
        vec = s["vec0"][:, None] + np.outer(s["vec1"], batch)
        by = _bytes_at(s, batch)
        n_pts = len(d2d)
        members: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        n: dict[str, np.ndarray] = {}
        for fam in ("attention", "mamba"):
            members[fam] = []
            n_fam = np.zeros(n_pts)
            for i, name in enumerate(types):
                if self.sc.library.by_name(name).family != fam or not np.any(alloc[:, i] > 0):
                    continue
                base, transfer = task_time_parts_s(mat, vec, by, caps_by_type[name], self.hbm_GBps, hops[:, i], d2d,
                                                   self.hop_latency_s)
                members[fam].append((alloc[:, i], base, transfer))
                n_fam += alloc[:, i]
            n[fam] = n_fam
        gby = _bytes_at(s, batch, "g")
        with np.errstate(divide="ignore", invalid="ignore"):
            hbm_bound = np.where(stacks.T > 0, gby / (stacks.T * self.hbm_GBps * 1e9), 0.0).max(axis=0)
        # work of a family no chiplet serves (only an elastic state can empty a pool) never finishes
        stranded = np.zeros(n_pts, dtype=bool)
        for fam, code in (("attention", FAMILY_ATTENTION), ("mamba", FAMILY_MAMBA)):
            stranded |= (n[fam] <= 0) & ((mat[code] + vec[code] + by[code]) > 0)
        stranded |= (n["attention"] <= 0) & (n["mamba"] <= 0)
        has_a, has_m = n["attention"] > 0, n["mamba"] > 0

        def at(wait: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            per_chiplet: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for fam, fam_code in (("attention", FAMILY_ATTENTION), ("mamba", FAMILY_MAMBA)):
                rate_own = np.zeros(n_pts)
                rate_shared = np.zeros(n_pts)
                for c, base, transfer in members[fam]:
                    tt = base + wait * transfer
                    with np.errstate(divide="ignore"):
                        rate_own += np.where(c > 0, c / tt[fam_code], 0.0)
                        rate_shared += np.where(c > 0, c / tt[FAMILY_SHARED], 0.0)
                n_fam = n[fam]
                with np.errstate(divide="ignore", invalid="ignore"):
                    own_t = np.where(n_fam > 0, n_fam / rate_own, np.inf)
                    shared_t = np.where(n_fam > 0, n_fam / rate_shared, np.inf)
                per_chiplet[fam] = (own_t, shared_t)
            (ta, fa), (tm, fm) = per_chiplet["attention"], per_chiplet["mamba"]
            t_a, t_m = _balance_times(np.where(has_a, ta, 0.0), np.where(has_m, tm, 0.0),
                                      fa, fm, n["attention"], n["mamba"])
            busy_a, busy_m = has_a & (t_a > 0), has_m & (t_m > 0)
            stages = np.where(busy_a, n["attention"], 0.0) + np.where(busy_m, n["mamba"], 0.0)
            w = np.where(busy_a, n["attention"] * t_a, 0.0) + np.where(busy_m, n["mamba"] * t_m, 0.0)
            t_bn = np.where(stranded, np.inf, np.maximum(np.maximum(t_a, t_m), hbm_bound))
            return t_bn, np.where(stranded, np.inf, w), np.maximum(stages, 1.0)

        return at

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
        hops, link_share = self.geometry(pts, stacks, b_eff)
        ctx = {"pts": pts, "d2d": d2d, "stacks": stacks, "caps": self._caps(pts.types, d2d), "hops": hops,
               "link_share": link_share, "b_eff": b_eff, "r_mem": np.maximum(r_mem, 1), "feasible": feasible,
               "sources": self.transfer_sources(pts.types, pts.counts, stacks, b_eff)}
        is_pre = self._prefill_mask(pts.types)
        counts = pts.counts.astype(float)
        pinned = self._state(counts * is_pre, counts * ~is_pre, ctx)
        m = pinned if self.scheduling == "static" else self._elastic(counts, is_pre, pinned, ctx)
        s_d, n_conc, iter_s = m["stages"], m["n_conc"], m["iter_s"]
        prefill_rps, decode_rps, capacity, stable, ttft = (
            m["prefill_rps"], m["decode_rps"], m["capacity_rps"], m["stable"], m["ttft_s"])
        lam = self.lam
        cap = np.where(feasible, capacity, 0.0)
        cols: dict[str, np.ndarray] = {"point": np.arange(n)}  # one frame from all columns: no insert per column
        cols.update({t: pts.counts[:, i] for i, t in enumerate(pts.types)})
        cols.update({
            "label": pts.labels(), "n_hbm": pts.n_hbm, "d2d_GBps": d2d, "max_batch": pts.max_batch,
            "hbm_attention": stacks[:, GROUP_ATTENTION], "hbm_mamba": stacks[:, GROUP_MAMBA], "r_mem": r_mem,
            "batch_eff": b_eff, "decode_stages": s_d.astype(int), "decode_concurrency": n_conc.astype(int),
            "decode_iteration_s": iter_s, "prefill_rps": prefill_rps, "decode_rps": decode_rps,
            "capacity_rps": cap, "throughput_tps": cap * self.mean_ld, "ttft_s": ttft, "stable": stable,
            "feasible": feasible,
            "reason": np.where(~feasible, "weights + one request do not fit the HBM stacks",
                               np.where(~stable, f"unstable: capacity <= offered load {lam:g} req/s", ""))})
        df = pd.DataFrame(cols)
        return df

    def _state(self, pre_alloc: np.ndarray, dec_alloc: np.ndarray, ctx: dict) -> dict[str, np.ndarray]:
        """Serving metrics with ``pre_alloc`` / ``dec_alloc`` chiplets of each type (shape (n, T)) on each phase.

        Capacity has the transfer waits at its own load (a few fixed-point steps from the uncontended one); TTFT
        has them at the offered load. Returns :meth:`serving_metrics`' dict plus ``stages`` (decode stages S),
        ``n_conc``, ``iter_s`` (decode iteration at full load), ``transfer_bound_rps`` (requests/s at which the
        busiest port or link reaches :data:`MAX_TRANSFER_UTILIZATION`, which caps the rates) and the rates before
        that cap (``prefill_rps_unbounded``, ``decode_rps_unbounded``), each shape (n,).
        """
        pts, d2d, stacks, caps, hops = ctx["pts"], ctx["d2d"], ctx["stacks"], ctx["caps"], ctx["hops"]
        n = len(d2d)
        ones = np.ones(n)
        decode1_at = self._phase_plan(self.dec, ones, dec_alloc, pts.types, d2d, stacks, caps, hops)
        _, _, s_d = decode1_at(0.0)
        n_conc, k = self.serving.decode_concurrency(ctx["b_eff"], ctx["r_mem"], s_d)
        # a static batch decodes E[max L_d] iterations, but its requests leave as they finish: iteration j runs
        # the b (1 - F(j)) still decoding, b E[L_d] request-iterations in all. Work affine in the active count
        # (V0 + k V1) sums to E[max L_d] V0 + b E[L_d] V1 per batch; the secant between one request and k gives
        # V1 (exact for affine costs, the roofline's max makes it a bound). Dynamic batching refills the slots,
        # so every iteration runs k requests.
        static = self.batching == "static"
        e_max_b = self.serving.expected_max_decode(ctx["b_eff"])  # E[max L_d] of a static batch of b_eff
        e_max = e_max_b if static else np.full(n, self.mean_ld)
        shrink = (k * self.mean_ld - e_max) / np.maximum(k - 1.0, 1.0)  # weight of the per-request slope

        def batch_mean(at_one: np.ndarray, at_k: np.ndarray) -> np.ndarray:
            """Mean per iteration over a batch's life of a quantity affine in the active requests (shape (n,))."""
            return at_one + shrink * (at_k - at_one) / e_max

        slots = n_conc / k
        act = self.serving.active_moments(k, slots) if static else {}

        # HBM bytes per request from each group (G, n): its prefill, and its share of the decode iterations
        dec_k, dec_1 = _bytes_at(self.dec, k, "g"), _bytes_at(self.dec, ones, "g")
        group_bytes = self.pre["gbytes0"][:, None] + (e_max * dec_1 + shrink * (dec_k - dec_1)) / k
        group_bytes_per_s = np.maximum(stacks.T, 0) * self.hbm_GBps * 1e9

        # the phase times as functions of the transfer wait (computed once, evaluated at every fixed-point step)
        prefill_at = self._phase_plan(self.pre, ones, pre_alloc, pts.types, d2d, stacks, caps, hops)
        decode_at = self._phase_plan(self.dec, k, dec_alloc, pts.types, d2d, stacks, caps, hops)

        def times(wait: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            t_p, w_p, _ = prefill_at(wait)
            t_bn, w_d, _ = decode_at(wait)
            if not static:  # equal micro-batches (the slots are refilled): the exact max(W, N t_bn)
                return t_p, w_p, deterministic_cycle_s(w_d, t_bn, np.minimum(n_conc, s_d))
            t_bn1, w_d1, _ = decode1_at(wait)
            # the slots' micro-batches differ (each batch shrinks as its requests finish): a round of the
            # deterministic cyclic network lasts max(slowest micro-batch's trip W(M), bottleneck stage's work on
            # all of them sum_i t_bn(A_i)), both affine in the active counts; its mean over the independent
            # batch ages by Clark's formula
            slope_w = (w_d - w_d1) / np.maximum(k - 1.0, 1.0)
            slope_t = (t_bn - t_bn1) / np.maximum(k - 1.0, 1.0)
            return t_p, w_p, clark_expected_max(
                w_d1 + (act["mean_max"] - 1.0) * slope_w, slope_w**2 * act["var_max"],
                slots * t_bn1 + (act["mean_sum"] - slots) * slope_t, slope_t**2 * act["var_sum"],
                slope_w * slope_t * act["cov"])

        port_bps = group_bytes_per_s.sum(axis=0)  # 0 where no split holds the weights (infeasible points)
        # seconds per request of the busiest transfer resource: the ports on average, or the busiest NoI link
        bytes_per_req = np.maximum(
            np.divide(group_bytes.sum(axis=0), port_bps, out=np.zeros(n), where=port_bps > 0),
            ctx["link_share"] * group_bytes.sum(axis=0) / (d2d * 1e9))

        # transfers of one chiplet never queue behind each other: a decode chiplet of the family that streams the
        # busiest HBM group waits behind the others' share of its load (:meth:`transfer_sources`, from the pinned
        # allocation's counts)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho_g = np.where(group_bytes_per_s > 0, group_bytes / group_bytes_per_s, 0.0)
        sources = ctx["sources"][np.arange(n), np.argmax(rho_g, axis=0)]

        def wait_at(x: np.ndarray) -> np.ndarray:
            """Transfer wait at the busiest resource's utilization ``x`` with this point's sources."""
            return transfer_wait(x, sources)

        def waits(rps: np.ndarray) -> np.ndarray:
            """Transfer wait at the busiest resource's utilization at ``rps`` requests/s (:func:`transfer_wait`)."""
            return wait_at(rps * bytes_per_req)

        feasible, b_eff = ctx["feasible"], ctx["b_eff"]
        def excess(x: np.ndarray) -> np.ndarray:
            """Utilization the capacity at the waits of utilization x implies, minus x (decreasing in x)."""
            t_p, _, iter_s = times(wait_at(x))
            return self.serving.uncoupled_capacity_rps(t_p, iter_s, n_conc, b_eff, e_max_b) * bytes_per_req - x

        # utilization rho* with rho* = capacity(wait(rho*)) * busiest seconds per request, on [0, 0.95] (above, the
        # capacity is the resource's own bound, 0.95 / busiest seconds per request): the
        # Illinois variant of regula falsi keeps the root bracketed and converges superlinearly
        lo, hi = np.zeros(n), np.full(n, MAX_TRANSFER_UTILIZATION)
        g_lo, g_hi = excess(lo), excess(hi)
        saturated = g_hi >= 0
        g_lo = np.maximum(g_lo, 0.0)
        g_hi = np.where(saturated, -1.0, g_hi)
        side = np.zeros(n)
        x = hi
        for _ in range(CONTENTION_ITERATIONS):
            x = np.where(saturated, hi, (lo * g_hi - hi * g_lo) / np.minimum(g_hi - g_lo, -1e-300))
            g = excess(x)
            up = g > 0
            lo, g_lo = np.where(up, x, lo), np.where(up, g, np.where(side < 0, g_lo / 2, g_lo))
            hi, g_hi = np.where(up, hi, x), np.where(up, np.where(side > 0, g_hi / 2, g_hi), np.minimum(g, -0.0))
            side = np.where(up, 1.0, -1.0)
        t_p, w_p, iter_s = times(wait_at(np.where(saturated, MAX_TRANSFER_UTILIZATION, x)))
        m = self.serving.serving_metrics(t_p, w_p, iter_s, n_conc, b_eff, feasible)
        # where even the waits at the cap leave more capacity than the busiest port or link carries, that resource
        # is the bottleneck: no phase serves more requests than it moves the bytes of (the elastic chain compares
        # the phases' rates before this bound, and applies it to its result)
        bound = np.divide(MAX_TRANSFER_UTILIZATION, bytes_per_req, out=np.full(n, np.inf), where=bytes_per_req > 0)
        m["transfer_bound_rps"] = bound
        m["prefill_rps_unbounded"], m["decode_rps_unbounded"] = m["prefill_rps"], m["decode_rps"]
        for key in ("prefill_rps", "decode_rps", "capacity_rps"):
            m[key] = np.where(saturated, np.minimum(m[key], bound), m[key])
        m["stable"] = m["stable"] & (m["capacity_rps"] > self.lam)
        t_p_l, w_p_l, iter_l = times(waits(np.minimum(self.lam, m["capacity_rps"])))
        m["ttft_s"] = np.where(m["stable"], self.serving.serving_metrics(t_p_l, w_p_l, iter_l, n_conc, b_eff,
                                                                 feasible)["ttft_s"], np.nan)
        m.update(stages=s_d, n_conc=n_conc, iter_s=iter_s)
        return m

    def _elastic(self, counts: np.ndarray, is_pre: np.ndarray, pinned: dict[str, np.ndarray], ctx: dict
                 ) -> dict[str, np.ndarray]:
        """Elastic scheduling: the allocation-state chain of HYDRA Sec. V-A/C over s = chiplets on prefill.

        From the preferred state s* the fluid model moves chiplets toward the phase that cannot keep up: the
        prefill surplus f(s) = prefill_rps(s) - decode_rps(s) (requests/s) grows with s, and at saturation the
        chain alternates between the adjacent states lo, hi = lo + 1 with f(lo) <= 0 <= f(hi), found by bisection
        over the states on the bottleneck's side of s*, with occupancies from the backlog balance
        (:func:`chipdse.evaluators.markov.fluid_bracket_occupancy`). Capacity = sum_s pi_s decode_rps(s) (Eq. 8);
        a state lends chiplets of the other phase's types in proportion to their counts (per family, Sec. V-D).
        TTFT at the offered load: the state the chain settles in there, s* when both phases keep up with it,
        else the bracket state nearer s* that is stable.
        """
        n_p = (counts * is_pre).sum(axis=1)
        n_d = (counts * ~is_pre).sum(axis=1)
        share_p = np.divide(counts * is_pre, n_p[:, None], out=np.zeros_like(counts), where=n_p[:, None] > 0)
        share_d = np.divide(counts * ~is_pre, n_d[:, None], out=np.zeros_like(counts), where=n_d[:, None] > 0)

        def at(offset: np.ndarray) -> dict[str, np.ndarray]:
            """Metrics of state s* + offset (offset > 0: decode-optimized chiplets lent to prefill)."""
            lend_d = np.maximum(offset, 0.0)[:, None] * share_d
            lend_p = np.maximum(-offset, 0.0)[:, None] * share_p
            pre = counts * is_pre - lend_p + lend_d
            dec = counts * ~is_pre - lend_d + lend_p
            return self._state(pre, dec, ctx)

        def surplus(m: dict[str, np.ndarray]) -> np.ndarray:
            return m["prefill_rps_unbounded"] - m["decode_rps_unbounded"]

        f0 = surplus(pinned)
        up = f0 < 0  # prefill is the bottleneck: lend decode chiplets to prefill
        # search offsets in [lo, hi] with f(lo) <= 0 <= f(hi); the end of the range empties a phase
        lo = np.where(up, 0.0, -n_p)
        hi = np.where(up, n_d, 0.0)
        while np.any(hi - lo > 1):
            mid = np.floor((lo + hi) / 2)
            f_mid = surplus(at(mid))
            open_ = hi - lo > 1
            lo = np.where(open_ & (f_mid <= 0), mid, lo)
            hi = np.where(open_ & (f_mid > 0), mid, hi)
        m_lo, m_hi = at(lo), at(hi)
        pi_hi = fluid_bracket_occupancy(surplus(m_lo), surplus(m_hi))
        pi_hi = np.where(np.isfinite(pi_hi), pi_hi, 0.0)
        out = dict(pinned)
        out["capacity_rps"] = np.where(ctx["feasible"], (1 - pi_hi) * np.nan_to_num(m_lo["decode_rps_unbounded"])
                                       + pi_hi * np.nan_to_num(m_hi["decode_rps_unbounded"]), 0.0)
        # the scheduler keeps the preferred chiplet unless moving a job helps (Sec. IV-C): where the transfer waits
        # of the busier states eat the gain (a fraction of a percent at most on the default space), s* stays
        out["capacity_rps"] = np.maximum(out["capacity_rps"], pinned["capacity_rps"])
        # and no state serves more than the busiest port or link of the preferred one carries (:meth:`_state`)
        out["capacity_rps"] = np.minimum(out["capacity_rps"], pinned["transfer_bound_rps"])
        out["prefill_rps"] = (1 - pi_hi) * m_lo["prefill_rps_unbounded"] + pi_hi * m_hi["prefill_rps_unbounded"]
        out["decode_rps"] = (1 - pi_hi) * m_lo["decode_rps_unbounded"] + pi_hi * m_hi["decode_rps_unbounded"]
        # the bracket state nearer s* first: lo when lending to prefill (offsets >= 0), hi otherwise
        ttft = pinned["ttft_s"]
        for cand in (np.where(up, m_lo["ttft_s"], m_hi["ttft_s"]), np.where(up, m_hi["ttft_s"], m_lo["ttft_s"])):
            ttft = np.where(np.isfinite(ttft), ttft, cand)
        stable = ctx["feasible"] & (out["capacity_rps"] > self.lam) & np.isfinite(ttft)
        out["stable"] = stable
        out["ttft_s"] = np.where(stable, ttft, np.nan)
        for key in ("stages", "n_conc", "iter_s"):
            out[key] = (1 - pi_hi) * m_lo[key] + pi_hi * m_hi[key]
        return out
