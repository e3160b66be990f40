"""Latency tables: per-task compute time from a roofline and NoI time from HYDRA Eq. 3.

t_comp(k, c) = max(F_mat / P_mat(c) + F_vec / P_vec(c), V_k / B_HBM)   (roofline against the chiplet's
compute and the HBM stack bandwidth), and t_comm(k, c) = d(c, m_k) * V_k / B_NoI (HYDRA Eq. 3), where V_k is
the bytes task k moves from its HBM group and d the Manhattan hops to that group's stacks (mean over the stacks,
since a group's data are striped over them). All arrays broadcast, so one call scores a whole sweep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from chipdse.core.design_space import PointSpec
from chipdse.core.models import GROUP_NAMES, ModelDescriptor, causal_attention_flops
from chipdse.core.scenario import LoadedScenario
from chipdse.core.specs import ChipletLibrary, ComputeChiplet

#: Operator-family codes: which chiplet families may run a block.
FAMILY_ATTENTION, FAMILY_MAMBA, FAMILY_SHARED = 0, 1, 2
#: HBM-group codes.
GROUP_ATTENTION, GROUP_MAMBA = 0, 1  # indices into chipdse.core.models.GROUP_NAMES


@dataclass(frozen=True)
class ChipletCaps:
    """What one compute chiplet type delivers at a given D2D bandwidth (arrays broadcast over bandwidths).

    Attributes
    ----------
    matrix_flops, vector_flops : numpy.ndarray
        Sustained FLOP/s of the matrix and vector units.
    sram_bytes : numpy.ndarray
        On-chip SRAM, bytes.
    phy_mm2, compute_mm2 : numpy.ndarray
        PHY area and compute area, mm^2.
    """

    matrix_flops: np.ndarray
    vector_flops: np.ndarray
    sram_bytes: np.ndarray
    phy_mm2: np.ndarray
    compute_mm2: np.ndarray


def chiplet_caps(ctype: ComputeChiplet, library: ChipletLibrary, d2d_GBps: np.ndarray) -> ChipletCaps:  # noqa: N803
    """Return a compute chiplet's capabilities at each D2D bandwidth.

    Parameters
    ----------
    ctype : ComputeChiplet
    library : ChipletLibrary
        For its PHY model.
    d2d_GBps : array_like
        Per-link D2D bandwidth(s), GB/s.

    Returns
    -------
    ChipletCaps
        Arrays shaped like ``d2d_GBps``.

    Raises
    ------
    ValueError
        When the PHY area leaves no core area under the die cap (the message gives both areas).

    Notes
    -----
    core = die - overhead - PHY(B); compute = fraction * core; SRAM = the rest (HYDRA Sec. III-C, Fig. 3:
    more D2D bandwidth costs PHY area, which comes out of compute and SRAM under the die cap).
    """
    bw = np.atleast_1d(np.asarray(d2d_GBps, dtype=float))
    phy = np.array([library.phy.area_for(b) for b in bw.ravel()]).reshape(bw.shape)
    core = ctype.die_area_mm2 - ctype.overhead_area_mm2 - phy
    if np.any(core <= 0):
        worst = float(phy.max())
        msg = (f"chiplet {ctype.name}: {worst:.1f} mm^2 of D2D PHY at {bw.max():.0f} GB/s leaves no core area "
               f"under the {ctype.die_area_mm2:.0f} mm^2 die cap")
        raise ValueError(msg)
    comp = ctype.compute_fraction * core
    sram = core - comp
    return ChipletCaps(
        matrix_flops=comp * ctype.matrix_TFLOPS_per_mm2 * 1e12 * ctype.utilization,
        vector_flops=comp * ctype.vector_TFLOPS_per_mm2 * 1e12 * ctype.utilization,
        sram_bytes=sram * ctype.sram_MB_per_mm2 * 1e6,
        phy_mm2=phy,
        compute_mm2=comp,
    )


@dataclass(frozen=True)
class BlockTable:
    """Per-block cost coefficients of a model as arrays (one entry per block, model order).

    Attributes
    ----------
    names : list[str]
    family, group : numpy.ndarray of int
        FAMILY_* and GROUP_* codes.
    weight_bytes, matmul_fpt, attn_fpt_ctx, vector_fpt, kv_bpt, state_bpr, act_bpt : numpy.ndarray
        Weights read per use (bytes); matmul FLOPs per token; attention FLOPs per token per context token; vector
        FLOPs per token; KV bytes per token; SSM state bytes per request; activation bytes passed on per token.
    stored_weight_bytes : numpy.ndarray
        Weights held in HBM (bytes): ``weight_bytes`` less re-uses of weight-shared blocks (Zamba2).
    expert_weight_bytes : numpy.ndarray
        Bytes of all routed experts of a MoE block (part of ``weight_bytes``; 0 elsewhere).
    expert_touch_p : numpy.ndarray
        k / E of a MoE block: the chance one token routes to a given expert (0 elsewhere).
    """

    names: list[str]
    family: np.ndarray
    group: np.ndarray
    weight_bytes: np.ndarray
    stored_weight_bytes: np.ndarray
    matmul_fpt: np.ndarray
    attn_fpt_ctx: np.ndarray
    vector_fpt: np.ndarray
    kv_bpt: np.ndarray
    state_bpr: np.ndarray
    act_bpt: float
    is_embedding: np.ndarray
    is_head: np.ndarray
    expert_weight_bytes: np.ndarray
    expert_touch_p: np.ndarray


def expected_experts_touched(n_experts: np.ndarray | float, top_k: np.ndarray | float,
                             tokens: np.ndarray | float) -> np.ndarray:
    """Expected number of distinct routed experts a step over ``tokens`` tokens reads.

    Parameters
    ----------
    n_experts, top_k : array_like
        E routed experts per MoE layer and k of them per token (``0 < k <= E``).
    tokens : array_like
        Tokens routed in the step (decode: the batch; prefill: the tokens of one chunk), >= 0.

    Returns
    -------
    numpy.ndarray
        ``E (1 - (1 - k / E)^b)`` (broadcast shape): each expert is missed by one token with probability
        1 - k / E, independently over tokens under uniform routing.

    References
    ----------
    Occupancy of E bins by b independent top-k draws; e.g. Qwen3-30B-A3B (E = 128, k = 8) touches 8 experts at
    batch 1 and 128 (1 - (15/16)^64) = 125.9 at batch 64.
    """
    e = np.asarray(n_experts, dtype=float)
    return e * touched_fraction(np.asarray(top_k, dtype=float) / e, tokens)


def touched_fraction(touch_p: np.ndarray | float, tokens: np.ndarray | float) -> np.ndarray:
    """Fraction 1 - (1 - p)^b of a MoE layer's routed experts that b tokens touch (p = k / E; 0 where p = 0)."""
    return 1.0 - (1.0 - np.asarray(touch_p, dtype=float)) ** np.asarray(tokens, dtype=float)


