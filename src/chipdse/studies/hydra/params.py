"""HYDRA's parameter register with its values (``chipdse params hydra``): ``instances/params/hydra.yaml`` joined
with the bundled default scenario (or the one given), its chiplet library, package and workload, and the energy
(``instances/energy/common.yaml``), cost (``instances/cost/common.yaml``) and thermal
(``instances/thermal/package.yaml``) tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chipdse.core.params import ParamRow, load_register
from chipdse.core.scenario import LoadedScenario, load_scenario
from chipdse.evaluators.cost import scenario_cost_table
from chipdse.evaluators.energy import EnergyTable, scenario_energy_table
from chipdse.evaluators.thermal_stack import stack_entries
from chipdse.studies.params import param_rows, unregistered

STUDY = "hydra"


def parts(sc: LoadedScenario) -> list[tuple[str, BaseModel]]:
    """The specs whose numbers HYDRA's models read: the scenario, its library, package and workload."""
    return [("", sc.spec), ("library", sc.library), ("package", sc.package), ("workload", sc.workload)]


def tables(sc: LoadedScenario) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """The energy constants HYDRA reads (``common.yaml`` without the GPU's, with the scenario's ``energy.table``),
    the cost constants (with ``cost.table``) and the thermal stack (with ``thermal.stack``)."""
    e = _entries(scenario_energy_table(sc), lambda k: not k.startswith("gpu_"))
    stack = stack_entries()
    for k, v in sc.spec.thermal.stack.items():
        stack[k] = {**stack[k], "value": v}
    return [("energy.table", e), ("cost.table", _entries(scenario_cost_table(sc))), ("thermal.stack", stack)]


def _entries(table: EnergyTable, keep: Callable[[str], bool] = lambda k: True) -> dict[str, dict[str, Any]]:
    """A constants table as register rows' inputs: key -> value, unit, source, low, high."""
    return {k: {"value": c.value, "unit": c.unit, "source": c.source, "low": c.low, "high": c.high}
            for k, c in sorted(table.constants.items()) if keep(k)}


def params(scenario: Path | None = None, sc: LoadedScenario | None = None) -> list[ParamRow]:
    """Every HYDRA parameter with its value, basis, source and range.

    Parameters
    ----------
    scenario : Path, optional
        A HYDRA scenario whose values to show (default: the bundled ``instances/scenarios/default.yaml``).
    sc : LoadedScenario, optional
        An already loaded scenario (wins over ``scenario``).

    Raises
    ------
    SpecError
        A malformed register, scenario or table.
    """
    sc = sc or load_scenario(scenario)
    return param_rows(load_register(STUDY), parts(sc), tables(sc))


def missing(sc: LoadedScenario) -> list[str]:
    """Numeric fields of the scenario and its files that the register neither lists nor names a control."""
    return unregistered(load_register(STUDY), parts(sc))
