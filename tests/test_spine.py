"""HYDRA's spine (issue 29): one screen and one pick serve every command, so every command that works on a HYDRA
finalist names the same B*, and the pick is the scenario's (``energy.pick``, power limits included)."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load_scenario
from chipdse.studies.hydra.artifacts import PickRule
from chipdse.studies.hydra.stages import screen_and_pick

SPACE = {"total_chiplets": 24, "hbm_min": 3, "hbm_max": 6, "d2d_GBps": [256, 640], "max_batch": [8, 64]}
"""14,420 points of the default library and package (four HBM counts, two bandwidths, two batches)."""
LIMIT_W = 250.0
"""A package power limit that binds on this space: the throughput / TTFT B* of the unlimited space draws ~298 W."""


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default scenario on :data:`SPACE`, B* by tokens per joule under :data:`LIMIT_W`, dynamic batching, no
    simulation or generality stage."""
    inst = instances_dir()
    spec = yaml.safe_load((inst / "scenarios" / "default.yaml").read_text())
    spec.update(name="spine", library=str(inst / "chiplets" / "hydra.yaml"),
                package=str(inst / "packages" / "hydra-5x5.yaml"), workload=str(inst / "workloads" / "arxiv.yaml"),
                design_space=SPACE, estimator={"batching": "dynamic"}, work_limit=0.5,
                energy={"pick": "energy", "package_max_W": LIMIT_W}, simulation={"enabled": False},
                thermal={"enabled": False}, sweep={"simulate": 0})
    path = tmp_path_factory.mktemp("spine") / "spine.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _json(args: list[str]) -> object:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_command_names_the_same_b_star(scenario: Path, tmp_path: Path) -> None:
    """explore, compare, solve, simulate --best and sweep name one B*: the most tokens per joule among the stable
    designs that meet the power limit, not the throughput / TTFT B* the commands used to pick apart."""
    sc = load_scenario(scenario)
    _, table, picks = screen_and_pick(sc)
    b_star = picks.b_star
    assert picks.rule is PickRule.ENERGY and b_star.row["power_W"] <= LIMIT_W
    # by hand from the table: the most tokens/J among the stable points of at least average stable throughput
    st = table.frame[table.frame["stable"]]
    above = st[st["throughput_tps"] >= st["throughput_tps"].mean()]
    assert b_star.label == above.loc[above["tokens_per_J"].idxmax(), "label"]
    # the rule the other commands applied before (throughput / TTFT, no power limit) picks another design
    unlimited = sc.spec.energy.model_copy(update={"pick": "throughput-ttft", "package_max_W": None})
    plain = dataclasses.replace(sc, spec=sc.spec.model_copy(update={"energy": unlimited}))
    other = screen_and_pick(plain)[2].b_star
    assert other.label != b_star.label and other.row["power_W"] > LIMIT_W

    out = tmp_path / "out"
    # the names come from the screen and pick stages; a 1 s wall cap per exact solve keeps the layout solves short
    res = CliRunner().invoke(app, ["explore", str(scenario), "--out", str(out), "--time-limit", "1"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    names = {"explore": manifest["summary"]["b_star"]["design"]}
    rows = _json(["compare", "placement", str(scenario), "--point", "b-star", "--methods", "round-robin", "--json"])
    assert isinstance(rows, list)
    names["compare"] = rows[0]["design"]
    names["solve"] = _json(["solve", "placement", str(scenario), "--method", "hydra-greedy", "--json"])["design"]
    names["simulate"] = _json(["simulate", str(scenario), "--best", "--duration", "20", "--json"])["design"]
    sweep = _json(["sweep", str(scenario), "--json", "--store", str(tmp_path / "sweep.sqlite")])
    names["sweep"] = sweep["workloads"][sc.workload.name]["b_star"]["design"]
    assert names == dict.fromkeys(names, b_star.label)


ROOT = Path(__file__).resolve().parents[1]


def _params(folder: Path) -> list[tuple[str, str, str, str]]:
    """(file, function, parameter, annotation) of every function parameter under ``folder``."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                    ann = "" if a.annotation is None else ast.unparse(a.annotation)
                    out.append((str(path.relative_to(ROOT)), node.name, a.arg, ann))
    return out


def test_hydra_stages_pass_typed_artifacts() -> None:
    """Issue 29: no ``Any``-typed parameter (a callback or a row) in the HYDRA study package, and no DataFrame row in
    an evaluator's signature."""
    loose = [p for p in _params(ROOT / "src" / "chipdse" / "studies" / "hydra") if p[3] in ("Any", "") and p[2] not in
             ("self", "cls")]
    assert loose == []
    rows = [p for p in _params(ROOT / "evaluators") if "Series" in p[3] or (p[2] == "row" and "Any" in p[3])]
    assert rows == []


def test_a_registered_metric_reaches_the_table_the_csv_glossary_and_the_pareto_page(
        scenario: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The column registry is the one place a new metric is declared (issue 29: a newcomer adds a metric with a spec
    field, an evaluator function and one registration): here a die-area cost, 0.1 USD per mm^2 of compute die, is
    registered and appears in the scored table, its column descriptions and the Pareto page's figures of merit."""
    from chipdse.reports import pdf
    from chipdse.solvers.config import SolverConfig
    from chipdse.studies.hydra import columns
    from chipdse.studies.hydra.artifacts import ExploreResult, FinalistResult

    sc = load_scenario(scenario)
    area = {c.name: c.die_area_mm2 for c in sc.library.compute}

    def die_cost_usd(screen: object, pts: object, df: object) -> object:
        return sum(0.1 * area[t] * df[t] for t in pts.types)  # type: ignore[attr-defined, index]

    metric = columns.Metric(columns.Column("die_cost_usd", "USD", "compute die area x 0.1 USD/mm^2", "metrics",
                                           "min"), die_cost_usd)
    monkeypatch.setattr(columns, "METRICS", (*columns.METRICS, metric))
    _, table, picks = screen_and_pick(sc)
    row = table.frame.loc[picks.b_star.index]
    assert row["die_cost_usd"] == pytest.approx(sum(0.1 * area[t] * row[t] for t in table.types))
    assert table.columns()["die_cost_usd"].unit == "USD"
    r = ExploreResult(sc, table, picks, [FinalistResult(picks.b_star, [], [], [], [])], SolverConfig())
    assert f"die_cost_usd {row['die_cost_usd']:.4g} USD (min)" in pdf._merit_text(r)
