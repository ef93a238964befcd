"""`ControllerNode` on a floating base (Solo12), in process: odometry pairing, contact health."""

import time

from controller_support import (
    in_process_nodes,
    joint_state,
    node_status,
    set_clock,
    stamp_of,
    values,
)
from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
import numpy as np
import numpy.testing as npt
import pytest
from rclpy.parameter import Parameter
from robots import core_controller, robot
from sensor_msgs.msg import JointState

from wbc_control.control.contact.contacts import holding_torque
from wbc_control.control.prioritized_controller import ControllerResult
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_state import RobotState


@pytest.fixture
def local(probe):
    """ControllerNodes built in this process (`in_process_nodes`)."""
    yield from in_process_nodes()


SOLO_URDF = str(example_robot_urdf('solo12')[0])
FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']
STAND = {'HAA': 0.1, 'HFE': 0.8, 'KFE': -1.6}
BASE_POSE = [0.01, -0.02, 0.22, 0.0, 0.0, np.sin(0.05), np.cos(0.05)]
BASE_TWIST = [0.05, -0.02, 0.01, 0.1, -0.05, 0.2]


def solo_stand() -> np.ndarray:
    """Solo12's standing posture (example-robot-data's SRDF), in model order."""
    positions = []
    for name in robot('solo12').joint_names:
        leg, joint = name.split('_')
        sign = -1.0 if (joint == 'HAA' and leg[1] == 'R') else 1.0
        sign *= -1.0 if (joint != 'HAA' and leg[0] == 'H') else 1.0
        positions.append(sign * STAND[joint])
    return np.array(positions)


def solo_parameters(**overrides) -> dict:
    parameters = {
        'urdf_path': SOLO_URDF,
        'floating_base': True,
        'contacts': FEET,
        'contact_types': ['point'] * 4,
        'odom_pairing': 'stamp',
        'joint_state_timeout': 1.0,  # stamps are judged against the node's clock
        'soft_start_time': 0.0,
        'joint_limits': False,
        'task_names': ['base', 'posture'],
        'tasks': {
            'base': {
                'type': 'frame_pose',
                'frame': 'base_link',
                'kp': 100.0,
                'target': [0.0, 0.0, 0.22, 0.0, 0.0, 0.0, 1.0],
            },
            'posture': {
                'type': 'joint_posture',
                'priority': 1,
                'kp': 10.0,
                'target': solo_stand().tolist(),
            },
        },
    }
    parameters.update(overrides)
    return parameters


def solo_joint_state(stamp_s: float, seed: int = 0) -> JointState:
    rng = np.random.default_rng(seed)
    positions = solo_stand() + 0.05 * rng.uniform(-1.0, 1.0, 12)
    names = list(robot('solo12').joint_names)
    return joint_state(names, positions, 0.1 * rng.standard_normal(12), stamp_of(stamp_s))


def odometry(stamp_s: float, pose=BASE_POSE, frame: str = 'odom') -> Odometry:
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_of(stamp_s)
    msg.header.frame_id, msg.child_frame_id = frame, 'base_link'
    position, orientation = msg.pose.pose.position, msg.pose.pose.orientation
    position.x, position.y, position.z = (float(x) for x in pose[:3])
    orientation.x, orientation.y, orientation.z, orientation.w = (float(x) for x in pose[3:])
    linear, angular = msg.twist.twist.linear, msg.twist.twist.angular
    linear.x, linear.y, linear.z = BASE_TWIST[:3]
    angular.x, angular.y, angular.z = BASE_TWIST[3:]
    return msg


def solo_core_result(parameters: dict, msg: JointState) -> ControllerResult:
    """What the core computes for Solo12 at `msg` and BASE_POSE / BASE_TWIST."""
    solo = robot('solo12')
    state = RobotState(solo)
    index = solo.joint_index(msg.name)
    q = solo.configuration(np.asarray(msg.position)[index], BASE_POSE)
    state.update(q, solo.velocity(np.asarray(msg.velocity)[index], BASE_TWIST))
    return core_controller(solo, parameters).compute(state)


def test_stamp_pairing_ticks_once_with_the_odometry_of_the_same_stamp(local):
    parameters = solo_parameters()
    node, published = local(parameters, clock_s=100.0)
    first = solo_joint_state(100.0, seed=1)
    node._on_joint_state(first)
    node._on_odom(odometry(99.5))
    assert published == []  # neither stamp has both halves
    node._on_odom(odometry(100.0))
    assert len(published) == 1
    result = solo_core_result(parameters, first)
    npt.assert_allclose(published[0], result.torque, rtol=1e-9, atol=1e-9)
    set_clock(node, 100.01)
    node._on_odom(odometry(100.01))  # odometry first, then its joint state
    node._on_joint_state(solo_joint_state(100.01, seed=2))
    assert len(published) == 2
    contacts = values(node_status(node, 'contacts'))
    assert float(contacts['FL_FOOT.normal_force_n']) > 0.0
    assert float(contacts['base_wrench_residual']) < 1e-6


