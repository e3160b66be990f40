"""SNAKE's claims table (issue 16): the GPU decode baseline by hand, where a paper value falls on a sweep, served
lengths, and the claims measured from a small SNAKE study."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from chipdse.core.paths import instances_dir
from chipdse.evaluators.snake import MAC_TREE, SNAKE, GemmOp, SnakeError, decode_gemms, load_card
from chipdse.evaluators.snake_pu import decode_step_s, nmp_template
from chipdse.evaluators.snake_serving import gpu_step_s
from chipdse.studies.claims import claim_rows, render_text
from chipdse.studies.snake import study as snake
from chipdse.studies.snake.artifacts import SnakeStudy
from chipdse.studies.snake.claims import SNAKE_CLAIMS, measure, where_paper_falls


def test_gpu_step_by_hand() -> None:
    """H100 roofline: LLaMA-3-70B's QKV at batch 8 moves (8 x 8192 + 8192 x 1280 + 8 x 1280) x 2 = 21,123,072 bytes
    for 2 x 8 x 8192 x 1280 = 167,772,160 FLOPs: memory-bound, 21,123,072 / (0.5 x 3.35 TB/s) per layer. At batch
    4096 the same weights do 4096 / 8 x the FLOPs: 85,899,345,920 / (0.5 x 989 TFLOPS) > its bytes' time."""
    qkv = GemmOp("qkv", 8, 8192, 1280, 80)
    assert gpu_step_s([qkv], 0.5) == pytest.approx(80 * 21_123_072 / (0.5 * 3.35e12), rel=1e-12)
    big = GemmOp("qkv", 4096, 8192, 1280, 1)
    assert gpu_step_s([big], 0.5) == pytest.approx(85_899_345_920 / (0.5 * 989e12), rel=1e-12)
    for bad in (0.0, 1.5):
        with pytest.raises(SnakeError, match="efficiency"):
            gpu_step_s([qkv], bad)


def test_where_the_paper_value_falls_by_hand() -> None:
    """Linear interpolation between the bracketing sweep points: 2.0 on (16, 1.0)-(64, 3.0) is at 40 GB/s."""
    assert where_paper_falls([16, 64, 640], [1.0, 3.0, 4.0], 2.0) == "the paper's value falls at about 40 GB/s"
    assert where_paper_falls([16, 64], [1.0, 3.0], 5.0) == "the paper's value lies outside it"


def test_served_lengths_fit_the_card_context() -> None:
    """OPT-66B has 2,048 positions: an 8K + 1K setting serves 1,024 + 1,024; LLaMA-3-70B (8,192) keeps 8K + 1K."""
    assert snake.served_lengths(load_card("opt-66b"), 8192, 1024) == (1024, 1024)
    assert snake.served_lengths(load_card("llama-3-70b"), 8192, 1024) == (8192, 1024)


@pytest.fixture(scope="module")
def small_study(tmp_path_factory: pytest.TempPathFactory) -> SnakeStudy:
    spec = yaml.safe_load((instances_dir() / "scenarios" / "snake-stratum.yaml").read_text())
    spec |= {"models": ["llama-3-70b", "qwen3-30b-a3b"], "batches": [8], "contexts": [4096],
             "link_sweep_GBps": [32, 64]}
    spec["serving"] |= {"models": ["llama-3-70b", "qwen3-30b-a3b"], "requests": 10, "l_out": 32,
                        "rate_fractions": [0.5]}
    spec["shape_set"]["budgets_mm2"] = [0.12]
    path = tmp_path_factory.mktemp("snake") / "small.yaml"
    path.write_text(yaml.safe_dump(spec))
    return snake.run(snake.load(path))


def test_claims_from_a_small_study(small_study: SnakeStudy) -> None:
    """Every SNAKE claim gets a row; the MAC-tree speedup is the mean over the two models of the baseline's decode
    step over SNAKE's (recomputed from the evaluator at the scenario's batch and context); rows off by more than 25%
    name the link range swept."""
    measured, notes = measure(small_study)
    rows = claim_rows(measured, notes, claims=SNAKE_CLAIMS)
    assert [r.key for r in rows] == [c.key for c in SNAKE_CLAIMS]
    t = nmp_template(small_study.spec.template)
    ratios = []
    for m in ("llama-3-70b", "qwen3-30b-a3b"):
        ops = decode_gemms(load_card(m), 8, 8, context=4096)
        ratios.append(decode_step_s(ops, MAC_TREE, t) / decode_step_s(ops, SNAKE, t))
    assert measured["speedup_mac_tree"] == pytest.approx(float(np.mean(ratios)), rel=1e-9)
    assert all(v > 1.0 for v in ratios)  # SNAKE ahead of the MAC tree on the dense and the MoE model
    assert 0.0 <= measured["is_s_share_llama"] <= 1.0
    assert measured["qwen3_fixed_min"] <= measured["qwen3_fixed_max"]
    for r in rows:
        if r.off and r.key.startswith(("speedup_mac", "speedup_sa", "llama", "qwen3", "is_s")):
            assert "link bandwidth swept 32-64 GB/s" in r.note, r
    text = render_text(rows, paper="SNAKE")
    assert text.startswith("| SNAKE claim |") and text.count("\n") == len(SNAKE_CLAIMS) + 1


