"""Every command-line option that is bad, or does not apply, is one ``error: ...`` line naming the option (or the
file and field), exit code 2, within 10 s, and no output folder left behind (issue 14, "Validation at the
boundary": an option is never silently ignored).

Each case writes what it needs into ``tmp_path`` and runs the command line in-process (:func:`chipdse.cli.invoke`,
what the ``chipdse`` entry point runs), as ``tests/test_bad_inputs.py`` does for bad files.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from chipdse.cli import invoke
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load_scenario
from chipdse.runtime.store import ResultsStore
from chipdse.studies.common import Settings
from chipdse.studies.nova import study as nova

SCENARIOS = instances_dir() / "scenarios"
SNAKE = str(SCENARIOS / "snake-stratum.yaml")
NOVA = str(SCENARIOS / "nova-nemotron3-nano.yaml")


def _scenario(tmp: Path, base: str, **changes: object) -> str:
    """A copy of bundled scenario ``base`` with top-level ``changes``, in ``tmp``; its path."""
    data = yaml.safe_load((SCENARIOS / base).read_text()) | changes
    path = tmp / f"{base.removesuffix('.yaml')}-changed.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _workload(tmp: Path, **changes: object) -> str:
    """The default HYDRA scenario on a copy of its workload (arxiv) with ``changes``, in ``tmp``; the scenario's
    path (the workload is ``tmp/workload.yaml``)."""
    wl = yaml.safe_load((instances_dir() / "workloads" / "arxiv.yaml").read_text())
    wl["trace"] = str(instances_dir() / "traces" / wl["trace"])
    (tmp / "workload.yaml").write_text(yaml.safe_dump(wl | changes))
    sc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    for key in ("library", "package"):
        sc[key] = str((SCENARIOS / sc[key]).resolve())
    sc |= {"workload": str(tmp / "workload.yaml"), "simulation": {"enabled": False}}
    (tmp / "scenario.yaml").write_text(yaml.safe_dump(sc))
    return str(tmp / "scenario.yaml")


def _foreign_db(tmp: Path) -> str:
    """A SQLite database of something else: a table ``stages(x)`` (the name of a store's table, other columns)."""
    path = tmp / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE stages (x)")
        conn.execute("INSERT INTO stages VALUES (1)")
    return str(path)


def _foreign_tables_db(tmp: Path) -> str:
    path = tmp / "inventory.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE parts (name TEXT, count INTEGER)")
    return str(path)


def _store_of(tmp: Path, purpose: str) -> str:
    """A store as ``chipdse sweep`` (a job result) or ``chipdse explore`` (a finished stage) leaves it."""
    path = tmp / f"{purpose}.sqlite"
    with ResultsStore(path, purpose) as store:
        if purpose == "sweep":
            store.put("k", {"throughput_tps": 1.0})
        else:
            store.put_stage("k", "sweep", "1 point scored", [1])
    return str(path)


def _plain_file(tmp: Path) -> str:
    """A regular file where an output folder is expected."""
    path = tmp / "afile"
    path.write_text("not a folder\n")
    return str(path)


def _qap_file(tmp: Path) -> str:
    """A valid 3 x 3 QAPLIB file (n, flow rows, distance rows)."""
    path = tmp / "q3.dat"
    path.write_text("3\n\n0 1 2\n1 0 3\n2 3 0\n\n0 4 5\n4 0 6\n5 6 0\n")
    return str(path)


@dataclass(frozen=True)
class Case:
    """One bad option: the command after ``chipdse`` (``{tmp}`` and ``{out}`` filled in, ``{made}`` the file
    ``make`` wrote), the texts the error line must hold, and texts it must not."""

    id: str
    argv: tuple[str, ...]
    needles: tuple[str, ...]
    make: Callable[[Path], str] | None = None
    banned: tuple[str, ...] = ()


