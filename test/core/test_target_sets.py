"""Line and plane targets with per-axis (anisotropic) gains (Freitag 2015, "Target/Method").

A line or plane target constrains only the directions normal to the line (2) or along the
plane's normal (1). With per-world-axis gains K_p, K_d the desired acceleration of the
constrained directions is Π [K_p Π e + K_d Π (ṗ_ref − ṗ) + Π ẍ_ref] with Π the orthogonal
projector onto them (I − aaᵀ for a line along the unit a, aaᵀ for a plane with normal a):
the gains act on the projected error, so a free-direction error never leaks into the
constrained directions through an anisotropic gain.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from robots import random_state, robot

from wbc_control.tasks import FramePositionTask

seeds = st.integers(0, 2**31 - 1)
KP = np.array([10.0, 40.0, 90.0])
KD = np.array([2.0, 7.0, 19.0])
AXIS = np.array([1.0, -2.0, 0.5])


def projector(constraint: str) -> np.ndarray:
    unit = AXIS / np.linalg.norm(AXIS)
    along = np.outer(unit, unit)
    return np.eye(3) - along if constraint == 'line' else along


@settings(max_examples=20, deadline=None)
@given(seeds, st.sampled_from(['line', 'plane']))
def test_anisotropic_gains_act_on_the_projected_error(seed, constraint):
    panda = robot('panda')
    state = random_state(panda, seed)
    target = np.array([0.4, 0.1, 0.5])
    velocity_ref, acceleration_ref = np.array([0.2, -0.1, 0.3]), np.array([1.0, 0.5, -2.0])
    task = FramePositionTask(
        panda, 'panda_hand', target, kp=KP, kd=KD, constraint=constraint, axis=AXIS
    )
    task.set_target(target, velocity_ref, acceleration_ref)
    terms = task.compute(state)
    frame = task.frame_id
    position = state.frame_placement(frame).translation
    velocity = state.frame_jacobian(frame)[:3] @ state.v
    pi = projector(constraint)
    expected_world = pi @ (
        KP * (pi @ (target - position))
        + KD * (pi @ (velocity_ref - velocity))
        + pi @ acceleration_ref
    )
    # The task's rows are an orthonormal basis P of range(Π): Pᵀ ẍ* is the world vector.
    np.testing.assert_allclose(task.selection.T @ task.selection, pi, atol=1e-12)
    np.testing.assert_allclose(
        task.selection.T @ terms.desired_acceleration, expected_world, atol=1e-9
    )
    error_world = task.selection.T @ terms.error
    np.testing.assert_allclose(error_world, pi @ (target - position), atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(seeds, st.floats(-2.0, 2.0), st.sampled_from(['line', 'plane']))
def test_sliding_the_target_along_a_free_direction_changes_nothing_with_anisotropic_gains(
    seed, slide, constraint
):
    panda = robot('panda')
    state = random_state(panda, seed)
    free = AXIS if constraint == 'line' else np.cross(AXIS, [0.0, 0.0, 1.0])
    task = FramePositionTask(
        panda, 'panda_hand', [0.4, 0.0, 0.5], kp=KP, kd=KD, constraint=constraint, axis=AXIS
    )
    before = task.compute(state)
    task.set_target(np.array([0.4, 0.0, 0.5]) + slide * free, velocity=slide * free)
    after = task.compute(state)
    np.testing.assert_allclose(after.desired_acceleration, before.desired_acceleration, atol=1e-8)
