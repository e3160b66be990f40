"""NOVA system model: HBM4 arithmetic, capacity limits, decode step by hand, and the bundled NOVA study."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.evaluators.nova_model import LayerWork, NovaModel, load_nova_model
from chipdse.evaluators.nova_system import (
    ABLATION,
    ATTACC,
    DESIGNS,
    DUPLEX,
    GPU,
    NOVA,
    NOVA_EXACT,
    NOVA_KSTAR,
    NOVA_STATIC_SERVED,
    PIMBA,
    SYSTEM,
    ExpertSplitCase,
    GpuEfficiency,
    NovaDesign,
    decode_step_s,
    e2e,
    expert_split_cases,
    fits,
    longest_context,
    moe_mode_times_s,
    nmp_time_s,
    prefill_s,
    routed_tokens,
    serve,
    serving_output_lengths,
)
from chipdse.solvers.config import SolverConfig
from chipdse.studies.claims import NOT_RUN, claim_rows
from chipdse.studies.nova import claims as nova_claims
from chipdse.studies.nova.study import solve_expert_splits
from tests.claims_checks import check_claims_csv


def test_hbm4_cube_and_system_by_hand() -> None:
    # 2048 pins x 8 Gb/s = 2.048 TB/s to the GPU per cube; five 36 GB cubes = 180 GB; NOVA's cube holds 2.09x
    # (NOVA Sec. IV-A: 1.5 x 1.39), 5 x 36 x 2.09 = 376.2 GB
    assert SYSTEM.cube.external_Bps == 2048 * 8e9 / 8
    assert SYSTEM.capacity_bytes(GPU) == 180e9 and SYSTEM.capacity_bytes(NOVA) == pytest.approx(376.2e9, rel=1e-12)
    assert SYSTEM.cube.pseudo_channels_total == 16


def test_only_nova_runs_nemotron3_super_at_256k() -> None:
    """NOVA Fig. 15: "NOVA is the only design that runs at 256K without OoM" (Nemotron3-Super's 247 GB of weights
    alone exceed five 36 GB cubes)."""
    m = load_nova_model("nemotron3-super-120b-a12b")
    runs = {d.name for d in DESIGNS if longest_context(m, d, 32) >= 256 * 1024}
    assert runs == {"NOVA", "NOVA k*", "NOVA exact", "NOVA energy-first", "NOVA 1:9"}  # one cube; mode policies differ
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
    # one GQA layer (32 q heads, 8 KV heads, head dim 128) with 1e9 GPU-side parameters, no LM head; the GPU
    # sustains 70% of its peak and bandwidth on GEMMs and 35% on attention (the stated defaults)
    m = NovaModel("toy", "toy", 1e9, {"other": 10**9}, (LayerWork(10**9, attention=(32, 8, 128)),), 0)
    batch, ctx = 8, 4096
    gpu_bw = 5 * 2.048e12
    proj = max(2e9 * batch / (989e12 * 0.7), 2e9 / (gpu_bw * 0.7))
    flops, nbytes = 4 * 32 * 128 * ctx * batch, 2 * 8 * 128 * 2 * ctx * batch
    gpu = decode_step_s(m, GPU, batch, ctx)
    assert gpu["step_s"] == pytest.approx(proj + max(flops / (989e12 * 0.35), nbytes / (gpu_bw * 0.35)), rel=1e-12)
    # Duplex runs the GQA core on each cube's base-die (64 TFLOPS, 4 TB/s) on a fifth of the work, plus one sync
    intensity = flops / nbytes  # 2 g / b = 8 for 4:1 grouping in BF16
    duplex = decode_step_s(m, DUPLEX, batch, ctx)
    assert duplex["step_s"] == pytest.approx(proj + flops / 5 / min(64e12, intensity * 4e12) + 2e-6, rel=1e-12)


@pytest.mark.slow
def test_explore_on_the_bundled_nova_scenario_writes_the_report(tmp_path: Path) -> None:
    """docs/tour.md's command: `chipdse explore instances/scenarios/nova-nemotron3-nano.yaml`."""
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["explore", str(instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml"),
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    # throughput, E2E, ablation, routing policies, capacity, one expert-split page per routing, claims, glossary
    assert len(re.findall(rb"/Type /Page\b", (out / "report.pdf").read_bytes())) >= 10
    man = json.loads((out / "manifest.json").read_text())
    assert all(abs(r["params"] / r["published"] - 1) < 0.01 for r in man["details"]["model_sizes"])  # Table II
    sm = man["summary"]
    assert sm["nova_vs_gpu_throughput_x"] > 1 and 0 < sm["nova_vs_gpu_e2e_reduction"] < 1
    claims = man["details"]["claims"]
    assert claims["ablation_nova_best"] == 1.0 and claims["density_x"] == pytest.approx(2.09)
    assert claims["pimba_vs_gpu_min"] >= 1.0 and claims["gain_grows_with_length"] == 1.0
    table = man["details"]["expert_split"]
    exact = [r for r in table if r["method"] in ("milp-highs", "cpsat", "brute-force")]
    assert all(abs(r["gap"]) < 1e-6 for r in exact)
    assert all(r["gap"] >= -1e-9 for r in table)  # no heuristic beats the exact split
    rows = check_claims_csv(out, "nova")
    assert rows.loc[rows["claim"] == "density_x", "basis"].item() == "input"  # NOVA Sec. IV-A's 1.5 x 1.39


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


def test_moe_tier1_only_beats_a_split_of_two_cold_experts_by_hand() -> None:
    """Two experts of W bytes (P = W / 2 BF16 parameters), one token each: I = 1 Op/B, F = 2 P = W FLOPs each.

    Tier-1 alone runs both at min(32, 1 x 16) = 16 TFLOPS: 2 W / 16e12 = W / 8e12. Any split halves Tier-1 to
    min(16, 8) = 8 TFLOPS and gives Tier-2 min(64, 4) = 4 TFLOPS: one expert on each tier ends at W / 4e12, both on
    Tier-1' at 2 W / 8e12 = W / 4e12, both on Tier-2 at W / 2e12; so the layer runs Tier-1 only (NOVA Sec. V-B)."""
    w = 8e6
    case = ExpertSplitCase((1, 1), w, SYSTEM.tiers, "static-1-9")
    best_split = w / 4e12  # the brute-force best of the four assignments above
    modes = moe_mode_times_s(case, {case: best_split})
    assert modes["tier1"] == pytest.approx(w / 8e12, rel=1e-12)
    assert modes["tier2"] == pytest.approx(2 * w / 4e12, rel=1e-12)
    assert min(modes, key=modes.get) == "tier1"


def test_moe_split_beats_one_tier_with_a_hot_expert_by_hand() -> None:
    """Tokens (16, 1): the hot expert (I = 16, F = 16 W) takes 16 W / 32e12 on Tier-1 alone and the cold one
    W / 16e12, 0.5625 W / 1e12 together; on Tier-2 alone 16 W / 64e12 + W / 4e12 = 0.5 W / 1e12; split (hot on Tier-2
    at 64 TFLOPS, cold on the halved Tier-1 at 8 TFLOPS) max(0.25, 0.125) W / 1e12 = 0.25 W / 1e12: the split wins."""
    w = 8e6
    case = ExpertSplitCase((16, 1), w, SYSTEM.tiers, "static-1-9")
    modes = moe_mode_times_s(case, {case: max(16 * w / 64e12, w / 8e12)})
    assert modes["tier1"] == pytest.approx(0.5625 * w / 1e12, rel=1e-12)
    assert modes["tier2"] == pytest.approx(0.5 * w / 1e12, rel=1e-12)
    assert min(modes, key=modes.get) == "split"


def test_static_split_solver_agrees_with_the_hand_split() -> None:
    """The static 1:9 split of the (16, 1) case puts the hottest ceil(10% of 2) = 1 expert on Tier-2: the makespan
    of the hand computation above; the step then takes the split."""
    w = 8e6
    case = ExpertSplitCase((16, 1), w, SYSTEM.tiers, "static-1-9")
    solved = solve_expert_splits([case], SolverConfig(time_limit_s=5))[case]
    assert solved.makespan_s == pytest.approx(max(16 * w / 64e12, w / 8e12), rel=1e-9)


@pytest.mark.parametrize(("batch", "top_k", "experts"), [(32, 6, 128), (64, 8, 128), (3, 2, 4), (64, 22, 512)])
def test_routings_conserve_tokens(batch: int, top_k: int, experts: int) -> None:
    for routing in ("skewed", "uniform", "concentrated"):
        tokens = routed_tokens(batch, experts, top_k, routing)
        assert len(tokens) == experts and sum(tokens) == batch * top_k and max(tokens) <= batch
        assert all(a >= b for a, b in zip(tokens, tokens[1:], strict=False)) or routing == "uniform"


def test_skewed_routing_is_fig_4b() -> None:
    """NOVA Fig. 4(b): the hottest 10% of experts (13 of 128) are picked 5x as often as each other one. Batch 64,
    top-6: 384 picks, 13 x 5 + 115 = 180 shares, so about 384 x 5 / 180 = 10.7 per hot expert and 2.13 per cold
    one; a Poisson count of mean 2.13 is non-zero with probability 1 - exp(-2.13) = 0.88: about 101 of the 115 cold
    experts are active."""
    tokens = routed_tokens(64, 128, 6, "skewed")
    hot, cold = tokens[:13], tokens[13:]
    assert sum(hot) / 13 == pytest.approx(384 * 5 / 180, abs=0.5)
    assert sum(cold) / 115 == pytest.approx(384 / 180, abs=0.1)
    assert sum(1 for n in cold if n) == round(115 * (1 - math.exp(-384 / 180)))


def test_nemotron_h_4b_state_with_conv_by_hand() -> None:
    """Nemotron-H-4B (its card): 24 Mamba-2 layers, d_inner 7168, state 128, 8 groups, conv kernel 4. SSM state
    7168 x 128 and conv state (7168 + 2 x 8 x 128) x (4 - 1) elements per layer, BF16: 45,367,296 bytes."""
    card = json.loads((instances_dir() / "models" / "nemotron-h-4b.json").read_text())
    layers = card["layer_mixer"].count("mamba2")
    d_in, n, g, k = (card[f] for f in ("ssm_d_inner", "ssm_state_size", "ssm_n_groups", "ssm_conv_kernel"))
    by_hand = layers * (d_in * n + (d_in + 2 * g * n) * (k - 1)) * 2
    assert by_hand == 45_367_296
    assert load_nova_model("nemotron-h-4b").state_bytes_per_request() == by_hand


def test_ablation_ranks_nova_first_and_in_die_pim_beats_the_gpu() -> None:
    """NOVA Fig. 14 / Fig. 11 orderings on Nemotron3-Nano (batch 32, 4K/1K): NOVA is the best of the five NMP
    variants, and PIMBA and AttAcc are not slower than the GPU."""
    m = load_nova_model("nemotron3-nano-30b-a3b")
    designs = (GPU, ATTACC, PIMBA, *ABLATION)
    cases = {c for d in designs for c in expert_split_cases(m, d, 32)}
    splits = {c: o.makespan_s for c, o in solve_expert_splits(list(cases), SolverConfig(time_limit_s=20)).items()}
    step = {d.name: decode_step_s(m, d, 32, 4096 + 512, expert_splits=splits)["step_s"] for d in designs}
    assert min((d.name for d in ABLATION), key=step.get) == "NOVA"
    assert step["PIMBA"] < step["GPU"] and step["AttAcc"] <= step["GPU"]


def test_nova_claims_measure_the_runs_they_are_fed() -> None:
    """A hand-made runs table (one hybrid model, two batches, two lengths): every ratio is the quotient of the
    numbers typed in, and the claims table shows the rows off by more than 25% with their reasons."""
    base = {"GPU": (10.0, 100.0, 100.0, 50.0, 2.0, 4.0, 3.0), "NOVA": (2.0, 30.0, 450.0, 15.0, 0.5, 0.5, 0.5),
            "PIMBA": (5.0, 60.0, 200.0, 30.0, 1.5, 1.0, 3.0), "AttAcc": (9.0, 90.0, 110.0, 45.0, 1.0, 4.0, 3.0),
            "Duplex": (6.0, 70.0, 150.0, 40.0, 1.0, 4.0, 1.0)}
    rows = []
    for batch in (32, 64):
        for l_in in (2048, 4096):
            for design, (step, e2e_s, dec, serve_e2e, gqa, ssm, moe) in base.items():
                grow = 1.1 if design == "NOVA" and batch == 64 else 1.0  # NOVA's served gain grows with batch
                rows.append({"model": "hybrid-moe", "batch": batch, "l_in": l_in, "l_out": l_in // 4, "design": design,
                             "fits": True, "step_s": step, "e2e_s": e2e_s, "serve_decode_tps": dec * grow,
                             "serve_throughput_tps": dec / 2, "serve_e2e_s": serve_e2e, "gqa_s": gqa, "ssm_s": ssm,
                             "moe_s": moe})
    study = SimpleNamespace(runs=pd.DataFrame(rows), ablation=pd.DataFrame(), routing_runs=pd.DataFrame(),
                            capacity=pd.DataFrame([{"design": "GPU", "capacity_GB": 180.0},
                                                   {"design": "NOVA", "capacity_GB": 376.2}]))
    m, notes = nova_claims.measure(study)
    assert m["throughput_x"] == pytest.approx((4.5 + 4.95) / 2)  # served decoding: 450 / 100 and 495 / 100
    assert m["throughput_decode_x"] == pytest.approx(10 / 2)
    assert m["e2e_change"] == pytest.approx(-70.0) and m["e2e_change_static"] == pytest.approx(-70.0)
    assert m["pimba_vs_gpu_hybrid"] == pytest.approx(2.0) and m["attacc_vs_gpu_min"] == pytest.approx(1.1)
    assert m["gqa_vs_pimba"] == pytest.approx(3.0) and m["ssm_vs_pimba"] == pytest.approx(2.0)
    assert m["gqa_vs_attacc"] == pytest.approx(2.0) and m["moe_vs_duplex"] == pytest.approx(2.0)
    assert m["gain_grows_with_batch"] == 1.0 and m["gain_grows_with_length"] == 0.0  # equal gains do not grow
    assert m["qwen_throughput_x"] is None and m["density_x"] == pytest.approx(2.09)
    assert "60% of its decode step" in notes["pimba_vs_gpu_hybrid"]  # PIMBA's experts: 3 of its 5 s
    rows = {r.key: r for r in claim_rows(m, notes, claims=nova_claims.NOVA_CLAIMS)}
    assert rows["throughput_x"].off is False and rows["ssm_vs_pimba"].off and "swept" in rows["ssm_vs_pimba"].note
    assert rows["qwen_throughput_x"].note == NOT_RUN


def test_continuous_batching_by_hand() -> None:
    """Two slots, two requests of outputs L/2 and 3L/2 (mean L), a model whose decode step streams 1e9 weights
    (bandwidth-bound at any batch here, so one step takes c = 2e9 / (5 x 2.048e12 x 0.7) s): both are prefilled
    together (p), the first finishes after L/2 steps, the second after 3L/2. Makespan p + 3L/2 c, decoding
    throughput 2L / (3L/2 c), mean E2E p + L c."""
    m = NovaModel("toy", "toy", 1e9, {"other": 10**9, "routed_experts": 0}, (LayerWork(10**9),), 0)
    l_in, l_out = 512, 100
    c = 2e9 / (5 * 2.048e12 * 0.7)
    assert decode_step_s(m, GPU, 1, 0)["step_s"] == pytest.approx(c) == decode_step_s(m, GPU, 2, 0)["step_s"]
    p = prefill_s(m, 2, l_in)
    r = serve(m, GPU, 2, l_in, l_out, 2)
    assert serving_output_lengths(2, l_out) == [50, 150]
    assert r["serve_makespan_s"] == pytest.approx(p + 150 * c, rel=1e-12)
    assert r["serve_decode_tps"] == pytest.approx(200 / (150 * c), rel=1e-12)
    assert r["serve_e2e_s"] == pytest.approx(p + 100 * c, rel=1e-12)
    # one slot: the second request waits for the first, and its prefill stalls nothing else
    r1 = serve(m, GPU, 1, l_in, l_out, 2)
    p1 = prefill_s(m, 1, l_in)
    assert r1["serve_makespan_s"] == pytest.approx(2 * p1 + 200 * c, rel=1e-12)
    assert r1["serve_e2e_s"] == pytest.approx(p1 + 100 * c, rel=1e-12)


def test_nova_serves_with_the_adaptive_split_and_keeps_1_9_for_static_batches() -> None:
    """NOVA Sec. VI-E: "All results in Figs. 11-15 use the static 1:9 hot/cold split", while in serving "the
    tier-assignment policy dynamically rebalances the workload at every decode step using the current router
    output": a static batch runs the 1:9 split, the served stream k*; served, NOVA is NOVA k* step for step, and
    on Qwen3 at batch 64 (3-4 tokens per cold expert, past Tier-1's 2 Op/B knee) k* serves faster than 1:9."""
    m = load_nova_model("qwen3-30b-a3b")
    assert NOVA.expert_split == "static-1-9" and NOVA.serving().expert_split == "nova-kstar"
    assert NOVA_STATIC_SERVED.serving() is NOVA_STATIC_SERVED
    cases = {c for b in (1, 2, 3, 63, 64) for d in (NOVA.serving(), NOVA_STATIC_SERVED)
             for c in expert_split_cases(m, d, b)}
    splits = {c: o.result for c, o in solve_expert_splits(list(cases), SolverConfig(time_limit_s=5)).items()}
    with pytest.raises(ValueError, match="nova-kstar expert split"):
        serve(m, NOVA, 3, 2048, 512, 3, expert_splits={c: v for c, v in splits.items()
                                                        if c.method == "static-1-9"})
    served = serve(m, NOVA, 3, 2048, 512, 3, expert_splits=splits)
    assert served == serve(m, NOVA_KSTAR, 3, 2048, 512, 3, expert_splits=splits)
    step = {d.name: decode_step_s(m, d, 64, 2048.0, expert_splits=splits)["step_s"]
            for d in (NOVA.serving(), NOVA_STATIC_SERVED)}
    assert step["NOVA"] < step["NOVA 1:9"]


def test_in_die_pim_rooflines_by_hand() -> None:
    """AttAcc / PIMBA in-die PIM per cube: 9 x 2.048 TB/s of bank-level bandwidth (AttAcc's power-constrained
    bank-level scale) at 1 FLOP/B; PIMBA's state update on SPUs shared by two banks runs at half of it. A Mamba-2
    layer (d_inner 1024, state 128) at batch 1: 5 x 1024 x 128 FLOPs over five cubes at 1.25 Op/B; PIMBA reaches
    min(9.216, 1.25 x 9.216) = 9.216 TFLOPS per cube, NOVA's Tier-1 min(32, 1.25 x 16) = 20."""
    internal = 9 * 2048 * 8e9 / 8
    assert PIMBA.in_die_Bps == pytest.approx(internal) and PIMBA.in_die_flops == pytest.approx(internal)
    flops = 5 * 1024 * 128 / 5
    assert nmp_time_s(PIMBA, 5 * flops, 1.25, op="ssm") == pytest.approx(flops / (internal / 2), rel=1e-12)
    assert nmp_time_s(NOVA, 5 * flops, 1.25, op="ssm") == pytest.approx(flops / 20e12, rel=1e-12)


def test_an_operator_runs_near_memory_only_when_that_is_faster() -> None:
    """The same Mamba-2 layer at batch 1: the GPU streams its 2 x 1024 x 128 x 2 B of state at 10% of 10.24 TB/s in
    0.51 us, less than PIMBA's 2 us hand-off, so it stays on the GPU; at batch 256 (131 us on the GPU) it runs in-die
    (256 x 14.2 ns + 2 us)."""
    model = NovaModel("toy", "toy", 0.0, {"ssm": 0}, (LayerWork(gpu_params=0, ssm=(1024, 128)),))
    gpu_s = 2 * 1024 * 128 * 2 / (5 * 2.048e12 * 0.1)
    one = decode_step_s(model, PIMBA, 1, 0)
    assert one["nmp_s"] == 0 and one["gpu_s"] == pytest.approx(gpu_s, rel=1e-12)
    many = decode_step_s(model, PIMBA, 256, 0)
    assert many["gpu_s"] == 0
    assert many["step_s"] == pytest.approx(256 * 1024 * 128 / (9 * 2.048e12 / 2) + 2e-6, rel=1e-12)


def test_bad_system_inputs_rejected() -> None:
    with pytest.raises(SpecError, match="ssm"):
        GpuEfficiency(ssm=0.0)
    with pytest.raises(SpecError, match="nmp"):
        NovaDesign("x", nmp="cloud")
    with pytest.raises(SpecError, match="ssm_share"):
        NovaDesign("x", nmp="in-die", ssm_share=1.5)
    with pytest.raises(SpecError, match="routing"):
        routed_tokens(32, 128, 6, "zipf")
    with pytest.raises(SpecError, match="serving"):
        serving_output_lengths(0, 100)


def test_glossary_tells_every_design_apart() -> None:
    """Issue 32: "NOVA" and "NOVA 1:9" had the same definition. Each design's glossary entry is its own: NOVA
    serves with k*, NOVA 1:9 with the static split, energy-first says its priority; "base-die only" is Duplex
    and says so."""
    from chipdse.evaluators.nova_system import ABLATION, DESIGNS
    from chipdse.reports.nova_pages import design_terms

    designs = (*DESIGNS, *ABLATION[:-1])
    terms = design_terms(designs)
    bodies = [t.split(": ", 1)[1] for t in terms]
    assert len(set(bodies)) == len(bodies), [t for t in terms if bodies.count(t.split(": ", 1)[1]) > 1]
    by = dict(zip([d.name for d in designs], terms, strict=True))
    assert "serving with continuous batching: nova-kstar" in by["NOVA"] and "serving" not in by["NOVA 1:9"]
    assert "least energy" in by["NOVA energy-first"]
