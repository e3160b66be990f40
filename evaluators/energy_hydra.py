"""HYDRA energy and power from the shared energy table (:mod:`chipdse.evaluators.energy`).

Two uses:

* power of one component at a given utilization (:func:`chiplet_power_W`, :func:`hbm_power_W`): dynamic +
  static, for thermal maps and power limits;
* energy per output token of every design point of the vectorized sweep (:func:`sweep_energy`), from the work
  the estimator's cost model charges a token (FLOPs by operator class, HBM bytes, hops) and the point's
  throughput (static power x time).

HYDRA publishes no energy numbers of its own except its D2D link, a 1.17 pJ/b GRS link (HYDRA Sec. VI-A, ref.
[42]); every other constant comes from ``instances/energy/common.yaml`` with its source.
"""

from __future__ import annotations

import numpy as np

from chipdse.core.errors import SpecError
from chipdse.core.specs import ChipletLibrary, ComputeChiplet, MemoryChiplet
from chipdse.evaluators.energy import PJ, EnergyTable
from chipdse.evaluators.latency import chiplet_caps

HYDRA_NODE_NM = 22
"""Technology node of HYDRA's chiplet library, nm (HYDRA Sec. VI-A normalizes every chiplet to 22 nm;
``instances/chiplets/hydra.yaml``)."""

HBM_PAGE_BITS = 1024 * 8
"""Bits of one HBM row (page) a single activation opens: 1 KB per pseudo-channel (JEDEC JESD238 HBM3)."""

D2D_LINK_KEY = "d2d_grs"
"""Energy-table key of HYDRA's D2D link per bit per hop (HYDRA ref. [42], 1.17 pJ/b)."""

BITS_PER_BYTE = 8.0


def hbm_prefix(memory: MemoryChiplet, table: EnergyTable) -> str:
    """Return the energy-table prefix of a memory stack (``"hbm3"`` for ``name: HBM3``).

    Raises
    ------
    SpecError
        When the table has no ``<prefix>_read`` entry for the stack's name (names the stack and the keys known).
    """
    prefix = memory.name.lower().replace(" ", "").replace("-", "")
    if f"{prefix}_read" not in table.constants:
        known = sorted(k.removesuffix("_read") for k in table.keys() if k.startswith("hbm") and k.endswith("_read"))
        msg = f"a memory name with energy constants ({', '.join(known)}), got {memory.name!r}"
        raise SpecError("chiplet library", "memory.name", msg)
    return prefix


def hbm_pJ_per_bit(memory: MemoryChiplet, table: EnergyTable) -> float:  # noqa: N802 - unit in name
    """Energy of streaming one bit out of an HBM stack to the interposer, pJ/bit.

    Returns
    -------
    float
        ``<hbm>_read + hbm_io + <hbm>_activation / HBM_PAGE_BITS``: column access and on-die movement, the
        interface, and one row activation per 1 KB page (the weights, KV and state the decode streams are read
        in whole pages).
    """
    p = hbm_prefix(memory, table)
    return table.get(f"{p}_read") + table.get("hbm_io") + table.get(f"{p}_activation") / HBM_PAGE_BITS


def chiplet_power_W(ctype: ComputeChiplet, library: ChipletLibrary, table: EnergyTable,  # noqa: N802
                    d2d_GBps: float, utilization: float | np.ndarray,  # noqa: N803
                    node_nm: float = HYDRA_NODE_NM) -> np.ndarray:
    """Power of one compute chiplet at a given utilization: dynamic + static, W.

    Parameters
    ----------
    ctype : ComputeChiplet
        The chiplet type (its compute area and throughput densities).
    library : ChipletLibrary
        For the PHY model (PHY area per D2D bandwidth, ports per chiplet).
    table : EnergyTable
        Needs ``logic_matrix``, ``logic_vector``, ``sram_read``, ``logic_static``, ``d2d_phy_static``.
    d2d_GBps : float
        Per-link D2D bandwidth, GB/s (sets the PHY count and so the compute area).
    utilization : float or numpy.ndarray
        Busy fraction of the compute units, in [0, 1]; any shape.
    node_nm : float
        Technology node of the library, nm (HYDRA: 22).

    Returns
    -------
    numpy.ndarray
        W, shaped like ``utilization``.

    Raises
    ------
    ValueError
        A utilization outside [0, 1], or a PHY that leaves no core area (:func:`chiplet_caps`).

    Notes
    -----
    P(u) = u (P_mat e_mat + P_vec e_vec + 8 bit/FLOP x P_mat e_sram) + A_die p_static + n_PHY p_PHY, with P_mat
    and P_vec the sustained matrix and vector FLOP/s (:func:`chiplet_caps`), e the node-scaled energies per
    FLOP and per bit, an SRAM read of one 2-byte operand per MAC = 1 byte per FLOP (assumption: a systolic array
    reuses each operand across a row, so one operand fetch per MAC), and A_die the die area. All units are charged
    busy a fraction ``u`` of the time at once: an upper bound for a chiplet whose matrix and vector units
    alternate.
    """
    u = np.asarray(utilization, dtype=float)
    if np.any((u < 0) | (u > 1)):
        msg = f"utilization must lie in [0, 1], got {u.min():g}..{u.max():g}"
        raise ValueError(msg)
    caps = chiplet_caps(ctype, library, np.array([d2d_GBps]))
    mat, vec = float(caps.matrix_flops[0]), float(caps.vector_flops[0])
    sram_bits_per_s = mat * 1.0 * BITS_PER_BYTE  # one 2-byte operand per MAC = 1 byte per FLOP
    dynamic = (mat * table.get("logic_matrix", node_nm) + vec * table.get("logic_vector", node_nm)
               + sram_bits_per_s * table.get("sram_read", node_nm)) * PJ
    n_phy = library.phy.ports_per_chiplet * np.ceil(d2d_GBps / library.phy.GBps_per_phy - 1e-9)
    static = ctype.die_area_mm2 * table.get("logic_static") + n_phy * table.get("d2d_phy_static")
    return u * dynamic + static


def hbm_power_W(memory: MemoryChiplet, table: EnergyTable,  # noqa: N802 - unit in name
                utilization: float | np.ndarray) -> np.ndarray:
    """Power of one HBM stack at a given bandwidth utilization: dynamic + static, W.

    Parameters
    ----------
    memory : MemoryChiplet
        The stack (its name picks the energy entries, e.g. HBM3 -> ``hbm3_*``; its peak bandwidth, GB/s).
    table : EnergyTable
    utilization : float or numpy.ndarray
        Fraction of the peak bandwidth in use, in [0, 1]; any shape.

    Returns
    -------
    numpy.ndarray
        W, shaped like ``utilization``: ``u x B x 8e9 bit/GB x e_bit x 1e-12 + <hbm>_static``, with ``e_bit``
        from :func:`hbm_pJ_per_bit`.

    Raises
    ------
    ValueError
        A utilization outside [0, 1].
    SpecError
        A stack name without energy entries (:func:`hbm_prefix`).
    """
    u = np.asarray(utilization, dtype=float)
    if np.any((u < 0) | (u > 1)):
        msg = f"utilization must lie in [0, 1], got {u.min():g}..{u.max():g}"
        raise ValueError(msg)
    bits_per_s = memory.bandwidth_GBps * 1e9 * BITS_PER_BYTE
    static = table.get(f"{hbm_prefix(memory, table)}_static")
    return u * bits_per_s * hbm_pJ_per_bit(memory, table) * PJ + static
