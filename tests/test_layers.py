"""The package's shape: one import name when installed, real folders, no import cycles, no function-local imports
used to dodge one.

The layer order itself is import-linter's layers contract in pyproject.toml (``lint-imports``, run by the README's
test command); these tests check what that contract does not: cycles inside a layer and deferred imports.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import grimp
import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
PACKAGE_DIRS = {name: ROOT / folder for name, folder in SETUPTOOLS["package-dir"].items()}
"""Import name -> source folder (pyproject's ``package-dir``: ``chipdse`` is src/chipdse, ``chipdse.evaluators`` the
top-level evaluators/, ...)."""
DEFERRED_ON_PURPOSE = ("distributed", "dask", "scalesim")
"""Heavy optional imports that may stay inside a function (each with a comment saying it is deferred)."""
LAZY_API_LOADERS = {"src/chipdse/__init__.py": ("chipdse.api",),
                    "src/chipdse/cli.py": ("chipdse.api", "chipdse.inputs")}
"""The only modules that may load a module through ``importlib.import_module``, and what each loads: the package
and the command line load the Python API (``chipdse.api``) on first use, so that ``import chipdse.cli`` stays light
(issue 18); the command line's light commands load only its light half (``chipdse.inputs``, issue 34)."""


def _module_name(path: Path) -> str:
    """The import name of a source file (``evaluators/latency.py`` -> ``chipdse.evaluators.latency``): the longest
    ``package-dir`` folder holding it, plus its path below that folder."""
    name, folder = max(((n, f) for n, f in PACKAGE_DIRS.items() if path.is_relative_to(f)),
                       key=lambda nf: len(nf[1].parts))
    parts = path.relative_to(folder).with_suffix("").parts
    return ".".join((name, *parts[:-1], *([] if parts[-1] == "__init__" else [parts[-1]])))


def _sources() -> list[Path]:
    """Every module of the package: the .py files of every ``package-dir`` folder (src/chipdse's own sub-packages
    included; a mapped folder inside another is walked once)."""
    files = {p for folder in PACKAGE_DIRS.values() for p in folder.rglob("*.py") if "out" not in p.parts}
    return sorted(files)


