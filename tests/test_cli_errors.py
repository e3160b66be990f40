"""Bad input gives a one-line error and exit code 2, never a traceback (tested through the CLI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.paths import instances_dir

runner = CliRunner()


def _explore(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["explore", *args])
    return result.exit_code, result.output


def _assert_one_line_error(code: int, output: str, *needles: str) -> None:
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    assert code == 2, output
    assert "Traceback" not in output
    error_lines = [ln for ln in lines if ln.startswith("error:")]
    assert len(error_lines) == 1, output
    for needle in needles:
        assert needle in error_lines[0], error_lines[0]


def test_missing_scenario_file(tmp_path: Path) -> None:
    code, out = _explore(str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "nope.yaml", "file not found")
    assert not (tmp_path / "out").exists()


def test_unknown_model_name(write_scenario, tmp_path: Path) -> None:
    path = write_scenario({"model": "gpt-17"})
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "variant.yaml", "model", "gpt-17", "nemotron-h-4b")


def test_missing_simulation_dataset_is_named_before_any_solve(write_scenario, tmp_path: Path) -> None:
    path = write_scenario({"simulation": {"datasets": ["arxiv.yaml", "no-such-dataset.yaml"]}})
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "variant.yaml", "simulation.datasets", "no-such-dataset.yaml")
    assert not (tmp_path / "out").exists()


def test_negative_bandwidth(write_scenario, tmp_path: Path) -> None:
    path = write_scenario({"design_space": {"d2d_GBps": [-256, 512]}})
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "variant.yaml", "design_space", "-256")


def test_negative_hbm_bandwidth_in_library(write_scenario, tmp_path: Path) -> None:
    lib = yaml.safe_load((instances_dir() / "chiplets" / "hydra.yaml").read_text())
    lib["memory"]["bandwidth_GBps"] = -819.2
    lib_path = tmp_path / "lib.yaml"
    lib_path.write_text(yaml.safe_dump(lib))
    path = write_scenario({"library": str(lib_path)})
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "lib.yaml", "memory.bandwidth_GBps", "-819.2")


def test_malformed_trace_row(write_scenario, tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("num_prefill_tokens,num_decode_tokens\n100,20\n300,abc\n")
    wl = tmp_path / "wl.yaml"
    wl.write_text(yaml.safe_dump({"name": "bad", "trace": str(trace), "arrival_rate_rps": 1.0}))
    path = write_scenario({"workload": str(wl)})
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "bad.csv", "num_decode_tokens", "'abc'", "line 3")


def test_chiplets_do_not_fit_the_interposer(write_scenario, tmp_path: Path) -> None:
    pkg = yaml.safe_load((instances_dir() / "packages" / "hydra-5x5.yaml").read_text())
    pkg["interposer_area_mm2"] = 2500.0
    pkg_path = tmp_path / "small.yaml"
    pkg_path.write_text(yaml.safe_dump(pkg))
    path = write_scenario({"package": str(pkg_path)})
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    # 24 chiplets x 121 mm^2 = 2904 mm^2 > 2500 mm^2
    _assert_one_line_error(code, out, "24 chiplets need 2904 mm^2", "2500 mm^2")
    assert not (tmp_path / "out").exists()


def test_installed_console_script_reports_errors_without_traceback(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "chipdse"
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    proc = subprocess.run([str(exe), "explore", str(tmp_path / "missing.yaml")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "file not found" in proc.stderr


def test_help_explains_every_option() -> None:
    result = runner.invoke(app, ["explore", "--help"])
    assert result.exit_code == 0
    for opt in ("--out", "--time-limit", "--seed", "SCENARIO"):
        assert opt in result.output


def test_directory_instead_of_scenario_file(tmp_path: Path) -> None:
    code, out = _explore(str(tmp_path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, str(tmp_path), "directory")


@pytest.mark.parametrize(("text", "needle"), [("", "empty"), ("- a\n- b\n", "a list"),
                                              ("name: [unclosed\n", "invalid YAML at line")])
def test_malformed_yaml(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "bad.yaml", needle)


def test_missing_referenced_library_names_the_scenario_field(write_scenario, tmp_path: Path) -> None:
    path = write_scenario({"library": "nowhere/lib.yaml"})
    code, out = _explore(str(path), "--out", str(tmp_path / "out"))
    _assert_one_line_error(code, out, "variant.yaml", "library", "nowhere/lib.yaml")


def test_unwritable_output_fails_before_computing(write_scenario, tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code, out = _explore(str(write_scenario()), "--out", str(blocker / "sub"))
    _assert_one_line_error(code, out, "output folder", "afile")
