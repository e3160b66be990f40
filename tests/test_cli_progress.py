"""``chipdse explore > log.txt`` (issue 32 item 4): when stdout is not a terminal, every stage is one line as it
starts, stamped with wall and CPU seconds, then the report and "done"; the headline and the written files follow."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.paths import instances_dir

STAMP = re.compile(r"^\[\s*(\d+\.\d) s,\s*(\d+\.\d) CPU-s\] (.+)$")


def test_explore_logs_one_line_per_stage_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    scenario = instances_dir() / "scenarios" / "snake-stratum.yaml"
    result = CliRunner().invoke(app, ["explore", str(scenario), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    stamped = [m for ln in lines if (m := STAMP.match(ln))]
    messages = [m.group(3) for m in stamped]
    # the SNAKE study's five stages (studies/snake/study.py), each once, in order, then the report and the end
    assert [m.split(" (")[0] for m in messages] == [
        "SNAKE: decode speedups and modes", "SNAKE: link bandwidth sweep", "SNAKE: shape set", "SNAKE: area split",
        "SNAKE: serving simulation", "writing the report", "done"]
    walls = [float(m.group(1)) for m in stamped]
    assert walls == sorted(walls)  # stamped as they happen
    assert lines.index(stamped[-1].group(0)) < next(i for i, ln in enumerate(lines) if ln.startswith("wrote pdf"))