def test_serving_covers_the_models_and_the_gpu(small_study: SnakeStudy) -> None:
    """The serving table has every served model and design, the GPU included, and positive latencies."""
    sv = small_study.serving
    assert set(sv["model"]) == {"llama-3-70b", "qwen3-30b-a3b"}
    assert set(sv["design"]) == {"snake", "mac_tree", "sa48x48", "sa8x288", "gpu"}
    assert (sv["e2e_s"] > 0).all() and (sv["tbt_s"] > 0).all()


def test_link_sweep_and_buffers(small_study: SnakeStudy, tmp_path: Path) -> None:
    """The sweep reruns the decode tables at each link speed; the buffer table lists the four shapes with the OS
    weight buffer halving as the long side halves (8x512 -> 64x64: 512, 256, 128, 64 weights per cycle)."""
    sw = small_study.link_sweep["speedups"]
    assert sorted(sw["link_GBps"].unique()) == [32.0, 64.0]
    at64 = sw[sw["link_GBps"] == 64.0].drop(columns="link_GBps").reset_index(drop=True)
    pd_equal = at64[["model", "baseline", "speedup"]].equals(small_study.speedups[["model", "baseline", "speedup"]])
    assert pd_equal  # the scenario's own 64 GB/s reproduces the main table
    b = small_study.buffers.set_index("shape")
    assert list(b.index) == ["8x512", "16x256", "32x128", "64x64"]
    w = b["os_weight_kib"].to_numpy()
    assert np.allclose(w[:-1] / w[1:], 2.0)


def test_energy_tables_of_a_small_study(small_study: SnakeStudy) -> None:
    """Every design has an energy row per decode point whose parts add to its totals and whose tokens/J is the batch
    over that energy on every device of the TP group; SNAKE's peak fits the 24 TB/s budget and not the 30.34 TB/s
    one; the claims get the energy and power rows; the area split's energy line has one point per array that fits."""
    en = small_study.energy
    assert set(en["design"]) == {"snake", "mac_tree", "sa48x48", "sa8x288", "gpu"}
    nmp = en[en["design"] != "gpu"]
    parts = nmp[[f"{p}_J" for p in ("mac", "sram", "vector", "control", "noc")]].sum(axis=1)
    assert np.allclose(parts, nmp["logic_J"], rtol=1e-12)
    assert np.allclose(nmp["logic_J"] + nmp["dram_J"], nmp["total_J"], rtol=1e-12)
    tp = small_study.spec.tp  # the TP group's devices make the batch's tokens together
    assert np.allclose(en["tokens_per_J"], en["batch"] / (tp * en["logic_J"]), rtol=1e-12)
    power = small_study.power.set_index("design")
    assert bool(power.loc["snake", "fits"]) and not bool(power.loc["snake", "fits_uncapped"])
    assert power.loc["snake", "decode_max_W"] <= power.loc["snake", "peak_W"]
    measured, _ = measure(small_study)
    assert {"energy_mac_tree", "energy_sa48x48", "energy_sa8x288", "energy_gpu", "power_total"} <= set(measured)
    assert measured["power_total"] == pytest.approx(sum(measured[f"power_{p}"] for p in
                                                        ("matrix", "vector", "pe_control", "noc")), rel=1e-12)
    assert len(small_study.area_energy) >= 1 and (small_study.area_energy["logic_J"] > 0).all()


def test_overloaded_serving_points_are_left_out_of_the_ratios() -> None:
    """Issue 32: a design offered a rate at or above its own capacity queues without bound; its E2E is no
    steady-state number. By hand: at rate 0.2 the GPU's E2E is 3 s against SNAKE's 1 s (3x); at 0.8 it is
    overloaded with 40 s (40x, left out): the GPU row reads 3x, not 40x; the MAC tree (never overloaded) reads
    2x and 1.5x."""
    import pandas as pd

    from chipdse.studies.snake.claims import _serving_measures

    rows = []
    for f, ours, tree, gpu, over in ((0.2, 1.0, 2.0, 3.0, False), (0.8, 2.0, 3.0, 40.0, True)):
        rows += [{"model": "m", "rate_fraction": f, "design": "snake", "e2e_s": ours, "overloaded": False},
                 {"model": "m", "rate_fraction": f, "design": "mac_tree", "e2e_s": tree, "overloaded": False},
                 {"model": "m", "rate_fraction": f, "design": "gpu", "e2e_s": gpu, "overloaded": over}]
    got = _serving_measures(pd.DataFrame(rows))
    assert got["e2e_gpu_min"] == got["e2e_gpu_max"] == 3.0
    assert (got["e2e_mac_tree_min"], got["e2e_mac_tree_max"]) == (1.5, 2.0)
