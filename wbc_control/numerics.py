"""numpy's and scipy's compiled routines without their Python wrappers, resolved once, here.

`np.einsum` dispatches through two Python functions before it reaches the compiled
`c_einsum`, `np.linalg.svd` through a dozen checks before its LAPACK gufunc, and
`scipy.optimize.nnls` checks its arguments through a deprecation wrapper and two
`asarray_chkfinite` before its compiled solve; a tick calls them per level and per contact
cone, where the wrappers cost more than the work. The same compiled functions with the same
arguments give the same bits. Used by the cascade's stages (`control.hierarchy`) and the contact
cones (`control.constraints.closed_cones`).
"""

import numpy as np
from scipy.optimize import nnls

try:  # numpy 2's compiled einsum, which np.einsum calls after a dispatch and a Python wrapper
    from numpy._core.multiarray import c_einsum as einsum
except ImportError:  # pragma: no cover - numpy 1 (the same function, called through np.einsum)
    einsum = np.einsum
try:  # numpy 2's gufunc of np.linalg.svd(compute_uv=False) (numpy 1: svd_m / svd_n)
    from numpy.linalg._umath_linalg import svd as _svd_gufunc
except ImportError:  # pragma: no cover - numpy 1: through np.linalg.svd
    _svd_gufunc = None
try:  # scipy ≥ 1.15's compiled NNLS, which scipy.optimize.nnls calls after its checks
    from scipy.optimize._slsqplib import nnls as _nnls_routine
except ImportError:  # pragma: no cover - older scipy (rosdep's): through scipy.optimize.nnls
    _nnls_routine = None

#: A small problem each private routine must answer as its public function does before it is
#: used: their signatures are not numpy's or scipy's promise, and the versions are not pinned.
_PROBE = np.array([[1.0, 0.5], [0.2, 1.0], [0.3, -0.4]])
_PROBE_RHS = np.array([0.7, -1.1, 0.4])


def verified(routine, call, expected):
    """`routine` if `call(routine)` runs and equals `expected` (arrays: to the bit), else None.

    A private routine whose signature or results changed in a later release falls back to the
    public function instead of failing in the tick.
    """
    if routine is None:
        return None
    try:
        answer = call(routine)
    except Exception:  # noqa: BLE001 - whatever a changed private signature raises
        return None
    return routine if np.array_equal(answer, expected) else None


_singular_values = verified(
    _svd_gufunc,
    lambda routine: routine(_PROBE, signature='d->d'),
    np.linalg.svd(_PROBE, compute_uv=False),
)
_compiled_nnls = verified(
    _nnls_routine,
    lambda routine: routine(np.ascontiguousarray(_PROBE), _PROBE_RHS, 6)[1],
    nnls(_PROBE, _PROBE_RHS)[1],
)


def nnls_residual(matrix: np.ndarray, rhs: np.ndarray) -> float:
    """‖A x − b‖ at the x ≥ 0 that minimises it (Lawson & Hanson 1974, ch. 23): nnls's rnorm.

    `matrix` `(m, n)` and `rhs` `(m,)` finite (unchecked); at most 3 n iterations, as
    `scipy.optimize.nnls`, with its RuntimeError where they do not suffice.
    """
    if _compiled_nnls is None:  # pragma: no cover - older scipy
        return nnls(matrix, rhs)[1]
    _, residual, info = _compiled_nnls(np.ascontiguousarray(matrix), rhs, 3 * matrix.shape[1])
    if info == 3:  # pragma: no cover - as scipy.optimize.nnls
        raise RuntimeError('Maximum number of iterations reached.')
    return residual


def singular_values(matrix: np.ndarray) -> np.ndarray:
    """σ of a real matrix `(m, n)`, largest first: np.linalg.svd(matrix, compute_uv=False).

    As there, LinAlgError where LAPACK does not converge; the floating-point flags LAPACK
    raises on its way are ignored.
    """
    if _singular_values is None:  # pragma: no cover - numpy 1
        return np.linalg.svd(matrix, compute_uv=False)
    with np.errstate(
        call=_not_converged, invalid='call', over='ignore', divide='ignore', under='ignore'
    ):
        return _singular_values(matrix, signature='d->d')


def _not_converged(error: str, flag: int) -> None:
    """np.errstate's call on the invalid flag, which the gufunc raises where it fails."""
    raise np.linalg.LinAlgError('SVD did not converge')