EXPLORE = ("explore", "--out", "{out}")
CASES = [
    # --- options that do not apply (finding 10) ---
    Case("solve-solver-not-qap", ("solve", "placement", "--method", "hbm-enum", "--solver", "cpsat"),
         ("--solver", "qap", "--method")),
    Case("solve-qap-point", ("solve", "qap", "{tmp}/x.dat", "--point", "m-t"), ("--point", "placement")),
    Case("solve-snake-point", ("solve", "snake-area", SNAKE, "--method", "milp-highs", "--point", "m-t"),
         ("--point", "HYDRA", "snake")),
    Case("compare-nova-point", ("compare", "expert-split", NOVA, "--point", "m-t"), ("--point", "HYDRA", "nova")),
    Case("snake-fresh", ("explore", SNAKE, "--out", "{out}", "--fresh"), ("--fresh", "HYDRA", SNAKE)),
    Case("snake-no-points-csv", ("explore", SNAKE, "--out", "{out}", "--no-points-csv"),
         ("--no-points-csv", "HYDRA", "speedups.csv")),
    Case("nova-fresh", ("explore", NOVA, "--out", "{out}", "--fresh"), ("--fresh", "HYDRA")),
    Case("snake-store", ("explore", SNAKE, "--out", "{out}", "--store", "{out}/s.sqlite"), ("--store", "HYDRA")),
    # --- empty paths (finding 11) ---
    Case("explore-out-empty", ("explore", "--out", ""), ("--out", "empty")),
    Case("explore-out-newline", ("explore", "--out", "{tmp}/a\nb"), ("--out", "control characters")),
    Case("explore-store-empty", (*EXPLORE, "--store", ""), ("--store", "empty")),
    Case("sweep-store-empty", ("sweep", "--store", ""), ("--store", "empty")),
    Case("compare-csv-empty", ("compare", "hbm-partition", "--csv", ""), ("--csv", "empty")),
    Case("out-blank", ("explore", "--out", "  "), ("--out", "empty")),
    # --- numbers that are not finite (finding 15) ---
    Case("time-limit-nan", (*EXPLORE, "--time-limit", "nan"), ("--time-limit", "finite", "nan")),
    Case("work-limit-nan", (*EXPLORE, "--work-limit", "nan"), ("--work-limit", "finite")),
    Case("work-limit-inf", ("solve", "mapping", "--method", "lpt-greedy", "--work-limit", "inf"),
         ("--work-limit", "finite")),
    Case("compare-time-limit-nan", ("compare", "mapping", "--time-limit", "NaN"), ("--time-limit", "finite")),
    Case("rate-nan", ("simulate", "--rate", "nan"), ("--rate", "finite")),
    Case("duration-minus-inf", ("simulate", "--duration", "-inf"), ("--duration", "finite")),
    Case("time-limit-too-small", (*EXPLORE, "--time-limit", "0.01"), ("--time-limit", "0.1", "86400")),
    Case("rate-word", ("simulate", "--rate", "fast"), ("--rate", "number", "fast")),
    # --- an output location that cannot be written names its option ---
    Case("out-is-a-file", ("explore", "--out", "{made}"), ("--out: ", "cannot write"),
         make=lambda tmp: _plain_file(tmp)),
    Case("csv-in-a-file", ("compare", "hbm-partition", "--csv", "{made}/x.csv"), ("--csv: ", "cannot write"),
         make=lambda tmp: _plain_file(tmp)),
    # --- an unknown name names the option or argument it came from ---
    Case("compare-unknown-problem", ("compare", "nosuch"), ("PROBLEM: ", "nosuch", "placement")),
    Case("compare-unknown-method", ("compare", "placement", "--methods", "nosuch"), ("--methods: ", "nosuch")),
    Case("solve-unknown-method", ("solve", "mapping", "--method", "nosuch"), ("--method: ", "nosuch"),
         banned=("--methods",)),
    Case("compare-unknown-point", ("compare", "placement", "--point", "zz"), ("--point: ", "b-star", "zz")),
    Case("qap-unknown-solver", ("solve", "qap", "{made}", "--solver", "gurobi"), ("--solver: ", "gurobi", "bnb"),
         make=lambda tmp: _qap_file(tmp)),  # a valid 3 x 3 instance: only the option is wrong
    Case("simulate-unknown-scheduler", ("simulate", "--scheduler", "bogus"), ("--scheduler: ", "bogus", "static")),
    Case("simulate-unknown-batching", ("simulate", "--batching", "bogus"), ("--batching: ", "bogus")),
    Case("simulate-unknown-point", ("simulate", "--point", "99999999"), ("--point: ", "99999999")),
    Case("compare-kind-mismatch", ("compare", "expert-split", str(SCENARIOS / "default.yaml")),
         ("default.yaml: kind: ", "nova")),
    # --- simulate names its options (finding 15) ---
    Case("simulate-arrivals-options", ("simulate", "--rate", "1000000", "--duration", "3600"),
         ("--rate", "--duration", "2,000,000"), banned=("SimConfig",)),
    Case("simulate-arrivals-rate-only", ("simulate", "--rate", "1000000"),
         ("--rate", "duration_s of", "arxiv.yaml"), banned=("SimConfig",)),
    # --- replay without timestamps (finding 6) ---
    Case("simulate-replay", ("simulate", "{made}"), ("workload.yaml", "arrival", "replay", "arrived_at"),
         make=lambda t: _workload(t, arrival="replay")),
    Case("explore-replay", ("explore", "{made}", "--out", "{out}"), ("workload.yaml", "arrival", "arrived_at"),
         make=lambda t: _workload(t, arrival="replay")),
    # --- an input that cannot be read is not an output problem (finding 12) ---
    Case("trace-is-folder-explore", ("explore", "{made}", "--out", "{out}"), ("traces",),
         make=lambda t: _workload(t, trace=str(instances_dir() / "traces")), banned=("cannot write",)),
    Case("trace-is-folder-simulate", ("simulate", "{made}"), ("traces",),
         make=lambda t: _workload(t, trace=str(instances_dir() / "traces")), banned=("cannot write",)),
    Case("trace-is-folder-sweep", ("sweep", "{made}", "--store", "{out}/r.sqlite"), ("traces",),
         make=lambda t: _workload(t, trace=str(instances_dir() / "traces")), banned=("cannot write",)),
    Case("trace-is-folder-compare", ("compare", "hbm-partition", "{made}", "--csv", "{out}/rows.csv"), ("traces",),
         make=lambda t: _workload(t, trace=str(instances_dir() / "traces")), banned=("cannot write",)),
    # --- a store of something else (finding 5) ---
    Case("explore-foreign-store", (*EXPLORE, "--store", "{made}"), ("--store", "other.sqlite", "not a chipdse store"),
         make=_foreign_db, banned=("OperationalError",)),
    Case("sweep-foreign-store", ("sweep", "--store", "{made}"), ("--store", "other.sqlite", "not a chipdse store"),
         make=_foreign_db),
    Case("sweep-foreign-tables", ("sweep", "--store", "{made}"), ("--store", "inventory.sqlite", "parts"),
         make=_foreign_tables_db),
    Case("explore-given-sweep-store", (*EXPLORE, "--store", "{made}"), ("--store", "sweep.sqlite", "chipdse sweep"),
         make=lambda t: _store_of(t, "sweep")),
    Case("sweep-given-explore-store", ("sweep", "--store", "{made}"),
         ("--store", "explore.sqlite", "chipdse explore"), make=lambda t: _store_of(t, "explore")),
    # --- studies: inputs the specs accept that the study cannot run (findings 2, 4) ---
    Case("snake-mode-model-not-in-models", ("explore", "{made}", "--out", "{out}"), ("mode_models[0]", "llama-3-8b"),
         make=lambda t: _scenario(t, "snake-stratum.yaml", mode_models=["llama-3-8b"])),
    Case("nova-lengths-fit-nothing", ("explore", "{made}", "--out", "{out}"), ("lengths", "262,144", "fits"),
         make=lambda t: _scenario(t, "nova-nemotron3-nano.yaml", models=["falcon-h1-7b"], gpus={}, batches=[4096],
                                  lengths=[[200_000, 62_144]])),
]