def test_a_held_first_state_is_answered_again_once_the_watchdog_expired(local, monkeypatch):
    """A simulator holding its first state (stamp 0) is answered again after a stale period.

    wbc_sim with `hold_until_commanded` re-sends that state until a non-zero command arrives.
    If the answer to it was lost (DDS had not matched the simulator yet, on a loaded machine),
    the controller answered nothing more and both waited for ever (a launch test under load:
    700 zero commands in 45 s).
    """
    node, published = local(solo_parameters(), clock_s=0.0)
    node._on_joint_state(solo_joint_state(0.0))
    node._on_odom(odometry(0.0))
    assert len(published) == 1 and np.any(published[0])  # this answer is lost
    node._on_joint_state(solo_joint_state(0.0))
    node._on_odom(odometry(0.0))
    assert len(published) == 1  # a re-send: no second tick while the first is fresh
    start = time.monotonic()
    for check in range(1, 41):  # the clock stands; wall time runs, checked every 50 ms
        monkeypatch.setattr(time, 'monotonic', lambda check=check: start + 0.05 * check)
        node._on_watchdog()
        if len(published) > 1:
            break
    assert len(published) == 2 and not np.any(published[1])  # the zero safe command
    node._on_joint_state(solo_joint_state(0.0))
    node._on_odom(odometry(0.0))
    assert len(published) == 3 and np.any(published[2])  # answered again


def test_latest_pairing_needs_fresh_odometry(local):
    parameters = solo_parameters(odom_pairing='latest', joint_state_timeout=0.05)
    node, published = local(parameters, clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    assert published == []  # no odometry yet
    node._on_odom(odometry(100.0))
    for seconds in (100.01, 100.02):
        set_clock(node, seconds)
        node._on_joint_state(solo_joint_state(seconds))
    assert len(published) == 2
    set_clock(node, 100.1)
    node._on_joint_state(solo_joint_state(100.1))
    assert len(published) == 2  # odometry too old: the watchdog's safe command takes over
    node._on_watchdog()
    npt.assert_array_equal(published[-1], np.zeros(12))
    inputs = node_status(node, 'inputs')
    assert inputs.level == DiagnosticStatus.ERROR and 'odom' in inputs.message
    assert float(values(inputs)['odom_age_s']) == pytest.approx(0.1, abs=1e-9)


def test_bad_odometry_is_rejected_and_counted(local):
    node, published = local(solo_parameters(), clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    node._on_odom(odometry(100.0, pose=[0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.5]))
    node._on_odom(odometry(100.0, pose=[np.nan, 0.0, 0.2, 0.0, 0.0, 0.0, 1.0]))
    node._on_odom(odometry(100.0, frame='map'))
    assert published == []
    inputs = values(node_status(node, 'inputs'))
    assert inputs['rejected.odom.quaternion'] == inputs['rejected.odom.non_finite'] == '1'
    assert inputs['rejected.odom.frame'] == '1'


def test_contacts_warn_outside_a_cone_nothing_meets_and_a_target_that_would_pull_gives_way(local):
    """A cone no force fits is reported; a target that would need pulling feet gives way.

    μ = 1e-6 leaves no force for the base offset to hold: reported. A base target the feet
    would have to pull for is not met: its level's residual shows it, and no foot pulls.
    """
    node, _ = local(solo_parameters(), clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    node._on_odom(odometry(100.0))
    assert node_status(node, 'contacts').level == DiagnosticStatus.OK
    (changed,) = node.set_parameters([Parameter('friction_coefficient', value=1e-6)])
    assert changed.successful
    node._loop.statistics.start_period(time.monotonic())
    set_clock(node, 100.01)
    node._on_joint_state(solo_joint_state(100.01))
    node._on_odom(odometry(100.01))
    status = node_status(node, 'contacts')
    assert status.level == DiagnosticStatus.WARN
    assert 'outside the friction cone' in status.message
    assert values(status)['friction_coefficient'] == '1e-06'
    assert node.set_parameters([Parameter('friction_coefficient', value=0.8)])[0].successful
    # A base target 1 m underground asks for more than free fall: the feet would have to pull.
    sink = [0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0]
    assert node.set_parameters([Parameter('tasks.base.target', value=sink)])[0].successful
    set_clock(node, 100.02)
    node._on_joint_state(solo_joint_state(100.02))
    node._on_odom(odometry(100.02))
    contacts = values(node_status(node, 'contacts'))
    pulling = {k: v for k, v in contacts.items() if k.endswith('.pulling')}
    assert len(pulling) == 4 and set(pulling.values()) == {'False'}
    tasks = values(node_status(node, 'tasks'))
    (base_level,) = [
        k[: -len('.tasks')]
        for k, v in tasks.items()
        if k.endswith('.tasks') and 'base' in v.split(',')
    ]
    assert float(tasks[f'{base_level}.residual']) > 1.0  # m/s², rad/s²: the sink is not met


def test_the_gravity_safe_command_of_a_floating_base_is_balanced_by_the_contacts(local):
    # A timeout that no pause of this test reaches (the watchdog also runs on the wall clock).
    parameters = solo_parameters(stale_command='gravity', joint_state_timeout=600.0)
    node, published = local(parameters, clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    node._on_odom(odometry(100.0))
    node._on_watchdog()  # never stale here: nothing published
    assert len(published) == 1
    loop = node._loop
    expected = holding_torque(loop.state, loop.controller.contacts)
    npt.assert_allclose(loop.safe_torque(), expected, rtol=1e-12)
    assert not np.allclose(expected, loop.state.gravity[6:])
