"""The `wbc_controller` console script over real DDS: torques, bad inputs, live tuning, safety.

Each node runs as a subprocess started from its console script; the test process talks to it
through an rclpy probe node. Nodes that several tests share are module-scoped. In-process
checks are in test_controller_in_process.py and test_floating_base_node.py.
"""

import re
import signal
import time

from controller_support import (
    ANSWER_TIMEOUT_S,
    COMMON,
    COMPENSATED,
    CONFIG,
    JOINTS,
    POSTURE,
    POSTURE_TIMEOUT_S,
    READY,
    STALE_TIMEOUT_S,
    START_TIMEOUT_S,
    ZERO,
    Controller,
    changed_from,
    equal_to,
    joint_state,
    near_ready,
    stamp_of,
    values,
)
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped
import numpy as np
import numpy.testing as npt
from panda_example import core_result, example_parameters
import pinocchio as pin
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from robots import robot
from ros_support import NodeProcess
from sensor_msgs.msg import JointState

from wbc_control.model.example_robots import example_robot_urdf

FAILING_STARTS = {
    'no-model': ({'urdf_path': ''}, ['robot_description', 'urdf_path']),
    'unknown-frame': (
        {'tasks': {'posture': {'type': 'frame_pose', 'frame': 'gripper', 'kp': 1.0}}},
        ['tasks.posture.frame', "'gripper'", 'panda_hand'],
    ),
    'unknown-joint': (
        {'command_joints': ['panda_joint1', 'wrist']},
        ['command_joints', "'wrist'"],
    ),
    'floating-base-without-contacts': (
        {'urdf_path': str(example_robot_urdf('solo12')[0]), 'floating_base': True},
        ['floating_base: true needs contacts', 'contacts: ['],
    ),
    'contact-frame': ({'contacts': ['panda_hand', 'foot']}, ['contacts:', "'foot'"]),
    'contact-type': (
        {'contacts': ['panda_hand'], 'contact_types': ['edge']},
        ['contact_types:', "panda_hand: 'edge'", 'surface, point'],
    ),
    'field-typo': (
        {'tasks': {'posture': {'type': 'joint_posture', 'kP': 1.0}}},
        ['tasks.posture.kP', 'unknown field'],
    ),
    'setting-typo': (
        {'stale_comand': 'gravity'},
        ["unknown parameter 'stale_comand'; did you mean 'stale_command'?"],
    ),
    'timeout-typo': (
        {'joint_state_timout': 0.02},
        ["unknown parameter 'joint_state_timout'; did you mean 'joint_state_timeout'?"],
    ),
    'unlisted-task': (
        {'tasks': {**POSTURE['tasks'], 'elbow': {'type': 'joint_posture', 'kp': 1.0}}},
        ["unknown parameter 'tasks.elbow.", 'task_names'],
    ),
    'negative-soft-stop': ({'soft_stop_time': -0.1}, ['soft_stop_time', '>= 0']),
    'payload-frame': (
        {'payload': {'frame': 'gripper', 'mass': 1.0}},
        ["payload.frame: frame 'gripper'", 'panda_hand_tcp'],
    ),
    'command-line-typo': (
        {},
        ["unknown parameter 'stale_comand'; did you mean 'stale_command'?"],
        ['-p', 'stale_comand:=gravity'],
    ),
}


