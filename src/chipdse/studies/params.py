"""The parameter registers of the three studies joined with their values (``chipdse params``).

Each study's :data:`~chipdse.studies.registry.Study` record has a ``params`` function that calls
:func:`param_rows` with its scenario's dumped files and its energy / thermal tables; :func:`unregistered` lists the
numeric fields a register misses (the test that keeps a new knob from going unregistered).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chipdse.core.errors import SpecError
from chipdse.core.params import (
    ParamRow,
    RegisterFile,
    entry_for,
    flat_values,
    is_control,
    load_register,
    numeric_fields,
    register_rows,
    table_rows,
)
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import StudyScenario, load
from chipdse.evaluators.energy import load_energy_table


def spec_values(parts: Sequence[tuple[str, BaseModel]]) -> dict[str, Any]:
    """Numeric leaves of loaded specs as ``{dotted path: value}``: each part's numeric fields
    (:func:`chipdse.core.params.numeric_fields`) under its prefix (``""`` for the scenario, ``"library"``, ...)."""
    out: dict[str, Any] = {}
    for prefix, spec in parts:
        numeric = set(numeric_fields(type(spec), prefix, spec))
        for path, value in flat_values(spec.model_dump(mode="json"), prefix):
            if path in numeric:
                out[path] = value
        for path in numeric:  # an optional number left unset (None) still has its row
            out.setdefault(path, None)
    return out


def param_rows(reg: RegisterFile, parts: Sequence[tuple[str, BaseModel]],
               tables: Sequence[tuple[str, Mapping[str, Mapping[str, Any]]]] = ()) -> list[ParamRow]:
    """The register's rows with values, then the rows of each energy / thermal table.

    Parameters
    ----------
    reg : RegisterFile
    parts : sequence of (prefix, spec)
        The loaded scenario (prefix ``""``) and, for HYDRA, its library, package and workload.
    tables : sequence of (prefix, entries)
        E.g. ``("energy.table", {key: {value, unit, source, low, high}})``.

    Raises
    ------
    SpecError
        A register entry that names no field (:func:`chipdse.core.params.register_rows`).
    """
    paper = reg.paper.split(" ", 1)[0] + " Sec"
    rows = register_rows(reg, spec_values(parts))
    for prefix, entries in tables:
        rows += table_rows(prefix, entries, paper)
    return rows


def unregistered(reg: RegisterFile, parts: Sequence[tuple[str, BaseModel]]) -> list[str]:
    """Numeric fields of ``parts`` neither in the register nor among its controls."""
    return [p for p in spec_values(parts) if entry_for(reg, p) is None and not is_control(reg, p)]


STUDY_SCENARIOS = {"snake": "snake-stratum.yaml", "nova": "nova-nemotron3-nano.yaml"}
"""The bundled scenario whose values ``chipdse params snake|nova`` shows by default."""


def study_scenario(kind: str, scenario: Path | None = None) -> StudyScenario:
    """A SNAKE or NOVA scenario (the bundled one of ``kind`` by default), refusing other kinds.

    Raises
    ------
    SpecError
        A malformed file, or a scenario of another kind (field ``kind``).
    """
    sc = load(scenario or instances_dir() / "scenarios" / STUDY_SCENARIOS[kind])
    if not isinstance(sc, StudyScenario) or sc.spec.kind != kind:
        raise SpecError(str(sc.path), "kind", f"{kind} (chipdse params {kind}), got {sc.spec.kind!r}")
    return sc


def study_params(kind: str, scenario: Path | None = None) -> list[ParamRow]:
    """Every parameter of the SNAKE or NOVA study with its value, basis, source and range: the register
    ``instances/params/<kind>.yaml``, the scenario's values, and the energy constants of ``<kind>.yaml`` with the
    GPU's of ``common.yaml`` (the ones these studies read beside the scenario).

    Raises
    ------
    SpecError
        A malformed register, scenario or energy table.
    """
    sc = study_scenario(kind, scenario)
    table = load_energy_table("common", kind)
    e = {k: {"value": c.value, "unit": c.unit, "source": c.source, "low": c.low, "high": c.high}
         for k, c in sorted(table.constants.items()) if c.file.endswith(f"{kind}.yaml") or k.startswith("gpu_")}
    return param_rows(load_register(kind), [("", sc.spec)], [("energy.table", e)])


def study_missing(kind: str, scenario: Path | None = None) -> list[str]:
    """Numeric fields of a SNAKE or NOVA scenario the register neither lists nor names a control."""
    return unregistered(load_register(kind), [("", study_scenario(kind, scenario).spec)])
