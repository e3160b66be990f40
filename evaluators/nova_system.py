"""NOVA system model: an H100 with five HBM4 cubes, with or without near-memory processing, per decode step.

Every design is the same GPU and five cubes (NOVA Sec. VI-A); the designs differ in which decode operators run
near memory, on which rooflines, and in capacity:

==========  ======================  ============================================  ========================
design      offloaded operators     near-memory roofline per cube                 capacity per cube
==========  ======================  ============================================  ========================
GPU         none                    -                                             36 GB
AttAcc      GQA                     in-die, bank-level (:class:`InDiePim`)          36 GB
PIMBA       GQA, SSM                in-die; state update on SPUs shared by two     36 GB
                                    banks; GQA softmax back on the GPU
Duplex      GQA, MoE                base-die, 4096 TSVs (64 TFLOPS at 4 TB/s)     36 GB
NOVA        GQA, SSM, MoE           Tier-1 (32 TFLOPS, 16 TB/s) + Tier-2           75.2 GB (4F^2 + POC,
                                    (64 TFLOPS, 4 TB/s), three modes per           2.09x)
                                    operator; MoE layer: Tier-1 only, Tier-2
                                    only or the expert split (static 1:9, k*
                                    or exact: "NOVA k*", "NOVA exact")
==========  ======================  ============================================  ========================

:data:`ABLATION` adds NOVA Fig. 14's single-tier and conventional two-tier variants.

A decode step runs the layers in order. In each layer the GPU reads its weights (projections, routers, shared
experts, dense MLPs) at the cubes' external bandwidth; every offloaded operator runs on each cube's NMP on a
fifth of the work and costs one synchronization (``sync_s``: the hand-off to the NMP and back), as the paper
offloads every supported decode operator; operators a design does not support run on the GPU with the GPU's
efficiency for that operator class (:class:`GpuEfficiency`: the paper gives none, so it is a stated, swept
assumption; GPU SSM and small-expert GEMMs run at low utilization, NOVA Sec. VI-C). NOVA picks Tier-1, Tier-2
or cross-tier per operator (:func:`evaluators.nmp.best_mode`), runs Falcon-H1's parallel GQA and SSM on the two
tiers at once when that is faster, and runs each MoE layer in the fastest of Tier-1 only, Tier-2 only
(:func:`evaluators.nmp.single_tier_expert_times_s`) and the design's expert split (hottest 10% of experts on
Tier-2, the static 1:9 split of NOVA's Figs. 11-15; NOVA's k*; or exact). The splits are solved by the caller
(the NOVA study, ``chipdse.studies.nova.solve_expert_splits``) and passed in, since an evaluator never runs a
solver (:func:`expert_split_cases` lists the ones a decode step needs). Expert token counts come from the
routing (:func:`routed_tokens`): Fig. 4(b)-style skew by default (the hottest 10% of experts get 5x the tokens
of the others), uniform and concentrated as variants. Systems of several GPUs (``gpus``, tensor-parallel: NOVA
runs Nemotron3-Super on two H100s over NVLink) scale compute, bandwidth, cubes and capacity by ``gpus`` and add
one all-reduce latency (``allreduce_s``) per layer.

Prefill runs on the GPU for every design (compute-bound roofline). A static batch's E2E latency = prefill +
``L_out`` decode steps at the mean context ``L_in + L_out / 2``; throughput = batch / step time. Serving with
continuous batching is :func:`serve`.

References
----------
NOVA Sec. VI-A (H100 + 5 HBM4 cubes, 12-high 36 GB, 8 Gb/s pins, 2048 vs 4096 TSVs, offload sets, fallback to the
GPU with synchronization), Sec. VI-E (tier rooflines, alpha*, k*, Fig. 14 ablation, serving dynamics), Sec. IV-A
(2.09x density); AttAcc (Park et al., ASPLOS 2024) and PIMBA (Kim et al., MICRO 2025) for the in-die PIM.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

import numpy as np

from chipdse.core.errors import SpecError
from chipdse.core.models import (
    attention_flops_per_context_token,
    causal_attention_flops,
    kv_cache_bytes_per_token,
)
from chipdse.core.specs import NovaScenario
from chipdse.evaluators.gpu import H100_FLOPS
from chipdse.evaluators.nmp import (
    NOVA_DENSITY,
    NOVA_TIERS,
    SSM_FLOPS_PER_STATE_ELEMENT,
    SSM_STATE_ACCESSES,
    NovaTiers,
    best_mode,
    gqa_decode_intensity,
    moe_expert_intensity,
    single_tier_expert_times_s,
    ssm_decode_intensity,
    tier1_cross_throughput_flops,
    tier2_throughput_flops,
    tier_throughput_flops,
)
from chipdse.evaluators.nova_model import BYTES, NovaModel

OPS = ("gqa", "ssm", "moe")

HBM4_EXTERNAL_BPS = 2048 * 8e9 / 8
"""One conventional HBM4 cube's interface: 2048 data pins x 8 Gb/s = 2.048 TB/s (NOVA Sec. VI-A, Table III)."""

ATTACC_INTERNAL_SCALE = 9.0
"""Bank-level PIM's internal bandwidth over the cube's external bandwidth under AttAcc's power constraint: 9x (AttAcc
simulator ``src/config.py``, ``BW_SCALE[True][PIMType.BA]``; 16x = ranks x bank groups x banks / tCCD without it)."""

