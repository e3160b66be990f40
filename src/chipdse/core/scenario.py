"""Load a scenario file and everything it names into one bundle."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chipdse.core.errors import SpecError, shorten
from chipdse.core.models import ModelDescriptor, find_card, load_model, read_card
from chipdse.core.overrides import Override, as_record, reaching, validated
from chipdse.core.paths import instances_dir
from chipdse.core.specs import (
    MAX_DESIGN_POINTS,
    ChipletLibrary,
    NovaScenario,
    Package,
    Scenario,
    SnakeScenario,
    T,
    Workload,
    check_requests,
    file_sha256,
    load_spec,
    parse_scenario_spec,
    parse_spec,
    read_yaml,
    resolve,
)
from chipdse.core.workloads import LengthSample, load_lengths

DEFAULT_SCENARIO = instances_dir() / "scenarios" / "default.yaml"


@dataclass(frozen=True, repr=False)
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
    named_files: dict[str, Path] = field(default_factory=dict)
    """Every file the scenario names, by field (package, library, workload, model card)."""
    overrides: tuple[Override, ...] = ()
    """The ``--set`` options applied to the scenario and the files it names (:mod:`chipdse.core.overrides`)."""
    data: dict[str, Any] | None = None
    """The scenario mapping when it was given as one (:func:`load` ``data``), else None (it is the file ``path``)."""

    def __repr__(self) -> str:
        """One line: name, file, model, package, workload, design points' knobs and the overrides."""
        return scenario_repr(self, model=self.model.name, package=self.package_path.name,
                             library=self.named_files.get("library", Path(self.spec.library)).name,
                             workload=self.workload_path.name, types=self.compute_types())

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
    wl = _with_rate(sc.path, sc.spec, load_spec(Workload, wl_path))
    return dataclasses.replace(sc, workload=wl, lengths=load_lengths(wl, wl_path.parent, sc.spec.seed, wl_path),
                               workload_path=wl_path)


@dataclass(frozen=True, repr=False)
class StudyScenario:
    """A SNAKE or NOVA scenario file, validated, with every model card it names found.

    Attributes
    ----------
    path : Path
    spec : SnakeScenario or NovaScenario
    sha256 : str
        Digest of the scenario file.
    named_files : dict[str, Path]
        The card file of each field naming a model (e.g. ``models[0]``).
    overrides : tuple of Override
        The ``--set`` options applied to the scenario.
    data : dict, optional
        The scenario mapping when it was given as one (:func:`load` ``data``), else None.
    """

    path: Path
    spec: SnakeScenario | NovaScenario
    sha256: str
    named_files: dict[str, Path] = field(default_factory=dict)
    overrides: tuple[Override, ...] = ()
    data: dict[str, Any] | None = None

    def __repr__(self) -> str:
        """One line: kind, name, file, the model cards and the overrides."""
        return scenario_repr(self, models=sorted({p.stem for p in self.named_files.values()}))


def scenario_repr(sc: LoadedScenario | StudyScenario, **parts: Any) -> str:
    """``Kind(name=..., path=..., <parts>, overrides={...})`` in one line: what a notebook shows for a scenario
    (the dataclass's own repr would print every table it holds)."""
    items = {"kind": sc.spec.kind, "name": sc.spec.name, "path": str(sc.path), **parts}
    if sc.overrides:
        items["overrides"] = as_record(sc.overrides)
    body = ", ".join(f"{k}={v!r}" for k, v in items.items())
    return f"{type(sc).__name__}({body})"


AnyScenario = LoadedScenario | StudyScenario
"""What :func:`load` returns: a HYDRA scenario with everything resolved, or a SNAKE / NOVA study scenario."""


DICT_NAME = "<dict>"
"""The file name a scenario given as a mapping has (its errors read ``BASE_DIR/<dict>: field: ...``)."""