@pytest.fixture(scope='module')
def nodes(probe):
    """Every process of this module, started together so that their start-ups overlap."""
    started = {
        'posture': Controller(
            probe,
            '/posture',
            'posture_controller',
            {**COMMON, **POSTURE, 'joint_state_timeout': POSTURE_TIMEOUT_S},
        ),
        # The shipped Panda example (hand pose over posture), commanding all nine joints.
        'example': Controller(
            probe,
            '/',
            'wbc_controller',
            COMMON,
            [
                '--params-file',
                str(CONFIG),
                '-p',
                f'command_joints:=[{", ".join(JOINTS)}]',
                # exact torques: no soft start, no rate limit between test states
                '-p',
                'soft_start_time:=0.0',
                '-p',
                'torque_rate_limit:=0.0',
                '-p',
                'joint_limits:=false',
            ],
        ),
        'stale': Controller(
            probe,
            '/stale',
            'stale_controller',
            {**COMMON, **POSTURE, 'joint_state_timeout': STALE_TIMEOUT_S},
        ),
        'SIGINT': Controller(probe, '/sigint', 'sigint_controller', {**COMMON, **POSTURE}),
        'SIGTERM': Controller(probe, '/sigterm', 'sigterm_controller', {**COMMON, **POSTURE}),
        'gravity': Controller(
            probe,
            '/gravity',
            'gravity_controller',
            {**COMMON, **POSTURE, **COMPENSATED},
        ),
    }
    for key, (parameters, _, *extra_args) in FAILING_STARTS.items():
        parameters = {**COMMON, **POSTURE, **parameters}
        process = NodeProcess('wbc_controller', parameters, None, *extra_args)
        started[key] = process.__enter__()
    yield started
    for node in started.values():
        node.stop()


@pytest.fixture(scope='module')
def posture(nodes):
    """A posture-only controller (computed torque) on all nine joints."""
    return nodes['posture'].wait_ready()


@pytest.fixture(scope='module')
def example(nodes):
    """The shipped Panda example (hand pose over posture), commanding all nine joints."""
    return nodes['example'].wait_ready()


# Torques ------------------------------------------------------------------------------------


def test_posture_only_torque_is_the_core_result_and_computed_torque(posture):
    positions, velocities = near_ready(1)
    command = posture.torque_for(joint_state(JOINTS, positions, velocities))
    expected = core_result({**COMMON, **POSTURE}, positions, velocities)
    assert not expected.saturated.any()
    npt.assert_allclose(command, expected.torque, rtol=1e-9, atol=1e-9)
    # Independent: τ = M (kp e − kd v) + h with Pinocchio's CRBA and RNEA.
    model = robot('panda').model
    data = model.createData()
    q = robot('panda').configuration(positions)
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    h = pin.rnea(model, data, q, velocities, np.zeros(9))
    npt.assert_allclose(command, mass @ (25.0 * (READY - positions) - 10.0 * velocities) + h)


def test_top_task_acceleration_is_achieved_exactly(example):
    positions, velocities = near_ready(3, spread=0.03, speed=0.05)
    command = example.torque_for(joint_state(JOINTS, positions, velocities))
    parameters = {**example_parameters(), **COMMON, 'command_joints': JOINTS}
    parameters['torque_rate_limit'] = 0.0
    expected = core_result(parameters, positions, velocities)
    assert not expected.saturated.any()
    npt.assert_allclose(command, expected.torque, rtol=1e-9, atol=1e-9)
    # Independent: q̈ = M⁻¹(τ − h) by ABA, then J q̈ + J̇v = ẍ* for the hand pose.
    model = robot('panda').model
    data = model.createData()
    q = robot('panda').configuration(positions)
    acceleration = pin.aba(model, data, q, velocities, command)
    hand = model.getFrameId('panda_hand')
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    jacobian = pin.computeFrameJacobian(model, data, q, hand, world)
    pin.forwardKinematics(model, data, q, velocities, np.zeros(9))
    pin.updateFramePlacements(model, data)
    drift = pin.getFrameClassicalAcceleration(model, data, hand, world).vector
    oMhand = data.oMf[hand]
    target = example_parameters()['tasks']['hand']['target']
    x, y, z, w = target[3:]
    error = np.concatenate(
        [
            np.array(target[:3]) - oMhand.translation,
            pin.log3(pin.Quaternion(w, x, y, z).toRotationMatrix() @ oMhand.rotation.T),
        ]
    )
    kp = np.array(example_parameters()['tasks']['hand']['kp'])
    desired = kp * error - 2.0 * np.sqrt(kp) * (jacobian @ velocities)
    npt.assert_allclose(jacobian @ acceleration + drift, desired, atol=1e-6)


def test_joint_order_and_extra_joints_do_not_matter(posture):
    positions, velocities = near_ready(3)
    reference = posture.torque_for(joint_state(JOINTS, positions, velocities))
    order = np.random.default_rng(0).permutation(9)
    names = [JOINTS[i] for i in order] + ['conveyor_joint']
    shuffled = joint_state(names, [*positions[order], 1.0], [*velocities[order], 0.5])
    npt.assert_allclose(posture.torque_for(shuffled), reference, rtol=1e-12, atol=1e-12)