ATTACC_FLOPS_PER_BYTE = 1.0
"""AttAcc's in-die compute-to-bandwidth ratio: 1 FLOP per byte (AttAcc simulator ``make_pim_config(opb=1)``: FLOPS
= opb x internal bandwidth; NOVA Sec. III-C: in-die ratios of 1-2; 16 BF16 MACs per 32-byte read, Sec. VI-A)."""

IN_DIE_BPS = ATTACC_INTERNAL_SCALE * HBM4_EXTERNAL_BPS
"""AttAcc / PIMBA bank-level internal bandwidth per conventional HBM4 cube: 9 x 2.048 = 18.4 TB/s."""
IN_DIE_FLOPS = ATTACC_FLOPS_PER_BYTE * IN_DIE_BPS
"""AttAcc / PIMBA in-die compute per cube: 18.4 TFLOPS."""

PIMBA_SSM_SHARE = 0.5
"""Share of the in-die bank rate PIMBA's state update reaches: one State-update Processing Unit is shared by two
banks, which it accesses interleaved (PIMBA abstract / Sec. 5, "each shared between two banks")."""


@dataclass(frozen=True)
class Hbm4Cube:
    """One HBM4 cube (NOVA Table III / Sec. VI-A).

    Attributes
    ----------
    capacity_GB : float
        36 GB (12-high).
    pin_Gbps : float
        8 Gb/s per I/O pin.
    io_pins : int
        2048 data pins (the conventional HBM4 interface; 2048 TSVs).
    channels, pseudo_channels : int
        8 channels (CH0-CH7) x 2 pseudo-channels (NOVA Sec. IV-B: "8 channels, consistent with HBM4, and each CH
        is divided into two pseudo-channels").
    """

    capacity_GB: float = 36.0
    pin_Gbps: float = 8.0
    io_pins: int = 2048
    channels: int = 8
    pseudo_channels: int = 2

    @property
    def external_Bps(self) -> float:
        """Bandwidth to the GPU, bytes/s (2048 pins x 8 Gb/s = 2.048 TB/s)."""
        return self.io_pins * self.pin_Gbps * 1e9 / 8

    @property
    def pseudo_channels_total(self) -> int:
        """Pseudo-channels per cube."""
        return self.channels * self.pseudo_channels


NMP_KINDS = ("none", "in-die", "base-die", "peri-die", "two-tier", "in-die+base-die")
"""Near-memory processing of a design: none; one tier (in-die PIM, NOVA's base-die Tier-2 or peri-die Tier-1); or
two tiers with NOVA's three modes (NOVA's peri-die + base-die, or a conventional in-die + base-die, Fig. 14)."""


@dataclass(frozen=True)
class NovaDesign:
    """A GPU + five-cube system with its near-memory processing.

    Attributes
    ----------
    name : str
    offload : frozenset[str]
        Operator classes run near memory (subset of ``OPS``).
    nmp : str
        One of :data:`NMP_KINDS`.
    density : float
        Capacity multiplier of each cube (2.09 for NOVA's 4F^2 + POC cube, :data:`evaluators.nmp.NOVA_DENSITY`).
    in_die_flops, in_die_Bps : float
        In-die PIM roofline per cube (FLOP/s, bytes/s): AttAcc / PIMBA's bank-level PIM, :data:`IN_DIE_FLOPS` and
        :data:`IN_DIE_BPS` (16 BF16 GEMV units per bank at a 256-bit read granularity, NOVA Sec. VI-A).
    ssm_share : float
        Share of the in-die rate its SSM state update reaches (PIMBA: :data:`PIMBA_SSM_SHARE`).
    gqa_softmax_on_gpu : bool
        GQA's aggregation and softmax go back to the GPU between the two in-die GEMVs: one more synchronization per
        GQA operator (PIMBA, NOVA Sec. VI-C "Per-Operator Speedup").
    expert_split : str
        The MoE split policy of a two-tier design: ``"static-1-9"`` (the paper's), ``"nova-kstar"`` or
        ``"milp-highs"`` (exact); the layer still runs on one tier alone when that is faster.
    """

    name: str
    offload: frozenset[str] = frozenset()
    nmp: str = "none"
    density: float = 1.0
    in_die_flops: float = IN_DIE_FLOPS
    in_die_Bps: float = IN_DIE_BPS
    ssm_share: float = 1.0
    gqa_softmax_on_gpu: bool = False
    expert_split: str = "static-1-9"

    def __post_init__(self) -> None:
        """Reject an unknown near-memory kind or an SSM share outside (0, 1]."""
        if self.nmp not in NMP_KINDS:
            raise SpecError("NovaDesign", "nmp", f"one of {NMP_KINDS}, got {self.nmp!r}")
        if not 0 < self.ssm_share <= 1:
            raise SpecError("NovaDesign", "ssm_share", f"a share in (0, 1], got {self.ssm_share!r}")

    @property
    def two_tier(self) -> bool:
        """Whether the design has two tiers with NOVA's three modes."""
        return self.nmp in ("two-tier", "in-die+base-die")


