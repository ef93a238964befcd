"""Every launch file through the real launch machinery, with the package laid out as colcon does.

wbc_sim.launch.py runs the real executables: torques must arrive on the command topic and Ctrl-C
(SIGINT to launch) must end everything with exit code 0 and no escalation. The other launch
files start stubs for what is not installable here (Gazebo, controller_manager,
robot_state_publisher) and for the wbc nodes, which record their parameters.
"""

from pathlib import Path
import re

from diagnostic_msgs.msg import DiagnosticArray
from launch_support import (
    LaunchRun,
    install_prefix,
    launch_command,
    launch_sources,
    node_parameters,
    run_to_end,
    stub_records,
)
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from robots import MIXED_JOINTS_URDF, example_urdf, shipped_parameters
from ros_support import RosProbe, stamp_s
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
import yaml

from wbc_control.model.example_robots import example_robot_urdf, robots_directory

SOURCES = launch_sources()
# A few seconds on an idle machine; generous for a loaded CI runner.
FIRST_TORQUES_S = 45.0
TORQUE_COUNT = 20


@pytest.fixture
def stub_prefix(tmp_path) -> tuple[Path, Path]:
    log = tmp_path / 'stub_log'
    return install_prefix(tmp_path / 'install_stub', stub_log=log), log


def task_torques(received: list) -> int:
    """Commands that answer a joint state: not the controller's zero safe command."""
    return sum(bool(np.any(message.data)) for message in received)


#: Simulated time (s) after which a launched robot must still be where its files put it.
SETTLED_SIM_S = 10.0
#: How far (rad, m for prismatic joints) a joint may be from that pose then.
POSE_TOLERANCE = 0.05
#: Wall-clock bound of the wait for SETTLED_SIM_S: start-up under load plus a simulation that
#: may run slower than real time on a loaded 2-core machine.
SETTLED_WAIT_S = 300.0
#: Joint-state rejections that say the robot moved implausibly (fell, hit a wall).
IMPLAUSIBLE = ('joint_states.velocity_limit', 'joint_states.position_limit')


def configured_pose(robot: str) -> np.ndarray:
    """The posture target of config/<robot>_controller.yaml (model order)."""
    tasks = shipped_parameters(f'{robot}_controller')['tasks']
    [posture] = [task for task in tasks.values() if task['type'] == 'joint_posture']
    return np.array(posture['target'])