def _check_error(code: int, stderr: str, needles: tuple[str, ...], banned: tuple[str, ...]) -> None:
    lines = stderr.rstrip("\n").split("\n")
    assert code == 2, stderr
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("error: ") and "Traceback" not in line, line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    for word in banned:
        assert word not in line, f"{word!r} in {line!r}"


def test_at_least_30_kinds() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_option_is_one_line(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch, no_heavy_work: list[str]) -> None:
    monkeypatch.chdir(tmp_path)  # a default output folder (reports/out/...) would land here
    made = case.make(tmp_path) if case.make is not None else ""
    before = Path(made).read_bytes() if made.endswith(".sqlite") else None
    argv = [a.format(tmp=tmp_path, out=tmp_path / "out", made=made) for a in case.argv]
    code = invoke(argv)
    _check_error(code, capsys.readouterr().err, case.needles, case.banned)
    assert no_heavy_work == [], "the error came after heavy work"
    assert not (tmp_path / "out").exists(), "an output folder was left behind"
    assert not (tmp_path / "reports").exists(), "a default output folder was left behind"
    if before is not None:
        assert Path(made).read_bytes() == before, "the foreign database was written to"


def test_bare_command_prints_no_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """``chipdse`` alone: the usage on stdout, exit 2, and not even a blank line on stderr."""
    assert invoke([]) == 2
    got = capsys.readouterr()
    assert "explore" in got.out
    assert got.err == ""