def counters(controller: Controller) -> dict[str, int]:
    """The node's counters now: rejected inputs by reason, non-finite torques, compute errors."""
    statuses = controller.diagnostics(lambda s: {'inputs', 'torques'} <= set(s))
    inputs, torques = values(statuses['inputs']), values(statuses['torques'])
    counted = {key: int(value) for key, value in inputs.items() if key.startswith('rejected.')}
    for key in ('non_finite_torques', 'compute_errors'):
        counted[key] = int(torques[key])
    return counted


def wait_rejected(controller: Controller, reasons: tuple[str, ...], at_least: int) -> None:
    """Until the node has counted `at_least` joint states rejected for one of `reasons`."""

    def counted(statuses: dict) -> bool:
        inputs = values(statuses['inputs']) if 'inputs' in statuses else {}
        keys = [f'rejected.joint_states.{reason}' for reason in reasons]
        return sum(int(inputs.get(key, 0)) for key in keys) >= at_least

    controller.diagnostics(counted)


def rejected(counted: dict[str, int], reasons: tuple[str, ...]) -> int:
    return sum(counted.get(f'rejected.joint_states.{reason}', 0) for reason in reasons)


def assert_nothing_answered(caused: list[np.ndarray], controller: Controller) -> None:
    """No command but the safe one (zero: the watchdog's, had the node gone stale meanwhile)."""
    answers = [command for command in caused if not np.array_equal(command, ZERO)]
    assert answers == [], f'a rejected state was answered:\n{controller.process.output()}'


@pytest.mark.parametrize(
    'reason, make',
    [
        ('joints', lambda q, v: joint_state(JOINTS[1:], q[1:], v[1:])),
        ('non_finite', lambda q, v: joint_state(JOINTS, [np.nan, *q[1:]], v)),
        ('non_finite', lambda q, v: joint_state(JOINTS, q, [*v[:8], np.inf])),
        ('ragged', lambda q, v: joint_state(JOINTS, q[:8], v)),
        ('ragged', lambda q, v: joint_state(JOINTS, q, [])),
    ],
    ids=['missing-joint', 'nan-position', 'inf-velocity', 'ragged-positions', 'no-velocities'],
)
def test_bad_joint_states_never_reach_the_output(posture, reason, make):
    positions, velocities = near_ready(4)
    posture.torque_for(joint_state(JOINTS, positions, velocities))
    before = counters(posture)
    posture.commands.clear()
    bad = make(positions, velocities)
    for _ in range(3):
        posture.publish(bad)
    wait_rejected(posture, (reason,), rejected(before, (reason,)) + 1)
    # A good state after the bad ones: once it is answered, the bad ones were handled.
    marker = near_ready(22)
    expected = core_result({**COMMON, **POSTURE}, *marker).torque
    caused = posture.commands_before_answer(joint_state(JOINTS, *marker), equal_to(expected))
    assert_nothing_answered(caused, posture)
    after = counters(posture)
    for key in ('non_finite_torques', 'compute_errors'):
        assert after[key] == before[key], f'{key}: {before[key]} -> {after[key]}'
    assert posture.process.alive()


def test_old_stamps_are_dropped(posture):
    early, late = near_ready(5), near_ready(6)
    dropped = ('out_of_order',)
    # Stamps are judged against the node's clock: POSTURE_TIMEOUT_S bounds this test's length.
    now_s = time.time()
    posture.torque_for(joint_state(JOINTS, *late, stamp=stamp_of(now_s)))
    before = rejected(counters(posture), dropped)
    posture.commands.clear()
    # One at a time (the node keeps only the newest state), each until the node counted it.
    for count, (state, stamp_s) in enumerate(((early, now_s - 1.0), (late, now_s)), 1):
        posture.publish(joint_state(JOINTS, *state, stamp=stamp_of(stamp_s)))
        wait_rejected(posture, dropped, before + count)
    marker = near_ready(22)
    expected = core_result({**COMMON, **POSTURE}, *marker).torque
    caused = posture.commands_before_answer(
        lambda: joint_state(JOINTS, *marker, stamp=stamp_of(time.time())), equal_to(expected)
    )
    assert_nothing_answered(caused, posture)
    expected = core_result({**COMMON, **POSTURE}, *early).torque
    newer = joint_state(JOINTS, *early, stamp=stamp_of(time.time()))
    npt.assert_allclose(posture.torque_for(newer), expected, rtol=1e-9, atol=1e-9)
    assert posture.process.alive()


