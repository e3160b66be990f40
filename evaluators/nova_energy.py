"""Energy per action of the NOVA system (H100 + five HBM4 cubes, with or without near-memory processing).

Every byte an operator reads travels one of four paths from the DRAM cells to the unit that computes on it; each
path has an energy per bit (row activation amortized over the bits it delivers, plus the column access and the
wires) and its processing unit an energy per FLOP:

==========  ============================================================  ===================================
path        per bit                                                       per FLOP
==========  ============================================================  ===================================
gpu         ``gpu_h100_hbm`` (activation, on-die movement and I/O at the   ``gpu_h100_flop``
            GPU's row locality) + ``nova_gpu_onchip`` (PHY -> L2 -> SM)
tier2       ``hbm4_activation`` / 8192 (a whole 1 KB page per              ``logic_matrix`` at 4 nm (NOVA's
            activation) + ``hbm4_read`` (column, data path, TSVs) +         base die, Sec. VI-A)
            ``base_die_transfer``; NOVA's cells activate at
            ``nova_peri_activation``
tier1       ``nova_peri_activation`` x 8 / 8192 (all-bank activation:      ``logic_matrix`` at 7 nm (NOVA's
            "eight times more banks compared to the base-die", Sec. VI-C)   peri-die), ``logic_vector`` at 7 nm
            + ``nova_bank_read``                                            for the SSM state update
in_die      ``hbm4_activation`` x 8 x 8 / 8192 (all-bank, and 256-bit      ``nova_in_die_flop`` (DRAM process)
            granularity against NOVA's 2 Kb: eight times the activation
            commands, Sec. VI-C / VI-E) + ``nova_bank_read``
==========  ============================================================  ===================================

Static power: the GPU's idle power and each cube's background power (``hbm4_static``; ``nova_cube_static`` for
NOVA's 4F^2 + POC cube), charged for the whole time of a step. The near-memory units' own leakage is not modelled.

Energies are in joules; the constants come from ``instances/energy/common.yaml`` and ``nova.yaml`` through
:func:`chipdse.evaluators.energy.load_energy_table` (their sources there).

References
----------
NOVA Sec. IV-A (POC: IDD0 -10%, IDD5 -30%), Sec. VI-A (14 nm synthesis scaled to 7 nm peri-die and 4 nm base-die;
DRAM energy for activation, read / write and data movement), Sec. VI-C (Fig. 11(c): all-bank activation, PIMBA's
256-bit granularity), Sec. VI-E (in-die only: 256-bit activations; NOVA's Tier-2-only mode when energy is
prioritized).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from chipdse.evaluators.energy import PJ, EnergyTable, load_energy_table

ROW_BITS = 8192
"""Bits of one activated DRAM page (1 KB per pseudo-channel, JEDEC HBM3 / HBM4; common.yaml hbm*_activation)."""
TIER1_BANK_RATIO = 8.0
"""Row activations per bit of NOVA's peri-die (all-bank) over its base-die (per-bank) reads: "the peri-die, which
performs highly parallel bank-level operations, activates eight times more banks compared to the base-die" (NOVA
Sec. VI-C), read here as eight times the activation energy per bit delivered."""
IN_DIE_GRANULARITY_RATIO = 8.0
"""Activation commands of a 256-bit-granularity in-die PIM (AttAcc, PIMBA) over NOVA's 2-Kb peri-die: 2048 / 256
(NOVA Sec. VI-C: PIMBA "generates an excessive number of DRAM activation commands"; Sec. VI-E: in-die MoE reads at
256b)."""
NODES_NM = {"tier1": 7, "tier2": 4}
"""Logic node of NOVA's peri-die and base-die processing units, nm (NOVA Sec. VI-A)."""
PATHS = ("gpu", "tier1", "tier2", "in_die")
"""Data paths of the NOVA system (module docstring)."""
PARTS = ("gpu_compute", "gpu_dram", "nmp_activation", "nmp_access", "nmp_compute", "static")
"""Energy parts of a step: the GPU's FLOPs and its DRAM traffic; the near-memory units' row activations, column
accesses and wires, and FLOPs; static power over the step."""


