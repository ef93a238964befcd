"""Least squares within a box, for the torque fit of `wbc_control.control.joint_limits`."""

import numpy as np


def box_least_squares(
    matrix: np.ndarray, target: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """The x minimizing ‖A x − b‖² within lower ≤ x ≤ upper; A `(n, n)` invertible, else `(n,)`.

    An active-set method (Stark & Parker 1995): from the clipped unconstrained solution, solve
    for the free variables with the others at their bounds; step towards that solution up to
    the first bound it crosses, which fixes that variable; at a feasible solution release the
    fixed variable whose gradient points most into the box, until none does (the KKT point).
    Each step fixes or releases one variable, so a handful of n × n solves.
    """
    hessian, gradient_at_zero = matrix.T.dot(matrix), matrix.T.dot(target)
    size = len(target)
    tolerance = 1e-12 * max(1.0, float(np.abs(gradient_at_zero).max(initial=0.0)))
    x = np.clip(np.linalg.solve(hessian, gradient_at_zero), lower, upper)
    fixed = (x <= lower) | (x >= upper)
    for _ in range(4 * size + 4):
        free = ~fixed
        rhs = gradient_at_zero[free] - hessian[np.ix_(free, fixed)].dot(x[fixed])
        solution = np.linalg.solve(hessian[np.ix_(free, free)], rhs)
        step = solution - x[free]
        with np.errstate(divide='ignore', invalid='ignore'):
            room = np.where(step > 0.0, upper[free] - x[free], lower[free] - x[free]) / step
        room = np.where(step != 0.0, room, np.inf)
        if room.size and room.min() < 1.0:  # a bound crossed: stop there and fix it
            first = int(np.argmin(room))
            x[free] += max(float(room[first]), 0.0) * step
            np.clip(x, lower, upper, out=x)
            blocked = np.flatnonzero(free)[first]
            x[blocked] = upper[blocked] if step[first] > 0.0 else lower[blocked]  # exactly
            fixed[blocked] = True
            continue
        x[free] = solution
        gradient = hessian.dot(x) - gradient_at_zero
        # A variable at its lower bound may leave it if the cost falls upwards, and so on.
        leaving = fixed & (
            ((x <= lower) & (gradient < -tolerance)) | ((x >= upper) & (gradient > tolerance))
        )
        if not leaving.any():
            return x
        fixed[int(np.argmax(np.where(leaving, np.abs(gradient), -1.0)))] = False
    return x