def load(path: Path | None = None, overrides: tuple[Override, ...] = (), data: Mapping[str, Any] | None = None,
         ) -> AnyScenario:
    """Load and validate a scenario file of any ``kind`` (the bundled default when ``path`` is None).

    ``overrides`` (``--set PATH=VALUE``, :func:`chipdse.core.overrides.parse_overrides`) change the scenario and,
    for HYDRA, the library, package and workload it names before each file is validated.

    ``data``, when given, is the scenario itself (the mapping a YAML file would hold) and ``path`` the folder its
    relative file names are resolved against (default: the working folder); the scenario is then named
    ``path/<dict>`` in errors and the manifest, and its digest is that of its canonical JSON.

    The file is validated through one pydantic union discriminated by ``kind`` (``hydra`` when absent; see
    :data:`chipdse.core.specs.ScenarioSpec`); a HYDRA scenario then has its package, library, model, workload and
    traces resolved (:class:`LoadedScenario`), a SNAKE or NOVA scenario its model cards found
    (:class:`StudyScenario`; every card read and checked by :func:`~chipdse.core.models.read_card`, card paths
    resolved against the scenario's folder; whether the study's evaluator supports each card is the study's
    check).

    Raises
    ------
    SpecError
        Any missing file, malformed field, unknown kind or model, or bad trace row, naming the file and field;
        an override's bad path or value naming the ``--set`` option (source ``--set``).
    """
    if data is None:
        path = Path(path) if path is not None else DEFAULT_SCENARIO
        raw, digest = read_yaml(path), file_sha256(path)
    else:
        path = (Path(path) if path is not None else Path.cwd()).resolve() / DICT_NAME
        raw, digest = data_dict(data, str(path)), data_sha256(data)
    spec = validated(raw, overrides, "scenario", lambda d: parse_scenario_spec(d, str(path)))
    if isinstance(spec, Scenario):
        try:
            return _load_hydra(path, spec, overrides, digest, data)
        except SpecError as exc:  # a cross-file check an override failed: name the --set
            raise _named(overrides, exc) from None
    outside = [ov for ov in overrides if ov.target != "scenario"]
    if outside:
        raise SpecError(outside[0].source, " ".join(ov.text for ov in outside), f"a field of this kind: {spec.kind} "
                        "scenario (library., package. and workload. paths reach the files a HYDRA scenario names)")
    try:
        _check_study_energy_keys(path, spec)
    except SpecError as exc:  # a key an override named: say so
        raise _named(overrides, exc) from None
    files: dict[str, Path] = {}
    for where, ref in spec.card_refs():
        try:
            files[where] = find_card(resolve(ref, path.parent, "models", str(path), where)
                                     if ref.endswith(".json") else ref)
        except SpecError as exc:
            raise SpecError(str(path), where, exc.expected) from None
        read_card(files[where])  # read and checked now: an error names the card file and its field
    resolved = {ref: str(files[where].resolve()) for where, ref in spec.card_refs() if ref.endswith(".json")}
    return StudyScenario(path, _with_card_paths(spec, resolved), digest, files, overrides, _kept(data))


def _named(overrides: tuple[Override, ...], exc: SpecError) -> SpecError:
    """A cross-file check's error re-stated as the overrides whose path reaches its field (:func:`reaching`), or
    ``exc`` as it is."""
    hit = reaching(overrides, exc.field)
    if not hit:
        return exc
    return SpecError(hit[0].source, " ".join(ov.text for ov in hit), f"{exc.expected} (as {exc.source}: {exc.field})")


