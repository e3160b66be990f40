"""Cross-phase mapping (HYDRA Eqs. 3-5 with Sec. IV-C's cross-phase tasks): both phases' blocks on one capacity per
chiplet, against assignments enumerated here and loads recomputed from the per-phase inputs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.design_space import PointSpec
from chipdse.core.errors import SpecError
from chipdse.core.scenario import load_scenario
from chipdse.formulations.mapping import (
    MappingProblem,
    PhasePart,
    check_mapping,
    joint_mapping,
    split_joint_decision,
)
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.mapping import lpt_greedy_mapping, solve_cross_phase_mapping, solve_mapping
from chipdse.solvers.placement import solve_placement
from chipdse.solvers.problems import joint_mapping_problem, mapping_problem, placement_problem
from tests.solution_checks import CONFIG

REL = 1e-5  # MILP gap and CP-SAT ticks (see tests/test_mapping.py)


def per_chiplet_work(parts: list[PhasePart], maps: dict[str, dict[str, str]]) -> dict[str, float]:
    """Each chiplet's work summed over the phases, from the per-phase problems' own times and weights."""
    work: dict[str, float] = {}
    for part in parts:
        for block, c in maps[part.phase].items():
            work[c] = work.get(c, 0.0) + part.weight * part.problem.time_s[block, c]
    return work


def enumerate_optimum(parts: list[PhasePart], cross_phase: bool) -> tuple[float, list[dict[str, dict[str, str]]]]:
    """Least busiest-chiplet work over every assignment of every phase's blocks; and all optimal assignments."""
    slots = []
    for part in parts:
        for k in part.problem.tasks:
            cs = [c for c in part.problem.chiplets if (k, c) in part.problem.time_s and (cross_phase or c in part.home)]
            slots.append([(part.phase, k, c) for c in cs])
    best, argbest = float("inf"), []
    for combo in itertools.product(*slots):
        maps: dict[str, dict[str, str]] = {p.phase: {} for p in parts}
        for phase, k, c in combo:
            maps[phase][k] = c
        value = max(per_chiplet_work(parts, maps).values())
        if value < best - 1e-12:
            best, argbest = value, [maps]
        elif value <= best + 1e-12:
            argbest.append(maps)
    return best, argbest


def tiny_parts() -> list[PhasePart]:
    """Prefill on chiplet P (and, slower, on decode chiplets D1 / D2); decode iterations weigh 2.5 per request;
    block p2 is of a family D2 lacks, d1 of one P lacks."""
    chiplets = ("P", "D1", "D2")
    pre = MappingProblem(("p0", "p1", "p2"), chiplets, {
        ("p0", "P"): 2.0, ("p0", "D1"): 3.0, ("p0", "D2"): 3.5,
        ("p1", "P"): 1.5, ("p1", "D1"): 2.5, ("p1", "D2"): 2.0,
        ("p2", "P"): 1.0, ("p2", "D1"): 1.8})
    dec = MappingProblem(("d0", "d1"), chiplets, {
        ("d0", "P"): 0.4, ("d0", "D1"): 0.3, ("d0", "D2"): 0.5,
        ("d1", "D1"): 0.6, ("d1", "D2"): 0.4})
    return [PhasePart("prefill", pre, 1.0, ("P",)), PhasePart("decode", dec, 2.5, ("D1", "D2"))]


@pytest.mark.parametrize("cross_phase", [False, True])
@pytest.mark.parametrize("method", ["milp-highs", "cpsat", "brute-force"])
def test_exact_methods_equal_enumeration(method: str, cross_phase: bool) -> None:
    parts = tiny_parts()
    expected, _ = enumerate_optimum(parts, cross_phase)
    sol = solve_cross_phase_mapping(joint_mapping(parts, cross_phase), method, CONFIG)
    assert sol.exact and sol.objective == pytest.approx(expected, rel=REL)
    assert max(per_chiplet_work(parts, split_joint_decision(sol.decision)).values()) == pytest.approx(expected,
                                                                                                   rel=REL)


def test_tiny_instance_by_hand() -> None:
    """Same-phase: P runs 2 + 1.5 + 1 = 4.5 s; cross-phase the optimum lends decode chiplets to prefill."""
    parts = tiny_parts()
    same, _ = enumerate_optimum(parts, cross_phase=False)
    assert same == pytest.approx(4.5)
    cross, _ = enumerate_optimum(parts, cross_phase=True)
    assert cross < same
    assert solve_cross_phase_mapping(joint_mapping(parts, True), "milp-highs", CONFIG).objective < 4.5


