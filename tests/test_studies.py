"""One study interface: the kind-discriminated scenario loader, the study registry, one manifest schema for every
kind, one model-card reader, and the NOVA expert splits solved by the study (never by the evaluator)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.models import load_model, read_card
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import LoadedScenario, StudyScenario, load, load_scenario
from chipdse.core.solution import Solution, SolutionStatus, TerminationCondition
from chipdse.evaluators.nova_model import load_nova_model
from chipdse.evaluators.nova_system import NOVA, NOVA_EXACT, decode_step_s, expert_split_cases
from chipdse.evaluators.snake import load_card
from chipdse.solvers.config import SolverConfig
from chipdse.studies.nova import study as nova
from chipdse.studies.registry import STUDIES, load_study

SCENARIOS = instances_dir() / "scenarios"
MANIFEST_KEYS = {"kind", "command", "code_version", "scenario", "seed", "versions", "solver", "timings", "summary",
                 "details"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _explore(args: list[str]) -> dict:
    res = CliRunner().invoke(app, ["explore", *args])
    assert res.exit_code == 0, res.output
    out = Path(args[args.index("--out") + 1])
    assert {p.name for p in out.iterdir()} >= {"report.pdf", "manifest.json"}
    return json.loads((out / "manifest.json").read_text())


@pytest.mark.slow
def test_every_kind_writes_the_same_manifest_schema(write_scenario, tmp_path: Path) -> None:
    """HYDRA (a small explore scenario), SNAKE and NOVA (the bundled ones): the same top-level keys, the scenario
    file's and every named file's sha256 as hashlib computes them, the command line's work limit, wall cap and seed,
    each solve's termination, and wall and CPU seconds for the same stages."""
    hydra = write_scenario({"name": "small", "design_space": {  # 14 points of 9 chiplets: fast exact placement
        "total_chiplets": 9, "hbm_min": 3, "hbm_max": 4, "min_per_type": 1, "d2d_GBps": [512], "max_batch": [64]},
        # every stage runs (the simulation's too), on short windows: the schema is under test, not the numbers
        "simulation": {"candidates": 2, "spread": 1, "duration_s": 4, "max_duration_s": 6, "warmup_s": 1,
                       "measure_s": 3, "max_measure_s": 6, "datasets": ["arxiv.yaml"], "workers": 1}})
    paths = {"hydra": hydra, "snake": SCENARIOS / "snake-stratum.yaml", "nova": SCENARIOS / "nova-nemotron3-nano.yaml"}
    for kind, path in paths.items():
        man = _explore([str(path), "--out", str(tmp_path / kind), "--work-limit", "1", "--time-limit", "3",
                        "--seed", "2"])
        assert set(man) == MANIFEST_KEYS, kind
        assert man["kind"] == kind and man["seed"] == 2
        assert man["scenario"]["path"] == str(path) and man["scenario"]["sha256"] == _sha256(path)
        assert man["scenario"]["files"], kind
        for f in man["scenario"]["files"].values():
            assert f["sha256"] == _sha256(Path(f["path"]))
        assert {"chipdse", "numpy", "pyomo", "highspy", "ortools", "python"} <= set(man["versions"])
        solver = man["solver"]
        assert solver["time_limit_s"] == 3 and solver["work_limit"] == 1 and solver["seed"] == 2
        assert solver["threads"] >= 1
        assert solver["solves"] and all(s["termination"] in {t.value for t in TerminationCondition}
                                        for s in solver["solves"])
        assert set(man["timings"]["wall_s"]) == set(man["timings"]["cpu_s"]) != set()
        assert man["summary"] and man["details"]
    assert set(json.loads((tmp_path / "hydra" / "manifest.json").read_text())["scenario"]["files"]) == {
        "package", "library", "workload", "model"}


