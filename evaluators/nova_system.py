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

An offloaded operator runs near memory only when that, with its synchronization, is faster than the GPU (at the
last requests of a served stream an in-die GQA saves less than its hand-off). Each step also carries its energy
(:mod:`chipdse.evaluators.nova_energy`: per data path, energy per bit and per FLOP, plus static power over the step);
a two-tier design picks each operator's mode for the least time (``priority="latency"``, the paper's evaluation) or
the least energy (``"energy"``: NOVA Sec. VI-E "NOVA can select its Tier-2-only mode when energy is prioritized").

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
from chipdse.evaluators.energy import load_energy_table
from chipdse.evaluators.gpu import H100_FLOPS
from chipdse.evaluators.nmp import (
    NOVA_DENSITY,
    NOVA_TIERS,
    SSM_FLOPS_PER_STATE_ELEMENT,
    SSM_STATE_ACCESSES,
    NovaTiers,
    cross_tier_fraction,
    gqa_decode_intensity,
    mode_times_s,
    moe_expert_intensity,
    single_tier_expert_times_s,
    ssm_decode_intensity,
    tier1_cross_throughput_flops,
    tier2_throughput_flops,
    tier_throughput_flops,
)
from chipdse.evaluators.nova_energy import PARTS, NovaEnergy, nova_energy, nova_energy_from
from chipdse.evaluators.nova_model import BYTES, LayerWork, NovaModel

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