def overloaded_prefill() -> list[PhasePart]:
    """Three 4 s prefill blocks on one prefill chiplet P (6 s each on a decode chiplet); two 1 s decode blocks
    that P cannot run, on two decode chiplets.

    By hand: with k prefill blocks on P the busiest chiplet works 4k (k = 3: 12 s; k = 2: 8 s), or, for k = 1,
    the two others go one per decode chiplet with one decode block each, 6 + 1 = 7 s; k = 0 puts two 6 s blocks
    on one decode chiplet (>= 12 s). Optimum 7 s, with two prefill blocks on decode chiplets.
    """
    chiplets = ("P", "D1", "D2")
    pre = MappingProblem(("p0", "p1", "p2"), chiplets,
                         {(k, c): (4.0 if c == "P" else 6.0) for k in ("p0", "p1", "p2") for c in chiplets})
    dec = MappingProblem(("d0", "d1"), chiplets, {(k, c): 1.0 for k in ("d0", "d1") for c in ("D1", "D2")})
    return [PhasePart("prefill", pre, 1.0, ("P",)), PhasePart("decode", dec, 1.0, ("D1", "D2"))]


@pytest.mark.parametrize("method", ["milp-highs", "cpsat", "lpt-greedy"])
def test_overloaded_prefill_moves_to_decode_chiplets(method: str) -> None:
    parts = overloaded_prefill()
    same = solve_cross_phase_mapping(joint_mapping(parts, cross_phase=False), method, CONFIG)
    assert same.objective == pytest.approx(12.0)
    sol = solve_cross_phase_mapping(joint_mapping(parts, cross_phase=True), method, CONFIG)
    assert sol.objective == pytest.approx(7.0, rel=REL)
    maps = split_joint_decision(sol.decision)
    assert sorted(maps["prefill"].values()).count("P") == 1
    assert {maps["prefill"][k] for k in maps["prefill"]} - {"P"} == {"D1", "D2"}


@st.composite
def random_parts(draw: st.DrawFn) -> list[PhasePart]:
    """Two phases, 1-3 blocks each, 2-4 chiplets each either role; random times, gaps and decode weight."""
    n_chip = draw(st.integers(2, 4))
    chiplets = tuple(f"c{i}" for i in range(n_chip))
    n_pre_role = draw(st.integers(1, n_chip - 1))
    roles = {"prefill": chiplets[:n_pre_role], "decode": chiplets[n_pre_role:]}
    time = st.floats(0.05, 10.0, allow_nan=False)
    parts = []
    for phase, weight in (("prefill", 1.0), ("decode", draw(st.floats(0.1, 20.0)))):
        tasks = tuple(f"{phase[0]}{i}" for i in range(draw(st.integers(1, 3))))
        times = {}
        for k in tasks:
            home = draw(st.sampled_from(roles[phase]))
            times[k, home] = draw(time)  # every block runs on a chiplet of its role
            for c in chiplets:
                if c != home and draw(st.booleans()):
                    times[k, c] = draw(time)
        parts.append(PhasePart(phase, MappingProblem(tasks, chiplets, times), weight, roles[phase]))
    return parts


@settings(max_examples=40, deadline=None)
@given(random_parts(), st.sampled_from(["lpt-greedy", "milp-highs", "round-robin"]))
def test_no_chiplet_is_booked_twice(parts: list[PhasePart], method: str) -> None:
    """Whatever the method, the reported bottleneck is the busiest chiplet's work summed over BOTH phases
    (recomputed from the per-phase inputs), every block of every phase is mapped once, and cross-phase is never
    worse than same-phase for the exact method and the LPT heuristic."""
    cross = solve_cross_phase_mapping(joint_mapping(parts, cross_phase=True), method, CONFIG)
    maps = split_joint_decision(cross.decision)
    for part in parts:
        assert sorted(maps[part.phase]) == sorted(part.problem.tasks)
    work = per_chiplet_work(parts, maps)
    assert cross.objective == pytest.approx(max(work.values()), rel=1e-9)
    assert all(w <= cross.objective * (1 + 1e-9) for w in work.values())
    if method != "round-robin":
        same = solve_cross_phase_mapping(joint_mapping(parts, cross_phase=False), method, CONFIG)
        assert cross.objective <= same.objective * (1 + REL)
    if method == "milp-highs":
        assert cross.objective == pytest.approx(enumerate_optimum(parts, True)[0], rel=REL)


