"""Start-up (issue 18 item 4): ``import chipdse.cli`` and ``chipdse --help`` load none of the heavy libraries.

Each case runs a fresh interpreter (the test process has long imported everything) and reads its ``sys.modules``;
the import time itself is measured in benchmarks/RESULTS.md ("Start-up time"), not here: a time would depend on the
machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys

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
