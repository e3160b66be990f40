"""Analytical systolic-array cycle model that reproduces SCALE-Sim v3's compute cycles (SNAKE Secs. 3-5).

A GEMM ``C[m x n] = A[m x k] B[k x n]`` runs on an ``R x C`` PE array (``rows x cols``) under one of three
dataflows. Each dataflow keeps one operand stationary and maps two GEMM dimensions onto the array; the
third is streamed in time (``T``). The mapped dimensions are tiled into folds of at most ``R`` (rows) and ``C``
(columns), and the folds run one after another with no overlap: each fold fills the array, streams ``T``
operand rows, and drains before the next one starts.

===========  =====================  ==================  ==================  ==========================
dataflow     stationary operand     ``Sr`` (rows)       ``Sc`` (cols)       ``T`` (streamed)
===========  =====================  ==================  ==================  ==========================
``"os"``     output C               ``m``               ``n``               ``k``
``"ws"``     weight B               ``k``               ``n``               ``m``
``"is"``     input A                ``k``               ``m``               ``n``
===========  =====================  ==================  ==================  ==========================

Cycles per fold (length of one fold of SCALE-Sim's demand matrices, one row per cycle):

* OS: ``T + R + C - 2`` -- operand skew ``R - 1`` (ifmap enters the rows skewed), ``T`` streamed rows, and
  ``C - 1`` cycles while the last partial sums drain (SCALE-Sim ``systolic_compute_os``).
* WS / IS: ``2R + C + T - 2`` -- ``R`` cycles to load the stationary tile, ``R - 1`` skew, ``T`` streamed
  rows, ``C - 1`` to drain the outputs along the columns (``systolic_compute_ws`` / ``systolic_compute_is``).

With ``F = ceil(Sr / R) * ceil(Sc / C)`` folds, SCALE-Sim's demand matrices have ``F * cycles_per_fold``
rows. The matched quantity is the one SCALE-Sim's compute report calls ``Total Cycles`` minus its
``Stall Cycles`` (``single_layer_sim.total_cycles - stall_cycles``): the memory simulator reports the
zero-based cycle at which the last OFMAP row is written, which is one less than the number of demand rows, so

    compute_cycles = F * cycles_per_fold - 1.

SCALE-Sim input mapping (GEMM mode, ``scalesim(..., input_type_gemm=True)``): a topology row
``name, M, N, K,`` with ``M = m``, ``N = n``, ``K = k`` for every dataflow; SCALE-Sim turns it into a
1x1-filter convolution with ifmap operand ``m x k``, filter operand ``k x n`` and ofmap ``m x n``, and its
compute classes pick ``Sr``, ``Sc``, ``T`` as in the table above. Sparsity and custom layouts are off. The test
fixture ``tests/data/scalesim_cycles.json`` (made by ``benchmarks/scalesim_oracle.py``) records SCALE-Sim 3.0.0
on 69 cases; this model equals every one exactly.

References
----------
SCALE-Sim v3 (``pip install scalesim==3.0.0``): ``scalesim/compute/systolic_compute_{os,ws,is}.py``,
``scalesim/memory/double_buffered_scratchpad_mem.py`` and ``scalesim/single_layer_sim.py``.
SNAKE Sec. 3 (OS / IS / WS on a reconfigurable 64x64 array, logical shapes 8x512 ... 64x64).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from chipdse.core.errors import ChipdseError

#: Dataflows understood by the model, in the order of their integer codes.
DATAFLOWS: tuple[str, ...] = ("os", "ws", "is")
_DIM_NAMES = ("m", "k", "n", "rows", "cols")


class SystolicError(ChipdseError, ValueError):
    """A systolic-array query has a bad shape, array size, bandwidth or dataflow."""


def _check_dataflow(dataflow: str) -> int:
    """Return the integer code of ``dataflow``, or raise :class:`SystolicError`."""
    if not isinstance(dataflow, str) or dataflow.lower() not in DATAFLOWS:
        msg = f"dataflow must be one of {', '.join(DATAFLOWS)}; got {dataflow!r}"
        raise SystolicError(msg)
    return DATAFLOWS.index(dataflow.lower())


def _check_positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int if it is a positive integer (bools excluded), else raise."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        msg = f"{name} must be a positive integer; got {value!r}"
        raise SystolicError(msg)
    return int(value)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _fold_plan(m: int, k: int, n: int, rows: int, cols: int, code: int) -> tuple[int, int]:
    """Return (number of folds, cycles per fold) of one GEMM on one array; inputs already validated."""
    if code == 0:  # OS: Sr = m, Sc = n, T = k
        return _ceil_div(m, rows) * _ceil_div(n, cols), k + rows + cols - 2
    if code == 1:  # WS: Sr = k, Sc = n, T = m
        return _ceil_div(k, rows) * _ceil_div(n, cols), 2 * rows + cols + m - 2
    # IS: Sr = k, Sc = m, T = n
    return _ceil_div(k, rows) * _ceil_div(m, cols), 2 * rows + cols + n - 2


def compute_cycles(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> int:
    """Return the compute cycles (no memory stalls) of a GEMM on a systolic array, as SCALE-Sim v3 counts them.

    Parameters
    ----------
    m, k, n : int
        GEMM dimensions of ``C[m x n] = A[m x k] B[k x n]`` (``m`` = batch tokens in decode), elements.
    rows, cols : int
        Array height ``R`` and width ``C``, PEs.
    dataflow : str
        ``"os"`` (output stationary), ``"ws"`` (weight stationary) or ``"is"`` (input stationary); case-insensitive.

    Returns
    -------
    int
        Cycles, equal to SCALE-Sim v3's compute-report ``Total Cycles - Stall Cycles`` for the topology row
        ``gemm, M=m, N=n, K=k`` in GEMM mode.

    Raises
    ------
    SystolicError
        (a ``ValueError``) if a dimension is not a positive integer or the dataflow is unknown.

    Notes
    -----
    ``F * P - 1`` with ``F = ceil(Sr / R) ceil(Sc / C)`` folds and ``P`` cycles per fold: ``P = k + R + C - 2``
    for OS (``Sr, Sc = m, n``), ``P = 2R + C + m - 2`` for WS (``Sr, Sc = k, n``) and ``P = 2R + C + n - 2``
    for IS (``Sr, Sc = k, m``); see the module docstring for where each term comes from.

    References
    ----------
    SNAKE Sec. 3 (dataflows); SCALE-Sim v3 ``systolic_compute_{os,ws,is}.py``.

    Examples
    --------
    >>> compute_cycles(4, 16, 4, 4, 4, "os")  # one fold: 16 + 4 + 4 - 2 - 1
    21
    """
    code = _check_dataflow(dataflow)
    dims = [_check_positive_int(name, v) for name, v in zip("mkn", (m, k, n), strict=True)]
    r = _check_positive_int("rows", rows)
    c = _check_positive_int("cols", cols)
    folds, per_fold = _fold_plan(*dims, r, c, code)
    return folds * per_fold - 1


def _as_positive_int_array(name: str, value: ArrayLike) -> np.ndarray:
    """Return ``value`` as an int64 array, raising if any entry is not a positive integer."""
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        msg = f"{name} must hold positive integers; got dtype {arr.dtype}"
        raise SystolicError(msg)
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        msg = f"{name} must hold positive integers; got non-integer values such as {arr[arr != np.round(arr)][:3]}"
        raise SystolicError(msg)
    out = arr.astype(np.int64)
    if np.any(out < 1):
        msg = f"{name} must hold positive integers; got {out[out < 1][:3].tolist()}"
        raise SystolicError(msg)
    return out


def _dataflow_codes(dataflow: str | ArrayLike) -> np.ndarray:
    """Return integer dataflow codes (0 = os, 1 = ws, 2 = is) for a string or an array of strings."""
    if isinstance(dataflow, str):
        return np.asarray(_check_dataflow(dataflow))
    arr = np.asarray(dataflow)
    if arr.dtype.kind not in "US":
        msg = f"dataflow must be a string or an array of strings; got dtype {arr.dtype}"
        raise SystolicError(msg)
    lower = np.char.lower(arr.astype(str))
    codes = np.full(lower.shape, -1, dtype=np.int64)
    for i, name in enumerate(DATAFLOWS):
        codes[lower == name] = i
    if np.any(codes < 0):
        msg = f"dataflow must be one of {', '.join(DATAFLOWS)}; got {sorted(set(arr[codes < 0].tolist()))}"
        raise SystolicError(msg)
    return codes


def _fold_plan_array(
    m: ArrayLike, k: ArrayLike, n: ArrayLike, rows: ArrayLike, cols: ArrayLike, dataflow: str | ArrayLike
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """Validate and broadcast the inputs; return (folds, cycles per fold, (m, k, n, rows, cols, code))."""
    mm, kk, nn, r, c = (
        _as_positive_int_array(name, v) for name, v in zip(_DIM_NAMES, (m, k, n, rows, cols), strict=True)
    )
    code = _dataflow_codes(dataflow)
    mm, kk, nn, r, c, code = np.broadcast_arrays(mm, kk, nn, r, c, code)
    sr = np.where(code == 0, mm, kk)
    sc = np.where(code == 2, mm, nn)
    t = np.choose(code, (kk, mm, nn))
    folds = (-(-sr // r)) * (-(-sc // c))
    per_fold = np.where(code == 0, t + r + c - 2, 2 * r + c + t - 2)
    return folds, per_fold, (mm, kk, nn, r, c, code)


def compute_cycles_array(
    m: ArrayLike, k: ArrayLike, n: ArrayLike, rows: ArrayLike, cols: ArrayLike, dataflow: str | ArrayLike
) -> np.ndarray:
    """Return :func:`compute_cycles` for many GEMMs, arrays and dataflows at once (numpy broadcasting).

    Parameters
    ----------
    m, k, n : array_like of int
        GEMM dimensions, any broadcast-compatible shapes.
    rows, cols : array_like of int
        Array heights and widths, PEs, broadcast with the GEMM dimensions.
    dataflow : str or array_like of str
        One dataflow for all, or an array of ``"os"`` / ``"ws"`` / ``"is"`` broadcast with the rest.

    Returns
    -------
    numpy.ndarray
        int64 cycles with the broadcast shape of the inputs.

    Raises
    ------
    SystolicError
        If any entry is not a positive integer, a dataflow is unknown, or the shapes do not broadcast
        (the latter as numpy's ``ValueError``).

    References
    ----------
    SNAKE Sec. 3; SCALE-Sim v3 ``systolic_compute_{os,ws,is}.py`` (see the module docstring).
    """
    folds, per_fold, _ = _fold_plan_array(m, k, n, rows, cols, dataflow)
    return folds * per_fold - 1


def _traffic_elements(
    m: np.ndarray, k: np.ndarray, n: np.ndarray, rows: np.ndarray, cols: np.ndarray, code: np.ndarray
) -> np.ndarray:
    """Return the elements moved between the local buffer and the array over the whole GEMM."""
    fm, fk, fn = -(-m // np.where(code == 2, cols, rows)), -(-k // rows), -(-n // cols)
    os_traffic = m * k * fn + k * n * fm + m * n  # A re-read per column fold, B per row fold, C once
    ws_traffic = k * n + m * k * fn + m * n * fk  # B once, A per column fold, partial sums per k fold
    is_traffic = m * k + k * n * fm + m * n * fk  # A once, B per m fold, partial sums per k fold
    return np.choose(code, (os_traffic, ws_traffic, is_traffic))


def buffer_traffic_elements_array(
    m: ArrayLike, k: ArrayLike, n: ArrayLike, rows: ArrayLike, cols: ArrayLike, dataflow: str | ArrayLike
) -> np.ndarray:
    """Return the elements moved between the local buffer and the array over a whole GEMM (vectorized).

    Parameters and errors as :func:`compute_cycles_array` (elements, PEs, ``"os"`` / ``"ws"`` / ``"is"``); returns
    int64 elements with the broadcast shape: OS ``m k f_n + k n f_m + m n`` (A re-read per column fold, B per row
    fold, C written once); WS ``k n + m k f_n + m n f_k``; IS ``m k + k n f_m + m n f_k`` (partial sums leave once
    per ``k`` fold), with ``f_m, f_k, f_n`` the folds along each dimension (SNAKE Sec. 3.1: re-tiling and
    re-reading along the spatial dimensions; SCALE-Sim v3 SRAM traces).
    """
    _, _, (mm, kk, nn, r, c, code) = _fold_plan_array(m, k, n, rows, cols, dataflow)
    return _traffic_elements(mm, kk, nn, r, c, code)


def stall_cycles_array(
    m: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    rows: ArrayLike,
    cols: ArrayLike,
    dataflow: str | ArrayLike,
    bandwidth_bytes_per_cycle: ArrayLike,
    bytes_per_element: ArrayLike = 1,
) -> np.ndarray:
    """Return memory-stall cycles of double-buffered fold refill at a local bandwidth (vectorized).

    Parameters
    ----------
    m, k, n, rows, cols, dataflow : array_like
        As in :func:`compute_cycles_array`.
    bandwidth_bytes_per_cycle : array_like of float
        Bandwidth between the local buffer (SRAM or the near-memory bank) and the array, bytes per cycle, > 0.
    bytes_per_element : array_like of float, optional
        Operand and output size, bytes (1 for int8, 2 for fp16 / bf16).

    Returns
    -------
    numpy.ndarray
        int64 stall cycles, broadcast shape; add them to :func:`compute_cycles_array` for the total.

    Raises
    ------
    SystolicError
        On invalid shapes or dataflows (as in :func:`compute_cycles_array`) or a bandwidth or element size that
        is not a finite positive number.

    Notes
    -----
    Model (an analytical stand-in for SCALE-Sim's memory simulation, not a reproduction of it):

    * The GEMM runs as ``F`` equal folds of ``P`` cycles (as in :func:`compute_cycles`).
    * Each fold moves ``V / F`` bytes, where ``V`` is the total traffic of the dataflow
      (``e`` = bytes per element, ``f_m, f_k, f_n`` the fold counts along each dimension):
      OS ``e (mk f_n + kn f_m + mn)``; WS ``e (kn + mk f_n + mn f_k)`` (partial sums leave once per k fold);
      IS ``e (mk + kn f_m + mn f_k)``. Outputs share the same port as the operand refill.
    * Double buffering: the next fold's data load, taking ``L = ceil(V / (F bw))`` cycles, overlaps the current
      fold's compute. The first load has nothing to hide behind. The pipeline then takes
      ``L + (F - 1) max(L, P) + P`` cycles, so the stall is ``L + (F - 1) max(0, L - P)``.
    * Ignored: DRAM behind the local buffer (assumed already staged), buffer capacity (a fold's tiles are
      assumed to fit twice), bank conflicts, and the write-back of the last fold's outputs.

    References
    ----------
    SNAKE Sec. 3 (per-PU local buffers fed by the near-memory bandwidth); SCALE-Sim v3
    ``double_buffered_scratchpad_mem.py`` (the double-buffered scratchpad this approximates).
    """
    bw = np.asarray(bandwidth_bytes_per_cycle, dtype=float)
    elem = np.asarray(bytes_per_element, dtype=float)
    for name, arr in (("bandwidth_bytes_per_cycle", bw), ("bytes_per_element", elem)):
        if not np.all(np.isfinite(arr) & (arr > 0)):
            msg = f"{name} must be a finite positive number; got {arr[~(np.isfinite(arr) & (arr > 0))][:3]}"
            raise SystolicError(msg)
    folds, per_fold, (mm, kk, nn, r, c, code) = _fold_plan_array(m, k, n, rows, cols, dataflow)
    traffic_bytes = _traffic_elements(mm, kk, nn, r, c, code) * elem
    load = np.ceil(traffic_bytes / (folds * bw)).astype(np.int64)
    return load + (folds - 1) * np.maximum(0, load - per_fold)


def stall_cycles(
    m: int,
    k: int,
    n: int,
    rows: int,
    cols: int,
    dataflow: str,
    bandwidth_bytes_per_cycle: float,
    bytes_per_element: float = 1,
) -> int:
    """Return memory-stall cycles of double-buffered fold refill at a local bandwidth.

    Parameters
    ----------
    m, k, n : int
        GEMM dimensions of ``C[m x n] = A[m x k] B[k x n]``, elements.
    rows, cols : int
        Array height and width, PEs.
    dataflow : str
        ``"os"``, ``"ws"`` or ``"is"``.
    bandwidth_bytes_per_cycle : float
        Local-buffer-to-array bandwidth, bytes per cycle, > 0.
    bytes_per_element : float, optional
        Element size, bytes (default 1, int8 as in SCALE-Sim's ``word_size``).

    Returns
    -------
    int
        Stall cycles (>= the first fold's load time); total cycles = ``compute_cycles(...) + stall_cycles(...)``.

    Raises
    ------
    SystolicError
        On a non-positive or non-integer dimension, an unknown dataflow, or a non-positive bandwidth or size.

    Notes
    -----
    ``L + (F - 1) max(0, L - P)`` with ``F`` folds of ``P`` cycles and ``L`` cycles to load one fold's share of
    the traffic; see :func:`stall_cycles_array` for the traffic per dataflow and the assumptions.

    References
    ----------
    SNAKE Sec. 3; SCALE-Sim v3 ``double_buffered_scratchpad_mem.py``.
    """
    code = _check_dataflow(dataflow)
    dims = [_check_positive_int(name, v) for name, v in zip(_DIM_NAMES, (m, k, n, rows, cols), strict=True)]
    return int(stall_cycles_array(*dims, DATAFLOWS[code], bandwidth_bytes_per_cycle, bytes_per_element))


def pipelined_cycles_array(
    m: ArrayLike, k: ArrayLike, n: ArrayLike, rows: ArrayLike, cols: ArrayLike, dataflow: str | ArrayLike
) -> np.ndarray:
    """Return compute cycles with pipelined Weight-Load / Feed / Drain sub-stages (SNAKE Sec. 4.2.4), vectorized.

    Parameters
    ----------
    m, k, n, rows, cols, dataflow : array_like
        As in :func:`compute_cycles_array` (GEMM dimensions and array shape in elements / PEs).

    Returns
    -------
    numpy.ndarray
        int64 cycles ``fill + T + (F - 1) max(T, R) + drain - 1`` with ``F`` folds of ``T`` streamed rows on an
        ``R x C`` array: ``fill`` = ``R - 1`` operand skew under OS, ``R`` (stationary-tile load) ``+ R - 1`` under
        WS / IS; ``drain`` = ``C - 1``; the ``- 1`` is SCALE-Sim's zero-based last cycle, as in
        :func:`compute_cycles`. Once ``T >= R`` the ``k`` folds take ``fill + k T + drain - 1``.

    Raises
    ------
    SystolicError
        As :func:`compute_cycles_array`.

    Notes
    -----
    SNAKE's decoder splits each matrix instruction into Weight Load, Feed First / Second and Drain sub-stages that
    overlap consecutive tiles (Sec. 4.2.4, after RASA): the next fold's stationary tile loads (WS / IS) or the
    current fold's output tile drains out of its ``R`` rows (OS) while a fold streams its ``T`` rows, so only the
    first fill and the last drain are exposed and a fold holds the array for ``max(T, R)`` cycles. With one fold
    the count equals :func:`compute_cycles` (SCALE-Sim v3) exactly; with ``F`` folds it is never above it.

    References
    ----------
    SNAKE Sec. 4.2.4; RASA (Jeong et al., 2021) pipelining; SCALE-Sim v3 ``systolic_compute_{os,ws,is}.py``.
    """
    folds, per_fold, (mm, kk, nn, r, c, code) = _fold_plan_array(m, k, n, rows, cols, dataflow)
    t = np.choose(code, (kk, mm, nn))
    fill = np.where(code == 0, r - 1, 2 * r - 1)
    return fill + t + (folds - 1) * np.maximum(t, r) + (c - 1) - 1


def pipelined_cycles(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> int:
    """Return :func:`pipelined_cycles_array` for one GEMM (SNAKE Sec. 4.2.4 pipelined sub-stages).

    Parameters
    ----------
    m, k, n, rows, cols, dataflow
        As in :func:`compute_cycles`: GEMM dimensions (elements), array height and width (PEs), ``"os"`` /
        ``"ws"`` / ``"is"``.

    Returns
    -------
    int
        Cycles ``fill + T + (F - 1) max(T, R) + drain - 1`` (see :func:`pipelined_cycles_array`).

    Raises
    ------
    SystolicError
        On a non-positive or non-integer dimension or an unknown dataflow.

    Examples
    --------
    >>> pipelined_cycles(8, 1024, 1024, 8, 512, "os")  # 2 folds: 7 + 1024 + 1024 + 511 - 1
    2565
    """
    code = _check_dataflow(dataflow)
    dims = [_check_positive_int(name, v) for name, v in zip(_DIM_NAMES, (m, k, n, rows, cols), strict=True)]
    return int(pipelined_cycles_array(*dims, DATAFLOWS[code]))


def fold_count_array(
    m: ArrayLike, k: ArrayLike, n: ArrayLike, rows: ArrayLike, cols: ArrayLike, dataflow: str | ArrayLike
) -> np.ndarray:
    """Return the number of folds ``ceil(Sr / R) ceil(Sc / C)`` of GEMMs on arrays (the module table's ``Sr, Sc``).

    Parameters and errors as :func:`compute_cycles_array`; returns int64 folds with the broadcast shape.
    """
    return _fold_plan_array(m, k, n, rows, cols, dataflow)[0]


def buffer_demand_bytes(rows: int, cols: int, dataflow: str, latency_cycles: float, bytes_per_element: float = 2
                        ) -> tuple[float, float]:
    """Return the (weight-side, activation-side) buffer bytes an array needs for stall-free streaming (SNAKE Fig. 14b).

    Parameters
    ----------
    rows, cols : int
        Logical array shape ``R x C``, PEs.
    dataflow : str
        ``"os"`` (weights enter along the ``C`` columns, inputs along the ``R`` rows, outputs stay) or ``"is"``
        (weights enter along the ``R`` rows, outputs leave along the ``C`` columns, inputs stay).
    latency_cycles : float
        DRAM access latency a refill request sees, array cycles (> 0).
    bytes_per_element : float
        Element size, bytes (2 for FP16).

    Returns
    -------
    (float, float)
        Bytes of the weight buffer and of the activation-side buffer (inputs under OS, outputs under IS, as the
        paper defines it): each stream is double-buffered over the latency, ``2 x rate x latency x bytes``, by
        Little's law, with ``rate`` = the elements per cycle that stream enters or leaves the array.

    Raises
    ------
    SystolicError
        A bad shape, a dataflow other than OS / IS, or a non-positive latency or element size.

    References
    ----------
    SNAKE Sec. 6.6, Fig. 14b (weight vs activation-side buffer per shape; the stationary operand needs little).
    """
    code = _check_dataflow(dataflow)
    r, c = _check_positive_int("rows", rows), _check_positive_int("cols", cols)
    if code == 1:
        msg = "buffer_demand_bytes models the OS and IS dataflows SNAKE uses; got 'ws'"
        raise SystolicError(msg)
    if not (latency_cycles > 0 and bytes_per_element > 0):
        msg = f"latency_cycles and bytes_per_element must be positive; got {latency_cycles!r}, {bytes_per_element!r}"
        raise SystolicError(msg)
    weight_rate, act_rate = (c, r) if code == 0 else (r, c)
    scale = 2.0 * latency_cycles * bytes_per_element
    return weight_rate * scale, act_rate * scale