GPU = NovaDesign("GPU")
ATTACC = NovaDesign("AttAcc", frozenset({"gqa"}), "in-die")
PIMBA = NovaDesign("PIMBA", frozenset({"gqa", "ssm"}), "in-die", ssm_share=PIMBA_SSM_SHARE, gqa_softmax_on_gpu=True)
DUPLEX = NovaDesign("Duplex", frozenset({"gqa", "moe"}), "base-die")
NOVA = NovaDesign("NOVA", frozenset(OPS), "two-tier", density=NOVA_DENSITY)
NOVA_KSTAR = NovaDesign("NOVA k*", frozenset(OPS), "two-tier", density=NOVA_DENSITY, expert_split="nova-kstar")
NOVA_EXACT = NovaDesign("NOVA exact", frozenset(OPS), "two-tier", density=NOVA_DENSITY, expert_split="milp-highs")
DESIGNS = (GPU, ATTACC, PIMBA, DUPLEX, NOVA, NOVA_KSTAR, NOVA_EXACT)

IN_DIE_ONLY = NovaDesign("in-die only", frozenset(OPS), "in-die", ssm_share=PIMBA_SSM_SHARE)
PERI_DIE_ONLY = NovaDesign("peri-die only", frozenset(OPS), "peri-die", density=NOVA_DENSITY)
BASE_DIE_ONLY = NovaDesign("base-die only", frozenset({"gqa", "moe"}), "base-die")
IN_DIE_BASE_DIE = NovaDesign("in-die + base-die", frozenset(OPS), "in-die+base-die", ssm_share=PIMBA_SSM_SHARE)
ABLATION = (IN_DIE_ONLY, PERI_DIE_ONLY, BASE_DIE_ONLY, IN_DIE_BASE_DIE, NOVA)
"""NOVA Fig. 14's five variants under one system: in-die only (PIMBA-configured, all three operators), peri-die
only (Tier-1, all three), base-die only (Tier-2, SSM on the GPU), in-die + base-die (SSM in-die, GQA / MoE across
the two tiers: the best two-tier NMP of a conventional HBM4 stack) and NOVA."""


@dataclass(frozen=True)
class GpuEfficiency:
    """Sustained share of the H100's peak compute and bandwidth per decode operator class (assumptions: NOVA gives
    no GPU utilization; it states only that GPU SSM runs at "extremely low utilization", Sec. VI-C).

    Attributes
    ----------
    gemm : float
        Dense projections, routers, shared experts, LM head and prefill (0.7).
    attention : float
        The GQA core over the KV cache: a decode attention kernel with few KV heads per layer (2 in Nemotron3), so
        few thread blocks per request (0.4).
    expert : float
        Routed experts: many small GEMMs of a few tokens each (0.7: still streaming-bound, at the dense rate).
    ssm : float
        The Mamba-2 state update: tensor expansion and element-wise passes over the state (0.1).

    Notes
    -----
    The values are chosen inside plausible ranges and swept in ``benchmarks/bench_nova_claims.py``; with them
    AttAcc and PIMBA are not slower than the GPU (NOVA Fig. 11) and NOVA's mean gain is near its 4.5x.
    """

    gemm: float = 0.7
    attention: float = 0.4
    expert: float = 0.7
    ssm: float = 0.1

    def __post_init__(self) -> None:
        """Reject an efficiency outside (0, 1]."""
        bad = [(f.name, getattr(self, f.name)) for f in fields(self) if not 0 < getattr(self, f.name) <= 1]
        if bad:
            raise SpecError("GpuEfficiency", bad[0][0], f"a share in (0, 1], got {bad[0][1]!r}")


OP_CLASS = {"gqa": "attention", "ssm": "ssm", "moe": "expert"}
"""The :class:`GpuEfficiency` field of each offloadable operator run on the GPU."""


@dataclass(frozen=True)
class NovaSystem:
    """The shared system: GPU, cubes, tiers and synchronization cost.

    Attributes
    ----------
    gpu_flops : float
        H100 dense BF16 peak, FLOP/s (989 TFLOPS) ...
    gpu : GpuEfficiency
        ... and the share of it and of the cubes' bandwidth sustained per operator class (assumption).
    cubes : int
        Five cubes (the H100's five HBM sites).
    cube : Hbm4Cube
    tiers : NovaTiers
        NOVA's two tiers; Duplex's base-die NMP uses Tier-2's roofline (same 4096 TSVs).
    sync_s : float
        One GPU <-> NMP synchronization with the activation hand-off (assumption: 2 us).
    gpus : int
        GPUs, each with its five cubes, splitting every layer tensor-parallel.
    allreduce_s : float
        Latency of the tensor-parallel all-reduce per layer when ``gpus > 1`` (assumption: 5 us over NVLink4).
    routing : str
        Expert routing of the decode steps (:func:`routed_tokens`): ``"skewed"`` (NOVA Fig. 4(b), default),
        ``"uniform"`` or ``"concentrated"``.
    """

    gpu_flops: float = H100_FLOPS
    gpu: GpuEfficiency = field(default_factory=GpuEfficiency)
    cubes: int = 5
    cube: Hbm4Cube = field(default_factory=Hbm4Cube)
    tiers: NovaTiers = NOVA_TIERS
    sync_s: float = 2e-6
    gpus: int = 1
    allreduce_s: float = 5e-6
    routing: str = "skewed"

    def gpu_time_s(self, flops: float, nbytes: float, op_class: str = "gemm") -> float:
        """GPU roofline time of an operator spread over the GPUs, s: compute or streaming from the cubes, each at
        the operator class's sustained share (``op_class``: a :class:`GpuEfficiency` field)."""
        eff = getattr(self.gpu, op_class)
        return max(flops / (self.gpus * self.gpu_flops * eff),
                   nbytes / (self.gpus * self.cubes * self.cube.external_Bps * eff))

    @property
    def all_cubes(self) -> int:
        """Cubes of the whole system."""
        return self.gpus * self.cubes

    def capacity_bytes(self, design: NovaDesign) -> float:
        """Memory of every cube, bytes."""
        return self.all_cubes * self.cube.capacity_GB * 1e9 * design.density


