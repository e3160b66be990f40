"""NOVA system model: HBM4 arithmetic, capacity limits, decode step by hand, and the bundled NOVA study."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.evaluators.nova_model import LayerWork, NovaModel, load_nova_model
from chipdse.evaluators.nova_system import (
    DESIGNS,
    DUPLEX,
    GPU,
    NOVA,
    NOVA_EXACT,
    SYSTEM,
    decode_step_s,
    e2e,
    expert_split_cases,
    fits,
    longest_context,
)
from chipdse.solvers.config import SolverConfig
from chipdse.studies.nova import solve_expert_splits


def test_hbm4_cube_and_system_by_hand() -> None:
    # 2048 pins x 8 Gb/s = 2.048 TB/s to the GPU per cube; five 36 GB cubes = 180 GB; NOVA's cube doubles it
    assert SYSTEM.cube.external_Bps == 2048 * 8e9 / 8
    assert SYSTEM.capacity_bytes(GPU) == 180e9 and SYSTEM.capacity_bytes(NOVA) == 360e9
    assert SYSTEM.cube.pseudo_channels_total == 16


def test_only_nova_runs_nemotron3_super_at_256k() -> None:
    """NOVA Fig. 15: "NOVA is the only design that runs at 256K without OoM" (Nemotron3-Super's 247 GB of weights
    alone exceed five 36 GB cubes)."""
    m = load_nova_model("nemotron3-super-120b-a12b")
    runs = {d.name for d in DESIGNS if longest_context(m, d, 32) >= 256 * 1024}
    assert runs == {"NOVA", "NOVA exact"}  # the same cube; the two differ only in the expert split
    assert m.total_params * 2 > SYSTEM.capacity_bytes(GPU)


@pytest.mark.parametrize("key", ["nemotron3-nano-30b-a3b", "qwen3-30b-a3b", "falcon-h1-7b"])
def test_longest_context_is_the_fit_boundary(key: str) -> None:
    m = load_nova_model(key)
    for d in (GPU, NOVA):
        for b in (32, 64):
            c = longest_context(m, d, b)
            assert fits(m, d, b, c) and not fits(m, d, b, c + 1)


@pytest.mark.parametrize("key", ["nemotron3-nano-30b-a3b", "qwen3-30b-a3b"])
def test_exact_expert_split_never_slows_nova_down(key: str) -> None:
    m = load_nova_model(key)
    cfg = SolverConfig(time_limit_s=20)
    for b in (32, 64):
        steps = {}
        for d in (NOVA, NOVA_EXACT):
            splits = {c: o.makespan_s for c, o in solve_expert_splits(expert_split_cases(m, d, b), cfg).items()}
            steps[d.name] = decode_step_s(m, d, b, 4096, expert_splits=splits)["moe_s"]
        assert steps["NOVA exact"] <= steps["NOVA"] * (1 + 1e-9)


def test_bad_runs_and_pure_ssm_capacity() -> None:
    m = load_nova_model("nemotron3-nano-30b-a3b")
    for bad in (0, -1, 32.5):
        with pytest.raises(SpecError, match="batch"):
            e2e(m, NOVA, bad, 2048, 512)
    with pytest.raises(SpecError, match="output length"):
        e2e(m, NOVA, 8, 2048, -5)
    assert longest_context(load_nova_model("mamba2-2.7b"), GPU, 32) is None  # no KV cache: no context limit


def test_decode_step_of_a_one_layer_model_by_hand() -> None:
    # one GQA layer (32 q heads, 8 KV heads, head dim 128) with 1e9 GPU-side parameters, no LM head
    m = NovaModel("toy", "toy", 1e9, {"other": 10**9}, (LayerWork(10**9, attention=(32, 8, 128)),), 0)
    batch, ctx = 8, 4096
    gpu_bw = 5 * 2.048e12
    proj = max(2e9 * batch / (989e12 * 0.7), 2e9 / gpu_bw)
    flops, nbytes = 4 * 32 * 128 * ctx * batch, 2 * 8 * 128 * 2 * ctx * batch
    gpu = decode_step_s(m, GPU, batch, ctx)
    assert gpu["step_s"] == pytest.approx(proj + max(flops / (989e12 * 0.7), nbytes / gpu_bw), rel=1e-12)
    # Duplex runs the GQA core on each cube's base-die (64 TFLOPS, 4 TB/s) on a fifth of the work, plus one sync
    intensity = flops / nbytes  # 2 g / b = 8 for 4:1 grouping in BF16
    duplex = decode_step_s(m, DUPLEX, batch, ctx)
    assert duplex["step_s"] == pytest.approx(proj + flops / 5 / min(64e12, intensity * 4e12) + 2e-6, rel=1e-12)


def test_explore_on_the_bundled_nova_scenario_writes_the_report(tmp_path: Path) -> None:
    """The README's command: `chipdse explore instances/scenarios/nova-nemotron3-nano.yaml`."""
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["explore", str(instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml"),
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len(re.findall(rb"/Type /Page\b", (out / "report.pdf").read_bytes())) == 7  # 3, one per routing, glossary
    man = json.loads((out / "manifest.json").read_text())
    assert all(abs(r["params"] / r["published"] - 1) < 0.01 for r in man["details"]["model_sizes"])  # Table II
    sm = man["summary"]
    assert sm["nova_vs_gpu_throughput_x"] > 1 and 0 < sm["nova_vs_gpu_e2e_reduction"] < 1
    table = man["details"]["expert_split"]
    exact = [r for r in table if r["method"] in ("milp-highs", "cpsat", "brute-force")]
    assert all(abs(r["gap"]) < 1e-6 for r in exact)
    assert all(r["gap"] >= -1e-9 for r in table)  # no heuristic beats the exact split


def test_nova_scenario_errors_are_one_line(tmp_path: Path) -> None:
    spec = yaml.safe_load((instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml").read_text())
    runner = CliRunner()
    for change, expect in ((dict(models=["deepseek-v2"]), "models[0]"), (dict(batches=[0]), "batches"),
                           (dict(lengths=[[2048]]), "lengths"), (dict(models=["gpt-17"]), "gpt-17")):
        path = tmp_path / "nova.yaml"
        path.write_text(yaml.safe_dump({**spec, **change}))
        res = runner.invoke(app, ["explore", str(path), "--out", str(tmp_path / "o")])
        assert res.exit_code == 2 and expect in res.output and "Traceback" not in res.output, res.output


def test_parallel_gqa_and_ssm_on_the_two_tiers_by_hand() -> None:
    """Falcon-H1-style parallel layer on NOVA: GQA at 16 Op/B (16:1 grouping), SSM at 1.25 Op/B.

    Per cube (five cubes, batch 1, 1024 tokens): GQA 4 x 16 x 64 x 1024 / 5 FLOP, SSM 5 x 1024 x 128 / 5 FLOP.
    One at a time the best modes are cross-tier for GQA (T_1' + T_2 = 16 + 64 TFLOPS) and Tier-1 alone for SSM
    (min(32, 1.25 x 16) = 20 TFLOPS): 13.1 + 6.6 ns. Side by side, GQA on Tier-2 (64 TFLOPS) and SSM on the
    halved Tier-1 (min(16, 1.25 x 8) = 10 TFLOPS) both take 13.1 ns, which wins (NOVA Sec. VI-E rooflines).
    """
    layer = LayerWork(gpu_params=0, attention=(16, 1, 64), ssm=(1024, 128), parallel=True)
    model = NovaModel("toy", "toy", 0.0, {"attention": 0}, (layer,))
    gqa, ssm = 4 * 16 * 64 * 1024 / 5, 5 * 1024 * 128 / 5
    parallel = max(gqa / 64e12, ssm / 10e12)
    assert parallel < gqa / 80e12 + ssm / 20e12
    step = decode_step_s(model, NOVA, 1, 1024)
    assert step["nmp_s"] == pytest.approx(parallel, rel=1e-12)
    assert step["sync_s"] == pytest.approx(SYSTEM.sync_s)
