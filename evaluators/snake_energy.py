"""SNAKE energy and power: energy per decode step, tokens per joule and the logic-die power budget (issue 17).

The SNAKE paper states its logic-die power at peak performance per component (Sec. 6.2, Fig. 11: Matrix 38.5 W,
Vector 14.2 W, PE control 4.4 W, NoC 4.8 W, 61.8 W in all) under a 62 W thermal budget, and its energy results as
ratios (Sec. 6.3); it gives no energy per action. This module derives one per component from those powers over
the component's peak action rate at the paper's operating point (16 PUs x 4 cores of 64 x 64 PEs at 800 MHz):

==================  ===========================================================================================
action              energy
==================  ===========================================================================================
PE MAC              ``(P_matrix - P_sram_ref) / (PEs f)``: the Matrix unit's power less the boundary buffers'
                    reads at peak (``R + C`` FP16 operands per cycle per core on the 8 x 512 reference shape, at
                    common.yaml's 32 KB SRAM read energy node-scaled to 7 nm)
buffer read, bit    common.yaml ``sram_read`` at 7 nm (:func:`evaluators.energy.node_scale`)
vector op           ``P_vector / (cores x vector ops per cycle x f)``
PE-cycle clocked    ``P_control / (PEs f)``: every PE of the die's arrays while an operator computes, used or not
link bit per hop    ``P_noc / (directed links of the s x s mesh x link bandwidth)``
DRAM bit            common.yaml ``hbm3_activation`` over a 1 KB page read whole + snake.yaml
                    ``stratum_dram_column`` + common.yaml ``tsv_transfer`` (not part of the logic die)
==================  ===========================================================================================

So SNAKE at full activity draws the paper's four parts by construction (the calibration point); what the model
adds is how much of each a decode step uses, and what the baselines use for the same work: the fixed 48 x 48 and
8 x 288 arrays (same PE, 1 GHz) pay the same per action, their own buffer re-reads and the clocking of their idle
PEs; the MAC tree (one 16 x 16 x 16 tree per PU) pays the PE MAC plus snake.yaml ``mac_tree_broadcast`` per MAC and
re-reads an ``L x L`` block of each operand per cycle. The H100 pays common.yaml's per-FLOP and per-bit energies
and its idle power over its step time. As in the paper (Sec. 6.3, "this work focuses specifically on comparing the
energy consumption of the logic die"), the NMP designs are compared on logic-die energy; the DRAM part is reported
beside it.

The power budget follows the paper's argument (Sec. 6.2): the stack's thermal limit is shared by the logic die
and the DRAM, so the logic budget at DRAM bandwidth ``B`` is ``62 W + P_dram(24 TB/s) - P_dram(B)`` with
``P_dram(B) = 8 B e_dram``.

References
----------
SNAKE Sec. 6.2 (Fig. 11 power breakdown, 62 W budget, 24 vs 30.34 TB/s, 800 MHz), Sec. 6.3 (energy efficiency),
Sec. 6.1.3 (7 nm ASAP7, FP16), Sec. 3.2 and Fig. 4a (PE / buffer split); instances/energy/snake.yaml and
common.yaml for every constant and its source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from chipdse.evaluators.energy import PJ, EnergyBreakdown, EnergyTable, load_energy_table
from chipdse.evaluators.snake import SNAKE, SNAKE_FREQ_HZ, Design, GemmOp, SnakeError
from chipdse.evaluators.snake_pu import NmpTemplate, OpSchedule, schedule_op
from chipdse.evaluators.systolic import buffer_traffic_elements_array

SNAKE_NODE_NM = 7
"""Technology node of the SNAKE logic die, nm (SNAKE Sec. 6.1.3: ASAP7 predictive PDK)."""

OPERAND_BITS = 16
"""FP16 operands (SNAKE Sec. 6.1.3)."""

REFERENCE_SHAPE = (8, 512)
"""Logical shape at which the Matrix unit's peak buffer reads are counted (SNAKE's 8 x 512 choice, Sec. 3.2)."""

PAGE_BITS = 1024 * 8
"""Bits of one DRAM page (1 KB, common.yaml ``hbm3_activation``)."""

LOGIC_PARTS: tuple[str, ...] = ("mac", "sram", "vector", "control", "noc")
"""Energy parts spent on the logic die; ``dram`` (array and TSVs) and the GPU's parts are the others."""

