"""Robustness of a paper's conclusions (issue 30): does an ordering still hold when the assumptions move?

For each ordering claim (:class:`chipdse.studies.claims.Claim` with ``kind="ordering"``) and each ``assumption``
parameter of the study's register (:func:`chipdse.core.params` rows with a range), the study is re-evaluated with
the parameter at its ``low`` and at its ``high`` (one at a time), then at ``joint`` settings that draw every swept
parameter uniformly from its range at once (seeded). An ordering's ``holds_share`` is the share of those settings
(where it was computed) in which it holds; ``flips_at`` names the first one-at-a-time setting at which it stops
holding (``"param=value"``), or the first joint draw (``"joint #k"``).

The evaluation is the caller's: a function from a list of ``PATH=VALUE`` overrides (``--set``) to the measured
values keyed like the claims; the HYDRA benchmark ``benchmarks/bench_claims_robustness.py`` re-runs the screen
and the simulated policy studies with them, a unit test a closed-form function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chipdse.core.params import ParamRow
from chipdse.studies.claims import Claim


@dataclass(frozen=True)
class Setting:
    """One evaluated setting: its label (``param=value`` or ``joint #k``), the overrides and what was measured."""

    label: str
    sets: tuple[str, ...]
    measured: Mapping[str, float | None]


@dataclass(frozen=True)
class Robustness:
    """The sweep's settings and, per ordering key, (holds_share, flips_at)."""

    settings: list[Setting]
    orderings: dict[str, tuple[float | None, str]] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """JSON-able: ``settings`` (label, sets, measured) and ``orderings`` {key: {holds_share, flips_at}}."""
        return {"settings": [{"label": s.label, "sets": list(s.sets), "measured": dict(s.measured)}
                             for s in self.settings],
                "orderings": {k: {"holds_share": v[0], "flips_at": v[1]} for k, v in self.orderings.items()}}


def swept_parameters(rows: Sequence[ParamRow], names: Sequence[str] | None = None) -> list[ParamRow]:
    """The scalar ``assumption`` rows with a range (``names``: only those, in that order)."""
    ok = [r for r in rows if r.basis == "assumption" and r.low is not None and r.high is not None
          and isinstance(r.value, int | float) and not isinstance(r.value, bool)]
    if names is None:
        return ok
    by = {r.name: r for r in ok}
    missing = [n for n in names if n not in by]
    if missing:
        msg = f"not a scalar assumption with a range in the register: {', '.join(missing)}"
        raise ValueError(msg)
    return [by[n] for n in names]


def _fmt(v: float, like: Any) -> str:
    return str(round(v)) if isinstance(like, int) else f"{v:.6g}"


def settings_for(params: Sequence[ParamRow], joint: int = 0, seed: int = 0) -> list[tuple[str, tuple[str, ...]]]:
    """The settings of the sweep as (label, overrides): each parameter at low, then at high (a bound equal to the
    value is skipped), then ``joint`` draws of all of them at once (uniform in each range, integers rounded)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for p in params:
        for v in (p.low, p.high):
            assert v is not None
            if v != p.value:
                text = _fmt(v, p.value)
                out.append((f"{p.name}={text}", (f"{p.name}={text}",)))
    rng = np.random.default_rng(seed)
    for k in range(joint):
        sets = tuple(f"{p.name}={_fmt(float(rng.uniform(float(p.low or 0.0), float(p.high or 0.0))), p.value)}"
                     for p in params)
        out.append((f"joint #{k + 1}", sets))
    return out


def sweep_orderings(evaluate: Callable[[tuple[str, ...]], Mapping[str, float | None]], claims: Sequence[Claim],
                    params: Sequence[ParamRow], joint: int = 0, seed: int = 0) -> Robustness:
    """Evaluate every setting of :func:`settings_for` and score each ordering claim on them.

    Parameters
    ----------
    evaluate : callable(overrides) -> measured
        The study re-run with the ``PATH=VALUE`` overrides; returns measured values keyed like the claims (an
        ordering reads its ``of`` key, or its own).
    claims : sequence of Claim
        Only the ``ordering`` ones are scored.
    params : sequence of ParamRow
        The parameters to sweep (:func:`swept_parameters`).
    joint, seed : int
        Joint draws and their seed.

    Returns
    -------
    Robustness
        ``orderings[key] = (share of settings where it holds, first flip)``; the share is None when no setting
        computed the ordering's value.
    """
    settings = [Setting(label, sets, dict(evaluate(sets))) for label, sets in settings_for(params, joint, seed)]
    out: dict[str, tuple[float | None, str]] = {}
    for c in claims:
        if c.kind != "ordering":
            continue
        verdicts = []
        flips = ""
        for s in settings:
            v = s.measured.get(c.of or c.key)
            if v is None or (isinstance(v, float) and np.isnan(v)):
                continue
            ok = c.holds(float(v))
            verdicts.append(ok)
            if not ok and not flips:
                flips = s.label
        out[c.key] = (float(np.mean(verdicts)) if verdicts else None, flips)
    return Robustness(settings, out)