def test_kind_is_a_discriminated_union(tmp_path: Path) -> None:
    """No kind is HYDRA; snake and nova load as study scenarios; an unknown kind or a field of another kind is
    one SpecError naming the field."""
    assert isinstance(load(SCENARIOS / "default.yaml"), LoadedScenario)
    for name, kind in (("snake-stratum", "snake"), ("nova-nemotron3-nano", "nova")):
        sc = load(SCENARIOS / f"{name}.yaml")
        assert isinstance(sc, StudyScenario) and sc.spec.kind == kind and sc.sha256 == _sha256(sc.path)
        study, checked = load_study(sc.path)
        assert study is STUDIES[kind] and checked.spec == sc.spec
        with pytest.raises(SpecError, match="kind"):
            load_scenario(sc.path)  # the HYDRA-only loader refuses it by name
    spec = yaml.safe_load((SCENARIOS / "snake-stratum.yaml").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**spec, "kind": "snek"}))
    with pytest.raises(SpecError) as exc:
        load(bad)
    assert exc.value.field == "kind" and "one of ['hydra', 'snake', 'nova']" in str(exc.value)
    bad.write_text(yaml.safe_dump({**spec, "batches": [8, 0]}))
    with pytest.raises(SpecError) as exc:
        load(bad)
    assert exc.value.field == "batches[1]"  # the union's tag is not part of the field name
    bad.write_text(yaml.safe_dump({**spec, "kind": "nova"}))  # SNAKE fields are unknown to a NOVA scenario
    with pytest.raises(SpecError):
        load(bad)


def test_one_card_reader_behind_every_view(tmp_path: Path) -> None:
    """The HYDRA descriptor, the SNAKE card and the NOVA layer view read the same file through read_card."""
    card, path = read_card("qwen3-30b-a3b")
    assert card == json.loads((instances_dir() / "models" / "qwen3-30b-a3b.json").read_text())
    assert load_card("qwen3-30b-a3b") == card and load_card(path) == card
    published = card.get("published_params_total_exact") or card["published_params_total"]
    assert load_nova_model("qwen3-30b-a3b").published_params == published
    hydra_card, hydra_path = read_card("nemotron-h-4b")
    copy = tmp_path / "mine.json"
    copy.write_text(json.dumps(hydra_card))
    total = load_model("nemotron-h-4b").total_params
    assert load_model(copy).total_params == load_model(hydra_path).total_params == total
    with pytest.raises(SpecError, match="nemotron-h-4b") as exc:
        read_card("gpt-17")
    assert exc.value.field == "name"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match="valid JSON"):
        read_card(bad)


def test_the_evaluator_never_solves_an_expert_split() -> None:
    """A two-tier decode step of an MoE model without its splits is refused; with the study's splits it runs."""
    m = load_nova_model("qwen3-30b-a3b")
    with pytest.raises(ValueError, match="expert split"):
        decode_step_s(m, NOVA_EXACT, 32, 4096)
    cases = expert_split_cases(m, NOVA_EXACT, 32)
    assert cases and all(c.method == "milp-highs" for c in cases)
    solved = nova.solve_expert_splits(cases, SolverConfig(time_limit_s=20))
    step = decode_step_s(m, NOVA_EXACT, 32, 4096, expert_splits={c: o.makespan_s for c, o in solved.items()})
    assert step["moe_s"] > 0 and all(o.method == "milp-highs" and not o.note for o in solved.values())


def test_a_split_without_a_solution_falls_back_to_the_labelled_heuristic(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exact split that finds nothing within the limit is never a 0 s makespan: the static 1:9 split's
    makespan is used and the outcome says so."""
    real = nova.solve_expert_split

    def no_exact(problem, method, config):  # the MILP stops at its time limit with nothing
        if method == "milp-highs":
            return Solution(problem.name, method, True, SolutionStatus.NO_SOLUTION, TerminationCondition.TIME_LIMIT)
        return real(problem, method, config)

    monkeypatch.setattr(nova, "solve_expert_split", no_exact)
    m = load_nova_model("qwen3-30b-a3b")
    cfg = SolverConfig(time_limit_s=5)
    exact = nova.solve_expert_splits(expert_split_cases(m, NOVA_EXACT, 32), cfg)
    static = nova.solve_expert_splits(expert_split_cases(m, NOVA, 32), cfg)
    for (c, o), s in zip(exact.items(), static.values(), strict=True):
        assert o.method == "static-1-9" and o.makespan_s == s.makespan_s > 0
        assert "milp-highs found no split" in o.note and "wall cap 5 s" in o.note
        assert o.solution.termination is TerminationCondition.TIME_LIMIT and c.method == "milp-highs"
