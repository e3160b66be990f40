"""Enumerate a scenario's design space (HYDRA Table III) as arrays, with the reason for every infeasible point."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np

from chipdse.core.errors import InfeasibleDesignError
from chipdse.core.models import GROUP_NAMES
from chipdse.core.scenario import LoadedScenario


@dataclass(frozen=True)
class DesignPoints:
    """All points of a design space as parallel arrays (one entry per point).

    Attributes
    ----------
    types : list[str]
        Compute chiplet types, the column order of ``counts``.
    counts : numpy.ndarray, shape (n, len(types)), int
    n_hbm : numpy.ndarray, shape (n,), int
    d2d_GBps : numpy.ndarray, shape (n,)
    max_batch : numpy.ndarray, shape (n,), int
    """

    types: list[str]
    counts: np.ndarray
    n_hbm: np.ndarray
    d2d_GBps: np.ndarray
    max_batch: np.ndarray

    def __len__(self) -> int:
        return int(self.n_hbm.shape[0])

    def label(self, i: int) -> str:
        """Human-readable label of point ``i``, e.g. ``Ap3-Ad5-Mp4-Md6-HBM6-512GBps-B32``."""
        parts = [f"{t}{int(c)}" for t, c in zip(self.types, self.counts[i], strict=True)]
        return "-".join(parts + [f"HBM{int(self.n_hbm[i])}", f"{self.d2d_GBps[i]:.0f}GBps",
                                 f"B{int(self.max_batch[i])}"])

    def labels(self) -> np.ndarray:
        """:meth:`label` of every point, shape (n,), object dtype (each distinct composition and each distinct
        HBM / D2D / batch suffix formatted once)."""
        def codes(cols: list[np.ndarray]) -> np.ndarray:
            """One integer per row of the columns (non-negative integers, mixed-radix; rows' ranks when the
            radix product would overflow int64)."""
            dims = [int(c.max()) + 1 for c in cols]
            if float(np.prod(np.array(dims, dtype=float))) < 2.0**62:
                return np.ravel_multi_index(cols, dims)
            return np.asarray(np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1]).ravel()

        n = len(self)
        if n == 0:
            return np.empty(0, dtype=object)
        d2d_rank = np.asarray(np.unique(self.d2d_GBps, return_inverse=True)[1]).ravel()
        head_code = codes([self.counts[:, j].astype(np.int64) for j in range(self.counts.shape[1])])
        tail_code = codes([self.n_hbm.astype(np.int64), d2d_rank, self.max_batch.astype(np.int64)])
        out = []
        for code, fmt in ((head_code, lambda i: "".join(f"{t}{int(c)}-" for t, c in
                                                        zip(self.types, self.counts[i], strict=True))),
                          (tail_code, lambda i: f"HBM{int(self.n_hbm[i])}-{self.d2d_GBps[i]:.0f}GBps-"
                                                f"B{int(self.max_batch[i])}")):
            _, first, inv = np.unique(code, return_index=True, return_inverse=True)
            out.append(np.array([fmt(int(i)) for i in first], dtype=object)[np.asarray(inv).ravel()])
        return out[0] + out[1]


def subset_points(pts: DesignPoints, mask: np.ndarray) -> DesignPoints:
    """Return the points where ``mask`` (bool, shape (n,)) is true, or at the positions ``mask`` lists (int array,
    in that order)."""
    return DesignPoints(pts.types, pts.counts[mask], pts.n_hbm[mask], pts.d2d_GBps[mask], pts.max_batch[mask])


@lru_cache(maxsize=256)
def compositions(total: int, parts: int, minimum: int) -> np.ndarray:
    """Return every way to write ``total`` as an ordered sum of ``parts`` integers >= ``minimum``.

    Returns
    -------
    numpy.ndarray, shape (C(total - parts*minimum + parts - 1, parts - 1), parts)
        Read-only (cached: a sweep enumerates the same space once per screen job).
    """
    free = total - parts * minimum
    if free < 0 or parts <= 0:
        empty = np.zeros((0, max(parts, 0)), dtype=int)
        empty.flags.writeable = False
        return empty
    rows = []
    for bars in combinations(range(free + parts - 1), parts - 1):
        edges = (-1, *bars, free + parts - 1)
        rows.append([edges[i + 1] - edges[i] - 1 + minimum for i in range(parts)])
    out = np.array(rows, dtype=int)
    out.flags.writeable = False
    return out


def enumerate_points(sc: LoadedScenario) -> tuple[DesignPoints, list[str]]:
    """Enumerate the scenario's design space and drop points that cannot be built.

    Returns
    -------
    (DesignPoints, list[str])
        The buildable points and one reason per distinct kind of unbuildable point (with counts).

    Raises
    ------
    InfeasibleDesignError
        When no point can be built; the message says why (e.g. "24 chiplets need 2904 mm^2, the interposer
        has 2500 mm^2").
    """
    ds = sc.spec.design_space
    types = sc.compute_types()
    pkg, lib = sc.package, sc.library
    blocks = []
    reasons: dict[str, int] = {}
    for h in range(ds.hbm_min, ds.hbm_max + 1):
        comp = compositions(ds.total_chiplets - h, len(types), ds.min_per_type)
        if len(comp) == 0:
            key = (f"{ds.total_chiplets - h} compute chiplets cannot give each of the {len(types)} types "
                   f"at least {ds.min_per_type}")
            reasons[key] = reasons.get(key, 0) + 1
            continue
        if pkg.hbm_on_ring and h > len(pkg.ring_cells()):
            key = f"{h} HBM stacks need {h} ring cells, the package has {len(pkg.ring_cells())}"
            reasons[key] = reasons.get(key, 0) + len(comp)
            continue
        blocks.append(np.column_stack([comp, np.full(len(comp), h)]))
    if not blocks:
        msg = f"{sc.path}: design_space: no design point can be built: " + "; ".join(reasons)
        raise InfeasibleDesignError(msg)
    base = np.vstack(blocks)
    areas = np.array([lib.by_name(t).die_area_mm2 for t in types])
    area = base[:, :-1] @ areas + base[:, -1] * lib.memory.area_mm2
    n_chiplets = base.sum(axis=1)
    ok = (area <= pkg.interposer_area_mm2 + 1e-9) & (n_chiplets <= pkg.n_cells)
    if not ok.any():
        i = int(np.argmin(area))
        if n_chiplets[i] > pkg.n_cells:
            n_i = int(n_chiplets[i])
            msg = (f"{sc.package_path}: rows x cols: {n_i} chiplets need {n_i} cells, the interposer grid "
                   f"has {pkg.rows} x {pkg.cols} = {pkg.n_cells}")
        else:
            msg = (f"{sc.package_path}: interposer_area_mm2: {int(n_chiplets[i])} chiplets need {area[i]:.0f} "
                   f"mm^2, the interposer has {pkg.interposer_area_mm2:.0f} mm^2")
        raise InfeasibleDesignError(msg)
    if (~ok).any():
        reasons[f"{int((~ok).sum())} compositions exceed the interposer area or cell count"] = int((~ok).sum())
    base = base[ok]
    bw = np.asarray(ds.d2d_GBps, dtype=float)
    mb = np.asarray(ds.max_batch, dtype=int)
    n_b, n_w, n_mb = len(base), len(bw), len(mb)
    idx = np.repeat(np.arange(n_b), n_w * n_mb)
    return DesignPoints(
        types=types,
        counts=base[idx, :-1],
        n_hbm=base[idx, -1],
        d2d_GBps=np.tile(np.repeat(bw, n_mb), n_b),
        max_batch=np.tile(mb, n_b * n_w),
    ), [f"{k} ({v})" for k, v in reasons.items()]


@dataclass(frozen=True)
class PointSpec:
    """One design point: compute counts per type, HBM stacks per group, D2D bandwidth, effective batch."""

    counts: dict[str, int]
    hbm: dict[str, int]
    d2d_GBps: float
    batch: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any], types: list[str]) -> PointSpec:
        """Build from one row of the estimator's table."""
        hbm: dict[str, int] = {g: int(row[f"hbm_{g}"]) for g in GROUP_NAMES if int(row[f"hbm_{g}"]) > 0}
        return cls({t: int(row[t]) for t in types}, hbm, float(row["d2d_GBps"]), int(row["batch_eff"]))


@dataclass(frozen=True)
class ScoredDesign:
    """One scored design point as the layout problems need it (HBM partition, placement, mapping).

    Attributes
    ----------
    label : str
        E.g. ``Ap1-Ad8-Mp6-Md6-HBM3-640GBps-B8`` (:meth:`DesignPoints.label`).
    point : PointSpec
        Compute chiplets per type, stacks per group, D2D bandwidth and effective batch.
    n_hbm : int
        HBM stacks in all.
    capacity_rps : float
        The estimator's sustainable request rate, requests/s (it sets the placement's traffic volumes).
    """

    label: str
    point: PointSpec
    n_hbm: int
    capacity_rps: float

    @classmethod
    def from_row(cls, row: Mapping[str, Any], types: list[str]) -> ScoredDesign:
        """Build from one row of the estimator's table (``label``, the count columns, ``hbm_<group>``,
        ``d2d_GBps``, ``batch_eff``, ``n_hbm``, ``capacity_rps``)."""
        return cls(str(row["label"]), PointSpec.from_row(row, types), int(row["n_hbm"]), float(row["capacity_rps"]))