PRIORITIES = ("latency", "energy")
"""Mode-choice priorities of a two-tier design (:attr:`NovaDesign.priority`)."""


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
    serving_split : str or None
        The MoE split policy while serving with continuous batching (:func:`serve`); None: ``expert_split``.
        NOVA serves with ``"nova-kstar"``: "the tier-assignment policy dynamically rebalances the workload at
        every decode step using the current router output and effective batch size" (NOVA Sec. VI-E "Serving
        Dynamics"), while its static-batch runs keep the 1:9 split of Figs. 11-15.
    priority : str
        How a two-tier design picks each operator's mode (Tier-1, Tier-2, cross-tier; for MoE Tier-1, Tier-2 or
        the split): ``"latency"`` (the fastest, NOVA's evaluation) or ``"energy"`` (the least energy, static
        power over the operator's time included: "NOVA can select its Tier-2-only mode when energy is
        prioritized", NOVA Sec. VI-E).
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
    serving_split: str | None = None
    priority: str = "latency"

    def __post_init__(self) -> None:
        """Reject an unknown near-memory kind or priority, or an SSM share outside (0, 1]."""
        if self.nmp not in NMP_KINDS:
            raise SpecError("NovaDesign", "nmp", f"one of {NMP_KINDS}, got {self.nmp!r}")
        if self.priority not in PRIORITIES:
            raise SpecError("NovaDesign", "priority", f"one of {PRIORITIES}, got {self.priority!r}")
        if not 0 < self.ssm_share <= 1:
            raise SpecError("NovaDesign", "ssm_share", f"a share in (0, 1], got {self.ssm_share!r}")

    def serving(self) -> NovaDesign:
        """The design as :func:`serve` runs it: its expert split set to :attr:`serving_split`."""
        if self.serving_split is None or self.serving_split == self.expert_split:
            return self
        return replace(self, expert_split=self.serving_split)

    @property
    def two_tier(self) -> bool:
        """Whether the design has two tiers with NOVA's three modes."""
        return self.nmp in ("two-tier", "in-die+base-die")

    @property
    def poc(self) -> bool:
        """Whether the cubes are NOVA's 4F^2 + peri-over-cell cubes (their cells activate at lower energy)."""
        return self.nmp in ("two-tier", "peri-die")


GPU = NovaDesign("GPU")
ATTACC = NovaDesign("AttAcc", frozenset({"gqa"}), "in-die")
PIMBA = NovaDesign("PIMBA", frozenset({"gqa", "ssm"}), "in-die", ssm_share=PIMBA_SSM_SHARE, gqa_softmax_on_gpu=True)
DUPLEX = NovaDesign("Duplex", frozenset({"gqa", "moe"}), "base-die")
NOVA = NovaDesign("NOVA", frozenset(OPS), "two-tier", density=NOVA_DENSITY, serving_split="nova-kstar")
NOVA_STATIC_SERVED = NovaDesign("NOVA 1:9", frozenset(OPS), "two-tier", density=NOVA_DENSITY)
"""NOVA served with the static 1:9 split as well (the paper's Figs. 11-15 policy kept at every decode step)."""
NOVA_KSTAR = NovaDesign("NOVA k*", frozenset(OPS), "two-tier", density=NOVA_DENSITY, expert_split="nova-kstar")
NOVA_EXACT = NovaDesign("NOVA exact", frozenset(OPS), "two-tier", density=NOVA_DENSITY, expert_split="milp-highs")
NOVA_ENERGY = NovaDesign("NOVA energy-first", frozenset(OPS), "two-tier", density=NOVA_DENSITY, priority="energy",
                         serving_split="nova-kstar")
"""NOVA with each operator's mode chosen for the least energy instead of the least time (NOVA Sec. VI-E)."""
DESIGNS = (GPU, ATTACC, PIMBA, DUPLEX, NOVA, NOVA_KSTAR, NOVA_EXACT, NOVA_ENERGY, NOVA_STATIC_SERVED)

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
        few thread blocks per request (0.35: calibrated to NOVA Sec. VI-C's ordering "NOVA attains even higher
        throughput as the sequence length increases", which holds on every case of the bundled scenario at 0.3 and
        0.35 and fails on Nemotron3-Nano at batch 64 from 0.4, where NOVA's whole-step gain over the GPU exceeds its
        GQA gain, so more KV lowers it; ``benchmarks/bench_nova_claims.py`` sweeps 0.3-0.7).
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
    attention: float = 0.35
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
    energy : NovaEnergy or None
        Energy per action by data path and static power (:mod:`chipdse.evaluators.nova_energy`); None reads
        ``instances/energy/common.yaml`` and ``nova.yaml`` (:attr:`energy_model`).
    cube_nmp_budget_W : float
        Near-memory dynamic power a cube may draw, W (default 62 W: SNAKE Sec. 6.2's allowable logic-die power of
        a 3D-stacked NMP cube, HotSpot at 85 C; NOVA states no limit). :func:`e2e` marks runs above it.
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
    energy: NovaEnergy | None = None
    cube_nmp_budget_W: float = 62.0

    @property
    def energy_model(self) -> NovaEnergy:
        """The system's energy constants: ``energy``, or the bundled ones (:func:`nova_energy`)."""
        return self.energy if self.energy is not None else nova_energy()

    def static_W(self, design: NovaDesign) -> float:
        """Static power of the whole system, W: every GPU's idle power and every cube's background power (NOVA's
        cube when the design has one)."""
        en = self.energy_model
        cube = en.nova_cube_static_W if design.poc else en.cube_static_W
        return self.gpus * en.gpu_static_W + self.all_cubes * cube

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


Energy = dict[str, float]
"""Energy by part, J (parts of :data:`chipdse.evaluators.nova_energy.PARTS`)."""


def _add(total: Energy, part: Energy, k: float = 1.0) -> Energy:
    """Add ``k x part`` into ``total`` (in place) and return it."""
    for name, v in part.items():
        total[name] = total.get(name, 0.0) + k * v
    return total


def path_energy_J(system: NovaSystem, design: NovaDesign, path: str, flops: float, nbytes: float,
                  vector: bool = False, sweeps_bytes: float | None = None) -> Energy:
    """Dynamic energy of an operator run on one data path, J by part.

    Parameters
    ----------
    system, design : NovaSystem, NovaDesign
        The design picks NOVA's cells (:attr:`NovaDesign.poc`) or conventional ones.
    path : str
        ``"gpu"``, ``"tier1"``, ``"tier2"`` or ``"in_die"`` (:data:`chipdse.evaluators.nova_energy.PATHS`).
    flops, nbytes : float
        The operator's FLOPs and the bytes it reads or writes, over the whole system.
    vector : bool
        Element-wise FLOPs (the SSM state update) at the vector-unit energy.
    sweeps_bytes : float, optional
        Bytes whose rows are activated, when not ``nbytes``: a Tier-1 or in-die MoE expert processes its tokens
        one at a time (NOVA Sec. V-C), activating its rows once per routed token (``sum_e n_e x bytes_e``).

    Returns
    -------
    dict
        ``gpu_dram`` and ``gpu_compute`` on the GPU path; ``nmp_activation``, ``nmp_access`` and ``nmp_compute``
        near memory.
    """
    p = system.energy_model.path(path, design.poc)
    act, access, compute = p.op_J(flops, nbytes, vector)
    if sweeps_bytes is not None and nbytes > 0:
        act *= sweeps_bytes / nbytes
    if path == "gpu":
        return {"gpu_dram": act + access, "gpu_compute": compute}
    return {"nmp_activation": act, "nmp_access": access, "nmp_compute": compute}


def _tier1_path(design: NovaDesign) -> str:
    """The data path of a two-tier design's first tier: NOVA's peri-die, or the in-die PIM of Fig. 14's
    in-die + base-die."""
    return "in_die" if design.nmp in ("in-die", "in-die+base-die") else "tier1"


def nmp_modes(design: NovaDesign, flops: float, intensity: float, system: NovaSystem = SYSTEM,
              op: str = "gqa") -> dict[str, tuple[float, Energy]]:
    """Return every mode an offloaded operator can run in on the design's near-memory processing, with its time
    (s) and dynamic energy (J by part).

    Parameters
    ----------
    design : NovaDesign
        Its ``nmp`` kind sets the modes: ``"in-die"`` one mode ``min(C, I B)`` with the design's in-die peak and
        bandwidth (times its ``ssm_share`` for the SSM state update), ``"base-die"`` Tier-2's ``T_2(I)``,
        ``"peri-die"`` Tier-1's ``T_1(I)``, two-tier kinds ``tier1``, ``tier2`` and ``cross`` on
        :func:`design_tiers` (an SSM of ``"in-die+base-die"`` runs in-die alone, as in NOVA Fig. 14).
    flops : float
        Operator work over the whole system, FLOP (each cube runs ``flops / all_cubes``, all cubes at once).
    intensity : float
        Operator intensity, FLOP per byte (Op/B), > 0 where ``flops > 0``; the operator moves ``flops /
        intensity`` bytes.
    system : NovaSystem
    op : str
        The operator class (``OPS``); ``"ssm"`` FLOPs are element-wise.

    Returns
    -------
    dict
        Mode -> (seconds, energy by part); in cross-tier mode a share ``alpha*`` of the work and bytes runs on
        the first tier (:func:`evaluators.nmp.cross_tier_fraction`). No work: one mode of 0 s and no energy.

    Raises
    ------
    ValueError
        A design without near-memory processing.
    SpecError
        A negative or non-finite intensity.

    References
    ----------
    NOVA Sec. VI-E (``T_k(I) = min(C_k, I B_k)``, ``alpha*``), Sec. V-B (three modes), Sec. VI-A (in-die / base-die
    NMPs), Sec. VI-E "Ablation Study" (Fig. 14 variants).
    """
    per_cube = flops / system.all_cubes
    if per_cube <= 0:
        return {"none": (0.0, {})}
    nbytes = flops / intensity
    vec = op == "ssm"

    def energy(path: str, share: float = 1.0) -> Energy:
        return path_energy_J(system, design, path, share * flops, share * nbytes, vec)

    in_die_ssm = op == "ssm" and design.nmp in ("in-die", "in-die+base-die")
    if design.nmp == "in-die" or in_die_ssm:
        share = design.ssm_share if op == "ssm" else 1.0
        t = per_cube / float(tier_throughput_flops(intensity, share * design.in_die_flops, share * design.in_die_Bps))
        return {"in-die": (t, energy("in_die"))}
    if design.nmp == "base-die":
        return {"tier2": (per_cube / float(tier2_throughput_flops(intensity, system.tiers)), energy("tier2"))}
    if design.nmp == "peri-die":
        t = system.tiers
        rate = float(tier_throughput_flops(intensity, t.tier1_peak_flops, t.tier1_bandwidth_Bps))
        return {"tier1": (per_cube / rate, energy("tier1"))}
    if design.two_tier:
        tiers = design_tiers(design, system)
        t1, t2, tc = (float(x) for x in mode_times_s(per_cube, intensity, tiers))
        alpha = float(cross_tier_fraction(intensity, tiers))
        first = _tier1_path(design)
        cross = _add(energy(first, alpha), energy("tier2", 1.0 - alpha))
        return {"tier1": (t1, energy(first)), "tier2": (t2, energy("tier2")), "cross": (tc, cross)}
    msg = f"design {design.name!r} has no near-memory processing"
    raise ValueError(msg)


def choose(design: NovaDesign, modes: Mapping[str, tuple[float, Energy]], static_W: float) -> tuple[str, float, Energy]:
    """Pick a mode by the design's :attr:`NovaDesign.priority`: the least time (ties to the first listed), or the
    least energy with the system's static power ``static_W`` (W) over the mode's time (ties to the faster).

    Returns
    -------
    (str, float, dict)
        The mode, its seconds and its dynamic energy by part.
    """
    def energy_J(item: tuple[str, tuple[float, Energy]]) -> float:
        t, e = item[1]
        return sum(e.values()) + static_W * t

    items = list(modes.items())
    if design.priority == "energy":
        name, (t, e) = min(items, key=lambda it: (energy_J(it), it[1][0]))
    else:
        name, (t, e) = min(items, key=lambda it: it[1][0])
    return name, t, e


def nmp_time_s(design: NovaDesign, flops: float, intensity: float, system: NovaSystem = SYSTEM,
               op: str = "gqa") -> float:
    """Return the time of an offloaded operator spread over every cube's NMP in the mode the design's priority
    picks (:func:`nmp_modes`, :func:`choose`), s; 0 for no work. Raises as :func:`nmp_modes`."""
    return choose(design, nmp_modes(design, flops, intensity, system, op), system.static_W(design))[1]


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
    param_bytes : float
        Bytes per expert weight (BF16 2; the card's quantized width when it quantizes ``moe`` blocks).
    """

    tokens: tuple[int, ...]
    expert_bytes: float
    tiers: NovaTiers
    method: str
    param_bytes: float = BYTES


@dataclass(frozen=True)
class SplitResult:
    """A solved expert split: its makespan on one cube (s) and the experts it puts on Tier-2 (indices into
    :attr:`ExpertSplitCase.tokens`), which the energy of the split mode needs."""

    makespan_s: float
    tier2: frozenset[int]


ExpertSplits = Mapping[ExpertSplitCase, "float | SplitResult"]
"""Each expert split solved by the study (an evaluator never runs a solver): a :class:`SplitResult`, or just its
makespan in seconds, in which case the split's energy takes the hottest ``ceil(10%)`` experts on Tier-2 (the static
1:9 rule)."""


def _moe_case(w_moe: tuple[int, int, int], design: NovaDesign, batch: int, system: NovaSystem,
              param_bytes: float = BYTES) -> ExpertSplitCase:
    e, k, per_expert = w_moe
    return ExpertSplitCase(routed_tokens(batch, e, k, system.routing), per_expert * param_bytes / system.all_cubes,
                           design_tiers(design, system), design.expert_split, param_bytes)


def expert_split_cases(model: NovaModel, design: NovaDesign, batch: int,
                       system: NovaSystem = SYSTEM) -> list[ExpertSplitCase]:
    """The expert splits a decode step of ``design`` at ``batch`` needs, each once (empty unless the design
    offloads MoE to two tiers)."""
    if not design.two_tier or "moe" not in design.offload:
        return []
    cases: list[ExpertSplitCase] = []
    for w in model.layers:
        if w.moe:
            case = _moe_case(w.moe, design, batch, system, model.expert_param_bytes)
            if case not in cases:
                cases.append(case)
    return cases


def _split_result(case: ExpertSplitCase, splits: ExpertSplits | None) -> SplitResult:
    """The case's solved split, as a :class:`SplitResult` (a bare makespan gets the static 1:9 expert set)."""
    if splits is None or case not in splits:
        msg = (f"the {case.method} expert split of {len(case.tokens)} experts ({sum(case.tokens)} routed tokens) "
               "was not given; solve the design's expert splits (expert_split_cases) and pass them in")
        raise ValueError(msg)
    v = splits[case]
    if isinstance(v, SplitResult):
        return v
    return SplitResult(float(v), frozenset(range(math.ceil(HOT_SHARE * len(case.tokens)))))


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
    split = _split_result(case, splits)
    n = np.asarray(case.tokens, dtype=float)
    flops = 2.0 * case.expert_bytes / case.param_bytes * n
    tier1, tier2 = single_tier_expert_times_s(flops, moe_expert_intensity(n, case.param_bytes), case.tiers)
    return {"tier1": tier1, "tier2": tier2, "split": split.makespan_s}


def moe_modes(case: ExpertSplitCase, splits: ExpertSplits | None, design: NovaDesign,
              system: NovaSystem = SYSTEM) -> dict[str, tuple[float, Energy]]:
    """An MoE layer's modes on a two-tier design: time on one cube (s, :func:`moe_mode_times_s`) and dynamic
    energy over the whole system (J by part).

    Every cube holds a share of every expert, so the layer reads ``cubes x expert_bytes`` per active expert; an
    expert on the first tier (NOVA's peri-die, or an in-die PIM) processes its ``n_e`` tokens one at a time and
    activates its rows once per token (NOVA Sec. V-C "inputs are processed one at a time"; Sec. VI-C: "the
    additional activation energy incurred when processing cold experts via all-bank activation in Tier-1"); one on
    Tier-2 loads its weights once and reuses them across its tokens (Sec. V-C).

    Raises
    ------
    ValueError
        ``splits`` lacks the case.
    """
    times = moe_mode_times_s(case, splits)
    tier2_set = _split_result(case, splits).tier2
    first = _tier1_path(design)
    params, b = case.expert_bytes * system.all_cubes / case.param_bytes, case.param_bytes

    def energy(on_tier2: frozenset[int]) -> Energy:  # linear in FLOPs, bytes and swept bytes: sum per tier
        n2 = [n for e, n in enumerate(case.tokens) if n and e in on_tier2]
        n1 = [n for e, n in enumerate(case.tokens) if n and e not in on_tier2]
        out = path_energy_J(system, design, "tier2", 2.0 * params * sum(n2), params * b * len(n2))
        return _add(out, path_energy_J(system, design, first, 2.0 * params * sum(n1), params * b * len(n1),
                                       sweeps_bytes=params * b * sum(n1)))

    everyone = frozenset(range(len(case.tokens)))
    return {"tier1": (times["tier1"], energy(frozenset())), "tier2": (times["tier2"], energy(everyone)),
            "split": (times["split"], energy(tier2_set))}


def single_tier_moe(design: NovaDesign, w_moe: tuple[int, int, int], batch: int,
                    system: NovaSystem = SYSTEM, param_bytes: float = BYTES) -> tuple[float, Energy]:
    """An MoE layer on a one-tier design (in-die, peri-die or base-die): experts back to back on that tier, s,
    and its dynamic energy, J by part (first-tier experts activate their rows once per token, :func:`moe_modes`);
    ``param_bytes`` per expert weight (BF16 by default).
    """
    e, k, per_expert = w_moe
    counts = Counter(routed_tokens(batch, e, k, system.routing))
    t, out = 0.0, {}
    for n, c in counts.items():
        if n:
            flops = 2.0 * per_expert * n
            modes = nmp_modes(design, flops, float(moe_expert_intensity(n, param_bytes)), system, "moe")
            (mode, (dt, _)), = modes.items()
            t += c * dt
            path = {"in-die": "in_die"}.get(mode, mode)
            sweeps = n * per_expert * param_bytes if path in ("tier1", "in_die") else None
            _add(out, path_energy_J(system, design, path, flops, per_expert * param_bytes, sweeps_bytes=sweeps), c)
    return t, out


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


_LAYER_COUNTS: dict[int, tuple[tuple[LayerWork, ...], list[tuple[LayerWork, int]]]] = {}


def _layer_counts(layers: tuple[LayerWork, ...]) -> list[tuple[LayerWork, int]]:
    """Each distinct layer of a model with its count, in first-seen order (remembered per layers tuple)."""
    hit = _LAYER_COUNTS.get(id(layers))
    if hit is None or hit[0] is not layers:
        hit = _LAYER_COUNTS[id(layers)] = layers, list(Counter(layers).items())
    return hit[1]


STEP_ENERGY_COLUMNS = tuple(f"e_{p}_J" for p in PARTS)
"""The decode step's energy parts as :func:`decode_step_s` returns them (``e_<part>_J``, J)."""


def decode_step_s(model: NovaModel, design: NovaDesign, batch: int, context: float,
                  system: NovaSystem = SYSTEM, expert_splits: ExpertSplits | None = None) -> dict[str, float]:
    """Time and energy of one decode step of ``batch`` requests at mean context ``context`` tokens.

    Each offloaded operator runs in the mode the design's priority picks (:func:`choose`); it runs near memory
    when that, with its synchronizations, is faster than the GPU, and on the GPU otherwise (at the stream's last
    few requests an in-die GQA can save less than its hand-off costs). ``expert_splits`` holds every case
    :func:`expert_split_cases` lists for the design (needed only by a two-tier design running an MoE model); a
    missing one raises ValueError.

    Returns
    -------
    dict
        ``step_s`` and its parts: ``gpu_s`` (GPU operators and fallbacks), ``nmp_s`` (offloaded operators),
        ``sync_s``; plus ``gqa_s``, ``ssm_s``, ``moe_s`` (wherever they ran, each with its synchronizations).
        Energy, J: ``energy_J`` and its parts :data:`STEP_ENERGY_COLUMNS` (GPU compute and DRAM traffic; the
        near-memory units' row activations, accesses and FLOPs; static power over ``step_s``).
    """
    _check_run(batch, context)
    parts = dict.fromkeys(("gpu_s", "nmp_s", "sync_s", "gqa_s", "ssm_s", "moe_s"), 0.0)
    energy: Energy = {}
    static_W = system.static_W(design)

    def on_gpu(energy: Energy, flops: float, nbytes: float, op_class: str = "gemm") -> float:
        _add(energy, path_energy_J(system, design, "gpu", flops, nbytes))
        return system.gpu_time_s(flops, nbytes, op_class)

    parts["gpu_s"] += on_gpu(energy, 2.0 * model.gpu_fixed_params * batch, float(model.gpu_fixed_params * BYTES))
    moe_nmp: dict[tuple[int, int, int], tuple[float, Energy]] = {}  # MoE layer shape -> NMP time, energy
    op_nmp: dict[tuple[str, float, float], tuple[float, Energy]] = {}  # (operator, FLOPs, Op/B) -> the same

    def layer(w: LayerWork) -> tuple[dict[str, float], Energy]:
        """One layer's time parts and dynamic energy."""
        parts: dict[str, float] = dict.fromkeys(("gpu_s", "nmp_s", "sync_s", "gqa_s", "ssm_s", "moe_s"), 0.0)
        energy: Energy = {}
        parts["gpu_s"] += on_gpu(energy, 2.0 * w.gpu_params * batch, w.gpu_weight_bytes)
        syncs = 0
        work: dict[str, tuple[float, float, float]] = {}  # operator -> (FLOPs, bytes, Op/B)
        if w.attention:
            nh, kv, hd = w.attention
            flops = attention_flops_per_context_token(nh, hd) * context * batch
            nbytes = kv_cache_bytes_per_token(kv, hd, model.kv_cache_bytes) * context * batch
            work["gqa"] = flops, nbytes, float(gqa_decode_intensity(nh / kv, model.kv_cache_bytes))
        if w.ssm:
            d_in, n = w.ssm
            work["ssm"] = (SSM_FLOPS_PER_STATE_ELEMENT * d_in * n * batch,
                           SSM_STATE_ACCESSES * d_in * n * BYTES * batch,
                           ssm_decode_intensity(state_bytes_per_element=BYTES))
        chosen: dict[str, tuple[float, Energy]] = {}
        for op, (f, _, i) in work.items():
            if op in design.offload:
                if (op, f, i) not in op_nmp:
                    op_nmp[op, f, i] = choose(design, nmp_modes(design, f, i, system, op), static_W)[1:]
                chosen[op] = op_nmp[op, f, i]
        op_syncs = {op: 1 + (op == "gqa" and design.gqa_softmax_on_gpu) for op in chosen}
        if not w.parallel:
            for op in [op for op in chosen if system.gpu_time_s(work[op][0], work[op][1], OP_CLASS[op])
                       < chosen[op][0] + op_syncs[op] * system.sync_s]:
                del chosen[op], op_syncs[op]
        for op, (f, nbytes, _) in work.items():
            if op not in chosen:
                t = on_gpu(energy, f, nbytes, OP_CLASS[op])
                parts["gpu_s"] += t
                parts[f"{op}_s"] += t
        if chosen:
            layer_syncs = max(op_syncs.values()) if w.parallel else sum(op_syncs.values())
            syncs += layer_syncs
            each = {op: v[0] for op, v in chosen.items()}
            t, e = sum(each.values()), {}
            for v in chosen.values():
                _add(e, v[1])
            if w.parallel and design.two_tier and len(chosen) == 2:
                pair = _parallel_tiers({op: work[op] for op in chosen}, design, system)
                t, e = choose(design, {"sequential": (t, e), "parallel": pair}, static_W)[1:]
            parts["nmp_s"] += t
            _add(energy, e)
            for op, v in each.items():  # each operator's time with its synchronizations (shared when parallel)
                share = v / max(sum(each.values()), 1e-30)
                parts[f"{op}_s"] += t * share + system.sync_s * (layer_syncs * share if w.parallel else op_syncs[op])
        if w.moe:
            e_count, k, per_expert = w.moe
            active = sum(1 for n in routed_tokens(batch, e_count, k, system.routing) if n)
            gpu_args = 2.0 * per_expert * batch * k, active * per_expert * model.expert_param_bytes
            on_nmp = "moe" in design.offload
            if on_nmp:
                if w.moe not in moe_nmp:
                    if design.two_tier:
                        case = _moe_case(w.moe, design, batch, system, model.expert_param_bytes)
                        moe_nmp[w.moe] = choose(design, moe_modes(case, expert_splits, design, system), static_W)[1:]
                    else:
                        moe_nmp[w.moe] = single_tier_moe(design, w.moe, batch, system, model.expert_param_bytes)
                on_nmp = moe_nmp[w.moe][0] + system.sync_s <= system.gpu_time_s(*gpu_args, "expert")
            if on_nmp:
                t, e = moe_nmp[w.moe]
                syncs += 1
                parts["nmp_s"] += t
                parts["moe_s"] += t + system.sync_s
                _add(energy, e)
            else:
                t = on_gpu(energy, *gpu_args, "expert")
                parts["gpu_s"] += t
                parts["moe_s"] += t
        parts["sync_s"] += syncs * system.sync_s + (system.allreduce_s if system.gpus > 1 else 0.0)
        return parts, energy

    for w, count in _layer_counts(model.layers):  # layers of a model repeat: each kind once, times its count
        lp, le = layer(w)
        _add(parts, lp, count)
        _add(energy, le, count)
    parts["step_s"] = parts["gpu_s"] + parts["nmp_s"] + parts["sync_s"]
    _add(energy, {"static": static_W * parts["step_s"]})
    parts.update({col: energy.get(p, 0.0) for p, col in zip(PARTS, STEP_ENERGY_COLUMNS, strict=True)})
    parts["energy_J"] = float(sum(parts[c] for c in STEP_ENERGY_COLUMNS))
    return parts


def _parallel_tiers(ops: dict[str, tuple[float, float, float]], design: NovaDesign,
                    system: NovaSystem) -> tuple[float, Energy]:
    """Return Falcon-H1's parallel GQA and SSM on a two-tier design with one operator per tier, concurrently:
    time (s) and dynamic energy (J by part).

    ``ops`` maps each of the two operators to (FLOPs over the system, bytes, Op/B); each cube runs its share,
    Tier-1 at its cross-tier rate ``T_1'(I)`` and Tier-2 at ``T_2(I)`` (NOVA Sec. VI-E), and the better of the
    two assignments by the design's priority is kept.
    """
    tiers = design_tiers(design, system)
    first = _tier1_path(design)
    (na, (fa, ba, ia)), (nb, (fb, bb, ib)) = ops.items()
    ca, cb = fa / system.all_cubes, fb / system.all_cubes

    def energy(path_a: str, path_b: str) -> Energy:
        return _add(path_energy_J(system, design, path_a, fa, ba, na == "ssm"),
                    path_energy_J(system, design, path_b, fb, bb, nb == "ssm"))

    a_first = max(ca / float(tier1_cross_throughput_flops(ia, tiers)), cb / float(tier2_throughput_flops(ib, tiers)))
    b_first = max(ca / float(tier2_throughput_flops(ia, tiers)), cb / float(tier1_cross_throughput_flops(ib, tiers)))
    modes = {"a-first": (a_first, energy(first, "tier2")), "b-first": (b_first, energy("tier2", first))}
    return choose(design, modes, system.static_W(design))[1:]


def _check_run(batch: int, context: float, l_out: int = 0) -> None:
    """Raise :class:`SpecError` for a batch below 1, a negative context or a negative output length."""
    if isinstance(batch, bool) or not isinstance(batch, int | np.integer) or batch < 1:
        raise SpecError("nova", "batch", f"an integer >= 1, got {batch!r}")
    if not context >= 0 or not l_out >= 0:
        raise SpecError("nova", "context", f"context and output length >= 0, got {context!r} and {l_out!r}")


def _prefill_work(model: NovaModel, batch: int, prompt: int) -> tuple[float, float]:
    """FLOPs and bytes of a GPU prefill: active-parameter GEMMs plus causal attention; every weight read once."""
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
    return flops, model.weight_bytes


def prefill_s(model: NovaModel, batch: int, prompt: int, system: NovaSystem = SYSTEM) -> float:
    """GPU prefill of ``batch`` prompts of ``prompt`` tokens: active-parameter GEMMs plus causal attention, s."""
    return system.gpu_time_s(*_prefill_work(model, batch, prompt))


def prefill_energy_J(model: NovaModel, design: NovaDesign, batch: int, prompt: int,
                     system: NovaSystem = SYSTEM) -> float:
    """Energy of the GPU prefill of ``batch`` prompts of ``prompt`` tokens, J: its FLOPs and weight reads on the
    GPU path plus the system's static power over :func:`prefill_s` (every design prefills on the GPU, NOVA
    Sec. VI-A; the design sets only the cubes' static power)."""
    flops, nbytes = _prefill_work(model, batch, prompt)
    dyn = path_energy_J(system, design, "gpu", flops, nbytes)
    return float(sum(dyn.values())) + system.static_W(design) * prefill_s(model, batch, prompt, system)


NMP_PARTS = ("e_nmp_activation_J", "e_nmp_access_J", "e_nmp_compute_J")
"""Step energy columns spent near memory (NOVA Fig. 13's "NMP decode"); the rest is "GPU decode"."""


def e2e(model: NovaModel, design: NovaDesign, batch: int, l_in: int, l_out: int,
        system: NovaSystem = SYSTEM, expert_splits: ExpertSplits | None = None) -> dict[str, float]:
    """Decode step, throughput, E2E latency and energy of one batch (NaN fields when it does not fit in memory);
    ``expert_splits`` as in :func:`decode_step_s`.

    Returns
    -------
    dict
        ``fits``, ``step_s`` (at the mean context), ``throughput_tps`` (batch / step), ``prefill_s``,
        ``e2e_s`` (prefill + ``l_out`` steps) and the step's parts (:func:`decode_step_s`, its energy included);
        ``power_W`` (step energy / step time), ``nmp_W_per_cube`` (the step's near-memory energy / step time /
        cubes) and ``over_power_budget`` (it exceeds ``system.cube_nmp_budget_W``), ``decode_tokens_per_J``
        (batch / step energy), ``prefill_J``,
        ``e2e_J`` (prefill + ``l_out`` steps), ``tokens_per_J`` (``batch x l_out`` / ``e2e_J``) and NOVA Fig. 13's
        breakdown of ``e2e_J``: ``e2e_gpu_prefill_J``, ``e2e_nmp_decode_J`` (near-memory activations, accesses
        and FLOPs), ``e2e_gpu_decode_J`` (GPU FLOPs and DRAM traffic, static power).
    """
    _check_run(batch, l_in, l_out)
    if not fits(model, design, batch, l_in + l_out, system):
        return {"fits": False, "over_power_budget": False, "step_s": np.nan, "throughput_tps": np.nan,
                "prefill_s": np.nan, "e2e_s": np.nan,
                "energy_J": np.nan, "e2e_J": np.nan, "tokens_per_J": np.nan}
    step = decode_step_s(model, design, batch, l_in + l_out / 2.0, system, expert_splits)
    pre = prefill_s(model, batch, l_in, system)
    pre_J = prefill_energy_J(model, design, batch, l_in, system)
    nmp_J = sum(step[c] for c in NMP_PARTS)
    e2e_J = pre_J + l_out * step["energy_J"]
    cube_W = nmp_J / step["step_s"] / system.all_cubes
    return {"fits": True, **step, "throughput_tps": batch / step["step_s"], "prefill_s": pre,
            "e2e_s": pre + l_out * step["step_s"], "power_W": step["energy_J"] / step["step_s"],
            "nmp_W_per_cube": cube_W, "over_power_budget": bool(cube_W > system.cube_nmp_budget_W),
            "decode_tokens_per_J": batch / step["energy_J"], "prefill_J": pre_J, "e2e_J": e2e_J,
            "tokens_per_J": batch * l_out / e2e_J, "e2e_gpu_prefill_J": pre_J, "e2e_nmp_decode_J": l_out * nmp_J,
            "e2e_gpu_decode_J": l_out * (step["energy_J"] - nmp_J)}


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
          step_lines: dict[tuple[int, int, int], tuple[float, float, float, float]] | None = None
          ) -> dict[str, float]:
    """Serve a stream of requests with continuous batching and return its throughput, mean E2E latency and
    energy.

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
        design running an MoE model; :func:`expert_split_cases` of ``design.serving()`` for each batch): the
        stream runs ``design``'s :attr:`NovaDesign.serving_split`.
    step_lines : dict, optional
        Cache of the decode step's (intercept s, slope s per context token, intercept J, slope J per context
        token) by (batch size, ``l_in``, ``l_out``) for this model, design and system, filled as needed; pass the
        same dict to serve several streams of the same system faster.

    Returns
    -------
    dict
        ``fits`` (weights plus ``batch`` requests at their longest context fit), ``serve_throughput_tps``
        (output tokens / makespan), ``serve_decode_tps`` (output tokens / time in decode steps: the system
        decoding throughput of NOVA Fig. 11(a), prefill stalls left out), ``serve_e2e_s`` (mean over requests of
        admission to last token, with its prefill) and ``serve_makespan_s``; ``serve_energy_J`` (every decode
        step and prefill, static power included), ``serve_tokens_per_J`` (output tokens / that) and
        ``serve_decode_tokens_per_J`` (output tokens / the decode steps' energy); NaN values when it does not
        fit.

    Raises
    ------
    SpecError
        Bad sizes; ValueError for a missing expert split.

    Notes
    -----
    An iteration-level loop (continuous batching, Orca-style; the HYDRA event kernel schedules chiplet phases,
    which this GPU + cubes system does not have): at each iteration boundary waiting requests take the free
    slots, their prompts are prefilled on the GPU as one batch (decode waits, as the GPU runs both), then one
    decode step runs for every active request at their mean context. The step's time and energy are affine in
    the mean context at a fixed batch while every operator keeps its place and mode (every roofline and energy
    term is proportional to the KV bytes), so two evaluations per batch size, at ``l_in`` and ``l_in + l_out``,
    give them (an operator that moves between the GPU and the NMP inside that range makes it an interpolation).

    References
    ----------
    NOVA Sec. VI-E "Serving Dynamics" (requests join at the next iteration boundary after their prefill on the
    xPU; slots are allocated and freed without data movement).
    """
    _check_run(batch, l_in, l_out)
    design = design.serving()
    outs = serving_output_lengths(requests, l_out)
    if not serve_fits(model, design, batch, l_in, l_out, requests, system):
        return {"fits": False, "serve_throughput_tps": np.nan, "serve_decode_tps": np.nan, "serve_e2e_s": np.nan,
                "serve_makespan_s": np.nan, "serve_energy_J": np.nan, "serve_tokens_per_J": np.nan,
                "serve_decode_tokens_per_J": np.nan}
    lines = {} if step_lines is None else step_lines

    def step(b: int, ctx: float) -> tuple[float, float]:
        key = b, l_in, l_out
        if key not in lines:
            lo = decode_step_s(model, design, b, float(l_in), system, expert_splits)
            hi = decode_step_s(model, design, b, float(l_in + l_out), system, expert_splits)
            lines[key] = (lo["step_s"], (hi["step_s"] - lo["step_s"]) / l_out,
                          lo["energy_J"], (hi["energy_J"] - lo["energy_J"]) / l_out)
        a, slope, a_J, slope_J = lines[key]
        x = ctx - l_in
        return a + slope * x, a_J + slope_J * x

    t, decode_t, waiting, active, e2e_sum = 0.0, 0.0, list(range(requests)), {}, 0.0
    energy_J, decode_J = 0.0, 0.0
    admitted: dict[int, float] = {}
    while waiting or active:
        free = batch - len(active)
        if free and waiting:
            joining, waiting = waiting[:free], waiting[free:]
            for r in joining:
                admitted[r] = t
            t += prefill_s(model, len(joining), l_in, system)
            energy_J += prefill_energy_J(model, design, len(joining), l_in, system)
            active.update(dict.fromkeys(joining, 0))
        ctx = l_in + sum(active.values()) / len(active)
        dt, dJ = step(len(active), ctx)
        t += dt
        decode_t += dt
        decode_J += dJ
        for r in list(active):
            active[r] += 1
            if active[r] >= outs[r]:
                e2e_sum += t - admitted[r]
                del active[r]
    energy_J += decode_J
    return {"fits": True, "serve_throughput_tps": sum(outs) / t, "serve_decode_tps": sum(outs) / decode_t,
            "serve_e2e_s": e2e_sum / requests, "serve_makespan_s": t, "serve_energy_J": energy_J,
            "serve_tokens_per_J": sum(outs) / energy_J, "serve_decode_tokens_per_J": sum(outs) / decode_J}


