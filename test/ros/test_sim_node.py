"""`wbc_sim` over real DDS: topics, lock-step semantics, bad commands, start-up and shutdown."""

from collections.abc import Iterator
from pathlib import Path
import signal
import time

from nav_msgs.msg import Odometry
import numpy as np
import pinocchio as pin
import pytest
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from ros_support import NodeProcess, RosProbe, named_probe, stamp_s
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.payload import Payload
from wbc_control.model.robot_model import RobotModel

PANDA_READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
# Start-up of a node process (imports, model, DDS discovery): generous for a loaded machine.
START_TIMEOUT_S = 120.0
# Upper bound of a wait for the running simulator (wall clock; generous for a loaded machine).
WAIT_S = 30.0
# Every state the simulator publishes, even if this process falls behind for a while.
ALL_STATES = 10_000


@pytest.fixture(scope='module')
def panda() -> RobotModel:
    return RobotModel.from_urdf_path(example_robot_urdf('panda')[0])


@pytest.fixture
def probe(request) -> Iterator[RosProbe]:
    """A new probe node for each test."""
    yield from named_probe(request)


def panda_parameters(**overrides) -> dict:
    parameters = {
        'urdf_path': str(example_robot_urdf('panda')[0]),
        'initial_positions': PANDA_READY,
    }
    parameters.update(overrides)
    return parameters


def lockstep_parameters(**overrides) -> dict:
    lockstep = {
        'lockstep': True,
        'timestep': 0.001,
        'control_period': 0.004,
        'lockstep_resend_period': 0.5,
        'real_time_factor': 0.0,  # as fast as the commands come
    }
    return panda_parameters(**{**lockstep, **overrides})


def command_publisher(probe: RosProbe):
    """A command publisher the simulator has discovered."""
    publisher = probe.publisher(Float64MultiArray, 'effort_controller/commands')
    assert probe.spin_until(lambda: publisher.get_subscription_count() > 0, START_TIMEOUT_S)
    return publisher


def wait_resent(probe: RosProbe, states: list, stamp: float, sim: NodeProcess) -> None:
    """Until the state of simulated time `stamp` arrived twice (sent, then re-sent)."""
    assert probe.spin_until(
        lambda: sum(stamp_s(state) == pytest.approx(stamp) for state in states) >= 2, WAIT_S
    ), f'the state at {stamp} s was not re-sent within {WAIT_S} s:\n{sim.output()}'


def gravity_torque(robot: RobotModel, state: JointState) -> list[float]:
    q = robot.configuration(np.asarray(state.position)[robot.joint_index(state.name)])
    return pin.computeGeneralizedGravity(robot.model, robot.model.createData(), q).tolist()


def test_publishes_joint_states_and_clock(probe: RosProbe, panda: RobotModel) -> None:
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    clocks = probe.subscribe(Clock, '/clock')
    with NodeProcess('wbc_sim', panda_parameters()) as sim:
        assert probe.spin_until(lambda: len(states) > 20 and len(clocks) > 20, START_TIMEOUT_S), (
            sim.output()
        )
    last = states[-1]
    assert list(last.name) == list(panda.joint_names)
    assert len(last.position) == len(last.velocity) == len(last.effort) == panda.n_actuated
    assert not any(last.effort)  # no command yet: zero torque
    stamps = [stamp_s(state) for state in states]
    assert all(later > earlier for earlier, later in zip(stamps, stamps[1:]))
    assert np.diff(stamps).min() == pytest.approx(0.002)  # publish_rate 500 Hz of sim time
    clock_s = [c.clock.sec + 1e-9 * c.clock.nanosec for c in clocks]
    assert clock_s[-1] > clock_s[0]


def test_lockstep_one_command_advances_one_control_period(
    probe: RosProbe, panda: RobotModel
) -> None:
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    clocks = probe.subscribe(Clock, '/clock')
    with NodeProcess('wbc_sim', lockstep_parameters()) as sim:
        publisher = command_publisher(probe)  # lockstep starts once a controller connects
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        # Without a command the simulator waits: it re-sends the first state (every 0.5 s).
        wait_resent(probe, states, 0.0, sim)
        assert {stamp_s(state) for state in states} == {0.0}
        publisher.publish(Float64MultiArray(data=gravity_torque(panda, states[0])))
        # One command, one control period; then it waits again, re-sending that state.
        wait_resent(probe, states, 0.004, sim)
        assert sim.alive()
    assert sorted({stamp_s(state) for state in states}) == [0.0, pytest.approx(0.004)]
    assert max(c.clock.sec + 1e-9 * c.clock.nanosec for c in clocks) == pytest.approx(0.004)
    advanced = next(state for state in states if stamp_s(state) > 0.0)
    np.testing.assert_allclose(advanced.effort, gravity_torque(panda, states[0]))


