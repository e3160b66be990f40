"""The shared energy model: energy per action and static power per component, read from ``instances/energy``.

One table serves all three studies (HYDRA, SNAKE, NOVA): each scope file (``common.yaml``, ``nova.yaml``,
``snake.yaml``) maps a key to ``{value, unit, source, node_nm}``; :func:`load_energy_table` merges the scopes a
study asks for and refuses an unknown field, a key given in two scopes, a missing source or a unit outside
:data:`UNITS`. Logic and SRAM entries carry the node they were measured at and scale to another node through the
one rule of :func:`node_scale`. :class:`EnergyBreakdown` adds energies part by part (compute, SRAM, HBM, D2D,
static, ...), in joules.

References
----------
M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014 (per-operation energies at
45 nm); A. Stillmaker and B. Baas, "Scaling equations for the accurate prediction of CMOS device performance from
180 nm to 7 nm", Integration 58, 2017 (HYDRA ref. [45]); the per-entry sources in ``instances/energy/*.yaml``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chipdse.core.errors import SpecError, shorten
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario
from chipdse.core.specs import format_field, read_yaml

PJ = 1e-12
"""Joules per picojoule."""

UNITS = frozenset({"pJ/bit", "pJ/byte", "pJ/FLOP", "pJ/MAC", "pJ/op", "pJ/activation", "pJ/access", "W", "mW",
                   "W/mm2", "W/GB"})
"""Units an entry may carry: energy per action (pJ per bit, byte, FLOP, MAC, operation, row activation, access)
or static power (W, mW, W per mm^2 of die, W per GB of DRAM)."""

NODE_ENERGY_EXPONENT = 1.0
"""Exponent of the node-scaling rule (:func:`node_scale`): dynamic energy per action grows linearly with the
feature size."""

MIN_NODE_NM, MAX_NODE_NM = 1, 1000
"""Smallest and largest technology node an entry or a query may name, nm."""


def node_scale(value: float, from_nm: float, to_nm: float) -> float:
    """Scale a logic or SRAM energy per action from one technology node to another.

    Parameters
    ----------
    value : float
        Energy per action at ``from_nm`` (any energy unit; the result has the same unit).
    from_nm, to_nm : float
        Technology node the value was measured at, and the node wanted, nm (both > 0).

    Returns
    -------
    float
        ``value * (to_nm / from_nm) ** NODE_ENERGY_EXPONENT``.

    Raises
    ------
    ValueError
        When a node is not positive.

    Notes
    -----
    The one rule: dynamic energy per action is C V^2; with the supply held near 0.7-0.9 V below 45 nm (the end
    of Dennard scaling) only the switched capacitance shrinks, and it shrinks with the feature size, so
    E(to) = E(from) x to / from. From 45 nm to 7 nm this gives 0.156x, the order of the 45 -> 7 nm energy
    decline Stillmaker & Baas fit to measured devices (their fits give a somewhat smaller drop at the small
    nodes, where wires dominate: the rule is a stated approximation, not their polynomial).

    References
    ----------
    A. Stillmaker and B. Baas, Integration 58, 2017 (HYDRA ref. [45]).
    """
    if from_nm <= 0 or to_nm <= 0:
        msg = f"technology nodes must be positive, got from_nm={from_nm!r}, to_nm={to_nm!r}"
        raise ValueError(msg)
    return value * (to_nm / from_nm) ** NODE_ENERGY_EXPONENT


class _EntrySpec(BaseModel):
    """One entry of an energy scope file, as written in YAML."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True)

    value: float = Field(ge=0, description="Energy per action or static power, in ``unit``.")
    unit: str = Field(description="One of UNITS, e.g. pJ/bit, pJ/FLOP, pJ/activation, W.")
    source: str = Field(min_length=1, description="Paper section / table / publication, or 'assumption: ...'.")
    node_nm: int | None = Field(None, ge=MIN_NODE_NM, le=MAX_NODE_NM, description="Technology node of a logic or "
                                "SRAM entry, nm; absent for entries that do not scale with the node.")
    low: float | None = Field(None, ge=0, description="Plausible low end of an assumption's value (the parameter "
                              "register, chipdse params).")
    high: float | None = Field(None, ge=0, description="Plausible high end of an assumption's value.")


