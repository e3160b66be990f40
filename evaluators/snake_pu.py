"""SNAKE multi-PU scheduling (Sec. 5): four partition modes with their collectives, chosen per operator.

A decode GEMM ``C[m x n] = A[m x k] B[k x n]`` of one device runs on ``P`` PUs (16) of ``c`` cores (4) each. The
``m`` dimension (batch tokens) stays inside every core; the PUs split the two large dimensions (SNAKE Sec. 5a):

===========  ====================  =====================  =============================================
mode         split across PUs      dataflow in the core   collectives
===========  ====================  =====================  =============================================
``OS-S``     n / P (1 x 16 chain)  OS, cores split n      all-gather of the input A (m x k) over the chain
``IS-S``     k / P (1 x 16 chain)  IS, cores split k      reduce-scatter of partial C (m x n) over the chain
``OS-ST``    n / 4, k / 4 (4x4)    OS, cores split n      all-gather of A's k / 4 slice within each group of
                                                          4, reduce-scatter of partial C (m x n / 4) within
                                                          each column of 4
``IS-ST``    k / 4, n / 4 (4x4)    IS, cores split k      the same two collectives
===========  ====================  =====================  =============================================

Activations stay sharded between operators (the layout Megatron-style tensor parallelism keeps between a
column- and a row-parallel GEMM): every operator leaves its output split along ``n`` over the ``P`` PUs, complete
(one ``n / P`` slice per PU), which is also the ``k``-split the next operator's IS-S needs. So an OS mode first
gathers the input it needs whole (``m x k`` over the chain, or the ``k / 4`` slice of its mesh row) and leaves its
output ``n``-split as it computes it; an IS mode reads its ``k`` slice where it already lies and reduce-scatters its
partial sums into that ``n``-split. Per operator this charges exactly one of the two ring passes a gather-then-
reduce chain needs, so IS wins the collectives when ``n < k`` and OS when ``n > k`` (RMSNorm on the ``n``-split
residual needs one sum of squares per token across PUs, left out).

Time of one execution = the larger of the compute time (the best logical shape of the design for the mode's
dataflow, over the clock; :func:`evaluators.systolic.pipelined_cycles_array` for SNAKE, whose Weight-Load / Feed /
Drain sub-stages overlap consecutive folds (Sec. 4.2.4), :func:`evaluators.systolic.compute_cycles_array` for the
fixed arrays) and the time to stream the core's operands once at its share of the stack's DRAM bandwidth
(double-buffered refill hidden behind compute), plus the exposed part of the element-wise stage after the operator
(overlapped under OS, not under IS; Sec. 5b, Fig. 9), plus the collectives (ring algorithm along a chain of ``p``
PUs: all-gather and reduce-scatter ``(p - 1) (a + V / p / B)``, all-reduce twice that, with ``V`` bytes in all,
per-hop latency ``a`` and link bandwidth ``B``).

SNAKE picks the fastest (mode, shape, split of the PU's cores) per operator; the fixed-mode variants use one mode for
every operator (SNAKE Fig. 13b). The baselines (fixed 48x48 and 8x288 arrays, the MAC tree) run as the Stratum-like
template does: ``n`` split over all cores (the OS-S collectives), and (for arrays) the better of OS and IS per operator.
Every design may run the experts of an MoE layer as a grouped GEMM (whole experts concurrently on different cores
or PUs, :func:`grouped_plan`), and runs the attention products QK^T / PV head-parallel (Sec. 5b).
The MAC tree is one 16x16x16 tree per PU, the largest that fits the PU's 2.35 mm^2 next to the vector core
(SNAKE Sec. 6.2: "MAC-Tree ... 16x16x16, SA baselines 4x48x48, ours 4x64x64" per PU).

References
----------
SNAKE Sec. 5 (partition modes, Fig. 8 chain / mesh), Sec. 6.1.2 (Stratum-like template: 16 PUs x 4 cores,
24 TB/s, 2.35 mm^2 per PU, 800 MHz vs 1 GHz), Sec. 6.5 (Fig. 13).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from chipdse.core.specs import TemplateSpec
from chipdse.evaluators.snake import MAC_TREE, SA_8X288, SA_48X48, SNAKE, Design, GemmOp, SnakeError, mac_tree_cycles
from chipdse.evaluators.systolic import compute_cycles_array, fold_count_array, pipelined_cycles_array

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
    vector_ops_per_cycle : int
        FP16 operations per cycle of one core's vector unit (assumption: 64, one lane per column of the 64-wide
        physical array whose output buffer the vector core shares; the paper gives none).
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
    vector_ops_per_cycle: int = 64

    def __post_init__(self) -> None:
        for field in ("pus", "cores_per_pu", "mesh_side", "bytes_per_element", "vector_ops_per_cycle"):
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

    ``allgather`` and ``reducescatter``: ``(p - 1) (a + V / (p B))``; ``allreduce`` (reduce-scatter then
    all-gather): twice that.
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
        The core's GEMM dimensions, ``"os"`` or ``"is"``, and the collectives' time, s: the input gather of the
        OS modes and the partial-sum reduce-scatter of the IS modes (module docstring: activations stay
        ``n``-split over the PUs between operators).

    Raises
    ------
    SnakeError
        An unknown mode.
    """
    p, c, s, e = t.pus, t.cores_per_pu, t.mesh_side, t.bytes_per_element
    in_bytes, out_bytes = op.m * op.k * e, op.m * op.n * e
    if mode == "OS-S":
        return (op.m, op.k, _ceil(op.n, p * c)), "os", collective_s("allgather", p, in_bytes, t)
    if mode == "IS-S":
        return (op.m, _ceil(op.k, p * c), op.n), "is", collective_s("reducescatter", p, out_bytes, t)
    if mode in ("OS-ST", "IS-ST"):
        comm = collective_s("allgather", s, in_bytes / s, t) + collective_s("reducescatter", s, out_bytes / s, t)
        if mode == "OS-ST":
            return (op.m, _ceil(op.k, s), _ceil(op.n, s * c)), "os", comm
        return (op.m, _ceil(op.k, s * c), _ceil(op.n, s)), "is", comm
    msg = f"mode must be one of {MODES}, got {mode!r}"
    raise SnakeError(msg)


