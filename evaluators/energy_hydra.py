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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from chipdse.core.design_space import DesignPoints
from chipdse.core.errors import InfeasibleDesignError, SpecError
from chipdse.core.specs import ChipletLibrary, ComputeChiplet, EnergySettings, MemoryChiplet
from chipdse.evaluators.energy import PJ, EnergyBreakdown, EnergyTable, scenario_energy_table
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.latency import chiplet_caps
from chipdse.evaluators.limits import mark_infeasible
from chipdse.evaluators.sim_results import SimResult
from chipdse.evaluators.thermal_stack import HBM_PREFIX

HYDRA_NODE_NM = 22
"""Technology node of HYDRA's chiplet library, nm (HYDRA Sec. VI-A normalizes every chiplet to 22 nm;
``instances/chiplets/hydra.yaml``)."""

HBM_PAGE_BITS = 1024 * 8
"""Bits of one HBM row (page) a single activation opens: 1 KB per pseudo-channel (JEDEC JESD238 HBM3)."""

D2D_LINK_KEY = "d2d_grs"
"""Energy-table key of HYDRA's D2D link per bit per hop (HYDRA ref. [42], 1.17 pJ/b)."""

BITS_PER_BYTE = 8.0

SRAM_PASSES = 2.0
"""SRAM accesses per byte brought to a chiplet: written on arrival, read once by the compute units (assumption:
the staging-buffer rule; operand re-reads inside a systolic array stay in its registers)."""


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
    P(u) = u (P_mat e_mat + P_vec e_vec + 2 x 8 bit/B x n_ports B_D2D e_sram) + A_die p_static + n_PHY p_PHY,
    with P_mat and P_vec the sustained matrix and vector FLOP/s (:func:`chiplet_caps`), e the node-scaled energies
    per FLOP and per bit, n_ports B_D2D the data arriving over the chiplet's links (each byte written into SRAM
    and read once by the compute units, the rule :func:`sweep_energy` charges per byte) and A_die the die area.
    All units and links are charged busy a fraction ``u`` of the time at once: an upper bound for a chiplet whose
    matrix and vector units alternate.
    """
    u = np.asarray(utilization, dtype=float)
    if np.any((u < 0) | (u > 1)):
        msg = f"utilization must lie in [0, 1], got {u.min():g}..{u.max():g}"
        raise ValueError(msg)
    caps = chiplet_caps(ctype, library, np.array([d2d_GBps]))
    mat, vec = float(caps.matrix_flops[0]), float(caps.vector_flops[0])
    sram_bits_per_s = SRAM_PASSES * BITS_PER_BYTE * library.phy.ports_per_chiplet * d2d_GBps * 1e9
    dynamic = (mat * table.get("logic_matrix", node_nm) + vec * table.get("logic_vector", node_nm)
               + sram_bits_per_s * table.get("sram_read", node_nm)) * PJ
    return u * dynamic + chiplet_static_W(ctype, library, table, d2d_GBps)


def chiplet_static_W(ctype: ComputeChiplet, library: ChipletLibrary, table: EnergyTable,  # noqa: N802
                     d2d_GBps: float | np.ndarray) -> np.ndarray:  # noqa: N803
    """Static power of one compute chiplet: die leakage plus its idle D2D PHY macros, W.

    Parameters
    ----------
    ctype : ComputeChiplet
    library : ChipletLibrary
        PHY model: ports per chiplet and GB/s per PHY macro.
    table : EnergyTable
        Needs ``logic_static`` (W/mm^2) and ``d2d_phy_static`` (W per PHY).
    d2d_GBps : float or numpy.ndarray
        Per-link bandwidth(s), GB/s.

    Returns
    -------
    numpy.ndarray
        ``A_die x logic_static + ports x ceil(B / B_PHY) x d2d_phy_static``, shaped like ``d2d_GBps``.
    """
    n_phy = library.phy.ports_per_chiplet * np.ceil(np.asarray(d2d_GBps, dtype=float) / library.phy.GBps_per_phy
                                                    - 1e-9)
    return ctype.die_area_mm2 * table.get("logic_static") + n_phy * table.get("d2d_phy_static")


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


ENERGY_PARTS = ("compute", "sram", "hbm", "d2d", "static")
"""Parts of a HYDRA design's energy per output token, in breakdown order."""

ENERGY_COLUMNS = (*(f"energy_{p}_J_per_token" for p in ENERGY_PARTS), "energy_J_per_token", "tokens_per_J",
                  "power_W", "static_power_W", "d2d_hops_mean", "chiplet_peak_W", "chiplet_peak_W_per_mm2")
