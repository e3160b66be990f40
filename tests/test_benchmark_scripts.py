"""Every benchmark script imports against the current code (they run by hand, not in the suite: a rename that breaks
one must fail here, not on the next person who measures)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_benchmark_script_imports(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts import each other by file name
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # defines, does not run: each script's work is under __main__
    assert module.__doc__, "a benchmark says what it measures in its docstring"
