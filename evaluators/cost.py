"""Package cost of a 2.5D chiplet package: known-good dies from wafer price and negative-binomial yield, the
stacks' price, the silicon interposer and organic substrate, bonding and assembly yield, and NRE amortized over
a volume (issue 33, item 3).

The model follows Chiplet Actuary (Y. Feng and K. Ma, DAC 2022, HYDRA ref. [44]) for a chip-last silicon
interposer package; its constants are ``instances/cost/common.yaml`` (each with its source or range), replaced
per scenario by ``cost.table``. With ``A`` a die's area, ``D0`` its defect density and ``c`` the clustering
parameter:

- die yield ``Y(A) = (1 + D0 A / c) ** -c`` (negative binomial; ``c -> inf`` is Poisson);
- dies per wafer ``N(A) = pi (d/2 - e)^2 / A' - pi (d - 2e) / sqrt(2 A')`` with ``A'`` the die plus its scribe
  lane, ``d`` the wafer diameter and ``e`` the edge loss;
- known-good die ``wafer_price / (N(A) Y(A))`` plus micro-bumps per mm2; a stack is bought known-good at its
  capacity x price per GB;
- with ``y_b = die_bonding_yield ** dies`` and ``y_s = substrate_bonding_yield``, the recurring cost is
  ``dies / (y_b y_s) + interposer / (Y_int y_b y_s) + substrate / y_s`` (a failed bond loses the dies already on
  the interposer and the interposer; the interposer is tested before the dies go on, so its own yield scrap
  does not lose dies);
- NRE: ``node_nre (fixed_share + area_share A / 300 mm2)`` per compute chiplet type used, the interposer's by its
  own node, divided by the volume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from chipdse.core.errors import InfeasibleDesignError, SpecError
from chipdse.core.paths import instances_dir
from chipdse.evaluators.energy import EnergyTable, read_constants
from chipdse.evaluators.limits import mark_infeasible

if TYPE_CHECKING:  # chipdse params reads the cost table without pandas, SciPy or the estimator (issue 34)
    import pandas as pd

    from chipdse.core.design_space import DesignPoints
    from chipdse.core.scenario import LoadedScenario
    from chipdse.evaluators.estimator import Screen

COST_UNITS = frozenset({"mm", "USD", "USD/wafer", "USD/mm2", "USD/GB", "defects/cm2", "packages", "-"})
"""Units a cost entry may carry."""

NRE_REFERENCE_MM2 = 300.0
"""Die area the NRE entries are quoted for, mm^2 (Chiplet Actuary's parameter.ini: "$/chip at 300 mm2")."""


def cost_table_path() -> str:
    """The bundled cost constants, ``instances/cost/common.yaml``."""
    return str(instances_dir() / "cost" / "common.yaml")


def load_cost_table(path: str | None = None) -> EnergyTable:
    """Load the cost constants (``instances/cost/common.yaml`` unless ``path`` names another file).

    Returns
    -------
    EnergyTable
        The entries by key (the energy model's constant table, its messages calling them cost constants).

    Raises
    ------
    SpecError
        One line naming the file and the field: a missing or malformed file, an unknown field, a missing
        source, a value outside its low..high, a unit outside :data:`COST_UNITS`.
    """
    return EnergyTable(read_constants(Path(path or cost_table_path()), COST_UNITS), "cost constant")


def scenario_cost_table(sc: LoadedScenario) -> EnergyTable:
    """The cost constants of a HYDRA scenario: the bundled table with the scenario's ``cost.table`` values
    (``--set cost.table.KEY=V``) in place.

    Raises
    ------
    SpecError
        A malformed cost file, or a key of ``cost.table`` it does not have.
    """
    return load_cost_table().with_values(sc.spec.cost.table, f"{sc.path}: cost.table")


POSITIVE = ("wafer_diameter", "die_wafer_price", "die_clustering", "interposer_wafer_price", "interposer_clustering",
            "volume")
"""Cost constants that must be above 0 (a clustering parameter of 0 or a volume of 0 has no meaning)."""
SHARES = ("nre_fixed_share", "die_nre_area_share", "interposer_nre_area_share", "die_bonding_yield",
          "substrate_bonding_yield")
"""Cost constants that are fractions: at most 1 (the yields also above 0)."""


def _check_ranges(sc: LoadedScenario, t: EnergyTable) -> None:
    """Refuse a cost constant outside its meaning (SpecError naming ``cost.table.KEY`` in the scenario when the
    scenario set it, else in the table file)."""
    for key in (*POSITIVE, *SHARES):
        v = t.get(key)
        positive = key in POSITIVE or key.endswith("_yield")
        if (positive and not v > 0) or (key in SHARES and v > 1):
            mine = key in sc.spec.cost.table  # the scenario set it: name its field, else the table file's entry
            what = "a value > 0" if key in POSITIVE else ("a yield in (0, 1]" if key.endswith("_yield") else
                                                          "a share in [0, 1]")
            raise SpecError(str(sc.path) if mine else t.constant(key).file, f"cost.table.{key}" if mine else key,
                            f"{what}, got {v:g}")
    edge = t.get("wafer_edge_loss")
    if not 2 * edge < t.get("wafer_diameter"):
        raise SpecError(t.constant("wafer_edge_loss").file, "wafer_edge_loss", "less than half the wafer diameter")


def negative_binomial_yield(area_mm2: np.ndarray | float, defects_per_cm2: float, clustering: float
                            ) -> np.ndarray:
    """Die yield ``(1 + D0 A / c) ** -c`` (the negative binomial model; Chiplet Actuary, DAC 2022).

    Parameters
    ----------
    area_mm2 : array_like
        Die areas, mm^2 (>= 0).
    defects_per_cm2 : float
        Defect density D0, defects per cm^2 (>= 0).
    clustering : float
        Clustering parameter c (> 0; large c approaches the Poisson yield ``exp(-D0 A)``).

    Returns
    -------
    numpy.ndarray
        Yields in (0, 1], the shape of ``area_mm2``.

    Raises
    ------
    ValueError
        A negative area or defect density, or a clustering parameter that is not positive.
    """
    a = np.asarray(area_mm2, dtype=float)
    if (a < 0).any() or defects_per_cm2 < 0 or not clustering > 0:
        msg = (f"die yield needs areas >= 0, a defect density >= 0 and clustering > 0, got "
               f"min area {a.min() if a.size else 0:g} mm^2, {defects_per_cm2:g} /cm^2, clustering {clustering:g}")
        raise ValueError(msg)
    return np.asarray((1.0 + defects_per_cm2 * a / 100.0 / clustering) ** -clustering)


def dies_per_wafer(area_mm2: np.ndarray | float, diameter_mm: float, edge_loss_mm: float, scribe_mm: float
                   ) -> np.ndarray:
    """Gross dies per wafer: ``pi (d/2 - e)^2 / A' - pi (d - 2e) / sqrt(2 A')``, ``A'`` the square die with its
    scribe lane, ``(sqrt(A) + s)^2`` (the classic area-minus-rim estimate, as Chiplet Actuary uses it).

    Parameters
    ----------
    area_mm2 : array_like
        Die areas, mm^2 (> 0).
    diameter_mm, edge_loss_mm, scribe_mm : float
        Wafer diameter, edge loss and scribe lane width, mm.

    Returns
    -------
    numpy.ndarray
        Dies per wafer (not rounded), the shape of ``area_mm2``.

    Raises
    ------
    ValueError
        A die area that is not positive, or a die too large for one to fit on the usable wafer.
    """
    a = np.asarray(area_mm2, dtype=float)
    if not (a > 0).all():
        raise ValueError("dies per wafer needs die areas > 0 mm^2")
    side = np.sqrt(a) + scribe_mm
    a_eff = side * side
    n = math.pi * (diameter_mm / 2 - edge_loss_mm) ** 2 / a_eff - math.pi * (diameter_mm - 2 * edge_loss_mm) \
        / np.sqrt(2 * a_eff)
    if (n < 1).any():
        msg = (f"a die of {float(a[n < 1].max()):g} mm^2 does not fit {diameter_mm:g} mm wafers "
               f"({edge_loss_mm:g} mm edge loss) once")
        raise ValueError(msg)
    return np.asarray(n)


def good_die_cost_usd(area_mm2: np.ndarray | float, wafer_price_usd: float, defects_per_cm2: float,
                      clustering: float, diameter_mm: float = 300.0, edge_loss_mm: float = 5.0,
                      scribe_mm: float = 0.2) -> np.ndarray:
    """Cost of one known-good die: ``wafer_price / (dies_per_wafer x yield)``, USD.

    Raises
    ------
    ValueError
        As :func:`dies_per_wafer` and :func:`negative_binomial_yield`.
    """
    n = dies_per_wafer(area_mm2, diameter_mm, edge_loss_mm, scribe_mm)
    return np.asarray(wafer_price_usd / (n * negative_binomial_yield(area_mm2, defects_per_cm2, clustering)))


@dataclass(frozen=True)
class PackageCostModel:
    """The per-part costs of one scenario's packages, from its cost table, library and package.

    Attributes
    ----------
    types : tuple of str
        Compute chiplet types, in the order of ``die_usd``.
    die_usd : numpy.ndarray, shape (T,)
        Known-good die with its micro-bumps, USD, per type.
    die_nre_usd : numpy.ndarray, shape (T,)
        NRE of each type's design, USD (amortized when the type is used).
    stack_usd : float
        One known-good stack with its micro-bumps, USD.
    interposer_usd, interposer_yield : float
        Raw silicon interposer with its C4 bumps, USD, and its yield.
    substrate_usd : float
        Organic substrate, USD.
    interposer_nre_usd : float
    die_bonding_yield, substrate_bonding_yield, volume : float
    """

    types: tuple[str, ...]
    die_usd: np.ndarray
    die_nre_usd: np.ndarray
    stack_usd: float
    interposer_usd: float
    interposer_yield: float
    substrate_usd: float
    interposer_nre_usd: float
    die_bonding_yield: float
    substrate_bonding_yield: float
    volume: float

    @classmethod
    def of(cls, sc: LoadedScenario, types: tuple[str, ...], table: EnergyTable | None = None) -> PackageCostModel:
        """The model of ``sc`` (its cost table, library, package) for the compute types ``types``.

        Raises
        ------
        SpecError
            A malformed cost table or ``cost.table`` key, or a constant outside its meaning (:data:`POSITIVE`,
            :data:`SHARES`).
        InfeasibleDesignError
            A die or the interposer too large for a wafer (names the file and field).
        """
        t = table or scenario_cost_table(sc)
        _check_ranges(sc, t)
        g = (t.get("wafer_diameter"), t.get("wafer_edge_loss"), t.get("scribe_lane"))
        lib = sc.library
        areas = np.array([lib.by_name(name).die_area_mm2 for name in types], dtype=float)
        a_int = float(sc.package.interposer_area_mm2)
        for what, fld, area in (("library", "compute.*.die_area_mm2", float(areas.max(initial=1.0))),
                                ("package", "interposer_area_mm2", a_int)):
            try:
                dies_per_wafer(area, *g)
            except ValueError as exc:
                source = str(sc.named_files.get(what, sc.path))
                msg = f"{source}: {fld}: {exc}"
                raise InfeasibleDesignError(msg, source, fld) from None
        die = good_die_cost_usd(areas, t.get("die_wafer_price"), t.get("die_defect_density"),
                                t.get("die_clustering"), *g)
        interposer_raw = float(t.get("interposer_wafer_price") / dies_per_wafer(a_int, *g))
        bump = t.get("micro_bump_cost")
        fixed = t.get("nre_fixed_share")

        def nre(node_nre: float, area_share: float, area_mm2: np.ndarray | float) -> np.ndarray:
            return np.asarray(node_nre * (fixed + area_share * np.asarray(area_mm2) / NRE_REFERENCE_MM2))

        return cls(
            types=types, die_usd=die + bump * areas,
            die_nre_usd=nre(t.get("die_nre"), t.get("die_nre_area_share"), areas),
            stack_usd=t.get("hbm_price_per_GB") * lib.memory.capacity_GB + bump * lib.memory.area_mm2,
            interposer_usd=interposer_raw + t.get("c4_bump_cost") * a_int,
            interposer_yield=float(negative_binomial_yield(a_int, t.get("interposer_defect_density"),
                                                           t.get("interposer_clustering"))),
            substrate_usd=t.get("substrate_cost") * t.get("substrate_area_factor") * a_int,
            interposer_nre_usd=float(t.get("interposer_nre_factor") * nre(
                t.get("interposer_node_nre"), t.get("interposer_nre_area_share"), a_int)),
            die_bonding_yield=t.get("die_bonding_yield"), substrate_bonding_yield=t.get("substrate_bonding_yield"),
            volume=t.get("volume"))

    def package_cost_usd(self, counts: np.ndarray, n_stacks: np.ndarray) -> np.ndarray:
        """Cost of each package, USD: recurring (dies, stacks, interposer, substrate over the assembly yields)
        plus the NRE of the types it uses and of the interposer over the volume.

        Parameters
        ----------
        counts : numpy.ndarray, shape (n, T)
            Compute chiplets per type (:attr:`types` order).
        n_stacks : numpy.ndarray, shape (n,)
            Memory stacks per package.

        Returns
        -------
        numpy.ndarray, shape (n,)
        """
        c = np.asarray(counts, dtype=float)
        h = np.asarray(n_stacks, dtype=float)
        y_b = self.die_bonding_yield ** (c.sum(axis=1) + h)
        y_s = self.substrate_bonding_yield
        parts = c @ self.die_usd + h * self.stack_usd
        recurring = parts / (y_b * y_s) + self.interposer_usd / (self.interposer_yield * y_b * y_s) \
            + self.substrate_usd / y_s
        nre = ((c > 0) @ self.die_nre_usd + self.interposer_nre_usd) / self.volume
        return np.asarray(recurring + nre)


def assumption_keys(table: EnergyTable) -> list[str]:
    """The cost constants with a plausible range (the register's assumptions), in key order."""
    return [k for k in table.keys() if table.constant(k).low is not None and table.constant(k).high is not None]


def package_cost_range_usd(sc: LoadedScenario, types: tuple[str, ...], counts: np.ndarray, n_stacks: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """The package cost of each package with every ranged cost constant at the end that lowers it, and at the end
    that raises it (the cost is monotone in each constant, so these two corners bound every setting in the ranges).

    Parameters
    ----------
    sc : LoadedScenario
        Its cost table (with ``cost.table``); a constant the scenario sets keeps that value.
    types, counts, n_stacks
        As :meth:`PackageCostModel.package_cost_usd` (``counts`` shape (n, T), ``n_stacks`` shape (n,)).

    Returns
    -------
    (low, high) : tuple of numpy.ndarray, shape (n,)
        USD.
    """
    table = scenario_cost_table(sc)
    cheap: dict[str, float] = {}
    dear: dict[str, float] = {}
    probe_c, probe_h = np.asarray(counts)[:1], np.asarray(n_stacks)[:1]
    for key in assumption_keys(table):
        if key in sc.spec.cost.table:
            continue
        c = table.constant(key)
        ends = [float(c.low), float(c.high)]  # type: ignore[arg-type]
        cost = [float(PackageCostModel.of(sc, types, table.with_values({key: v})).package_cost_usd(probe_c, probe_h)[0])
                for v in ends]
        lo, hi = (ends[0], ends[1]) if cost[0] <= cost[1] else (ends[1], ends[0])
        cheap[key], dear[key] = lo, hi
    low = PackageCostModel.of(sc, types, table.with_values(cheap)).package_cost_usd(counts, n_stacks)
    high = PackageCostModel.of(sc, types, table.with_values(dear)).package_cost_usd(counts, n_stacks)
    return low, high


def package_cost_metric(screen: Screen, pts: DesignPoints, df: pd.DataFrame) -> np.ndarray:
    """The sweep's ``package_cost_usd`` column (a registered metric of the screen stage: ``(screen, points,
    table) -> array``): :meth:`PackageCostModel.package_cost_usd` of every point, USD, shape (n,)."""
    return _model_memo(screen.sc, tuple(pts.types)).package_cost_usd(pts.counts, pts.n_hbm)


_MEMO: list[tuple[LoadedScenario, tuple[str, ...], PackageCostModel]] = []
"""The last scenario's model (a sweep scores one scenario in many chunks)."""


def _model_memo(sc: LoadedScenario, types: tuple[str, ...]) -> PackageCostModel:
    """:meth:`PackageCostModel.of` of ``sc``, kept for the next call on the same scenario object."""
    if _MEMO and _MEMO[0][0] is sc and _MEMO[0][1] == types:
        return _MEMO[0][2]
    model = PackageCostModel.of(sc, types)
    _MEMO[:] = [(sc, types, model)]
    return model


COST_REASON = "cost: "
"""The start of the ``reason`` of a point the cost limit makes infeasible."""


def apply_cost_limit(df: pd.DataFrame, limit_usd: float | None) -> pd.DataFrame:
    """Mark the points whose ``package_cost_usd`` exceeds ``cost.package_max_usd`` infeasible.

    Parameters
    ----------
    df : pandas.DataFrame
        A scored table with ``package_cost_usd``, ``feasible``, ``stable``, ``ttft_s`` and ``reason``.
    limit_usd : float or None
        The limit, USD; None checks nothing.

    Returns
    -------
    pandas.DataFrame
        ``df`` (changed in place) with ``cost_ok`` (True where the cost is within the limit) and, where the limit
        fails on a point otherwise feasible: ``feasible`` and ``stable`` False, ``ttft_s`` NaN and ``reason``
        ``"cost: package cost above cost.package_max_usd = 5000 USD"``. Other infeasible points keep their reason.
    """
    if limit_usd is None:
        df["cost_ok"] = True
        return df
    ok = ~(df["package_cost_usd"].to_numpy(dtype=float) > limit_usd)
    df["cost_ok"] = ok
    mark_infeasible(df, ~ok & df["feasible"].to_numpy(dtype=bool),
                    f"{COST_REASON}package cost above cost.package_max_usd = {limit_usd:g} USD")
    return df


def check_cost_limit(df: pd.DataFrame, limit_usd: float | None, source: str) -> None:
    """Refuse a cost limit no design meets.

    Parameters
    ----------
    df : pandas.DataFrame
        The whole scored space after :func:`apply_cost_limit`.
    limit_usd : float or None
    source : str
        The scenario file, for the message.

    Raises
    ------
    InfeasibleDesignError
        One line, ``<scenario>: cost.package_max_usd: no design meets the package cost limit of 5000 USD; the
        lowest package cost found is 6123 USD``, when the limit is what leaves no feasible point (points that do
        not fit their memory or break a power limit are left out of the lowest cost).
    """
    if limit_usd is None or "cost_ok" not in df or df["feasible"].any():
        return
    pool = df[df["reason"].astype(str).str.startswith(COST_REASON)]
    if pool.empty:
        return  # memory or power leaves no point: their own errors
    low = float(pool["package_cost_usd"].min())
    msg = (f"{source}: cost.package_max_usd: no design meets the package cost limit of {limit_usd:g} USD; the "
           f"lowest package cost found is {low:.6g} USD")
    raise InfeasibleDesignError(msg, source, "cost.package_max_usd")
