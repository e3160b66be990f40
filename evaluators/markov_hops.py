"""Mean Manhattan hops from each compute chiplet type to its HBM traffic, per composition class, by the geometric
construction of HYDRA's greedy placement (Sec. IV-A), vectorized over a design space.

The construction is the one ``chipdse.solvers.placement_heuristics.hydra_greedy_placement`` runs, written here
without any optimization (an evaluator never optimizes): HBM groups, largest first, take contiguous runs of ring
cells from ring position 0; compute types, most numerous first (ties by name), take the free cells of least
traffic-weighted distance to the stacks, ``cost_t(i) = sum_g W_tg * mean_{h in g} d(i, h)`` (ties: lowest cell).
Since a compute chiplet's cost depends only on the stacks, each type takes its n_t cheapest free cells in turn.
The result replaces the fixed ``estimator.screen_hops`` (2.5) of the sweep.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from chipdse.core.grid import xy_route


def ring_hbm_cells(ring: tuple[int, ...], stacks: tuple[int, ...], layout: str = "greedy", rows: int = 0,
                   cols: int = 0) -> list[tuple[int, ...]]:
    """Return the ring cells of each HBM group.

    Parameters
    ----------
    ring : tuple of int
        The grid's outer-ring cells in clockwise order from cell 0 (``Package.ring_cells``).
    stacks : tuple of int
        Stacks per HBM group (group order of ``chipdse.core.models.GROUP_NAMES``); 0 = the group is absent.
    layout : {"greedy", "opposite"}
        ``"greedy"`` (HYDRA greedy, Step 1): groups in descending stack count (ties: lower group index), each a
        contiguous run of ring positions from position 0. ``"opposite"`` (what the exact placements of the
        default space look like): each group grows around its own edge middle, the groups on opposite edges
        (group 0 around ring position (cols - 1) // 2, group 1 half a ring further), corners last: the group with
        the most stacks left takes the free ring cell that is not a corner, then nearest its centre (ties:
        lower position).
    rows, cols : int
        The grid (needed by ``"opposite"`` to find the corners).

    Returns
    -------
    list of tuple of int
        Cells of each group, in group order (empty for an absent group).

    Raises
    ------
    ValueError
        More stacks than ring cells (the message gives both), or an unknown layout.
    """
    if sum(stacks) > len(ring):
        msg = f"{sum(stacks)} HBM stacks do not fit the {len(ring)} ring cells"
        raise ValueError(msg)
    out: list[list[int]] = [[] for _ in stacks]
    if layout == "greedy":
        pos = 0
        for g in sorted(range(len(stacks)), key=lambda g: (-stacks[g], g)):
            out[g] = list(ring[pos:pos + stacks[g]])
            pos += stacks[g]
        return [tuple(x) for x in out]
    if layout != "opposite":
        msg = f"HBM layout must be 'greedy' or 'opposite', got {layout!r}"
        raise ValueError(msg)
    corners = {0, cols - 1, (rows - 1) * cols, rows * cols - 1}
    n_ring = len(ring)
    centres = [((cols - 1) // 2 + g * n_ring // 2) % n_ring for g in range(len(stacks))]
    left = list(stacks)
    free = set(range(n_ring))
    while any(left):
        g = max(range(len(stacks)), key=lambda g: (left[g], -g))
        pos = min(free, key=lambda p: (ring[p] in corners, min(abs(p - centres[g]), n_ring - abs(p - centres[g])), p))
        free.discard(pos)
        out[g].append(ring[pos])
        left[g] -= 1
    return [tuple(sorted(x)) for x in out]


def mean_group_distance(rows: int, cols: int, cells_by_group: list[tuple[int, ...]]) -> np.ndarray:
    """Mean Manhattan hops from every cell to each group's stacks, shape (groups, rows * cols); 0 for an absent
    group (its traffic weight is 0 too)."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    out = np.zeros((len(cells_by_group), rows * cols))
    for g, cells in enumerate(cells_by_group):
        if cells:
            hr, hc = np.divmod(np.asarray(cells), cols)
            out[g] = (np.abs(r[:, None] - hr[None, :]) + np.abs(c[:, None] - hc[None, :])).mean(axis=1)
    return out


def greedy_type_hops(rows: int, cols: int, ring: tuple[int, ...], stacks: tuple[int, ...], counts: tuple[int, ...],
                     names: tuple[str, ...], weights: np.ndarray, order: str = "count", hbm_layout: str = "greedy"
                     ) -> np.ndarray:
    """Return each compute type's mean traffic-weighted hops to its HBM stacks in the greedy placement.

    Parameters
    ----------
    rows, cols, ring
        The grid and its ring cells.
    stacks : tuple of int, length G
        Stacks per HBM group.
    counts : tuple of int, length T
        Chiplets of each compute type.
    names : tuple of str, length T
        Type names (the tie-break of the placement order).
    weights : numpy.ndarray, shape (T, G)
        Bytes a type's chiplets move from each group per request (per-type ratios set the cell costs; the
        magnitudes only the ``"volume"`` order).
    order : {"count", "volume"}
        Which type picks its cells first: ``"count"``, the most numerous (HYDRA greedy, ties by name);
        ``"volume"``, the one moving the most bytes per chiplet (ties by name), which puts the heaviest traffic
        next to the stacks as the exact Eq. 2 placement does.
    hbm_layout : {"greedy", "opposite"}
        The stacks' cells (:func:`ring_hbm_cells`).

    Returns
    -------
    numpy.ndarray, shape (T,)
        ``mean over the type's chiplets of sum_g W_tg d_g(cell) / sum_g W_tg``, hops; 0 for a type with no
        chiplet or no traffic.

    Raises
    ------
    ValueError
        When the chiplets and stacks do not fit the grid.
    """
    hbm = ring_hbm_cells(ring, stacks, hbm_layout, rows, cols)
    taken = np.zeros(rows * cols, dtype=bool)
    for cells in hbm:
        taken[list(cells)] = True
    if sum(counts) > int((~taken).sum()):
        msg = f"{sum(counts)} compute chiplets and {sum(stacks)} stacks do not fit a {rows} x {cols} grid"
        raise ValueError(msg)
    dist = mean_group_distance(rows, cols, hbm)
    out = np.zeros(len(counts))
    for t in _placement_order(np.asarray(counts)[None, :], names, np.asarray(weights, dtype=float)[None], order)[0]:
        if counts[t] == 0:
            continue
        w = np.asarray(weights[t], dtype=float)
        cost = w @ dist
        free = np.flatnonzero(~taken)
        chosen = free[np.lexsort((free, cost[free]))[:counts[t]]]
        taken[chosen] = True
        out[t] = cost[chosen].mean() / w.sum() if w.sum() > 0 else 0.0
    return out


def _placement_order(counts: np.ndarray, names: tuple[str, ...], weights: np.ndarray, order: str) -> np.ndarray:
    """Type indices in placement order per row, shape (n, T) (see :func:`greedy_type_hops`' ``order``)."""
    if order not in ("count", "volume"):
        msg = f"placement order must be 'count' or 'volume', got {order!r}"
        raise ValueError(msg)
    name_rank = np.broadcast_to(np.argsort(np.argsort(np.array(names))), counts.shape)
    if order == "count":
        return np.lexsort((name_rank, -counts), axis=1)
    per_chiplet = np.divide(weights.sum(axis=2), counts, out=np.zeros(counts.shape), where=counts > 0)
    return np.lexsort((name_rank, -per_chiplet), axis=1)


def placement_hops(rows: int, cols: int, ring: tuple[int, ...], names: tuple[str, ...], counts: np.ndarray,
                   stacks: np.ndarray, weights: np.ndarray, order: str = "count", hbm_layout: str = "greedy"
                   ) -> np.ndarray:
    """Mean hops of every compute type at every design point: :func:`greedy_type_hops`, vectorized.

    Parameters
    ----------
    rows, cols, ring, names
        As in :func:`greedy_type_hops`.
    counts : numpy.ndarray, shape (n, T), int
        Chiplets per type at each point.
    stacks : numpy.ndarray, shape (n, G), int
        Stacks per HBM group at each point.
    weights : numpy.ndarray, shape (n, T, G)
        Per-point traffic weights (e.g. at the point's batch).
    order, hbm_layout
        As in :func:`greedy_type_hops`.

    Returns
    -------
    numpy.ndarray, shape (n, T)
        Hops, equal to :func:`greedy_type_hops` point by point (one construction per distinct composition class:
        counts, stacks and normalized weights).

    Raises
    ------
    ValueError
        When some point's chiplets and stacks do not fit the grid.

    Notes
    -----
    Each type takes its n_t cheapest free cells in turn, so the whole greedy is four masked cumulative sums:
    for the k-th type in placement order, sort the free-cell mask by that type's cost (stable: ties go to the
    lowest cell) and keep the first n_t free cells.
    """
    con = _construct(rows, cols, ring, names, counts, stacks, weights, order, hbm_layout)
    return con["hops"][con["inv"]]


@lru_cache(maxsize=16)
def _links(rows: int, cols: int) -> dict[tuple[int, int], int]:
    """Index of every directed NoI link an XY route of the ``rows`` x ``cols`` grid uses (read-only, cached)."""
    links: dict[tuple[int, int], int] = {}
    for a in range(rows * cols):
        for b in range(rows * cols):
            for hop in xy_route(cols, a, b):
                links.setdefault(hop, len(links))
    return links


@lru_cache(maxsize=4096)
def _split_routes(rows: int, cols: int, hbm: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """route[g, link, cell]: the share of group g's bytes (striped evenly over its stacks' cells ``hbm[g]``) to
    ``cell`` that crosses ``link`` (:func:`_links`), shape (G, links, cells); read-only (cached per HBM layout)."""
    links, n_cells = _links(rows, cols), rows * cols
    route = np.zeros((len(hbm), len(links), n_cells))
    for g, cells in enumerate(hbm):
        for h in cells:
            for cell in range(n_cells):
                for hop in xy_route(cols, h, cell):
                    route[g, links[hop], cell] += 1.0 / len(cells)
    route.flags.writeable = False
    return route


def placement_geometry(rows: int, cols: int, ring: tuple[int, ...], names: tuple[str, ...], counts: np.ndarray,
                       stacks: np.ndarray, weights: np.ndarray, order: str = "count", hbm_layout: str = "greedy"
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Mean hops of every type (:func:`placement_hops`) and the share of the HBM traffic that crosses the busiest
    NoI link in the construction's placement, per point (one construction for both).

    Every chiplet of type t reads ``weights[t, g] / n_t`` bytes per request from group g, split evenly over the
    group's stacks (one stripe per stack), each stripe along the XY route from its stack to the chiplet (columns
    first, as ``chipdse.core.grid.xy_route`` and the simulator route it). The load of a directed link is the sum
    of the stripes crossing it; the busiest link's load over all the bytes is the share returned. A link carries
    its load at the D2D bandwidth, so ``share * bytes_per_request / B_NoI`` is the busiest link's time per request.

    Parameters
    ----------
    rows, cols, ring, names, counts, stacks, weights, order, hbm_layout
        As in :func:`placement_hops`.

    Returns
    -------
    (hops, share) : tuple of numpy.ndarray, shapes (n, T) and (n,)
        Hops as :func:`placement_hops`; share in [0, 1] (0 for a point without traffic).

    Raises
    ------
    ValueError
        When some point's chiplets and stacks do not fit the grid.
    """
    con = _construct(rows, cols, ring, names, counts, stacks, weights, order, hbm_layout)
    n_cells = rows * cols
    n_groups = stacks.shape[1]
    # per split: route[g, link, cell] = share of group g's bytes to `cell` that crosses `link`
    if con["hbm"]:
        route = np.stack([_split_routes(rows, cols, tuple(tuple(int(c) for c in cells) for cells in hbm))
                          for hbm in con["hbm"]])
    else:  # no points
        route = np.zeros((0, n_groups, len(_links(rows, cols)), n_cells))
    c = con["counts"]
    per_chiplet = np.divide(con["chosen"], c[:, :, None], out=np.zeros(con["chosen"].shape), where=c[:, :, None] > 0)
    n_cls, n_types = c.shape
    inv = con["inv"]
    w = np.asarray(weights, dtype=float)
    # candidate links per class: the three busiest under the class's mean weights; a point's busiest link is
    # taken among them (points of one class differ only in how much each type moves, not where)
    mean_w = np.stack([np.bincount(inv, weights=col, minlength=n_cls) for col in w.reshape(len(w), -1).T],
                      axis=1).reshape(n_cls, n_types, n_groups)
    cell_bytes = np.einsum("utc,utg->ugc", per_chiplet, mean_w)  # (classes, G, cells)
    # q_cand[class, t, g, j]: bytes on candidate link j per unit of type t's traffic from group g
    q_cand = np.zeros((n_cls, n_types, n_groups, 3))
    for k in range(len(con["hbm"])):  # one HBM split at a time: its routes are shared by its classes
        sel = np.flatnonzero(con["split_inv"] == k)
        mean_load = np.einsum("ugc,glc->ul", cell_bytes[sel], route[k])
        cand = np.argsort(-mean_load, axis=1, kind="stable")[:, :3]  # (classes of k, 3)
        route_cand = route[k][:, cand, :]  # (G, classes of k, 3, cells)
        q_cand[sel] = np.einsum("utc,gujc->utgj", per_chiplet[sel], route_cand)
    load = np.einsum("ntg,ntgk->nk", w, q_cand[inv]).max(axis=1)
    total = w.sum(axis=(1, 2))
    out = np.divide(load, total, out=np.zeros(len(total)), where=total > 0)
    return con["hops"][inv], out


def _construct(rows: int, cols: int, ring: tuple[int, ...], names: tuple[str, ...], counts: np.ndarray,
               stacks: np.ndarray, weights: np.ndarray, order: str, hbm_layout: str) -> dict:
    """The greedy construction once per distinct class (counts, stacks, placement order, normalized weights).

    Returns ``inv`` (point -> class, shape (n,)), per class ``counts`` (U, T), ``chosen`` cells of each type
    (U, T, cells), ``hops`` (U, T) and ``split_inv`` (class -> HBM split), and per split the stacks' cells
    ``hbm``.
    """
    n, n_types = counts.shape
    n_cells = rows * cols
    wsum = weights.sum(axis=2, keepdims=True)
    wn = np.round(np.divide(weights, wsum, out=np.zeros_like(weights, dtype=float), where=wsum > 0), 9)
    key = np.concatenate([counts, stacks, _placement_order(counts, names, weights, order), wn.reshape(n, -1)], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    c = uniq[:, :n_types].astype(int)
    n_groups = stacks.shape[1]
    st = uniq[:, n_types:n_types + n_groups].astype(int)
    place_order = uniq[:, n_types + n_groups:2 * n_types + n_groups].astype(int)
    w = uniq[:, 2 * n_types + n_groups:].reshape(len(uniq), n_types, n_groups)
    # distance of every cell to each group's stacks, per distinct HBM split
    splits, split_inv = np.unique(st, axis=0, return_inverse=True)
    split_inv = np.asarray(split_inv).ravel()
    dist = np.zeros((len(splits), stacks.shape[1], n_cells))
    taken0 = np.zeros((len(splits), n_cells), dtype=bool)
    hbm_by_split = []
    for k, split in enumerate(splits):
        hbm = ring_hbm_cells(ring, tuple(int(x) for x in split), hbm_layout, rows, cols)
        hbm_by_split.append(hbm)
        dist[k] = mean_group_distance(rows, cols, hbm)
        for cells in hbm:
            taken0[k, list(cells)] = True
    free_cells = (~taken0).sum(axis=1)[split_inv]
    if np.any(c.sum(axis=1) > free_cells):
        i = int(np.flatnonzero(c.sum(axis=1) > free_cells)[0])
        msg = (f"{c[i].sum()} compute chiplets and {st[i].sum()} stacks do not fit a {rows} x {cols} grid")
        raise ValueError(msg)
    cost = np.einsum("utg,ugc->utc", w, dist[split_inv])  # (classes, T, cells)
    order_idx = np.argsort(cost, axis=2, kind="stable")
    taken = taken0[split_inv].copy()
    hops = np.zeros((len(uniq), n_types))
    chosen_all = np.zeros((len(uniq), n_types, n_cells), dtype=bool)
    rows_idx = np.arange(len(uniq))
    for k in range(n_types):
        t = place_order[:, k]
        o = order_idx[rows_idx, t]  # (classes, cells), this type's cells cheapest first
        free_sorted = ~np.take_along_axis(taken, o, axis=1)
        chosen_sorted = free_sorted & (np.cumsum(free_sorted, axis=1) <= c[rows_idx, t][:, None])
        chosen = np.zeros_like(taken)
        np.put_along_axis(chosen, o, chosen_sorted, axis=1)
        taken |= chosen
        chosen_all[rows_idx, t] = chosen
        ct = cost[rows_idx, t]
        wt = w[rows_idx, t].sum(axis=1)
        n_t = c[rows_idx, t]
        with np.errstate(divide="ignore", invalid="ignore"):
            hops[rows_idx, t] = np.where((n_t > 0) & (wt > 0), (ct * chosen).sum(axis=1) / n_t / wt, 0.0)
    return {"inv": np.asarray(inv).ravel(), "counts": c, "chosen": chosen_all, "hops": hops,
            "split_inv": split_inv, "hbm": hbm_by_split}
