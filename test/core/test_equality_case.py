"""The equality case: where no inequality binds, the cascade is Khatib's recursion.

With the effort limits out of reach, no joint limits, friction pyramids that hold no force
back and no weak direction, the hierarchical least squares
(`wbc_control.control.hierarchy.cascade`)
must give the joint accelerations of the dynamically consistent recursion (Khatib 1987, eq 30;
Sentis & Khatib 2005, eq 13), contacts as its first level: `hierarchy_oracle.recursion`,
written from the formulas with numpy's eigendecomposition. docs/theory.md, "The equality
case", has the argument: each level's exact part fixes the same affine set, and what the
levels leave is resolved in the inertia metric by both.
"""

from hierarchy_oracle import OracleLevel, recursion
from hypothesis import assume, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from robots import TALOS_HALF_SITTING, random_state, robot, talos_standing_state

from wbc_control.control.contact.contacts import (
    CONTACT_VELOCITY_DAMPING,
    Contact,
    contact_jacobian,
)
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import ComTask, FramePoseTask, FramePositionTask, JointPostureTask

#: A band narrow enough that no direction of these states is weak (checked per example).
BAND = 1e-4
#: Agreement required between the cascade and the recursion (rad/s², m/s²).
TOLERANCE = 1e-8

SOLO_STANDING = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])


def arm_case(name: str, hand_frame: str, seed: int):
    """A hand pose over a posture that differs per joint, at a random moving state."""
    model = robot(name)
    state = random_state(model, seed, speed=0.3)
    rng = np.random.default_rng(seed + 1)
    hand = FramePoseTask(model, hand_frame, [0.4, 0.1, 0.5, 0.0, 1.0, 0.0, 0.0], kp=50.0)
    posture = JointPostureTask(model, rng.uniform(-0.5, 0.5, model.n_actuated), kp=20.0)
    return model, state, [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)], []


def talos_case(seed: int):
    """Talos on both soles near half-sitting: COM, a hand, the posture."""
    model = robot('talos')
    state = talos_standing_state(model, seed, speed=0.1)
    entries = [
        TaskEntry('com', ComTask(model, [0.02, 0.01, 0.85], kp=50.0, kd=15.0), 0),
        TaskEntry(
            'hand', FramePositionTask(model, 'gripper_left_base_link', [0.4, 0.3, 1.0], kp=40.0), 1
        ),
        TaskEntry('posture', JointPostureTask(model, TALOS_HALF_SITTING, kp=20.0), 2),
    ]
    feet = ('left_sole_link', 'right_sole_link')
    return model, state, entries, [Contact.create(model, foot, 'surface') for foot in feet]


def solo_case(seed: int):
    """Solo12 on its four point feet: the base pose, the posture."""
    model = robot('solo12')
    rng = np.random.default_rng(seed)
    joints = SOLO_STANDING + rng.uniform(-0.1, 0.1, model.n_actuated)
    base = [*rng.uniform(-0.02, 0.02, 2), 0.24, 0.0, 0.0, 0.0, 1.0]
    state = RobotState(model)
    state.update(model.configuration(joints, base), 0.1 * rng.standard_normal(model.nv))
    base_task = FramePoseTask(model, 'base_link', [0.01, -0.02, 0.25, 0.0, 0.0, 0.0, 1.0], kp=40.0)
    entries = [
        TaskEntry('base', base_task, 0),
        TaskEntry('posture', JointPostureTask(model, SOLO_STANDING, kp=20.0), 1),
    ]
    feet = ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')
    return model, state, entries, [Contact.create(model, foot, 'point') for foot in feet]


CASES = {
    'panda': lambda seed: arm_case('panda', 'panda_hand', seed),
    'ur5': lambda seed: arm_case('ur5', 'tool0', seed),
    'talos': talos_case,
    'solo12': solo_case,
}


def oracle_levels(state: RobotState, entries, contacts) -> list[OracleLevel]:
    """The contacts (A q̈ = −Ȧq̇ − K A q̇) as the first level, then the task levels, unit weights.

    K A q̇: the contact velocity's damping (Baumgarte 1972, `contacts.contact_acceleration`).
    A posture's rows are one group, whatever the product's `row_groups` says: the recursion as
    the papers write it, Euclidean within the posture, which the levels above leave
    rank-deficient. A frame task's parts keep the product's unit groups: at full rank their
    scale changes nothing, and near a singularity it decides, as in the product, which
    directions the pseudo-inverse counts as lost.
    """
    levels = []
    if contacts:
        constraint, drift = contact_jacobian(state, contacts)
        target = -drift - CONTACT_VELOCITY_DAMPING * constraint.dot(state.v)
        levels.append(OracleLevel(constraint, target, np.ones(len(drift)), (len(drift),)))
    for priority in sorted({entry.priority for entry in entries}):
        tasks = [entry.task for entry in entries if entry.priority == priority]
        terms = [task.compute(state) for task in tasks]
        jacobian = np.vstack([term.jacobian for term in terms])
        target = np.concatenate([term.desired_acceleration - term.drift for term in terms])
        groups = tuple(
            group
            for task in tasks
            for group in ((task.dim,) if isinstance(task, JointPostureTask) else task.row_groups())
        )
        levels.append(OracleLevel(jacobian, target, np.ones(len(target)), groups))
    return levels


@pytest.mark.parametrize('posture', [True, False], ids=['posture', 'least_energy'])
@pytest.mark.parametrize('name', sorted(CASES))
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_without_active_inequalities_the_cascade_is_the_recursion(name, posture, seed):
    """Without the posture the levels leave directions free: both take the least energy."""
    model, state, entries, contacts = CASES[name](seed)
    if not posture:
        entries = [entry for entry in entries if entry.name != 'posture']
    controller = PrioritizedController(
        model,
        entries,
        singular_value_threshold=BAND,
        effort_limits=np.full(model.n_actuated, 1e9),
        contacts=contacts,
        friction_coefficient=1e3,
    )
    result = controller.compute(state)
    assume(all(level.damped_directions == 0 for level in result.levels))
    assume(all(c.normal_force > 1e-3 for c in result.contacts))  # no pyramid binds
    expected, _, _ = recursion(
        state.inverse_mass_matrix.copy(),
        np.zeros(model.nv),
        oracle_levels(state, entries, contacts),
        BAND,
    )
    scale = 1.0 + np.abs(expected).max()
    np.testing.assert_allclose(result.acceleration, expected, atol=TOLERANCE * scale, rtol=0)
