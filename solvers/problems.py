"""Build decision-problem instances from scenarios: a HYDRA design's HBM partition and packing, placement and
mapping (the design comes in: the studies' pick stage chooses B* or M_T), SNAKE's shape set and area split, NOVA's
expert split.

This is where specs meet formulations: the formulations only see plain problem objects. The builders are what
``solvers.registry`` registers; SNAKE and NOVA scenario specs are taken as loaded (their loaders sit in
``chipdse.studies``, a layer above).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

import numpy as np

from chipdse.core.design_space import PointSpec, ScoredDesign
from chipdse.core.errors import InfeasibleDesignError, SpecError
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.estimator import best_partition, memory_needs
from chipdse.evaluators.latency import (
    FAMILY_ATTENTION,
    FAMILY_MAMBA,
    block_table,
    decode_costs,
    placed_task_times,
    prefill_costs,
)
from chipdse.evaluators.nova_model import BYTES as NOVA_BYTES
from chipdse.evaluators.nova_model import load_nova_model
from chipdse.evaluators.nova_system import routed_tokens, scenario_system
from chipdse.evaluators.snake import SNAKE, Design, decode_gemms, load_card
from chipdse.evaluators.snake_pu import decode_step_s, nmp_template, schedule_op
from chipdse.formulations.expert_split import ExpertSplitProblem
from chipdse.formulations.hbm_packing import HbmPackingProblem, PackBlock
from chipdse.formulations.hbm_partition import HbmPartitionProblem
from chipdse.formulations.mapping import MappingProblem, PhasePart, joint_mapping
from chipdse.formulations.placement import PlacementProblem
from chipdse.formulations.snake_area import AreaSplitProblem
from chipdse.formulations.snake_shapes import ShapeSetProblem
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import solve_placement


def hbm_partition_problem(sc: LoadedScenario, n_hbm: int) -> HbmPartitionProblem:
    """Return the HYDRA Eq. 1 instance for ``n_hbm`` stacks (groups the model has; absent groups' weights folded in)."""
    needs = memory_needs(sc)
    w = needs.weight_bytes
    groups = [g for g, p in zip(GROUP_NAMES, needs.present, strict=True) if p]
    idx = {g: i for i, g in enumerate(GROUP_NAMES)}
    return HbmPartitionProblem(
        n_hbm=n_hbm, capacity_bytes=needs.capacity_bytes,
        weight_bytes={g: float(w[idx[g]]) for g in groups},
        per_request_bytes={g: float(needs.per_request_bytes[idx[g]]) for g in groups},
        name=f"{sc.spec.name}-hbm{n_hbm}",
    )


def hbm_packing_problem(sc: LoadedScenario, n_hbm: int) -> HbmPackingProblem:
    """Return the per-stack packing instance of ``n_hbm`` stacks: the stacks per group of the Eq. 1 optimum
    (enumeration, as HYDRA), and every block with its weights and its per-request KV cache (at the workload's
    mean context, as :func:`evaluators.estimator.memory_needs`) or SSM state.

    Raises
    ------
    InfeasibleDesignError
        When the weights fit no Eq. 1 split of ``n_hbm`` stacks.
    """
    needs = memory_needs(sc)
    stacks, r = best_partition(needs, n_hbm)
    if r < 0:
        msg = f"{sc.spec.name}: the model's weights fit no split of {n_hbm} HBM stacks"
        raise InfeasibleDesignError(msg)
    ctx = sc.lengths.mean_prefill + sc.lengths.mean_decode
    m = sc.model
    present = {g for g, p in zip(GROUP_NAMES, needs.present, strict=True) if p}
    only = next(iter(present)) if len(present) == 1 else None  # absent groups' blocks fold into the present one
    blocks = tuple(PackBlock(b.name, only or b.group, float(b.params * m.param_bytes(b)),
                             float(b.kv_bytes_per_token * ctx + b.state_bytes_per_request)) for b in m.blocks)
    return HbmPackingProblem({g: int(n) for g, n in zip(GROUP_NAMES, stacks, strict=True) if n > 0},
                             needs.capacity_bytes, blocks, name=f"{sc.spec.name}-hbm{n_hbm}-packing")


def _phase_of(sc: LoadedScenario, t: str) -> str:
    return sc.library.by_name(t).phase


def _family_of(sc: LoadedScenario, t: str) -> str:
    return sc.library.by_name(t).family


def placement_problem(sc: LoadedScenario, point: PointSpec, capacity_rps: float) -> PlacementProblem:
    """Return the placement instance of a design point (HYDRA Eq. 2 plus compute-to-compute traffic).

    Volumes are bytes per second at the point's capacity: each compute type's share of its phase's HBM
    traffic (attention-only blocks on attention chiplets, Mamba-only on Mamba chiplets, shared blocks split in
    proportion to chiplet counts), per chiplet and per stack of the group; plus the prefill -> decode KV/state
    hand-off and stage-to-stage activations, spread evenly over the chiplet pairs that carry them. Dies whose
    library ``footprint`` spans several cells get it as ``footprints`` (every default die spans one cell).
    """
    t = block_table(sc.model)
    ln = sc.lengths
    pre = prefill_costs(t, ln.mean_prefill, ln.second_moment_prefill, sc.spec.estimator.chunk_tokens)
    dec = decode_costs(t, ln.mean_prefill + ln.mean_decode / 2.0)
    iters_per_s = capacity_rps * ln.mean_decode / point.batch
    phase_bytes = {"prefill": pre.bytes0 * capacity_rps,
                   "decode": dec.bytes_at(point.batch) * iters_per_s}
    types = [ty for ty, n in point.counts.items() if n > 0]
    vol: dict[tuple[str, str], float] = {}
    for phase, by in phase_bytes.items():
        members = [ty for ty in types if _phase_of(sc, ty) == phase]
        n_total = sum(point.counts[ty] for ty in members)
        for ty in members:
            fam = FAMILY_ATTENTION if _family_of(sc, ty) == "attention" else FAMILY_MAMBA
            share = np.where(t.family == fam, 1.0, np.where(t.family == 2, point.counts[ty] / n_total, 0.0))
            for gi, g in enumerate(GROUP_NAMES):
                if g not in point.hbm:
                    continue
                total = float((by * share)[t.group == gi].sum())
                if total > 0:
                    vol[(ty, f"hbm:{g}")] = total / point.counts[ty] / point.hbm[g]
    pre_types = [ty for ty in types if _phase_of(sc, ty) == "prefill"]
    dec_types = [ty for ty in types if _phase_of(sc, ty) == "decode"]
    n_pre = sum(point.counts[ty] for ty in pre_types)
    n_dec = sum(point.counts[ty] for ty in dec_types)
    handoff = capacity_rps * (ln.mean_prefill * t.kv_bpt.sum() + t.state_bpr.sum())
    for a in pre_types:
        for b in dec_types:
            vol[(a, b)] = vol.get((a, b), 0.0) + handoff / (n_pre * n_dec)
    act = {"prefill": capacity_rps * ln.mean_prefill * t.act_bpt, "decode": capacity_rps * ln.mean_decode * t.act_bpt}
    for phase, members, n_ph in (("prefill", pre_types, n_pre), ("decode", dec_types, n_dec)):
        pairs = n_ph * (n_ph - 1) / 2
        if pairs <= 0:
            continue
        per_pair = act[phase] * (n_ph - 1) / pairs
        for i, a in enumerate(members):
            for b in members[i:]:
                vol[(a, b)] = vol.get((a, b), 0.0) + per_pair
    counts = {ty: point.counts[ty] for ty in types}
    counts.update({f"hbm:{g}": n for g, n in point.hbm.items()})
    ring = sc.package.ring_cells()
    allowed = {f"hbm:{g}": ring for g in point.hbm} if sc.package.hbm_on_ring else {}
    shapes = {ty: sc.library.by_name(ty).footprint for ty in types}
    shapes.update({f"hbm:{g}": sc.library.memory.footprint for g in point.hbm})
    footprints = {ty: (int(fp[0]), int(fp[2])) for ty, fp in shapes.items() if fp != "1x1"}  # "RxC"
    return PlacementProblem(rows=sc.package.rows, cols=sc.package.cols, counts=counts, pair_volume=vol,
                            allowed=allowed, ring_cells=ring, name=f"{sc.spec.name}-placement",
                            model_volume_floor=1e-3, footprints=footprints)


def design_hbm_partition(sc: LoadedScenario, design: ScoredDesign) -> tuple[HbmPartitionProblem, str]:
    """The HYDRA Eq. 1 instance of a design's stack count, and the design's label."""
    return hbm_partition_problem(sc, design.n_hbm), design.label


def design_hbm_packing(sc: LoadedScenario, design: ScoredDesign) -> tuple[HbmPackingProblem, str]:
    """The per-stack packing instance of a design's stack count, and its label."""
    return hbm_packing_problem(sc, design.n_hbm), design.label


def design_placement(sc: LoadedScenario, design: ScoredDesign) -> tuple[PlacementProblem, str]:
    """A design's placement instance (HYDRA Eq. 2, volumes at its capacity), and its label."""
    return placement_problem(sc, design.point, design.capacity_rps), design.label


def design_mapping(sc: LoadedScenario, design: ScoredDesign) -> tuple[MappingProblem, str]:
    """A design's decode mapping on its ring-enumeration placement (HYDRA Eqs. 3-5), and its label."""
    cells = design_layout(sc, design)
    return mapping_problem(sc, design.point, cells, "decode", design.point.batch), design.label


def design_layout(sc: LoadedScenario, design: ScoredDesign) -> dict[int, str]:
    """A design's ``hbm-enum`` placement decision (cell -> chiplet type), within the scenario's limits.

    Raises
    ------
    InfeasibleDesignError
        hbm-enum finds no placement.
    """
    placement = placement_problem(sc, design.point, design.capacity_rps)
    sol = solve_placement(placement, "hbm-enum", SolverConfig.of(sc.spec))
    if sol.decision is None:
        msg = f"{design.label}: hbm-enum found no placement ({sol.status.value}: {sol.reason})"
        raise InfeasibleDesignError(msg)
    return sol.decision


def mapping_problem(sc: LoadedScenario, point: PointSpec, decision: dict[int, str], phase: str,
                    batch: int, transfer_wait: float = 0.0, cross_phase: bool = False) -> MappingProblem:
    """Return the bottleneck-mapping instance of one phase on a placed design (HYDRA Eqs. 3-5).

    Chiplets are the placed chiplets of the phase's types (ids ``"Md@12"`` = type at cell); a block runs on
    chiplets of its family (shared blocks on any); time = roofline t_comp + hops * V / B_NoI (Eq. 3) with
    hops the mean distance from the chiplet to its block's HBM group. Prefill: one mean-length request;
    decode: one iteration at ``batch``. ``transfer_wait`` (>= 0) adds queueing on the shared ports and links
    as a multiple of the block's transfer time V / B_HBM + hops * V / B_NoI
    (``evaluators.estimator.transfer_wait``); the default 0 is HYDRA's uncontended Eq. 3. ``cross_phase``
    also lists the other phase role's chiplets, each at its own caps (the cost tables of
    ``evaluators.sim_build``: a decode chiplet prefills at its own compute); chiplets stay in cell order.
    """
    times = placed_task_times(sc, point, decision, phase, batch, transfer_wait, cross_phase)
    return MappingProblem(tasks=times.tasks, chiplets=times.chiplets, time_s=times.time_s,
                          name=f"{sc.spec.name}-{phase}-mapping")


def joint_mapping_problem(sc: LoadedScenario, point: PointSpec, decision: dict[int, str], batch: int,
                          transfer_wait: float = 0.0, cross_phase: bool = True) -> MappingProblem:
    """Return both phases' blocks on a placed design as one mapping with one stage time per chiplet.

    Task ``"prefill:<block>"`` takes its :func:`mapping_problem` time for one mean-length request; task
    ``"decode:<block>"`` its time for one iteration at ``batch`` times ``mean_decode / batch`` (the iterations
    a request's decode is a ``1 / batch`` share of). A chiplet's stage time is thus its seconds of work per
    request over both phases, and ``1 / bottleneck`` the requests per second the mapped design sustains
    (``mean_decode / bottleneck`` output tokens per second), HYDRA Eqs. 3-5 with both phases on one capacity.

    Parameters
    ----------
    sc, point, decision, batch, transfer_wait
        As :func:`mapping_problem`.
    cross_phase : bool
        Let a block of either phase run on any family-compatible chiplet of either role at that chiplet's own
        rate (HYDRA Sec. IV-C; the c_p,D / c_d,P terms of Eqs. 6-7); ``False`` keeps each phase on its own
        role's chiplets (the separate per-phase mappings, scaled to seconds per request).

    Returns
    -------
    MappingProblem
        See :func:`formulations.mapping.joint_mapping`; ``home`` is each task's own-role chiplets;
        :func:`formulations.mapping.split_joint_decision` turns a decision into the per-phase mappings.
    """
    role = {f"{ty}@{cell}": sc.library.by_name(ty).phase for cell, ty in decision.items() if not ty.startswith("hbm:")}
    weights = {"prefill": 1.0, "decode": sc.lengths.mean_decode / batch}
    parts = []
    for phase, weight in weights.items():
        mp = mapping_problem(sc, point, decision, phase, batch, transfer_wait, cross_phase=True)
        parts.append(PhasePart(phase, mp, weight, tuple(c for c in mp.chiplets if role[c] == phase)))
    return joint_mapping(parts, cross_phase, name=f"{sc.spec.name}-{'cross' if cross_phase else 'same'}-phase-mapping")


def design_joint_mapping(sc: LoadedScenario, design: ScoredDesign) -> tuple[MappingProblem, str]:
    """A design's cross-phase mapping (:func:`joint_mapping_problem`) on its ring-enumeration placement."""
    return joint_mapping_problem(sc, design.point, design_layout(sc, design), design.point.batch), design.label


# --- SNAKE and NOVA instances (scenario specs are duck-typed: the loaders sit in chipdse.studies) -----------------


def shape_set_problem(spec: Any, budget_mm2: float) -> ShapeSetProblem:
    """The shape-set instance over the scenario's models and batches (every decode GEMM, weighted by count)."""
    t = nmp_template(spec.template)
    shapes = tuple((r, 4096 // r) for r in sorted(set(spec.shape_set.rows)))
    ops = [op for m in spec.models for b in spec.batches for op in decode_gemms(load_card(m), b, spec.tp)]
    times = np.array([[schedule_op(op, dataclasses.replace(SNAKE, shapes=((r, c), (c, r))), t).time_s
                       for r, c in shapes] for op in ops])
    always = tuple(i for i, (r, c) in enumerate(shapes) if r == c)
    return ShapeSetProblem(shapes, tuple(64 // r for r, _ in shapes),
                           tuple(spec.shape_set.config_area_mm2 for _ in shapes), spec.shape_set.port_area_mm2,
                           budget_mm2, tuple(f"{op.name}@{op.m}" for op in ops),
                           np.array([float(op.count) for op in ops]), times, always,
                           name=f"{spec.name}-shape-set-{budget_mm2:g}mm2")


def area_split_problem(spec: Any) -> AreaSplitProblem:
    """The area-split instance: each (array, buffer) pair's decode latency with the buffer-limited streaming rate."""
    a = spec.area_split
    base = nmp_template(spec.template)
    ops = decode_gemms(load_card(a.model), a.batch, spec.tp)
    budget = (spec.template.pu_area_mm2 - a.pu_fixed_area_mm2) / spec.template.cores_per_pu
    core_share = base.dram_TBps * 1e12 / base.cores
    lat = np.zeros((len(a.cols), len(a.buffer_kb)))
    for j, kb in enumerate(a.buffer_kb):
        rate = min(core_share, kb * 1024 / 2 / (a.dram_latency_ns * 1e-9))  # Little's law on the refill half
        t = dataclasses.replace(base, dram_TBps=rate * base.cores / 1e12)
        for i, c in enumerate(a.cols):
            design = Design(f"{a.rows}x{c}", "systolic", SNAKE.freq_hz, ((a.rows, c), (c, a.rows)), SNAKE.dataflows,
                            reconfigurable=True, pipelined=SNAKE.pipelined)
            lat[i, j] = decode_step_s(ops, design, t)
    return AreaSplitProblem(tuple((a.rows, c) for c in a.cols), np.array([a.rows * c * a.pe_area_mm2 for c in a.cols]),
                            tuple(a.buffer_kb), np.array([kb * a.sram_mm2_per_kb for kb in a.buffer_kb]), budget, lat,
                            name=f"{spec.name}-area-split")


def nova_expert_split_problem(spec: Any, model: str | None = None, batch: int | None = None
                              ) -> tuple[ExpertSplitProblem, str]:
    """One MoE layer's expert-to-tier split as NOVA's system model solves it in a decode step.

    Parameters
    ----------
    spec : NovaScenario
        A loaded ``kind: nova`` scenario (``models``, ``batches``, ``gpus``, ``system``).
    model : str, optional
        Model key (default: the scenario's first model with routed experts).
    batch : int, optional
        Decode batch (default: the scenario's largest).

    Returns
    -------
    (ExpertSplitProblem, str)
        The first MoE layer's experts, each with its share ``W_e / cubes`` of the weights (bytes; every cube holds
        a slice of every expert) and ``batch * top_k`` tokens routed as the scenario's ``system.routing`` says
        (``evaluators.nova_system.routed_tokens``), on the scenario's tiers; and a label. The context length does
        not enter: routed tokens depend on the batch alone.

    Raises
    ------
    SpecError
        No model of the scenario (or the named one) has routed experts.

    References
    ----------
    NOVA Sec. VI-E (expert split), Sec. V-C (MoE execution on the two tiers).
    """
    keys = [model] if model is not None else list(spec.models)
    for key in keys:
        card = load_nova_model(key)
        layer = next((w for w in card.layers if w.moe), None)
        if layer is None:
            continue
        system = replace(scenario_system(spec), gpus=spec.gpus.get(key, 1))
        b = batch if batch is not None else max(spec.batches)
        experts, top_k, per_expert = layer.moe
        tokens = routed_tokens(b, experts, top_k, system.routing)
        share = per_expert * NOVA_BYTES / system.all_cubes
        label = f"{key}, batch {b}: {experts} experts, top-{top_k}"
        return ExpertSplitProblem(tuple(share for _ in tokens), tokens, system.tiers, name=label), label
    raise SpecError(getattr(spec, "name", "nova"), "models", f"a model with routed experts among {keys}")