# Live parameters and targets ----------------------------------------------------------------


def test_a_live_gain_change_changes_the_torque(posture):
    state = joint_state(JOINTS, *near_ready(7))
    before = posture.torque_for(state)
    assert posture.set_parameters(tasks__posture__kp=[40.0] * 9)[0].successful
    after = posture.command_after(state, changed_from(before))
    parameters = {**COMMON, **POSTURE}
    parameters['tasks'] = {'posture': {**POSTURE['tasks']['posture'], 'kp': [40.0] * 9}}
    npt.assert_allclose(after, core_result(parameters, *near_ready(7)).torque, atol=1e-9)
    assert posture.set_parameters(tasks__posture__kp=25.0)[0].successful


@pytest.mark.parametrize(
    'name, value, words',
    [
        ('tasks.posture.kp', -1.0, ['tasks.posture.kp', 'non-negative']),
        ('tasks.posture.kp', float('nan'), ['tasks.posture.kp', 'non-finite']),
        ('tasks.posture.kd', [1.0, 2.0], ['tasks.posture.kd', '9 values']),
        ('tasks.posture.target', [0.0] * 9, ['panda_joint4']),
        ('tasks.posture.weight', 0.0, ['tasks.posture.weight']),
        ('tasks.posture.kp', 'stiff', ['tasks.posture.kp', 'number']),
        ('singular_value_threshold', 2.0, ['singular_value_threshold']),
        ('stale_command', 'hold', ['stale_command', 'zero, gravity']),
        ('tasks.posture.priority', 3, ['read-only']),
        ('joint_state_timeout', 1.0, ['read-only']),
        ('tasks.elbow.kp', 1.0, ["unknown parameter 'tasks.elbow.kp'"]),
        ('stale_comand', 'gravity', ["unknown parameter 'stale_comand'", "'stale_command'?"]),
        ('payload.frame', 'gripper', ["payload.frame: frame 'gripper'", 'panda_hand_tcp']),
        ('payload.mass', 1.0, ['payload.frame', 'needs the frame']),
        ('payload.mass', -1.0, ['payload.mass', '>= 0']),
        ('payload.inertia', [0.01, 0.0, 0.0, 0.01, 0.0, 0.03], ['payload.inertia', 'rigid']),
    ],
)
def test_invalid_live_changes_are_rejected_and_the_old_value_kept(posture, name, value, words):
    old = posture.get_parameter(name)
    (result,) = posture.set_parameters(**{name.replace('.', '__'): value})
    assert not result.successful
    for word in words:
        assert word in result.reason
    assert posture.get_parameter(name) == old
    state = joint_state(JOINTS, *near_ready(8))
    expected = core_result({**COMMON, **POSTURE}, *near_ready(8)).torque
    npt.assert_allclose(posture.torque_for(state), expected, rtol=1e-9, atol=1e-9)


def test_a_live_set_of_an_unknown_parameter_is_refused_naming_it_and_logged(posture, probe):
    (result,) = posture.set_parameters(tasks__elbow__kp=1.0)
    assert not result.successful
    assert result.reason == "unknown parameter 'tasks.elbow.kp'; did you mean 'tasks.posture.kp'?"
    logged = f'parameter change rejected: {result.reason}'
    assert probe.spin_until(lambda: logged in posture.process.output(), 10.0), (
        posture.process.output()
    )


