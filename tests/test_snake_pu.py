"""SNAKE multi-PU modes, the per-operator scheduler, and the two hardware formulations against enumeration."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from chipdse.cli import app
from chipdse.core.paths import instances_dir
from chipdse.evaluators.snake import MAC_TREE, PAPER_MODELS, SNAKE, Design, GemmOp, decode_gemms, load_card
from chipdse.evaluators.snake_pu import (
    GROUPED,
    MODES,
    STRATUM,
    NmpTemplate,
    collective_s,
    decode_step_s,
    design_speedups,
    grouped_plan,
    mode_plan,
    schedule_op,
)
from chipdse.formulations.snake_area import AreaSplitProblem
from chipdse.formulations.snake_shapes import AREA_TOL_MM2, ShapeSetProblem
from chipdse.solvers.snake_hw import solve_area_split, solve_shape_set
from tests.claims_checks import check_claims_csv

gemms = st.builds(GemmOp, st.just("g"), st.integers(1, 64), st.integers(16, 8192), st.integers(16, 8192),
                  st.just(1))


@settings(max_examples=40, deadline=None)
@given(gemms)
def test_per_operator_choice_is_never_slower_than_any_fixed_mode(op: GemmOp) -> None:
    best = schedule_op(op, SNAKE).time_s
    for mode in MODES:
        assert best <= schedule_op(op, SNAKE, modes=(mode,)).time_s * (1 + 1e-12)


def test_collectives_follow_the_ring_formulas_by_hand() -> None:
    # all-gather of 1 MiB over the 16-PU chain: 15 steps of (20 ns + 1 MiB / 16 / 64 GB/s)
    v = 2**20
    assert collective_s("allgather", 16, v, STRATUM) == pytest.approx(15 * (20e-9 + v / 16 / 64e9), rel=1e-12)
    assert collective_s("allreduce", 4, v, STRATUM) == pytest.approx(2 * 3 * (20e-9 + v / 4 / 64e9), rel=1e-12)
    assert collective_s("allgather", 1, v, STRATUM) == 0.0


def test_collectives_keep_activations_n_split_between_operators_by_hand() -> None:
    # LLaMA-3-70B QKV at batch 8, TP 8: A is 8 x 8192, C is 8 x 1280 (FP16). OS-S gathers A over the 16-PU chain,
    # IS-S reduce-scatters C; the ST modes gather A's k / 4 slice and reduce-scatter C's n / 4 block in groups of 4.
    op = GemmOp("qkv", 8, 8192, 1280, 1)
    a_bytes, c_bytes = 8 * 8192 * 2, 8 * 1280 * 2
    assert mode_plan(op, "OS-S", STRATUM)[2] == pytest.approx(15 * (20e-9 + a_bytes / 16 / 64e9), rel=1e-12)
    assert mode_plan(op, "IS-S", STRATUM)[2] == pytest.approx(15 * (20e-9 + c_bytes / 16 / 64e9), rel=1e-12)
    st = 3 * (20e-9 + a_bytes / 4 / 4 / 64e9) + 3 * (20e-9 + c_bytes / 4 / 4 / 64e9)
    assert mode_plan(op, "OS-ST", STRATUM)[2] == pytest.approx(st, rel=1e-12)
    assert mode_plan(op, "IS-ST", STRATUM)[2] == pytest.approx(st, rel=1e-12)
    # a column-parallel OS-S GEMM followed by a row-parallel IS-S GEMM pays one gather and one reduce-scatter:
    # together the ring all-reduce of the hidden-size activation, as Megatron's pair of GEMMs does
    up, down = GemmOp("up", 8, 8192, 7168, 1), GemmOp("down", 8, 7168, 8192, 1)
    pair = mode_plan(up, "OS-S", STRATUM)[2] + mode_plan(down, "IS-S", STRATUM)[2]
    assert pair == pytest.approx(collective_s("allreduce", 16, a_bytes, STRATUM), rel=1e-12)


def test_mode_plans_split_the_gemm_as_snake_sec5_says() -> None:
    op = GemmOp("ffn", 8, 8192, 7168, 1)
    # OS-S: n over 16 PUs x 4 cores; IS-S: k over them; ST: both by 4 across the mesh, then the cores split
    assert mode_plan(op, "OS-S", STRATUM)[:2] == ((8, 8192, 112), "os")
    assert mode_plan(op, "IS-S", STRATUM)[:2] == ((8, 128, 7168), "is")
    assert mode_plan(op, "OS-ST", STRATUM)[:2] == ((8, 2048, 448), "os")
    assert mode_plan(op, "IS-ST", STRATUM)[:2] == ((8, 512, 1792), "is")


def test_mac_tree_is_one_16_cubed_tree_per_pu_by_hand() -> None:
    op = GemmOp("ffn", 8, 8192, 7168, 1)
    s = schedule_op(op, MAC_TREE)
    # per PU n = 7168 / 16 = 448: ceil(8/16) * ceil(448/16) * ceil(8192/16) = 14336 blocks + log2(16) = 14340 cycles
    compute = 14340 / 1e9
    memory = (8 * 8192 + 8192 * 448 + 8 * 448) * 2 / (24e12 / 16)
    assert s.compute_s == pytest.approx(max(compute, memory), rel=1e-12)


def test_grouped_expert_gemm_by_hand() -> None:
    """Qwen3-30B-A3B, batch 8: 64 experts of (m, k, n) = (1, 2048, 192), one per core (64 cores, one round).

    One expert on one core, OS (Sr = m = 1, Sc = n = 192, T = k = 2048), pipelined: 8x512 takes 7 + 2048 + 511 - 1 =
    2565 cycles; the best is 16x256: 15 + 2048 + 255 - 1 = 2317 cycles (32x128 needs 2 folds:
    31 + 2 x 2048 + 127 - 1 = 4253; IS on 512x8 needs 4 folds of T = 192 < R = 512: 1023 + 192 + 3 x 512 + 7 - 1 =
    2757). At 800 MHz that is 2.896 us, above the core's DRAM time (1 x 2048 + 2048 x 192 + 192) x 2 B at 24 TB/s /
    64 = 2.109 us. The layer takes one round, so one execution is 2.896 us / 64. The down projection then sums
    the 8 tokens' outputs (8 x 2048 x 2 B) by a ring all-reduce over the 16 PUs: 2 x 15 x (20 ns + 32768 / 16 /
    64 GB/s), shared by the 64 experts.
    """
    up = GemmOp("expert_up_gate", 1, 2048, 192, 48 * 64, group=64)
    s = grouped_plan(up, SNAKE, STRATUM)
    assert (s.mode, s.rows, s.cols, s.dataflow) == (GROUPED, 16, 256, "os")
    assert s.compute_s == pytest.approx(2317 / 800e6 / 64, rel=1e-12) and s.comm_s == 0.0
    # 100 experts: two rounds of one expert per core (the PU-split alternative is slower: 4 x 1221 cycles > 2 x 2317)
    assert grouped_plan(GemmOp("e", 1, 2048, 192, 100, group=100), SNAKE, STRATUM).compute_s == pytest.approx(
        2 * 2317 / 800e6 / 100, rel=1e-12)
    down = GemmOp("expert_down", 1, 96, 2048, 48 * 64, group=64, combine_rows=8)
    assert grouped_plan(down, SNAKE, STRATUM).comm_s == pytest.approx(2 * 15 * (20e-9 + 32768 / 16 / 64e9) / 64)
    # the scheduler takes the grouped GEMM: faster than splitting each expert over all PUs in any mode
    assert schedule_op(up, SNAKE).mode == GROUPED
    assert schedule_op(up, SNAKE).time_s < schedule_op(up, SNAKE, grouped=False).time_s


def test_qk_and_pv_cycles_at_4k_context_by_hand() -> None:
    """LLaMA-3-70B, batch 2, context 4096 on one core with one 8x512 OS array, pipelined, memory not binding.

    At TP = 8 a device holds 8 query heads and 1 KV head: g = 8 heads share each KV head, so per (request, KV head)
    QK^T is (8, 128, 4096) and PV is (8, 4096, 128). QK^T: Sr = 8, Sc = 4096 -> 8 folds of T = 128:
    7 + 128 + 7 x 128 + 511 - 1 = 1541 cycles. PV: Sc = 128 -> 1 fold of T = 4096: 7 + 4096 + 511 - 1 = 4613.
    The two requests run one after the other on the single core, in each of the 80 layers.
    """
    ops = [o for o in decode_gemms(load_card("llama-3-70b"), 2, context=4096) if o.head_parallel]
    assert [(o.name, o.m, o.k, o.n, o.count, o.group) for o in ops] == [
        ("qk", 8, 128, 4096, 160, 2), ("pv", 8, 4096, 128, 160, 2)]
    one = NmpTemplate("one-core", 1, 1, 1e6, 2.35, 64.0, 0.0, 2, 1, vector_ops_per_cycle=10**12)
    design = Design("os8x512", "systolic", 800e6, ((8, 512),), ("os",), reconfigurable=True, pipelined=True)
    assert decode_step_s(ops, design, one) == pytest.approx(80 * 2 * (1541 + 4613) / 800e6, rel=1e-6)


@pytest.mark.parametrize("model", PAPER_MODELS)
def test_snake_beats_the_mac_tree_on_every_table1_model(model: str) -> None:
    """Issue 16: SNAKE is faster than the MAC tree (one 16x16x16 tree per PU) on every Table 1 model, dense and
    MoE, at batch 8 and 64 with an 8K context."""
    card = load_card(model)
    for b in (8, 64):
        assert design_speedups(decode_gemms(card, b, context=8192))["mac_tree"] > 1.0, (model, b)


def test_logical_shape_follows_the_batch_for_the_large_ffn() -> None:
    """Under OS the array's short side holds m = batch: LLaMA-3-70B's FFN picks 8x512 at batch 8 ... 64x64 at 64
    (SNAKE Fig. 14a: the preferred shape shifts with batch)."""
    card = load_card("llama-3-70b")
    for b in (8, 16, 32, 64):
        op = next(o for o in decode_gemms(card, b) if o.name == "ffn_up_gate")
        s = schedule_op(op, SNAKE)
        if b == 8:  # memory-bound at batch 8 (8 FLOP/B against a 17.5 FLOP/B ridge): the b-row shape ties the best
            only = dataclasses.replace(SNAKE, shapes=((b, 4096 // b), (4096 // b, b)))
            assert schedule_op(op, only).time_s == pytest.approx(s.time_s, rel=0.01)
        else:
            assert min(s.rows, s.cols) == b, (b, s)


@st.composite
def shape_set_instances(draw: st.DrawFn) -> ShapeSetProblem:
    n_shapes = draw(st.integers(2, 5))
    n_ops = draw(st.integers(1, 6))
    times = np.array(draw(st.lists(st.floats(1e-6, 1e-3), min_size=n_ops * n_shapes, max_size=n_ops * n_shapes)))
    ports = tuple(draw(st.lists(st.integers(1, 16), min_size=n_shapes, max_size=n_shapes)))
    cfg = tuple(draw(st.lists(st.floats(0.0, 0.05), min_size=n_shapes, max_size=n_shapes)))
    return ShapeSetProblem(tuple((i + 1, 64) for i in range(n_shapes)), ports, cfg, draw(st.floats(0.001, 0.02)),
                           draw(st.floats(0.0, 0.3)), tuple(f"op{i}" for i in range(n_ops)),
                           np.array(draw(st.lists(st.integers(1, 100), min_size=n_ops, max_size=n_ops)), dtype=float),
                           times.reshape(n_ops, n_shapes), always=(0,))


@settings(max_examples=25, deadline=None)
@given(shape_set_instances())
def test_shape_set_milp_equals_enumeration_and_beats_greedy(p: ShapeSetProblem) -> None:
    # A shape set whose area lies within the feasibility tolerance of the budget (AREA_TOL_MM2, 1 um^2) is feasible
    # to the checker and to enumeration but may not be to HiGHS: such instances have no single right answer.
    optional = [i for i in range(len(p.shapes)) if i not in p.always]
    sets = [frozenset(p.always) | frozenset(c) for k in range(len(optional) + 1)
            for c in itertools.combinations(optional, k)]
    assume(all(abs(p.area_mm2(x) - p.area_budget_mm2) > 2 * AREA_TOL_MM2 for x in sets))
    milp, enum, greedy = (solve_shape_set(p, m) for m in ("milp-highs", "enumeration", "greedy"))
    assert enum.objective is not None
    assert milp.objective == pytest.approx(enum.objective, rel=1e-6)
    assert greedy.objective >= enum.objective * (1 - 1e-9)
    assert p.area_mm2(milp.decision) <= p.area_budget_mm2 + 1e-6
    if milp.objective == pytest.approx(enum.objective, rel=1e-12):  # ties go to the smaller area in both
        assert p.area_mm2(milp.decision) == pytest.approx(p.area_mm2(enum.decision), abs=1e-9)


@st.composite
def area_split_instances(draw: st.DrawFn) -> AreaSplitProblem:
    n_pe, n_buf = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    lat = np.array(draw(st.lists(st.floats(1e-6, 1e-2), min_size=n_pe * n_buf, max_size=n_pe * n_buf)))
    pe = np.array(draw(st.lists(st.floats(0.01, 0.3), min_size=n_pe, max_size=n_pe)))
    buf = np.array(draw(st.lists(st.floats(0.01, 0.3), min_size=n_buf, max_size=n_buf)))
    return AreaSplitProblem(tuple((8, 128 * (i + 1)) for i in range(n_pe)), pe,
                            tuple(16 * (j + 1) for j in range(n_buf)), buf, draw(st.floats(0.05, 0.6)),
                            lat.reshape(n_pe, n_buf))


@settings(max_examples=25, deadline=None)
@given(area_split_instances())
def test_area_split_milp_equals_enumeration(p: AreaSplitProblem) -> None:
    milp, enum = solve_area_split(p, "milp-highs"), solve_area_split(p, "enumeration")
    assert milp.status == enum.status
    if enum.objective is not None:
        assert milp.objective == pytest.approx(enum.objective, rel=1e-6)
    else:
        assert "smallest array" in enum.reason


def _small_snake(tmp_path: Path, **changes: object) -> Path:
    spec = yaml.safe_load((instances_dir() / "scenarios" / "snake-stratum.yaml").read_text())
    spec.update(models=["llama-3-70b", "qwen3-30b-a3b"], batches=[8, 32])
    spec["shape_set"]["budgets_mm2"] = [0.12]
    spec.update(changes)
    path = tmp_path / "snake.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_explore_on_the_bundled_snake_scenario_writes_the_report(tmp_path: Path) -> None:
    """docs/tour.md's command: `chipdse explore instances/scenarios/snake-stratum.yaml`."""
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["explore", str(instances_dir() / "scenarios" / "snake-stratum.yaml"),
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    # run summary, speedups, modes, shapes, buffers, link sweep, 2 hardware, serving, energy and power, 3 claims,
    # glossary
    assert len(re.findall(rb"/Type /Page\b", (out / "report.pdf").read_bytes())) == 14
    man = json.loads((out / "manifest.json").read_text())
    assert set(man["summary"]["average_speedups"]) == {"mac_tree", "sa48x48", "sa8x288", "gpu"}
    assert all(v > 0 for v in man["summary"]["average_speedups"].values()) and len(man["details"]["models"]) == 5
    methods = {r["method"]: r["decode_time_s"] for r in man["details"]["shape_set"]}
    assert methods["milp-highs"] == pytest.approx(methods["enumeration"], rel=1e-6)
    assert methods["enumeration"] <= methods["greedy"] * (1 + 1e-9)
    area = man["details"]["area_split"]
    assert area[0]["latency_s"] == pytest.approx(area[1]["latency_s"], rel=1e-6)
    rows = check_claims_csv(out, "snake")
    assert set(rows.loc[rows["claim"].str.startswith("power_"), "basis"]) == {"construction"}  # Fig. 11 by design


def test_snake_scenario_errors_are_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["explore", str(_small_snake(tmp_path, models=["gpt-17"])), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "gpt-17" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["explore", str(_small_snake(tmp_path, batches=[0])), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "batches" in res.output
    unsupported = _small_snake(tmp_path, models=["mamba2-2.7b"], mode_models=["mamba2-2.7b"])
    res = runner.invoke(app, ["explore", str(unsupported), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "models[0]" in res.output and "not supported by the SNAKE evaluator" in res.output
    spec = yaml.safe_load(_small_snake(tmp_path).read_text())
    for section, change, expect in (("area_split", {"cols": []}, "area_split.cols"),
                                    ("shape_set", {"rows": [7]}, "at least 8"),
                                    ("shape_set", {"rows": [128]}, "divide the 64-row"),
                                    ("area_split", {"pu_fixed_area_mm2": 3.0}, "pu_fixed_area_mm2")):
        bad = {**spec, section: {**spec[section], **change}}
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(bad))
        res = runner.invoke(app, ["explore", str(path), "--out", str(tmp_path / "o")])
        assert res.exit_code == 2 and expect in res.output and "Traceback" not in res.output, res.output
    path.write_text(yaml.safe_dump({**spec, "kind": "snek"}))
    res = runner.invoke(app, ["explore", str(path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "kind: one of" in res.output


def test_serving_isolated_requests_and_md1_prefill_queue() -> None:
    """The serving event simulation: an isolated request takes prefill + l_out iterations at batch 1; with a
    negligible decode, the GPU prefill queue is M/D/1, whose mean wait is rho / (2 mu (1 - rho))
    (Pollaczek-Khinchine)."""
    from chipdse.evaluators.snake_serving import simulate

    step = np.array([0.0, 1e-3, 2e-3, 3e-3])
    r = simulate(step, 0.05, rate_rps=1e-4, l_out=10, requests=20, seed=1)
    assert r.finished == 20 and r.tbt_s == pytest.approx(1e-3) and r.e2e_s == pytest.approx(0.05 + 10e-3)
    service, rho = 0.01, 0.5
    r = simulate(np.full(65, 1e-9), service, rate_rps=rho / service, l_out=1, requests=40_000, seed=2)
    wait = rho / (2 * (1 / service) * (1 - rho))
    assert r.finished == 40_000
    assert r.e2e_s - service == pytest.approx(wait, rel=0.05)


def test_shape_set_milp_breaks_equal_times_by_the_least_area() -> None:
    """Shapes 1 and 2 give the same decode time (33 x 1 us); by hand, {0, 1} needs max(1, 4) = 4 ports x 1/64 mm^2
    = 0.0625 mm^2 and {0, 2} one port plus 1/32 mm^2 of reconfiguration = 0.046875 mm^2: the least area wins, as
    in the enumeration (the first stage's area tie-break alone is below HiGHS's gap tolerance)."""
    p = ShapeSetProblem(((1, 64), (2, 64), (3, 64)), (1, 4, 1), (0.0, 0.0, 0.03125), 0.015625, 0.25, ("op0",),
                        np.array([33.0]), np.array([[9.82685531e-04, 1e-6, 1e-6]]), (0,))
    milp, enum = solve_shape_set(p, "milp-highs"), solve_shape_set(p, "enumeration")
    assert enum.decision == frozenset({0, 2})
    assert milp.decision == frozenset({0, 2})
    assert p.area_mm2(milp.decision) == pytest.approx(0.046875, abs=1e-12)
    assert milp.objective == pytest.approx(33e-6, rel=1e-9)
