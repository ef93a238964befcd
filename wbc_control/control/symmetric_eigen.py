"""Eigenvalues and eigenvectors of a small symmetric matrix, compiled (numba).

Householder reduction to tridiagonal form and implicit QL iterations: EISPACK's tred2 and tql2
(Wilkinson & Reinsch 1971, "Handbook for Automatic Computation, Vol. II: Linear Algebra",
contributions II/2 and II/3), in the form of JAMA's EigenvalueDecomposition. At the sizes of
a task level (3 to 40 rows) it costs less than LAPACK's dsyevd, and as a numba function it
runs inside the level kernel (`wbc_control.control.task_inertia_kernel`) without a Python call.
Compiled for its signature on import, from numba's on-disk cache after the first time.
"""

import math

from numba import types
import numpy as np

from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import C_MATRIX, C_VECTOR

_EPSILON = 2.0**-52
#: QL iterations per eigenvalue before giving up (EISPACK allows 30; 2 to 3 are usual).
_MAX_ITERATIONS = 60
#: a² + b² between these: the larger of |a|, |b| squares without overflow or underflow, and the
#: smaller one's square, even if it underflows, is below the larger's rounding (ratio < 1e-28).
_SAFE_SQUARES = (1e-280, 1e280)


@kernel(fastmath={'reassoc', 'contract'})
def _tridiagonalize(w, d, e):  # pragma: no cover - runs compiled
    """Householder reduction to tridiagonal form (tred2) of A, held transposed: w = Aᵀ.

    tred2 with every v[a, b] of its matrix read as w[b, a], so that the inner loops run along
    rows (contiguous) and w ends as Qᵀ. Its dot products may be summed in any order (numba's
    `reassoc`, and fused multiply-adds): vectorized, about 10 % less time at 32 rows; the
    Householder reduction is backward stable whatever the order of its sums (Wilkinson &
    Reinsch 1971, II/2), so only the last bits change, as they do between BLAS builds.
    """
    n = w.shape[0]
    for j in range(n):
        d[j] = w[j, n - 1]
    for i in range(n - 1, 0, -1):
        scale = 0.0
        h = 0.0
        for k in range(i):
            scale += abs(d[k])
        if scale == 0.0:
            e[i] = d[i - 1]
            for j in range(i):
                d[j] = w[j, i - 1]
                w[j, i] = 0.0
                w[i, j] = 0.0
        else:
            for k in range(i):
                d[k] /= scale
                h += d[k] * d[k]
            f = d[i - 1]
            g = math.sqrt(h)
            if f > 0.0:
                g = -g
            e[i] = scale * g
            h -= f * g
            d[i - 1] = f - g
            for j in range(i):
                e[j] = 0.0
            for j in range(i):
                f = d[j]
                w[i, j] = f
                g = e[j] + w[j, j] * f
                for k in range(j + 1, i):
                    g += w[j, k] * d[k]
                    e[k] += w[j, k] * f
                e[j] = g
            f = 0.0
            for j in range(i):
                e[j] /= h
                f += e[j] * d[j]
            hh = f / (h + h)
            for j in range(i):
                e[j] -= hh * d[j]
            for j in range(i):
                f = d[j]
                g = e[j]
                for k in range(j, i):
                    w[j, k] -= f * e[k] + g * d[k]
                d[j] = w[j, i - 1]
                w[j, i] = 0.0
        d[i] = h
    for i in range(n - 1):
        w[i, n - 1] = w[i, i]
        w[i, i] = 1.0
        h = d[i + 1]
        if h != 0.0:
            for k in range(i + 1):
                d[k] = w[i + 1, k] / h
            for j in range(i + 1):
                g = 0.0
                for k in range(i + 1):
                    g += w[i + 1, k] * w[j, k]
                for k in range(i + 1):
                    w[j, k] -= g * d[k]
        for k in range(i + 1):
            w[i + 1, k] = 0.0
    for j in range(n):
        d[j] = w[j, n - 1]
        w[j, n - 1] = 0.0
    w[n - 1, n - 1] = 1.0
    e[0] = 0.0


@kernel()
def _rotation_norm(a, b):  # pragma: no cover - runs compiled
    """√(a² + b²), by hypot only where a square could overflow or lose digits to underflow.

    hypot guards every call against both, at twice the cost of a square root; tql2 calls this
    once per rotation, the loop that carries the decomposition's latency.
    """
    squares = a * a + b * b
    if _SAFE_SQUARES[0] < squares < _SAFE_SQUARES[1]:
        return math.sqrt(squares)
    return math.hypot(a, b)


@kernel()
def _tridiagonal_ql(d, e, vt):  # pragma: no cover - runs compiled
    """Implicit QL iterations of the tridiagonal (d, e) (tql2), eigenvectors as rows of vt."""
    n = d.shape[0]
    for i in range(1, n):
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    f = 0.0
    largest = 0.0
    for low in range(n):
        largest = max(largest, abs(d[low]) + abs(e[low]))
        high = low
        while high < n - 1 and not abs(e[high]) <= _EPSILON * largest:
            high += 1
        if high > low:
            for _ in range(_MAX_ITERATIONS):
                g = d[low]
                p = (d[low + 1] - g) / (2.0 * e[low])
                r = math.hypot(p, 1.0)
                if p < 0.0:
                    r = -r
                d[low] = e[low] / (p + r)
                d[low + 1] = e[low] * (p + r)
                next_diagonal = d[low + 1]
                h = g - d[low]
                for i in range(low + 2, n):
                    d[i] -= h
                f += h
                p = d[high]
                c = c2 = c3 = 1.0
                next_off = e[low + 1]
                s = s2 = 0.0
                for i in range(high - 1, low - 1, -1):
                    c3 = c2
                    c2 = c
                    s2 = s
                    g = c * e[i]
                    h = c * p
                    r = _rotation_norm(p, e[i])
                    e[i + 1] = s * r
                    s = e[i] / r
                    c = p / r
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    for k in range(n):
                        h = vt[i + 1, k]
                        vt[i + 1, k] = s * vt[i, k] + c * h
                        vt[i, k] = c * vt[i, k] - s * h
                p = -s * s2 * c3 * next_off * e[low] / next_diagonal
                e[low] = s * p
                d[low] = c * p
                if not abs(e[low]) > _EPSILON * largest:
                    break
        d[low] += f
        e[low] = 0.0
    for i in range(n - 1):
        k = i
        p = d[i]
        for j in range(i + 1, n):
            if d[j] < p:
                k = j
                p = d[j]
        if k != i:
            d[k] = d[i]
            d[i] = p
            for j in range(n):
                p = vt[i, j]
                vt[i, j] = vt[k, j]
                vt[k, j] = p


@kernel(types.void(C_MATRIX, C_VECTOR, C_MATRIX))
def symmetric_eigen(matrix, values, vectors):  # pragma: no cover - runs compiled
    """Eigenvalues (ascending) and eigenvectors (rows) of a symmetric matrix, in place.

    tred2 then tql2 (Wilkinson & Reinsch 1971). `matrix` `(n, n)` is read from its lower
    triangle, not written; `values` `(n,)` and `vectors` `(n, n)`, row i the eigenvector of
    values[i], are written (`vectors` is tred2's working matrix, held transposed).
    """
    n = matrix.shape[0]
    off = np.empty(n)
    for i in range(n):
        for j in range(n):
            vectors[i, j] = matrix[j, i]
    _tridiagonalize(vectors, values, off)
    _tridiagonal_ql(values, off, vectors)
