"""QAPLIB instances: reading ``.dat`` and ``.sln`` files and the Koopmans-Beckmann cost of a permutation.

QAPLIB format (``../shared/qaplib/README.md``): n, then the two n x n matrices (flow A, distance B), read as one
stream of integers; the cost of a permutation p is sum_{i,j} A[i][j] B[p(i)][p(j)]. Kept in core, apart from the
placement formulation's QAP mode (:mod:`chipdse.formulations.qap`), so that ``chipdse solve qap`` checks its file
before any modelling library is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chipdse.core.errors import SpecError, shorten
from chipdse.core.io import read_input_text

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
