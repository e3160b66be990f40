"""Load a scenario file and everything it names into one bundle."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

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
        from chipdse.studies.generality import model_scenarios

        model_scenarios(loaded, spec.generality.models)
    return loaded
