"""Multi-cell chiplet footprints (1x2, 2x1, 2x2 cells): checker by hand, exact models against brute force.

Oracles: hand-computed center distances and coverage, and brute-force enumeration of every placement.
"""

from __future__ import annotations

import dataclasses

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipdse.core.errors import SpecError
from chipdse.core.scenario import load_scenario
from chipdse.core.solution import SolutionStatus
from chipdse.formulations.placement import (
    PlacementProblem,
    allowed_cells,
    check_placement,
    grid_ring_cells,
    placement_infeasibility,
)
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.placement import FOOTPRINT_METHODS, PLACEMENT_METHODS, brute_force_placement, solve_placement
from chipdse.solvers.problems import placement_problem
from chipdse.studies.hydra.stages import finalist_design

CONFIG = SolverConfig(work_limit=20)
RING = grid_ring_cells(4, 4)
# 4x4 grid: a 2x2 chiplet Q, a 1x2 W, a 2x1 T, a one-cell A and two HBM stacks on the ring (11 of 16 cells)
FOOT = PlacementProblem(
    4, 4, {"Q": 1, "W": 1, "T": 1, "A": 1, "hbm:x": 2},
    {("Q", "hbm:x"): 9.0, ("W", "Q"): 4.0, ("T", "hbm:x"): 3.0, ("A", "W"): 2.0, ("A", "hbm:x"): 1.0, ("T", "Q"): 5.0},
    allowed={"hbm:x": RING}, ring_cells=RING, name="4x4-footprints",
    footprints={"Q": (2, 2), "W": (1, 2), "T": (2, 1)},
)


def test_center_distance_and_coverage_by_hand() -> None:
    """Q (2x2) at cell 0 covers 0, 1, 4, 5 (center row 0.5, col 0.5); W (1x2) at cell 2 covers 2, 3 (center 0, 2.5):
    2.5 hops apart, 4 bytes -> 10. A chiplet on cell 5 overlaps Q; W at cell 3 leaves the grid."""
    problem = PlacementProblem(4, 4, {"Q": 1, "W": 1}, {("W", "Q"): 4.0}, footprints={"Q": (2, 2), "W": (1, 2)})
    assert check_placement(problem, {0: "Q", 2: "W"}) == (10.0, [])
    _, bad = check_placement(problem, {0: "Q", 5: "W"})
    assert any("cell 5 is covered" in v for v in bad)
    _, bad = check_placement(problem, {0: "Q", 3: "W"})
    assert any("leaves the grid" in v for v in bad)
    assert allowed_cells(problem, "Q") == (0, 1, 2, 4, 5, 6, 8, 9, 10)  # anchors with the 2x2 inside the grid
    assert len(allowed_cells(problem, "W")) == 12


def test_area_counts_in_feasibility_and_bad_footprints_are_rejected() -> None:
    """Four 2x2 chiplets fill a 4x4 grid; a fifth needs 20 cells. Footprints outside the supported shapes fail."""
    problem = PlacementProblem(4, 4, {"Q": 5}, {}, footprints={"Q": (2, 2)})
    assert placement_infeasibility(problem) == "5 chiplets need 20 cells, the grid has 16"
    with pytest.raises(SpecError, match="footprints.Q"):
        check_placement(PlacementProblem(4, 4, {"Q": 1}, {}, footprints={"Q": (3, 1)}), {})


@pytest.mark.parametrize("method", [m for m in FOOTPRINT_METHODS if m != "milp-compact"])  # compact: below
def test_multicell_chiplets_on_4x4_equal_brute_force(method: str) -> None:
    """2-cell and 4-cell chiplets on a 4x4 grid: every footprint-aware exact method proves the brute-force optimum."""
    decision, _ = brute_force_placement(FOOT)
    best, violations = check_placement(FOOT, decision)
    assert violations == []
    sol = solve_placement(FOOT, method, CONFIG)
    assert sol.status == SolutionStatus.OPTIMAL, (method, sol.reason)
    assert check_placement(FOOT, sol.decision) == (pytest.approx(sol.objective), [])
    assert sol.objective == pytest.approx(best, rel=1e-9)
    assert sol.bound <= sol.objective + 1e-9


def test_one_cell_methods_refuse_footprints_with_a_reason() -> None:
    """Methods that place one-cell chiplets only return no placement and name the methods that can."""
    for method in sorted(set(PLACEMENT_METHODS) - set(FOOTPRINT_METHODS)):
        sol = solve_placement(FOOT, method, CONFIG)
        assert sol.decision is None and "multi-cell footprints" in sol.reason, method


@st.composite
def footprint_instances(draw: st.DrawFn) -> PlacementProblem:
    """A 3x3 or 3x4 grid with one multi-cell chiplet, 1-2 one-cell chiplets and one ring stack, integer volumes."""
    rows, cols = 3, draw(st.integers(3, 4))
    shape = draw(st.sampled_from([(1, 2), (2, 1), (2, 2)]))
    counts = {"B": 1, "a": draw(st.integers(1, 2)), "hbm:x": 1}
    types = list(counts)
    pairs = [(t, u) for k, t in enumerate(types) for u in types[k:]]
    volumes = {pair: float(draw(st.integers(0, 9))) for pair in pairs}
    ring = grid_ring_cells(rows, cols)
    return PlacementProblem(rows, cols, counts, volumes, allowed={"hbm:x": ring}, ring_cells=ring,
                            footprints={"B": shape}, name="footprint-hypothesis")


@settings(max_examples=8, deadline=None)
@given(problem=footprint_instances())
def test_property_footprint_milp_equals_brute_force(problem: PlacementProblem) -> None:
    """On random small grids with a multi-cell chiplet, the RLT-1 and compact MILPs equal brute force."""
    best = check_placement(problem, brute_force_placement(problem)[0])[0]
    for method in ("milp-highs", "milp-compact"):
        sol = solve_placement(problem, method, CONFIG)
        assert sol.status == SolutionStatus.OPTIMAL
        assert sol.objective == pytest.approx(best, rel=1e-9, abs=1e-9)


@pytest.mark.slow
def test_library_footprint_reaches_the_placement_problem() -> None:
    """A library die with footprint "1x2" (and stacks "2x2") becomes the placement problem's footprints; the
    default library spans one cell per die (no footprints, so every default result is unchanged)."""
    sc = load_scenario()
    design = finalist_design(sc, "b-star")
    point = design.point
    row = {"capacity_rps": design.capacity_rps}
    assert placement_problem(sc, point, row["capacity_rps"]).footprints == {}
    first = sc.library.compute[0]
    compute = [c.model_copy(update={"footprint": "1x2"}) if c.name == first.name else c for c in sc.library.compute]
    lib = sc.library.model_copy(update={"compute": compute,
                                        "memory": sc.library.memory.model_copy(update={"footprint": "2x2"})})
    problem = placement_problem(dataclasses.replace(sc, library=lib), point, row["capacity_rps"])
    expected = {first.name: (1, 2)} if point.counts.get(first.name) else {}
    expected.update({f"hbm:{g}": (2, 2) for g in point.hbm})
    assert problem.footprints == expected
    with pytest.raises(pydantic.ValidationError):
        first.model_validate({**first.model_dump(), "footprint": "3x1"})
