"""A placed and mapped HYDRA design: what the serving re-score and the event simulator need besides policies."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from chipdse.core.design_space import PointSpec


class LayoutKind(StrEnum):
    """How a layout was made: its placement method and the mapping that goes with it.

    The values are the placement keys the policy studies and reports use (HYDRA Figs. 9-10).
    """

    EXACT = "exact"
    """The best exact placement (MILP / CP-SAT / branch and bound, warm-started) with the exact mapping."""
    HYDRA_GREEDY = "hydra-greedy"
    """HYDRA's two-stage greedy placement with the LPT mapping."""
    ROUND_ROBIN = "round-robin"
    """Round-robin placement and round-robin mapping (the papers' baseline)."""
    RANDOM = "random"
    """One uniformly random placement with round-robin mapping (HYDRA Fig. 10's random baseline)."""
    MAX_LINK = "max-link"
    """The placement minimizing the busiest NoI link (XY routing) with the LPT mapping."""
    THERMAL_LIMIT = "thermal-limit"
    """The thermally constrained exact placement with the LPT mapping."""

    @property
    def label(self) -> str:
        """The layout's name in reports, e.g. ``"exact placement + exact mapping"``."""
        return LAYOUT_LABELS[self]


LAYOUT_LABELS: dict[LayoutKind, str] = {
    LayoutKind.EXACT: "exact placement + exact mapping",
    LayoutKind.HYDRA_GREEDY: "HYDRA greedy placement + LPT mapping",
    LayoutKind.ROUND_ROBIN: "round-robin placement + round-robin mapping",
    LayoutKind.RANDOM: "random placement + round-robin mapping",
    LayoutKind.MAX_LINK: "min max-link placement + LPT mapping",
    LayoutKind.THERMAL_LIMIT: "thermally constrained placement + LPT mapping",
}
"""Each kind's name in reports and the manifest."""

SCREEN_LABEL = "screen (estimator)"
"""The name reports and the manifest give the sweep screen's numbers where they stand beside the layouts' (the
estimator's own fluid mapping and assumed hop count, no layout)."""


@dataclass(frozen=True)
class Layout:
    """A placed and mapped design point.

    Attributes
    ----------
    point : PointSpec
        Compute chiplets per type, HBM stacks per group, D2D GB/s and the effective batch.
    placement : dict[int, str]
        Cell -> chiplet type (``"hbm:<group>"`` for a stack).
    prefill_map, decode_map : dict[str, str]
        Block -> chiplet id (``"<type>@<cell>"``) of each phase (HYDRA Eqs. 3-5).
    placement_method : str
        The method that produced ``placement`` (a registry name, e.g. ``"hbm-enum"``).
    kind : LayoutKind
        Which of the compared layouts this is.
    """

    point: PointSpec
    placement: dict[int, str]
    prefill_map: dict[str, str]
    decode_map: dict[str, str]
    placement_method: str
    kind: LayoutKind = LayoutKind.EXACT
