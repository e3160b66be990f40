"""docs/guide.md (issue 19 item 4): every file it shows is a valid input and every command it shows runs.

The guide marks its files ``<!-- ci-file:PATH -->`` and its commands ``<!-- ci:NAME -->`` (as the README does); the
files are written into one empty folder and each command block runs there with ``bash -e``, in the guide's order,
with the installed ``chipdse`` and ``dask`` first on the PATH.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from chipdse.core.models import load_model
from chipdse.core.schemas import json_schema
from chipdse.reports import nova_pages, snake_pages
from chipdse.studies.hydra.sweep import SIMULATED_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "guide.md").read_text()
FILES = dict(re.findall(r"<!-- ci-file:(\S+) -->\n```\w+\n(.*?)```\n<!-- /ci-file -->", GUIDE, re.S))
BLOCKS = re.findall(r"<!-- ci:([\w-]+) -->\n```bash\n(.*?)```\n<!-- /ci:\1 -->", GUIDE, re.S)
HF_CONFIG = "my/hf/config.json"
"""The guide's Hugging Face config (input of ``chipdse model import``, not a chipdse file)."""
SCHEMA_OF = {"package-4x4.yaml": "package", "library.yaml": "library", "workload.yaml": "workload",
             "scenario.yaml": "scenario", "tiny-llama.json": "model"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty folder holding the guide's files (what a reader would type)."""
    root = tmp_path_factory.mktemp("guide")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_guide_marks_its_files_and_commands() -> None:
    assert set(FILES) == {f"my/{name}" for name in SCHEMA_OF} | {HF_CONFIG}
    assert [name for name, _ in BLOCKS] == ["guide-schema", "guide-model-import", "guide-sweep", "guide-explore",
                                            "guide-compare", "guide-dask"]
    unmarked = re.findall(r"```bash\n", GUIDE)
    assert len(unmarked) == len(BLOCKS), "a bash block of the guide is not run by this test"


@pytest.mark.parametrize("rel", sorted(set(FILES) - {HF_CONFIG}))
def test_every_file_of_the_guide_satisfies_its_schema(rel: str) -> None:
    text = FILES[rel]
    data = json.loads(text) if rel.endswith(".json") else yaml.safe_load(text)
    kind = SCHEMA_OF[Path(rel).name]
    assert list(jsonschema.Draft202012Validator(json_schema(kind)).iter_errors(data)) == []
    if not rel.endswith(".json"):
        assert text.startswith(f"# yaml-language-server: $schema=schemas/{kind}.schema.json\n")


def test_the_guide_model_has_the_parameter_count_it_states(workspace: Path) -> None:
    """The guide counts its card's parameters by hand; the descriptor built from the card agrees."""
    embedding = 32_000 * 2_048
    layer = 2_048 * (2_048 + 2 * 512 + 2_048) + 3 * 2_048 * 5_632 + 2 * 2_048
    by_hand = 2 * embedding + 4 * layer + 2_048
    assert f"{by_hand:,}" in GUIDE
    assert load_model(workspace / "my" / "tiny-llama.json").total_params == by_hand


def _run(block: str, cwd: Path, timeout_s: float) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(["bash", "-e", "-c", block], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout_s)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "block"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_every_command_of_the_guide_runs(workspace: Path, name: str, block: str) -> None:
    if name == "guide-dask":
        pytest.importorskip("distributed")
    res = _run(block, workspace, 300)
    assert res.returncode == 0, f"{name}: {res.stderr[-2000:]}"
    if name == "guide-schema":
        assert json.JSONDecoder().raw_decode(res.stdout)[0]["title"] == "chipdse package"
        assert len(list((workspace / "my" / "schemas").glob("*.schema.json"))) == 5
    if name == "guide-model-import":  # the imported card counts what the guide counts by hand for the same model
        imported = load_model(workspace / "my" / "tiny-llama-hf.json")
        assert imported.total_params == load_model(workspace / "my" / "tiny-llama.json").total_params == 311_445_504
    if name == "guide-sweep":
        summary = json.loads(res.stdout.strip().splitlines()[-1])
        assert summary["points"] == 120  # stated in the guide: (11 + 10 + 9) compositions x 2 x 2
        assert "120 points" in GUIDE and summary["jobs_stored"] == summary["jobs"]  # the rerun read every job
    if name == "guide-explore":
        assert {p.name for p in (workspace / "out" / "mine").iterdir()} >= {"report.pdf", "points.csv",
                                                                            "points.columns.csv", "manifest.json"}
    if name == "guide-compare":
        assert (workspace / "out" / "placement.csv").exists()
    if name == "guide-dask":
        assert "on Dask at tcp://" in res.stdout


def _documented(column: str) -> bool:
    return f"`{column}`" in GUIDE


def test_the_guide_describes_every_column_of_every_csv(workspace: Path) -> None:
    """Every column the written points.csv and compare CSV have, every SNAKE / NOVA column and every simulated
    candidate's column is named in the guide."""
    points = workspace / "out" / "mine" / "points.columns.csv"
    placement = workspace / "out" / "placement.csv"
    if not points.exists() or not placement.exists():
        pytest.skip("runs after the guide's explore and compare blocks")
    with points.open() as f:
        columns = [r["column"] for r in csv.DictReader(f)]
    with placement.open() as f:
        columns += next(csv.reader(f))
    columns += [*snake_pages.columns(None), *nova_pages.columns(None), *SIMULATED_COLUMNS]
    missing = sorted({c for c in columns if not _documented(c)})
    assert missing == []
