"""Every registered method of every registered decision problem on a tiny hand-built instance.

Checked from outside the solvers: each decision passes the problem's checker and its objective is the checker's;
the status follows the one optimality rule (heuristics FEASIBLE without a bound, exact methods OPTIMAL iff their
gap is closed); no exact method is worse than any heuristic; and every exact method reaches the optimum found by
enumerating every decision here, with the checker as the only scorer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from chipdse.core.solution import SolutionStatus
from chipdse.formulations.expert_split import TIER1, TIER2, ExpertSplitProblem
from chipdse.formulations.hbm_packing import HbmPackingProblem, PackBlock
from chipdse.formulations.hbm_partition import HbmPartitionProblem
from chipdse.formulations.mapping import MappingProblem, PhasePart, joint_mapping
from chipdse.formulations.placement import PlacementProblem, grid_ring_cells
from chipdse.formulations.snake_area import AreaSplitProblem
from chipdse.formulations.snake_shapes import ShapeSetProblem
from chipdse.solvers.common import ENUMERATION_METHODS
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.registry import PROBLEMS

CONFIG = SolverConfig(time_limit_s=20.0, threads=1)
REL = 1e-6
"""Relative slack for comparing objectives of different methods (solver tolerances, CP-SAT ticks)."""


def _placement() -> PlacementProblem:
    """2 x 3 grid, two HBM stacks restricted to the ring (every cell of a 2 x 3 grid is on it) and three chiplets."""
    ring = grid_ring_cells(2, 3)
    return PlacementProblem(2, 3, {"hbm:a": 1, "hbm:m": 1, "A": 1, "M": 2},
                            {("A", "hbm:a"): 7.0, ("M", "hbm:m"): 5.0, ("A", "M"): 2.0, ("M", "M"): 1.0},
                            allowed={"hbm:a": ring, "hbm:m": ring}, ring_cells=ring, name="tiny-placement")


def _placements(p: PlacementProblem) -> Iterator[dict[int, str]]:
    chiplets = [t for t, n in p.counts.items() for _ in range(n)]
    for cells in itertools.permutations(range(p.rows * p.cols), len(chiplets)):
        yield dict(zip(cells, chiplets, strict=True))


def _mapping() -> MappingProblem:
    """Five tasks on three chiplets; task k4 runs on c1 and c2 only."""
    times = {("k0", "c0"): 3.0, ("k0", "c1"): 2.0, ("k0", "c2"): 4.0, ("k1", "c0"): 2.0, ("k1", "c1"): 3.0,
             ("k1", "c2"): 2.5, ("k2", "c0"): 4.0, ("k2", "c1"): 1.0, ("k2", "c2"): 2.0, ("k3", "c0"): 1.5,
             ("k3", "c1"): 2.0, ("k3", "c2"): 1.0, ("k4", "c1"): 2.5, ("k4", "c2"): 3.0}
    return MappingProblem(("k0", "k1", "k2", "k3", "k4"), ("c0", "c1", "c2"), times, name="tiny-mapping")


def _joint_mapping() -> MappingProblem:
    """Two prefill tasks (home c0) and two decode tasks (home c1, c2; weight 3) that may cross to the other role."""
    pre = MappingProblem(("a", "b"), ("c0", "c1", "c2"), {("a", "c0"): 3.0, ("a", "c1"): 4.0, ("b", "c0"): 2.0,
                                                         ("b", "c2"): 2.5})
    dec = MappingProblem(("a", "b"), ("c0", "c1", "c2"), {("a", "c0"): 0.5, ("a", "c1"): 0.4, ("a", "c2"): 0.6,
                                                         ("b", "c1"): 0.3, ("b", "c2"): 0.2})
    return joint_mapping([PhasePart("prefill", pre, 1.0, ("c0",)), PhasePart("decode", dec, 3.0, ("c1", "c2"))],
                         name="tiny-cross-phase")


def _mappings(p: MappingProblem) -> Iterator[dict[str, str]]:
    for chosen in itertools.product(p.chiplets, repeat=len(p.tasks)):
        yield dict(zip(p.tasks, chosen, strict=True))


def _partition() -> HbmPartitionProblem:
    return HbmPartitionProblem(n_hbm=7, capacity_bytes=100.0, weight_bytes={"mamba": 150.0, "attention": 90.0},
                               per_request_bytes={"mamba": 3.0, "attention": 7.0}, name="tiny-partition")


def _partitions(p: HbmPartitionProblem) -> Iterator[dict[str, int]]:
    for n in range(p.n_hbm + 1):
        yield {"mamba": n, "attention": p.n_hbm - n}


def _packing() -> HbmPackingProblem:
    blocks = (PackBlock("a0", "g", 40.0, 3.0), PackBlock("a1", "g", 30.0, 2.0), PackBlock("a2", "g", 20.0, 4.0),
              PackBlock("a3", "g", 25.0, 1.0), PackBlock("b0", "h", 50.0, 2.0), PackBlock("b1", "h", 10.0, 5.0))
    return HbmPackingProblem({"g": 2, "h": 2}, 100.0, blocks, name="tiny-packing")


def _packings(p: HbmPackingProblem) -> Iterator[dict[str, int]]:
    groups = p.stack_groups()
    for stacks in itertools.product(range(len(groups)), repeat=len(p.blocks)):
        yield {b.name: s for b, s in zip(p.blocks, stacks, strict=True)}


def _experts() -> ExpertSplitProblem:
    return ExpertSplitProblem((4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 4e6), (40, 9, 3, 22, 0, 5, 1), name="tiny-experts")


def _splits(p: ExpertSplitProblem) -> Iterator[dict[int, int]]:
    for tiers in itertools.product((TIER1, TIER2), repeat=p.n_experts):
        yield dict(enumerate(tiers))


def _shapes() -> ShapeSetProblem:
    time_s = np.array([[4.0, 3.0, 2.5, 2.0], [1.0, 1.5, 2.0, 2.5], [3.0, 2.0, 2.2, 3.5]])
    return ShapeSetProblem(((64, 64), (32, 128), (16, 256), (8, 512)), (1, 2, 4, 8), (0.01, 0.01, 0.01, 0.01),
                           0.012, 0.06, ("q", "k", "v"), np.array([2.0, 1.0, 3.0]), time_s, always=(0,),
                           name="tiny-shapes")


def _shape_sets(p: ShapeSetProblem) -> Iterator[frozenset[int]]:
    for k in range(len(p.shapes) + 1):
        yield from (frozenset(c) for c in itertools.combinations(range(len(p.shapes)), k))


def _area() -> AreaSplitProblem:
    latency = np.array([[5.0, 4.0, 3.9], [3.0, 2.5, 2.4], [2.8, 2.0, 1.5]])
    return AreaSplitProblem(((8, 128), (8, 256), (8, 512)), np.array([0.1, 0.2, 0.4]), (32, 64, 128),
                            np.array([0.05, 0.1, 0.2]), 0.5, latency, name="tiny-area")


def _area_pairs(p: AreaSplitProblem) -> Iterator[tuple[int, int]]:
    yield from itertools.product(range(len(p.pe_configs)), range(len(p.buffer_kb)))


TINY: dict[str, tuple[Callable[[], Any], Callable[[Any], Iterator[Any]]]] = {
    "placement": (_placement, _placements),
    "placement-max-link": (_placement, _placements),
    "mapping": (_mapping, _mappings),
    "mapping-cross-phase": (_joint_mapping, _mappings),
    "hbm-partition": (_partition, _partitions),
    "hbm-packing": (_packing, _packings),
    "expert-split": (_experts, _splits),
    "snake-shapes": (_shapes, _shape_sets),
    "snake-area": (_area, _area_pairs),
}
"""Problem name -> (tiny instance, every decision of it, feasible or not)."""


def _enumerated_optimum(name: str) -> float:
    """The best checked objective over every decision of the tiny instance (the test's own brute force)."""
    record = PROBLEMS[name]
    build, decisions = TINY[name]
    instance = build()
    values = [obj for obj, bad in (record.check(instance, d) for d in decisions(instance)) if not bad]
    return min(values) if record.sense == "min" else max(values)


def test_every_registered_problem_has_a_tiny_instance() -> None:
    assert set(TINY) == set(PROBLEMS)
    for record in PROBLEMS.values():
        assert set(record.default_methods) <= set(record.methods)
        assert not set(record.exact_methods) & set(record.heuristics)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_method_conforms(name: str) -> None:
    record = PROBLEMS[name]
    instance = TINY[name][0]()
    optimum = _enumerated_optimum(name)
    sign = 1 if record.sense == "min" else -1
    sols = {m: record.solve(instance, m, CONFIG, 0, None) for m in record.methods}
    for m, sol in sols.items():
        assert sol.problem == name and sol.method == m and sol.sense == record.sense
        assert sol.decision is not None, (m, sol.status, sol.reason)
        objective, violations = record.check(instance, sol.decision)
        assert violations == [], m
        assert sol.objective == objective, m
        if m in record.heuristics:
            assert not sol.exact and sol.status == SolutionStatus.FEASIBLE and sol.bound is None, m
            continue
        assert sol.exact, m
        gap = sol.gap
        assert gap is not None and sign * (sol.objective - sol.bound) >= -REL * max(abs(sol.objective), 1.0), m
        if m in ENUMERATION_METHODS:
            assert sol.status == SolutionStatus.OPTIMAL and sol.bound == sol.objective, m
        elif gap > CONFIG.rel_gap + REL:  # a gap beyond the tolerance (and any model rounding) is never optimal
            assert sol.status == SolutionStatus.FEASIBLE, m
        else:
            assert sol.status == SolutionStatus.OPTIMAL, m
        assert sol.objective == pytest.approx(optimum, rel=REL, abs=1e-12), m
    for e in record.exact_methods:
        for h in record.heuristics:
            assert sign * (sols[e].objective - sols[h].objective) <= REL * abs(sols[h].objective), (e, h)
