"""SNAKE multi-PU scheduling (Sec. 5): four partition modes with their collectives, chosen per operator.

A decode GEMM ``C[m x n] = A[m x k] B[k x n]`` of one device runs on ``P`` PUs (16) of ``c`` cores (4) each. The
``m`` dimension (batch tokens) stays inside every core; the PUs split the two large dimensions (SNAKE Sec. 5a):

===========  ====================  =====================  =============================================
mode         split across PUs      dataflow in the core   collectives
===========  ====================  =====================  =============================================
``OS-S``     n / P (1 x 16 chain)  OS, cores split n      all-gather of C (m x n) over the chain
``IS-S``     k / P (1 x 16 chain)  IS, cores split k      all-reduce of partial C (m x n) over the chain
``OS-ST``    n / 4, k / 4 (4x4)    OS, cores split n      all-reduce of partial C within each column of 4,
                                                          then all-gather of C across the 4 columns
``IS-ST``    k / 4, n / 4 (4x4)    IS, cores split k      the same two collectives
===========  ====================  =====================  =============================================

Time of one execution = the larger of the compute time (:func:`evaluators.systolic.compute_cycles_array`, the
best logical shape of the design for the mode's dataflow, over the clock) and the time to stream the core's
operands once at its share of the stack's DRAM bandwidth (double-buffered refill hidden behind compute), plus the
collectives
(ring algorithm along a chain of ``p`` PUs: all-gather ``(p - 1) (a + V / p / B)``, all-reduce twice that, with
``V`` bytes in all, per-hop latency ``a`` and link bandwidth ``B``).

SNAKE picks the fastest (mode, shape) per operator; the fixed-mode variants use one mode for every operator
(SNAKE Fig. 13b). The baselines (fixed 48x48 and 8x288 arrays, the MAC tree) run as the Stratum-like template
does: ``n`` split over all cores, an all-gather of C, and (for arrays) the better of OS and IS per operator.
The MAC tree is one 16x16x16 tree per PU, the largest that fits the PU's 2.35 mm^2 next to the vector core
(SNAKE Sec. 6.2: "MAC-Tree ... 16x16x16, SA baselines 4x48x48, ours 4x64x64" per PU).

References
----------
SNAKE Sec. 5 (partition modes, Fig. 8 chain / mesh), Sec. 6.1.2 (Stratum-like template: 16 PUs x 4 cores,
24 TB/s, 2.35 mm^2 per PU, 800 MHz vs 1 GHz), Sec. 6.5 (Fig. 13).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from chipdse.core.specs import TemplateSpec
from chipdse.evaluators.snake import MAC_TREE, SA_8X288, SA_48X48, SNAKE, Design, GemmOp, SnakeError, mac_tree_cycles
from chipdse.evaluators.systolic import compute_cycles_array

MODES: tuple[str, ...] = ("IS-S", "IS-ST", "OS-S", "OS-ST")
"""SNAKE's four multi-PU partition modes (Sec. 5a)."""


@dataclass(frozen=True)
class NmpTemplate:
    """The 3D-stacked NMP system one device runs on (SNAKE Sec. 6.1.2, Stratum-like).

    Attributes
    ----------
    name : str
    pus, cores_per_pu : int
        16 PUs of 4 cores; one memory channel per PU.
    dram_TBps : float
        Effective DRAM bandwidth of the stack, TB/s (24, the midpoint of Stratum's range).
    pu_area_mm2 : float
        Logic-die area budget per PU (2.35 mm^2).
    link_GBps : float
        Bandwidth of one inter-PU link, GB/s per direction (assumption; the paper gives none).
    link_latency_s : float
        Latency per hop, s (assumption).
    bytes_per_element : int
        FP16 operands: 2.
    mesh_side : int
        Side of the 4 x 4 mesh view used by the ST modes.
    """

    name: str
    pus: int
    cores_per_pu: int
    dram_TBps: float
    pu_area_mm2: float
    link_GBps: float
    link_latency_s: float
    bytes_per_element: int
    mesh_side: int

    def __post_init__(self) -> None:
        for field in ("pus", "cores_per_pu", "mesh_side", "bytes_per_element"):
            if not (isinstance(getattr(self, field), int) and getattr(self, field) >= 1):
                msg = f"template {self.name!r}: {field} must be a positive integer, got {getattr(self, field)!r}"
                raise SnakeError(msg)
        if not (self.link_latency_s >= 0 and np.isfinite(self.link_latency_s)):
            msg = f"template {self.name!r}: link_latency_s must be finite and >= 0, got {self.link_latency_s!r}"
            raise SnakeError(msg)
        if self.mesh_side * self.mesh_side != self.pus:
            msg = f"template {self.name!r}: mesh_side^2 ({self.mesh_side ** 2}) must equal pus ({self.pus})"
            raise SnakeError(msg)
        for field in ("dram_TBps", "link_GBps", "pu_area_mm2"):
            if not (getattr(self, field) > 0 and np.isfinite(getattr(self, field))):
                msg = f"template {self.name!r}: {field} must be positive, got {getattr(self, field)!r}"
                raise SnakeError(msg)

    @property
    def cores(self) -> int:
        """Cores of the device (PUs x cores per PU)."""
        return self.pus * self.cores_per_pu