SYSTEM = NovaSystem()


def design_tiers(design: NovaDesign, system: NovaSystem = SYSTEM) -> NovaTiers:
    """The two tiers of a two-tier design: NOVA's own, or the in-die PIM in place of Tier-1 (Fig. 14's in-die +
    base-die; its in-die tier is halved in cross-tier mode like NOVA's Tier-1, both lending a pseudo-channel's
    time to Tier-2's transfers).

    Raises
    ------
    ValueError
        A design without two tiers.
    """
    if design.nmp == "two-tier":
        return system.tiers
    if design.nmp == "in-die+base-die":
        return replace(system.tiers, tier1_peak_flops=design.in_die_flops, tier1_bandwidth_Bps=design.in_die_Bps)
    msg = f"design {design.name!r} has no two tiers"
    raise ValueError(msg)


def nmp_time_s(design: NovaDesign, flops: float, intensity: float, system: NovaSystem = SYSTEM,
               op: str = "gqa") -> float:
    """Return the time of an offloaded operator spread over every cube's NMP, s.

    Parameters
    ----------
    design : NovaDesign
        Its ``nmp`` kind picks the roofline: ``"in-die"`` ``min(C, I B)`` with the design's in-die peak and
        bandwidth (times its ``ssm_share`` for the SSM state update), ``"base-die"`` Tier-2's ``T_2(I)``,
        ``"peri-die"`` Tier-1's ``T_1(I)``, two-tier kinds the best of the three modes on
        :func:`design_tiers` (an SSM of ``"in-die+base-die"`` runs in-die alone, as in NOVA Fig. 14).
    flops : float
        Operator work over the whole system, FLOP (each cube runs ``flops / all_cubes``).
    intensity : float
        Operator intensity, FLOP per byte (Op/B), > 0 where ``flops > 0``.
    system : NovaSystem
    op : str
        The operator class (``OPS``).

    Returns
    -------
    float
        Seconds; 0 for no work.

    Raises
    ------
    ValueError
        A design without near-memory processing.
    SpecError
        A negative or non-finite intensity.

    References
    ----------
    NOVA Sec. VI-E (``T_k(I) = min(C_k, I B_k)``), Sec. V-B (three modes), Sec. VI-A (in-die / base-die NMPs),
    Sec. VI-E "Ablation Study" (Fig. 14 variants).
    """
    per_cube = flops / system.all_cubes
    if per_cube <= 0:
        return 0.0
    in_die_ssm = op == "ssm" and design.nmp in ("in-die", "in-die+base-die")
    if design.nmp == "in-die" or in_die_ssm:
        share = design.ssm_share if op == "ssm" else 1.0
        return per_cube / float(tier_throughput_flops(intensity, share * design.in_die_flops,
                                                      share * design.in_die_Bps))
    if design.nmp == "base-die":
        return per_cube / float(tier2_throughput_flops(intensity, system.tiers))
    if design.nmp == "peri-die":
        t = system.tiers
        return per_cube / float(tier_throughput_flops(intensity, t.tier1_peak_flops, t.tier1_bandwidth_Bps))
    if design.two_tier:
        return float(best_mode(per_cube, intensity, design_tiers(design, system))[1])
    msg = f"design {design.name!r} has no near-memory processing"
    raise ValueError(msg)


@dataclass(frozen=True)
class ExpertSplitCase:
    """One MoE layer's expert-to-tier split on one cube, as a decode step of a two-tier design needs it.

    Attributes
    ----------
    tokens : tuple[int, ...]
        Tokens routed to each expert in the step (:func:`routed_tokens`).
    expert_bytes : float
        Bytes of each expert's share on one cube (every cube holds a share of every expert, so every cube
        splits the same expert set): the expert's weights over the system's cubes.
    tiers : NovaTiers
        The cube's two tiers.
    method : str
        The design's expert-split policy (:attr:`NovaDesign.expert_split`).
    """

    tokens: tuple[int, ...]
    expert_bytes: float
    tiers: NovaTiers
    method: str


ExpertSplits = Mapping[ExpertSplitCase, float]
"""Makespan of each expert split, s, solved by the study (an evaluator never runs a solver)."""


def _moe_case(w_moe: tuple[int, int, int], design: NovaDesign, batch: int, system: NovaSystem) -> ExpertSplitCase:
    e, k, per_expert = w_moe
    return ExpertSplitCase(routed_tokens(batch, e, k, system.routing), per_expert * BYTES / system.all_cubes,
                           design_tiers(design, system), design.expert_split)


def expert_split_cases(model: NovaModel, design: NovaDesign, batch: int,
                       system: NovaSystem = SYSTEM) -> list[ExpertSplitCase]:
    """The expert splits a decode step of ``design`` at ``batch`` needs, each once (empty unless the design
    offloads MoE to two tiers)."""
    if not design.two_tier or "moe" not in design.offload:
        return []
    cases: list[ExpertSplitCase] = []
    for w in model.layers:
        if w.moe:
            case = _moe_case(w.moe, design, batch, system)
            if case not in cases:
                cases.append(case)
    return cases