@dataclass(frozen=True)
class EnergyConstant:
    """One energy constant: its value, unit, source and (logic / SRAM entries only) technology node.

    Attributes
    ----------
    value : float
        In ``unit``.
    unit : str
        One of :data:`UNITS`.
    source : str
        Publication and section, or ``"assumption: ..."``.
    node_nm : int | None
        Node the value holds at, nm; ``None`` when the entry does not scale with the node.
    file : str
        The scope file it came from.
    """

    value: float
    unit: str
    source: str
    node_nm: int | None = None
    file: str = ""
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class EnergyTable:
    """Energy constants by key, merged from one or more scope files (:func:`load_energy_table`)."""

    constants: dict[str, EnergyConstant]
    noun: str = "energy constant"
    """What an entry is called in messages (``"cost constant"`` for :mod:`chipdse.evaluators.cost`'s table)."""

    def keys(self) -> list[str]:
        """Return the keys, sorted."""
        return sorted(self.constants)

    def with_values(self, values: Mapping[str, float], source: str = "energy.table") -> EnergyTable:
        """This table with some values replaced (a scenario's ``energy.table`` / ``--set energy.table.KEY=V``).

        Parameters
        ----------
        values : mapping
            Key -> value in the entry's unit.
        source : str
            Where the values came from, for messages.

        Raises
        ------
        SpecError
            A key the table does not have, or a negative value.
        """
        if not values:
            return self
        out = dict(self.constants)
        for key, v in values.items():
            c = self.constant(key)
            if v < 0:
                raise SpecError(source, key, f"a value >= 0 in {c.unit}, got {v!r}")
            out[key] = dataclasses.replace(c, value=float(v), source=f"{source}: {key} (was {c.value:g})")
        return dataclasses.replace(self, constants=out)

    def constant(self, key: str) -> EnergyConstant:
        """Return the entry ``key``.

        Raises
        ------
        SpecError
            When the table has no such key (names the key and the scope files read).
        """
        try:
            return self.constants[key]
        except KeyError:
            files = sorted({c.file for c in self.constants.values()})
            msg = f"an {self.noun} of that name; known keys: {', '.join(self.keys())}"
            raise SpecError(", ".join(files) or f"{self.noun.split()[0]} table", key, msg) from None

    def get(self, key: str, node_nm: float | None = None) -> float:
        """Return the value of ``key`` in its unit, node-scaled when asked and the entry has a node.

        Parameters
        ----------
        key : str
            E.g. ``"logic_matrix"``.
        node_nm : float | None
            Node wanted, nm; applies :func:`node_scale` to entries with a ``node_nm`` and is ignored by the
            others (DRAM, links, static power).

        Returns
        -------
        float
            pJ per action or W (the entry's unit).

        Raises
        ------
        SpecError
            Unknown key (:meth:`constant`).
        """
        c = self.constant(key)
        if node_nm is None or c.node_nm is None:
            return c.value
        return node_scale(c.value, c.node_nm, node_nm)


def _scope_path(scope: str) -> Path:
    """The file of one scope: ``instances/energy/<scope>.yaml``, or ``scope`` itself when it names a YAML file."""
    if scope.endswith((".yaml", ".yml")):
        return Path(scope)
    return instances_dir() / "energy" / f"{scope}.yaml"


_SCOPE_CACHE: dict[tuple[str, int, int, frozenset[str]], dict[str, EnergyConstant]] = {}
"""Parsed scope files by (path, modification time ns, size, units): a sweep reads the same file once per screen
job."""


def read_constants(path: Path, units: frozenset[str] = UNITS) -> dict[str, EnergyConstant]:
    """Parse one constants file (entries ``{value, unit, source[, node_nm, low, high]}``, each unit among
    ``units``) into constants, read-only and cached while the file is unchanged: the energy scopes and the cost
    table (:mod:`chipdse.evaluators.cost`) share this one reader.

    Raises
    ------
    SpecError
        One line naming the file and the field (see :func:`load_energy_table`).
    """
    try:
        st = path.stat()
    except OSError:
        return _parse_scope(path, units)  # read_yaml names the missing or unreadable file
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, units)
    if key not in _SCOPE_CACHE:
        _SCOPE_CACHE[key] = _parse_scope(path, units)
    return _SCOPE_CACHE[key]