def test_lockstep_keeps_to_its_real_time_factor(probe: RosProbe) -> None:
    """Answered at once, states come no faster than `real_time_factor` × wall time.

    An upper bound on the simulated time only: a loaded machine may run slower, never faster.
    """
    factor, answered = 0.5, 150  # 0.6 s of simulated time: at least 1.2 s of wall time
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    parameters = lockstep_parameters(real_time_factor=factor, lockstep_resend_period=0.0)
    with NodeProcess('wbc_sim', parameters) as sim:
        publisher = command_publisher(probe)
        zero = Float64MultiArray(data=[0.0] * 9)
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        start_s = time.monotonic()
        for count in range(1, answered + 1):
            publisher.publish(zero)
            heard = probe.spin_until(lambda n=count: len(states) > n, WAIT_S)
            assert heard, f'no state {count} within {WAIT_S} s:\n{sim.output()}'
        wall_s = time.monotonic() - start_s
    simulated_s = stamp_s(states[answered]) - stamp_s(states[0])
    assert simulated_s == pytest.approx(answered * 0.004)
    # The first state after the clock starts is due at once: one period of slack.
    assert simulated_s <= factor * wall_s + 0.004, (simulated_s, wall_s)


def test_lockstep_ignores_a_command_before_its_first_state(probe: RosProbe) -> None:
    """A command before the first state answers nothing (a starting controller's safe command).

    The command publisher connects first; without a joint_states subscriber the simulator has
    not started, so the command must not step it: the first state heard has stamp 0. The
    command is sent again until the simulator says it ignored one: right after discovery the
    publisher may know the simulator's subscription before that subscription knows it, and DDS
    then drops the sample.
    """
    with NodeProcess('wbc_sim', lockstep_parameters()) as sim:
        publisher = command_publisher(probe)
        command = Float64MultiArray(data=[5.0] * 9)

        def ignored() -> bool:
            publisher.publish(command)
            return probe.spin_until(lambda: 'before the first state' in sim.output(), 0.5)

        # Handled once it says so (a simulator that stepped instead says nothing: go on).
        probe.spin_until(ignored, WAIT_S)
        states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        output = sim.output()
    assert stamp_s(states[0]) == 0.0, f'stepped by the early command:\n{output}'
    assert not any(states[0].effort)
    assert 'a command before the first state is ignored' in output


def test_lockstep_waits_for_its_subscribers_before_the_first_state(probe: RosProbe) -> None:
    """With `lockstep_subscribers: 2` one listener is not enough; the second starts the loop."""
    with NodeProcess('wbc_sim', lockstep_parameters(lockstep_subscribers=2)) as sim:
        command_publisher(probe)
        first = probe.subscribe(JointState, 'joint_states', ALL_STATES)
        waiting = 'waiting for 2 joint_states subscribers, 1 so far'
        assert probe.spin_until(lambda: waiting in sim.output(), START_TIMEOUT_S), sim.output()
        probe.spin_for(0.2)  # a state sent meanwhile would be here by now on a calm machine
        assert not first, f'the first state went out to one subscriber:\n{sim.output()}'
        second = probe.subscribe(JointState, 'joint_states', ALL_STATES)
        assert probe.spin_until(lambda: first and second, START_TIMEOUT_S), sim.output()
    assert stamp_s(first[0]) == stamp_s(second[0]) == 0.0