def _strongly_connected(adj: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (scipy's, on the import graph)."""
    names = sorted(set(adj) | {w for ws in adj.values() for w in ws})
    index = {n: i for i, n in enumerate(names)}
    rows = [index[v] for v, ws in adj.items() for _ in ws]
    cols = [index[w] for ws in adj.values() for w in ws]
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, label = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for n, lab in zip(names, label, strict=True):
        groups.setdefault(int(lab), []).append(n)
    return sorted(g for g in groups.values() if len(g) > 1)


def test_components_find_a_planted_cycle() -> None:
    adj = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e2"], "e2": []}
    assert _strongly_connected(adj) == [["a", "b", "c"]]


def test_no_import_cycles_between_modules() -> None:
    """grimp reads every import statement, function-level ones included, so a cycle hidden in a function counts."""
    graph = grimp.build_graph("chipdse")
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    assert set(adj) == {_module_name(p) for p in _sources()}, "grimp does not see every module of the source folders"
    assert _strongly_connected(adj) == []


def test_function_local_imports_only_defer_heavy_optionals() -> None:
    offenders = []
    for path in _sources():
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if not isinstance(inner, ast.Import | ast.ImportFrom):
                    continue
                module = inner.module if isinstance(inner, ast.ImportFrom) else inner.names[0].name
                said = "deferred" in lines[inner.lineno - 1] or "deferred" in lines[inner.lineno - 2]
                if (module or "").split(".")[0] not in DEFERRED_ON_PURPOSE or not said:
                    offenders.append(f"{path.relative_to(ROOT)}:{inner.lineno} {module}")
    assert offenders == []


def test_only_the_package_and_the_cli_load_modules_through_importlib() -> None:
    """``importlib.import_module`` hides an import from import-linter and grimp: it is the documented lazy loader of
    ``chipdse.api`` (and of ``chipdse.inputs``) and is allowed in :data:`LAZY_API_LOADERS` only, each call loading
    one module named there."""
    users = {}
    for path in _sources():
        tree = ast.parse(path.read_text())
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr == "import_module"]
        if calls:
            users[str(path.relative_to(ROOT))] = len(calls)
    assert sorted(users) == sorted(LAZY_API_LOADERS)
    for rel, modules in LAZY_API_LOADERS.items():
        assert users[rel] == len(modules)
        assert all(f'"{m}"' in (ROOT / rel).read_text() for m in modules)


def test_the_api_sits_between_the_reports_and_the_cli() -> None:
    """The layers contract names chipdse.api, then its light half chipdse.inputs, between chipdse.cli and
    chipdse.reports (DESIGN.md "Layout")."""
    layers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    top = layers.index("chipdse.cli")
    assert layers[top:top + 4] == ["chipdse.cli", "chipdse.api", "chipdse.inputs", "chipdse.reports"]


def test_the_checkout_holds_no_symbolic_link() -> None:
    """The design card's folders are real folders (issue 29): ``git ls-files -s`` lists no mode 120000 entry."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-s"], capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    assert [line for line in listed.stdout.splitlines() if line.startswith("120000")] == []


def test_every_source_package_is_installed_and_every_module_importable() -> None:
    """Each folder with an ``__init__.py`` under the source folders is a package pyproject installs, and each module
    resolves to its own file under its chipdse name. A module added after an editable install needs the install
    again (the README's ``editable_mode=strict`` links each file): the message says so."""
    packages = {_module_name(p) for p in _sources() if p.name == "__init__.py"}
    assert packages <= set(SETUPTOOLS["packages"]), "add the new package to [tool.setuptools] packages"
    missing = []
    for path in _sources():
        spec = importlib.util.find_spec(_module_name(path))
        if spec is None or spec.origin is None or Path(spec.origin).resolve() != path.resolve():
            missing.append(str(path.relative_to(ROOT)))
    assert missing == [], ("not importable under its chipdse name; rerun the README's install command "
                           "(pip install -e . --config-settings editable_mode=strict): " + ", ".join(missing))


@pytest.mark.slow
def test_wheel_installs_one_import_name(tmp_path: Path) -> None:
    """``pip install .`` adds only ``chipdse`` (formulations, solvers, ... inside it) and ships the bundled data."""
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheels.glob("chipdse-*.whl")
    site = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(site),
                              str(wheel)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    top = sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info") and p.name != "bin")
    assert top == ["chipdse"]
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("chipdse/formulations/placement.py", "chipdse/solvers/compare.py",
                     "chipdse/evaluators/estimator.py", "chipdse/reports/pdf.py", "chipdse/core/specs.py",
                     "chipdse/instances/scenarios/default.yaml", "chipdse/instances/traces/arxiv.csv"):
        assert expected in names
    assert not any("/out/" in n for n in names), "generated reports must not be packaged"


PLANTED = (
    ("evaluators/latency.py", "import pyomo.environ", "modelling libraries (Pyomo, OR-Tools) only in"),
    ("formulations/common.py", "import highspy", "solver engines (highspy) only in"),
    ("src/chipdse/studies/nova/study.py", "import chipdse.studies.snake.study", "studies are independent"),
    ("reports/style.py", "import chipdse.solvers.compare", "reports read results"),
    ("evaluators/roofline.py", "import chipdse.runtime.store", "layers import one way"),
)
"""(file, planted import, the contract that must reject it): DESIGN.md's rules (issue 29 item 4)."""


def _copy_tree(dest: Path) -> Path:
    """The package as a wheel lays it out (``dest/chipdse/...``, every mapped folder at its import path), with
    pyproject.toml beside it; returns ``dest``."""
    for name, folder in PACKAGE_DIRS.items():
        if name == "chipdse.instances":
            continue  # data only
        target = dest.joinpath(*name.split("."))
        for path in folder.rglob("*.py"):
            if "out" in path.parts:
                continue
            rel = path.relative_to(folder)
            if name == "chipdse" and any((folder / p).is_dir() and (folder / p) in PACKAGE_DIRS.values()
                                         for p in rel.parts[:1]):
                continue
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_bytes(path.read_bytes())
    (dest / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    return dest


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on a copied tree (run there: import-linter puts the working folder first on the path, so the
    copy's ``chipdse`` is the one analysed)."""
    exe = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "COLUMNS": "500"}  # one contract per line
    return subprocess.run([str(exe), "--no-cache", str(tree / "pyproject.toml")], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_lint_imports_rejects_each_planted_violation(tmp_path: Path) -> None:
    """Issue 29: each rule of DESIGN.md that a contract encodes rejects an import that breaks it, and only that
    contract breaks (the unmodified copy keeps every contract)."""
    clean = _lint(_copy_tree(tmp_path / "clean"))
    assert clean.returncode == 0 and "0 broken" in clean.stdout, clean.stdout[-3000:]
    for i, (rel, line, contract) in enumerate(PLANTED):
        tree = _copy_tree(tmp_path / f"planted{i}")
        rel_path = Path(rel)
        name, folder = max(((n, f) for n, f in PACKAGE_DIRS.items() if (ROOT / rel_path).is_relative_to(f)),
                           key=lambda nf: len(nf[1].parts))
        copy = tree.joinpath(*name.split("."), (ROOT / rel_path).relative_to(folder))
        copy.write_text(copy.read_text() + f"\n{line}  # planted violation\n")
        res = _lint(tree)
        assert res.returncode != 0, f"{rel}: {line} was not rejected\n{res.stdout[-3000:]}"
        broken = [ln for ln in res.stdout.splitlines() if " BROKEN" in ln]
        assert len(broken) == 1 and contract in broken[0], (rel, broken)