PEAK_PARTS: dict[str, tuple[str, ...]] = {"matrix": ("mac", "sram"), "vector": ("vector",),
                                          "pe_control": ("control",), "noc": ("noc",)}
"""The paper's four power components (Fig. 11) as sums of this module's energy parts."""


@dataclass(frozen=True)
class SnakeEnergy:
    """Per-action energies (J) of the SNAKE logic die and its DRAM, and the power budget (W).

    Attributes
    ----------
    mac_J : float
        One FP16 MAC in a systolic PE.
    mac_tree_extra_J : float
        Added per MAC on the MAC tree (broadcast and reduction wiring).
    sram_bit_J : float
        One bit read from or written to a core's boundary buffer.
    vector_op_J : float
        One vector-core operation.
    control_pe_cycle_J : float
        One PE clocked for one cycle while its array computes.
    noc_bit_hop_J : float
        One bit over one inter-PU link.
    dram_bit_J : float
        One bit streamed from the DRAM stack to the logic die (activation, column, TSV).
    gpu_flop_J, gpu_bit_J, gpu_static_W : float
        H100: per FLOP, per HBM bit, idle power.
    budget_W : float
        Logic-die budget at the reference DRAM bandwidth (62 W at 24 TB/s).
    reference_TBps : float
        DRAM bandwidth of the budget's reference point, TB/s.
    peak_W : dict
        SNAKE's logic-die power at full activity per component of :data:`PEAK_PARTS`, W.
    """

    mac_J: float  # noqa: N815 - unit in name
    mac_tree_extra_J: float  # noqa: N815
    sram_bit_J: float  # noqa: N815
    vector_op_J: float  # noqa: N815
    control_pe_cycle_J: float  # noqa: N815
    noc_bit_hop_J: float  # noqa: N815
    dram_bit_J: float  # noqa: N815
    gpu_flop_J: float  # noqa: N815
    gpu_bit_J: float  # noqa: N815
    gpu_static_W: float  # noqa: N815
    budget_W: float  # noqa: N815
    reference_TBps: float  # noqa: N815
    peak_W: dict[str, float]  # noqa: N815

    def dram_power_W(self, dram_TBps: float) -> float:  # noqa: N802, N803
        """DRAM power when streaming at ``dram_TBps`` TB/s, W."""
        return dram_TBps * 1e12 * 8 * self.dram_bit_J

    def logic_budget_W(self, dram_TBps: float) -> float:  # noqa: N802, N803
        """Logic-die power budget at DRAM bandwidth ``dram_TBps``, W: the stack's thermal limit (the paper's 62 W
        plus the DRAM power at the reference bandwidth) less the DRAM power at ``dram_TBps`` (SNAKE Sec. 6.2)."""
        return self.budget_W + self.dram_power_W(self.reference_TBps) - self.dram_power_W(dram_TBps)


def mesh_links(t: NmpTemplate) -> int:
    """Directed inter-PU links of the ``s x s`` mesh: ``4 s (s - 1)`` (24 bidirectional links for s = 4)."""
    return 4 * t.mesh_side * (t.mesh_side - 1)


def design_pes(design: Design, t: NmpTemplate) -> int:
    """Multiply-accumulate units of ``design`` on the die: cores x the largest logical shape (systolic), or one
    ``L^3`` tree per PU (MAC tree)."""
    if design.kind == "mac_tree":
        return t.pus * design.lanes ** 3
    return t.cores * max(r * c for r, c in design.shapes)


def snake_table(overrides: Mapping[str, float] | None = None, source: str = "energy.table") -> EnergyTable:
    """The SNAKE study's energy constants: ``instances/energy/common.yaml`` and ``snake.yaml``, with a scenario's
    ``energy.table`` ``overrides`` (key -> value in the entry's unit; SpecError naming ``source`` for a bad one)."""
    return load_energy_table("common", "snake").with_values(overrides or {}, source)