def moe_mode_times_s(case: ExpertSplitCase, splits: ExpertSplits | None) -> dict[str, float]:
    """An MoE layer's time on one cube in each of NOVA's modes, s: ``tier1`` (every expert on the full-rate
    Tier-1), ``tier2`` (every expert on Tier-2) and ``split`` (the given makespan of the case's split policy).

    Raises
    ------
    ValueError
        ``splits`` lacks the case: the caller must solve it first (``chipdse.studies.nova.solve_expert_splits``).

    References
    ----------
    NOVA Sec. V-B (three modes), Sec. VI-E (split policies; ``I_e = n_e``).
    """
    if splits is None or case not in splits:
        msg = (f"the {case.method} expert split of {len(case.tokens)} experts ({sum(case.tokens)} routed tokens) "
               "was not given; solve the design's expert splits (expert_split_cases) and pass them in")
        raise ValueError(msg)
    n = np.asarray(case.tokens, dtype=float)
    flops = 2.0 * case.expert_bytes / BYTES * n
    tier1, tier2 = single_tier_expert_times_s(flops, moe_expert_intensity(n, BYTES), case.tiers)
    return {"tier1": tier1, "tier2": tier2, "split": float(splits[case])}


def _expert_split_s(case: ExpertSplitCase, splits: ExpertSplits | None) -> float:
    """The MoE layer's time in its fastest mode (:func:`moe_mode_times_s`), s."""
    return min(moe_mode_times_s(case, splits).values())


ROUTINGS = ("skewed", "uniform", "concentrated")
"""Expert routings of the system model (:func:`routed_tokens`)."""
HOT_SHARE = 0.1
"""Share of experts that are hot (NOVA Sec. III-A: "the top 10% most-selected experts")."""
HOT_RATIO = 5.0
"""Tokens of a hot expert over a cold one (NOVA Sec. III-A, Fig. 4(b): "approximately 5x")."""
CONCENTRATED_SHARE, CONCENTRATED_MASS = 0.05, 0.9
"""Concentrated routing: 90% of the routed tokens on 5% of the experts (at least top-k of them), as
``solvers.expert_split.routing_counts``'s ``"concentrated"`` kind (NOVA Fig. 16 gives no parameters)."""


@functools.lru_cache(maxsize=4096)
def routed_tokens(batch: int, experts: int, top_k: int, routing: str = "uniform") -> tuple[int, ...]:
    """Tokens per expert of one decode step, hottest first.

    Parameters
    ----------
    batch : int
        Tokens in the step (the decode batch), ``>= 0``.
    experts, top_k : int
        Experts of the layer and experts per token, ``1 <= top_k <= experts``.
    routing : str
        ``"uniform"``: ``batch * top_k`` tokens dealt round-robin (SNAKE Sec. 6.1.1, Duplex); ``"skewed"``: the
        hottest ``ceil(10%)`` of experts are picked :data:`HOT_RATIO` times as often as each other expert (NOVA
        Fig. 4(b)); ``"concentrated"``: :data:`CONCENTRATED_MASS` of the picks on ``max(top_k, ceil(5%))`` experts.

    Returns
    -------
    tuple of int
        ``n_e``, summing to ``batch * top_k``, none above ``batch`` (a token picks distinct experts). For the
        skewed and concentrated routings each group of equally popular experts has its expected number of active
        experts, ``round(group x (1 - exp(-lambda)))`` for a mean of ``lambda`` picks per expert (Poisson), which
        share the group's picks by largest remainder: at batch 32 and top-6 of 128 (Nemotron3-Nano) about 90
        experts are active, at batch 64 about 115, as a real router's distinct experts grow with the batch.

    Raises
    ------
    SpecError
        An unknown routing or bad sizes.
    """
    if routing not in ROUTINGS:
        raise SpecError("nova", "routing", f"one of {ROUTINGS}, got {routing!r}")
    if batch < 0 or not 1 <= top_k <= experts:
        raise SpecError("nova", "moe", f"batch >= 0 and 1 <= top_k <= experts, got {batch}, {top_k}, {experts}")
    total = batch * top_k
    if routing == "uniform":
        base, extra = divmod(total, experts)
        return tuple(base + (1 if e < extra else 0) for e in range(experts))
    if routing == "skewed":
        hot = math.ceil(HOT_SHARE * experts)
        groups = [(hot, HOT_RATIO), (experts - hot, 1.0)]
    else:
        hot = max(top_k, math.ceil(CONCENTRATED_SHARE * experts))
        groups = [(hot, CONCENTRATED_MASS / hot), (experts - hot, (1 - CONCENTRATED_MASS) / max(experts - hot, 1))]
    weight = sum(n * w for n, w in groups)
    picks = _largest_remainder(np.array([total * n * w / weight for n, w in groups]), [n * batch for n, _ in groups])
    counts: list[int] = []
    for (n, _), p in zip(groups, picks, strict=True):
        lam = p / n if n else 0.0
        active = min(n, max(math.ceil(p / batch), round(n * (1 - math.exp(-lam))))) if p else 0
        share = _largest_remainder(np.full(active, p / active), [batch] * active) if active else ()
        counts += [*share, *([0] * (n - active))]
    return tuple(counts)