def block_table(model: ModelDescriptor) -> BlockTable:
    """Return the model's blocks as cost arrays (see :class:`BlockTable`)."""
    fam = {"attention": FAMILY_ATTENTION, "mamba1": FAMILY_MAMBA, "mamba2": FAMILY_MAMBA}
    grp = {"attention": GROUP_ATTENTION, "mamba": GROUP_MAMBA}
    bl = model.blocks
    return BlockTable(
        names=[b.name for b in bl],
        family=np.array([fam.get(b.kind, FAMILY_SHARED) for b in bl]),
        group=np.array([grp[b.group] for b in bl]),
        weight_bytes=np.array([b.streamed_params * model.param_bytes(b) for b in bl], dtype=float),
        stored_weight_bytes=np.array([b.params * model.param_bytes(b) for b in bl], dtype=float),
        matmul_fpt=np.array([b.matmul_flops_per_token for b in bl]),
        attn_fpt_ctx=np.array([b.attn_flops_per_token_per_ctx for b in bl]),
        vector_fpt=np.array([b.vector_flops_per_token for b in bl]),
        kv_bpt=np.array([b.kv_bytes_per_token for b in bl]),
        state_bpr=np.array([b.state_bytes_per_request for b in bl]),
        act_bpt=float(model.hidden_size * model.activation_bytes),
        is_embedding=np.array([b.kind == "embedding" for b in bl]),
        is_head=np.array([b.kind == "head" for b in bl]),
        expert_weight_bytes=np.array([b.routed_experts * b.expert_params * model.param_bytes(b) for b in bl],
                                     dtype=float),
        expert_touch_p=np.array([b.experts_per_token / b.routed_experts if b.routed_experts else 0.0
                                 for b in bl]),
    )


