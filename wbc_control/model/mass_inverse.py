"""M⁻¹ of a kinematic tree through its branch-induced sparsity, compiled (numba).

In the joint-space inertia matrix of a kinematic tree, M[i, j] can be non-zero only if DoF j is
an ancestor of DoF i or i of j (Featherstone 2005, "Efficient factorization of the joint-space
inertia matrix for branched kinematic trees", IJRR 24(6), sec 3: branch-induced sparsity). Its
LᵀDL factorisation M = Lᵀ D L (L unit lower triangular) keeps that pattern, no fill-in, and
costs O(Σ depth²) instead of O(n³) (Featherstone 2005, sec 4, the LTDL algorithm of Table 2).
L⁻¹ = X has the same pattern, and M⁻¹ = X D⁻¹ Xᵀ:

    X[k, k] = 1,   X[k, j] = −Σ_{i ∈ ancestors(k)} L[k, i] X[i, j]
    M⁻¹[a, b] = Σ_{k ∈ {b} ∪ ancestors(b)} X[a, k] X[b, k] / D[k]    (b ≤ a)

M is positive definite if and only if every pivot D[k] > 0: the factorisation is the test.
The DoFs' parents `λ` come from the model (`dof_parents`): the previous DoF of the same joint
(a joint's own DoFs form a chain, so its dense block is covered), else the last DoF of the
parent joint; Pinocchio numbers every DoF after its ancestors (λ(k) < k).
"""

from numba import boolean, float64, int64
import numpy as np
import pinocchio as pin

from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import MATRIX

#: M in any memory order (Pinocchio's is column-major), read only.


def dof_parents(model: pin.Model) -> np.ndarray:
    """λ per velocity index `(nv,)`: the DoF it hangs from, −1 at a root (module docstring)."""
    parents = np.full(model.nv, -1, dtype=np.int64)
    for joint in range(1, model.njoints):
        start, count = model.joints[joint].idx_v, model.joints[joint].nv
        if count == 0:
            continue
        parent = model.parents[joint]
        while parent > 0 and model.joints[parent].nv == 0:
            parent = model.parents[parent]
        if parent > 0:
            parents[start] = model.joints[parent].idx_v + model.joints[parent].nv - 1
        parents[start + 1 : start + count] = np.arange(start, start + count - 1)
    if np.any(parents >= np.arange(model.nv)):
        raise ValueError('the model numbers a DoF before its parent')  # Pinocchio never does
    return parents


@kernel(boolean(MATRIX, int64[::1], float64[:, :, ::1], float64[:, ::1]))
def tree_inverse(matrix, parents, work, inverse):  # pragma: no cover - runs compiled
    """Write M⁻¹ into `inverse` `(n, n)` by M = Lᵀ D L (module docstring); False if M ⊁ 0.

    Args:
        matrix: M `(n, n)`, in any memory order, read on its lower triangle's branch-induced
            pattern.
        parents: λ of `dof_parents` `(n,)`.
        work: scratch `(3, n, n)`: the factor (L below the diagonal, D on it), X, X D⁻¹.
        inverse: written with M⁻¹ when M is positive definite.
    """
    n = matrix.shape[0]
    factor, lower_inverse, scaled = work[0], work[1], work[2]
    factor[:, :] = matrix
    for k in range(n - 1, -1, -1):  # LTDL, from the leaves to the root
        pivot = factor[k, k]
        if not pivot > 0.0:  # also a NaN
            return False
        i = parents[k]
        while i >= 0:
            ratio = factor[k, i] / pivot
            j = i
            while j >= 0:
                factor[i, j] -= ratio * factor[k, j]
                j = parents[j]
            factor[k, i] = ratio
            i = parents[i]
    lower_inverse[:, :] = 0.0
    for k in range(n):  # X = L⁻¹, row by row from the root
        lower_inverse[k, k] = 1.0
        i = parents[k]
        while i >= 0:
            coefficient = factor[k, i]
            j = i
            while j >= 0:
                lower_inverse[k, j] -= coefficient * lower_inverse[i, j]
                j = parents[j]
            i = parents[i]
    for b in range(n):
        k = b
        while k >= 0:
            scaled[b, k] = lower_inverse[b, k] / factor[k, k]
            k = parents[k]
    for a in range(n):  # M⁻¹ = X D⁻¹ Xᵀ on the ancestors of b, where X[b, k] ≠ 0
        for b in range(a + 1):
            total = 0.0
            k = b
            while k >= 0:
                total += lower_inverse[a, k] * scaled[b, k]
                k = parents[k]
            inverse[a, b] = total
            inverse[b, a] = total
    return True
