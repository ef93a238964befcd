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
    from numpy.linalg._umath_linalg import svd as _singular_values
except ImportError:  # pragma: no cover - numpy 1: through np.linalg.svd
    _singular_values = None
try:  # scipy ≥ 1.15's compiled NNLS, which scipy.optimize.nnls calls after its checks
    from scipy.optimize._slsqplib import nnls as _compiled_nnls
except ImportError:  # pragma: no cover - older scipy (rosdep's): through scipy.optimize.nnls
    _compiled_nnls = None


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