"""Columns :func:`sweep_energy` adds to the estimator's table: J per output token by part and in total, output
tokens per joule, average power at the sustainable throughput and its static share (W), the bytes-weighted mean
D2D hops of the HBM traffic, and the most power-hungry compute chiplet's full-utilization power (W) and power
density (W/mm^2)."""


def request_work(screen: Screen, pts: DesignPoints, df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Work one request costs at every point: FLOPs by operator class, HBM bytes and byte-hops on the NoI.

    Parameters
    ----------
    screen : Screen
        The estimator that scored ``df`` (its cost tables, hop model and decode concurrency rule).
    pts : DesignPoints
        The ``n`` points scored.
    df : pandas.DataFrame
        ``screen.score(pts)`` (columns ``hbm_attention``, ``hbm_mamba``, ``batch_eff``, ``r_mem``,
        ``decode_stages``).

    Returns
    -------
    dict of numpy.ndarray, shape (n,)
        ``matrix_flop`` and ``vector_flop`` (prefill of the mean prompt plus E[L_d] decode steps), ``hbm_bytes``
        (the prefill's and the request's share of E[L_d] / k decode iterations of micro-batch k, weights shared by
        the k), ``byte_hops`` (each type's bytes x its mean hops to its HBM traffic) and ``k``.

    Notes
    -----
    The estimator's own cost model (HYDRA Eqs. 3-5 inputs): :meth:`Screen.hop_weights` gives the HBM bytes each
    chiplet type reads per request, :meth:`Screen.geometry` each type's mean hops (HYDRA Eq. 3's d_Man), at the
    micro-batch k of :meth:`Screen.decode_concurrency`. Every decode iteration is charged k requests (static
    batches that shrink as requests finish read the weights for fewer: a small under-count of HBM bytes).
    """
    stacks = df[["hbm_attention", "hbm_mamba"]].to_numpy()
    b_eff = df["batch_eff"].to_numpy()
    _, k = screen.serving.decode_concurrency(b_eff, np.maximum(df["r_mem"].to_numpy(), 1),
                                             df["decode_stages"].to_numpy())
    k = np.maximum(k, 1.0).astype(np.int64)
    hops, _ = screen.geometry(pts, stacks, k)
    type_bytes = screen.hop_weights(pts.types, pts.counts, stacks, k).sum(axis=2)
    n = len(df)
    mean_ld = screen.mean_ld
    pre, dec = screen.pre_costs, screen.dec_costs
    return {
        "matrix_flop": np.full(n, pre.mat0.sum() + mean_ld * dec.mat1.sum()),
        "vector_flop": np.full(n, pre.vec0.sum() + mean_ld * dec.vec1.sum()),
        "hbm_bytes": type_bytes.sum(axis=1),
        "byte_hops": (type_bytes * hops).sum(axis=1),
        "k": k.astype(float),
    }


def static_power_W(screen: Screen, pts: DesignPoints, table: EnergyTable) -> np.ndarray:  # noqa: N802
    """Static power of every point's package: its compute chiplets (:func:`chiplet_static_W`) and HBM stacks, W.

    Returns
    -------
    numpy.ndarray, shape (n,)
        ``sum_t count_t x chiplet_static_W(t, B_D2D) + n_HBM x <hbm>_static``.
    """
    lib = screen.sc.library
    d2d = pts.d2d_GBps.astype(float)
    total = pts.n_hbm * table.get(f"{hbm_prefix(lib.memory, table)}_static")
    for i, name in enumerate(pts.types):
        total = total + pts.counts[:, i] * chiplet_static_W(lib.by_name(name), lib, table, d2d)
    return np.asarray(total, dtype=float)


def chiplet_peak_power(screen: Screen, pts: DesignPoints, table: EnergyTable,
                       node_nm: float = HYDRA_NODE_NM) -> tuple[np.ndarray, np.ndarray]:
    """The most power-hungry compute chiplet of every point at full utilization (:func:`chiplet_power_W`).

    Returns
    -------
    (watts, watts_per_mm2) : tuple of numpy.ndarray, shape (n,)
        Its power, W, and its power over its die area, W/mm^2 (each the maximum over the types present).
    """
    lib = screen.sc.library
    uniq, inv = np.unique(pts.d2d_GBps.astype(float), return_inverse=True)
    inv = np.asarray(inv).ravel()
    peak_w = np.zeros(len(pts))
    peak_d = np.zeros(len(pts))
    for i, name in enumerate(pts.types):
        c = lib.by_name(name)
        watts = np.array([float(chiplet_power_W(c, lib, table, float(b), 1.0, node_nm)) for b in uniq])[inv]
        present = pts.counts[:, i] > 0
        peak_w = np.where(present, np.maximum(peak_w, watts), peak_w)
        peak_d = np.where(present, np.maximum(peak_d, watts / c.die_area_mm2), peak_d)
    return peak_w, peak_d


def sweep_energy(screen: Screen, pts: DesignPoints, df: pd.DataFrame, table: EnergyTable,
                 node_nm: float = HYDRA_NODE_NM) -> pd.DataFrame:
    """Energy per output token, average power and tokens per joule of every scored point.

    Parameters
    ----------
    screen : Screen
        The estimator that scored ``df``.
    pts : DesignPoints
        The ``n`` points, in ``df``'s row order.
    df : pandas.DataFrame
        ``screen.score(pts)``.
    table : EnergyTable
        The energy constants (``load_energy_table()``).
    node_nm : float
        Node of the chiplet library, nm (HYDRA: 22).

    Returns
    -------
    pandas.DataFrame
        ``ENERGY_COLUMNS``, one row per point (``df``'s index); NaN energy where the point sustains nothing
        (capacity 0: the weights do not fit).

    Notes
    -----
    At the point's sustainable throughput (``capacity_rps``, the ``throughput_tps`` column), per request:
    E_compute = F_mat e_mat + F_vec e_vec; E_SRAM = 2 x 8 V e_SRAM (each HBM byte written into and read from a
    chiplet's SRAM once); E_HBM = 8 V e_HBM (:func:`hbm_pJ_per_bit`); E_D2D = 8 (sum_t V_t h_t) (e_link +
    e_router) (HYDRA's 1.17 pJ/b GRS link per hop, ref. [42]); E_static = P_static / capacity. J per token =
    E / E[L_d]; power = E_dynamic x capacity + P_static; tokens per J = 1 / (J per token).
    """
    work = request_work(screen, pts, df)
    lib = screen.sc.library
    bits = work["hbm_bytes"] * BITS_PER_BYTE
    per_request = {
        "compute": (work["matrix_flop"] * table.get("logic_matrix", node_nm)
                    + work["vector_flop"] * table.get("logic_vector", node_nm)) * PJ,
        "sram": SRAM_PASSES * bits * table.get("sram_read", node_nm) * PJ,
        "hbm": bits * hbm_pJ_per_bit(lib.memory, table) * PJ,
        "d2d": work["byte_hops"] * BITS_PER_BYTE * (table.get(D2D_LINK_KEY)
                                                     + table.get("noi_router", node_nm)) * PJ,
    }
    static_w = static_power_W(screen, pts, table)
    cap = df["capacity_rps"].to_numpy(dtype=float)
    ok = cap > 0
    safe_cap = np.where(ok, cap, 1.0)
    per_request["static"] = static_w / safe_cap
    mean_ld = screen.mean_ld
    out = pd.DataFrame(index=df.index)
    for part in ENERGY_PARTS:
        out[f"energy_{part}_J_per_token"] = np.where(ok, per_request[part] / mean_ld, np.nan)
    total = sum(per_request[p] for p in ENERGY_PARTS) / mean_ld
    out["energy_J_per_token"] = np.where(ok, total, np.nan)
    out["tokens_per_J"] = np.where(ok, 1.0 / total, np.nan)
    dynamic = sum(per_request[p] for p in ENERGY_PARTS if p != "static")
    out["power_W"] = np.where(ok, dynamic * cap + static_w, np.nan)
    out["static_power_W"] = static_w
    out["d2d_hops_mean"] = np.divide(work["byte_hops"], work["hbm_bytes"], out=np.zeros(len(df)),
                                     where=work["hbm_bytes"] > 0)
    out["chiplet_peak_W"], out["chiplet_peak_W_per_mm2"] = chiplet_peak_power(screen, pts, table, node_nm)
    return out


POWER_LIMITS = (("package_max_W", "power_W", "package power", "W"),
                ("chiplet_max_W", "chiplet_peak_W", "chiplet power", "W"),
                ("chiplet_max_W_per_mm2", "chiplet_peak_W_per_mm2", "chiplet power density", "W/mm2"))
"""(``energy`` field of the scenario, column it limits, what it is, unit) of each power limit."""


def apply_power_limits(df: pd.DataFrame, limits: EnergySettings) -> pd.DataFrame:
    """Mark the points that break a power limit infeasible, with the limit as their reason.

    Parameters
    ----------
    df : pandas.DataFrame
        A scored table with :data:`ENERGY_COLUMNS` (and ``feasible``, ``stable``, ``ttft_s``, ``reason``).
    limits : EnergySettings
        The scenario's ``energy`` section; limits left at None are not checked.

    Returns
    -------
    pandas.DataFrame
        ``df`` with a ``power_ok`` column (True where every limit holds; NaN power counts as holding) and, where a
        limit fails on a point that fits its memory: ``feasible`` and ``stable`` False, ``ttft_s`` NaN and
        ``reason`` naming the first limit broken (``"power: package power above energy.package_max_W = 700 W"``).
        Points that do not fit their memory keep their reason.
    """
    out = df.copy()
    ok = np.ones(len(out), dtype=bool)
    reason = np.full(len(out), "", dtype=object)
    for fld, col, what, unit in POWER_LIMITS:
        lim = getattr(limits, fld)
        if lim is None:
            continue
        over = out[col].to_numpy(dtype=float) > lim
        reason = np.where(over & (reason == ""), f"power: {what} above energy.{fld} = {lim:g} {unit}", reason)
        ok &= ~over
    out["power_ok"] = ok
    mark_infeasible(out, ~ok & out["feasible"].to_numpy(dtype=bool), reason)
    return out


def check_power_limits(df: pd.DataFrame, limits: EnergySettings, source: str) -> None:
    """Refuse a set of power limits no design meets.

    Parameters
    ----------
    df : pandas.DataFrame
        The whole scored space after :func:`apply_power_limits` (column ``power_ok``; ``reason`` tells the points
        that do not fit their memory).
    limits : EnergySettings
    source : str
        The scenario file, for the message.

    Raises
    ------
    InfeasibleDesignError
        One line naming the limit (``<scenario>: energy.package_max_W: ...``) and the lowest value of its
        quantity among the points that fit their memory, when no such point meets every limit.
    """
    if "power_ok" not in df:
        return
    fits_memory = df["feasible"].astype(bool) | df["reason"].astype(str).str.startswith("power:")
    pool = df[fits_memory]
    if pool.empty or pool["power_ok"].any():
        return  # no point fits its memory (the estimator's own error), or some point meets the limits
    for fld, col, what, unit in POWER_LIMITS:
        lim = getattr(limits, fld)
        if lim is None:
            continue
        low = float(pool[col].min())
        if not low <= lim:
            msg = (f"{source}: energy.{fld}: no design meets the {what} limit of {lim:g} {unit}; the lowest {what} "
                   f"found is {low:.4g} {unit}")
            raise InfeasibleDesignError(msg, source, f"energy.{fld}")
    msg = (f"{source}: energy: no design meets all power limits at once ("
           + ", ".join(f"{f} = {getattr(limits, f):g}" for f, *_ in POWER_LIMITS if getattr(limits, f) is not None)
           + "); each is met by some design: relax one")
    raise InfeasibleDesignError(msg, source, "energy")


def score_with_energy(screen: Screen, pts: DesignPoints, table: EnergyTable | None = None) -> pd.DataFrame:
    """Score points with the estimator, add their energy (:func:`sweep_energy`) and apply the scenario's power
    limits (:func:`apply_power_limits`).

    Parameters
    ----------
    screen : Screen
    pts : DesignPoints
    table : EnergyTable, optional
        Default: the scenario's (:func:`scenario_energy_table`).

    Returns
    -------
    pandas.DataFrame
        ``screen.score(pts)`` with :data:`ENERGY_COLUMNS` and ``power_ok``.
    """
    table = table or scenario_energy_table(screen.sc)
    df = screen.score(pts)
    df = pd.concat([df, sweep_energy(screen, pts, df, table)], axis=1)
    return apply_power_limits(df, screen.sc.spec.energy)


def energy_at_throughput(energy_J_per_token: float, energy_static_J_per_token: float,  # noqa: N803
                         static_power_W: float, throughput_tps: float) -> float:  # noqa: N803
    """J per output token of a scored design when it serves ``throughput_tps`` instead of its screen throughput.

    Parameters
    ----------
    energy_J_per_token, energy_static_J_per_token : float
        The design's J/token at its screen throughput and the static part of it (:func:`sweep_energy`).
    static_power_W : float
        The design's static power, W.
    throughput_tps : float
        Output tokens/s actually served (e.g. a placed layout's re-scored throughput), > 0.

    Returns
    -------
    float
        Dynamic J/token (unchanged: the same work per token) + static W / throughput; NaN when the throughput is
        not positive or the design has no energy.
    """
    if not throughput_tps > 0:
        return float("nan")
    return energy_J_per_token - energy_static_J_per_token + static_power_W / throughput_tps


@dataclass(frozen=True)
class SimEnergy:
    """Energy of one simulated run, from its busy fractions (:func:`sim_energy`).

    Attributes
    ----------
    per_chiplet_J : dict[str, float]
        Per chiplet id (``"Ad@7"``): its power at its busy fraction (:func:`chiplet_power_W`) x the window, J.
    per_link_J : dict[tuple[int, int], float]
        Per directed mesh link: bytes moved (busy fraction x window x link bandwidth) x 8 x (link + router
        energy per bit), J.
    per_hbm_J : dict[int, float]
        Per HBM stack cell: :func:`hbm_power_W` at its port's busy fraction x the window, J.
    breakdown : EnergyBreakdown
        ``chiplets``, ``links`` and ``hbm`` totals, J.
    joules_per_token : float
        Total over the output tokens of the window (NaN without tokens).
    """

    per_chiplet_J: dict[str, float]
    per_link_J: dict[tuple[int, int], float]
    per_hbm_J: dict[int, float]
    breakdown: EnergyBreakdown
    joules_per_token: float


def sim_energy(result: SimResult, library: ChipletLibrary, table: EnergyTable, d2d_GBps: float,
               node_nm: float = HYDRA_NODE_NM) -> SimEnergy:
    """Per-chiplet, per-link and per-stack energy of a simulated run of a HYDRA design.

    Parameters
    ----------
    result : SimResult
        The run (its ``chiplet_utilization``, ``link_utilization``, ``hbm_port_utilization``, ``duration_s``,
        ``output_tokens``); chiplet ids are ``"<type>@<cell>"``.
    library : ChipletLibrary
    table : EnergyTable
    d2d_GBps : float
        The design's per-link bandwidth, GB/s.
    node_nm : float
        Node of the library, nm.

    Returns
    -------
    SimEnergy

    Notes
    -----
    A chiplet busy a fraction u of the window draws :func:`chiplet_power_W` at u (static power all the time); a
    link busy a fraction u moved u T B bytes (the simulator's links serve at their bandwidth; their hop latency
    is counted as busy, so this is an upper bound on the bytes); a stack's port busy u draws :func:`hbm_power_W`
    at u.
    """
    dur = result.duration_s
    chip = {cid: float(chiplet_power_W(library.by_name(cid.split("@")[0]), library, table, d2d_GBps,
                                       min(max(u, 0.0), 1.0), node_nm)) * dur
            for cid, u in result.chiplet_utilization.items()}
    per_bit = table.get(D2D_LINK_KEY) + table.get("noi_router", node_nm)
    links = {k: u * dur * d2d_GBps * 1e9 * BITS_PER_BYTE * per_bit * PJ for k, u in result.link_utilization.items()}
    hbm = {k: float(hbm_power_W(library.memory, table, min(max(u, 0.0), 1.0))) * dur
           for k, u in result.hbm_port_utilization.items()}
    parts = EnergyBreakdown({"chiplets": sum(chip.values()), "links": sum(links.values()), "hbm": sum(hbm.values())})
    tokens = result.output_tokens
    return SimEnergy(chip, links, hbm, parts, parts.total_J / tokens if tokens > 0 else float("nan"))


def hydra_power_by_type_W(library: ChipletLibrary, types: list[str], table: EnergyTable,  # noqa: N802
                          d2d_GBps: float, utilization: float) -> dict[str, float]:  # noqa: N803
    """Return the power of one chiplet of each placement type, W: compute chiplets by name, HBM groups
    (``"hbm:<group>"``) as the library's stack.

    Parameters
    ----------
    library : ChipletLibrary
    types : list[str]
        Placement type names (compute chiplet names and ``hbm:`` groups).
    table : EnergyTable
        The shared energy table (``load_energy_table("common")``).
    d2d_GBps : float
        The design's D2D bandwidth per link, GB/s.
    utilization : float
        Busy fraction of compute units and of HBM bandwidth, in [0, 1] (1: full load, the thermal design point).

    Returns
    -------
    dict[str, float]
        W per chiplet (:func:`chiplet_power_W`,
        :func:`hbm_power_W`).

    Raises
    ------
    ValueError
        A type that is neither an HBM group nor a compute chiplet of the library, or a utilization outside [0, 1].
    """
    by_name = {c.name: c for c in library.compute}
    out: dict[str, float] = {}
    for t in types:
        if t.startswith(HBM_PREFIX):
            out[t] = float(hbm_power_W(library.memory, table, utilization))
        elif t in by_name:
            out[t] = float(chiplet_power_W(by_name[t], library, table, d2d_GBps, utilization))
        else:
            msg = f"a compute chiplet of the library ({sorted(by_name)}) or an hbm: group, got {t!r}"
            raise ValueError(msg)
    return out