def test_a_posture_target_topic_changes_the_torque(posture, probe):
    publisher = probe.publisher(JointState, posture.topic_prefix + 'posture/target')
    assert probe.spin_until(lambda: publisher.get_subscription_count() > 0)
    state = joint_state(JOINTS, *near_ready(9))
    before = posture.torque_for(state)
    target = READY.copy()
    target[[0, 2]] = [0.3, -0.2]
    publisher.publish(joint_state(['panda_joint3', 'panda_joint1'], [-0.2, 0.3], []))
    after = posture.command_after(state, changed_from(before))
    parameters = {**COMMON, **POSTURE}
    parameters['tasks'] = {'posture': {**POSTURE['tasks']['posture'], 'target': target}}
    npt.assert_allclose(after, core_result(parameters, *near_ready(9)).torque, atol=1e-9)
    publisher.publish(joint_state(JOINTS, READY, []))
    posture.command_after(state, lambda command: np.allclose(command, before, atol=1e-9))


def pose(frame_id: str, xyz, xyzw) -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = xyz
    orientation = msg.pose.orientation
    orientation.x, orientation.y, orientation.z, orientation.w = xyzw
    return msg


def test_a_pose_target_changes_the_torque_and_a_wrong_frame_is_rejected(example, probe):
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
    publisher = probe.publisher(PoseStamped, '/wbc_controller/hand/target', qos)
    assert probe.spin_until(lambda: publisher.get_subscription_count() > 0)
    positions, velocities = near_ready(10, spread=0.05)
    state = joint_state(JOINTS, positions, velocities)
    before = example.torque_for(state)
    publisher.publish(pose('panda_hand', [0.32, 0.02, 0.58], [1.0, 0.0, 0.0, 0.0]))
    inputs = example.diagnostics(lambda s: 'rejected.targets.frame' in values(s['inputs']))
    assert values(inputs['inputs'])['rejected.targets.frame'] == '1'
    npt.assert_allclose(example.torque_for(state), before, rtol=1e-12)

    publisher.publish(pose('panda_link0', [0.32, 0.02, 0.58], [1.0, 0.0, 0.0, 0.0]))
    after = example.command_after(state, changed_from(before))
    parameters = {**example_parameters(), **COMMON, 'command_joints': JOINTS}
    parameters['torque_rate_limit'] = 0.0
    parameters['tasks']['hand']['target'] = [0.32, 0.02, 0.58, 1.0, 0.0, 0.0, 0.0]
    npt.assert_allclose(after, core_result(parameters, positions, velocities).torque, atol=1e-9)


def test_diagnostics_report_tasks_inputs_and_torques(example):
    example.torque_for(joint_state(JOINTS, *near_ready(11, spread=0.05)))
    statuses = example.diagnostics(lambda s: {'tasks', 'inputs', 'torques'} <= set(s))
    tasks, inputs, torques = statuses['tasks'], statuses['inputs'], statuses['torques']
    assert {status.hardware_id for status in statuses.values()} == {'panda'}
    keys = set(values(tasks))
    assert {'hand.error_norm', 'posture.error_norm', 'level_0.tasks', 'level_1.tasks'} <= keys
    for level in (0, 1):
        assert {f'level_{level}.condition_number', f'level_{level}.damped_directions'} <= keys
    assert float(values(tasks)['level_0.condition_number']) >= 1.0
    assert {'stale', 'joint_state_age_s', 'joint_state_rate_hz'} <= set(values(inputs))
    assert {
        'saturated_joints',
        'non_finite_torques',
        'compute_time_ms.last',
        'compute_time_ms.mean',
        'compute_time_ms.max',
    } <= set(values(torques))
    assert torques.message


# Stale input --------------------------------------------------------------------------------


def watchdog_ages(output: str) -> list[float]:
    """The state ages the watchdog logged when it switched to the safe command (s)."""
    return [float(age) for age in re.findall(r'no valid joint state for ([0-9.]+) s', output)]


def wait_safe_command(controller: Controller, safe: np.ndarray, after: np.ndarray) -> None:
    """Until the watchdog's safe command arrives after the last command equal to `after`."""

    def arrived() -> bool:
        sent = [command for _, command in controller.commands]
        last = max(i for i, c in enumerate(sent) if np.allclose(c, after, rtol=1e-9, atol=1e-9))
        return any(np.allclose(c, safe, atol=1e-9) for c in sent[last + 1 :])

    assert controller.probe.spin_until(arrived, ANSWER_TIMEOUT_S), (
        f'no safe command within {ANSWER_TIMEOUT_S} s of the last joint state'
    )