def test_lpt_keeps_every_task_on_a_compatible_chiplet() -> None:
    problem = joint_mapping(tiny_parts(), cross_phase=True)
    decision = lpt_greedy_mapping(problem)
    assert check_mapping(problem, decision)[1] == []


@pytest.mark.parametrize(("change", "field"), [
    (lambda ps: [ps[0], ps[0]], "parts"),
    (lambda ps: [PhasePart("prefill", ps[0].problem, -1.0, ps[0].home), ps[1]], "prefill.weight"),
    (lambda ps: [PhasePart("prefill", ps[0].problem, 1.0, ("X",)), ps[1]], "prefill.home"),
])
def test_bad_parts_are_refused_naming_the_field(change, field: str) -> None:
    with pytest.raises(SpecError) as info:
        joint_mapping(change(tiny_parts()))
    assert info.value.field == field


@pytest.fixture(scope="module")
def default_design() -> tuple:
    """The default scenario's library, model and workload on a placed 19-chiplet design (HYDRA greedy placement)."""
    sc = load_scenario()
    point = PointSpec({"Ap": 1, "Ad": 1, "Mp": 4, "Md": 13}, {"attention": 2, "mamba": 3}, 640.0, 16)
    placement = solve_placement(placement_problem(sc, point, 1.0), "hydra-greedy").decision
    return sc, point, placement


def test_scenario_instance_joins_both_phases_per_request(default_design: tuple) -> None:
    """Same-phase: each phase's own mapping times, prefill once per request and a decode iteration
    mean_decode / batch times; cross-phase adds exactly the other role's chiplets of a compatible family."""
    sc, point, placement = default_design
    same = joint_mapping_problem(sc, point, placement, point.batch, cross_phase=False)
    cross = joint_mapping_problem(sc, point, placement, point.batch, cross_phase=True)
    per_request = {"prefill": 1.0, "decode": sc.lengths.mean_decode / point.batch}
    role = {f"{ty}@{cell}": sc.library.by_name(ty).phase for cell, ty in placement.items() if not ty.startswith("hbm")}
    family = {c: sc.library.by_name(c.split("@")[0]).family for c in role}
    assert set(cross.chiplets) == set(role) and len(role) == sum(point.counts.values())
    for phase, weight in per_request.items():
        own = mapping_problem(sc, point, placement, phase, point.batch)
        for (k, c), t in own.time_s.items():
            assert same.time_s[f"{phase}:{k}", c] == pytest.approx(weight * t, rel=1e-12)
            assert cross.time_s[f"{phase}:{k}", c] == pytest.approx(weight * t, rel=1e-12)
        assert sum(1 for task, _ in same.time_s if task.startswith(phase)) == len(own.time_s)
        for k in own.tasks:
            fams = {family[c] for c in own.chiplets if (k, c) in own.time_s}  # the block's families
            crossed = {c for c in cross.chiplets if (f"{phase}:{k}", c) in cross.time_s and role[c] != phase}
            assert crossed == {c for c in role if role[c] != phase and family[c] in fams}


def test_scenario_cross_phase_never_loses_and_same_phase_decouples(default_design: tuple) -> None:
    """Same-phase, the joint optimum is the slower phase's own optimum (scaled per request); cross-phase LPT and
    MILP are at least as good, and on this design (prefill on 5 of 19 chiplets) better."""
    sc, point, placement = default_design
    cfg = SolverConfig(work_limit=5, threads=1)
    pre = solve_mapping(mapping_problem(sc, point, placement, "prefill", point.batch), "milp-highs", cfg)
    dec = solve_mapping(mapping_problem(sc, point, placement, "decode", point.batch), "milp-highs", cfg)
    same_problem = joint_mapping_problem(sc, point, placement, point.batch, cross_phase=False)
    same = solve_cross_phase_mapping(same_problem, "milp-highs", cfg)
    assert same.objective == pytest.approx(max(pre.objective, dec.objective * sc.lengths.mean_decode / point.batch),
                                           rel=1e-3)
    cross_problem = joint_mapping_problem(sc, point, placement, point.batch)
    for method in ("lpt-greedy", "milp-highs"):
        cross = solve_cross_phase_mapping(cross_problem, method, cfg)
        assert cross.objective < same.objective
        assert check_mapping(cross_problem, cross.decision)[1] == []