def _parse_scope(path: Path, units: frozenset[str] = UNITS) -> dict[str, EnergyConstant]:
    """Parse one scope file into constants, raising one SpecError naming the file and the field."""
    data = read_yaml(path)
    out: dict[str, EnergyConstant] = {}
    for key, raw in data.items():
        if not isinstance(key, str) or not key:
            raise SpecError(str(path), shorten(key), "a constant name (a non-empty string)")
        if not isinstance(raw, dict):
            raise SpecError(str(path), key, f"a mapping {{value, unit, source[, node_nm]}}, got {shorten(raw)}")
        try:
            spec = _EntrySpec.model_validate(_as_float(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = (key, *err["loc"])
            got = "" if err["type"] == "missing" else f" (got {shorten(err.get('input'))})"
            text = "a field the entry needs" if err["type"] == "missing" else str(err["msg"])
            if err["type"] == "extra_forbidden":
                text = ("no such field (an entry has value, unit, source, for logic / SRAM node_nm, and for an "
                        "assumption low and high)")
            raise SpecError(str(path), format_field(loc), text + got) from None
        if spec.unit not in units:
            msg = f"a unit among {', '.join(sorted(units))}, got {shorten(spec.unit)}"
            raise SpecError(str(path), f"{key}.unit", msg)
        if not spec.source.strip():
            raise SpecError(str(path), f"{key}.source", "a source (publication and section, or 'assumption: ...')")
        lo, hi = spec.value if spec.low is None else spec.low, spec.value if spec.high is None else spec.high
        if not lo <= spec.value <= hi:
            raise SpecError(str(path), f"{key}.low", f"a range low <= value <= high, got {lo:g}..{hi:g} around "
                            f"{spec.value:g}")
        out[key] = EnergyConstant(spec.value, spec.unit, spec.source.strip(), spec.node_nm, str(path), spec.low,
                                  spec.high)
    return out


def _as_float(raw: dict[str, Any]) -> dict[str, Any]:
    """Let an integer YAML value stand for a float (``value: 1``) under the strict entry model."""
    value = raw.get("value")
    if isinstance(value, int) and not isinstance(value, bool):
        return {**raw, "value": float(value)}
    return raw


def load_energy_table(*scopes: str) -> EnergyTable:
    """Load and merge energy scope files into one table.

    Parameters
    ----------
    *scopes : str
        Scope names (``"common"``, ``"nova"``, ``"snake"``: ``instances/energy/<scope>.yaml``) or paths of YAML
        files; ``("common",)`` when none is given.

    Returns
    -------
    EnergyTable
        Every key of every scope.

    Raises
    ------
    SpecError
        One line naming the file and the field: a missing or malformed file, an entry that is not a mapping, an
        unknown field, a missing or empty source, a negative value, a unit outside :data:`UNITS`, or a key given
        in two scopes.
    """
    merged: dict[str, EnergyConstant] = {}
    for scope in scopes or ("common",):
        path = _scope_path(scope)
        for key, const in read_constants(path).items():
            if key in merged:
                msg = f"each energy key once across scopes; also given in {merged[key].file}"
                raise SpecError(str(path), key, msg)
            merged[key] = const
    return EnergyTable(merged)


@dataclass(frozen=True)
class EnergyBreakdown:
    """Energy by part (e.g. ``compute``, ``sram``, ``hbm``, ``d2d``, ``static``), joules.

    ``a + b`` adds part by part (a part missing on one side counts 0); ``a.scaled(k)`` multiplies every part by
    ``k``; :attr:`total_J` is the sum of the parts.
    """

    parts_J: dict[str, float] = field(default_factory=dict)

    @property
    def total_J(self) -> float:  # noqa: N802 - unit in name
        """Sum of the parts, J."""
        return float(sum(self.parts_J.values()))

    def __add__(self, other: EnergyBreakdown) -> EnergyBreakdown:
        """Return the part-wise sum."""
        if not isinstance(other, EnergyBreakdown):
            return NotImplemented
        keys = list(self.parts_J) + [k for k in other.parts_J if k not in self.parts_J]
        return EnergyBreakdown({k: self.parts_J.get(k, 0.0) + other.parts_J.get(k, 0.0) for k in keys})

    def scaled(self, k: float) -> EnergyBreakdown:
        """Return every part multiplied by ``k`` (e.g. 1 / tokens for J per token)."""
        return EnergyBreakdown({name: v * k for name, v in self.parts_J.items()})

    def to_dict(self) -> dict[str, float]:
        """Return ``{part: J}`` plus ``"total"``, for CSV / JSON output."""
        return {**self.parts_J, "total": self.total_J}


def scenario_energy_table(sc: LoadedScenario) -> EnergyTable:
    """The energy constants of a HYDRA scenario: ``instances/energy/common.yaml`` with the scenario's
    ``energy.table`` values (``--set energy.table.KEY=V``) in place.

    Raises
    ------
    SpecError
        A malformed energy file, or a key of ``energy.table`` it does not have.
    """
    return load_energy_table().with_values(sc.spec.energy.table, f"{sc.path}: energy.table")