def link_bytes(op: GemmOp, mode: str, t: NmpTemplate) -> float:
    """Bytes the collectives of :func:`mode_plan` move over inter-PU links in one execution, summed over links.

    A ring all-gather or reduce-scatter of ``V`` bytes over ``p`` PUs sends ``(p - 1) V / p`` bytes out of each PU
    to its ring neighbour (one hop), ``(p - 1) V`` in all; the ST modes run ``s`` such rings of ``V / s`` at once.
    So OS-S moves ``(P - 1) m k`` elements, IS-S ``(P - 1) m n`` and the ST modes ``(s - 1) (m k + m n)``.

    Raises
    ------
    SnakeError
        An unknown mode.
    """
    p, s, e = t.pus, t.mesh_side, t.bytes_per_element
    in_bytes, out_bytes = op.m * op.k * e, op.m * op.n * e
    per_mode = {"OS-S": (p - 1) * in_bytes, "IS-S": (p - 1) * out_bytes, "OS-ST": (s - 1) * (in_bytes + out_bytes),
                "IS-ST": (s - 1) * (in_bytes + out_bytes)}
    if mode not in per_mode:
        msg = f"mode must be one of {MODES}, got {mode!r}"
        raise SnakeError(msg)
    return float(per_mode[mode])


def memory_s(dims: tuple[int, int, int], units: int, t: NmpTemplate) -> float:
    """Time to stream one unit's GEMM operands from DRAM at its share (1 / ``units``) of the stack bandwidth, s.

    Every operand element moves once (``m k + k n + m n`` elements): the double-buffered local buffer hides
    refill behind compute, which is what SNAKE sizes its buffers for (Sec. 6.6, "stall-free tiled execution").
    """
    m, k, n = dims
    return (m * k + k * n + m * n) * t.bytes_per_element / (t.dram_TBps * 1e12 / units)


