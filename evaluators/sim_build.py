"""Build a :class:`~evaluators.simulator.SimConfig` from a scenario, a design point, its placement and mappings.

The cost coefficients are the latency tables' (``evaluators.latency``) written per feature, so that without
contention every simulated stage takes the time ``chipdse.solvers.problems.mapping_problem`` gives its chiplet (plus the
package's hop latencies; HYDRA Eqs. 3-4): t_comp = max(F_mat / P_mat + F_vec / P_vec, V / B_HBM) per task, t_comm =
mean hops to the task's HBM group x V / B_NoI. A MoE block's routed experts are a separate byte coefficient on the
``experts_touched`` feature (HYDRA's latency tables read all of them; here only those a job's tokens touch).

Each phase's table has a cost for every chiplet of a compatible family, whatever its phase role, at that chiplet's
own caps (a decode-optimized chiplet prefills at its smaller compute): cross-phase schedulers use them (HYDRA Sec.
IV-C, the c_p,D / c_d,P terms of Eqs. 6-7); the mappings and the static scheduler use only the phase's own chiplets.
"""

from __future__ import annotations

import numpy as np

from chipdse.core.design_space import PointSpec
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.latency import (
    FAMILY_ATTENTION,
    FAMILY_MAMBA,
    FAMILY_SHARED,
    block_table,
    chiplet_caps,
)
from chipdse.evaluators.policies import batcher_config
from chipdse.evaluators.sim_arrivals import ArrivalConfig, GammaArrivalConfig, PoissonArrivalConfig, TraceArrivalConfig
from chipdse.evaluators.sim_kernel import SimulationError
from chipdse.evaluators.sim_policies import BatcherConfig
from chipdse.evaluators.sim_schedulers import SchedulerConfig, StaticSchedulerConfig
from chipdse.evaluators.simulator import ChipletSpec, MemoryGroup, NoiSpec, PhaseTable, ServiceTime, SimConfig, TaskCost


def workload_arrival(sc: LoadedScenario, rate_rps: float | None = None) -> ArrivalConfig:
    """Return the scenario workload's arrival process, optionally at another mean rate (requests/s)."""
    wl = sc.workload
    rate = wl.arrival_rate_rps if rate_rps is None else rate_rps
    if wl.arrival == "gamma":
        return GammaArrivalConfig(rate, wl.gamma_cv)
    if wl.arrival == "replay":
        return TraceArrivalConfig(rate)
    return PoissonArrivalConfig(rate)


