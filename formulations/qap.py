"""QAP mode of the placement formulation: QAPLIB instances as placements of n one-chiplet types on n cells.

A Koopmans-Beckmann QAP (flow matrix A, distance matrix B, cost of a permutation p:
sum_{i,j} A[i][j] B[p(i)][p(j)]) is the placement problem of ``formulations.placement`` with facility i as a
type ``f<i>`` of one chiplet, location k as cell k of a 1 x n grid, the pair volume between f<i> and f<j> (i < j)
A[i][j], and the cell distance B[k][l] + B[l][k] in place of Manhattan hops. The translation is exact when A is
symmetric and both diagonals are zero (every QAPLIB instance with n <= 12 here); otherwise the cost of an
unordered pair is not volume x distance and :func:`to_placement_problem` says so. The same RLT-1 MILP and
CP-SAT models then solve it (DESIGN.md item 2; Adams and Johnson 1994).

Reading QAPLIB files and the cost of a permutation: :mod:`chipdse.core.qaplib`.
"""

from __future__ import annotations

import numpy as np

from chipdse.core.errors import SpecError
from chipdse.core.qaplib import QapInstance
from chipdse.formulations.placement import PlacementProblem


def facility(i: int) -> str:
    """Type name of facility ``i`` in the placement problem."""
    return f"f{i:03d}"


def to_placement_problem(inst: QapInstance) -> PlacementProblem:
    """Return the placement problem whose objective equals the QAP cost (see the module docstring).

    Raises
    ------
    SpecError
        A non-symmetric flow matrix, a negative entry or a nonzero diagonal (the unordered-pair objective cannot
        express it), naming the instance's file (its name when built in memory).
    """
    a, b = inst.flow, inst.distance
    where = inst.source or inst.name
    if not np.array_equal(a, a.T):
        raise SpecError(where, "flow", "one symmetric matrix (both the flow and the distance matrix are "
                        "asymmetric)")
    if np.any(a < 0) or np.any(b < 0):
        raise SpecError(where, "(data)", "non-negative flows and distances")
    if np.any(np.diag(a)) or np.any(np.diag(b)):
        raise SpecError(where, "diagonal", "zero diagonals in both matrices")
    n = inst.n
    d = b + b.T
    vol = {(facility(i), facility(j)): float(a[i, j]) for i in range(n) for j in range(i + 1, n) if a[i, j]}
    return PlacementProblem(rows=1, cols=n, counts={facility(i): 1 for i in range(n)}, pair_volume=vol,
                            distance=tuple(tuple(float(x) for x in row) for row in d), name=f"qap-{inst.name}")


def decision_to_perm(inst: QapInstance, decision: dict[int, str]) -> np.ndarray:
    """Turn a placement decision (cell -> facility type) into the 0-based permutation."""
    perm = np.full(inst.n, -1, dtype=np.int64)
    for cell, ty in decision.items():
        perm[int(ty[1:])] = int(cell)
    return perm
