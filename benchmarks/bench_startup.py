"""Start-up time of the command line (issue 18 item 4, issue 34): ``import chipdse.cli``, ``chipdse --help`` and
the light commands (``schema``, ``params``, ``model import``), beside ``import chipdse.api`` (what every command
loaded before the light commands had :mod:`chipdse.inputs`: the in-run baseline).

Each case runs N fresh interpreters and prints the median and least wall time and CPU time (user + system of the
child): on a shared machine the CPU time is what an idle machine's wall time would be, the wall time depends on the
load (printed first). ``-X importtime``'s sum of self times is printed too. ``--base DIR`` measures another checkout
instead (its folder first on PYTHONPATH, e.g. ``git archive REV | tar -x -C DIR``).

    python benchmarks/bench_startup.py [--runs 5] [--base DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HF_CONFIG = Path(__file__).resolve().parent.parent / "tests" / "data" / "hf_configs" / "bundled" / "llama-3-8b.json"
"""A Hugging Face config for ``model import`` (the card is written to the temporary working folder)."""


def _command(*argv: str) -> list[str]:
    """``python -c`` arguments that run ``chipdse ARGV`` as the console script does."""
    return ["-c", f"import sys; from chipdse.cli import run; sys.argv = ['chipdse', *{list(argv)!r}]; run()"]


CASES = {
    "python -c pass": ["-c", "pass"],
    "import chipdse.cli": ["-c", "import chipdse.cli"],
    "chipdse --help": _command("--help"),
    "import chipdse.api": ["-c", "import chipdse.api"],
    "schema scenario": _command("schema", "scenario"),
    "params hydra": _command("params", "hydra"),
    "model import": _command("model", "import", str(HF_CONFIG), "--out", "card.json"),
}
"""What is timed: an empty interpreter (the floor), the import the console script does, the help, the whole API
(the baseline: every command loaded it before issue 34) and the three light commands."""


def timed(args: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Run ``python ARGS`` once; return (wall s, CPU s of the child)."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, cwd=cwd, check=True, capture_output=True)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def importtime_s(env: dict[str, str], cwd: str) -> float:
    """Sum of the self times ``python -X importtime -c "import chipdse.cli"`` reports, s."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import chipdse.cli"], env=env, cwd=cwd,
                         capture_output=True, text=True, check=True).stderr
    rows = [ln.split(":", 1)[1].split("|") for ln in err.splitlines() if ln.startswith("import time:")]
    return sum(int(r[0]) for r in rows if r[0].strip().isdigit()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", help="another checkout to measure (put first on PYTHONPATH)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.base:
        env["PYTHONPATH"] = args.base
    with tempfile.TemporaryDirectory() as cwd:  # no checkout folder on sys.path by accident
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.base or 'installed chipdse'}")
        for name, case in CASES.items():
            walls, cpus = zip(*(timed(case, env, cwd) for _ in range(args.runs)), strict=True)
            print(f"{name:20s} wall median {statistics.median(walls):.2f} s (least {min(walls):.2f}); "
                  f"CPU median {statistics.median(cpus):.2f} s (least {min(cpus):.2f})")
        print(f"-X importtime, sum of self times: {importtime_s(env, cwd):.2f} s")


if __name__ == "__main__":
    main()
