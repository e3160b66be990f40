"""Turn a scored design point into the decision problems solved for it: HBM partition, placement, mapping.

This is where specs meet formulations: the formulations only see plain problem objects.
"""

from __future__ import annotations

import numpy as np

from chipdse.core.design_space import PointSpec
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.estimator import memory_needs
from chipdse.evaluators.latency import (
    FAMILY_ATTENTION,
    FAMILY_MAMBA,
    block_table,
    chiplet_caps,
    decode_costs,
    prefill_costs,
    task_time_s,
)
from chipdse.formulations.hbm_packing import HbmPackingProblem, PackBlock
from chipdse.formulations.hbm_partition import HbmPartitionProblem
from chipdse.formulations.mapping import MappingProblem
from chipdse.formulations.placement import PlacementProblem


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
    from chipdse.core.errors import InfeasibleDesignError
    from chipdse.evaluators.estimator import best_partition

    needs = memory_needs(sc)
    stacks, r = best_partition(needs, n_hbm)
    if r < 0:
        msg = f"{sc.spec.name}: the model's weights fit no split of {n_hbm} HBM stacks"
        raise InfeasibleDesignError(msg)
    ctx = sc.lengths.mean_prefill + sc.lengths.mean_decode
    m = sc.model
    present = {g for g, p in zip(GROUP_NAMES, needs.present, strict=True) if p}
    only = next(iter(present)) if len(present) == 1 else None  # absent groups' blocks fold into the present one
    blocks = tuple(PackBlock(b.name, only or b.group, float(b.params * m.dtype_bytes),
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
    hand-off and stage-to-stage activations, spread evenly over the chiplet pairs that carry them.
    """
    t = block_table(sc.model)
    ln = sc.lengths
    pre = prefill_costs(t, ln.mean_prefill, ln.second_moment_prefill, sc.spec.estimator.chunk_tokens)
    dec = decode_costs(t, ln.mean_prefill + ln.mean_decode / 2.0)
    iters_per_s = capacity_rps * ln.mean_decode / point.batch
    phase_bytes = {"prefill": pre.bytes0 * capacity_rps,
                   "decode": (dec.bytes0 + point.batch * dec.bytes1) * iters_per_s}
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
    return PlacementProblem(rows=sc.package.rows, cols=sc.package.cols, counts=counts, pair_volume=vol,
                            allowed=allowed, ring_cells=ring, name=f"{sc.spec.name}-placement",
                            model_volume_floor=1e-3)


_SCORED: dict[str, object] = {}
"""The last scored design space, by scenario identity (see :func:`finalist_instance`)."""


def finalist_instance(sc: LoadedScenario, problem_name: str, point: str = "b-star") -> tuple[object, str]:
    """Build the ``problem_name`` instance of the scenario's B* or M_T (``point``), as explore does.

    Mapping instances are the decode mapping on the point's ring-enumeration placement.

    Returns
    -------
    (instance, label)
        The problem object and the design point's label.

    Raises
    ------
    InfeasibleDesignError
        When no design point is buildable or stable.
    ValueError
        Unknown problem name or point.
    """
    from chipdse.core.design_space import enumerate_points
    from chipdse.core.errors import InfeasibleDesignError
    from chipdse.core.io import canonical_json
    from chipdse.core.scenario import scenario_identity
    from chipdse.evaluators.estimator import Screen
    from chipdse.evaluators.selection import pick_b_star, pick_m_t
    from chipdse.solvers.config import SolverConfig
    from chipdse.solvers.placement import solve_placement

    key = canonical_json(scenario_identity(sc))  # what a screen score depends on (the sweep store's key too)
    if key not in _SCORED:
        pts, _ = enumerate_points(sc)
        _SCORED.clear()  # keep one scored space: enough for repeated compare / solve calls in one process
        _SCORED[key] = Screen(sc).score(pts)
    df = _SCORED[key].copy()
    pickers = {"b-star": pick_b_star, "m-t": pick_m_t}
    if point not in pickers:
        msg = f"--point must be one of {sorted(pickers)}, got {point!r}"
        raise ValueError(msg)
    try:
        row = df.loc[pickers[point](df)].to_dict()
    except ValueError as exc:
        msg = f"{sc.workload_path}: arrival_rate_rps: {exc}"
        raise InfeasibleDesignError(msg) from None
    spec = PointSpec.from_row(row, sc.compute_types())
    if problem_name == "hbm-partition":
        return hbm_partition_problem(sc, int(row["n_hbm"])), row["label"]
    if problem_name == "hbm-packing":
        return hbm_packing_problem(sc, int(row["n_hbm"])), row["label"]
    placement = placement_problem(sc, spec, float(row["capacity_rps"]))
    if problem_name in ("placement", "placement-max-link"):
        return placement, row["label"]
    if problem_name == "mapping":
        layout = solve_placement(placement, "hbm-enum", SolverConfig(time_limit_s=sc.spec.time_limit_s))
        return mapping_problem(sc, spec, layout.decision, "decode", spec.batch), row["label"]
    names = ["hbm-packing", "hbm-partition", "mapping", "placement", "placement-max-link"]
    msg = f"PROBLEM must be one of {names}, got {problem_name!r}"
    raise ValueError(msg)


def mean_hops_to_groups(sc: LoadedScenario, decision: dict[int, str]) -> dict[int, dict[str, float]]:
    """For each placed compute chiplet's cell, the mean Manhattan hops to the stacks of each HBM group."""
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


def mapping_problem(sc: LoadedScenario, point: PointSpec, decision: dict[int, str], phase: str,
                    batch: int, transfer_wait: float = 0.0) -> MappingProblem:
    """Return the bottleneck-mapping instance of one phase on a placed design (HYDRA Eqs. 3-5).

    Chiplets are the placed chiplets of the phase's types (ids ``"Md@12"`` = type at cell); a block runs on
    chiplets of its family (shared blocks on any); time = roofline t_comp + hops * V / B_NoI (Eq. 3) with
    hops the mean distance from the chiplet to its block's HBM group. Prefill: one mean-length request;
    decode: one iteration at ``batch``. ``transfer_wait`` (>= 0) adds queueing on the shared ports and links
    as a multiple of the block's transfer time V / B_HBM + hops * V / B_NoI
    (``evaluators.estimator.transfer_wait``); the default 0 is HYDRA's uncontended Eq. 3.
    """
    t = block_table(sc.model)
    ln = sc.lengths
    if phase == "prefill":
        c = prefill_costs(t, ln.mean_prefill, ln.second_moment_prefill, sc.spec.estimator.chunk_tokens)
        mat, vec, by = c.mat0, c.vec0, c.bytes0
    else:
        c = decode_costs(t, ln.mean_prefill + ln.mean_decode / 2.0)
        mat, vec, by = batch * c.mat1, batch * c.vec1, c.bytes0 + batch * c.bytes1
    hops = mean_hops_to_groups(sc, decision)
    times: dict[tuple[str, str], float] = {}
    chiplets = []
    for cell in sorted(hops):
        ty = decision[cell]
        ctype = sc.library.by_name(ty)
        if ctype.phase != phase:
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
                              transfer_wait)
            times[(name, cid)] = float(t_k[0])
    return MappingProblem(tasks=tuple(t.names), chiplets=tuple(chiplets), time_s=times,
                          name=f"{sc.spec.name}-{phase}-mapping")