def _largest_remainder(shares: np.ndarray, caps: list[int]) -> tuple[int, ...]:
    """Integers summing to ``round(sum(shares))``, each at most its cap, rounding ``shares`` by largest remainder
    (ties to the first)."""
    target = int(round(float(shares.sum())))
    counts = np.minimum(np.floor(shares + 1e-9), caps).astype(int)
    order = np.argsort(-(shares - counts), kind="stable")
    i = 0
    while counts.sum() < target and i < 10 * len(counts):
        e = order[i % len(counts)]
        if counts[e] < caps[e]:
            counts[e] += 1
        i += 1
    return tuple(int(c) for c in counts)


def decode_step_s(model: NovaModel, design: NovaDesign, batch: int, context: float,
                  system: NovaSystem = SYSTEM, expert_splits: ExpertSplits | None = None) -> dict[str, float]:
    """Time of one decode step of ``batch`` requests at mean context ``context`` tokens.

    ``expert_splits`` holds the makespan of every case :func:`expert_split_cases` lists for the design (needed
    only by a two-tier design running an MoE model); a missing one raises ValueError.

    Returns
    -------
    dict
        ``step_s`` and its parts: ``gpu_s`` (GPU operators and fallbacks), ``nmp_s`` (offloaded operators),
        ``sync_s``; plus ``gqa_s``, ``ssm_s``, ``moe_s`` (wherever they ran, each with its synchronizations).
    """
    _check_run(batch, context)
    parts = dict.fromkeys(("gpu_s", "nmp_s", "sync_s", "gqa_s", "ssm_s", "moe_s"), 0.0)
    gpu_bytes = float(model.gpu_fixed_params * BYTES)
    parts["gpu_s"] += system.gpu_time_s(2.0 * model.gpu_fixed_params * batch, gpu_bytes)
    moe_s: dict[tuple[int, int, int], float] = {}  # MoE layer shape -> its NMP time (layers of a model repeat)
    op_s: dict[tuple[str, float, float], float] = {}  # (operator, FLOPs, Op/B) -> its NMP time
    for w in model.layers:
        parts["gpu_s"] += system.gpu_time_s(2.0 * w.gpu_params * batch, w.gpu_params * BYTES)
        syncs = 0
        times: dict[str, tuple[float, float, float]] = {}  # operator -> (FLOPs, bytes, Op/B)
        if w.attention:
            nh, kv, hd = w.attention
            flops = attention_flops_per_context_token(nh, hd) * context * batch
            nbytes = kv_cache_bytes_per_token(kv, hd, BYTES) * context * batch
            times["gqa"] = flops, nbytes, float(gqa_decode_intensity(nh / kv, BYTES))
        if w.ssm:
            d_in, n = w.ssm
            times["ssm"] = (SSM_FLOPS_PER_STATE_ELEMENT * d_in * n * batch,
                            SSM_STATE_ACCESSES * d_in * n * BYTES * batch,
                            ssm_decode_intensity(state_bytes_per_element=BYTES))
        on_nmp = {op: v for op, v in times.items() if op in design.offload}
        for op, (flops, nbytes, _) in times.items():
            if op not in on_nmp:
                t = system.gpu_time_s(flops, nbytes, OP_CLASS[op])
                parts["gpu_s"] += t
                parts[f"{op}_s"] += t
        if on_nmp:
            op_syncs = {op: 1 + (op == "gqa" and design.gqa_softmax_on_gpu) for op in on_nmp}
            layer_syncs = max(op_syncs.values()) if w.parallel else sum(op_syncs.values())
            syncs += layer_syncs
            each = {}
            for op, (f, _, i) in on_nmp.items():
                if (op, f, i) not in op_s:
                    op_s[op, f, i] = nmp_time_s(design, f, i, system, op)
                each[op] = op_s[op, f, i]
            t = sum(each.values())
            if w.parallel and design.two_tier and len(on_nmp) == 2:
                t = min(t, _parallel_tiers_s(on_nmp, design, system))
            parts["nmp_s"] += t
            for op, v in each.items():  # each operator's time with its synchronizations (shared when parallel)
                share = v / max(sum(each.values()), 1e-30)
                parts[f"{op}_s"] += t * share + system.sync_s * (layer_syncs * share if w.parallel else op_syncs[op])
        if w.moe:
            e, k, per_expert = w.moe
            if "moe" in design.offload:
                syncs += 1
                if w.moe not in moe_s:
                    if design.two_tier:
                        moe_s[w.moe] = _expert_split_s(_moe_case(w.moe, design, batch, system), expert_splits)
                    else:  # experts back to back on the one tier; experts with equal token counts take equal time
                        counts = Counter(routed_tokens(batch, e, k, system.routing))
                        moe_s[w.moe] = sum(c * nmp_time_s(design, 2.0 * per_expert * n,
                                                          float(moe_expert_intensity(n, BYTES)), system, "moe")
                                           for n, c in counts.items() if n)
                t = moe_s[w.moe]
                parts["nmp_s"] += t
                parts["moe_s"] += t + system.sync_s
            else:
                active = sum(1 for n in routed_tokens(batch, e, k, system.routing) if n)
                t = system.gpu_time_s(2.0 * per_expert * batch * k, active * per_expert * BYTES, "expert")
                parts["gpu_s"] += t
                parts["moe_s"] += t
        parts["sync_s"] += syncs * system.sync_s + (system.allreduce_s if system.gpus > 1 else 0.0)
    parts["step_s"] = parts["gpu_s"] + parts["nmp_s"] + parts["sync_s"]
    return parts


