"""Bottleneck pipeline mapping (HYDRA Eqs. 4-5): problem type, checker, exact models."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MappingProblem:
    """Assign each task to one compatible chiplet so that the slowest chiplet (the pipeline bottleneck) is fastest.

    Stage time of chiplet c: ``t_c = sum over tasks k mapped to c of time_s[(k, c)]`` (HYDRA Eq. 4, where
    ``time_s`` is t_comp(k, c) + t_comm(k, c), Eq. 3). Objective: minimize ``max_c t_c`` (HYDRA Eq. 5).
    A (task, chiplet) pair missing from ``time_s`` is incompatible and never assigned.

    Attributes
    ----------
    tasks : tuple[str, ...]
        Task ids, in model (pipeline) order.
    chiplets : tuple[str, ...]
        Chiplet ids.
    time_s : dict[tuple[str, str], float]
        Seconds task k takes on chiplet c, for compatible pairs only.
    name : str
        Label for reports.
    """

    tasks: tuple[str, ...]
    chiplets: tuple[str, ...]
    time_s: dict[tuple[str, str], float]
    name: str = "mapping"