def build_sim_config(
    sc: LoadedScenario,
    point: PointSpec,
    placement_decision: dict[int, str],
    prefill_mapping: dict[str, str],
    decode_mapping: dict[str, str],
    *,
    batcher: BatcherConfig | None = None,
    scheduler: SchedulerConfig | None = None,
    arrival: ArrivalConfig | None = None,
    arrival_rate_rps: float | None = None,
    duration_s: float | None = None,
    seed: int | None = None,
    block_tokens: int = 16,
    pipeline_batches: int | None = None,
    service_time: ServiceTime = ServiceTime.DETERMINISTIC,
    record_timeline: bool = False,
) -> SimConfig:
    """Return the simulator configuration of a placed and mapped design point.

    Parameters
    ----------
    sc : LoadedScenario
        Package (grid, hop latency), chiplet library, model, workload.
    point : PointSpec
        Compute counts, HBM stacks per group, D2D bandwidth (GB/s) and effective batch.
    placement_decision : dict[int, str]
        Cell -> chiplet type or ``"hbm:<group>"`` (a placement ``Solution.decision``).
    prefill_mapping, decode_mapping : dict[str, str]
        Block name -> chiplet id ``"<type>@<cell>"`` (mapping ``Solution.decision`` of
        ``chipdse.solvers.problems.mapping_problem``).
    batcher : BatcherConfig, optional
        Default: the scenario's estimator batching (static or dynamic) with ``max_batch = point.batch``.
    scheduler : SchedulerConfig, optional
        Default: static (the mapping's preferred chiplets).
    arrival : ArrivalConfig, optional
        Default: the workload's process at ``arrival_rate_rps`` (default the workload's rate).
    arrival_rate_rps : float, optional
        Mean arrival rate for the default arrival process, requests/s.
    duration_s : float, optional
        Default: the workload's ``duration_s``.
    seed : int, optional
        Default: the scenario's seed.
    block_tokens, pipeline_batches, service_time, record_timeline
        Passed to :class:`SimConfig`.

    Returns
    -------
    SimConfig

    Raises
    ------
    SimulationError
        When a group's weights do not fit its stacks, or the placement lacks the stacks of a group the point
        has (and from :class:`SimConfig`'s validation, e.g. a mapping naming an unplaced chiplet).

    References
    ----------
    HYDRA Eq. 1 (memory per group), Eqs. 3-4 (stage times), Sec. IV-B/C (batching, scheduling).
    """
    lib, model, pkg = sc.library, sc.model, sc.package
    t = block_table(model)
    chiplets, type_of = [], {}
    for cell in sorted(placement_decision):
        ty = placement_decision[cell]
        if ty.startswith("hbm:"):
            continue
        ctype = lib.by_name(ty)
        chiplets.append(ChipletSpec(f"{ty}@{cell}", ctype.phase, ctype.family, int(cell)))  # mapping_problem's ids
        type_of[chiplets[-1].id] = ctype
    stacks: dict[str, list[int]] = {}
    for cell in sorted(placement_decision):
        ty = placement_decision[cell]
        if ty.startswith("hbm:"):
            stacks.setdefault(ty[4:], []).append(int(cell))
    present = [g for g in GROUP_NAMES if point.hbm.get(g, 0) > 0]
    for g in present:
        if len(stacks.get(g, [])) != point.hbm[g]:
            msg = (f"placement has {len(stacks.get(g, []))} stacks of HBM group {g!r}, the design point has "
                   f"{point.hbm[g]}")
            raise SimulationError(msg)
    # a block of a group without stacks lives in the (only) present group, as in the HBM partition
    group_of = [GROUP_NAMES[gi] if GROUP_NAMES[gi] in present else present[0] for gi in t.group]
    cap = lib.memory.capacity_GB * 1e9
    memory = []
    for g in present:
        sel = np.array([x == g for x in group_of])
        free = point.hbm[g] * cap - float(t.stored_weight_bytes[sel].sum())
        if free < 0:
            msg = f"the weights of HBM group {g!r} ({-free + point.hbm[g] * cap:.4g} bytes) exceed its stacks"
            raise SimulationError(msg)
        memory.append(MemoryGroup(g, free, float(t.kv_bpt[sel].sum()), float(t.state_bpr[sel].sum()),
                                  tuple(stacks[g])))
    touch_p = _expert_touch_p(t.expert_touch_p, model.name)
    caps_of = {}
    for ch in chiplets:
        caps = chiplet_caps(type_of[ch.id], lib, np.array([point.d2d_GBps]))
        caps_of[ch.id] = (float(caps.matrix_flops[0]), float(caps.vector_flops[0]))
    tables = {}
    for phase, mapping in (("prefill", prefill_mapping), ("decode", decode_mapping)):
        # every family-compatible chiplet, of either phase role, at its own roofline: the other role's chiplets
        # are there for cross-phase schedulers (the mapping keeps to the phase's own chiplets)
        cost: dict[tuple[str, str], TaskCost] = {}
        for ch in chiplets:
            pm, pv = caps_of[ch.id]
            fam = FAMILY_ATTENTION if ch.family == "attention" else FAMILY_MAMBA
            for k, name in enumerate(t.names):
                if t.family[k] not in (fam, FAMILY_SHARED):
                    continue
                per_token = float(t.matmul_fpt[k] / pm + t.vector_fpt[k] / pv)
                attn = float(t.attn_fpt_ctx[k] / pm)
                w, kv, st = float(t.weight_bytes[k]), float(t.kv_bpt[k]), float(t.state_bpr[k])
                ew = float(t.expert_weight_bytes[k])  # routed experts: read where a job's tokens touch them
                act = t.act_bpt if t.is_embedding[k] else 0.0
                if phase == "prefill":  # features PREFILL_FEATURES; see latency.prefill_costs
                    head = bool(t.is_head[k])
                    compute = (per_token if head else 0.0, 0.0 if head else per_token, attn / 2.0, 0.0, 0.0)
                    streamed = 0.0 if (head or t.is_embedding[k]) else w
                    experts = ew if streamed else 0.0
                    hbm = (st + (w if head else 0.0), kv + act, 0.0, streamed - experts, experts)
                else:  # features DECODE_FEATURES; see latency.decode_costs
                    compute = (0.0, per_token, attn, 0.0)
                    hbm = (0.0 if t.is_embedding[k] else w - ew, 2.0 * st + act, kv, ew)
                cost[(name, ch.id)] = TaskCost(compute, hbm, group_of[k])
        tables[phase] = PhaseTable(tuple(t.names), cost, dict(mapping))
    return SimConfig(
        chiplets=tuple(chiplets),
        prefill=tables["prefill"],
        decode=tables["decode"],
        memory=tuple(memory),
        noi=NoiSpec(pkg.rows, pkg.cols, float(point.d2d_GBps), float(lib.memory.bandwidth_GBps),
                    pkg.hop_latency_ns * 1e-9),
        arrival=arrival or workload_arrival(sc, arrival_rate_rps),
        batcher=batcher or batcher_config(sc.spec.estimator.batching, point.batch),
        scheduler=scheduler or StaticSchedulerConfig(),
        duration_s=float(sc.workload.duration_s if duration_s is None else duration_s),
        seed=int(sc.spec.seed if seed is None else seed),
        block_tokens=block_tokens,
        chunk_tokens=sc.spec.estimator.chunk_tokens,
        activation_bytes_per_token=float(t.act_bpt),
        pipeline_batches=pipeline_batches,
        service_time=service_time,
        record_timeline=record_timeline,
        expert_touch_p=touch_p,
    )


def _expert_touch_p(touch_p: np.ndarray, model_name: str) -> float:
    """Return the one k / E of the model's MoE blocks (0 without MoE).

    Raises
    ------
    SimulationError
        When MoE blocks differ in k / E (the simulator carries one ``experts_touched`` feature).
    """
    ps = sorted({float(p) for p in touch_p if p > 0})
    if len(ps) > 1:
        msg = (f"model {model_name!r}: MoE blocks with different top-k / experts ratios {ps}; the simulator models "
               "one ratio per model")
        raise SimulationError(msg)
    return ps[0] if ps else 0.0
