"""Start-up (issue 18 item 4): ``import chipdse.cli`` and ``chipdse --help`` load none of the heavy libraries.

Each case runs a fresh interpreter (the test process has long imported everything) and reads its ``sys.modules``;
the import time itself is measured in benchmarks/RESULTS.md ("Start-up time"), not here: a time would depend on the
machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("pyomo", "ortools", "highspy", "scipy", "matplotlib", "pandas", "numpy", "dask", "distributed")
"""Libraries a command loads only when it runs (Pyomo and OR-Tools model building, SciPy's solvers, PDF pages)."""


def _loaded_after(code: str) -> set[str]:
    """The top-level packages of :data:`HEAVY` that are in ``sys.modules`` after running ``code`` in a fresh
    interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1])) & set(HEAVY)


def test_the_probe_sees_a_heavy_import() -> None:
    """The probe itself: a script that imports pandas is reported with pandas (and numpy, which pandas loads)."""
    assert {"pandas", "numpy"} <= _loaded_after("import pandas")


@pytest.mark.parametrize("code", ["import chipdse.cli", "import chipdse", "from chipdse.cli import app, invoke"])
def test_importing_the_cli_loads_no_heavy_library(code: str) -> None:
    assert _loaded_after(code) == set()


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], ["explore", "--help"], ["explore", "-h"],
                                  ["sweep", "--help"], ["generality", "--help"]])
def test_help_loads_no_heavy_library(args: list[str]) -> None:
    """``chipdse --help`` and the help of commands whose options name no registry entry import nothing heavy."""
    code = f"import sys\nfrom chipdse.cli import invoke\nassert invoke({args!r}) == 0"
    assert _loaded_after(code) == set()


def test_the_api_is_loaded_on_first_use() -> None:
    """``chipdse.explore`` is :func:`chipdse.api.explore`, which loads the tool (pandas among others)."""
    assert "pandas" in _loaded_after("import chipdse\nassert chipdse.explore.__module__ == 'chipdse.api'")


def test_a_help_that_lists_registered_problems_still_lists_them() -> None:
    """``chipdse compare --help`` loads the registry when it prints, and names every registered problem."""
    code = ("import io, contextlib\nfrom chipdse.cli import invoke\nfrom chipdse.solvers.registry import PROBLEMS\n"
            "buf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n"
            "    assert invoke(['compare', '--help']) == 0\n"
            "text = ' '.join(buf.getvalue().split())\nassert '{problems}' not in text\n"
            "missing = [p for p in PROBLEMS if p not in text]\nassert not missing, missing")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_version_is_the_installed_distributions() -> None:
    """``chipdse --version`` prints ``chipdse <version>``, the version pip installed (importlib.metadata), which is
    also ``chipdse.__version__`` and CITATION.cff's; ``-h`` prints the same help as ``--help``."""
    from importlib import metadata
    from pathlib import Path

    import yaml

    import chipdse

    cli = [sys.executable, "-c", "import sys; from chipdse.cli import run; sys.argv[0] = 'chipdse'; run()"]
    run = subprocess.run([*cli, "--version"], capture_output=True, text=True, timeout=120)
    installed = metadata.version("chipdse")
    assert run.returncode == 0 and run.stdout.strip() == f"chipdse {installed}" == f"chipdse {chipdse.__version__}"
    short = subprocess.run([*cli, "-h"], capture_output=True, text=True, timeout=120)
    long = subprocess.run([*cli, "--help"], capture_output=True, text=True, timeout=120)
    assert short.returncode == 0 and short.stdout == long.stdout and "Usage: " in short.stdout
    root = Path(__file__).resolve().parent.parent
    cff = yaml.safe_load((root / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["version"] == installed and cff["license"] == "MIT"
    assert {"message", "title", "authors"} <= set(cff)
    assert metadata.metadata("chipdse")["License-Expression"] == "MIT"
    assert (root / "LICENSE").read_text().startswith("MIT License")


LIGHT_HEAVY = tuple(m for m in HEAVY if m not in ("numpy",))
"""What a light command may not load: the modelling and solver libraries, SciPy, pandas, matplotlib and Dask
(numpy and pydantic are the input files' own libraries)."""
HF_CONFIG = Path(__file__).parent / "data" / "hf_configs" / "bundled"


def _light_case(args: list[str]) -> str:
    """A probe that runs ``chipdse ARGS`` in-process with stdout swallowed and returns its exit code."""
    return (f"import contextlib, io\nfrom chipdse.cli import invoke\nwith contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = invoke({args!r})\nprint(rc)")


@pytest.mark.parametrize("args", [
    ["schema", "scenario"], ["schema", "model"], ["params", "hydra"], ["params", "snake"], ["params", "nova"]])
def test_light_commands_load_no_solver_scipy_or_pandas(args: list[str]) -> None:
    """``schema``, ``params`` and ``model import`` run through :mod:`chipdse.inputs` (issue 34 start-up): none of
    Pyomo, OR-Tools, HiGHS, SciPy, pandas, matplotlib or Dask is imported (the CPU time this saves is measured in
    benchmarks/RESULTS.md, "Start-up time")."""
    assert _loaded_after(_light_case(args)) & set(LIGHT_HEAVY) == set()


def test_model_import_loads_no_solver_scipy_or_pandas(tmp_path: Path) -> None:
    config = sorted(HF_CONFIG.glob("*.json"))[0]
    args = ["model", "import", str(config), "--out", str(tmp_path / "card.json")]
    assert _loaded_after(_light_case(args)) & set(LIGHT_HEAVY) == set()
    assert (tmp_path / "card.json").is_file()


def test_a_bad_qaplib_file_fails_before_any_solver_is_imported(tmp_path: Path) -> None:
    """``solve qap`` reads its file before it loads the API: a malformed file exits 2 with the file's line and
    value, and no modelling library was imported."""
    bad = tmp_path / "bad.dat"
    bad.write_text("3\n1 2 x\n")
    code = _light_case(["solve", "qap", str(bad)])
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    rc_line, mods_line = out.stdout.strip().splitlines()[-2:]
    assert rc_line == "2"
    assert "bad.dat: (data, line 2, value 4): integers only" in out.stderr
    assert set(json.loads(mods_line)) & set(LIGHT_HEAVY) == set()