@dataclass(frozen=True)
class PathEnergy:
    """Energy per action of one data path: row activation and access per bit (pJ/bit), FLOPs (pJ/FLOP)."""

    activation_pJ_per_bit: float
    access_pJ_per_bit: float
    flop_pJ: float
    vector_flop_pJ: float

    def op_J(self, flops: float, nbytes: float, vector: bool = False) -> tuple[float, float, float]:
        """Return (activation, access, compute) energy of an operator on this path, J.

        ``flops`` in FLOP, ``nbytes`` in bytes read or written; ``vector`` charges element-wise FLOPs (the SSM
        state update) at the vector-unit energy.
        """
        bits = 8.0 * nbytes
        return (bits * self.activation_pJ_per_bit * PJ, bits * self.access_pJ_per_bit * PJ,
                flops * (self.vector_flop_pJ if vector else self.flop_pJ) * PJ)


@dataclass(frozen=True)
class NovaEnergy:
    """The NOVA system's energy constants by path, and static power.

    Attributes
    ----------
    paths : dict[tuple[str, bool], PathEnergy]
        Keyed by (path, ``poc``): ``gpu``, ``tier1``, ``tier2``, ``in_die`` through NOVA's cells (``poc`` True)
        and through conventional HBM4 cells.
    gpu_static_W : float
        One H100's idle power, W.
    cube_static_W, nova_cube_static_W : float
        Background power of a conventional HBM4 cube and of NOVA's cube, W.
    """

    paths: dict[tuple[str, bool], PathEnergy]
    gpu_static_W: float
    cube_static_W: float
    nova_cube_static_W: float

    def path(self, name: str, poc: bool = False) -> PathEnergy:
        """The path ``name`` (one of :data:`PATHS`) through NOVA's cells (``poc``) or conventional ones."""
        return self.paths[name, poc]


def nova_energy_from(table: EnergyTable) -> NovaEnergy:
    """Build the NOVA system's per-path energies from an energy table holding the common and nova scopes.

    Raises
    ------
    SpecError
        A constant missing from the table (names the key and the files read).
    """
    g = table.get
    gpu = PathEnergy(0.0, g("gpu_h100_hbm") + g("nova_gpu_onchip"), g("gpu_h100_flop"), g("gpu_h100_flop"))
    paths: dict[tuple[str, bool], PathEnergy] = {}
    for poc in (False, True):
        act = g("nova_peri_activation") if poc else g("hbm4_activation")
        per_page = act / ROW_BITS
        paths["gpu", poc] = gpu
        paths["tier2", poc] = PathEnergy(per_page, g("hbm4_read") + g("base_die_transfer"),
                                         g("logic_matrix", NODES_NM["tier2"]), g("logic_vector", NODES_NM["tier2"]))
        paths["tier1", poc] = PathEnergy(per_page * TIER1_BANK_RATIO, g("nova_bank_read"),
                                         g("logic_matrix", NODES_NM["tier1"]), g("logic_vector", NODES_NM["tier1"]))
        paths["in_die", poc] = PathEnergy(per_page * TIER1_BANK_RATIO * IN_DIE_GRANULARITY_RATIO,
                                          g("nova_bank_read"), g("nova_in_die_flop"), g("nova_in_die_flop"))
    return NovaEnergy(paths, g("gpu_h100_static"), g("hbm4_static"), g("nova_cube_static"))


@functools.lru_cache(maxsize=1)
def nova_energy() -> NovaEnergy:
    """The NOVA system's energies from ``instances/energy/common.yaml`` and ``nova.yaml`` (loaded once)."""
    return nova_energy_from(load_energy_table("common", "nova"))
