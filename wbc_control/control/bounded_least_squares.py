"""Least squares within a box, for the torque fit of `wbc_control.control.joint_limits`.

Compiled by numba for its one signature when imported (from the on-disk cache after the first
time): the active set takes a handful of small solves whose per-call overhead in numpy was
most of a tick in which the torque fit runs.
"""

from numba import float64
import numpy as np

from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import MATRIX, VECTOR


@kernel()
def _free_solution(hessian, gradient_at_zero, x, free, held):  # pragma: no cover - compiled
    """The free variables' minimizer with the held ones at their values, `(len(free),)`."""
    count = free.shape[0]
    if count == 0:
        return np.empty(0)
    block = np.empty((count, count))
    rhs = np.empty(count)
    for a in range(count):
        total = gradient_at_zero[free[a]]
        for b in range(held.shape[0]):
            total -= hessian[free[a], held[b]] * x[held[b]]
        rhs[a] = total
        for b in range(count):
            block[a, b] = hessian[free[a], free[b]]
    return np.linalg.solve(block, rhs)


@kernel(float64[::1](MATRIX, VECTOR, VECTOR, VECTOR))
def box_least_squares(matrix, target, lower, upper):  # pragma: no cover - runs compiled
    """The x minimizing ‖A x − b‖² within lower ≤ x ≤ upper; A `(n, n)` invertible, else `(n,)`.

    An active-set method (Stark & Parker 1995, "Bounded-variable least-squares"): from the
    clipped unconstrained solution, solve for the free variables with the others at their
    bounds; step towards that solution up to the first bound it crosses, which fixes that
    variable; at a feasible solution release the fixed variable whose gradient points most into
    the box, until none does (the KKT point). Each step fixes or releases one variable, so a
    handful of n × n solves.
    """
    transposed = np.ascontiguousarray(matrix.T)
    hessian = np.dot(transposed, np.ascontiguousarray(matrix))
    gradient_at_zero = np.dot(transposed, np.ascontiguousarray(target))
    size = target.shape[0]
    largest = 0.0
    for i in range(size):
        largest = max(largest, abs(gradient_at_zero[i]))
    tolerance = 1e-12 * max(1.0, largest)
    x = np.linalg.solve(hessian, gradient_at_zero)
    fixed = np.empty(size, dtype=np.bool_)
    for i in range(size):
        x[i] = min(max(x[i], lower[i]), upper[i])
        fixed[i] = x[i] <= lower[i] or x[i] >= upper[i]
    for _ in range(4 * size + 4):
        free = np.flatnonzero(~fixed)
        held = np.flatnonzero(fixed)
        solution = _free_solution(hessian, gradient_at_zero, x, free, held)
        first, room = -1, 1.0
        for k in range(free.shape[0]):  # the first bound the step to the solution crosses
            i = free[k]
            step = solution[k] - x[i]
            if step != 0.0:
                crossing = ((upper[i] if step > 0.0 else lower[i]) - x[i]) / step
                if crossing < room:
                    first, room = k, crossing
        if first >= 0:  # stop there and fix that variable
            blocked = free[first]
            towards_upper = solution[first] > x[blocked]
            room = max(room, 0.0)
            for k in range(free.shape[0]):
                i = free[k]
                x[i] = min(max(x[i] + room * (solution[k] - x[i]), lower[i]), upper[i])
            x[blocked] = upper[blocked] if towards_upper else lower[blocked]  # exactly
            fixed[blocked] = True
            continue
        for k in range(free.shape[0]):
            x[free[k]] = solution[k]
        gradient = np.dot(hessian, x) - gradient_at_zero
        # A variable at its lower bound may leave it if the cost falls upwards, and so on.
        leaving, steepest = -1, -1.0
        for i in range(size):
            at_lower = x[i] <= lower[i] and gradient[i] < -tolerance
            at_upper = x[i] >= upper[i] and gradient[i] > tolerance
            if fixed[i] and (at_lower or at_upper) and abs(gradient[i]) > steepest:
                leaving, steepest = i, abs(gradient[i])
        if leaving < 0:
            return x
        fixed[leaving] = False
    return x
