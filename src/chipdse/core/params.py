"""The parameter register: every number a study's models use, with its basis, source and plausible range.

A study's register is ``instances/params/<study>.yaml`` (:class:`RegisterFile`): its ``parameters`` name
scenario paths (the ``--set`` paths of :mod:`chipdse.core.overrides`) with a basis, a source and, for an
assumption or a calibrated value, a range; its ``controls`` name the settings that are not model parameters (seed,
work limit, worker count). The values themselves are read from the files that hold them (the study's bundled
scenario and the files it names, the energy and thermal tables), so the register cannot drift from the data:
:func:`register_rows` joins the two. The energy and thermal tables carry their own source and range per entry
and join the register as ``energy.table.<key>`` / ``thermal.stack.<key>`` rows (:func:`table_rows`).

The bases (issue 30): ``paper`` (the paper reproduced states it), ``sourced`` (a datasheet or another
publication, cited), ``assumption`` (neither; the source is the reason for the value and its range),
``calibrated`` (chosen with some claims in view; ``calibrated_on`` names them, and those claims' rows are labelled
``calibrated``).
"""

from __future__ import annotations

import fnmatch
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.core.specs import format_field, read_yaml

Basis = Literal["paper", "sourced", "assumption", "calibrated"]
BASES: tuple[str, ...] = typing.get_args(Basis)

RANGED: frozenset[str] = frozenset({"assumption", "calibrated"})
"""Bases whose entries must give a plausible ``low`` .. ``high``."""


class RegisterEntry(BaseModel):
    """One parameter of a register file, as written (the value is read from the data, not from here)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, description="Dotted scenario path (--set PATH); * for every entry of a named "
                      "list.")
    unit: str = Field(description="Unit of the value.")
    basis: Basis = Field(description="paper, sourced, assumption or calibrated (module docstring).")
    source: str = Field(min_length=1, description="Citation (paper / sourced), or the reason for the value and its "
                        "range (assumption / calibrated).")
    low: float | None = Field(None, description="Plausible low end, in unit (assumption / calibrated).")
    high: float | None = Field(None, description="Plausible high end, in unit (assumption / calibrated).")
    calibrated_on: list[str] = Field(default_factory=list, description="Claim keys the value was chosen with in "
                                     "view (calibrated only).")


class ControlEntry(BaseModel):
    """A setting that is not a model parameter (what to run, how long, where)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="Dotted scenario path of the setting.")
    reason: str = Field(min_length=1, description="Why it is not a model parameter.")