class LaunchWatch:
    """The launched loop seen from a probe: commands, joint states and the controller's status."""

    def __init__(self, run: LaunchRun, namespace: str) -> None:
        self.run, self.probe = run, RosProbe('launch_probe')
        self.commands = self.probe.subscribe(
            Float64MultiArray, f'{namespace}/effort_controller/commands'
        )
        every_state = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.states = self.probe.subscribe(JointState, f'{namespace}/joint_states', every_state)
        self.statuses: list[dict[str, str]] = []
        self.probe.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_status, 50)

    def _on_status(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name.startswith('wbc_controller: '):
                values = {item.key: item.value for item in status.values}
                self.statuses.append({'check': status.name, **values})

    def running(self) -> bool:
        """Whether launch still runs."""
        return self.run.process.poll() is None

    def wait_for(self, condition, timeout: float, what: str) -> None:
        """Spin until `condition()` holds; fail naming `what` after `timeout` s of wall time."""
        arrived = self.probe.spin_until(lambda: condition() or not self.running(), timeout)
        assert arrived and condition(), f'{what} within {timeout} s:\n{self.run.output()}'

    def close(self) -> None:
        """Destroy the probe node."""
        self.probe.close()


def assert_torques(watch: LaunchWatch, joints: int) -> None:
    """The loop runs: task torques (zeros are the controller's safe command while it starts)."""
    watch.wait_for(
        lambda: task_torques(watch.commands) >= TORQUE_COUNT,
        FIRST_TORQUES_S,
        f'{TORQUE_COUNT} task torques ({len(watch.commands)} commands so far)',
    )
    torques = np.array([message.data for message in watch.commands])
    assert torques.shape == (len(watch.commands), joints)
    assert np.isfinite(torques).all()


def assert_where_configured(watch: LaunchWatch, pose: np.ndarray, moved: tuple[str, ...] = ()):
    """After SETTLED_SIM_S of simulated time every joint but `moved` is at `pose`.

    Nothing was rejected as implausible; no joint but `moved` was held at a joint-limit bound on
    the way (a moved joint may approach a wall at the speed its viability bound allows), and
    none is once settled.
    """
    watch.wait_for(
        lambda: watch.states and stamp_s(watch.states[-1]) >= SETTLED_SIM_S,
        SETTLED_WAIT_S,
        f'{SETTLED_SIM_S} s of simulated time',
    )
    settled = len(watch.statuses)
    watch.wait_for(lambda: len(watch.statuses) >= settled + 3, 30.0, 'three statuses settled')
    last = watch.states[-1]
    positions = np.array(last.position)
    off = np.abs(positions - pose) > POSE_TOLERANCE
    away = {name: round(float(q), 3) for name, q, o in zip(last.name, positions, off) if o}
    away = {name: q for name, q in away.items() if name not in moved}
    assert not away, f'{away} at {stamp_s(last):.3f} s, configured {pose.round(3)}'
    for index, status in enumerate(watch.statuses):
        held = set(filter(None, status.get('joints_at_limit', '').split(',')))
        assert not (held if index >= settled else held - set(moved)), status
        assert not any(key.startswith(f'rejected.{k}') for key in status for k in IMPLAUSIBLE)
    assert 'velocity_limit' not in watch.run.output()
    assert 'position_limit' not in watch.run.output()


def assert_clean_exit(run: LaunchRun) -> None:
    """Ctrl-C ends every process with exit code 0 and no escalation."""
    code = run.interrupt()
    output = run.output()
    assert code == 0 and 'LAUNCH RC 0' in output, output
    assert 'escalating' not in output, output
    assert 'Traceback' not in output, output
    # A node that hung in its shutdown is ended by its own 3 s timer, with exit code 0. (Fast
    # DDS may hold a node's teardown that long after its peers exited: that one is named, 'the
    # middleware had not released the node', and not a hang of ours.)
    assert 'forcing the exit' not in output, output


def assert_torques_then_clean_exit(run: LaunchRun, namespace: str, joints: int) -> None:
    """The loop runs (task torques, so the simulator is up), then Ctrl-C ends it cleanly.

    A Ctrl-C before the first task torques could reach a simulator still importing (Python's
    own traceback).
    """
    watch = LaunchWatch(run, namespace)
    try:
        assert_torques(watch, joints)
    finally:
        watch.close()
    assert_clean_exit(run)


def source_and_namespace() -> list:
    """(launch source, namespace): the root namespace on the first, /left_arm on the last."""
    pairs = [(SOURCES[0], ''), (SOURCES[-1], '/left_arm')]
    return [
        pytest.param(source.values[0], namespace, id=f'{source.id}{namespace}', marks=source.marks)
        for source, namespace in pairs
    ]


@pytest.mark.parametrize(('distro', 'namespace'), source_and_namespace())
def test_sim_launch_runs_panda_from_its_ready_pose_and_stops_on_ctrl_c(
    distro, namespace, real_prefix
) -> None:
    """README's command: the arm waits in its ready pose for the controller and stays there."""
    arguments = ['robot:=panda'] + ([f'namespace:={namespace}'] if namespace else [])
    command = launch_command(distro, real_prefix, 'wbc_sim.launch.py', *arguments)
    with LaunchRun(command) as run:
        watch = LaunchWatch(run, namespace)
        try:
            assert_torques(watch, 7)
            # The probe may be matched by the controller before the simulator.
            watch.wait_for(lambda: watch.states, FIRST_TORQUES_S, 'a joint state')
            pose = configured_pose('panda')
            # Held until the controller commanded: already there whenever this probe heard it.
            np.testing.assert_allclose(watch.states[0].position, pose, atol=POSE_TOLERANCE)
            assert_where_configured(watch, pose)
        finally:
            watch.close()
        assert_clean_exit(run)


#: Talos's hand task moves its left arm to the hand target, and the centre-of-mass task (above
#: the posture) swings the right arm to balance it: the arms leave the half-sitting pose.
TALOS_ARM_JOINTS = tuple(
    f'arm_{side}_{i}_joint' for side in ('left', 'right') for i in range(1, 8)
)


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_sim_launch_with_autostart_false_leaves_the_controller_unconfigured(distro, real_prefix):
    """Unconfigured under launch: no command until lifecycle transitions bring it up."""
    command = launch_command(distro, real_prefix, 'wbc_sim.launch.py', 'autostart:=false')
    with LaunchRun(command) as run:
        probe = RosProbe('launch_lifecycle_probe')
        try:
            received = probe.subscribe(Float64MultiArray, '/effort_controller/commands')
            get_state = probe.node.create_client(GetState, '/wbc_controller/get_state')
            change = probe.node.create_client(ChangeState, '/wbc_controller/change_state')
            up = probe.spin_until(
                lambda: get_state.service_is_ready() and change.service_is_ready(),
                FIRST_TORQUES_S,
            )
            assert up, run.output()
            response = probe.request(lambda: get_state.call_async(GetState.Request()), 30.0)
            assert response.current_state.label == 'unconfigured', run.output()
            # The simulator's command subscription matched nobody: no controller publishes.
            assert probe.node.count_publishers('/effort_controller/commands') == 0
            assert not received
            for label in ('configure', 'activate'):
                request = ChangeState.Request(transition=Transition(label=label))
                future = change.call_async(request)
                assert probe.spin_until(future.done, 30.0), run.output()
                assert future.result().success, run.output()
        finally:
            probe.close()
        assert_torques_then_clean_exit(run, '', 7)


@pytest.mark.slow
@pytest.mark.parametrize('distro', SOURCES[-1:])
@pytest.mark.parametrize(
    ('robot', 'joints', 'moved'), [('talos', 32, TALOS_ARM_JOINTS), ('solo12', 12, ())]
)
def test_sim_launch_runs_the_legged_robots_where_configured(
    distro, real_prefix, robot, joints, moved
) -> None:
    command = launch_command(distro, real_prefix, 'wbc_sim.launch.py', f'robot:={robot}')
    with LaunchRun(command) as run:
        watch = LaunchWatch(run, '')
        try:
            assert_torques(watch, joints)
            assert_where_configured(watch, configured_pose(robot), moved)
        finally:
            watch.close()
        assert_clean_exit(run)


def one_line_failure(code: int, output: str, message: str) -> None:
    assert code != 0 and 'LAUNCH RC 0' not in output, output
    assert 'Traceback' not in output, output
    assert re.search(message, output), output


@pytest.mark.parametrize('distro', SOURCES)
@pytest.mark.parametrize(
    ('arguments', 'message'),
    [
        (['robot:=nope'], r'"robot" provided value "nope" is not valid'),
        (['urdf_path:=/nonexistent/robot.urdf'], r'urdf_path:=/nonexistent/robot.urdf: no such'),
    ],
    ids=['unknown-robot', 'missing-urdf'],
)
def test_sim_launch_refuses_bad_input_in_one_line(distro, stub_prefix, arguments, message):
    prefix, _ = stub_prefix
    code, output = run_to_end(launch_command(distro, prefix, 'wbc_sim.launch.py', *arguments))
    one_line_failure(code, output, message)


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_sim_launch_without_example_robot_data_says_what_to_do(distro, stub_prefix, tmp_path):
    prefix, _ = stub_prefix
    command = launch_command(distro, prefix, 'wbc_sim.launch.py')
    command[2] = f'export EXAMPLE_ROBOT_DATA_DIR={tmp_path}; {command[2]}'
    code, output = run_to_end(command)
    one_line_failure(code, output, r"example-robot-data at .* has no 'panda_description")


@pytest.mark.slow
@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_sim_launch_with_a_urdf_lacking_the_commanded_joints_stops(distro, real_prefix, tmp_path):
    urdf = tmp_path / 'mixed.urdf'
    urdf.write_text(MIXED_JOINTS_URDF)
    command = launch_command(distro, real_prefix, 'wbc_sim.launch.py', f'urdf_path:={urdf}')
    code, output = run_to_end(command)
    one_line_failure(code, output, r'exited with code 1')
    assert re.search(r'FATAL.*panda_joint1', output), output


#: A robot without a shipped config: example-robot-data's UR5, as a user would describe it.
UR5_CONTROLLER = """/**:
  ros__parameters:
    torque_rate_limit: 1000.0
    task_names: [tool, posture]
    tasks:
      tool:
        type: frame_position
        frame: tool0
        kp: 100.0
        target: [0.3, 0.2, 0.5]
      posture:
        type: joint_posture
        priority: 1
        kp: 25.0
"""
UR5_SIM = """/**:
  ros__parameters:
    lockstep: true
    control_period: 0.002
    initial_positions: [0.0, -1.2, 1.5, -1.9, -1.57, 0.0]
"""


@pytest.mark.slow
@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_sim_launch_runs_a_users_robot_from_its_own_files(distro, real_prefix, tmp_path) -> None:
    urdf, _ = example_robot_urdf('ur5')
    (tmp_path / 'ur5_controller.yaml').write_text(UR5_CONTROLLER)
    (tmp_path / 'ur5_sim.yaml').write_text(UR5_SIM)
    arguments = [
        f'urdf_path:={urdf}',
        f'controller_params:={tmp_path / "ur5_controller.yaml"}',
        f'sim_params:={tmp_path / "ur5_sim.yaml"}',
        'floating_base:=false',
        'namespace:=/ur5',
    ]
    command = launch_command(distro, real_prefix, 'wbc_sim.launch.py', *arguments)
    with LaunchRun(command) as run:
        assert_torques_then_clean_exit(run, '/ur5', 6)


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_sim_launch_refuses_a_missing_params_file_in_one_line(distro, stub_prefix):
    prefix, _ = stub_prefix
    command = launch_command(
        distro, prefix, 'wbc_sim.launch.py', 'controller_params:=/nonexistent/c.yaml'
    )
    code, output = run_to_end(command)
    one_line_failure(code, output, r'controller_params:=/nonexistent/c.yaml: no such file')


@pytest.mark.parametrize(('distro', 'namespace'), source_and_namespace())
def test_control_launch_starts_both_nodes(distro, stub_prefix, namespace):
    prefix, log = stub_prefix
    urdf = str(example_robot_urdf('panda')[0])
    arguments = [f'urdf_path:={urdf}'] + ([f'namespace:={namespace}'] if namespace else [])
    code, output = run_to_end(launch_command(distro, prefix, 'wbc_control.launch.py', *arguments))
    assert code == 0 and 'LAUNCH RC 0' in output, output
    for node in ('wbc_controller', 'wbc_diagnostics'):
        [(args, params)] = stub_records(log, node)
        assert f'__ns:={namespace or "/"}' in args and f'__node:={node}' in args, args
        assert node_parameters(params)['urdf_path'] == urdf
    controller = node_parameters(stub_records(log, 'wbc_controller')[0][1])
    assert controller['task_names'] == ['hand', 'posture']
    assert controller['autostart'] is True


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_sim_launch_gives_every_node_the_users_files_and_base(distro, stub_prefix, tmp_path):
    """A legged robot of the user's: floating_base:=true reaches all three nodes."""
    prefix, log = stub_prefix
    files = {}
    for node in ('controller', 'sim', 'diagnostics'):
        files[node] = tmp_path / f'{node}.yaml'
        files[node].write_text(f'/**:\n  ros__parameters:\n    mine_{node}: true\n')
    urdf = str(robots_directory() / 'go1_description/urdf/go1.urdf')
    arguments = [f'urdf_path:={urdf}', 'floating_base:=true']
    arguments += [f'{node}_params:={path}' for node, path in files.items()]
    code, output = run_to_end(launch_command(distro, prefix, 'wbc_sim.launch.py', *arguments))
    assert code == 0 and 'LAUNCH RC 0' in output, output
    for node, short in (('wbc_controller', 'controller'), ('wbc_sim', 'sim')):
        parameters = node_parameters(stub_records(log, node)[0][1])
        assert parameters[f'mine_{short}'] is True and parameters['floating_base'] is True
        assert parameters['urdf_path'] == urdf
    diagnostics = node_parameters(stub_records(log, 'wbc_diagnostics')[0][1])
    assert diagnostics['mine_diagnostics'] is True


@pytest.mark.parametrize('distro', SOURCES)
def test_gazebo_launch_adds_ros2_control_to_panda(distro, stub_prefix):
    prefix, log = stub_prefix
    example_urdf('panda')
    command = launch_command(distro, prefix, 'wbc_gazebo.launch.py', 'robot:=panda')
    code, output = run_to_end(command)
    assert code == 0 and 'LAUNCH RC 0' in output, output
    [(_, params)] = stub_records(log, 'robot_state_publisher')
    description = node_parameters(params)['robot_description']
    assert '<ros2_control name="GazeboSimSystem" type="system">' in description
    assert 'gz_ros2_control::GazeboSimROS2ControlPlugin' in description
    control = prefix / 'share' / 'wbc_control' / 'config' / 'panda_ros2_control.yaml'
    assert f'<parameters>{control}</parameters>' in description
    spawned = sorted(args.split()[0] for args, _ in stub_records(log, 'spawner'))
    assert spawned == ['effort_controller', 'joint_state_broadcaster']
    [(_, params)] = stub_records(log, 'wbc_controller')
    assert node_parameters(params)['robot_description'] == description
    assert node_parameters(params)['use_sim_time'] is True


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_gazebo_launch_in_a_namespace_with_a_users_urdf(distro, stub_prefix, tmp_path):
    prefix, log = stub_prefix
    urdf = tmp_path / 'mixed.urdf'
    urdf.write_text(MIXED_JOINTS_URDF)
    control = tmp_path / 'mixed_control.yaml'
    control.write_text(
        yaml.safe_dump(
            {'/**/effort_controller': {'ros__parameters': {'joints': ['shoulder', 'wrist']}}}
        )
    )
    command = launch_command(
        distro,
        prefix,
        'wbc_gazebo.launch.py',
        f'robot_description_file:={urdf}',
        f'ros2_control_params:={control}',
        'namespace:=/left_arm',
    )
    code, output = run_to_end(command)
    assert code == 0 and 'LAUNCH RC 0' in output, output
    [(args, params)] = stub_records(log, 'robot_state_publisher')
    assert '__ns:=/left_arm' in args
    description = node_parameters(params)['robot_description']
    assert '<joint name="shoulder"><command_interface name="effort"' in description
    assert '<namespace>/left_arm</namespace>' in description
    for args, _ in stub_records(log, 'spawner'):
        assert '__ns:=/left_arm' in args, args


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_gazebo_launch_refuses_a_urdf_without_the_joints(distro, stub_prefix, tmp_path):
    prefix, _ = stub_prefix
    urdf = tmp_path / 'mixed.urdf'
    urdf.write_text(MIXED_JOINTS_URDF)
    command = launch_command(
        distro, prefix, 'wbc_gazebo.launch.py', f'robot_description_file:={urdf}'
    )
    code, output = run_to_end(command)
    one_line_failure(code, output, r'the URDF has no movable joint panda_joint1')


@pytest.mark.parametrize('distro', SOURCES[:1])
def test_gazebo_launch_refuses_an_unknown_robot(distro, stub_prefix):
    prefix, _ = stub_prefix
    command = launch_command(distro, prefix, 'wbc_gazebo.launch.py', 'robot:=nope')
    code, output = run_to_end(command)
    one_line_failure(code, output, r"unknown example robot 'nope'; known: ")