def memory_bytes(model: NovaModel, batch: int, context: float) -> dict[str, float]:
    """Bytes by kind for ``batch`` requests of ``context`` tokens: KV cache, SSM state, expert weights, the rest."""
    experts = model.params["routed_experts"] * model.expert_param_bytes
    return {"kv_cache": batch * context * model.kv_bytes_per_token(),
            "ssm_state": batch * model.state_bytes_per_request(),
            "expert_weights": float(experts), "other_weights": float(model.weight_bytes - experts)}


def fits(model: NovaModel, design: NovaDesign, batch: int, context: float, system: NovaSystem = SYSTEM) -> bool:
    """Whether weights, KV cache and SSM state fit in the design's cubes."""
    return sum(memory_bytes(model, batch, context).values()) <= system.capacity_bytes(design)


def serve_fits(model: NovaModel, design: NovaDesign, batch: int, l_in: int, l_out: int, requests: int,
               system: NovaSystem = SYSTEM) -> bool:
    """Whether :func:`serve`'s run fits: weights plus ``batch`` requests at the longest context of the stream
    (``l_in`` plus its longest output, :func:`serving_output_lengths`) in the serving design's cubes."""
    return fits(model, design.serving(), batch, l_in + max(serving_output_lengths(requests, l_out)), system)


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
    energy = (nova_energy_from(load_energy_table("common", "nova").with_values(spec.energy.table))
              if spec.energy.table else None)
    return replace(SYSTEM, gpu=gpu, sync_s=s.sync_us * 1e-6, allreduce_s=s.allreduce_us * 1e-6, routing=s.routing,
                   energy=energy, cube_nmp_budget_W=s.cube_nmp_budget_W)