def test_gravity_compensation_holds_panda_in_lockstep(probe: RosProbe, panda: RobotModel) -> None:
    states = probe.subscribe(JointState, 'joint_states')
    with NodeProcess('wbc_sim', lockstep_parameters()) as sim:
        publisher = command_publisher(probe)  # lockstep starts once a controller connects
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        answered: set[float] = set()
        for _ in range(100):
            assert probe.spin_until(lambda: stamp_s(states[-1]) not in answered, WAIT_S), (
                sim.output()
            )
            answered.add(stamp_s(states[-1]))
            publisher.publish(Float64MultiArray(data=gravity_torque(panda, states[-1])))
        assert probe.spin_until(lambda: stamp_s(states[-1]) not in answered, WAIT_S)
    final = states[-1]
    assert stamp_s(final) == pytest.approx(100 * 0.004)
    drift = np.asarray(final.position) - PANDA_READY
    assert np.abs(drift).max() < 1e-3
    # Without compensation the same 0.4 s would let the arm fall by far more than that.


def test_bad_commands_are_rejected_and_the_node_lives_on(
    probe: RosProbe, panda: RobotModel
) -> None:
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    with NodeProcess('wbc_sim', lockstep_parameters()) as sim:
        publisher = command_publisher(probe)  # lockstep starts once a controller connects
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        publisher.publish(Float64MultiArray(data=[0.0, 1.0]))
        publisher.publish(Float64MultiArray(data=[float('nan')] * panda.n_actuated))
        assert probe.spin_until(lambda: '2 rejected so far' in sim.output(), WAIT_S), (
            f'the two bad commands were not rejected within {WAIT_S} s:\n{sim.output()}'
        )
        # Still waiting for a command: the first state is re-sent, not stepped.
        heard = len(states)
        assert probe.spin_until(lambda: len(states) > heard, WAIT_S), sim.output()
        assert {stamp_s(state) for state in states} == {0.0}
        assert sim.alive()
        publisher.publish(Float64MultiArray(data=gravity_torque(panda, states[0])))
        assert probe.spin_until(lambda: stamp_s(states[-1]) > 0.0, WAIT_S), sim.output()
        output = sim.output()
    assert 'length' in output and 'non_finite' in output
    assert '2 rejected so far' in output


def test_command_joints_order_and_subset(probe: RosProbe, panda: RobotModel) -> None:
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    order = ['panda_joint4', 'panda_joint1']
    with NodeProcess('wbc_sim', lockstep_parameters(command_joints=order)) as sim:
        publisher = command_publisher(probe)  # lockstep starts once a controller connects
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        publisher.publish(Float64MultiArray(data=[4.0, 1.0]))
        assert probe.spin_until(lambda: stamp_s(states[-1]) > 0.0, WAIT_S), sim.output()
    expected = np.zeros(panda.n_actuated)
    expected[panda.joint_index(order)] = [4.0, 1.0]
    np.testing.assert_array_equal(states[-1].effort, expected)


def test_stale_commands_fall_back_to_zero_torque(probe: RosProbe) -> None:
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    with NodeProcess('wbc_sim', panda_parameters(command_timeout=0.05)) as sim:
        publisher = command_publisher(probe)
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        publisher.publish(Float64MultiArray(data=[1.0] * 9))
        # The pushed states last 0.05 s of simulated time: look for them in all states heard.
        assert probe.spin_until(lambda: any(any(s.effort) for s in states), WAIT_S), (
            f'no state with the commanded torque within {WAIT_S} s:\n{sim.output()}'
        )
        applied_at = next(stamp_s(s) for s in states if any(s.effort))
        assert probe.spin_until(lambda: stamp_s(states[-1]) > applied_at + 0.2, WAIT_S)
        output = sim.output()
    pushed = [stamp_s(s) for s in states if any(s.effort)]
    assert max(pushed) - min(pushed) <= 0.05 + 1e-6
    assert not any(states[-1].effort)
    assert 'applying zero torque' in output


def test_held_paced_simulation_starts_at_the_first_non_zero_command(probe: RosProbe) -> None:
    """`hold_until_commanded`: the initial state, re-sent at stamp 0, until a non-zero command."""
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    with NodeProcess('wbc_sim', panda_parameters(hold_until_commanded=True)) as sim:
        publisher = command_publisher(probe)
        assert probe.spin_until(lambda: len(states) >= 3, START_TIMEOUT_S), sim.output()
        publisher.publish(Float64MultiArray(data=[0.0] * 9))  # a zero safe command: still held
        held = len(states)
        assert probe.spin_until(lambda: len(states) >= held + 3, WAIT_S), sim.output()
        assert {stamp_s(state) for state in states} == {0.0}, sim.output()
        assert 'simulation started' not in sim.output()
        publisher.publish(Float64MultiArray(data=[1.0] * 9))
        assert probe.spin_until(lambda: stamp_s(states[-1]) > 0.1, WAIT_S), sim.output()
        output = sim.output()
    assert 'first non-zero command: simulation started' in output
    held_positions = np.asarray(states[0].position)
    assert all(np.array_equal(state.position, held_positions) for state in states[:held])