class RegisterFile(BaseModel):
    """``instances/params/<study>.yaml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    study: str = Field(description="hydra, snake or nova.")
    paper: str = Field(description="The paper the study reproduces (its first word names it in sources).")
    parameters: list[RegisterEntry] = Field(description="The model parameters.")
    controls: list[ControlEntry] = Field(default_factory=list, description="Settings that are not model "
                                         "parameters (seed, limits, worker counts).")


@dataclass(frozen=True)
class ParamRow:
    """One parameter with its value: a row of ``chipdse params`` (its JSON keys are the attribute names)."""

    name: str
    value: Any
    low: float | None
    high: float | None
    unit: str
    basis: str
    source: str
    calibrated_on: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """The JSON object: name, value, low, high, unit, basis, source, calibrated_on."""
        return {"name": self.name, "value": self.value, "low": self.low, "high": self.high, "unit": self.unit,
                "basis": self.basis, "source": self.source, "calibrated_on": list(self.calibrated_on)}


def register_path(study: str) -> Path:
    """``instances/params/<study>.yaml``."""
    return instances_dir() / "params" / f"{study}.yaml"


def load_register(study: str, path: Path | None = None) -> RegisterFile:
    """Read and check a study's register file.

    Raises
    ------
    SpecError
        Naming the file and field: a malformed entry, a basis outside :data:`BASES`, an assumption or calibrated
        entry without ``low`` / ``high`` (or low > high), a calibrated entry without ``calibrated_on`` (or another
        basis with one), or a name given twice.
    """
    path = path or register_path(study)
    try:
        reg = RegisterFile.model_validate(read_yaml(path))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SpecError(str(path), format_field(err["loc"]), str(err["msg"])) from None
    seen: set[str] = set()
    for i, e in enumerate(reg.parameters):
        where = f"parameters[{i}]"
        if e.name in seen:
            raise SpecError(str(path), f"{where}.name", f"each name once; {e.name} is given twice")
        seen.add(e.name)
        if e.basis in RANGED and (e.low is None or e.high is None or e.low > e.high):
            raise SpecError(str(path), f"{where}.low", f"{e.name}: an {e.basis} value needs its range low <= high")
        if (e.basis == "calibrated") != bool(e.calibrated_on):
            raise SpecError(str(path), f"{where}.calibrated_on", f"{e.name}: calibrated_on names the claims a "
                            "calibrated value was fitted to, and only a calibrated value has it")
    return reg


def flat_values(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a dumped spec as (dotted path, value); a list of named mappings is entered by name
    (``library.compute.Ap.utilization``), other lists are leaves."""
    if isinstance(data, Mapping):
        for k, v in data.items():
            yield from flat_values(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(data, list) and data and all(isinstance(e, Mapping) and "name" in e for e in data):
        for e in data:
            yield from flat_values({k: v for k, v in e.items() if k != "name"}, f"{prefix}.{e['name']}")
    else:
        yield prefix, data


def _numeric_type(tp: Any) -> bool:
    """Whether an annotation holds numbers: int / float, optionally in a list, tuple, Optional or Annotated."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _numeric_type(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_numeric_type(a) for a in typing.get_args(tp) if a is not type(None))
    if origin in (list, tuple):
        return any(_numeric_type(a) for a in typing.get_args(tp) if a is not Ellipsis)
    return tp in (int, float)


def _model_type(tp: Any) -> tuple[type[BaseModel], bool] | None:
    """(spec class, is a list of them) when an annotation is a nested spec, an optional one or a list of them."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _model_type(inner[0]) if len(inner) == 1 else None
    if origin is list:
        got = _model_type(typing.get_args(tp)[0])
        return None if got is None else (got[0], True)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp, False
    return None


def numeric_fields(cls: type[BaseModel], prefix: str = "", instance: Any = None) -> list[str]:
    """Every numeric field of a spec class as a dotted path, entering nested specs (a list of named specs by each
    entry's name in ``instance``, else by ``*``). Mappings (``energy.table``) are left out: their keys are other
    tables' entries, and so is a file's ``schema_version`` (a format marker, no model's input).

    Parameters
    ----------
    cls : pydantic model class
    prefix : str
        Path of ``cls`` itself (``"library"``).
    instance : model, optional
        A loaded instance, to name list entries.
    """
    out: list[str] = []
    for name, f in cls.model_fields.items():
        if name == "schema_version":
            continue
        path = f"{prefix}.{name}" if prefix else name
        nested = _model_type(f.annotation)
        if nested is not None:
            sub, many = nested
            value = getattr(instance, name, None) if instance is not None else None
            if many:
                names = [getattr(e, "name", str(i)) for i, e in enumerate(value)] if value else ["*"]
                for n, e in zip(names, value or [None], strict=False):
                    out += numeric_fields(sub, f"{path}.{n}", e)
            else:
                out += numeric_fields(sub, path, value)
        elif typing.get_origin(f.annotation) is not dict and _numeric_type(f.annotation):
            out.append(path)
    return out


def entry_for(reg: RegisterFile, name: str) -> RegisterEntry | None:
    """The register entry of a concrete path: an exact name, else the first ``*`` pattern matching it."""
    for e in reg.parameters:
        if e.name == name:
            return e
    for e in reg.parameters:
        if "*" in e.name and fnmatch.fnmatchcase(name, e.name):
            return e
    return None


def is_control(reg: RegisterFile, name: str) -> bool:
    """Whether ``name`` is one of the register's controls."""
    return any(c.name == name for c in reg.controls)


def register_rows(reg: RegisterFile, values: Mapping[str, Any]) -> list[ParamRow]:
    """The register's parameters with their values, one row per concrete path.

    Parameters
    ----------
    reg : RegisterFile
    values : mapping
        Dotted path -> value, from the study's bundled scenario and the files it names (:func:`flat_values`).

    Returns
    -------
    list of ParamRow
        In the order of ``values``, every path with an entry (a ``*`` entry yields a row per matching path).

    Raises
    ------
    SpecError
        A register entry that matches no value (a misspelt or removed field).
    """
    rows: list[ParamRow] = []
    used: set[str] = set()
    for path, value in values.items():
        e = entry_for(reg, path)
        if e is None:
            continue
        used.add(e.name)
        rows.append(ParamRow(path, value, e.low, e.high, e.unit, e.basis, e.source, tuple(e.calibrated_on)))
    unused = [e.name for e in reg.parameters if e.name not in used]
    if unused:
        raise SpecError(str(register_path(reg.study)), unused[0], "a field of the study's scenario or of a file it "
                        "names (no such value)")
    return rows


def table_rows(prefix: str, entries: Mapping[str, Mapping[str, Any]], paper: str) -> list[ParamRow]:
    """Register rows of an energy or thermal table (``{key: {value, unit, source[, low, high]}}``).

    The basis is read from the source: ``assumption: ...`` is an assumption, one naming the paper reproduced
    (``paper``, e.g. ``"SNAKE Sec."``) is the paper's, any other citation is sourced.
    """
    rows = []
    for key, e in entries.items():
        src = str(e["source"])
        basis = ("assumption" if src.lower().startswith("assumption") else
                 "paper" if paper and src.startswith(paper) else "sourced")
        rows.append(ParamRow(f"{prefix}.{key}", e["value"], e.get("low"), e.get("high"), str(e["unit"]), basis, src))
    return rows


def fitted_claims(reg: RegisterFile) -> dict[str, list[str]]:
    """Claim key -> the register's parameters chosen with that claim in view (their ``calibrated_on``): the rows
    a study's claims stage labels ``calibrated``."""
    out: dict[str, list[str]] = {}
    for e in reg.parameters:
        for key in e.calibrated_on:
            out.setdefault(key, []).append(e.name)
    return out