def _kept(data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A deep copy of a mapping scenario, kept on the loaded scenario so it can be loaded again with overrides."""
    return None if data is None else copy.deepcopy(dict(data))


def data_dict(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``data`` as the mapping a scenario file would hold.

    Raises
    ------
    SpecError
        ``data`` is not a mapping with string keys (source ``source``).
    """
    if not isinstance(data, Mapping):
        raise SpecError(source, "", f"a mapping of scenario fields (as a scenario YAML holds), got {shorten(data)}")
    bad = _non_string_key(data, "")
    if bad is not None:
        where, key = bad
        raise SpecError(source, where or "(top level)", f"field names are strings (as a YAML file's keys), got the "
                        f"key {key!r} ({type(key).__name__})")
    return copy.deepcopy(dict(data))


def _non_string_key(value: Any, prefix: str) -> tuple[str, Any] | None:
    """The first key that is not a string in ``value``'s nested mappings (lists entered by index): ``(dotted path
    of the mapping holding it, the key)``, or None."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return prefix, k
            hit = _non_string_key(v, f"{prefix}.{k}" if prefix else k)
            if hit is not None:
                return hit
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            hit = _non_string_key(v, f"{prefix}[{i}]")
            if hit is not None:
                return hit
    return None


def data_sha256(data: Mapping[str, Any]) -> str:
    """SHA-256 of ``data`` as canonical JSON (sorted keys), the digest of a scenario given as a mapping."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _with_card_paths(spec: SnakeScenario | NovaScenario, resolved: dict[str, str]
                     ) -> SnakeScenario | NovaScenario:
    """``spec`` with every card path among its model references replaced by the absolute path it resolved to
    (relative to the scenario's folder first, as HYDRA's ``model:``), so the studies read the same files from
    any working folder; bundled keys stay as they are."""
    if not resolved:
        return spec

    def fix(refs: list[str]) -> list[str]:
        return [resolved.get(r, r) for r in refs]

    if isinstance(spec, NovaScenario):
        gpus = {resolved.get(k, k): v for k, v in spec.gpus.items()}
        return spec.model_copy(update={"models": fix(spec.models), "gpus": gpus})
    serving = spec.serving.model_copy(update={"models": None if spec.serving.models is None else
                                              fix(spec.serving.models)})
    area = spec.area_split.model_copy(update={"model": resolved.get(spec.area_split.model,
                                                                    spec.area_split.model)})
    return spec.model_copy(update={"models": fix(spec.models), "mode_models": fix(spec.mode_models),
                                   "serving": serving, "area_split": area})


def load_scenario(path: Path | None = None, overrides: tuple[Override, ...] = ()) -> LoadedScenario:
    """Load and validate a HYDRA scenario (the bundled default when ``path`` is None), as :func:`load`.

    Raises
    ------
    SpecError
        As :func:`load`; also a SNAKE or NOVA scenario (field ``kind``: this command runs HYDRA scenarios).
    """
    return hydra_only(load(path, overrides))


def hydra_only(sc: AnyScenario) -> LoadedScenario:
    """``sc`` when it is a HYDRA scenario.

    Raises
    ------
    SpecError
        A SNAKE or NOVA scenario (field ``kind``: this command runs HYDRA scenarios).
    """
    if not isinstance(sc, LoadedScenario):
        msg = f"hydra (this command runs the HYDRA chiplet DSE; use chipdse explore), got {sc.spec.kind!r}"
        raise SpecError(str(sc.path), "kind", msg)
    return sc


def reload(sc: AnyScenario, overrides: tuple[Override, ...]) -> AnyScenario:
    """``sc`` loaded again from its file (or its mapping) with ``overrides`` after the ones it already has.

    Returns ``sc`` itself when ``overrides`` is empty. A later override on the same path wins.

    Raises
    ------
    SpecError
        As :func:`load`.
    """
    if not overrides:
        return sc
    if sc.data is not None:
        return load(sc.path.parent, sc.overrides + overrides, data=sc.data)
    return load(sc.path, sc.overrides + overrides)


def _with_rate(path: Path, spec: Scenario, workload: Workload) -> Workload:
    """The workload at the scenario's ``arrival_rate_rps`` when it sets one (SpecError naming that field when the
    rate times the workload's ``duration_s`` offers too many requests)."""
    if spec.arrival_rate_rps is None:
        return workload
    try:
        check_requests(spec.arrival_rate_rps, workload.duration_s, "arrival_rate_rps x the workload's duration_s")
    except ValueError as exc:
        raise SpecError(str(path), "arrival_rate_rps", str(exc)) from None
    return workload.model_copy(update={"arrival_rate_rps": spec.arrival_rate_rps})


