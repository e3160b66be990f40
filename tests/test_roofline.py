"""The roofline-only DSE baseline (HYDRA Table V, Williams et al. 2009): the fluid split by hand and against a
brute-force search, and one design of the default scenario recomputed block by block."""

from __future__ import annotations

import numpy as np
import pytest

from chipdse.core.design_space import enumerate_points
from chipdse.core.scenario import load_scenario
from chipdse.evaluators.latency import block_table, chiplet_caps, decode_costs, prefill_costs
from chipdse.evaluators.roofline import fluid_makespan_s, roofline_scores
from chipdse.studies.hydra.sweep import subset_points


def test_fluid_makespan_by_hand() -> None:
    # A = 2, M = 1 chiplet-seconds of own work; shared work 2 s on an attention chiplet, 4 s on a Mamba one; one
    # chiplet each: x = (1 (1 + 4) - 1 * 2) / (1 * 2 + 1 * 4) = 1/2, both finish at 2 + 1 = 1 + 2 = 3 s
    assert fluid_makespan_s(2.0, 1.0, 2.0, 4.0, 1, 1) == pytest.approx(3.0)
    # no Mamba chiplet: all shared work on the two attention chiplets, (2 + 2) / 2
    assert fluid_makespan_s(2.0, 0.0, 2.0, 4.0, 2, 0) == pytest.approx(2.0)
    # Mamba work with no Mamba chiplet cannot run
    assert np.isinf(fluid_makespan_s(2.0, 1.0, 2.0, 4.0, 1, 0))


def test_fluid_makespan_matches_brute_force() -> None:
    rng = np.random.default_rng(1)
    x = np.linspace(0, 1, 20001)
    for _ in range(50):
        a, m, sa, sm = rng.uniform(0, 5, 4)
        na, nm = rng.integers(1, 8, 2)
        brute = np.maximum((a + x * sa) / na, (m + (1 - x) * sm) / nm).min()
        assert fluid_makespan_s(a, m, sa, sm, na, nm) == pytest.approx(brute, rel=1e-3)


def test_one_design_recomputed_block_by_block() -> None:
    sc = load_scenario()
    pts, _ = enumerate_points(sc)
    i = int(np.flatnonzero((pts.n_hbm == 6) & (pts.d2d_GBps == 512) & (pts.max_batch == 16))[7])
    row = roofline_scores(sc, subset_points(pts, np.array([i]))).iloc[0]
    lib, ln, model = sc.library, sc.lengths, sc.model
    t = block_table(model)
    counts = dict(zip(pts.types, pts.counts[i], strict=True))
    caps = {n: chiplet_caps(lib.by_name(n), lib, np.array([512.0])) for n in pts.types}
    by_kind = {(lib.by_name(n).family, lib.by_name(n).phase): n for n in pts.types}
    # memory: the pooled stacks hold the weights and r requests of mean context
    per_req = model.kv_bytes_per_token() * (ln.mean_prefill + ln.mean_decode) + model.state_bytes_per_request()
    r = int((6 * lib.memory.capacity_GB * 1e9 - t.stored_weight_bytes.sum()) // per_req)
    b = min(16, r)
    assert row["batch_eff"] == b
    bw = 6 * lib.memory.bandwidth_GBps * 1e9
    times = {}
    for phase, costs, batch in (("prefill", prefill_costs(t, ln.mean_prefill, ln.second_moment_prefill,
                                                          sc.spec.estimator.chunk_tokens), 1),
                                ("decode", decode_costs(t, ln.mean_prefill + ln.mean_decode / 2), b)):
        work = {"attention": 0.0, "mamba": 0.0}
        shared = {"attention": 0.0, "mamba": 0.0}
        for k in range(len(t.names)):
            for fam in ("attention", "mamba"):
                c = caps[by_kind[(fam, phase)]]
                s = ((costs.mat0[k] + batch * costs.mat1[k]) / c.matrix_flops[0]
                     + (costs.vec0[k] + batch * costs.vec1[k]) / c.vector_flops[0])
                if t.family[k] == 2:
                    shared[fam] += s
                elif t.family[k] == (0 if fam == "attention" else 1):
                    work[fam] += s
        n_a, n_m = counts[by_kind[("attention", phase)]], counts[by_kind[("mamba", phase)]]
        x = np.linspace(0, 1, 200001)  # brute force over the shared work's split
        comp = np.maximum((work["attention"] + x * shared["attention"]) / n_a,
                          (work["mamba"] + (1 - x) * shared["mamba"]) / n_m).min()
        times[phase] = max(comp, costs.bytes_at(float(batch)).sum() / bw)
    assert row["prefill_s"] == pytest.approx(times["prefill"], rel=1e-4)
    assert row["decode_iteration_s"] == pytest.approx(times["decode"], rel=1e-4)
    cap = min(1 / times["prefill"], b / (times["decode"] * ln.mean_decode))
    assert row["throughput_tps"] == pytest.approx(cap * ln.mean_decode, rel=1e-4)
    assert row["ttft_s"] == pytest.approx(times["prefill"], rel=1e-4)  # no queueing in a roofline