def energy_model(t: NmpTemplate, table: EnergyTable | None = None) -> SnakeEnergy:
    """Per-action energies of the module table, derived at ``t`` from the SNAKE and common energy constants.

    Parameters
    ----------
    t : NmpTemplate
        The NMP template (PUs, cores, mesh side, link bandwidth, vector ops per cycle, DRAM bandwidth).
    table : EnergyTable, optional
        Default: ``load_energy_table("common", "snake")``.

    Returns
    -------
    SnakeEnergy

    Raises
    ------
    SnakeError
        When the buffer reads at peak would exceed the Matrix unit's power (no energy left for the MACs).
    chipdse.core.errors.SpecError
        A missing or malformed energy constant (:func:`evaluators.energy.load_energy_table`).
    """
    tab = table or snake_table()
    f = SNAKE_FREQ_HZ
    pes = design_pes(SNAKE, t)
    sram_bit = tab.get("sram_read", SNAKE_NODE_NM) * PJ
    r, c = REFERENCE_SHAPE
    sram_ref_W = t.cores * f * (r + c) * OPERAND_BITS * sram_bit  # noqa: N806
    matrix_W = tab.get("snake_matrix_power")  # noqa: N806
    if sram_ref_W >= matrix_W:
        msg = (f"buffer reads at peak ({sram_ref_W:.1f} W) exceed the Matrix unit's {matrix_W:g} W "
               "(snake_matrix_power): no energy is left for the PE MACs")
        raise SnakeError(msg)
    noc_capacity_bits = mesh_links(t) * t.link_GBps * 1e9 * 8
    dram_bit = (tab.get("hbm3_activation") / PAGE_BITS + tab.get("stratum_dram_column") + tab.get("tsv_transfer")) * PJ
    model = SnakeEnergy(
        mac_J=(matrix_W - sram_ref_W) / (pes * f),
        mac_tree_extra_J=tab.get("mac_tree_broadcast", SNAKE_NODE_NM) * PJ,
        sram_bit_J=sram_bit,
        vector_op_J=tab.get("snake_vector_power") / (t.cores * t.vector_ops_per_cycle * f),
        control_pe_cycle_J=tab.get("snake_pe_control_power") / (pes * f),
        noc_bit_hop_J=tab.get("snake_noc_power") / noc_capacity_bits,
        dram_bit_J=dram_bit,
        gpu_flop_J=tab.get("gpu_h100_flop") * PJ,
        gpu_bit_J=tab.get("gpu_h100_hbm") * PJ,
        gpu_static_W=tab.get("gpu_h100_static"),
        budget_W=tab.get("snake_logic_budget"),
        reference_TBps=t.dram_TBps,
        peak_W={},
    )
    return SnakeEnergy(**{**model.__dict__, "peak_W": peak_power_W(SNAKE, t, model)})


def _buffer_elements(s: OpSchedule, design: Design) -> float:
    """Elements one execution moves between the boundary buffers and the arrays (all units)."""
    m, k, n = s.dims
    if s.units == 0:
        return 0.0
    if design.kind == "mac_tree":
        lanes = design.lanes
        per_unit = m * k * math.ceil(n / lanes) + k * n * math.ceil(m / lanes) + m * n
    else:
        per_unit = int(buffer_traffic_elements_array(m, k, n, s.rows, s.cols, s.dataflow))
    return float(s.units * per_unit)


def op_energy(s: OpSchedule, design: Design, t: NmpTemplate, model: SnakeEnergy) -> EnergyBreakdown:
    """Energy of one execution of a scheduled operator on ``design``, J by part.

    Parameters
    ----------
    s : OpSchedule
        From :func:`evaluators.snake_pu.schedule_op` (per-unit GEMM ``dims``, ``units``, shape, dataflow, compute
        time and link bytes).
    design : Design
    t : NmpTemplate
    model : SnakeEnergy

    Returns
    -------
    EnergyBreakdown
        ``mac``: ``m k n`` MACs (plus the tree's wiring on the MAC tree); ``sram``: the buffer-array traffic of
        the chosen shape and dataflow (:func:`evaluators.systolic.buffer_traffic_elements_array`; the tree re-reads
        an ``L x L`` block of A per ``L`` columns and of B per ``L`` rows), FP16; ``vector``: the element-wise
        stage's ``nonlinear m n`` operations; ``control``: every PE of the design clocked for ``compute_s``;
        ``noc``: the collectives' link bytes; ``dram``: each unit's operands streamed once.
    """
    op = s.op
    m, k, n = s.dims
    macs = float(op.m) * op.k * op.n
    per_mac = model.mac_J + (model.mac_tree_extra_J if design.kind == "mac_tree" else 0.0)
    parts = {
        "mac": macs * per_mac,
        "sram": _buffer_elements(s, design) * OPERAND_BITS * model.sram_bit_J,
        "vector": op.nonlinear * op.m * op.n * model.vector_op_J,
        "control": design_pes(design, t) * design.freq_hz * s.compute_s * model.control_pe_cycle_J,
        "noc": s.link_bytes * 8 * model.noc_bit_hop_J,
        "dram": s.units * (m * k + k * n + m * n) * OPERAND_BITS * model.dram_bit_J,
    }
    return EnergyBreakdown(parts)