def _check_cells(path: Path, spec: Scenario, pkg_path: Path, package: Package, lib_path: Path,
                 library: ChipletLibrary) -> None:
    """Cross-file checks of the package: every chiplet fits a cell (pitch^2, mm^2), the design space's
    ``total_chiplets`` fits the grid's cells and ``hbm_max`` stacks fit the design (``total_chiplets``) and the
    cells stacks may take (the ring's when ``hbm_on_ring``).

    Raises
    ------
    SpecError
        Naming the library field of a die larger than a cell, or the scenario's ``design_space.total_chiplets`` or
        ``design_space.hbm_max``.
    """
    cell_mm2 = package.cell_pitch_mm ** 2
    dies = [(f"compute[{i}].die_area_mm2", c.die_area_mm2) for i, c in enumerate(library.compute)]
    for where, area in [*dies, ("memory.area_mm2", library.memory.area_mm2)]:
        if area > cell_mm2 * (1 + 1e-9):
            msg = (f"at most one cell of the package, {package.cell_pitch_mm:g} mm x {package.cell_pitch_mm:g} mm = "
                   f"{cell_mm2:g} mm^2 ({pkg_path}: cell_pitch_mm; each cell holds one chiplet), got {area:g}")
            raise SpecError(str(lib_path), where, msg)
    total = spec.design_space.total_chiplets
    if total > package.n_cells:
        msg = (f"at most the {package.rows} x {package.cols} = {package.n_cells} cells of the package "
               f"({pkg_path}; each chiplet takes one cell), got {total}")
        raise SpecError(str(path), "design_space.total_chiplets", msg)
    ds = spec.design_space
    ring = len(package.ring_cells()) if package.hbm_on_ring else package.n_cells
    most = min(total, ring)
    if ds.hbm_max > most:  # no point could hold that many stacks: refused now, not after a sweep of empty blocks
        where = (f"the package's {ring} ring cells ({pkg_path}: HBM stacks sit on the outer ring)"
                 if package.hbm_on_ring and ring < total else f"design_space.total_chiplets ({total}: the stacks "
                 "are among the design's chiplets)")
        msg = f"at most {most}, {where}; got {ds.hbm_max}"
        raise SpecError(str(path), "design_space.hbm_max", msg)


def _check_table_keys(path: Path, spec: Scenario) -> None:
    """Every key of ``energy.table`` names a constant of ``instances/energy/common.yaml``, every key of
    ``cost.table`` one of ``instances/cost/common.yaml`` and every key of ``thermal.stack`` an entry of
    ``instances/thermal/package.yaml`` (SpecError naming the field otherwise)."""
    for fld, given, file in (("energy.table", spec.energy.table, instances_dir() / "energy" / "common.yaml"),
                             ("cost.table", spec.cost.table, instances_dir() / "cost" / "common.yaml"),
                             ("thermal.stack", spec.thermal.stack, instances_dir() / "thermal" / "package.yaml")):
        if not given:
            continue
        known = read_yaml(file)
        for key in given:
            if key not in known:
                msg = f"a key of {file} ({', '.join(sorted(known))}), got {key!r}"
                raise SpecError(str(path), f"{fld}.{key}", msg)


def _check_study_energy_keys(path: Path, spec: SnakeScenario | NovaScenario) -> None:
    """Every key of a SNAKE / NOVA scenario's ``energy.table`` names a constant of ``instances/energy/common.yaml``
    or of the study's own file (``snake.yaml``, ``nova.yaml``); SpecError naming the field otherwise."""
    if not spec.energy.table:
        return
    files = [instances_dir() / "energy" / f"{n}.yaml" for n in ("common", spec.kind)]
    known = {k for f in files for k in read_yaml(f)}
    for key in spec.energy.table:
        if key not in known:
            msg = f"a key of {' or '.join(str(f) for f in files)} ({', '.join(sorted(known))}), got {key!r}"
            raise SpecError(str(path), f"energy.table.{key}", msg)


