"""The one registry of decision problems: what ``chipdse compare``, ``chipdse solve`` and the tests read.

Each :class:`ProblemRecord` names a problem, says which scenario kind its instance comes from and how it is built,
lists its exact methods and heuristics (and which run by default), and gives its checker and solve function. The
QAPLIB path (``chipdse solve qap FILE``) is not a scenario problem and stays in ``solvers.qap``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chipdse.core.solution import Solution
from chipdse.solvers import expert_split, hbm_packing, hbm_partition, link_load, mapping, placement, snake_hw
from chipdse.solvers.common import ProblemKind
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.problems import (
    area_split_problem,
    design_hbm_packing,
    design_hbm_partition,
    design_joint_mapping,
    design_mapping,
    design_placement,
    nova_expert_split_problem,
    shape_set_problem,
)


@dataclass(frozen=True)
class ProblemRecord:
    """One decision problem as the command line and the tests see it.

    Attributes
    ----------
    name : str
        The ``PROBLEM`` argument of ``chipdse compare`` / ``solve`` and ``Solution.problem``.
    summary : str
        One line for ``--help``: what is decided, the paper and equation, which instance the scenario gives.
    scenario_kind : str
        ``"hydra"``, ``"snake"`` or ``"nova"``: the ``kind`` of scenario the instance is built from.
    default_scenario : str | None
        Bundled scenario file (``instances/scenarios/``) used when none is given; ``None``: the HYDRA default.
    build : callable(scenario, design) -> (instance, label)
        Instance builder from a loaded scenario (``LoadedScenario`` for hydra, the study's scenario spec for snake
        and nova) and, for hydra, the :class:`chipdse.core.design_space.ScoredDesign` to solve (the finalist
        ``--point`` names, picked by the HYDRA study's pick stage; ``None`` and ignored for snake and nova).
    exact_methods, heuristics : tuple[str, ...]
        Methods that can prove optimality (solvers and enumerations) and the rest.
    default_methods : tuple[str, ...]
        Methods ``compare`` runs when none are named (no brute force on full-size instances).
    kind : ProblemKind
        The solver module's own record of the problem: its checker and sense (``check`` and ``sense`` read it,
        so the registry cannot disagree with what the solve function settles by).
    solve : callable(instance, method, config, seed, hint) -> Solution
        Runs one method (``seed`` for randomized heuristics, ``hint`` a start for exact methods or ``None``).
    warm_start : bool
        ``compare`` gives each exact method the best decision found so far as its start.
    """

    name: str
    summary: str
    scenario_kind: str
    default_scenario: str | None
    build: Callable[[Any, Any], tuple[Any, str]]
    exact_methods: tuple[str, ...]
    heuristics: tuple[str, ...]
    default_methods: tuple[str, ...]
    kind: ProblemKind
    solve: Callable[[Any, str, SolverConfig, int, Any], Solution]
    warm_start: bool = False

    @property
    def check(self) -> Callable[[Any, Any], tuple[float, list[str]]]:
        """The problem's solver-independent checker: (instance, decision) -> (objective, violations)."""
        return self.kind.check

    @property
    def sense(self) -> str:
        """``"min"`` or ``"max"``."""
        return self.kind.sense

    @property
    def methods(self) -> tuple[str, ...]:
        """Every method, exact ones first."""
        return self.exact_methods + self.heuristics


def _without(methods: Sequence[str], *drop: str) -> tuple[str, ...]:
    return tuple(m for m in methods if m not in drop)


_MAPPING = mapping.SOLVERS.split()
_PARTITION = hbm_partition.SOLVERS.split()
_PACKING = hbm_packing.SOLVERS.split()
_EXPERTS = expert_split.SOLVERS.split()
_SHAPES = snake_hw.SHAPE_SET.split()
_AREA = snake_hw.AREA_SPLIT.split()

