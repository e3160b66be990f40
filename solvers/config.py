"""Solver settings in one typed, frozen config (STYLE.md item 6), and the deterministic work units.

Every exact solve stops on a deterministic **work limit** (``work_limit``, in work units), so the same instance
and seed give the same answer on a busy and an idle machine; the wall-clock ``time_limit_s`` is only a safety cap
(10 x the work limit + 30 s by default), and the manifest's per-solve ``termination`` says which of the two ended it
(:class:`chipdse.core.solution.TerminationCondition` ``WORK_LIMIT`` / ``TIME_LIMIT``).

One work unit is calibrated to about one CPU-second of this project's 2-core reference machine on the default
scenario's instances (``benchmarks/bench_work_units.py`` measures it; ``benchmarks/RESULTS.md``, "Reproducible
limits", records the calibration). What one unit counts, per backend:

* CP-SAT: :data:`CPSAT_DTIME_PER_UNIT` of CP-SAT's deterministic time (``max_deterministic_time``), with
  ``interleave_search`` so that several workers still search deterministically;
* HiGHS MIP (Pyomo and direct ``highspy``): branch-and-bound nodes (``mip_max_nodes``), as many per unit as
  :func:`highs_nodes_per_unit` gives for the model's size (a node of a large model costs more: measured 0.21
  CPU-s per node on the 15,184-nonzero placement MILP and 0.0007 on the 628-nonzero mapping MILP, so the nodes per
  unit fall as nonzeros^-1.8); the root node (presolve, cuts) is not limited (HiGHS ignores
  ``simplex_iteration_limit`` in a MIP) and takes about 4 CPU-s on the default placement MILP; LPs solved
  alone: :data:`HIGHS_ITERATIONS_PER_UNIT` simplex iterations (``simplex_iteration_limit``);
* hand-written searches count their own steps: :data:`QAP_BNB_OPS_PER_UNIT` (branch-and-bound, m^4 per node of m
  free facilities) and :data:`RING_LAYOUTS_PER_UNIT` (ring layouts bounded by relaxation or assignment in
  ``hbm-enum``); their HiGHS sub-solves are charged by the HiGHS counts above.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chipdse.core.solution import TerminationCondition

CPSAT_DTIME_PER_UNIT = 1.6
"""CP-SAT deterministic time per work unit (measured: 0.62 CPU-s per deterministic-time unit on the default
placement model with 2 interleaved workers)."""
HIGHS_NODES_REF = (15_184, 4.8)
"""(nonzeros, nodes per work unit) measured on the default B* placement MILP: 0.21 CPU-s per node."""
HIGHS_NODES_EXPONENT = 1.8
"""Nodes per unit scale as nonzeros ** -HIGHS_NODES_EXPONENT (fit to the placement and mapping MILPs)."""
HIGHS_ITERATIONS_PER_UNIT = 40_000
"""Simplex iterations per work unit of an LP solved alone (measured: 615 ``layout-bnb`` LPs, 33,691 iterations,
0.85 CPU-s on the default B*)."""
"""HiGHS simplex iterations per work unit (measured on layout-bnb's LPs)."""
HIGHS_MIP_ITERATIONS_PER_UNIT = 5_400
"""Simplex iterations per work unit of the small MILPs ``layout-bnb`` solves (root included; measured: 246 MILPs,
36,508 iterations, 6.8 CPU-s on the default B*)."""
QAP_BNB_OPS_PER_UNIT = 4.0e7
"""Units of m^4 (m free facilities at a node) per work unit in the GLB branch and bound (measured on a random
n = 12 instance: 0.05 CPU-s per unit at 2e6)."""
QAP_RLT_OPS_PER_UNIT = 6.0e8
"""Assignment work (r^3 plus a fixed call overhead per r x r problem, ``solvers.qap_rlt.lap_ops``) per work unit in
the RLT-1 dual ascent branch and bound (measured: nug14 proven with 1.0e10 such units charged in 5.4 CPU-s,
assignment duals and child bounds included)."""
QAP_FAQ_OPS_PER_UNIT = 1.0e8
"""n^3 per FAQ iteration or 2-opt pass per work unit in the QAP root incumbent (scipy quadratic_assignment)."""
RING_RELAXATIONS_PER_UNIT = 175_000
"""Ring layouts bounded by the vectorized relaxation per work unit in ``hbm-enum`` (measured: 5,502 layouts in
0.031 CPU-s on the default B*)."""
RING_ASSIGNMENTS_PER_UNIT = 19_000
"""Ring layouts bounded by an assignment problem per work unit in ``hbm-enum`` (measured: 300 in 0.016 CPU-s)."""
RING_BNB_NODES_PER_UNIT = 10_000
"""Partial ring layouts bounded by an assignment problem per work unit in ``hbm-bnb`` (solvers/placement_bnb.py;
measured: 80,001 nodes in 6.7 CPU-s on the 7 x 7 calibration case, bench_placement_7x7.py). Since the stacks
still to place joined each node's assignment problem (a larger problem per node), a unit is 1.7 CPU-s on that case
and 3.2-3.7 CPU-s on a full 8 x 8 grid (64 x 64 assignments): the limit stays a node count, so its answers did not
change meaning, only its time. With the cells as the assignment's rows (scipy's solver is twice as fast so on a
square problem whose chiplet rows repeat) and each pool's costs memoized, a unit is 1.5-2.0 CPU-s on the full
8 x 8 grid; with the stacks' common-volume columns there (more distinct columns), 2.3."""
WALL_CAP_FACTOR = 10.0
"""Default wall-clock cap, seconds per work unit (plus WALL_CAP_FLOOR_S): a safety net an idle machine never
reaches."""
WALL_CAP_FLOOR_S = 30.0
"""Added to the default wall cap: a HiGHS root node (not limited by nodes) needs seconds even at a tiny work
limit."""


def wall_cap_s(work_limit: float) -> float:
    """The default wall-clock cap of a solve with ``work_limit`` units: WALL_CAP_FACTOR x work_limit +
    WALL_CAP_FLOOR_S seconds."""
    return WALL_CAP_FACTOR * work_limit + WALL_CAP_FLOOR_S


def highs_nodes_per_unit(nonzeros: int) -> float:
    """HiGHS branch-and-bound nodes per work unit on a model with ``nonzeros`` constraint-matrix entries."""
    ref_nnz, ref_nodes = HIGHS_NODES_REF
    return ref_nodes * (ref_nnz / max(int(nonzeros), 1)) ** HIGHS_NODES_EXPONENT


class SolverConfig(BaseModel):
    """Settings shared by every exact method.

    ``work_limit`` (deterministic, work units; see the module docstring) ends every exact solve; ``time_limit_s``
    is a wall-clock safety cap (default :func:`wall_cap_s`); ``rel_gap`` is the relative MILP gap at which a solve
    counts as optimal.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    work_limit: float = Field(20.0, gt=0, description="Deterministic work limit per solve, work units "
                              "(about 1 CPU-second each on the reference machine).")
    time_limit_s: float = Field(0.0, ge=0, description="Wall-clock safety cap per solve, seconds "
                                "(0: wall_cap_s(work_limit)).")
    rel_gap: float = Field(1e-6, ge=0, description="Relative gap at which the solver stops as optimal.")
    threads: int = Field(2, ge=1, description="Worker threads (HiGHS threads, CP-SAT num_workers).")
    seed: int = Field(0, ge=0, description="Random seed passed to the solver.")
    log: bool = Field(False, description="Print the solver's own log.")
    native: dict[str, Any] = Field(default_factory=dict, description="Pass-through solver options.")

    @model_validator(mode="after")
    def _default_cap(self) -> SolverConfig:
        if not self.time_limit_s:
            object.__setattr__(self, "time_limit_s", wall_cap_s(self.work_limit))
        return self

    @classmethod
    def of(cls, spec: Any, work_limit: float | None = None, time_limit_s: float | None = None,
           **settings: Any) -> SolverConfig:
        """The config of a scenario spec (any spec with ``work_limit`` and ``time_limit_s``, the cap or None),
        with command-line overrides ``work_limit`` / ``time_limit_s`` when not None and further fields
        (``seed``, ``threads``, ...) as given."""
        return cls(work_limit=work_limit or spec.work_limit,
                   time_limit_s=time_limit_s or spec.time_limit_s or 0.0, **settings)

    def limits_text(self) -> str:
        """``"work limit W units (wall cap T s)"``, for messages and progress lines."""
        return f"work limit {self.work_limit:g} units (wall cap {self.time_limit_s:g} s)"



def limit_reason(config: SolverConfig, term: TerminationCondition, what: str = "") -> str:
    """``"work limit W units"`` or ``"wall cap T s"`` by termination ``term``, followed by ``what`` in
    parentheses when given; for reasons and messages."""
    text = (f"wall cap {config.time_limit_s:g} s" if term == TerminationCondition.TIME_LIMIT
            else f"work limit {config.work_limit:g} units")
    return f"{text} ({what})" if what else text


@dataclass
class WorkBudget:
    """The work budget of one hand-written search: work units spent against ``work_limit`` (deterministic: the
    search charges its own counted steps) and the wall-clock cap ``time_limit_s`` beside it.

    Attributes
    ----------
    work_limit : float
        Work units the search may spend.
    time_limit_s : float
        Wall-clock cap, seconds from ``t0``.
    used : float
        Work units charged so far (:meth:`spend`).
    """

    work_limit: float
    time_limit_s: float
    used: float = 0.0
    t0: float = field(default_factory=time.perf_counter)

    @classmethod
    def of(cls, config: SolverConfig, t0: float | None = None) -> WorkBudget:
        """The budget of ``config`` (work limit and wall cap), its clock started at ``t0`` (default now)."""
        return cls(config.work_limit, config.time_limit_s, t0=time.perf_counter() if t0 is None else t0)

    def spend(self, units: float) -> None:
        """Charge ``units`` work units (>= 0)."""
        self.used += units

    @property
    def left(self) -> float:
        """Work units left (may be negative after the last charge)."""
        return self.work_limit - self.used

    @property
    def wall_left_s(self) -> float:
        """Seconds left before the wall cap."""
        return self.time_limit_s - (time.perf_counter() - self.t0)

    def stop(self) -> TerminationCondition | None:
        """``WORK_LIMIT`` once the work is spent, ``TIME_LIMIT`` once the wall cap is reached, else None."""
        if self.used >= self.work_limit:
            return TerminationCondition.WORK_LIMIT
        if self.wall_left_s <= 0:
            return TerminationCondition.TIME_LIMIT
        return None

    def sub_config(self, config: SolverConfig, fraction: float = 1.0) -> SolverConfig:
        """``config`` for a sub-solve: ``fraction`` of the work left (at least 0.01 unit) and the wall time left."""
        return config.model_copy(update={"work_limit": max(self.left * fraction, 0.01),
                                         "time_limit_s": max(self.wall_left_s, 0.1)})
