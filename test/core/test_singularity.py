"""Torques through kinematic singularities, and the singularity's report (task_inertia step 3).

Each arm sweeps one joint through a stretched-arm singularity at 1 mrad steps with a 5 cm hand
position error and no effort limits: the task torque τ − h near the singularity stays within 3
times what it is 0.3 rad away, neighbours differ by at most 2 % of that, and the level reports
lost directions everywhere it is not exact, the exact singularity included.
"""

import numpy as np
import pinocchio as pin
import pytest
from robots import robot, shipped_controller, shipped_parameters

from wbc_control.control.contact.contacts import contact_jacobian
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import FramePoseTask, FramePositionTask, JointPostureTask

PANDA_READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
# robot, hand frame, configuration, swept joint, where to look for the singularity.
ARMS = {
    'panda': ('panda_hand', [0.0, 0.0, 0.0, -1.0, 0.0, 1.5, 0.7, 0.02, 0.02], 3, (-1.0, -0.1)),
    'ur5': ('tool0', [0.0, -1.2, 0.0, 0.3, 1.2, 0.0], 2, (-0.5, 0.5)),
    # The wrist: wrist 1 and wrist 3 align where wrist 2 (joint 4) crosses 0.
    'ur5_wrist': ('tool0', [0.3, -1.2, 1.0, -0.5, 0.0, 0.4], 4, (-0.5, 0.5)),
    'talos_left_arm': (
        'gripper_left_base_link',
        [0.3, 0.3, -0.5, 0.3, 0.2, 0.2, 0.0],
        2,
        (-1.0, 0.5),
    ),
}
STEP = 1e-3
HALF_WIDTH = 0.35


def arm(name: str):
    """The robot of the sweep `name`: a robot, or a robot and `_wrist`."""
    return robot(name.removesuffix('_wrist'))


def unlimited(model, entries, **kwargs):
    return PrioritizedController(
        model, entries, effort_limits=np.full(model.n_actuated, np.inf), **kwargs
    )


def singular_joint_value(name: str) -> float:
    """Where the hand's 6-D Jacobian is closest to losing rank (1e-5 rad grid refinement)."""
    model = arm(name)
    frame, q0, joint, (low, high) = ARMS[name]
    state, frame_id = RobotState(model), model.model.getFrameId(frame)
    q = np.array(q0, dtype=float)

    def smallest(value: float) -> float:
        q[joint] = value
        state.update(q, np.zeros(model.nv))
        singular = np.linalg.svd(state.frame_jacobian(frame_id), compute_uv=False)
        return singular[-1] / singular[0]

    for width in (high - low, 0.01, 1e-4):
        grid = np.linspace(low, high, 201)
        best = grid[int(np.argmin([smallest(x) for x in grid]))]
        low, high = best - width / 200, best + width / 200
    return float(best)


def sweep(name: str, extra_entries=()):
    """Task torques τ − h `(k, n)`, each level's lost directions `(k, levels)`, offsets `(k,)`."""
    model = arm(name)
    frame, q0, joint, _ = ARMS[name]
    centre = singular_joint_value(name)
    state, frame_id = RobotState(model), model.model.getFrameId(frame)
    q = np.array(q0, dtype=float)
    q[joint] = centre
    state.update(q, np.zeros(model.nv))
    outward = state.frame_placement(frame_id).translation
    outward = outward / np.linalg.norm(outward)
    hand = FramePoseTask(model, frame, [0, 0, 0, 0, 0, 0, 1.0], kp=100.0)
    ctrl = unlimited(model, [TaskEntry('hand', hand, 0), *extra_entries])
    offsets = np.arange(-round(HALF_WIDTH / STEP), round(HALF_WIDTH / STEP) + 1) * STEP
    torques, lost = [], []
    for offset in offsets:
        q[joint] = centre + offset
        state.update(q, np.zeros(model.nv))
        placement = state.frame_placement(frame_id)
        quaternion = pin.Quaternion(placement.rotation).coeffs()
        hand.set_target(np.concatenate([placement.translation + 0.05 * outward, quaternion]))
        result = ctrl.compute(state)
        torques.append(result.torque - state.nonlinear_effects[: model.n_actuated])
        lost.append([level.damped_directions for level in result.levels])
    return np.array(torques), np.array(lost), offsets


def far_peak(torques: np.ndarray, offsets: np.ndarray) -> float:
    far = np.isclose(np.abs(offsets), 0.3)
    return float(np.abs(torques[far]).max())