PROBLEMS: dict[str, ProblemRecord] = {r.name: r for r in (
    ProblemRecord(
        "placement", "chiplets on the package grid, least hop-weighted volume (HYDRA Eq. 2; the B* / M_T finalist)",
        "hydra", None, design_placement, placement.EXACT_METHODS, placement.HEURISTIC_METHODS,
        _without(placement.PLACEMENT_METHODS, "brute-force"), placement.KIND,
        lambda p, m, c, seed, hint: placement.solve_placement(p, m, c, seed=seed, hint=hint), warm_start=True),
    ProblemRecord(
        "placement-max-link", "the same placement, least busy NoI link under XY routing (the finalist)",
        "hydra", None, design_placement, link_load.MAX_LINK_EXACT_METHODS, placement.HEURISTIC_METHODS,
        (*placement.HEURISTIC_METHODS, "layout-bnb", "milp-highs"), link_load.KIND,
        lambda p, m, c, seed, hint: link_load.solve_max_link_placement(p, m, c, seed=seed, hint=hint),
        warm_start=True),
    ProblemRecord(
        "hbm-partition", "HBM stacks per weight group, most concurrent requests (HYDRA Eq. 1; the finalist's stacks)",
        "hydra", None, design_hbm_partition, *_PARTITION, hbm_partition.HBM_PARTITION_METHODS, hbm_partition.KIND,
        lambda p, m, c, seed, hint: hbm_partition.solve_hbm_partition(p, m, c)),
    ProblemRecord(
        "hbm-packing", "blocks into the stacks of the Eq. 1 split, most concurrent requests (the finalist's stacks)",
        "hydra", None, design_hbm_packing, *_PACKING, ("first-fit", "milp-highs"), hbm_packing.KIND,
        lambda p, m, c, seed, hint: hbm_packing.solve_hbm_packing(p, m, c)),
    ProblemRecord(
        "mapping", "decode blocks onto the placed chiplets, least bottleneck stage time (HYDRA Eqs. 3-5)",
        "hydra", None, design_mapping, *_MAPPING, _without(mapping.MAPPING_METHODS, "brute-force"), mapping.KIND,
        lambda p, m, c, seed, hint: mapping.solve_mapping(p, m, c)),
    ProblemRecord(
        "mapping-cross-phase", "prefill and decode blocks onto every placed chiplet of either role, one capacity "
        "per chiplet, least work per request on the busiest chiplet (HYDRA Eqs. 3-5 with Sec. IV-C's cross-phase "
        "tasks)", "hydra", None, design_joint_mapping, *_MAPPING, _without(mapping.MAPPING_METHODS, "brute-force"),
        mapping.CROSS_PHASE_KIND, lambda p, m, c, seed, hint: mapping.solve_cross_phase_mapping(p, m, c)),
    ProblemRecord(
        "expert-split", "one MoE layer's experts onto NOVA's two tiers, least makespan (NOVA Sec. VI-E; the "
        "scenario's first MoE model at its largest batch, uniform routing)",
        "nova", "nova-nemotron3-nano.yaml", lambda spec, design: nova_expert_split_problem(spec), *_EXPERTS,
        _without(expert_split.EXPERT_SPLIT_METHODS, "brute-force"), expert_split.KIND,
        lambda p, m, c, seed, hint: expert_split.solve_expert_split(p, m, c)),
    ProblemRecord(
        "snake-shapes", "logical array shapes a SNAKE core supports, least decode time (SNAKE Sec. 4.2; the "
        "scenario's first area budget)",
        "snake", "snake-stratum.yaml",
        lambda spec, design: (lambda p: (p, p.name))(shape_set_problem(spec, spec.shape_set.budgets_mm2[0])),
        *_SHAPES, snake_hw.SHAPE_SET_METHODS, snake_hw.SHAPE_KIND,
        lambda p, m, c, seed, hint: snake_hw.solve_shape_set(p, m, c)),
    ProblemRecord(
        "snake-area", "PE array vs buffer in a SNAKE core's area, least decode latency (SNAKE Sec. 3.2, Fig. 4a)",
        "snake", "snake-stratum.yaml", lambda spec, design: (lambda p: (p, p.name))(area_split_problem(spec)),
        *_AREA, snake_hw.AREA_SPLIT_METHODS, snake_hw.AREA_KIND,
        lambda p, m, c, seed, hint: snake_hw.solve_area_split(p, m, c)),
)}
"""Every registered decision problem by name."""


def problem_record(name: str) -> ProblemRecord:
    """Return the record of problem ``name``.

    Raises
    ------
    ValueError
        Unknown name; the message lists the registered ones.
    """
    if name not in PROBLEMS:
        msg = f"PROBLEM: must be one of {sorted(PROBLEMS)}, got {name!r}"
        raise ValueError(msg)
    return PROBLEMS[name]


def problems_help() -> str:
    """One ``name (summary)`` entry per registered problem, for ``--help`` texts."""
    return "; ".join(f"{r.name}: {r.summary}" for r in PROBLEMS.values())


def methods_help() -> str:
    """Each registered problem's methods (exact first, then heuristics), for ``--help`` texts."""
    return "; ".join(f"{r.name}: {', '.join((*r.exact_methods, *r.heuristics))}" for r in PROBLEMS.values())
