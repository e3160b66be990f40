"""Solver settings in one typed, frozen config (STYLE.md item 6)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SolverConfig(BaseModel):
    """Settings shared by every exact method.

    A time limit is always set; ``rel_gap`` is the relative MILP gap at which a solve counts as optimal.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    time_limit_s: float = Field(60.0, gt=0, description="Wall-clock limit per solve, seconds.")
    rel_gap: float = Field(1e-6, ge=0, description="Relative gap at which the solver stops as optimal.")
    threads: int = Field(2, ge=1, description="Worker threads (HiGHS threads, CP-SAT num_workers).")
    seed: int = Field(0, ge=0, description="Random seed passed to the solver.")
    log: bool = Field(False, description="Print the solver's own log.")
    native: dict[str, Any] = Field(default_factory=dict, description="Pass-through solver options.")
