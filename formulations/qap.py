"""QAP mode of the placement formulation: QAPLIB instances as placements of n one-chiplet types on n cells.

A Koopmans-Beckmann QAP (flow matrix A, distance matrix B, cost of a permutation p:
sum_{i,j} A[i][j] B[p(i)][p(j)]) is the placement problem of ``formulations.placement`` with facility i as a
type ``f<i>`` of one chiplet, location k as cell k of a 1 x n grid, the pair volume between f<i> and f<j> (i < j)
A[i][j], and the cell distance B[k][l] + B[l][k] in place of Manhattan hops. The translation is exact when A is
symmetric and both diagonals are zero (every QAPLIB instance with n <= 12 here); otherwise the cost of an
unordered pair is not volume x distance and :func:`to_placement_problem` says so. The same RLT-1 MILP and
CP-SAT models then solve it (DESIGN.md item 2; Adams and Johnson 1994).

QAPLIB format (``../shared/qaplib/README.md``): n, then the two n x n matrices, read as one stream of integers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chipdse.core.errors import SpecError, shorten
from chipdse.core.io import read_input_text
from chipdse.formulations.placement import PlacementProblem

_INTEGER = re.compile(r"[+-]?[0-9]+")
"""One QAPLIB token: ASCII digits with an optional sign (``int`` would also take ``1_0``, ``²`` or other scripts'
digits)."""
MAX_ENTRY = 2**31
"""Largest absolute matrix entry read (QAPLIB entries are far smaller)."""
MAX_COST = 2**53
"""Largest worst-case cost max|A| max|B| n^2 accepted: costs stay exact in float64 and never wrap in int64."""


@dataclass(frozen=True)
class QapInstance:
    """A QAPLIB instance: ``flow`` A and ``distance`` B, integer arrays of shape (n, n); ``source`` is the file
    it was read from (named by errors), ``""`` for an instance built in memory."""

    name: str
    flow: np.ndarray
    distance: np.ndarray
    source: str = ""

    @property
    def n(self) -> int:
        """Number of facilities (= locations)."""
        return int(self.flow.shape[0])


def read_qaplib(path: Path | str) -> QapInstance:
    """Read a QAPLIB ``.dat`` file.

    Raises
    ------
    SpecError
        Naming the file: any problem of :func:`chipdse.core.io.read_input_text` (missing, a directory, FIFO or
        device, too large, unreadable, not UTF-8), non-integer tokens (the first one shown, cut to about 60
        characters), entries or costs too large, or a token count other than 1 + 2 n^2.
    """
    path = Path(path)
    text = read_input_text(path, "QAPLIB .dat")
    ints: list[int] = []
    for line_no, line in enumerate(text.splitlines(), 1):
        for token in line.split():
            where = f"(data, line {line_no}, value {len(ints) + 1})"
            if not _INTEGER.fullmatch(token):
                raise SpecError(str(path), where, "integers only, ASCII digits with an optional sign (n, then two "
                                f"n x n matrices), got {shorten(token)}")
            if len(token.lstrip("+-")) > len(str(MAX_ENTRY)) or abs(int(token)) > MAX_ENTRY:
                raise SpecError(str(path), where, f"entries of at most {MAX_ENTRY:,} in absolute value, got "
                                f"{shorten(token)}")
            ints.append(int(token))
    values = np.array(ints, dtype=np.int64)
    if len(values) == 0 or values[0] < 1:
        raise SpecError(str(path), "n", "a positive size n as the first integer")
    n = int(values[0])
    if len(values) != 1 + 2 * n * n:
        raise SpecError(str(path), "(data)", f"1 + 2 n^2 = {1 + 2 * n * n} integers for n = {n}, got {len(values)}")
    a = values[1:1 + n * n].reshape(n, n)
    b = values[1 + n * n:].reshape(n, n)
    worst = int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0)) * n * n
    if worst > MAX_COST:
        raise SpecError(str(path), "(data)", f"a cost bound max|A| max|B| n^2 of at most 2^53 (exact in float64 and "
                        f"int64 arithmetic), got {worst:.3g}")
    return QapInstance(path.stem, a, b, str(path))


def read_solution(path: Path | str) -> tuple[int, int, np.ndarray]:
    """Read a QAPLIB ``.sln`` file: (n, published cost, 0-based permutation p with p[i] = location of i)."""
    values = [int(t) for t in Path(path).read_text().split()]
    n, cost = values[0], values[1]
    return n, cost, np.array(values[2:2 + n], dtype=np.int64) - 1


def qap_cost(inst: QapInstance, perm: np.ndarray) -> int:
    """Cost sum_{i,j} A[i][j] B[p(i)][p(j)] of a 0-based permutation (facility i at location perm[i])."""
    p = np.asarray(perm)
    return int((inst.flow * inst.distance[np.ix_(p, p)]).sum())


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