@pytest.mark.parametrize('name', sorted(ARMS))
def test_torque_is_bounded_and_continuous_through_the_stretched_arm(name):
    torques, lost, offsets = sweep(name)
    assert np.isfinite(torques).all()
    reference = far_peak(torques, offsets)
    peak = np.abs(torques).max()
    assert peak <= 3.0 * reference, f'{name}: {peak:.1f} N m vs {reference:.1f} 0.3 rad away'
    steps = np.abs(np.diff(torques, axis=0)).max()
    assert steps <= 0.02 * reference, f'{name}: {steps:.2f} N m between 1 mrad neighbours'
    # The exact singularity (offset 0) is reported, and so is every point of the damped band.
    assert lost[offsets == 0.0, 0] > 0
    band = np.flatnonzero(lost[:, 0])
    assert band.size and lost[band[0] : band[-1] + 1, 0].all()


def test_a_posture_below_the_singular_hand_does_not_spike():
    """The posture must not use the hand's damped direction to undo the hand (step 4)."""
    panda = robot('panda')
    _, q0, joint, _ = ARMS['panda']
    held = np.array(q0)
    held[joint] = singular_joint_value('panda')
    posture = JointPostureTask(panda, held, kp=25.0, kd=10.0)
    _, _, offsets = sweep('panda')
    torques, lost, _ = sweep('panda', [TaskEntry('posture', posture, 1)])
    reference = far_peak(torques, offsets)
    assert np.abs(torques).max() <= 3.0 * reference
    # Λ_N = Λ (no step 4) asked 7,000 N m of this posture at the edge of the hand's band.
    # Where the narrow band of Λ_N hands the direction over, the posture still steps by up to
    # 0.45 times the far peak between 1 mrad neighbours: bounded, not yet smooth.
    assert np.abs(np.diff(torques, axis=0)).max() <= 0.5 * reference
    assert lost[offsets == 0.0, 0] > 0


def test_structural_rank_loss_is_not_reported_as_singular():
    """A posture below a hand pose has 9 rows but 3 free directions: not a singularity."""
    panda = robot('panda')
    state = RobotState(panda)
    state.update(np.array(PANDA_READY), np.zeros(panda.nv))
    hand = FramePoseTask(panda, 'panda_hand', [0.3, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0], kp=50.0)
    # The same point twice in one level: 6 rows, 3 directions, by construction.
    twice = FramePositionTask(panda, 'panda_link7', [0.3, 0.0, 0.6], kp=50.0)
    again = FramePositionTask(panda, 'panda_link7', [0.3, 0.0, 0.6], kp=50.0)
    entries = [
        TaskEntry('hand', hand, 0),
        TaskEntry('posture', JointPostureTask(panda, PANDA_READY, kp=10.0), 1),
    ]
    levels = unlimited(panda, entries).compute(state).levels
    assert [(level.rank, level.generic_rank, level.damped_directions) for level in levels] == [
        (6, 6, 0),
        (3, 3, 0),
    ]
    level = unlimited(panda, [TaskEntry('a', twice), TaskEntry('b', again)]).compute(state)
    assert (level.levels[0].generic_rank, level.levels[0].damped_directions) == (3, 0)


@pytest.mark.parametrize('name', ['solo12', 'talos'])
def test_contact_rows_are_not_counted_as_a_levels_directions(name):
    """Below rigid contacts A, level k has rank [A; J₀…Jₖ] − rank [A; J₀…Jₖ₋₁] directions.

    Counting A's rank into the first level made it report A's 12 rows as lost directions
    (a permanent 'singular' warning on a standing legged robot). Standing poses of the shipped
    simulator configs, moved a little: no joint near a limit, no singularity.
    """
    controller = shipped_controller(name)
    standing = pin.neutral(controller.robot.model)
    standing[7:] = shipped_parameters(f'{name}_sim')['initial_positions']
    rng = np.random.default_rng(0)
    for _ in range(3):
        state = RobotState(controller.robot)
        moved = standing.copy()
        moved[7:] += rng.uniform(-0.05, 0.05, controller.robot.nv - 6)
        state.update(moved, 0.1 * rng.standard_normal(controller.robot.nv))
        result = controller.compute(state)
        stack = [contact_jacobian(state, controller.contacts)[0]]
        expected = []
        for level in controller.stacks.current.levels:
            before = np.linalg.matrix_rank(np.vstack(stack))
            stack.append(level.stack([e.task.compute(state) for e in level.entries])[0])
            expected.append(np.linalg.matrix_rank(np.vstack(stack)) - before)
        reports = [(r.generic_rank, r.rank, r.damped_directions) for r in result.levels]
        assert reports == [(rank, rank, 0) for rank in expected]
