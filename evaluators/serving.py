"""Serving re-score of a placed and mapped HYDRA design: its stage times (HYDRA Eqs. 3-4 on the placed chiplets)
turned into capacity and TTFT by the estimator's serving model.

The sweep screen (:class:`chipdse.evaluators.estimator.Screen`) scores a design with a fluid mapping and an assumed
hop count; once the design is placed and mapped, :func:`serve_layout` scores it again with the mapping's own stage
times (:func:`chipdse.evaluators.latency.placed_task_times`,
:func:`chipdse.evaluators.latency.stage_times_s`) and the same queueing model
(:class:`chipdse.evaluators.queueing.ServingModel`), so an exact layout and a heuristic one are compared like for
like.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from chipdse.core.layout import Layout
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import LoadedScenario
from chipdse.evaluators.estimator import CONTENTION_ITERATIONS, Screen, memory_concurrency
from chipdse.evaluators.latency import (
    BlockTable,
    block_table,
    decode_costs,
    placed_task_times,
    prefill_costs,
    stage_times_s,
)
from chipdse.evaluators.queueing import transfer_wait


@dataclass(frozen=True)
class Served:
    """The serving re-score of one layout.

    Attributes
    ----------
    capacity_rps : float
        Sustainable request rate, requests/s.
    throughput_tps : float
        capacity_rps x mean output tokens, tokens/s (HYDRA Eq. 8).
    ttft_s : float
        Mean TTFT at the offered load, s (NaN when unstable).
    stable : bool
        Capacity above the offered load.
    prefill_bottleneck_s, decode_step_s, decode_iteration_s : float
        The prefill bottleneck stage time, the decode bottleneck stage time and the time between two tokens of one
        request at full load, s.
    decode_concurrency : int
        Requests decoding at once at full load.
    """

    capacity_rps: float
    throughput_tps: float
    ttft_s: float
    stable: bool
    prefill_bottleneck_s: float
    decode_step_s: float
    decode_iteration_s: float
    decode_concurrency: int

    def as_dict(self) -> dict[str, float | int | bool]:
        """The fields as a plain dict (JSON-able; NaN kept)."""
        return asdict(self)


def _hbm_bound_s(sc: LoadedScenario, table: BlockTable, block_bytes: np.ndarray, stacks: Mapping[str, int]) -> float:
    """Time to stream ``block_bytes`` from each HBM group at its stacks' bandwidth; the slowest group, s."""
    bw = sc.library.memory.bandwidth_GBps * 1e9
    return max(block_bytes[table.group == gi].sum() / (stacks[g] * bw)
               for gi, g in enumerate(GROUP_NAMES) if stacks.get(g, 0) > 0)


def serve_layout(screen: Screen, layout: Layout) -> Served:
    """Re-score one placed and mapped design with the estimator's serving model (capacity, TTFT).

    Parameters
    ----------
    screen : Screen
        The estimator of the scenario (and workload) to serve; its :attr:`Screen.serving` model turns the stage
        times into serving numbers.
    layout : Layout
        The placed and mapped design.

    Returns
    -------
    Served

    Notes
    -----
    The stage times are the mapping's own (HYDRA Eqs. 3-4 on the placed chiplets,
    :func:`chipdse.evaluators.latency.placed_task_times`)
    instead of the screen's fluid split and assumed hop count; capacity and the transfer waits on the shared ports
    and links are solved as the screen does (a few fixed-point steps, :data:`CONTENTION_ITERATIONS`), TTFT at the
    offered load with the waits at that load.
    """
    sc, point = screen.sc, layout.point
    t = block_table(sc.model)
    pc = prefill_costs(t, sc.lengths.mean_prefill, sc.lengths.second_moment_prefill, sc.spec.estimator.chunk_tokens)
    c = decode_costs(t, sc.lengths.mean_prefill + sc.lengths.mean_decode / 2.0)
    n_stages = len(set(layout.decode_map.values()))
    r_mem = max(memory_concurrency(screen.needs, point.hbm), 1)
    serving = screen.serving
    n_conc, k = serving.decode_concurrency(np.array([point.batch]), np.array([r_mem]), np.array([n_stages]))
    kb = int(k[0])
    bytes_per_request = pc.bytes0.sum() + sc.lengths.mean_decode / kb * c.bytes_at(kb).sum()
    hbm_bytes_per_s = sum(point.hbm.values()) * sc.library.memory.bandwidth_GBps * 1e9

    def metrics(wait: float) -> tuple[dict[str, np.ndarray], float, float, float]:
        pre = stage_times_s(placed_task_times(sc, point, layout.placement, "prefill", 1, wait), layout.prefill_map)
        t_p = max(max(pre.values()), _hbm_bound_s(sc, t, pc.bytes0, point.hbm))
        dec = stage_times_s(placed_task_times(sc, point, layout.placement, "decode", kb, wait), layout.decode_map)
        t_bn = max(max(dec.values()), _hbm_bound_s(sc, t, c.bytes_at(kb), point.hbm))
        iter_s = max(sum(dec.values()), min(float(n_conc[0]), n_stages) * t_bn)
        m = serving.serving_metrics(np.array([t_p]), np.array([sum(pre.values())]), np.array([iter_s]), n_conc,
                                    np.array([point.batch]), np.array([True]))
        return m, t_p, t_bn, iter_s

    wait = 0.0
    for _ in range(CONTENTION_ITERATIONS):  # capacity vs transfer waits, as Screen.score
        m, t_p, t_bn, iter_s = metrics(wait)
        wait = float(transfer_wait(m["capacity_rps"] * bytes_per_request / hbm_bytes_per_s)[0])
    m, t_p, t_bn, iter_s = metrics(wait)
    capacity = float(m["capacity_rps"][0])
    lam_wait = float(transfer_wait(min(screen.lam, capacity) * bytes_per_request / hbm_bytes_per_s))
    stable = bool(m["stable"][0])
    ttft = float(metrics(lam_wait)[0]["ttft_s"][0]) if stable else float("nan")
    return Served(capacity, capacity * sc.lengths.mean_decode, ttft, stable, float(t_p), float(t_bn), float(iter_s),
                  int(n_conc[0]))