def _check_core_area(path: Path, spec: Scenario, lib_path: Path, library: ChipletLibrary,
                     model: ModelDescriptor) -> None:
    """Every compute chiplet the model uses keeps core area at every swept D2D bandwidth: die - overhead - PHY(B)
    > 0 (HYDRA Sec. III-C: PHY area comes out of the die cap; ``D2DPhy.area_for``).

    Raises
    ------
    SpecError
        Naming the library's ``overhead_area_mm2`` when the overhead alone fills the die, else the scenario's
        ``design_space.d2d_GBps[j]`` that leaves no core area, with the areas.
    """
    for i, c in enumerate(library.compute):
        if c.family not in model.families:
            continue
        if c.overhead_area_mm2 >= c.die_area_mm2:
            msg = f"less than the die's {c.die_area_mm2:g} mm^2 (die_area_mm2), got {c.overhead_area_mm2:g}"
            raise SpecError(str(lib_path), f"compute[{i}].overhead_area_mm2", msg)
        for j, bw in enumerate(spec.design_space.d2d_GBps):
            phy = library.phy.area_for(bw)
            if c.die_area_mm2 - c.overhead_area_mm2 - phy <= 0:
                msg = (f"{bw:g} GB/s per link needs {phy:.4g} mm^2 of D2D PHY on chiplet {c.name}, which leaves no "
                       f"core area under its {c.die_area_mm2:g} mm^2 die after {c.overhead_area_mm2:g} mm^2 of "
                       f"overhead ({lib_path}: phy, compute[{i}])")
                raise SpecError(str(path), f"design_space.d2d_GBps[{j}]", msg)


def _check_size(path: Path, spec: Scenario, n_types: int) -> None:
    """The design space holds at most :data:`~chipdse.core.specs.MAX_DESIGN_POINTS` points (SpecError naming the
    scenario's ``design_space`` otherwise)."""
    ds = spec.design_space
    n = ds.n_points(n_types)
    if n > MAX_DESIGN_POINTS:
        msg = (f"{n:,} design points ({ds.total_chiplets} chiplets over {n_types} compute types and HBM "
               f"{ds.hbm_min}..{ds.hbm_max}, x {len(ds.d2d_GBps)} bandwidths x {len(ds.max_batch)} batches); at most "
               f"{MAX_DESIGN_POINTS:,} (about a minute of screening): narrow hbm_min..hbm_max, raise min_per_type "
               "or shorten d2d_GBps / max_batch")
        raise SpecError(str(path), "design_space", msg)