@dataclass(frozen=True)
class PhaseCosts:
    """Work of each block for one unit of a phase: FLOPs and HBM bytes, linear in the batch size.

    For prefill the unit is one request of mean prompt length; for decode, one iteration of a batch of b
    requests, with ``F = F0 + b * F1`` and ``V = V0 + b * V1 + V_E (1 - (1 - p)^b)``: MoE blocks read only the
    routed experts the batch touches (``expert_bytes`` V_E = all routed experts, ``expert_p`` p = k / E; see
    :func:`expected_experts_touched`). Use :meth:`bytes_at` for V.
    """

    mat0: np.ndarray
    mat1: np.ndarray
    vec0: np.ndarray
    vec1: np.ndarray
    bytes0: np.ndarray
    bytes1: np.ndarray
    expert_bytes: np.ndarray | None = None
    expert_p: np.ndarray | None = None

    def bytes_at(self, batch: np.ndarray | float) -> np.ndarray:
        """Per-block HBM bytes at ``batch`` requests: shape (blocks,) for a scalar, (blocks, n) for shape (n,)."""
        b = np.asarray(batch, dtype=float)
        if b.ndim == 0:
            out = self.bytes0 + float(b) * self.bytes1
            if self.expert_bytes is not None:
                out = out + self.expert_bytes * touched_fraction(self.expert_p, float(b))
            return out
        out = self.bytes0[:, None] + np.outer(self.bytes1, b)
        if self.expert_bytes is not None:
            out = out + self.expert_bytes[:, None] * touched_fraction(self.expert_p[:, None], b[None, :])
        return out


def prefill_costs(t: BlockTable, mean_len: float, second_moment_len: float, chunk_tokens: int) -> PhaseCosts:
    """Return per-block prefill work for one request (HYDRA Sec. III-B, prefill phase).

    Parameters
    ----------
    t : BlockTable
    mean_len : float
        Mean prompt length E[L], tokens.
    second_moment_len : float
        E[L^2], tokens^2 (causal attention costs ~L^2/2 score+value pairs).
    chunk_tokens : int
        Chunked prefill: weights are streamed from HBM once per chunk.

    Returns
    -------
    PhaseCosts
        Batch-independent (the ``*1`` terms are zero).
    """
    chunks = max(1.0, np.ceil(mean_len / chunk_tokens))
    # the head computes logits for the last prompt token only (that is the first output token)
    tokens = np.where(t.is_head, 1.0, mean_len)
    mat = tokens * t.matmul_fpt + causal_attention_flops(t.attn_fpt_ctx, second_moment_len)
    vec = tokens * t.vector_fpt
    # weights stream once per chunk (once for the head); the embedding is a row lookup, not a weight stream; a
    # MoE block reads the experts a chunk's tokens touch (all of them for any realistic chunk)
    per_chunk = t.weight_bytes - t.expert_weight_bytes * (1.0 - touched_fraction(t.expert_touch_p, mean_len / chunks))
    weight_reads = np.where(t.is_head, 1.0, chunks) * np.where(t.is_embedding, 0.0, per_chunk)
    by = weight_reads + mean_len * (t.kv_bpt + np.where(t.is_embedding, t.act_bpt, 0.0)) + t.state_bpr
    z = np.zeros_like(mat)
    return PhaseCosts(mat, z, vec, z, by, z)


