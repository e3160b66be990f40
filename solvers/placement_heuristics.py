"""The papers' placement heuristics and a local search: HYDRA's two-stage greedy (Sec. IV-A, Steps 1-2), the
round-robin and random baselines (Sec. VI-D) and a pairwise swap descent. Each returns a decision only; the
dispatcher :func:`chipdse.solvers.placement.solve_placement` checks and settles it."""

from __future__ import annotations

import numpy as np

from chipdse.core.errors import ChipdseError
from chipdse.formulations.placement import (
    HBM_PREFIX,
    PlacementProblem,
    active_types,
    allowed_cells,
    check_placement,
    manhattan,
    ring_of,
    volume_table,
)

RANDOM_SAMPLES = 32
"""Samples of the ``"random"`` baseline (the best is kept)."""


class PlacementHeuristicError(ChipdseError):
    """A heuristic found no free allowed cell for a chiplet (the instance may still be feasible)."""


def _first_free(cells: tuple[int, ...] | list[int], start: int, placement: dict[int, str], ok: set[int]) -> int:
    """Return the index in ``cells`` of the first free allowed cell from ``start`` on (wrapping), or -1."""
    for step in range(len(cells)):
        idx = (start + step) % len(cells)
        if cells[idx] not in placement and cells[idx] in ok:
            return idx
    return -1


def _place_on_ring(problem: PlacementProblem, placement: dict[int, str], group: str, start: int) -> int:
    """Put one chiplet of ``group`` on the first free allowed ring cell from ring position ``start``.

    Falls back to the lowest free allowed cell off the ring; returns the ring position after the cell used
    (``start`` when off the ring).

    Raises
    ------
    PlacementHeuristicError
        If no allowed cell is free.
    """
    ring, ok = ring_of(problem), set(allowed_cells(problem, group))
    idx = _first_free(ring, start, placement, ok)
    if idx >= 0:
        placement[ring[idx]] = group
        return idx + 1
    free = sorted(ok - placement.keys())
    if not free:
        msg = f"no free allowed cell left for {group}"
        raise PlacementHeuristicError(msg)
    placement[free[0]] = group
    return start


def hydra_greedy_placement(problem: PlacementProblem) -> dict[int, str]:
    """Return HYDRA's two-stage placement (HBM groups on the ring, then compute next to its HBMs).

    Step 1: HBM groups (types named ``hbm:*``), in descending order of size, each take a contiguous run of
    ring cells following ``ring_cells`` order from ring position 0. Step 2: compute types, in descending order
    of count (the larger group claims preferred cells first), place each chiplet of type t on the free
    allowed cell minimizing ``sum_{placed HBM h} volume[t, type(h)] * d(cell, h)`` (ties: lowest cell).

    Raises
    ------
    PlacementHeuristicError
        If some chiplet finds no free allowed cell.

    References
    ----------
    HYDRA Sec. IV-A (Step 1: HBM placement; Step 2: communication-aware placement, Eq. 2).
    """
    vol, counts = volume_table(problem), problem.counts
    order = sorted(active_types(problem), key=lambda t: (-counts[t], t))
    placement: dict[int, str] = {}
    pos = 0
    for group in (t for t in order if t.startswith(HBM_PREFIX)):
        for _ in range(counts[group]):
            pos = _place_on_ring(problem, placement, group, pos)
    hbm = list(placement.items())
    for t in (t for t in order if not t.startswith(HBM_PREFIX)):
        for _ in range(counts[t]):
            free = [i for i in allowed_cells(problem, t) if i not in placement]
            if not free:
                msg = f"hydra-greedy: no free allowed cell left for {t}"
                raise PlacementHeuristicError(msg)
            placement[
                min(
                    free,
                    key=lambda i: (sum(vol.get((t, g), 0.0) * manhattan(problem, i, h) for h, g in hbm), i),
                )
            ] = t
    return dict(sorted(placement.items()))