def nmp_template(t: TemplateSpec) -> NmpTemplate:
    """The :class:`NmpTemplate` of a scenario's ``template`` section (link latency ns -> s), for the SNAKE study and the
    registry's SNAKE instance builders."""
    return NmpTemplate(t.name, t.pus, t.cores_per_pu, t.dram_TBps, t.pu_area_mm2, t.link_GBps,
                       t.link_latency_ns * 1e-9, 2, t.mesh_side)


STRATUM = nmp_template(TemplateSpec())


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def collective_s(kind: str, group: int, total_bytes: float, t: NmpTemplate) -> float:
    """Time of a ring collective over a chain of ``group`` PUs moving ``total_bytes`` in all, s.

    ``allgather``: ``(p - 1) (a + V / (p B))``; ``allreduce`` (reduce-scatter then all-gather): twice that.
    """
    if group <= 1:
        return 0.0
    step = t.link_latency_s + total_bytes / group / (t.link_GBps * 1e9)
    return (group - 1) * step * (2.0 if kind == "allreduce" else 1.0)


def mode_plan(op: GemmOp, mode: str, t: NmpTemplate) -> tuple[tuple[int, int, int], str, float]:
    """Per-core GEMM, dataflow and collective time of one execution of ``op`` under ``mode``.

    Returns
    -------
    ((m, k, n), dataflow, comm_s)
        The core's GEMM dimensions, ``"os"`` or ``"is"``, and the collectives' time, s.

    Raises
    ------
    SnakeError
        An unknown mode.
    """
    p, c, s, e = t.pus, t.cores_per_pu, t.mesh_side, t.bytes_per_element
    out_bytes = op.m * op.n * e
    if mode == "OS-S":
        return (op.m, op.k, _ceil(op.n, p * c)), "os", collective_s("allgather", p, out_bytes, t)
    if mode == "IS-S":
        return (op.m, _ceil(op.k, p * c), op.n), "is", collective_s("allreduce", p, out_bytes, t)
    if mode in ("OS-ST", "IS-ST"):
        comm = collective_s("allreduce", s, out_bytes / s, t) + collective_s("allgather", s, out_bytes, t)
        if mode == "OS-ST":
            return (op.m, _ceil(op.k, s), _ceil(op.n, s * c)), "os", comm
        return (op.m, _ceil(op.k, s * c), _ceil(op.n, s)), "is", comm
    msg = f"mode must be one of {MODES}, got {mode!r}"
    raise SnakeError(msg)


def memory_s(dims: tuple[int, int, int], units: int, t: NmpTemplate) -> float:
    """Time to stream one unit's GEMM operands from DRAM at its share (1 / ``units``) of the stack bandwidth, s.

    Every operand element moves once (``m k + k n + m n`` elements): the double-buffered local buffer hides
    refill behind compute, which is what SNAKE sizes its buffers for (Sec. 6.6, "stall-free tiled execution").
    """
    m, k, n = dims
    return (m * k + k * n + m * n) * t.bytes_per_element / (t.dram_TBps * 1e12 / units)


def _array_time(dims: tuple[int, int, int], design: Design, dataflows: tuple[str, ...], t: NmpTemplate
                ) -> tuple[float, int, int, str]:
    """Best (time_s, rows, cols, dataflow) of a core GEMM over the design's shapes: the larger of its compute time
    and its DRAM streaming time (roofline of one core)."""
    m, k, n = dims
    rc = np.asarray(design.shapes, dtype=np.int64).reshape(-1, 1, 2)
    flows = np.asarray(dataflows).reshape(1, -1)
    comp = compute_cycles_array(m, k, n, rc[..., 0], rc[..., 1], flows)
    i, j = np.unravel_index(int(np.argmin(comp)), comp.shape)
    sec = max(int(comp[i, j]) / design.freq_hz, memory_s(dims, t.cores, t))
    return sec, int(rc[i, 0, 0]), int(rc[i, 0, 1]), str(flows[0, j])