def decode_costs(t: BlockTable, ctx_tokens: float) -> PhaseCosts:
    """Return per-block decode work of one iteration as ``F0 + b * F1`` (weights once, per-request terms b times).

    Parameters
    ----------
    t : BlockTable
    ctx_tokens : float
        Mean context length during decode (prompt + half the output), tokens.

    Notes
    -----
    Per request per iteration: matmul 2 * active params, attention 4 * heads * head_dim * ctx, SSM state
    read + write (2 x state bytes), KV read ctx * kv_bpt. Weights are read once per iteration for the batch;
    a MoE block's routed experts only where the batch touches them (``PhaseCosts.bytes_at``).
    """
    z = np.zeros_like(t.matmul_fpt)
    return PhaseCosts(
        mat0=z, mat1=t.matmul_fpt + t.attn_fpt_ctx * ctx_tokens,
        vec0=z, vec1=t.vector_fpt.copy(),
        # the embedding reads one row per request, every other block streams its weights once per iteration
        bytes0=np.where(t.is_embedding, 0.0, t.weight_bytes - t.expert_weight_bytes),
        bytes1=ctx_tokens * t.kv_bpt + 2.0 * t.state_bpr + np.where(t.is_embedding, t.act_bpt, 0.0),
        expert_bytes=t.expert_weight_bytes.copy(), expert_p=t.expert_touch_p.copy(),
    )


def task_time_s(
    mat_flop: np.ndarray | float, vec_flop: np.ndarray | float, hbm_bytes: np.ndarray | float, caps: ChipletCaps,
    hbm_GBps: float, hops: np.ndarray | float, d2d_GBps: np.ndarray | float,  # noqa: N803
    transfer_wait: np.ndarray | float = 0.0, hop_latency_s: float = 0.0,
) -> np.ndarray:
    """Return t_comp + t_comm of tasks on a chiplet, optionally with queueing on the shared transfers.

    Parameters
    ----------
    mat_flop, vec_flop : array_like
        Matrix and vector FLOPs of the task (``F_mat``, ``F_vec``).
    hbm_bytes : array_like
        Bytes the task moves from its HBM group (V_k).
    caps : ChipletCaps
        The chiplet's capabilities (``P_mat``, ``P_vec`` in FLOP/s; broadcast with the others).
    hbm_GBps : float
        Bandwidth of one HBM stack ``B_HBM``, GB/s.
    hops : array_like
        Manhattan hops from the chiplet to the task's memory (HYDRA Eq. 3, d_Man(c, m_k)).
    d2d_GBps : array_like
        Per-link NoI bandwidth B_NoI, GB/s.
    transfer_wait : array_like, optional
        Queueing on the shared HBM ports and links as a multiple (>= 0) of the task's transfer time
        ``V / B_HBM + t_comm`` (:func:`chipdse.evaluators.estimator.transfer_wait`); 0 (the default) is HYDRA's
        uncontended Eq. 3.
    hop_latency_s : float, optional
        Router + link latency of one hop, s (the package's ``hop_latency_ns`` x 1e-9); a task that moves bytes
        pays it once per hop, as the simulator's NoI does (``evaluators/sim_noi.py``). 0 (the default) is
        HYDRA's Eq. 3, which counts bandwidth only.

    Returns
    -------
    numpy.ndarray
        ``max(F_mat / P_mat + F_vec / P_vec, V / B_HBM) + t_comm + wait * (V / B_HBM + t_comm)``, seconds, with
        ``t_comm = d (V / B_NoI + t_hop)`` (``t_hop`` only where V > 0), shaped like the broadcast of the
        arguments. Nothing is raised; a zero bandwidth gives ``inf``.

    References
    ----------
    HYDRA Eq. 3 (t_comm = d_Man(c, m_k) V_k / B_NoI) plus a per-hop latency, and Sec. IV-C (t_comp from a latency
    table; here a roofline against the chiplet's compute and the HBM stack bandwidth).
    """
    base, transfer = task_time_parts_s(mat_flop, vec_flop, hbm_bytes, caps, hbm_GBps, hops, d2d_GBps, hop_latency_s)
    return base + transfer_wait * transfer