def _check_longest_request(spec: Scenario, package: Package, library: ChipletLibrary, lib_path: Path,
                           model: ModelDescriptor, card: Path, workload: Workload, wl_path: Path,
                           lengths: LengthSample) -> None:
    """The weights, and beside them the longest request, fit in the HBM of the largest design (HYDRA Eq. 1 with
    one request): weights + KV cache at its full context + SSM state <= stacks x capacity, with the most stacks any
    point can have (``design_space.hbm_max``, and the package's ring cells when stacks sit on the ring). A model or
    request that fails this can be served by no design point, whatever the split of the stacks.

    Raises
    ------
    SpecError
        Weights alone too large: naming the library's ``memory.capacity_GB`` and the card. Else naming the trace
        file and its token columns with the request's line (or the workload's parametric ``lengths``), the bytes
        needed and the bytes available.
    """
    stacks = min(spec.design_space.hbm_max, len(package.ring_cells()) if package.hbm_on_ring else package.n_cells)
    avail = stacks * library.memory.capacity_GB * 1e9
    largest = (f"the largest design holds {stacks} HBM stacks x {library.memory.capacity_GB:g} GB = "
               f"{avail / 1e9:.4g} GB (design_space.hbm_max {spec.design_space.hbm_max}, "
               f"{len(package.ring_cells())} ring cells)")
    if model.weight_bytes > avail:
        msg = (f"the model's weights ({model.weight_bytes / 1e9:.4g} GB; {card}, hidden_size "
               f"{model.hidden_size}) do not fit: {largest}; raise memory.capacity_GB or design_space.hbm_max, or "
               "choose a smaller model")
        raise SpecError(str(lib_path), "memory.capacity_GB", msg)
    total = lengths.prefill_tokens + lengths.decode_tokens
    i = int(np.argmax(total))
    need = model.weight_bytes + model.kv_bytes_per_token() * float(total[i]) + model.state_bytes_per_request()
    if need <= avail:
        return
    if workload.trace is not None:
        source = str(resolve(workload.trace, wl_path.parent, "traces"))
        field, which = "num_prefill_tokens", f"the request on line {i + 2}"
    else:
        source, field, which = str(wl_path), "lengths", "the longest drawn request"
    msg = (f"{which} has {int(total[i]):,} tokens: its KV cache and state beside the model's weights need "
           f"{need / 1e9:.4g} GB, but {largest}, so no design point could serve it")
    raise SpecError(source, field, msg)


def _load_with(cls: type[T], file: Path, overrides: tuple[Override, ...], target: str) -> T:
    """One file the scenario names, validated as ``cls`` with the overrides that reach it."""
    return validated(read_yaml(file), overrides, target, lambda d: parse_spec(cls, d, str(file)))


def _load_hydra(path: Path, spec: Scenario, overrides: tuple[Override, ...] = (), digest: str = "",
                data: Mapping[str, Any] | None = None) -> LoadedScenario:
    """Resolve and check everything a HYDRA scenario names."""
    base = path.parent
    pkg_path = resolve(spec.package, base, "packages", str(path), "package")
    package = _load_with(Package, pkg_path, overrides, "package")
    lib_path = resolve(spec.library, base, "chiplets", str(path), "library")
    library = _load_with(ChipletLibrary, lib_path, overrides, "library")
    _check_cells(path, spec, pkg_path, package, lib_path, library)
    _check_table_keys(path, spec)
    wl_path = resolve(spec.workload, base, "workloads", str(path), "workload")
    workload = _with_rate(path, spec, _load_with(Workload, wl_path, overrides, "workload"))
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
    _check_core_area(path, spec, lib_path, library, model)
    _check_size(path, spec, sum(c.family in model.families for c in library.compute))
    lengths = load_lengths(workload, wl_path.parent, spec.seed, wl_path)
    _check_longest_request(spec, package, library, lib_path, model, find_card(ref), workload, wl_path, lengths)
    for fld, refs in (("simulation.datasets", spec.simulation.datasets), ("sweep.workloads", spec.sweep.workloads)):
        for ds in refs:  # checked now, not after minutes of solving
            ds_path = resolve(ds, base, "workloads", str(path), fld)
            load_lengths(_with_rate(path, spec, load_spec(Workload, ds_path)), ds_path.parent, spec.seed, ds_path)
    named = {"package": pkg_path, "library": lib_path, "workload": wl_path, "model": find_card(ref)}
    loaded = LoadedScenario(path, spec, package, library, model, workload, lengths, digest or file_sha256(path),
                            pkg_path, wl_path, named, overrides, _kept(data))
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
    source = str(sc.path) if field.startswith(("generality", "simulation")) else "command line"
    for i, ref in enumerate(models):
        where = f"{field}[{i}]" if field.startswith(("generality", "simulation")) else f"{field} {ref}"
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
        # only when given, so the keys of runs without them stay as they were
        **({"energy_table": spec["energy"]["table"]} if spec["energy"]["table"] else {}),
        **({"overrides": as_record(sc.overrides)} if sc.overrides else {}),
    }