def _unit_time(dims: tuple[int, int, int], design: Design, dataflows: tuple[str, ...], units: int,
               op: GemmOp, t: NmpTemplate, out_elems: float) -> tuple[float, int, int, str]:
    """Best (time_s, rows, cols, dataflow) of one unit's GEMM (a core, or a PU for the MAC tree) over the design's
    shapes and ``dataflows``: the larger of its compute time and its DRAM streaming time at 1 / ``units`` of the
    stack (roofline of one unit), plus the exposed part of the element-wise stage after it.

    The stage does ``op.nonlinear`` vector operations on each of the unit's ``out_elems`` output elements at
    ``t.vector_ops_per_cycle`` per core and cycle. Linear-nonlinear overlap (SNAKE Sec. 5b, Fig. 9): under OS an
    output tile is final when it leaves the array, so the stage overlaps the next folds and only the last fold's
    share (1 / folds) is exposed; under IS an output is final only after the temporal accumulation (and the
    partial-sum all-reduce of the IS modes), so the whole stage follows the GEMM. The MAC tree reduces one output
    block at a time, like OS."""
    lanes = t.vector_ops_per_cycle * (t.cores_per_pu if design.kind == "mac_tree" else 1)
    return _unit_time_cached(tuple(int(x) for x in dims), design, tuple(dataflows), memory_s(dims, units, t),
                             op.nonlinear * out_elems / (lanes * design.freq_hz))


@functools.lru_cache(maxsize=65536)
def _unit_time_cached(dims: tuple[int, int, int], design: Design, dataflows: tuple[str, ...], mem: float, vec: float
                      ) -> tuple[float, int, int, str]:
    """:func:`_unit_time` given the unit's DRAM time ``mem`` and element-wise stage time ``vec``, s (cached: the link
    sweep, the fixed-mode variants and the serving tables time the same GEMMs again)."""
    m, k, n = dims
    if design.kind == "mac_tree":
        blocks = _ceil(m, design.lanes) * _ceil(n, design.lanes)
        return max(mac_tree_cycles(m, k, n, design.lanes) / design.freq_hz, mem) + vec / blocks, 0, 0, "-"
    rc = np.asarray(design.shapes, dtype=np.int64).reshape(-1, 1, 2)
    flows = np.asarray(dataflows).reshape(1, -1)
    cycle_fn = pipelined_cycles_array if design.pipelined else compute_cycles_array
    comp = cycle_fn(m, k, n, rc[..., 0], rc[..., 1], flows) / design.freq_hz
    folds = fold_count_array(m, k, n, rc[..., 0], rc[..., 1], flows)
    exposed = np.where(flows == "os", vec / folds, vec)
    total = np.maximum(comp, mem) + exposed
    i, j = np.unravel_index(int(np.argmin(total)), total.shape)
    return float(total[i, j]), int(rc[i, 0, 0]), int(rc[i, 0, 1]), str(flows[0, j])


def _core_splits(op: GemmOp, mode: str, t: NmpTemplate) -> list[tuple[int, int, int]]:
    """Per-core GEMMs of ``mode`` on a reconfigurable design: the PU's share ``(m, k_pu, n_pu)`` split over its
    cores along ``n`` or along ``k``. :func:`mode_plan`'s split (the spatial dimension: ``n`` under OS, ``k`` under
    IS) comes first; the other keeps every core on the PU's stationary slice (IS) or adds the cores' partial sums in
    the PU's shared output buffer (OS)."""
    p, s, c = t.pus, t.mesh_side, t.cores_per_pu
    k_pu, n_pu = {"OS-S": (op.k, _ceil(op.n, p)), "IS-S": (_ceil(op.k, p), op.n)}.get(
        mode, (_ceil(op.k, s), _ceil(op.n, s)))
    first, _, _ = mode_plan(op, mode, t)
    other = (op.m, k_pu, _ceil(n_pu, c)) if first[2] != _ceil(n_pu, c) else (op.m, _ceil(k_pu, c), n_pu)
    return [first, other]


@dataclass(frozen=True)
class OpSchedule:
    """The chosen execution of one decode operator (one execution: one GEMM, or 1 / ``group`` of a grouped layer)."""

    op: GemmOp
    mode: str
    rows: int
    cols: int
    dataflow: str
    compute_s: float
    comm_s: float
    dims: tuple[int, int, int] = (0, 0, 0)
    """GEMM ``(m, k, n)`` of one compute unit (a core; a PU's tree for the MAC tree)."""
    units: int = 0
    """Units running ``dims`` per execution, summed over rounds (the energy model's count of unit GEMMs)."""
    link_bytes: float = 0.0
    """Bytes the execution's collectives move over inter-PU links, summed over hops (:func:`link_bytes`)."""

    @property
    def time_s(self) -> float:
        """Compute (with stalls) plus collectives, one execution, s."""
        return self.compute_s + self.comm_s