def test_a_silent_publisher_gets_the_safe_command_not_the_last_torque(nodes, probe):
    controller = nodes['stale'].wait_ready()
    positions, velocities = near_ready(12)
    task_torque = controller.torque_for(joint_state(JOINTS, positions, velocities))
    wait_safe_command(controller, ZERO, after=task_torque)
    inputs = controller.diagnostics(lambda s: values(s['inputs'])['stale'] == 'True')
    assert inputs['inputs'].level == DiagnosticStatus.ERROR
    assert float(values(inputs['inputs'])['joint_state_age_s']) > STALE_TIMEOUT_S
    # Since the task torque: only it (re-sent states) and then only the safe command.
    sent = [command for _, command in controller.commands]
    last_task = max(i for i, c in enumerate(sent) if np.allclose(c, task_torque, rtol=1e-9))
    assert all(np.allclose(c, task_torque, rtol=1e-9) or np.array_equal(c, ZERO) for c in sent)
    assert all(np.array_equal(c, ZERO) for c in sent[last_task + 1 :])
    # Not before the timeout: the node logs how old the state was when it switched.
    assert probe.spin_until(lambda: watchdog_ages(controller.process.output()), 10.0)
    ages = watchdog_ages(controller.process.output())
    assert min(ages) >= STALE_TIMEOUT_S - 1e-3, ages  # printed to 1 ms

    assert controller.set_parameters(stale_command='gravity')[0].successful
    try:
        panda = robot('panda')
        gravity = pin.computeGeneralizedGravity(
            panda.model, panda.model.createData(), panda.configuration(positions)
        )
        wait_safe_command(controller, gravity, after=ZERO)
        npt.assert_allclose(controller.commands[-1][1], gravity, rtol=1e-9, atol=1e-9)

        resumed = controller.command_after(
            joint_state(JOINTS, positions, velocities), lambda c: not np.allclose(c, gravity)
        )
        npt.assert_allclose(resumed, task_torque, rtol=1e-9)
    finally:  # the node outlives the test (module scope): as it was, for a repeat of it
        assert controller.set_parameters(stale_command='zero')[0].successful


# A robot that compensates gravity itself -----------------------------------------------------


def test_a_robot_that_compensates_gravity_is_sent_tau_minus_gravity(nodes, probe):
    controller = nodes['gravity'].wait_ready()
    positions, velocities = near_ready(21, speed=0.05)
    command = controller.torque_for(joint_state(JOINTS, positions, velocities))
    expected = core_result({**COMMON, **POSTURE}, positions, velocities)
    assert not expected.saturated.any()
    panda = robot('panda')
    gravity = pin.computeGeneralizedGravity(
        panda.model, panda.model.createData(), panda.configuration(positions)
    )
    npt.assert_allclose(command, expected.torque - gravity, rtol=1e-9, atol=1e-9)
    # Stale: the gravity safe command is what holds the arm, minus what the robot adds: zero.
    wait_safe_command(controller, ZERO, after=command)
    npt.assert_allclose(controller.commands[-1][1], ZERO, atol=1e-9)


# Start-up and shutdown ----------------------------------------------------------------------


@pytest.mark.parametrize('key', FAILING_STARTS)
def test_bad_configurations_exit_non_zero_naming_the_problem(nodes, key):
    code = nodes[key].wait(START_TIMEOUT_S)
    output = nodes[key].output()
    assert code != 0, output
    for word in FAILING_STARTS[key][1]:
        assert word in output, output
    assert 'Traceback' not in output
    if 'unknown parameter' in FAILING_STARTS[key][1][0]:
        assert output.count('unknown parameter') == 1, output  # one line


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_ctrl_c_and_sigterm_exit_cleanly(nodes, sig):
    controller = nodes[sig.name].wait_ready()
    controller.torque_for(joint_state(JOINTS, *near_ready(13)))
    code = controller.stop(sig)
    output = controller.process.output()
    assert code == 0, output
    assert 'Traceback' not in output and 'Error' not in output, output