def round_robin_placement(problem: PlacementProblem) -> dict[int, str]:
    """Return the round-robin baseline placement (HYDRA Sec. VI-D, memory chiplets on the outer ring).

    HBM chiplets are spread evenly around the ring (chiplet m of the n HBMs at ring position
    ``floor(m * len(ring) / n)``, or the next free allowed ring cell), with the groups alternating in the
    order of ``problem.counts``; compute chiplets then take the free cells in row-major order, their types in
    round-robin order (each chiplet on the first free cell its type allows).

    Raises
    ------
    PlacementHeuristicError
        If some chiplet finds no free allowed cell.
    """
    types = active_types(problem)
    placement: dict[int, str] = {}
    hbm_seq = _round_robin([t for t in types if t.startswith(HBM_PREFIX)], problem.counts)
    ring_len = len(ring_of(problem))
    for m, group in enumerate(hbm_seq):
        _place_on_ring(problem, placement, group, m * ring_len // len(hbm_seq))
    cells = list(range(problem.rows * problem.cols))
    for t in _round_robin([t for t in types if not t.startswith(HBM_PREFIX)], problem.counts):
        idx = _first_free(cells, 0, placement, set(allowed_cells(problem, t)))
        if idx < 0:
            msg = f"round-robin: no free allowed cell left for {t}"
            raise PlacementHeuristicError(msg)
        placement[cells[idx]] = t
    return dict(sorted(placement.items()))


def _round_robin(types: list[str], counts: dict[str, int]) -> list[str]:
    """Return one entry per chiplet, cycling through ``types`` until each has its count."""
    left, seq = dict(counts), []
    while any(left[t] for t in types):
        for t in types:
            if left[t]:
                seq.append(t)
                left[t] -= 1
    return seq


def random_placement(problem: PlacementProblem, rng: np.random.Generator) -> dict[int, str]:
    """Return a uniformly shuffled placement: most restricted types first, each on random free allowed cells.

    Raises
    ------
    PlacementHeuristicError
        If a type finds too few free allowed cells (allowed sets that overlap).
    """
    placement: dict[int, str] = {}
    for t in sorted(active_types(problem), key=lambda t: (len(allowed_cells(problem, t)), t)):
        free = [i for i in allowed_cells(problem, t) if i not in placement]
        if len(free) < problem.counts[t]:
            msg = f"random: {len(free)} free allowed cells left for {problem.counts[t]} chiplets of {t}"
            raise PlacementHeuristicError(msg)
        for i in rng.choice(len(free), size=problem.counts[t], replace=False):
            placement[free[int(i)]] = t
    return dict(sorted(placement.items()))


def best_random_placement(
    problem: PlacementProblem, rng: np.random.Generator, samples: int = RANDOM_SAMPLES
) -> dict[int, str]:
    """Return the best of ``samples`` random placements (HYDRA Sec. VI-D random baseline, best of k).

    Raises
    ------
    PlacementHeuristicError
        If every sample got stuck.
    """
    best: tuple[float, dict[int, str]] | None = None
    last_error = ""
    for _ in range(samples):
        try:
            decision = random_placement(problem, rng)
        except PlacementHeuristicError as err:
            last_error = str(err)
            continue
        objective = check_placement(problem, decision)[0]
        if best is None or objective < best[0]:
            best = (objective, decision)
    if best is None:
        raise PlacementHeuristicError(last_error)
    return best[1]


def local_search_placement(problem: PlacementProblem, start: dict[int, str]) -> dict[int, str]:
    """Improve ``start`` by first-improvement pairwise swaps until no swap helps.

    Cells are scanned in order (i < j); the contents of i and j are swapped when they differ (a chiplet and
    an empty cell included), both new positions are allowed, and the objective drops by more than
    ``1e-9 * max volume``. Deterministic.

    Notes
    -----
    Swapping a (type a) and b at cells i, j changes the objective by
    ``sum_{k != i, j} (W[b, k] - W[a, k]) (d(i, k) - d(j, k))`` where W[x, k] is the volume between type x
    and the content of cell k (0 when empty).
    """
    types, vol, n = active_types(problem), volume_table(problem), problem.rows * problem.cols
    empty = len(types)
    weight = np.zeros((empty + 1, empty + 1))
    for a, t in enumerate(types):
        for b, u in enumerate(types):
            weight[a, b] = vol.get((t, u), 0.0)
    dist = np.array([[manhattan(problem, i, j) for j in range(n)] for i in range(n)], dtype=float)
    ok = np.ones((empty + 1, n), dtype=bool)
    for a, t in enumerate(types):
        ok[a] = False
        ok[a, list(allowed_cells(problem, t))] = True
    index = {t: a for a, t in enumerate(types)}
    content = np.full(n, empty)
    for cell, t in start.items():
        content[cell] = index[t]
    tol = 1e-9 * float(weight.max(initial=0.0))
    improved = tol > 0
    while improved:
        improved = False
        for i in range(n):
            for j in range(i + 1, n):
                a, b = content[i], content[j]
                if a == b or not (ok[b, i] and ok[a, j]):
                    continue
                terms = (weight[b, content] - weight[a, content]) * (dist[i] - dist[j])
                if terms.sum() - terms[i] - terms[j] < -tol:
                    content[i], content[j] = b, a
                    improved = True
    return {cell: types[a] for cell, a in enumerate(content.tolist()) if a != empty}