def test_options_still_accepted_where_they_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The checks refuse only what does not apply: --point on a HYDRA problem, --solver on qap (a 4 x 4 QAPLIB file
    whose optimum, brute-forced over the 24 permutations here, the solve must report)."""
    flow = [[0, 1, 2, 0], [1, 0, 0, 3], [2, 0, 0, 1], [0, 3, 1, 0]]
    dist = [[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]]
    rows = "\n".join(" ".join(map(str, r)) for r in (*flow, *dist))
    (tmp_path / "t.dat").write_text(f"4\n\n{rows}\n")
    best = min(sum(flow[i][j] * dist[p[i]][p[j]] for i in range(4) for j in range(4))
               for p in itertools.permutations(range(4)))
    assert invoke(["solve", "qap", str(tmp_path / "t.dat"), "--solver", "bnb", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["objective"] == best


def test_default_scenario_loads(tmp_path: Path) -> None:
    """The helper scenario of the replay / trace cases is itself valid when unchanged (so a case fails for its
    own change only)."""
    assert load_scenario(Path(_workload(tmp_path))).workload.arrival == "poisson"


def test_nova_seed_option_drives_the_routing_draws(tmp_path: Path) -> None:
    """``explore --seed`` on NOVA (finding 10: it changed nothing) gives the study a scenario whose ``experts.seed``
    is that seed: the same expert-split table as a scenario file that sets it, and another one than seed 1's."""
    experts = {"batch": 16, "top_k": 2, "experts": [12], "routing": ["zipf", "concentrated"]}
    base = {"models": ["falcon-h1-7b"], "gpus": {}, "lengths": [[2048, 512]], "batches": [8]}
    paths = {}
    for seed in (1, 5):
        (tmp_path / str(seed)).mkdir()
        paths[seed] = Path(_scenario(tmp_path / str(seed), "nova-nemotron3-nano.yaml", **base,
                                     experts={**experts, "seed": seed}))
    by_option = nova.run(nova.load(paths[1]), Settings(seed=5))
    by_file = nova.run(nova.load(paths[5]))
    seed_1 = nova.run(nova.load(paths[1]))
    cols = ["routing", "experts", "method", "makespan_us"]
    assert by_option.spec.experts.seed == 5
    assert by_option.experts[cols].equals(by_file.experts[cols])
    assert not by_option.experts[cols].equals(seed_1.experts[cols])


def test_a_store_in_a_folder_that_does_not_exist_is_created_at_once(tmp_path: Path) -> None:
    """``--store new/folder/s.sqlite`` (issue 35 item 6): the folders are made when the store opens, before any
    stage runs, instead of the run failing (or running on) without one."""
    path = tmp_path / "not" / "yet" / "s.sqlite"
    with ResultsStore(path, "explore", "--store") as store:
        store.put_stage("k", "sweep", "1 point scored", [1])
    assert path.is_file()
    with ResultsStore(path, "explore", "--store") as store:
        assert store.get_stage("k") is not None