def test_floating_base_publishes_odom(probe: RosProbe) -> None:
    states = probe.subscribe(JointState, 'joint_states')
    odometry = probe.subscribe(Odometry, 'odom')
    parameters = {
        'urdf_path': str(example_robot_urdf('solo12')[0]),
        'floating_base': True,
        'lockstep': True,
        'real_time_factor': 0.0,  # as fast as the controller answers
        'lockstep_resend_period': 0.5,
    }
    with NodeProcess('wbc_sim', parameters) as sim:
        command_publisher(probe)
        assert probe.spin_until(lambda: states and odometry, START_TIMEOUT_S), sim.output()
    odom = odometry[0]
    assert odom.header.frame_id == 'odom'
    assert odom.child_frame_id == 'base_link'
    assert odom.pose.pose.position.z > 0.1  # placed on the ground plane
    orientation = odom.pose.pose.orientation
    assert orientation.w == pytest.approx(1.0)
    assert len(states[0].name) == 12


def test_missing_model_exits_non_zero_naming_both_parameters() -> None:
    with NodeProcess('wbc_sim') as sim:
        code = sim.wait(START_TIMEOUT_S)
        output = sim.output()
    assert code != 0
    assert 'robot_description' in output and 'urdf_path' in output


def test_invalid_parameters_exit_non_zero_with_a_reason() -> None:
    with NodeProcess('wbc_sim', panda_parameters(control_period=0.0015)) as sim:
        code = sim.wait(START_TIMEOUT_S)
        output = sim.output()
    assert code != 0
    assert 'control_period' in output and 'Traceback' not in output


#: A moving link without mass or inertia: Pinocchio takes it, MuJoCo refuses it.
MASSLESS_URDF = """<robot name="massless"><link name="base"/><link name="arm"/>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_a_model_mujoco_refuses_exits_non_zero_with_its_reason() -> None:
    """One FATAL line saying why, and a clean exit (no traceback from the shutdown)."""
    with NodeProcess('wbc_sim', {'robot_description': MASSLESS_URDF}) as sim:
        code = sim.wait(START_TIMEOUT_S)
        output = sim.output()
    assert code != 0
    assert 'cannot build the MuJoCo model' in output and 'mass' in output
    assert 'Traceback' not in output


#: A joint whose limits are equal: MuJoCo compiles it with a warning (limit ignored).
EQUAL_LIMITS_URDF = """<robot name="equal_limits"><link name="base"/>
  <link name="arm"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0" effort="1" velocity="1"/></joint></robot>"""


def test_mujoco_warnings_are_logged_not_written_to_a_file(probe: RosProbe, tmp_path: Path) -> None:
    """MuJoCo's own warning reaches the node's log; no MUJOCO_LOG.TXT where it was started."""
    line = "MuJoCo: joint 'hinge' has equal lower and upper limits, limit ignored"
    states = probe.subscribe(JointState, 'joint_states')
    parameters = {'robot_description': EQUAL_LIMITS_URDF}
    with NodeProcess('wbc_sim', parameters, cwd=tmp_path) as sim:
        assert probe.spin_until(lambda: len(states) > 0, START_TIMEOUT_S), sim.output()
        output = sim.output()
    assert line in output, output
    assert not (tmp_path / 'MUJOCO_LOG.TXT').exists()


def test_unknown_parameter_exits_non_zero_naming_the_closest() -> None:
    with NodeProcess('wbc_sim', panda_parameters(lockstp=True)) as sim:
        code = sim.wait(START_TIMEOUT_S)
        output = sim.output()
    assert code != 0
    assert "unknown parameter 'lockstp'" in output and "'lockstep'" in output
    assert 'Traceback' not in output


