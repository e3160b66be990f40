"""NoI topology of the simulator: XY routes, link / port reservations, uncontended stage times."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from chipdse.core.grid import xy_route
from chipdse.evaluators.sim_config import (
    _FEATURES,
    OPTIONAL_FEATURES,
    Phase,
    PhaseTable,
    SimConfig,
    _mul,
)
from chipdse.evaluators.sim_kernel import SimulationError


@dataclass
class _Plan:
    """How one stage template runs on one chiplet, as coefficient vectors over the phase's features.

    The local (compute) time is ``sum_k max(0, d_k . f)`` with ``d_k = compute_k - hbm_bytes_k / B_HBM``:
    tasks whose ``d_k`` is non-negative everywhere are summed into ``linear``, those that can change sign are
    kept in ``mixed``, and tasks that can never be compute-bound drop out. ``groups`` lists, per memory group,
    the summed byte coefficients, the stripes' resource routes (one per stack: port, then links) and the Eq. 3
    NoI seconds per byte (mean hops / B_NoI). ``transfer`` lists, per group, the byte coefficients, the
    uncontended seconds per byte over all its stripes and their summed hop latencies (what
    :meth:`_Topology.uncontended_s` adds when the group moves bytes).
    """

    linear: tuple[float, ...] | None
    mixed: list[tuple[float, ...]]
    groups: list[tuple[tuple[float, ...], list[tuple[int, ...]], float]]
    transfer: list[tuple[tuple[float, ...], float, float]] = field(default_factory=list)


def _plan_key(plan: _Plan) -> tuple:
    """What :meth:`_Topology.uncontended_s` of a plan depends on."""
    return plan.linear, tuple(plan.mixed), tuple(plan.transfer)


def _padded(coeffs: tuple[float, ...], n_feat: int) -> tuple[float, ...]:
    """``coeffs`` as floats, with zeros for the optional trailing features it leaves out."""
    return tuple(float(x) for x in coeffs) + (0.0,) * (n_feat - len(coeffs))


class _Topology:
    """Stages, compatibility, plans and NoI resources derived from a :class:`SimConfig` (no run state).

    A stage template's compatible chiplets: its preferred chiplet, the same phase role's chiplets with a cost for
    every task of the stage, then, when the scheduler's ``cross_phase`` is set, the other role's such chiplets.
    """

    def __init__(self, cfg: SimConfig) -> None:
        self.cfg = cfg
        self.ids = [c.id for c in cfg.chiplets]
        self.index = {c.id: i for i, c in enumerate(cfg.chiplets)}
        self.cells = [c.cell for c in cfg.chiplets]
        self.groups = {g.name: i for i, g in enumerate(cfg.memory)}
        noi = cfg.noi
        self.cols = noi.cols
        self._route_cache: dict[tuple[int, int], tuple[int, ...]] = {}
        # resources: HBM ports first (one per stack), then every directed mesh link
        self.res_keys: list[tuple[str, int, int]] = []
        self.inv_rate: list[float] = []
        self.latency: list[float] = []
        self.res_id: dict[tuple[str, int, int], int] = {}
        for g in cfg.memory:
            for cell in g.stack_cells:
                self._add_resource(("hbm", cell, cell), noi.hbm_GBps, 0.0)
        for r in range(noi.rows):
            for c in range(noi.cols):
                a = r * noi.cols + c
                for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                    rr, cc = r + dr, c + dc
                    if 0 <= rr < noi.rows and 0 <= cc < noi.cols:
                        self._add_resource(("link", a, rr * noi.cols + cc), noi.link_GBps, noi.hop_latency_s)
        self.templates: list[tuple[Phase, list[str], int, tuple[int, ...]]] = []
        self.stages: dict[str, list[int]] = {}
        self.plans: list[dict[int, _Plan]] = []
        for phase in ("prefill", "decode"):
            self._build_phase(phase)
        self.compat_sets = [frozenset(t[3]) for t in self.templates]
        # per template and chiplet: a class id, equal for chiplets whose uncontended times are equal at any
        # features (same coefficients, same route lengths: every port and every link has the same rate)
        classes: dict[tuple, int] = {}
        self.plan_class = [{c: classes.setdefault(_plan_key(plan), len(classes)) for c, plan in plans.items()}
                           for plans in self.plans]
        peers: list[set[int]] = [set() for _ in self.ids]
        for _, _, _, comp in self.templates:
            for c in comp:
                peers[c].update(comp)
        self.peers = [tuple(sorted(p - {i})) for i, p in enumerate(peers)]

    def _add_resource(self, key: tuple[str, int, int], GBps: float, latency_s: float) -> None:  # noqa: N803
        self.res_id[key] = len(self.res_keys)
        self.res_keys.append(key)
        self.inv_rate.append(1.0 / (GBps * 1e9))
        self.latency.append(latency_s)

    def link_route(self, src_cell: int, dst_cell: int) -> tuple[int, ...]:
        """Resource ids of the XY route between two cells (cached)."""
        key = (src_cell, dst_cell)
        route = self._route_cache.get(key)
        if route is None:
            route = tuple(self.res_id[("link", a, b)] for a, b in xy_route(self.cols, src_cell, dst_cell))
            self._route_cache[key] = route
        return route

    def _build_phase(self, phase: Phase) -> None:
        cfg = self.cfg
        table: PhaseTable = getattr(cfg, phase)
        order: list[str] = []
        by_chiplet: dict[str, list[str]] = {}
        for k in table.tasks:
            c = table.mapping[k]
            if c not in by_chiplet:
                order.append(c)
                by_chiplet[c] = []
            by_chiplet[c].append(k)
        self.stages[phase] = []
        cross = bool(getattr(cfg.scheduler, "cross_phase", False))
        for c in order:
            tasks = by_chiplet[c]
            pref = self.index[c]
            able = [i for i, ch in enumerate(cfg.chiplets)
                    if i != pref and all((k, ch.id) in table.cost for k in tasks)]
            comp = [pref] + [i for i in able if cfg.chiplets[i].phase == phase]
            if cross:
                comp += [i for i in able if cfg.chiplets[i].phase != phase]
            tid = len(self.templates)
            self.templates.append((phase, tasks, pref, tuple(comp)))
            self.stages[phase].append(tid)
            self.plans.append({i: self._plan(table, tasks, i, len(_FEATURES[phase])) for i in comp})

    def _plan(self, table: PhaseTable, tasks: list[str], chiplet: int, n_feat: int) -> _Plan:
        cfg = self.cfg
        cid, cell = self.ids[chiplet], self.cells[chiplet]
        inv_hbm = 1.0 / (cfg.noi.hbm_GBps * 1e9)
        linear = [0.0] * n_feat
        mixed: list[tuple[float, ...]] = []
        group_bytes: dict[int, list[float]] = {}
        for k in tasks:
            cost = table.cost[(k, cid)]
            by = _padded(cost.hbm_bytes, n_feat)
            if any(by):
                acc = group_bytes.setdefault(self.groups[cost.group], [0.0] * n_feat)
                for i, x in enumerate(by):
                    acc[i] += x
            d = tuple(float(c) - b * inv_hbm for c, b in zip(_padded(cost.compute_s, n_feat), by, strict=True))
            if all(x >= 0 for x in d):
                linear = [a + x for a, x in zip(linear, d, strict=True)]
            elif any(x > 0 for x in d):
                mixed.append(d)
        groups, transfer = [], []
        for g in sorted(group_bytes):
            stacks = cfg.memory[g].stack_cells
            routes = [(self.res_id[("hbm", st, st)], *self.link_route(st, cell)) for st in stacks]
            hops = float(np.mean([len(xy_route(self.cols, st, cell)) for st in stacks]))
            groups.append((tuple(group_bytes[g]), routes, hops / (cfg.noi.link_GBps * 1e9)))
            # each stripe carries 1 / len(routes) of the bytes over its port and links
            per_byte = sum(self.inv_rate[r] for route in routes for r in route) / len(routes)
            transfer.append((tuple(group_bytes[g]), per_byte, sum(self.latency[r] for route in routes for r in route)))
        return _Plan(tuple(linear) if any(linear) else None, mixed, groups, transfer)

    def local_s(self, plan: _Plan, f: tuple[float, ...]) -> float:
        """Compute time of ``plan`` not hidden behind its HBM reads, s."""
        local = sum(map(_mul, plan.linear, f)) if plan.linear is not None else 0.0
        for d in plan.mixed:
            x = sum(map(_mul, d, f))
            if x > 0.0:
                local += x
        return local

    def uncontended_s(self, plan: _Plan, f: tuple[float, ...]) -> float:
        """Stage time of ``plan`` at features ``f`` with every resource free, s."""
        t = self.local_s(plan, f)
        for coeffs, per_byte, latency in plan.transfer:
            nbytes = sum(map(_mul, coeffs, f))
            if nbytes > 0.0:
                t += nbytes * per_byte + latency
        return t


def uncontended_stage_times(config: SimConfig, phase: Phase, features: tuple[float, ...]) -> dict[str, float]:
    """Return each stage's time on its preferred chiplet with no contention, s (HYDRA Eq. 4's t_c).

    Parameters
    ----------
    config : SimConfig
    phase : {"prefill", "decode"}
    features : tuple[float, ...]
        The phase's feature values (:data:`PREFILL_FEATURES` or :data:`DECODE_FEATURES`; the optional trailing
        ``experts_touched`` may be left out, it is then 0).

    Returns
    -------
    dict[str, float]
        Preferred chiplet id of every stage -> ``sum_k max(compute_k, bytes_k / B_HBM)`` plus the stripes'
        port and link times (``mean_hops * bytes / B_NoI`` plus hop latencies), s.

    Raises
    ------
    SimulationError
        When ``features`` has the wrong length.
    """
    n_feat = len(_FEATURES[phase])
    if len(features) not in (n_feat, n_feat - OPTIONAL_FEATURES):
        msg = f"{phase} features must be {_FEATURES[phase]}, got {features!r}"
        raise SimulationError(msg)
    topo = _Topology(config)
    out = {}
    f = _padded(features, n_feat)
    for tid in topo.stages[phase]:
        pref = topo.templates[tid][2]
        out[topo.ids[pref]] = topo.uncontended_s(topo.plans[tid][pref], f)
    return out


# --------------------------------------------------------------------------------------------------------------
# Reserving ports and links
# --------------------------------------------------------------------------------------------------------------


def reserve_routes(routes: list[tuple[list, ...]], t: float, nbytes: float, now: float) -> float:
    """Send ``nbytes`` store-and-forward over each route in turn from time ``t``; return the arrival time, s.

    A route is a tuple of resources ``[starts, ends, seconds per byte, latency, busy seconds]``. Each
    resource keeps its future busy intervals (sorted, disjoint); a hop takes the earliest idle gap long
    enough for it that starts no earlier than the previous hop ended (backfilling), then adds the
    resource's latency. ``now`` is the current simulated time (intervals ending before it are
    forgotten).
    """
    for route in routes:
        for rs in route:
            starts, ends, inv, lat, _ = rs
            d = nbytes * inv
            if not ends or ends[-1] <= t:  # nothing booked after t: append (or extend the last interval)
                e = t + d
                if not ends:
                    starts.append(t)
                    ends.append(e)
                elif ends[-1] <= now:  # everything booked is past
                    starts[:] = (t,)
                    ends[:] = (e,)
                elif ends[-1] == t:
                    ends[-1] = e
                else:
                    starts.append(t)
                    ends.append(e)
            else:
                if len(ends) > 16 and ends[0] <= now:  # forget the past (it never blocks: t >= now)
                    k = bisect_right(ends, now)
                    del starts[:k], ends[:k]
                i = bisect_right(ends, t)
                s, n = t, len(ends)
                while i < n and starts[i] < s + d:
                    if ends[i] > s:
                        s = ends[i]
                    i += 1
                e = s + d
                left = i > 0 and ends[i - 1] == s
                right = i < n and starts[i] == e
                if left and right:
                    ends[i - 1] = ends[i]
                    del starts[i], ends[i]
                elif left:
                    ends[i - 1] = e
                elif right:
                    starts[i] = s
                else:
                    starts.insert(i, s)
                    ends.insert(i, e)
            rs[4] += d
            t = e + lat
    return t