def step_energy(ops: list[GemmOp], design: Design, t: NmpTemplate, model: SnakeEnergy
                ) -> tuple[float, EnergyBreakdown]:
    """One decode step of ``ops`` on ``design``: its latency (s, as :func:`evaluators.snake_pu.decode_step_s`) and
    its energy by part (J, :func:`op_energy` times each operator's ``count``)."""
    time_s, parts = 0.0, EnergyBreakdown()
    for op in ops:
        s = schedule_op(op, design, t)
        time_s += s.time_s * op.count
        parts = parts + op_energy(s, design, t, model).scaled(op.count)
    return time_s, parts


def logic_J(e: EnergyBreakdown) -> float:  # noqa: N802 - unit in name
    """The logic-die share of an NMP design's energy (:data:`LOGIC_PARTS`), J."""
    return float(sum(e.parts_J.get(p, 0.0) for p in LOGIC_PARTS))


def gpu_step_energy(ops: list[GemmOp], step_s: float, model: SnakeEnergy) -> EnergyBreakdown:
    """Energy of one H100 decode step of ``ops`` lasting ``step_s`` seconds, J by part: ``compute`` (2 m k n FLOPs
    at common.yaml ``gpu_h100_flop``), ``hbm`` (the operator's ``m k + k n + m n`` BF16 elements at
    ``gpu_h100_hbm`` per bit) and ``static`` (``gpu_h100_static`` over the step)."""
    flops = sum(2.0 * o.m * o.k * o.n * o.count for o in ops)
    bits = sum((o.m * o.k + o.k * o.n + o.m * o.n) * OPERAND_BITS * o.count for o in ops)
    return EnergyBreakdown({"compute": flops * model.gpu_flop_J, "hbm": bits * model.gpu_bit_J,
                            "static": model.gpu_static_W * step_s})


def peak_power_W(design: Design, t: NmpTemplate, model: SnakeEnergy) -> dict[str, float]:  # noqa: N802
    """Logic-die power of ``design`` at full activity per component of :data:`PEAK_PARTS`, W: every PE doing one
    MAC per cycle on its reference traffic (``R + C`` operands per cycle per core; the tree ``2 L^2`` per PU),
    the vector units and the mesh's links busy (the links at their own rate, the rest at ``design.freq_hz``).
    SNAKE gives the paper's Fig. 11 by construction."""
    pes, f = design_pes(design, t), design.freq_hz
    if design.kind == "mac_tree":
        reads = t.pus * 2 * design.lanes ** 2
        per_mac = model.mac_J + model.mac_tree_extra_J
    else:
        r, c = REFERENCE_SHAPE if design.reconfigurable else max(design.shapes, key=lambda x: x[0] * x[1])
        reads, per_mac = t.cores * (r + c), model.mac_J
    return {"matrix": pes * f * per_mac + reads * f * OPERAND_BITS * model.sram_bit_J,
            "vector": t.cores * t.vector_ops_per_cycle * f * model.vector_op_J,
            "pe_control": pes * f * model.control_pe_cycle_J,
            "noc": mesh_links(t) * t.link_GBps * 1e9 * 8 * model.noc_bit_hop_J}


def step_power_W(e: EnergyBreakdown, step_s: float) -> dict[str, float]:  # noqa: N802
    """Average logic-die power of a step per component of :data:`PEAK_PARTS`, W (``energy / step_s``)."""
    if not step_s > 0:
        msg = f"step_s must be positive, got {step_s!r}"
        raise SnakeError(msg)
    return {name: sum(e.parts_J.get(p, 0.0) for p in parts) / step_s for name, parts in PEAK_PARTS.items()}


__all__ = [
    "LOGIC_PARTS",
    "PEAK_PARTS",
    "SNAKE_NODE_NM",
    "SnakeEnergy",
    "design_pes",
    "energy_model",
    "gpu_step_energy",
    "logic_J",
    "mesh_links",
    "op_energy",
    "peak_power_W",
    "step_energy",
    "step_power_W",
]
