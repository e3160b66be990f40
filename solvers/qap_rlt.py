"""The RLT-1 dual ascent bound of the QAP (Hahn-Grant), vectorized over numpy arrays.

Koopmans-Beckmann QAP: minimize sum_{i,j} A[i][j] B[p(i)][p(j)] over permutations p of m facilities onto m
locations. Written as linear costs ``c[i, k]`` (facility i at location k) plus quadratic costs
``Q[i, k, j, l]`` (i at k and j at l, i != j, k != l), every permutation costs

    cost(p) = lb + sum_i c[i, p(i)] + sum_{i != j} Q[i, p(i), j, p(j)]                          (*)

with ``lb = 0``, ``c[i, k] = A_ii B_kk`` and ``Q[i, k, j, l] = A_ij B_kl`` at the start. The dual ascent rewrites
(*) by moves that keep it exact for *every* permutation and keep ``c`` and ``Q`` non-negative, so that ``lb`` is
a lower bound of every permutation's cost at all times and never decreases:

1. *spread*: ``c[i, k]`` moves onto the (m-1) x (m-1) block ``Q[i, k, ., .]`` in equal shares (x_ik equals the
   sum of y_ikjl over l for every j, so a permutation with p(i) = k picks up exactly c[i, k] from the block);
2. *split complementary pairs*: y_ikjl = y_jlik, so ``Q[i, k, j, l]`` and ``Q[j, l, i, k]`` may exchange cost;
   both become their mean;
3. *quadratic assignments*: each block ``Q[i, k, ., .]`` (rows j != i, columns l != k) is reduced by the optimal
   duals of its linear assignment problem, whose value moves to ``c[i, k]``;
4. *linear assignment*: ``c`` is reduced by the optimal duals of its own assignment problem, whose value moves to
   ``lb``.

Steps 3 and 4 alone, once, give the Gilmore-Lawler bound; repeated, the bound climbs towards the RLT-1 linear
relaxation (Adams and Johnson 1994). The assignment problems are solved by
``scipy.optimize.linear_sum_assignment``; their optimal duals, which scipy does not return, are the shortest-path
potentials of the assignment's residual graph, found by a Bellman-Ford pass batched over all blocks at once.

Fixing facility i at location k keeps (*) exact for the remaining m - 1 facilities with ``lb' = lb + c[i, k]``,
``c'[j, l] = c[j, l] + Q[i, k, j, l] + Q[j, l, i, k]`` and ``Q`` restricted to the others, so a child starts from
its parent's reduced costs (the warm start of the branch and bound) and its bound is at least ``lb + c[i, k]``.

Storage: ``Q`` is kept compact, shape (m, m, m-1, m-1), block (i, k) listing the facilities j != i and locations
l != k in increasing order.

Source: P. Hahn and T. Grant, "Lower bounds for the quadratic assignment problem based upon a dual formulation",
Operations Research 46 (1998) 912-922; W. Adams and T. Johnson, "Improved linear programming-based lower bounds
for the quadratic assignment problem", DIMACS Series 16 (1994) 43-75; P. Gilmore (1962), E. Lawler (1963).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.optimize import linear_sum_assignment

LAP_OVERHEAD_OPS = 2_000
"""Work (in r^3 units) counted per assignment problem for the call and its bookkeeping."""


@cache
def _others(m: int) -> np.ndarray:
    """``one[k]`` = the m - 1 indices of ``range(m)`` other than k, shape (m, m-1)."""
    idx = np.arange(m)
    return np.array([np.delete(idx, k) for k in range(m)], dtype=np.intp).reshape(m, max(m - 1, 0))


def _pos(j: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Position of index ``i`` in ``_others(m)[j]`` (i != j)."""
    return i - (i > j)


@cache
def _mate(m: int) -> np.ndarray:
    """Flat index of the complementary entry: compact (i, k, a, b) -> (j, l, pos(j, i), pos(l, k)) with
    j = one[i, a], l = one[k, b]; an involution of ``range(m^2 (m-1)^2)``."""
    one = _others(m)
    i = np.arange(m)[:, None, None, None]
    k = np.arange(m)[None, :, None, None]
    j = one[:, None, :, None]
    l_ = one[None, :, None, :]
    shape = (m, m, m - 1, m - 1)
    return np.ravel_multi_index((j, l_, _pos(j, i), _pos(l_, k)), shape).reshape(-1)