def _parallel_tiers_s(ops: dict[str, tuple[float, float, float]], design: NovaDesign, system: NovaSystem) -> float:
    """Return Falcon-H1's parallel GQA and SSM on a two-tier design with one operator per tier, concurrently, s.

    ``ops`` maps each of the two operators to (FLOPs over the system, bytes, Op/B); each cube runs its share,
    Tier-1 at its cross-tier rate ``T_1'(I)`` and Tier-2 at ``T_2(I)`` (NOVA Sec. VI-E), and the better of the
    two assignments is kept.
    """
    tiers = design_tiers(design, system)
    (fa, _, ia), (fb, _, ib) = (v for v in ops.values())
    fa, fb = fa / system.all_cubes, fb / system.all_cubes
    t1a = fa / float(tier1_cross_throughput_flops(ia, tiers))
    t2a = fa / float(tier2_throughput_flops(ia, tiers))
    t1b = fb / float(tier1_cross_throughput_flops(ib, tiers))
    t2b = fb / float(tier2_throughput_flops(ib, tiers))
    return min(max(t1a, t2b), max(t2a, t1b))


def _check_run(batch: int, context: float, l_out: int = 0) -> None:
    """Raise :class:`SpecError` for a batch below 1, a negative context or a negative output length."""
    if isinstance(batch, bool) or not isinstance(batch, int | np.integer) or batch < 1:
        raise SpecError("nova", "batch", f"an integer >= 1, got {batch!r}")
    if not context >= 0 or not l_out >= 0:
        raise SpecError("nova", "context", f"context and output length >= 0, got {context!r} and {l_out!r}")


def prefill_s(model: NovaModel, batch: int, prompt: int, system: NovaSystem = SYSTEM) -> float:
    """GPU prefill of ``batch`` prompts of ``prompt`` tokens: active-parameter GEMMs plus causal attention, s."""
    flops = 0.0
    for w in model.layers:
        flops += 2.0 * w.gpu_params * batch * prompt
        if w.attention:
            nh, _, hd = w.attention
            flops += causal_attention_flops(attention_flops_per_context_token(nh, hd), prompt * prompt) * batch
        if w.ssm:
            d_in, n = w.ssm
            flops += SSM_FLOPS_PER_STATE_ELEMENT * d_in * n * batch * prompt
        if w.moe:
            _, k, per_expert = w.moe
            flops += 2.0 * per_expert * k * batch * prompt
    flops += 2.0 * model.gpu_fixed_params * batch
    return system.gpu_time_s(flops, model.total_params * BYTES)


def e2e(model: NovaModel, design: NovaDesign, batch: int, l_in: int, l_out: int,
        system: NovaSystem = SYSTEM, expert_splits: ExpertSplits | None = None) -> dict[str, float]:
    """Decode step, throughput and E2E latency of one batch (``None`` fields when it does not fit in memory);
    ``expert_splits`` as in :func:`decode_step_s`.

    Returns
    -------
    dict
        ``fits``, ``step_s`` (at the mean context), ``throughput_tps`` (batch / step), ``prefill_s``,
        ``e2e_s`` (prefill + ``l_out`` steps) and the step's parts.
    """
    _check_run(batch, l_in, l_out)
    if not fits(model, design, batch, l_in + l_out, system):
        return {"fits": False, "step_s": np.nan, "throughput_tps": np.nan, "prefill_s": np.nan, "e2e_s": np.nan}
    step = decode_step_s(model, design, batch, l_in + l_out / 2.0, system, expert_splits)
    pre = prefill_s(model, batch, l_in, system)
    return {"fits": True, **step, "throughput_tps": batch / step["step_s"], "prefill_s": pre,
            "e2e_s": pre + l_out * step["step_s"]}


def serving_output_lengths(requests: int, l_out: int) -> list[int]:
    """Output lengths of a served stream: evenly spread over ``[L_out / 2, 3 L_out / 2]`` (mean ``L_out``) in a
    fixed interleaved order, so that requests finish at different steps and continuous batching refills slots."""
    if requests < 1 or l_out < 1:
        raise SpecError("nova", "serving", f"at least one request and one output token, got {requests}, {l_out}")
    spread = [max(1, round(l_out * (0.5 + j / max(requests - 1, 1)))) for j in range(requests)]
    stride = next(s for s in (7, 11, 13, 1) if math.gcd(s, requests) == 1)
    return [spread[(i * stride) % requests] for i in range(requests)]


