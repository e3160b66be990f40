"""JSON Schemas of the input files (issue 19 item 2): ``chipdse schema KIND`` validates every bundled file, refuses
what the loaders refuse, describes every field with its unit, and the bundled copies are up to date."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import jsonschema
import pydantic
import pytest
import yaml
from typer.testing import CliRunner

import chipdse.api  # noqa: F401  (imports every module, so every pydantic model of the package is defined)
from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.models import CARD_FIELDS, check_card
from chipdse.core.paths import instances_dir
from chipdse.core.schemas import SCHEMAS, ModelCard, json_schema, schema_dir, schema_text
from chipdse.core.specs import ChipletLibrary, Package, Workload, load_spec

FOLDERS = {"scenario": "scenarios", "library": "chiplets", "package": "packages", "workload": "workloads"}
"""The instances/ folder of each YAML kind."""


def _bundled(kind: str) -> list[Path]:
    if kind == "model":
        return sorted((instances_dir() / "models").glob("*.json"))
    return sorted((instances_dir() / FOLDERS[kind]).glob("*.yaml"))


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())


def _cli_schema(kind: str) -> dict:
    res = CliRunner().invoke(app, ["schema", kind])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("kind", list(SCHEMAS))
def test_the_printed_schema_validates_every_bundled_file(kind: str) -> None:
    schema = _cli_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = _bundled(kind)
    assert files, f"no bundled {kind} file"
    for path in files:
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(_read(path))]
        assert errors == [], path


def test_the_scenario_schema_covers_all_three_kinds() -> None:
    """Each bundled scenario kind (hydra, snake, nova) is among the files the scenario schema accepts."""
    kinds = {_read(p).get("kind", "hydra") for p in _bundled("scenario")}
    assert kinds == {"hydra", "snake", "nova"}


@pytest.mark.parametrize(("kind", "cls", "bundled", "change"), [
    ("package", Package, "packages/hydra-5x5.yaml", {"rows": -5}),
    ("package", Package, "packages/hydra-5x5.yaml", {"row": 5}),
    ("library", ChipletLibrary, "chiplets/hydra.yaml", {"memory": {"name": "HBM3"}}),
    ("workload", Workload, "workloads/arxiv.yaml", {"arrival": "bursty"}),
    ("workload", Workload, "workloads/arxiv.yaml", {"arrival_rate_rps": "fast"}),
])
def test_the_schema_refuses_what_the_loader_refuses(tmp_path: Path, kind: str, cls: type, bundled: str,
                                                     change: dict) -> None:
    """A negative size, a misspelt field, a missing field, a value outside a choice and a string for a number:
    the loader raises a SpecError and the schema reports an error."""
    data = {**_read(instances_dir() / bundled), **change}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError):
        load_spec(cls, path)
    assert list(jsonschema.Draft202012Validator(json_schema(kind)).iter_errors(data))


def test_a_scenario_with_a_misspelt_field_is_refused_by_the_schema() -> None:
    data = {**_read(instances_dir() / "scenarios" / "default.yaml"), "work_limt": 3}
    assert list(jsonschema.Draft202012Validator(json_schema("scenario")).iter_errors(data))
    nova = {**_read(instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml"), "batches": [0]}
    assert list(jsonschema.Draft202012Validator(json_schema("scenario")).iter_errors(nova))


@pytest.mark.parametrize("change", [{"hidden_size": 0}, {"hiden_size": 4096}, {"torch_dtype": "int4"},
                                    {"num_experts_per_tok": "two"}])
def test_the_card_schema_refuses_what_the_card_reader_refuses(change: dict) -> None:
    card = {**_read(instances_dir() / "models" / "llama-3-8b.json"), **change}
    with pytest.raises(SpecError):
        check_card(card, "card.json")
    assert list(jsonschema.Draft202012Validator(json_schema("model")).iter_errors(card))


def test_the_card_schema_names_every_field_the_card_reader_accepts() -> None:
    """ModelCard and chipdse.core.models.CARD_FIELDS list the same fields (add a new card field to both)."""
    assert set(ModelCard.model_fields) == set(CARD_FIELDS)


def _package_models() -> list[type[pydantic.BaseModel]]:
    """Every pydantic model class defined in the package (every module is imported through chipdse.api)."""
    found = set()
    for name, module in list(sys.modules.items()):
        if name == "chipdse" or name.startswith("chipdse."):
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, pydantic.BaseModel) and cls.__module__.startswith("chipdse"):
                    found.add(cls)
    return sorted(found, key=lambda c: (c.__module__, c.__name__))


def test_every_pydantic_field_has_a_description() -> None:
    models = _package_models()
    assert len(models) > 20, "the package's specs were not found"
    missing = [f"{c.__module__}.{c.__name__}.{f}" for c in models for f, info in c.model_fields.items()
               if not (info.description or "").strip()]
    assert missing == []


UNIT_WORDS = {"_s": r"\bs\b|\bseconds\b", "_mm2": r"mm\^2", "_GBps": r"GB/s", "_TBps": r"TB/s", "_Gbps": r"Gb/s",
              "_TFLOPS": r"TFLOP/s", "_ns": r"\bns\b", "_us": r"\bus\b", "_mm": r"\bmm\b", "_GB": r"\bGB\b",
              "_kb": r"\bKB\b", "_bytes": r"\bbytes\b", "_rps": r"req/s|requests/s|requests per second"}
"""How a description names the unit of a field whose name ends in a unit suffix (DESIGN.md, Conventions)."""


def test_every_field_with_a_unit_in_its_name_names_the_unit_in_its_description() -> None:
    wrong = [f"{c.__name__}.{f}: {info.description}" for c in _package_models() for f, info in c.model_fields.items()
             for suffix, word in UNIT_WORDS.items() if f.endswith(suffix) and not re.search(word, info.description)]
    assert wrong == []


@pytest.mark.parametrize("kind", list(SCHEMAS))
def test_the_bundled_schema_files_are_up_to_date(kind: str) -> None:
    """instances/schemas/ holds what ``chipdse schema --write instances/schemas`` writes today."""
    assert (schema_dir() / f"{kind}.schema.json").read_text() == schema_text(kind), \
        "regenerate with: chipdse schema --write instances/schemas"


@pytest.mark.parametrize("kind", list(FOLDERS))
def test_every_bundled_yaml_names_its_schema_in_its_first_line(kind: str) -> None:
    for path in _bundled(kind):
        first = path.read_text().splitlines()[0]
        assert first == f"# yaml-language-server: $schema=../schemas/{kind}.schema.json", path
        assert (path.parent / first.split("$schema=")[1]).resolve() == (schema_dir() / f"{kind}.schema.json")


def test_schema_write_writes_the_files_and_a_bad_kind_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["schema", "--write", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == sorted(f"{k}.schema.json" for k in SCHEMAS)
    bad = CliRunner().invoke(app, ["schema", "scenarios", "--write", str(tmp_path / "t")])
    assert bad.exit_code == 2
    assert "KIND: must be one of" in bad.stderr and not (tmp_path / "t").exists()


def test_every_schema_carries_its_version_and_files_may_state_theirs() -> None:
    from chipdse.core.specs import SCHEMA_VERSION

    for kind in SCHEMAS:
        schema = json_schema(kind)
        assert schema["version"] == SCHEMA_VERSION
        assert schema["$id"] == f"urn:chipdse:schema:{kind}:v{SCHEMA_VERSION}"
        # every file kind (each of the scenario's three kinds) has the field
        bodies = [schema] if "properties" in schema else [d for d in schema["$defs"].values() if "kind" in
                                                           d.get("properties", {})]
        assert bodies and all("schema_version" in b["properties"] for b in bodies), kind
    check_card(json.loads((instances_dir() / "models" / "llama-3-8b.json").read_text()) | {"schema_version": 1}, "c")


@pytest.mark.parametrize("which", ["scenario", "library", "card"])
def test_a_file_for_a_newer_schema_is_one_line_exit_2(which: str, write_scenario, tmp_path: Path) -> None:  # noqa: ANN001
    from chipdse.core.specs import SCHEMA_VERSION

    newer = SCHEMA_VERSION + 1
    overrides: dict = {"schema_version": newer} if which == "scenario" else {}
    if which == "library":
        lib = yaml.safe_load((instances_dir() / "chiplets" / "hydra.yaml").read_text()) | {"schema_version": newer}
        (tmp_path / "lib.yaml").write_text(yaml.safe_dump(lib))
        overrides["library"] = str(tmp_path / "lib.yaml")
    if which == "card":
        card = json.loads((instances_dir() / "models" / "nemotron-h-4b.json").read_text()) | {"schema_version": newer}
        (tmp_path / "card.json").write_text(json.dumps(card))
        overrides["model"] = str(tmp_path / "card.json")
    res = CliRunner().invoke(app, ["sweep", str(write_scenario(overrides))])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "schema_version" in lines[0] and f"(got {newer})" in lines[0]
    assert lines[0].split("schema_version:", 1)[1].count(str(newer)) == 1, "the value is quoted once"
    assert "upgrade chipdse" in lines[0]