@dataclass(frozen=True)
class OpSchedule:
    """The chosen execution of one decode operator."""

    op: GemmOp
    mode: str
    rows: int
    cols: int
    dataflow: str
    compute_s: float
    comm_s: float

    @property
    def time_s(self) -> float:
        """Compute (with stalls) plus collectives, one execution, s."""
        return self.compute_s + self.comm_s


def schedule_op(op: GemmOp, design: Design, t: NmpTemplate = STRATUM, modes: tuple[str, ...] = MODES) -> OpSchedule:
    """Fastest execution of ``op`` on ``design`` over ``modes`` (SNAKE) or the baseline organization.

    Parameters
    ----------
    op : GemmOp
    design : Design
        A reconfigurable design such as ``SNAKE`` (logical shapes, per-operator mode) or a fixed one
        (``SA_48X48``, ``SA_8X288``, ``MAC_TREE``), which always runs the Stratum-like organization (``OS-S`` split,
        best of OS / IS for arrays).
    t : NmpTemplate
    modes : tuple of str
        Modes SNAKE may choose from (one mode = a fixed-mode variant).

    Returns
    -------
    OpSchedule
        The minimizer of compute + stall + collectives; ties go to the first mode and shape.
    """
    if design.kind == "mac_tree":  # one L x L x L tree per PU (SNAKE Sec. 6.2: 16x16x16 vs 4 x 64x64 per PU)
        _, _, comm = mode_plan(op, "OS-S", t)
        dims = (op.m, op.k, _ceil(op.n, t.pus))
        sec = max(mac_tree_cycles(*dims, design.lanes) / design.freq_hz, memory_s(dims, t.pus, t))
        return OpSchedule(op, "OS-S", 0, 0, "-", sec, comm)
    if not design.reconfigurable:  # fixed arrays: the template's own split, dataflow chosen per operator
        dims, _, comm = mode_plan(op, "OS-S", t)
        sec, r, c, flow = _array_time(dims, design, design.dataflows, t)
        return OpSchedule(op, "OS-S", r, c, flow, sec, comm)
    if isinstance(modes, str):
        msg = f"modes must be a tuple of mode names, e.g. ({modes!r},), got the string {modes!r}"
        raise SnakeError(msg)
    best: OpSchedule | None = None
    for mode in modes:
        dims, flow, comm = mode_plan(op, mode, t)
        sec, r, c, _ = _array_time(dims, design, (flow,), t)
        cand = OpSchedule(op, mode, r, c, flow, sec, comm)
        if best is None or cand.time_s < best.time_s:
            best = cand
    if best is None:
        msg = "schedule_op needs at least one mode"
        raise SnakeError(msg)
    return best


def schedule(ops: list[GemmOp], design: Design, t: NmpTemplate = STRATUM, modes: tuple[str, ...] = MODES
             ) -> pd.DataFrame:
    """One row per operator: name, m, k, n, count, mode, rows, cols, dataflow, compute_s, comm_s, time_s
    (one execution) and total_s (``count`` executions)."""
    rows = []
    for op in ops:
        s = schedule_op(op, design, t, modes)
        rows.append({"op": op.name, "m": op.m, "k": op.k, "n": op.n, "count": op.count, "mode": s.mode,
                     "rows": s.rows, "cols": s.cols, "dataflow": s.dataflow, "compute_s": s.compute_s,
                     "comm_s": s.comm_s, "time_s": s.time_s, "total_s": s.time_s * op.count})
    return pd.DataFrame(rows)


def decode_step_s(ops: list[GemmOp], design: Design, t: NmpTemplate = STRATUM, modes: tuple[str, ...] = MODES
                  ) -> float:
    """Latency of the decode step's weight GEMMs on one device, s (operators run one after another)."""
    return float(sum(schedule_op(op, design, t, modes).time_s * op.count for op in ops))


def fixed_mode_slowdowns(ops: list[GemmOp], t: NmpTemplate = STRATUM) -> dict[str, float]:
    """Decode latency with one mode for every operator over the per-operator schedule's (SNAKE Fig. 13b)."""
    flexible = decode_step_s(ops, SNAKE, t)
    return {mode: decode_step_s(ops, SNAKE, t, (mode,)) / flexible for mode in MODES}


BASELINE_DESIGNS: tuple[Design, ...] = (MAC_TREE, SA_48X48, SA_8X288)


def design_speedups(ops: list[GemmOp], t: NmpTemplate = STRATUM) -> dict[str, float]:
    """Baseline decode latency over SNAKE's, per baseline (SNAKE Sec. 6.3: 2.90x, 2.33x, 3.00x on average)."""
    ours = decode_step_s(ops, SNAKE, t)
    return {d.name: decode_step_s(ops, d, t) / ours for d in BASELINE_DESIGNS}
