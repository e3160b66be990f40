"""The package's layer stack (``instances/thermal/package.yaml``): reading and checking its entries.

Apart from the thermal grid and its sparse solve (:mod:`chipdse.evaluators.thermal`) so that reading the stack for
``chipdse params hydra`` loads no SciPy. Sources of the constants: HotSpot's defaults and TAP-2.5D's layer stack
(see :mod:`chipdse.evaluators.thermal`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chipdse.core.errors import SpecError, shorten
from chipdse.core.paths import instances_dir
from chipdse.core.specs import read_yaml

MM = 1e-3
"""Metres per millimetre."""

STACK_UNITS: dict[str, str] = {
    "die_thickness": "mm", "die_conductivity": "W/(m K)", "interposer_thickness": "mm",
    "interposer_conductivity": "W/(m K)", "tim_thickness": "mm", "tim_conductivity": "W/(m K)",
    "spreader_thickness": "mm", "spreader_conductivity": "W/(m K)", "heat_sink_resistance": "K/W", "ambient": "degC",
}
"""Every entry of a package stack file and the unit it must carry."""

HBM_PREFIX = "hbm:"
"""Placement types that are HBM stacks (``formulations.placement.HBM_PREFIX``)."""


def default_stack_path() -> Path:
    """Return the bundled package stack, ``instances/thermal/package.yaml``."""
    return instances_dir() / "thermal" / "package.yaml"


@dataclass(frozen=True)
class ThermalStack:
    """Layer stack and boundary of the compact model, SI units.

    Attributes
    ----------
    die_thickness_m, interposer_thickness_m, tim_thickness_m, spreader_thickness_m : float
        Layer thicknesses, m.
    die_k_W_per_mK, interposer_k_W_per_mK, tim_k_W_per_mK, spreader_k_W_per_mK : float
        Thermal conductivities, W/(m K).
    heat_sink_K_per_W : float
        Spreader top to ambient, the whole sink, K/W.
    ambient_C : float
        Ambient (chassis air or coolant) temperature, degC.
    """

    die_thickness_m: float
    die_k_W_per_mK: float  # noqa: N815 - unit in name
    interposer_thickness_m: float
    interposer_k_W_per_mK: float  # noqa: N815
    tim_thickness_m: float
    tim_k_W_per_mK: float  # noqa: N815
    spreader_thickness_m: float
    spreader_k_W_per_mK: float  # noqa: N815
    heat_sink_K_per_W: float  # noqa: N815
    ambient_C: float  # noqa: N815

    def vertical_m2K_per_W(self) -> float:  # noqa: N802 - unit in name
        """Area-specific resistance of one cell's vertical path, die node to the spreader top, m^2 K / W.

        ``t_die / k_die + t_TIM / k_TIM + t_spreader / k_spreader``: 1-D conduction through the three slabs.
        """
        return (self.die_thickness_m / self.die_k_W_per_mK + self.tim_thickness_m / self.tim_k_W_per_mK
                + self.spreader_thickness_m / self.spreader_k_W_per_mK)


def stack_entries(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Read a package stack file's entries as written: key -> ``{value, unit, source[, low, high]}``.

    ``low`` / ``high`` are the plausible range of an ``assumption: ...`` entry (the parameter register,
    ``chipdse params hydra``).

    Raises
    ------
    SpecError
        Naming the file and field: a missing or unknown key, an entry that is not ``{value, unit, source[, low,
        high]}``, a unit other than the one in :data:`STACK_UNITS`, a missing source, a non-positive thickness,
        conductivity or resistance, or a range that does not hold the value.
    """
    path = path or default_stack_path()
    data, src = read_yaml(path), str(path)
    out: dict[str, dict[str, Any]] = {}
    for key, raw in data.items():
        if key not in STACK_UNITS:
            raise SpecError(src, key if isinstance(key, str) else shorten(key), f"one of {', '.join(STACK_UNITS)}")
        if not isinstance(raw, dict) or not {"value", "unit", "source"} <= set(raw) <= _ENTRY_KEYS:
            raise SpecError(src, key, f"a mapping {{value, unit, source[, low, high]}}, got {shorten(raw)}")
        for fld in ("value", "low", "high"):
            v = raw.get(fld, 0.0)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise SpecError(src, f"{key}.{fld}", f"a finite number, got {shorten(v)}")
        value, unit, source = raw["value"], raw["unit"], raw["source"]
        if key != "ambient" and value <= 0:
            raise SpecError(src, f"{key}.value", f"a value > 0, got {value!r}")
        if unit != STACK_UNITS[key]:
            raise SpecError(src, f"{key}.unit", f"{STACK_UNITS[key]!r}, got {shorten(unit)}")
        if not isinstance(source, str) or not source.strip():
            raise SpecError(src, f"{key}.source", "a source (publication and section, or 'assumption: ...')")
        if not raw.get("low", value) <= value <= raw.get("high", value):
            raise SpecError(src, f"{key}.low", f"a range low <= value <= high, got {raw.get('low')}..{raw.get('high')}")
        out[key] = {**raw, "value": float(value)}
    missing = [k for k in STACK_UNITS if k not in out]
    if missing:
        raise SpecError(src, missing[0], f"an entry {{value, unit, source}} in {STACK_UNITS[missing[0]]}")
    return out


_ENTRY_KEYS = {"value", "unit", "source", "low", "high"}


def load_thermal_stack(path: Path | None = None, heat_sink_K_per_W: float | None = None,  # noqa: N803
                       ambient_C: float | None = None,  # noqa: N803
                       values: dict[str, float] | None = None) -> ThermalStack:
    """Read a package stack file (``instances/thermal/package.yaml`` by default).

    Parameters
    ----------
    path : Path, optional
        A YAML file with every key of :data:`STACK_UNITS`, each ``{value, unit, source[, low, high]}``
        (:func:`stack_entries`).
    heat_sink_K_per_W, ambient_C : float, optional
        Replace the file's heat-sink resistance (K/W) and ambient temperature (degC), e.g. from a scenario.
    values : dict, optional
        Replace entries by key, in the entry's unit (a scenario's ``thermal.stack``); ``heat_sink_K_per_W`` and
        ``ambient_C`` win over it.

    Returns
    -------
    ThermalStack

    Raises
    ------
    SpecError
        As :func:`stack_entries`; also a key of ``values`` the file does not have, or a replaced thickness,
        conductivity or resistance that is not positive.
    """
    entries = stack_entries(path)
    v = {k: e["value"] for k, e in entries.items()}
    for key, val in (values or {}).items():
        if key not in v:
            raise SpecError("thermal.stack", key, f"one of {', '.join(STACK_UNITS)}")
        if key != "ambient" and val <= 0:
            raise SpecError("thermal.stack", key, f"a value > 0, got {val!r}")
        v[key] = float(val)
    return ThermalStack(
        v["die_thickness"] * MM, v["die_conductivity"], v["interposer_thickness"] * MM,
        v["interposer_conductivity"], v["tim_thickness"] * MM, v["tim_conductivity"],
        v["spreader_thickness"] * MM, v["spreader_conductivity"],
        v["heat_sink_resistance"] if heat_sink_K_per_W is None else heat_sink_K_per_W,
        v["ambient"] if ambient_C is None else ambient_C)