GROUPED = "grouped"
"""The mode of an operator whose ``group`` independent GEMMs run concurrently, whole, one per PU or core (MoE
experts as a grouped GEMM; attention heads head-parallel)."""


def grouped_plan(op: GemmOp, design: Design, t: NmpTemplate) -> OpSchedule:
    """One execution of ``op`` when its layer's ``op.group`` GEMMs run concurrently on different PUs (grouped GEMM).

    Two placements are timed and the faster kept: one GEMM per core (``ceil(group / cores)`` rounds of the whole
    ``(m, k, n)`` on one core at 1 / cores of the DRAM bandwidth) and one GEMM per PU split over its cores
    (``ceil(group / PUs)`` rounds; ``n`` split under OS, ``k`` under IS). The MAC tree (one per PU) runs one whole
    GEMM per PU. Afterwards, when ``op.combine_rows`` > 0, the partial outputs (``combine_rows x n``) are summed by a
    ring all-reduce over the ``min(PUs, group)`` PUs that hold them. Per execution: ``(rounds x unit time +
    all-reduce) / group``.

    Returns
    -------
    OpSchedule
        Mode :data:`GROUPED`; ``compute_s`` and ``comm_s`` per execution (``count`` executions make the step).
    """
    g, p, c, e = op.group, t.pus, t.cores_per_pu, t.bytes_per_element
    full = (op.m, op.k, op.n)
    comm = collective_s("allreduce", min(p, g), op.combine_rows * op.n * e, t) if op.combine_rows else 0.0
    traffic = 2.0 * (min(p, g) - 1) * op.combine_rows * op.n * e
    if design.kind == "mac_tree":
        sec, r, cc, flow = _unit_time(full, design, ("os",), p, op, t, op.m * op.n)
        return OpSchedule(op, GROUPED, r, cc, flow, _ceil(g, p) * sec / g, comm / g, full, 1, traffic / g)
    best: tuple[float, int, int, str, tuple[int, int, int], int] | None = None
    for flow in design.dataflows:
        split = (op.m, op.k, _ceil(op.n, c)) if flow == "os" else (op.m, _ceil(op.k, c), op.n)
        for rounds, dims in ((_ceil(g, t.cores), full), (_ceil(g, p), split)):
            sec, r, cc, fl = _unit_time(dims, design, (flow,), t.cores, op, t,
                                        op.m * op.n / c if dims is split else op.m * op.n)
            if best is None or rounds * sec < best[0]:
                best = (rounds * sec, r, cc, fl, dims, 1 if dims is full else c)
    assert best is not None, "a systolic design has at least one dataflow"
    return OpSchedule(op, GROUPED, best[1], best[2], best[3], best[0] / g, comm / g, best[4], best[5], traffic / g)