@cache
def _child_index(m: int, i0: int, k0: int) -> tuple[np.ndarray, np.ndarray]:
    """Gather indices for the child fixing local facility i0 at local location k0 of an m-node: (flat index of
    the child's compact Q in the parent's, shape (m-1)^2 (m-2)^2; flat index of Q[j, l, i0, k0] for the child's
    (j, l), shape (m-1)^2)."""
    one = _others(m)
    fac, loc = one[i0], one[k0]  # parent indices of the child's facilities / locations
    shape = (m, m, m - 1, m - 1)
    if m - 1 >= 1:
        one_c = _others(m - 1)
        ja = fac[:, None, None, None]
        lb = loc[None, :, None, None]
        jq = fac[one_c][:, None, :, None]
        lq = loc[one_c][None, :, None, :]
        q_idx = np.ravel_multi_index((ja, lb, _pos(ja, jq), _pos(lb, lq)), shape).reshape(-1)
    else:
        q_idx = np.zeros(0, dtype=np.intp)
    jj = fac[:, None]
    ll = loc[None, :]
    back = np.ravel_multi_index((jj, ll, _pos(jj, np.intp(i0)), _pos(ll, np.intp(k0))), shape).reshape(-1)
    return q_idx, back


def lap_duals(cost: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal dual variables of a batch of linear assignment problems, given their optimal assignments.

    Parameters
    ----------
    cost : ndarray, shape (batch, r, r)
        Cost matrices.
    cols : ndarray of int, shape (batch, r)
        An optimal assignment of each (row i -> column ``cols[b, i]``).

    Returns
    -------
    (u, v) : ndarrays, shapes (batch, r)
        Row and column duals with u_i + v_j <= cost_ij (up to rounding) and equality on the assignment, so
        ``u.sum(1) + v.sum(1)`` is each problem's optimal value: v are the shortest-path potentials of the
        residual graph (arc cols[i] -> j of length cost_ij - cost_i,cols[i]; no negative cycle since the
        assignment is optimal), computed by Bellman-Ford rounds over the whole batch at once (at most r rounds).
    """
    batch, r = cols.shape
    perm = np.take_along_axis(cost, cols[:, None, :], axis=2)  # columns reordered: the assignment is diagonal
    diag = np.diagonal(perm, axis1=1, axis2=2)
    w = perm - diag[:, :, None]  # arc (column of row i) -> (column of row j) of length w[i, j]
    v = np.zeros((batch, r))  # v[b, i]: potential of row i's assigned column
    for _ in range(r):
        new = np.minimum(v, (v[:, :, None] + w).min(axis=1))
        if np.array_equal(new, v):
            break
        v = new
    u = diag - v
    v_cols = np.empty_like(v)
    np.put_along_axis(v_cols, cols, v, axis=1)
    return u, v_cols


def lap_ops(r: int) -> int:
    """Work counted for one r x r assignment problem with its duals: r^3 plus :data:`LAP_OVERHEAD_OPS` (the call
    itself costs about as much as a 12 x 12 problem)."""
    return r ** 3 + LAP_OVERHEAD_OPS


def _assign(cost: np.ndarray) -> np.ndarray:
    """Optimal assignment columns of each of a batch (batch, r, r) of cost matrices, shape (batch, r)."""
    return np.array([linear_sum_assignment(mat)[1] for mat in cost], dtype=np.intp).reshape(cost.shape[:2])


@dataclass
class ReducedQap:
    """The exact rewriting (*) of a QAP restricted to m free facilities and locations (module docstring).

    Attributes
    ----------
    lb : float
        The constant: a lower bound of every completion's cost.
    c : ndarray, shape (m, m)
        Non-negative linear costs.
    q : ndarray, shape (m, m, m-1, m-1)
        Non-negative quadratic costs, compact.
    """

    lb: float
    c: np.ndarray
    q: np.ndarray

    @property
    def m(self) -> int:
        """Free facilities (= free locations)."""
        return int(self.c.shape[0])

    @classmethod
    def of(cls, flow: np.ndarray, distance: np.ndarray) -> ReducedQap:
        """The starting rewriting of a QAP with flow A and distance B, shape (n, n): lb = 0,
        c = diag(A) diag(B)^T, Q[i, k, j, l] = A_ij B_kl."""
        a = np.asarray(flow, dtype=float)
        b = np.asarray(distance, dtype=float)
        m = a.shape[0]
        one = _others(m)
        a_off = a[np.arange(m)[:, None], one]  # (m, m-1): A[i, one[i]]
        b_off = b[np.arange(m)[:, None], one]
        q = a_off[:, None, :, None] * b_off[None, :, None, :]
        return cls(0.0, np.outer(np.diag(a), np.diag(b)), q)

    def ops(self) -> int:
        """Work of one ascent round: :func:`lap_ops` of its m^2 assignment problems of size m - 1 and one of
        size m."""
        m = self.m
        return m * m * lap_ops(m - 1) + lap_ops(m)

    def ascend(self, rounds: int, stop_at: float = np.inf, spread: bool = True) -> np.ndarray | None:
        """Run up to ``rounds`` ascent rounds (steps 1-4 of the module docstring; the first round skips steps 1-2
        when ``spread`` is False), in place; stop early once ``lb >= stop_at``.

        Returns
        -------
        ndarray of int, shape (m,), or None
            The linear assignment of the last round (facility -> location, local indices), a candidate completion;
            None when m = 0.
        """
        m = self.m
        if m == 0:
            return None
        cols = None
        for t in range(rounds):
            if m >= 2:
                if spread or t:
                    self.q += self.c[:, :, None, None] / (m - 1)
                    self.c[:] = 0.0
                    flat = self.q.reshape(-1)
                    flat += flat[_mate(m)]
                    flat *= 0.5
                blocks = self.q.reshape(m * m, m - 1, m - 1)
                u, v = lap_duals(blocks, _assign(blocks))
                blocks -= u[:, :, None] + v[:, None, :]
                self.c += (u.sum(axis=1) + v.sum(axis=1)).reshape(m, m)
            cols = linear_sum_assignment(self.c)[1]
            u, v = lap_duals(self.c[None], cols[None])
            self.c -= u[0][:, None] + v[0][None, :]
            self.lb += float(u.sum() + v.sum())
            if self.lb >= stop_at:
                break
        return cols

    def child_linear(self, i0: int, k0: int) -> tuple[float, np.ndarray]:
        """Constant and linear costs ``(lb', c')`` of the child fixing facility ``i0`` at location ``k0`` (local
        indices; module docstring), without its quadratic costs."""
        m = self.m
        _, back = _child_index(m, i0, k0)
        one = _others(m)
        c = self.c[np.ix_(one[i0], one[k0])] + self.q[i0, k0] + self.q.reshape(-1)[back].reshape(m - 1, m - 1)
        return self.lb + float(self.c[i0, k0]), c

    def child(self, i0: int, k0: int) -> ReducedQap:
        """The rewriting of the m - 1 others once facility ``i0`` is fixed at location ``k0`` (local indices)."""
        m = self.m
        q_idx, _ = _child_index(m, i0, k0)
        lb, c = self.child_linear(i0, k0)
        q = self.q.reshape(-1)[q_idx].reshape(m - 1, m - 1, max(m - 2, 0), max(m - 2, 0))
        return ReducedQap(lb, c, q)

    def child_bounds(self, pairs: list[tuple[int, int]]) -> np.ndarray:
        """Bound ``lb' + LAP(c')`` of each child (facility, location) in ``pairs`` (local indices), shape
        (len(pairs),): the children's starting rewritings bounded by their linear assignment."""
        out = np.empty(len(pairs))
        for t, (i, k) in enumerate(pairs):
            lb, c = self.child_linear(i, k)
            r, s = linear_sum_assignment(c)
            out[t] = lb + float(c[r, s].sum())
        return out


def rlt1_dual_bound(flow: np.ndarray, distance: np.ndarray, rounds: int = 30) -> float:
    """Lower bound on min_p sum_{i,j} A_ij B_p(i)p(j) by ``rounds`` of the RLT-1 dual ascent (module docstring).

    Parameters
    ----------
    flow, distance : ndarray, shape (n, n)
        Non-negative matrices A and B (any, asymmetric and with diagonals included); for a placement, the pair
        volumes and the cell distances.
    rounds : int
        Ascent rounds; the first equals the Gilmore-Lawler bound, each further one costs about n^5 scalar work
        (n^2 assignment problems of size n - 1).

    Returns
    -------
    float
        A lower bound of every permutation's cost (>= the Gilmore-Lawler bound).

    Source: Hahn and Grant (1998); Adams and Johnson (1994).
    """
    red = ReducedQap.of(flow, distance)
    red.ascend(max(int(rounds), 1), spread=False)
    return red.lb
