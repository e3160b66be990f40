"""NOVA system model: an H100 with five HBM4 cubes, with or without near-memory processing, per decode step.

Every design is the same GPU and five cubes (NOVA Sec. VI-A); the designs differ in which decode operators run
near memory, on which rooflines, and in capacity:

==========  ======================  ============================================  ========================
design      offloaded operators     near-memory roofline per cube                 capacity per cube
==========  ======================  ============================================  ========================
GPU         none                    -                                             36 GB
AttAcc      GQA                     in-die (4 TFLOPS at 2 TB/s)                   36 GB
PIMBA       GQA, SSM                in-die (4 TFLOPS at 2 TB/s)                   36 GB
Duplex      GQA, MoE                base-die, 4096 TSVs (64 TFLOPS at 4 TB/s)     36 GB
NOVA        GQA, SSM, MoE           Tier-1 (32 TFLOPS, 16 TB/s) + Tier-2           72 GB (4F^2 + POC, 2x)
                                    (64 TFLOPS, 4 TB/s), three modes; MoE
                                    experts split 1:9 hot/cold (the paper's
                                    policy) or exactly ("NOVA exact")
==========  ======================  ============================================  ========================

A decode step runs the layers in order. In each layer the GPU reads its weights (projections, routers, shared
experts, dense MLPs) at the cubes' external bandwidth; every offloaded operator runs on each cube's NMP on a
fifth of the work and costs one synchronization (``sync_s``: the hand-off to the NMP and back), as the paper
offloads every supported decode operator; operators a design does not support run on the GPU's roofline without
one. NOVA picks Tier-1, Tier-2 or cross-tier per operator (:func:`evaluators.nmp.best_mode`), runs Falcon-H1's parallel
GQA and SSM on the two tiers at once when that is faster, and splits each MoE layer's experts between the tiers:
hottest 10% on Tier-2 (the static 1:9 split NOVA's Figs. 11-15 use), or exactly (MILP) for the "NOVA exact" design;
the splits are solved by the caller (the NOVA study, ``chipdse.studies.nova.solve_expert_splits``) and passed in,
since an evaluator never runs a solver (:func:`expert_split_cases` lists the ones a decode step needs). Expert
token counts come from uniform routing (every token's top-k dealt over the experts), the setting SNAKE Sec. 6.1.1
and Duplex use; NOVA reports skewed routing (Fig. 4b), which the exact split gains more from. Systems of several
GPUs (``gpus``, tensor-parallel, for models that need them: NOVA runs Nemotron3-Super on two H100s over NVLink)
scale compute, bandwidth, cubes and capacity by ``gpus`` and add one all-reduce latency (``allreduce_s``) per
layer.

Prefill runs on the GPU for every design (compute-bound roofline). E2E latency of a batch =
prefill + ``L_out`` decode steps at the mean context ``L_in + L_out / 2``; throughput = batch / step time.

References
----------
NOVA Sec. VI-A (H100 + 5 HBM4 cubes, 12-high 36 GB, 8 Gb/s pins, 2048 vs 4096 TSVs, offload sets, fallback to the
GPU with synchronization), Sec. VI-E (tier rooflines, alpha*, k*), Sec. IV-A (2x density).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from chipdse.core.errors import SpecError
from chipdse.core.models import (
    attention_flops_per_context_token,
    causal_attention_flops,
    kv_cache_bytes_per_token,
)
from chipdse.core.specs import NovaScenario
from chipdse.evaluators.nmp import (
    NOVA_TIERS,
    SSM_FLOPS_PER_STATE_ELEMENT,
    SSM_STATE_ACCESSES,
    NovaTiers,
    best_mode,
    gqa_decode_intensity,
    moe_expert_intensity,
    ssm_decode_intensity,
    tier1_cross_throughput_flops,
    tier2_throughput_flops,
    tier_throughput_flops,
)
from chipdse.evaluators.nova_model import BYTES, NovaModel

OPS = ("gqa", "ssm", "moe")

H100_FLOPS = 989e12
"""NVIDIA H100 SXM dense BF16 peak, FLOP/s (the GPU of NOVA Sec. VI-A and of SNAKE Sec. 6.4's GPU prefill)."""


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


@dataclass(frozen=True)
class NovaDesign:
    """A GPU + five-cube system with its near-memory processing.

    Attributes
    ----------
    name : str
    offload : frozenset[str]
        Operator classes run near memory (subset of ``OPS``).
    nmp : str
        ``"none"``, ``"in-die"``, ``"base-die"`` or ``"two-tier"``.
    density : float
        Capacity multiplier of each cube (2 for NOVA's 4F^2 + POC cube).
    in_die_flops, in_die_Bps : float
        In-die NMP roofline per cube: AttAcc / PIMBA have 16 BF16 GEMV units per bank at a 256-bit read
        granularity, against Tier-1's 128 units at 2 Kb (NOVA Sec. VI-A): an eighth of Tier-1's 32 TFLOPS and
        16 TB/s, i.e. 4 TFLOPS at 2 TB/s.
    expert_split : str
        NOVA's expert-to-tier policy: ``"static-1-9"`` (the paper's) or ``"milp-highs"`` (exact).
    """

    name: str
    offload: frozenset[str] = frozenset()
    nmp: str = "none"
    density: float = 1.0
    in_die_flops: float = 4e12
    in_die_Bps: float = 2e12
    expert_split: str = "static-1-9"


GPU = NovaDesign("GPU")
ATTACC = NovaDesign("AttAcc", frozenset({"gqa"}), "in-die")
PIMBA = NovaDesign("PIMBA", frozenset({"gqa", "ssm"}), "in-die")
DUPLEX = NovaDesign("Duplex", frozenset({"gqa", "moe"}), "base-die")
NOVA = NovaDesign("NOVA", frozenset(OPS), "two-tier", density=2.0)
NOVA_EXACT = NovaDesign("NOVA exact", frozenset(OPS), "two-tier", density=2.0, expert_split="milp-highs")
DESIGNS = (GPU, ATTACC, PIMBA, DUPLEX, NOVA, NOVA_EXACT)


@dataclass(frozen=True)
class NovaSystem:
    """The shared system: GPU, cubes, tiers and synchronization cost.

    Attributes
    ----------
    gpu_flops : float
        H100 dense BF16 peak, FLOP/s (989 TFLOPS) ...
    gpu_efficiency : float
        ... of which this fraction is sustained (assumption).
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
    """

    gpu_flops: float = H100_FLOPS
    gpu_efficiency: float = 0.7
    cubes: int = 5
    cube: Hbm4Cube = field(default_factory=Hbm4Cube)
    tiers: NovaTiers = NOVA_TIERS
    sync_s: float = 2e-6
    gpus: int = 1
    allreduce_s: float = 5e-6

    def gpu_time_s(self, flops: float, nbytes: float) -> float:
        """GPU roofline time of an operator spread over the GPUs: compute or streaming from the cubes, s."""
        return max(flops / (self.gpus * self.gpu_flops * self.gpu_efficiency),
                   nbytes / (self.gpus * self.cubes * self.cube.external_Bps))

    @property
    def all_cubes(self) -> int:
        """Cubes of the whole system."""
        return self.gpus * self.cubes

    def capacity_bytes(self, design: NovaDesign) -> float:
        """Memory of every cube, bytes."""
        return self.all_cubes * self.cube.capacity_GB * 1e9 * design.density


SYSTEM = NovaSystem()


def nmp_time_s(design: NovaDesign, flops: float, intensity: float, system: NovaSystem = SYSTEM) -> float:
    """Return the time of an offloaded operator spread over every cube's NMP, s.

    Parameters
    ----------
    design : NovaDesign
        Its ``nmp`` kind picks the roofline: ``"in-die"`` ``min(C, I B)`` with the design's in-die peak and
        bandwidth, ``"base-die"`` Tier-2's ``T_2(I)``, ``"two-tier"`` the best of NOVA's three modes.
    flops : float
        Operator work over the whole system, FLOP (each cube runs ``flops / all_cubes``).
    intensity : float
        Operator intensity, FLOP per byte (Op/B), > 0 where ``flops > 0``.
    system : NovaSystem

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
    NOVA Sec. VI-E (``T_k(I) = min(C_k, I B_k)``), Sec. V-B (three modes), Sec. VI-A (in-die / base-die NMPs).
    """
    per_cube = flops / system.all_cubes
    if per_cube <= 0:
        return 0.0
    if design.nmp == "in-die":
        return per_cube / float(tier_throughput_flops(intensity, design.in_die_flops, design.in_die_Bps))
    if design.nmp == "base-die":
        return per_cube / float(tier2_throughput_flops(intensity, system.tiers))
    if design.nmp == "two-tier":
        return float(best_mode(per_cube, intensity, system.tiers)[1])
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


def expert_split_cases(model: NovaModel, design: NovaDesign, batch: int,
                       system: NovaSystem = SYSTEM) -> list[ExpertSplitCase]:
    """The expert splits a decode step of ``design`` at ``batch`` needs, each once (empty unless the design
    offloads MoE to the two tiers)."""
    if design.nmp != "two-tier" or "moe" not in design.offload:
        return []
    cases: list[ExpertSplitCase] = []
    for w in model.layers:
        if w.moe:
            e, k, per_expert = w.moe
            case = ExpertSplitCase(routed_tokens(batch, e, k), per_expert * BYTES / system.all_cubes, system.tiers,
                                   design.expert_split)
            if case not in cases:
                cases.append(case)
    return cases


def _expert_split_s(case: ExpertSplitCase, splits: ExpertSplits | None) -> float:
    """The given makespan of ``case``, s.

    Raises
    ------
    ValueError
        ``splits`` lacks the case: the caller must solve it first (``chipdse.studies.nova.solve_expert_splits``).
    """
    if splits is None or case not in splits:
        msg = (f"the {case.method} expert split of {len(case.tokens)} experts ({sum(case.tokens)} routed tokens) "
               "was not given; solve the design's expert splits (expert_split_cases) and pass them in")
        raise ValueError(msg)
    return splits[case]


def routed_tokens(batch: int, experts: int, top_k: int) -> tuple[int, ...]:
    """Tokens per expert under uniform routing: ``batch * top_k`` tokens dealt round-robin (SNAKE Sec. 6.1.1 and
    Duplex's setting; NOVA's own routing traces are skewed, Fig. 4b)."""
    total = batch * top_k
    base, extra = divmod(total, experts)
    return tuple(base + (1 if e < extra else 0) for e in range(experts))


def decode_step_s(model: NovaModel, design: NovaDesign, batch: int, context: float,
                  system: NovaSystem = SYSTEM, expert_splits: ExpertSplits | None = None) -> dict[str, float]:
    """Time of one decode step of ``batch`` requests at mean context ``context`` tokens.

    ``expert_splits`` holds the makespan of every case :func:`expert_split_cases` lists for the design (needed
    only by a two-tier design running an MoE model); a missing one raises ValueError.

    Returns
    -------
    dict
        ``step_s`` and its parts: ``gpu_s`` (GPU operators and fallbacks), ``nmp_s`` (offloaded operators),
        ``sync_s``; plus ``gqa_s``, ``ssm_s``, ``moe_s`` (wherever they ran).
    """
    _check_run(batch, context)
    parts = dict.fromkeys(("gpu_s", "nmp_s", "sync_s", "gqa_s", "ssm_s", "moe_s"), 0.0)
    gpu_bytes = float(model.gpu_fixed_params * BYTES)
    parts["gpu_s"] += system.gpu_time_s(2.0 * model.gpu_fixed_params * batch, gpu_bytes)
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
                t = system.gpu_time_s(flops, nbytes)
                parts["gpu_s"] += t
                parts[f"{op}_s"] += t
        if on_nmp:
            syncs += 1 if w.parallel else len(on_nmp)
            each = {op: nmp_time_s(design, f, i, system) for op, (f, _, i) in on_nmp.items()}
            t = sum(each.values())
            if w.parallel and design.nmp == "two-tier" and len(on_nmp) == 2:
                t = min(t, _parallel_tiers_s(on_nmp, system))
            parts["nmp_s"] += t
            for op, v in each.items():
                parts[f"{op}_s"] += v * t / max(sum(each.values()), 1e-30)
        if w.moe:
            e, k, per_expert = w.moe
            tokens = routed_tokens(batch, e, k)
            if "moe" in design.offload:
                syncs += 1
                if design.nmp == "two-tier":
                    case = ExpertSplitCase(tokens, per_expert * BYTES / system.all_cubes, system.tiers,
                                           design.expert_split)
                    t = _expert_split_s(case, expert_splits)
                else:
                    t = sum(nmp_time_s(design, 2.0 * per_expert * n, float(moe_expert_intensity(n, BYTES)), system)
                            for n in tokens if n)
                parts["nmp_s"] += t
            else:
                active = sum(1 for n in tokens if n)
                t = system.gpu_time_s(2.0 * per_expert * batch * k, active * per_expert * BYTES)
                parts["gpu_s"] += t
            parts["moe_s"] += t
        parts["sync_s"] += syncs * system.sync_s + (system.allreduce_s if system.gpus > 1 else 0.0)
    parts["step_s"] = parts["gpu_s"] + parts["nmp_s"] + parts["sync_s"]
    return parts


def _parallel_tiers_s(ops: dict[str, tuple[float, float, float]], system: NovaSystem) -> float:
    """Return Falcon-H1's parallel GQA and SSM on NOVA with one operator per tier, concurrently, s.

    ``ops`` maps each of the two operators to (FLOPs over the system, bytes, Op/B); each cube runs its share,
    Tier-1 at its cross-tier rate ``T_1'(I)`` and Tier-2 at ``T_2(I)`` (NOVA Sec. VI-E), and the better of the
    two assignments is kept.
    """
    (fa, _, ia), (fb, _, ib) = (v for v in ops.values())
    fa, fb = fa / system.all_cubes, fb / system.all_cubes
    t1a = fa / float(tier1_cross_throughput_flops(ia, system.tiers))
    t2a = fa / float(tier2_throughput_flops(ia, system.tiers))
    t1b = fb / float(tier1_cross_throughput_flops(ib, system.tiers))
    t2b = fb / float(tier2_throughput_flops(ib, system.tiers))
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
    """The :class:`NovaSystem` with a ``kind: nova`` scenario's assumptions (GPU efficiency, sync and all-reduce
    times, us -> s), for the NOVA study and the registry's expert-split builder."""
    return replace(SYSTEM, gpu_efficiency=spec.system.gpu_efficiency, sync_s=spec.system.sync_us * 1e-6,
                   allreduce_s=spec.system.allreduce_us * 1e-6)