def schedule_op(op: GemmOp, design: Design, t: NmpTemplate = STRATUM, modes: tuple[str, ...] = MODES,
                grouped: bool = True) -> OpSchedule:
    """Fastest execution of ``op`` on ``design`` over ``modes`` (SNAKE) or the baseline organization.

    Parameters
    ----------
    op : GemmOp
    design : Design
        A reconfigurable design such as ``SNAKE`` (logical shapes, per-operator mode, the PU's cores splitting
        either dimension, pipelined folds) or a fixed one (``SA_48X48``, ``SA_8X288``, ``MAC_TREE``), which always
        runs the Stratum-like organization (``OS-S`` split, best of OS / IS for arrays).
    t : NmpTemplate
    modes : tuple of str
        Modes SNAKE may choose from (one mode = a fixed-mode variant).
    grouped : bool
        Let the scheduler run an operator with ``group > 1`` (MoE experts) as a grouped GEMM
        (:func:`grouped_plan`) when that is faster than every mode; a scheduling choice, so every design has it.

    Returns
    -------
    OpSchedule
        The minimizer of compute + stall + exposed element-wise stage + collectives; ties go to the first mode and
        shape. Attention products (``head_parallel``) always run head-parallel (:func:`grouped_plan`), on every
        design.

    Raises
    ------
    SnakeError
        ``modes`` given as a string or empty.
    """
    if op.head_parallel:
        return grouped_plan(op, design, t)
    if design.kind == "mac_tree":  # one L x L x L tree per PU (SNAKE Sec. 6.2: 16x16x16 vs 4 x 64x64 per PU)
        _, _, comm = mode_plan(op, "OS-S", t)
        dims = (op.m, op.k, _ceil(op.n, t.pus))
        sec, *_ = _unit_time(dims, design, ("os",), t.pus, op, t, op.m * op.n / t.pus)
        best = OpSchedule(op, "OS-S", 0, 0, "-", sec, comm, dims, t.pus, link_bytes(op, "OS-S", t))
    elif not design.reconfigurable:  # fixed arrays: the template's own split, dataflow chosen per operator
        dims, _, comm = mode_plan(op, "OS-S", t)
        sec, r, c, flow = _unit_time(dims, design, design.dataflows, t.cores, op, t, op.m * op.n / t.cores)
        best = OpSchedule(op, "OS-S", r, c, flow, sec, comm, dims, t.cores, link_bytes(op, "OS-S", t))
    else:
        if isinstance(modes, str) or not modes:
            msg = f"modes must be a non-empty tuple of mode names, e.g. ('OS-S',), got {modes!r}"
            raise SnakeError(msg)
        cands = []
        for mode in modes:
            _, flow, comm = mode_plan(op, mode, t)
            for dims in _core_splits(op, mode, t):
                sec, r, c, _ = _unit_time(dims, design, (flow,), t.cores, op, t, op.m * op.n / t.cores)
                cands.append(OpSchedule(op, mode, r, c, flow, sec, comm, dims, t.cores, link_bytes(op, mode, t)))
        best = min(cands, key=lambda x: x.time_s)
    if grouped and op.group > 1:
        cand = grouped_plan(op, design, t)
        if cand.time_s < best.time_s:
            best = cand
    return best


def schedule(ops: list[GemmOp], design: Design, t: NmpTemplate = STRATUM, modes: tuple[str, ...] = MODES,
             grouped: bool = True) -> pd.DataFrame:
    """One row per operator: name, m, k, n, count, group, head_parallel, mode, rows, cols, dataflow, compute_s,
    comm_s, time_s (one execution) and total_s (``count`` executions); ``grouped`` as in :func:`schedule_op`."""
    rows = []
    for op in ops:
        s = schedule_op(op, design, t, modes, grouped)
        rows.append({"op": op.name, "m": op.m, "k": op.k, "n": op.n, "count": op.count, "group": op.group,
                     "head_parallel": op.head_parallel, "mode": s.mode,
                     "rows": s.rows, "cols": s.cols, "dataflow": s.dataflow, "compute_s": s.compute_s,
                     "comm_s": s.comm_s, "time_s": s.time_s, "total_s": s.time_s * op.count})
    return pd.DataFrame(rows)


def decode_step_s(ops: list[GemmOp], design: Design, t: NmpTemplate = STRATUM, modes: tuple[str, ...] = MODES,
                  grouped: bool = True) -> float:
    """Latency of the decode step's GEMMs on one device, s (operators run one after another)."""
    return float(sum(schedule_op(op, design, t, modes, grouped).time_s * op.count for op in ops))


def fixed_mode_slowdowns(ops: list[GemmOp], t: NmpTemplate = STRATUM) -> dict[str, float]:
    """Decode latency with one mode for every weight operator (no grouped experts) over the per-operator
    schedule's (SNAKE Fig. 13b); attention products stay head-parallel in both."""
    flexible = decode_step_s(ops, SNAKE, t)
    return {mode: decode_step_s(ops, SNAKE, t, (mode,), grouped=False) / flexible for mode in MODES}


BASELINE_DESIGNS: tuple[Design, ...] = (MAC_TREE, SA_48X48, SA_8X288)


def design_speedups(ops: list[GemmOp], t: NmpTemplate = STRATUM) -> dict[str, float]:
    """Baseline decode latency over SNAKE's, per baseline (SNAKE Sec. 6.3: 2.90x, 2.33x, 3.00x on average)."""
    ours = decode_step_s(ops, SNAKE, t)
    return {d.name: decode_step_s(ops, d, t) / ours for d in BASELINE_DESIGNS}
