"""A level's least-squares problem written plainly with numpy (the reference for level_kernel).

The same definitions as `wbc_control.control.hierarchy.level_kernel.level_problem`, taken the
long way: numpy's SVD for every basis, the regularisation from the SVD of Z's q̈ rows (not
their QR factor), each direction's room in the joint box by a linear program (`linprog`), the
closed-form step by `lstsq` (the least-norm least-squares solution, Golub
& Van Loan 2013, sec 5.5.1) rather than by the Cholesky factor of H.
"""

from typing import NamedTuple

import numpy as np
from scipy.optimize import linprog

from wbc_control.control.hierarchy.level_kernel import CLAMP_LIMIT


class Level(NamedTuple):
    """The level's QP and report, as `level_problem` returns them (authority held)."""

    hessian: np.ndarray
    gradient: np.ndarray
    #: the least-norm least-squares step of the design, plus F Fᵀ z_ref along the directions
    #: the level leaves (the tie-break's aim)
    step: np.ndarray
    fixed_projector: np.ndarray  # F Fᵀ over the joint-moving columns (F's basis is not unique)
    report: tuple[int, int, float, float]


def level_problem(
    rows, target, rank, point, basis, moving, reference, band, tie_break, stiffness, box
):
    """`Level` of a level (None where it can move nothing); `box` (lowest, highest) `(nv,)`."""
    nv = rows.shape[1]
    joints = basis[:nv, :moving]
    reduced = rows.dot(joints)
    if not reduced.size:
        return None
    _, singular, right_t = np.linalg.svd(reduced, full_matrices=True)
    rank = min(rank, singular.shape[0])
    if rank == 0 or not singular[0] > 0.0:
        return None
    fixed = right_t[rank:].T
    left, values, _ = np.linalg.svd(joints, full_matrices=False)
    span = left[:, values > 1e-12 * values[0]]
    left_q, values, right_t_q = np.linalg.svd(rows.dot(span), full_matrices=False)
    count = min(rank, values.shape[0])
    residual = target - rows.dot(point[:nv])
    demand = left_q[:, :count].T.dot(residual)
    edge = band * values[0]
    shares = np.where(values[:count] < edge, 1.0 - (values[:count] / edge) ** 2, 0.0)
    # The demand's norm over the band, each direction weighed by its share of the deepest one.
    spread = np.sqrt(np.sum(shares / shares.max() * demand**2)) if shares.any() else 0.0
    towards_reference = shares * max(edge**2, values[0] * spread / stiffness)
    directions = right_t_q[:count].dot(span.T)
    towards_none = np.zeros(count)
    for i in range(count):
        signed = np.sign(demand[i]) * directions[i] if demand[i] else directions[i]
        lowest, highest = box[0] - point[:nv], box[1] - point[:nv]
        # The box's support along the signed direction: the largest step the bounds allow.
        largest_step = linprog(-signed, bounds=list(zip(lowest, highest)), method='highs')
        reach = np.inf if largest_step.status == 3 else -largest_step.fun
        if values[i] > 0 and reach < abs(demand[i]) / values[i]:  # the step leaves the box
            limit = CLAMP_LIMIT * values[0] ** 2  # the weight's cap, also where no room is left
            exact = values[i] * abs(demand[i]) / reach - values[i] ** 2 if reach > 0 else np.inf
            towards_none[i] = min(limit, exact)
    weights = towards_reference + towards_none
    weak = weights > 0.0
    condition = values[0] / values[count - 1] if values[count - 1] > 0.0 else np.inf
    largest = towards_reference.max(initial=0.0) / values[0] ** 2
    report = (count, int((towards_reference > 0.0).sum()), condition, largest)
    size = basis.shape[1]
    chosen = directions[weak]
    design = np.zeros((reduced.shape[0] + chosen.shape[0], size))
    design[: reduced.shape[0], :moving] = reduced
    root = np.sqrt(weights[weak])
    share = towards_reference[weak] / weights[weak]
    design[reduced.shape[0] :, :moving] = root[:, None] * chosen.dot(joints)
    goal = np.concatenate([residual, root * share * chosen.dot(reference - point[:nv])])
    hessian = design.T.dot(design)
    curvature = tie_break * singular[0] ** 2
    hessian[:moving, :moving] += curvature * fixed.dot(fixed.T)
    hessian[moving:, moving:] += curvature * np.eye(size - moving)
    # The tie-break's aim: the coordinates of q̈_ref − x₀ in Z's q̈ rows, F Fᵀ of them, times
    # the deepest weak share.
    deepest = shares.max(initial=0.0)
    aim = np.zeros(size)
    coordinates = np.linalg.lstsq(joints, reference - point[:nv])[0]
    aim[:moving] = deepest * fixed.dot(fixed.T).dot(coordinates)
    gradient = -design.T.dot(goal) - curvature * aim
    step = np.linalg.lstsq(design, goal, rcond=None)[0] + aim
    return Level(hessian, gradient, step, fixed.dot(fixed.T), report)
