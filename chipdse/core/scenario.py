"""Load a scenario file and everything it names into one bundle."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chipdse.core.errors import SpecError
from chipdse.core.models import ModelDescriptor, load_model
from chipdse.core.paths import instances_dir
from chipdse.core.specs import ChipletLibrary, Package, Scenario, Workload, file_sha256, load_spec, resolve
from chipdse.core.workloads import LengthSample, load_lengths

DEFAULT_SCENARIO = instances_dir() / "scenarios" / "default.yaml"


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario with its package, library, model, workload and request lengths resolved and validated."""

    path: Path
    spec: Scenario
    package: Package
    library: ChipletLibrary
    model: ModelDescriptor
    workload: Workload
    lengths: LengthSample
    sha256: str
    package_path: Path
    workload_path: Path

    def compute_types(self) -> list[str]:
        """Names of the library's compute chiplet types that serve this model's block families."""
        return [c.name for c in self.library.compute if c.family in self.model.families]


def with_workload(sc: LoadedScenario, workload: str, field: str = "simulation.datasets") -> LoadedScenario:
    """Return ``sc`` with another workload (a YAML path, relative to the scenario or instances/workloads); the
    scenario's ``arrival_rate_rps``, when set, replaces the workload's.

    Raises
    ------
    SpecError
        A missing or malformed workload file or trace, naming it and the scenario ``field`` that refers to it.
    """
    wl_path = resolve(workload, sc.path.parent, "workloads", str(sc.path), field)
    wl = load_spec(Workload, wl_path)
    if sc.spec.arrival_rate_rps is not None:
        wl = wl.model_copy(update={"arrival_rate_rps": sc.spec.arrival_rate_rps})
    return dataclasses.replace(sc, workload=wl, lengths=load_lengths(wl, wl_path.parent, sc.spec.seed),
                               workload_path=wl_path)


def load_scenario(path: Path | None = None) -> LoadedScenario:
    """Load and validate a scenario (the bundled default when ``path`` is None).

    Raises
    ------
    SpecError
        Any missing file, malformed field, unknown model or bad trace row, naming the file and field.
    """
    path = Path(path) if path is not None else DEFAULT_SCENARIO
    spec = load_spec(Scenario, path)
    base = path.parent
    pkg_path = resolve(spec.package, base, "packages", str(path), "package")
    package = load_spec(Package, pkg_path)
    library = load_spec(ChipletLibrary, resolve(spec.library, base, "chiplets", str(path), "library"))
    wl_path = resolve(spec.workload, base, "workloads", str(path), "workload")
    workload = load_spec(Workload, wl_path)
    if spec.arrival_rate_rps is not None:
        workload = workload.model_copy(update={"arrival_rate_rps": spec.arrival_rate_rps})
    try:
        json_card = spec.model.endswith(".json")
        ref = resolve(spec.model, base, "models", str(path), "model") if json_card else spec.model
        model = load_model(ref)
    except SpecError as exc:
        if exc.source == "model":
            raise SpecError(str(path), "model", exc.expected) from None
        raise
    missing = [f for f in model.families if not any(c.family == f for c in library.compute)]
    if missing:
        msg = f"compute chiplets for the model's {missing} blocks; the library has none"
        raise SpecError(str(path), "library", msg)
    lengths = load_lengths(workload, wl_path.parent, spec.seed)
    for field, refs in (("simulation.datasets", spec.simulation.datasets), ("sweep.workloads", spec.sweep.workloads)):
        for ds in refs:  # checked now, not after minutes of solving
            load_spec(Workload, resolve(ds, base, "workloads", str(path), field))
    loaded = LoadedScenario(path, spec, package, library, model, workload, lengths, file_sha256(path),
                            pkg_path, wl_path)
    if spec.generality is not None:  # every model checked now, not after the sweep

        model_scenarios(loaded, spec.generality.models)
    return loaded


def model_scenarios(sc: LoadedScenario, models: list[str], field: str = "generality.models"
                    ) -> list[LoadedScenario]:
    """Return ``sc`` once per model (bundled key or card path, relative to the scenario or instances/models).

    Parameters
    ----------
    sc : LoadedScenario
    models : list of str
    field : str
        Where the list came from, for messages (the scenario field, or ``--model`` on the command line).

    Raises
    ------
    SpecError
        An unknown or repeated model, or one whose compute chiplet types differ from the first model's (the
        design spaces would differ, so the models could not be compared point by point).
    """
    out: list[LoadedScenario] = []
    source = str(sc.path) if field.startswith("generality") else "command line"
    for i, ref in enumerate(models):
        where = f"{field}[{i}]" if field.startswith("generality") else f"{field} {ref}"
        try:
            card = resolve(ref, sc.path.parent, "models", str(sc.path), where) if ref.endswith(".json") else ref
            model = load_model(card)
        except SpecError as exc:
            raise SpecError(source, where, exc.expected) from None
        variant = dataclasses.replace(sc, model=model)
        if any(v.model.key == model.key for v in out):
            raise SpecError(source, where, f"each model once; {model.key} is listed twice")
        if out and variant.compute_types() != out[0].compute_types():
            msg = (f"a model served by the same chiplet types as {out[0].model.key} ({out[0].compute_types()}); "
                   f"{model.key} uses {variant.compute_types()}")
            raise SpecError(source, where, msg)
        out.append(variant)
    return out


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
        h.update(b"\0")
    return h.hexdigest()


def scenario_identity(sc: LoadedScenario) -> dict[str, Any]:
    """Everything a sweep job's result depends on besides the code: settings, file digests, the request sample.

    The scenario's name, solver time limit and file paths are left out (they do not change a screen score).
    """
    spec = sc.spec.model_dump(mode="json")
    return {
        "design_space": spec["design_space"],
        "estimator": spec["estimator"],
        "seed": spec["seed"],
        "package_sha256": file_sha256(sc.package_path),
        "library": sc.library.model_dump(mode="json"),
        "model_sha256": hashlib.sha256(repr(sc.model).encode()).hexdigest(),
        "workload": sc.workload.model_dump(mode="json"),
        "lengths_sha256": _digest(sc.lengths.prefill_tokens, sc.lengths.decode_tokens),
    }