def test_live_sets_are_refused_with_a_reason(probe: RosProbe) -> None:
    states = probe.subscribe(JointState, 'joint_states')
    with NodeProcess('wbc_sim', panda_parameters()) as sim:
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        client = AsyncParameterClient(probe.node, '/wbc_sim')
        assert client.wait_for_services(WAIT_S), f'no parameter services in {WAIT_S} s'

        future = client.set_parameters(
            [Parameter('timestep', value=0.002), Parameter('time_step', value=0.002)]
        )
        assert probe.spin_until(future.done, WAIT_S), f'no parameter answer in {WAIT_S} s'
    read_only, unknown = future.result().results
    assert not read_only.successful and 'read-only' in read_only.reason
    assert not unknown.successful
    assert "unknown parameter 'time_step'" in unknown.reason and "'timestep'" in unknown.reason


def test_a_live_payload_is_carried_from_the_next_step_and_a_bad_one_refused(
    probe: RosProbe, panda: RobotModel
) -> None:
    """One physics step after a live set: q̇ = dt M⁻¹(τ − g) of the model with the payload.

    The command is the gravity torque without the payload, so the arm starts to fall by what
    the payload weighs; Pinocchio's forward dynamics with the same payload says how fast.
    """
    states = probe.subscribe(JointState, 'joint_states', ALL_STATES)
    payload = {'payload.frame': 'panda_hand_tcp', 'payload.mass': 2.0}
    payload['payload.center_of_mass'] = [0.012, -0.018, 0.045]
    with NodeProcess('wbc_sim', lockstep_parameters(control_period=0.001)) as sim:
        publisher = command_publisher(probe)
        assert probe.spin_until(lambda: states, START_TIMEOUT_S), sim.output()
        client = AsyncParameterClient(probe.node, '/wbc_sim')
        assert client.wait_for_services(WAIT_S), f'no parameter services in {WAIT_S} s'
        bad = client.set_parameters([Parameter('payload.frame', value='gripper')])
        assert probe.spin_until(bad.done, WAIT_S), f'no parameter answer in {WAIT_S} s'
        future = client.set_parameters_atomically(
            [Parameter(name, value=value) for name, value in payload.items()]
        )
        assert probe.spin_until(future.done, WAIT_S), f'no parameter answer in {WAIT_S} s'
        assert future.result().result.successful, future.result().result.reason
        first = states[0]
        publisher.publish(Float64MultiArray(data=gravity_torque(panda, first)))
        assert probe.spin_until(lambda: stamp_s(states[-1]) > 0.0, WAIT_S), sim.output()
    (refused,) = bad.result().results
    assert not refused.successful
    assert "payload.frame: frame 'gripper'" in refused.reason and 'panda_hand' in refused.reason
    carrying = RobotModel.from_urdf_path(example_robot_urdf('panda')[0])
    loaded = Payload.create(carrying, 'panda_hand_tcp', 2.0, payload['payload.center_of_mass'])
    carrying.set_payload_parameters(loaded.dynamic_parameters(carrying))
    q = panda.configuration(np.asarray(first.position))
    torque = np.array(gravity_torque(panda, first))
    acceleration = pin.aba(carrying.model, carrying.model.createData(), q, np.zeros(9), torque)
    stepped = next(state for state in states if stamp_s(state) > 0.0)
    np.testing.assert_allclose(stepped.velocity, 0.001 * acceleration, rtol=1e-9, atol=1e-12)
    assert np.abs(stepped.velocity).max() > 1e-4  # the payload pulled the arm down


@pytest.mark.parametrize(
    ('sig', 'lockstep'),
    [
        (signal.SIGINT, False),
        (signal.SIGINT, True),
        pytest.param(signal.SIGTERM, False),
        pytest.param(signal.SIGTERM, True),
    ],
    ids=['SIGINT-paced', 'SIGINT-lockstep', 'SIGTERM-paced', 'SIGTERM-lockstep'],
)
def test_clean_shutdown(probe: RosProbe, sig: signal.Signals, lockstep: bool) -> None:
    states = probe.subscribe(JointState, 'joint_states')
    parameters = lockstep_parameters() if lockstep else panda_parameters()
    with NodeProcess('wbc_sim', parameters) as sim:
        if lockstep:
            command_publisher(probe)
        # A timer-driven state (a re-send in lock-step): the node is spinning, not starting up.
        assert probe.spin_until(lambda: len(states) > 1, START_TIMEOUT_S), sim.output()
        code = sim.stop(sig)
        output = sim.output()
    assert code == 0, output
    assert 'Traceback' not in output