def serve(model: NovaModel, design: NovaDesign, batch: int, l_in: int, l_out: int, requests: int,
          system: NovaSystem = SYSTEM, expert_splits: ExpertSplits | None = None,
          step_lines: dict[int, tuple[float, float]] | None = None) -> dict[str, float]:
    """Serve a stream of requests with continuous batching and return its throughput and mean E2E latency.

    Parameters
    ----------
    model, design : NovaModel, NovaDesign
    batch : int
        Slots: requests decoded at once, ``>= 1``.
    l_in, l_out : int
        Prompt tokens per request and mean output tokens (:func:`serving_output_lengths`).
    requests : int
        Requests of the stream, all waiting at time 0 (a saturated server), ``>= 1``.
    system : NovaSystem
    expert_splits : mapping, optional
        The makespan of every expert split the decode steps need at every batch from 1 to ``batch`` (a two-tier
        design running an MoE model; :func:`expert_split_cases` for each batch).
    step_lines : dict, optional
        Cache of the decode step's (intercept s, slope s per context token) by batch size for this model, design
        and system, filled as needed; pass the same dict to serve other lengths of the same system faster.

    Returns
    -------
    dict
        ``fits`` (weights plus ``batch`` requests at their longest context fit), ``serve_throughput_tps``
        (output tokens / makespan), ``serve_decode_tps`` (output tokens / time in decode steps: the system
        decoding throughput of NOVA Fig. 11(a), prefill stalls left out), ``serve_e2e_s`` (mean over requests of
        admission to last token, with its prefill) and ``serve_makespan_s``; NaN values when it does not fit.

    Raises
    ------
    SpecError
        Bad sizes; ValueError for a missing expert split.

    Notes
    -----
    An iteration-level loop (continuous batching, Orca-style; the HYDRA event kernel schedules chiplet phases,
    which this GPU + cubes system does not have): at each iteration boundary waiting requests take the free
    slots, their prompts are prefilled on the GPU as one batch (decode waits, as the GPU runs both), then one
    decode step runs for every active request at their mean context. The step time is affine in the mean
    context at a fixed batch (every roofline term is proportional to the KV bytes), so two evaluations per batch
    size give it exactly.

    References
    ----------
    NOVA Sec. VI-E "Serving Dynamics" (requests join at the next iteration boundary after their prefill on the
    xPU; slots are allocated and freed without data movement).
    """
    _check_run(batch, l_in, l_out)
    outs = serving_output_lengths(requests, l_out)
    if not fits(model, design, batch, l_in + max(outs), system):
        return {"fits": False, "serve_throughput_tps": np.nan, "serve_decode_tps": np.nan, "serve_e2e_s": np.nan,
                "serve_makespan_s": np.nan}
    lines = {} if step_lines is None else step_lines

    def step_s(b: int, ctx: float) -> float:
        if b not in lines:
            at0 = decode_step_s(model, design, b, 0.0, system, expert_splits)["step_s"]
            at1 = decode_step_s(model, design, b, 1.0, system, expert_splits)["step_s"]
            lines[b] = at0, at1 - at0
        a, slope = lines[b]
        return a + slope * ctx

    t, decode_t, waiting, active, e2e_sum = 0.0, 0.0, list(range(requests)), {}, 0.0
    admitted: dict[int, float] = {}
    while waiting or active:
        free = batch - len(active)
        if free and waiting:
            joining, waiting = waiting[:free], waiting[free:]
            for r in joining:
                admitted[r] = t
            t += prefill_s(model, len(joining), l_in, system)
            active.update(dict.fromkeys(joining, 0))
        ctx = l_in + sum(active.values()) / len(active)
        dt = step_s(len(active), ctx)
        t += dt
        decode_t += dt
        for r in list(active):
            active[r] += 1
            if active[r] >= outs[r]:
                e2e_sum += t - admitted[r]
                del active[r]
    return {"fits": True, "serve_throughput_tps": sum(outs) / t, "serve_decode_tps": sum(outs) / decode_t,
            "serve_e2e_s": e2e_sum / requests, "serve_makespan_s": t}


def memory_bytes(model: NovaModel, batch: int, context: float) -> dict[str, float]:
    """Bytes by kind for ``batch`` requests of ``context`` tokens: KV cache, SSM state, expert weights, the rest."""
    experts = model.params["routed_experts"] * BYTES
    return {"kv_cache": batch * context * model.kv_bytes_per_token(),
            "ssm_state": batch * model.state_bytes_per_request(),
            "expert_weights": float(experts), "other_weights": float(model.total_params * BYTES - experts)}


def fits(model: NovaModel, design: NovaDesign, batch: int, context: float, system: NovaSystem = SYSTEM) -> bool:
    """Whether weights, KV cache and SSM state fit in the design's cubes."""
    return sum(memory_bytes(model, batch, context).values()) <= system.capacity_bytes(design)


def longest_context(model: NovaModel, design: NovaDesign, batch: int, system: NovaSystem = SYSTEM) -> int | None:
    """Largest context (tokens per request) that fits at ``batch``; 0 when the weights alone do not fit, None
    when there is no limit (a model without KV cache, e.g. pure SSM, whose weights and states fit).

    Raises
    ------
    SpecError
        A batch below 1.
    """
    _check_run(batch, 0.0)
    m = memory_bytes(model, batch, 0.0)
    free = system.capacity_bytes(design) - m["ssm_state"] - m["expert_weights"] - m["other_weights"]
    if free < 0:
        return 0
    kv = model.kv_bytes_per_token()
    return None if kv == 0 else int(free // (batch * kv))


def scenario_system(spec: NovaScenario) -> NovaSystem:
    """The :class:`NovaSystem` with a ``kind: nova`` scenario's assumptions (GPU efficiencies, sync and all-reduce
    times, us -> s, expert routing), for the NOVA study and the registry's expert-split builder."""
    s = spec.system
    gpu = GpuEfficiency(s.gpu_efficiency, s.gpu_attention_efficiency, s.gpu_expert_efficiency, s.gpu_ssm_efficiency)
    return replace(SYSTEM, gpu=gpu, sync_s=s.sync_us * 1e-6, allreduce_s=s.allreduce_us * 1e-6, routing=s.routing)
