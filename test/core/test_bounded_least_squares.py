"""The torque fit of the joint-limit level and its box least squares (Stark & Parker 1995).

`torque_fit.fit_torque` (compiled `joint_limit_kernel.fitted_acceleration`) and
`bounded_least_squares.box_least_squares`, each against scipy's bounded-variable least squares
or a closed form.
"""

import numpy as np
import pytest
from robots import robot
from scipy.optimize import lsq_linear

from wbc_control.control.bounded_least_squares import box_least_squares
from wbc_control.control.torque_fit import fit_torque
from wbc_control.model.robot_state import RobotState

READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]  # config/panda_controller.yaml


@pytest.mark.parametrize('seed', range(40))
def test_box_least_squares_matches_scipy(seed):
    """The active-set solver against scipy's bounded-variable least squares."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 10))
    matrix = rng.normal(size=(size, size)) + np.eye(size) * rng.uniform(0.0, 3.0)
    target = rng.normal(size=size) * rng.uniform(0.1, 100.0)
    lower = rng.normal(size=size) - rng.uniform(0.0, 2.0, size)
    upper = lower + rng.uniform(0.0, 3.0, size)
    if seed % 5 == 0:
        upper[:] = np.inf
    solution = box_least_squares(matrix, target, lower, upper)
    reference = lsq_linear(matrix, target, bounds=(lower, upper), method='bvls', tol=1e-12).x
    assert (solution >= lower).all() and (solution <= upper).all()
    cost = np.sum((matrix.dot(solution) - target) ** 2)
    best = np.sum((matrix.dot(reference) - target) ** 2)
    assert cost <= best + 1e-9 * max(1.0, best)


@pytest.mark.parametrize('seed', range(10))
def test_box_least_squares_of_a_diagonal_matrix_is_the_clipped_solution(seed):
    """Decoupled variables: min Σ (aᵢ xᵢ − bᵢ)² in the box is xᵢ = clip(bᵢ / aᵢ) exactly.

    Variables strictly inside the box reach their solution at once (a step of 0 to it), the
    others stop at the bound they would cross.
    """
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 9))
    diagonal = rng.uniform(0.5, 2.0, size) * rng.choice([-1.0, 1.0], size)
    target = rng.normal(size=size) * 3.0
    lower = -rng.uniform(0.5, 2.0, size)
    upper = rng.uniform(0.5, 2.0, size)
    solution = box_least_squares(np.diag(diagonal), target, lower, upper)
    np.testing.assert_allclose(solution, np.clip(target / diagonal, lower, upper), atol=1e-12)


def reference_fit(state, acceleration, held, bounds, torque_range):
    """`fit_torque` by scipy's bounded-variable least squares.

    min over τ ∈ [τ⁻, τ⁺] of Σ wᵢ² (M⁻¹(τ − h) − q̈ᵢ*)², wᵢ = 10³ for a held joint; a joint the
    fit drives past [a⁻ − 10⁻⁶, a⁺ + 10⁻⁶] is held at that bound from then on, and the fit rerun.
    """
    inverse, bias = state.inverse_mass_matrix, state.nonlinear_effects
    lower, upper = bounds
    target, holding = acceleration.copy(), held.copy()
    for _ in range(len(acceleration)):
        weights = np.where(holding, 1e3, 1.0)
        matrix = weights[:, None] * inverse
        rhs = weights * (target + inverse.dot(bias))
        torque = lsq_linear(matrix, rhs, bounds=torque_range, method='bvls', tol=1e-14).x
        fitted = inverse.dot(torque - bias)
        outside = ~holding & ((fitted > upper + 1e-6) | (fitted < lower - 1e-6))
        if not outside.any():
            break
        holding |= outside
        target[outside] = np.clip(fitted, lower, upper)[outside]
    return fitted


@pytest.mark.parametrize('seed', range(6))
def test_the_torque_fit_is_the_weighted_bounded_least_squares(seed):
    """The compiled fit against `reference_fit`, with held joints and joints pushed out.

    A random Panda state and a q̈ whose torque leaves a window around gravity; two
    joints held; the bounds (a⁻, a⁺) tight enough on odd seeds that the first fit drives
    joints past them, which the fit then holds at their bound, and wide on even seeds, where
    the held joints weigh 10³ against the others' 1.
    """
    panda = robot('panda')
    rng = np.random.default_rng(seed)
    state = RobotState(panda)
    state.update(np.array(READY) + rng.uniform(-0.3, 0.3, 9) * np.r_[np.ones(7), 0, 0],
                 rng.uniform(-1.0, 1.0, 9))  # fmt: skip
    acceleration = rng.uniform(-20.0, 20.0, panda.nv)
    free = state.mass_matrix.dot(acceleration) + state.nonlinear_effects
    # Even seeds: half the torques within the window, so that the fit has torques left free.
    half_width = 5.0 if seed % 2 else float(np.median(np.abs(free - state.gravity)))
    torque_range = (state.gravity - half_width, state.gravity + half_width)
    assert ((free < torque_range[0]) | (free > torque_range[1])).any()
    held = np.zeros(panda.n_actuated, dtype=bool)
    held[rng.choice(7, 2, replace=False)] = True
    width = 1.0 if seed % 2 else 1e3  # odd seeds: the fit pushes joints out; even: none held
    bounds = (
        acceleration - width * rng.uniform(0.5, 3.0, 9),
        acceleration + width * rng.uniform(0.5, 3.0, 9),
    )
    fitted = fit_torque(state, acceleration, held, torque_range, bounds)
    expected = reference_fit(state, acceleration, held, bounds, torque_range)
    np.testing.assert_allclose(fitted, expected, atol=1e-6 * np.abs(expected).max())
    torque = state.mass_matrix.dot(fitted) + state.nonlinear_effects
    assert (torque >= torque_range[0] - 1e-9).all() and (torque <= torque_range[1] + 1e-9).all()
    # Into the acceleration's own buffer (what the controller does): the same q̈.
    in_place = acceleration.copy()
    assert fit_torque(state, in_place, held, torque_range, bounds, in_place) is in_place
    np.testing.assert_array_equal(in_place, fitted)