def task_time_parts_s(
    mat_flop: np.ndarray | float, vec_flop: np.ndarray | float, hbm_bytes: np.ndarray | float, caps: ChipletCaps,
    hbm_GBps: float, hops: np.ndarray | float, d2d_GBps: np.ndarray | float,  # noqa: N803
    hop_latency_s: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The two parts of :func:`task_time_s` (same arguments, without the wait): the uncontended time
    ``max(F_mat / P_mat + F_vec / P_vec, V / B_HBM) + t_comm`` and the transfer time ``V / B_HBM + t_comm`` that
    a queueing wait multiplies, seconds, each shaped like the broadcast of the arguments (HYDRA Eq. 3).
    ``task_time_s(..., wait) == base + wait * transfer`` exactly, so a fixed point over the wait computes them
    once."""
    compute = mat_flop / caps.matrix_flops + vec_flop / caps.vector_flops
    port = hbm_bytes / (hbm_GBps * 1e9)
    per_hop = hbm_bytes / (np.asarray(d2d_GBps) * 1e9) + np.where(np.asarray(hbm_bytes) > 0, hop_latency_s, 0.0)
    t_comm = hops * per_hop
    return np.maximum(compute, port) + t_comm, port + t_comm


def mean_hops_to_groups(sc: LoadedScenario, decision: Mapping[int, str]) -> dict[int, dict[str, float]]:
    """For each placed compute chiplet's cell, the mean Manhattan hops to the stacks of each HBM group.

    Parameters
    ----------
    sc : LoadedScenario
        Its package gives the grid's columns.
    decision : mapping of int to str
        Cell -> chiplet type (``"hbm:<group>"`` for a stack).

    Returns
    -------
    dict[int, dict[str, float]]
        Compute cell -> group name -> mean hops (HYDRA Eq. 3's d_Man(c, m_k), averaged over the group's stacks, since a
        group's data are striped over them).
    """
    cols = sc.package.cols
    stacks: dict[str, list[int]] = {}
    for cell, ty in decision.items():
        if ty.startswith("hbm:"):
            stacks.setdefault(ty[4:], []).append(cell)
    out = {}
    for cell, ty in decision.items():
        if ty.startswith("hbm:"):
            continue
        r, c = divmod(cell, cols)
        out[cell] = {g: float(np.mean([abs(r - s // cols) + abs(c - s % cols) for s in cells]))
                     for g, cells in stacks.items()}
    return out


@dataclass(frozen=True)
class PlacedTimes:
    """Every (block, chiplet) time of one phase on a placed design (the bottleneck mapping's cost table).

    Attributes
    ----------
    tasks : tuple[str, ...]
        The model's blocks, in model order.
    chiplets : tuple[str, ...]
        The placed chiplets of the phase (ids ``"<type>@<cell>"``), in cell order.
    time_s : dict[tuple[str, str], float]
        (block, chiplet) -> t_comp + t_comm, s, for family-compatible pairs only (a block runs on chiplets of its
        family; shared blocks on any).
    """

    tasks: tuple[str, ...]
    chiplets: tuple[str, ...]
    time_s: dict[tuple[str, str], float]


def placed_task_times(sc: LoadedScenario, point: PointSpec, decision: Mapping[int, str], phase: str, batch: int,
                      transfer_wait_x: float = 0.0, cross_phase: bool = False) -> PlacedTimes:
    """Return the time of every block on every placed chiplet of one phase (HYDRA Eqs. 3-4).

    Parameters
    ----------
    sc : LoadedScenario
    point : PointSpec
        The design (its D2D bandwidth sets the chiplets' PHY area and the NoI rate).
    decision : mapping of int to str
        Cell -> chiplet type.
    phase : {"prefill", "decode"}
        Prefill: one mean-length request; decode: one iteration at ``batch``.
    batch : int
        Requests per decode iteration (ignored for prefill).
    transfer_wait_x : float
        Queueing on the shared ports and links as a multiple (>= 0) of each block's transfer time
        (:func:`chipdse.evaluators.queueing.transfer_wait`); 0 is HYDRA's uncontended Eq. 3.
    cross_phase : bool
        Also list the other phase role's chiplets, each at its own caps (the simulator's cost tables: a decode
        chiplet prefills at its own compute).

    Returns
    -------
    PlacedTimes

    Notes
    -----
    Time = roofline t_comp + hops x V / B_NoI (Eq. 3), hops the mean distance from the chiplet to its block's HBM
    group (:func:`mean_hops_to_groups`; the nearest group when the block's own has no stack).
    """
    t = block_table(sc.model)
    ln = sc.lengths
    if phase == "prefill":
        c = prefill_costs(t, ln.mean_prefill, ln.second_moment_prefill, sc.spec.estimator.chunk_tokens)
        mat, vec, by = c.mat0, c.vec0, c.bytes0
    else:
        c = decode_costs(t, ln.mean_prefill + ln.mean_decode / 2.0)
        mat, vec, by = batch * c.mat1, batch * c.vec1, c.bytes_at(batch)
    hops = mean_hops_to_groups(sc, decision)
    times: dict[tuple[str, str], float] = {}
    chiplets = []
    for cell in sorted(hops):
        ty = decision[cell]
        ctype = sc.library.by_name(ty)
        if ctype.phase != phase and not cross_phase:
            continue
        cid = f"{ty}@{cell}"
        chiplets.append(cid)
        caps = chiplet_caps(ctype, sc.library, np.array([point.d2d_GBps]))
        fam = FAMILY_ATTENTION if ctype.family == "attention" else FAMILY_MAMBA
        for k, name in enumerate(t.names):
            if t.family[k] not in (fam, 2):
                continue
            d = hops[cell][GROUP_NAMES[t.group[k]]] if GROUP_NAMES[t.group[k]] in hops[cell] else \
                min(hops[cell].values())
            t_k = task_time_s(mat[k], vec[k], by[k], caps, sc.library.memory.bandwidth_GBps, d, point.d2d_GBps,
                              transfer_wait_x, sc.package.hop_latency_ns * 1e-9)
            times[(name, cid)] = float(t_k[0])
    return PlacedTimes(tuple(t.names), tuple(chiplets), times)


class TaskTimes(Protocol):
    """A cost table of blocks on chiplets: :class:`PlacedTimes`, or a mapping problem (same three fields)."""

    tasks: tuple[str, ...]
    chiplets: tuple[str, ...]
    time_s: Mapping[tuple[str, str], float]


def stage_times_s(times: TaskTimes, mapping: Mapping[str, str]) -> dict[str, float]:
    """Return each chiplet's stage time t_c under a mapping (HYDRA Eq. 4), s.

    Parameters
    ----------
    times : TaskTimes
        :class:`PlacedTimes` or a :class:`chipdse.formulations.mapping.MappingProblem`.
    mapping : mapping of str to str
        Block -> chiplet id. Incompatible or unknown pairs contribute nothing (the mapping checker reports them).

    Returns
    -------
    dict[str, float]
        Every chiplet of ``times.chiplets`` (0.0 when idle) -> summed block time, s.
    """
    loads = dict.fromkeys(times.chiplets, 0.0)
    for k in times.tasks:
        c = mapping.get(k)
        if c in loads and (k, c) in times.time_s:
            loads[c] += times.time_s[k, c]
    return loads
