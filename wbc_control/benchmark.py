"""`wbc_bench`: how fast is the controller on this machine, and where does the time go.

One run measures three things, so that their ratios are meaningful on a noisy machine
(issue 7; the JSON keys are documented in the README, section "Performance"):

1. **Tick**: the core's per-tick cost, joint state in numpy -> torque out (no ROS):
   `RobotModel.configuration / velocity`, `RobotState.update`, `PrioritizedController.compute`,
   over a pool of random configurations and velocities. Interleaved with every tick, the same
   sample goes through the unavoidable Pinocchio floor (crba + nonLinearEffects +
   computeJointJacobians + updateFramePlacements, + the COM Jacobian when a task uses the COM),
   so that tick / floor does not depend on how loaded the machine is.
2. **DDS**: the controller node `wbc_controller` as a subprocess on loopback, fed `joint_states`
   at 1 kHz and 500 Hz; latency from the state's stamp to the receipt of its command, missed
   and late commands, and the node's CPU share. Skipped when `wbc_controller` is not installed.
3. **Conditioning**: the cost of the exact κ₂(M) (eigvalsh) against the diagonal ratio and the
   scaled diagonal ratio (seed 001) for serial chains and the shipped robots, and the
   estimator's relative error along seed 001's swing, as a table and a PNG plot.

The core modules never import rclpy; this one does so only inside the DDS measurement, and
imports matplotlib only to draw the plot.
"""

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
import datetime
import gc
import json
import math
import os
from pathlib import Path
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pinocchio as pin

from wbc_control.conditioning import (
    ScaledDiagonalRatioEstimator,
    condition_number,
    diagonal_ratio,
)
from wbc_control.contacts import Contact
from wbc_control.example_robots import EXAMPLE_ROBOTS, example_robot_urdf
from wbc_control.exceptions import ModelError, WbcError
from wbc_control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.robot_model import RobotModel
from wbc_control.robot_state import RobotState
from wbc_control.serial_chain import serial_chain_urdf
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
)

DEFAULT_TICKS = 5000
WARMUP_TICKS = 200
INPUT_POOL_SIZE = 256
JOINT_SPEED_RAD_S = 0.5  # standard deviation of the random joint velocities
BASE_SPEED = 0.2  # m/s and rad/s, standard deviation of the random base twist
BASE_POSITION_RANGE_M = 1.0

DEFAULT_DDS_SECONDS = 20.0
DDS_RATES_HZ = (1000.0, 500.0)
DDS_WARMUP_S = 1.0
DDS_STARTUP_TIMEOUT_S = 60.0
DDS_FINGERPRINTS = 50  # distinct joint states cycled through; commands identify them
CONTROLLER_EXECUTABLE = 'wbc_controller'
CONTROLLER_NODE = 'wbc_controller'

CHAIN_SIZES = (4, 10, 20, 38, 50, 100, 200)
CONDITIONING_REPEATS = 1000
SWING_CHAINS = (4, 10, 20)
SWING_STARTS = {'horizontal': 0.0, 'inclined_60deg': math.pi / 3}
SWING_DT_S = 1e-3
SWING_DURATION_S = 2.0
SWING_SAMPLE_PERIOD_S = 0.01
SWING_RESCALE_PERIOD_S = 0.25

TALOS_FEET = ('left_sole_link', 'right_sole_link')
BLAS_THREAD_VARIABLES = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')


# ---------------------------------------------------------------------------------------------
# Scenarios


@dataclass(frozen=True)
class Scenario:
    """A robot and a controller to time, and where they came from."""

    name: str
    robot: RobotModel
    controller: PrioritizedController
    source: str  # 'built-in' or the params file
    uses_com: bool


def example_robot(name: str) -> RobotModel:
    """One of example-robot-data's robots (:data:`EXAMPLE_ROBOTS`)."""
    path, floating_base = example_robot_urdf(name)
    return RobotModel.from_urdf_path(path, floating_base)


def panda_scenario() -> Scenario:
    """Panda: end-effector pose (level 0) and joint posture (level 1).

    From the shipped config/panda_controller.yaml when it can be found, else the same tasks
    built here.
    """
    shipped = shipped_config('panda_controller.yaml')
    if shipped is not None:
        return config_scenario(shipped, 'panda', name='panda')
    panda = example_robot('panda')
    hand = FramePoseTask(panda, 'panda_hand', [0.307, 0.0, 0.59, 1.0, 0.0, 0.0, 0.0], kp=100.0)
    posture = JointPostureTask(
        panda, [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02], kp=25.0
    )
    entries = [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)]
    return Scenario('panda', panda, PrioritizedController(panda, entries), 'built-in', False)


def talos_scenario() -> Scenario:
    """Talos: both soles in surface contact, COM (0), torso and both hands (1), posture (2)."""
    talos = example_robot('talos')
    entries = [
        TaskEntry('com', ComTask(talos, [0.0, 0.0, 0.88], kp=50.0), 0),
        TaskEntry('torso', FrameOrientationTask(talos, 'torso_2_link', [0, 0, 0, 1], kp=30.0), 1),
        TaskEntry(
            'left_hand',
            FramePositionTask(talos, 'gripper_left_base_link', [0.3, 0.3, 1.0], kp=40.0),
            1,
        ),
        TaskEntry(
            'right_hand',
            FramePositionTask(talos, 'gripper_right_base_link', [0.3, -0.3, 1.0], kp=40.0),
            1,
        ),
        TaskEntry('posture', JointPostureTask(talos, np.zeros(talos.n_actuated), kp=10.0), 2),
    ]
    contacts = [Contact.create(talos, foot, 'surface') for foot in TALOS_FEET]
    controller = PrioritizedController(talos, entries, contacts=contacts)
    return Scenario('talos', talos, controller, 'built-in', True)


BUILT_IN_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    'panda': panda_scenario,
    'talos': talos_scenario,
}


def controller_parameters(path: Path) -> dict:
    """The `ros__parameters` of `wbc_controller` (or of the only node) in a params file.

    Raises:
        ModelError: the file has no such section.
    """
    import yaml

    document = yaml.safe_load(Path(path).read_text()) or {}
    sections = {
        name: value['ros__parameters']
        for name, value in document.items()
        if isinstance(value, dict) and 'ros__parameters' in value
    }
    for name in (CONTROLLER_NODE, f'/{CONTROLLER_NODE}', '/**'):
        if name in sections:
            return sections[name]
    if len(sections) == 1:
        return next(iter(sections.values()))
    raise ModelError(f"{path}: no 'wbc_controller: ros__parameters:' section")


def config_scenario(
    path: Path, robot_name: str | None = None, name: str | None = None
) -> Scenario:
    """A scenario from a controller params file (task_names / tasks.<name>.* / contacts).

    The robot is the file's `robot_description` or `urdf_path`, else the example robot
    `robot_name`. Tasks are built by :mod:`wbc_control.task_config`, as the node builds them.
    """
    from wbc_control.task_config import build_entries, parse_controller_settings, parse_tasks

    parameters = controller_parameters(path)
    robot = _config_robot(parameters, robot_name, path)
    specs = parse_tasks(robot, parameters.get('task_names', []), parameters.get('tasks', {}))
    settings_values = {
        key: parameters[key]
        for key in ('command_joints', 'effort_limits', 'torque_rate_limit')
        if key in parameters
    }
    settings = parse_controller_settings(robot, settings_values)
    threshold = parameters.get('singular_value_threshold', settings.singular_value_threshold)
    contacts = [Contact.create(robot, frame) for frame in parameters.get('contacts', []) or []]
    controller = PrioritizedController(
        robot,
        build_entries(robot, specs),
        singular_value_threshold=threshold,
        effort_limits=settings.effort_limits,
        torque_rate_limits=settings.torque_rate_limits,
        contacts=contacts,
    )
    uses_com = any(spec.type == 'com' for spec in specs)
    return Scenario(name or Path(path).stem, robot, controller, str(path), uses_com)


def _config_robot(parameters: dict, robot_name: str | None, path: Path) -> RobotModel:
    floating_base = bool(parameters.get('floating_base', False))
    if parameters.get('robot_description'):
        return RobotModel.from_urdf_string(parameters['robot_description'], floating_base)
    if parameters.get('urdf_path'):
        return RobotModel.from_urdf_path(parameters['urdf_path'], floating_base)
    if robot_name is None:
        raise ModelError(
            f'{path}: no robot_description or urdf_path; name an example robot with --robot'
        )
    return example_robot(robot_name)


def shipped_config(name: str) -> Path | None:
    """The shipped `config/<name>` (installed share directory or source tree), if present."""
    candidates = [
        Path(sys.prefix) / 'share' / 'wbc_control' / 'config' / name,
        Path(__file__).resolve().parent.parent / 'config' / name,
    ]
    return next((path for path in candidates if path.is_file()), None)


# ---------------------------------------------------------------------------------------------
# 1. Per-tick cost against the Pinocchio floor


@dataclass(frozen=True)
class JointStateSample:
    """One input sample in the node's terms: joint state (+ base pose and twist)."""

    positions: np.ndarray  # (n_act,)
    velocities: np.ndarray  # (n_act,)
    base_pose: np.ndarray | None  # (7,) xyz + quaternion xyzw
    base_twist: np.ndarray | None  # (6,)


def random_samples(robot: RobotModel, count: int, seed: int) -> list[JointStateSample]:
    """Random configurations within the joint limits and random velocities."""
    rng = np.random.default_rng(seed)
    pin.seed(seed)
    lower = robot.model.lowerPositionLimit.copy()
    upper = robot.model.upperPositionLimit.copy()
    if robot.floating_base:
        lower[:3], upper[:3] = -BASE_POSITION_RANGE_M, BASE_POSITION_RANGE_M
    samples = []
    for _ in range(count):
        q = pin.randomConfiguration(robot.model, lower, upper)
        base = robot.floating_base
        samples.append(
            JointStateSample(
                robot.joint_positions(q),
                JOINT_SPEED_RAD_S * rng.standard_normal(robot.n_actuated),
                q[:7].copy() if base else None,
                BASE_SPEED * rng.standard_normal(6) if base else None,
            )
        )
    return samples


def pinocchio_floor(robot: RobotModel, uses_com: bool) -> Callable[[np.ndarray, np.ndarray], None]:
    """The Pinocchio work no controller of this robot can avoid, on its own Data."""
    model, data = robot.model, robot.model.createData()

    def floor(q: np.ndarray, v: np.ndarray) -> None:
        pin.crba(model, data, q)
        pin.nonLinearEffects(model, data, q, v)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        if uses_com:
            pin.jacobianCenterOfMass(model, data, False)

    return floor


def summary_us(durations_ns: Sequence[float]) -> dict[str, float]:
    """Median, p99 and max of durations given in ns, in µs."""
    values = np.asarray(durations_ns, dtype=float) * 1e-3
    return {
        'median': float(np.median(values)),
        'p99': float(np.percentile(values, 99)),
        'max': float(values.max()),
    }


def measure_ticks(scenario: Scenario, ticks: int = DEFAULT_TICKS, seed: int = 0) -> dict:
    """Time `ticks` controller ticks and as many floor evaluations, interleaved.

    Wall-clock (`perf_counter_ns`) is what the targets use; thread CPU time is reported too,
    since it stays meaningful when other processes take the CPU away.
    """
    robot, controller = scenario.robot, scenario.controller
    state = RobotState(robot)
    floor = pinocchio_floor(robot, scenario.uses_com)
    samples = random_samples(robot, INPUT_POOL_SIZE, seed)
    q, v = np.empty(robot.nq), np.empty(robot.nv)
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    records = np.empty((ticks, 4))  # wall tick, wall floor, cpu tick, cpu floor (ns)
    gc.collect()
    for index in range(-WARMUP_TICKS, ticks):
        sample = samples[index % len(samples)]
        wall_0, cpu_0 = wall(), cpu()
        robot.configuration(sample.positions, sample.base_pose, out=q)
        robot.velocity(sample.velocities, sample.base_twist, out=v)
        state.update(q, v)
        controller.compute(state)
        wall_1, cpu_1 = wall(), cpu()
        floor(q, v)
        wall_2, cpu_2 = wall(), cpu()
        if index >= 0:
            records[index] = (wall_1 - wall_0, wall_2 - wall_1, cpu_1 - cpu_0, cpu_2 - cpu_1)
    tick_us, floor_us = summary_us(records[:, 0]), summary_us(records[:, 1])
    tick_cpu_us, floor_cpu_us = summary_us(records[:, 2]), summary_us(records[:, 3])
    return {
        'robot': robot.name,
        'source': scenario.source,
        'nv': robot.nv,
        'tasks': [
            {'name': entry.name, 'type': type(entry.task).__name__, 'priority': entry.priority}
            for entry in controller.entries
        ],
        'contacts': [contact.frame for contact in controller.contacts],
        'ticks': ticks,
        'tick_us': tick_us,
        'floor_us': floor_us,
        'ratio': tick_us['median'] / floor_us['median'],
        'tick_cpu_us': tick_cpu_us,
        'floor_cpu_us': floor_cpu_us,
        'ratio_cpu': tick_cpu_us['median'] / floor_cpu_us['median'],
    }


# ---------------------------------------------------------------------------------------------
# 2. End to end over DDS


def controller_executable() -> str | None:
    """Path of the `wbc_controller` console script (next to this interpreter first)."""
    candidate = Path(sys.executable).parent / CONTROLLER_EXECUTABLE
    if candidate.exists():
        return str(candidate)
    return shutil.which(CONTROLLER_EXECUTABLE)


def dds_parameters(robot_name: str = 'panda', params_path: Path | None = None) -> dict:
    """Node parameters for the DDS run: the shipped Panda config (or `params_path`).

    The URDF comes from example-robot-data unless the file names one; the joint-state timeout
    is raised so that the watchdog stays quiet while commands are being fingerprinted.
    """
    path = params_path or shipped_config(f'{robot_name}_controller.yaml')
    parameters = dict(controller_parameters(path)) if path is not None else {}
    if not parameters:
        parameters = {
            'task_names': ['hand', 'posture'],
            'tasks': {
                'hand': {'type': 'frame_pose', 'frame': 'panda_hand', 'priority': 0, 'kp': 100.0},
                'posture': {'type': 'joint_posture', 'priority': 1, 'kp': 25.0},
            },
        }
    if not (parameters.get('robot_description') or parameters.get('urdf_path')):
        urdf, _ = example_robot_urdf(robot_name)
        parameters['urdf_path'] = str(urdf)
    parameters['joint_state_timeout'] = 5.0
    return parameters


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), in seconds."""
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


class ControllerProcess:
    """A node under test as a subprocess, with its params file; a context manager.

    Args:
        command: the node's command line, before `--ros-args`.
        parameters: its `ros__parameters` (written to a params file), or None.
        environment: the process environment (ROS domain and so on).
    """

    def __init__(
        self, command: list[str], parameters: dict | None, environment: dict[str, str]
    ) -> None:
        import yaml

        self._params = tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False)
        with self._params:
            yaml.safe_dump({CONTROLLER_NODE: {'ros__parameters': parameters or {}}}, self._params)
        self._log = tempfile.NamedTemporaryFile('w+', suffix='.log', delete=False)
        self._args = [*command, '--ros-args', '--params-file', self._params.name]
        self._environment = environment
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> 'ControllerProcess':
        self.process = subprocess.Popen(
            self._args, env=self._environment, stdout=self._log, stderr=subprocess.STDOUT
        )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        for path in (self._params.name, self._log.name):
            Path(path).unlink(missing_ok=True)

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the node's output."""
        self._log.flush()
        return '\n'.join(Path(self._log.name).read_text().splitlines()[-lines:])


def dds_benchmark(
    seconds: float = DEFAULT_DDS_SECONDS,
    rates_hz: Sequence[float] = DDS_RATES_HZ,
    robot_name: str = 'panda',
    params_path: Path | None = None,
    domain_id: int | None = None,
) -> dict:
    """End-to-end latency through `wbc_controller` on loopback, one run per rate.

    The same runs go first through a null node (`null_node_main`: one Float64MultiArray per
    joint state, no computation, the same executor), whose figures are the floor that rclpy
    and DDS set on this machine, as the Pinocchio floor is for the tick.

    Returns `{'status': 'skipped: ...'}` when the node or rclpy is not installed.
    """
    executable = controller_executable()
    if executable is None:
        return {'status': f'skipped: {CONTROLLER_EXECUTABLE} not installed'}
    try:
        import rclpy  # noqa: F401
    except ImportError:
        return {'status': 'skipped: rclpy not installed'}
    domain_id = _free_domain_id() if domain_id is None else domain_id
    environment = dict(os.environ, ROS_DOMAIN_ID=str(domain_id))
    environment.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    null_node = [
        sys.executable,
        '-c',
        'from wbc_control.benchmark import null_node_main as m; m()',
    ]
    runs = {}
    for name, command, parameters in (
        ('null_node', null_node, None),
        ('controller', [executable], dds_parameters(robot_name, params_path)),
    ):
        with ControllerProcess(command, parameters, environment) as node_process:
            try:
                runs[name] = _dds_runs(robot_name, node_process, seconds, rates_hz, domain_id)
            except (TimeoutError, WbcError) as error:
                return {'status': f'failed: {error}', 'controller_log': node_process.log_tail()}
    return {
        'status': 'ok',
        'domain_id': domain_id,
        'seconds': seconds,
        'rates': runs['controller'],
        'null_node_rates': runs['null_node'],
    }


def null_node_main() -> None:
    """A node that answers every joint state with its positions and computes nothing.

    Same topics, QoS and executor as `wbc_controller`; what it costs is rclpy and DDS alone.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    rclpy.init(args=sys.argv)
    node = rclpy_node(CONTROLLER_NODE, None)
    command = Float64MultiArray()
    publisher = node.create_publisher(
        Float64MultiArray,
        'effort_controller/commands',
        QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE),
    )

    def answer(message: JointState) -> None:
        command.data = message.position
        publisher.publish(command)

    node.create_subscription(
        JointState,
        'joint_states',
        answer,
        QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT),
    )
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


def _free_domain_id() -> int:
    """A ROS domain for this run only, so other systems on the machine are not disturbed."""
    return int(np.random.default_rng().integers(1, 101))


def _dds_runs(
    robot_name: str,
    node_process: ControllerProcess,
    seconds: float,
    rates_hz: Sequence[float],
    domain_id: int,
) -> dict:
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        probe = _DdsProbe(example_robot(robot_name), context)
        try:
            probe.wait_for_controller(node_process)
            probe.fingerprint(node_process)
            with PacedPublisher(domain_id, robot_name) as publisher:
                return {
                    str(int(rate)): probe.run(publisher, rate, seconds, node_process.process.pid)
                    for rate in rates_hz
                }
        finally:
            probe.close()
    finally:
        rclpy.try_shutdown(context=context)


def joint_state_messages(robot: RobotModel, message_type: type) -> list:
    """The :data:`DDS_FINGERPRINTS` distinct joint states the DDS run cycles through."""
    messages = []
    for sample in random_samples(robot, DDS_FINGERPRINTS, seed=7):
        message = message_type()
        message.name = list(robot.joint_names)
        message.position = sample.positions.tolist()
        message.velocity = sample.velocities.tolist()
        messages.append(message)
    return messages


def publish_stamped(publisher: object, message: object) -> int:
    """Stamp `message` with the system time (ns, returned) and publish it."""
    stamp = time.time_ns()
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
    publisher.publish(message)
    return stamp


class PacedPublisher:
    """A child process that publishes the joint states on a fixed-rate schedule.

    Its own process, so that pacing never waits for the probe's callbacks (one GIL) and the
    probe's executor never waits for the pacing. A late send never triggers a catch-up burst:
    two sends are at least half a period apart, as from a robot driver whose cycle slipped
    (a burst would make the node's depth-1 subscription drop states it never had a chance to
    answer). Use as a context manager; :meth:`run` returns (state index, stamp ns) per send.
    """

    def __init__(self, domain_id: int, robot_name: str) -> None:
        import multiprocessing

        self._connection, child_connection = multiprocessing.Pipe()
        self.process = multiprocessing.get_context('spawn').Process(
            target=_paced_publisher_main,
            args=(domain_id, robot_name, child_connection),
            daemon=True,
        )

    def __enter__(self) -> 'PacedPublisher':
        self.process.start()
        if not self._connection.poll(DDS_STARTUP_TIMEOUT_S) or self._connection.recv() != 'ready':
            raise TimeoutError('the joint-state publisher process did not connect')
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.is_alive():
            self._connection.send(None)
            self.process.join(timeout=10.0)
        if self.process.is_alive():
            self.process.kill()

    def start(self, rate_hz: float, seconds: float) -> None:
        """Begin a run; poll :meth:`done` and fetch the sends with :meth:`sends`."""
        self._connection.send((rate_hz, seconds))

    def done(self) -> bool:
        """Whether the current run has finished."""
        return self._connection.poll()

    def sends(self) -> list[tuple[int, int]]:
        """(state index, stamp ns) of every send of the finished run."""
        return self._connection.recv()


def _paced_publisher_main(domain_id: int, robot_name: str, connection: object) -> None:
    """Body of :class:`PacedPublisher`'s process: runs (rate, seconds) until sent None."""
    import rclpy
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        node = rclpy_node('wbc_bench_publisher', context)
        publisher = node.create_publisher(JointState, 'joint_states', qos_profile_sensor_data)
        messages = joint_state_messages(example_robot(robot_name), JointState)
        deadline = time.monotonic() + DDS_STARTUP_TIMEOUT_S
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        connection.send('ready')
        while (request := connection.recv()) is not None:
            rate_hz, seconds = request
            connection.send(_paced_sends(publisher, messages, rate_hz, seconds))
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def _paced_sends(
    publisher: object, messages: list, rate_hz: float, seconds: float
) -> list[tuple[int, int]]:
    period = 1.0 / rate_hz
    sends, next_send = [], time.monotonic()
    end = next_send + seconds
    while (now := time.monotonic()) < end:
        if now < next_send:
            time.sleep(next_send - now)
            continue
        index = len(sends) % len(messages)
        sends.append((index, publish_stamped(publisher, messages[index])))
        next_send = max(next_send + period, now + 0.5 * period)
    return sends


class _DdsProbe:
    """Publishes joint states, receives commands and matches each command to its state.

    Float64MultiArray carries no stamp, so commands are matched by content: the probe cycles
    through :data:`DDS_FINGERPRINTS` distinct joint states and first records the command each
    one produces (the controller is deterministic without a torque-rate limit). A command then
    names its state; its latency is its receipt time minus the stamp of the latest send of that
    state.
    """

    def __init__(self, robot: RobotModel, context: object) -> None:
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self._node = rclpy_node('wbc_bench_probe', context)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self._node)
        self._publisher = self._node.create_publisher(
            JointState, 'joint_states', qos_profile_sensor_data
        )
        command_qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self._node.create_subscription(
            Float64MultiArray, 'effort_controller/commands', self._on_command, command_qos
        )
        self._messages = joint_state_messages(robot, JointState)
        self._fingerprints: dict[bytes, int] = {}
        self._received: list[tuple[int, bytes]] = []

    def _on_command(self, message: object, info: dict) -> None:
        # The middleware's own receipt time (system clock, like the stamps), so that the
        # probe's executor delay is not counted; the callback time where it is not set.
        received = info.get('received_timestamp') or time.time_ns()
        self._received.append((received, message.data.tobytes()))

    def _publish(self, index: int) -> int:
        return publish_stamped(self._publisher, self._messages[index])

    def _take_received(self) -> list[tuple[int, bytes]]:
        received, self._received = self._received, []
        return received

    def _spin_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._executor.spin_once(timeout_sec=0.01)
            if done():
                return True
        return False

    def wait_for_controller(self, node_process: ControllerProcess) -> None:
        """Publish the first state until the node answers (discovery and start-up)."""
        deadline = time.monotonic() + DDS_STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if node_process.process.poll() is not None:
                raise WbcError(f'{CONTROLLER_EXECUTABLE} exited:\n{node_process.log_tail()}')
            self._publish(0)
            if self._spin_until(lambda: bool(self._received), 0.2):
                self._take_received()
                return
        raise TimeoutError(f'{CONTROLLER_EXECUTABLE} did not answer within the start-up time')

    def fingerprint(self, node_process: ControllerProcess) -> None:
        """Record the command of every state, one state at a time."""
        for index in range(len(self._messages)):
            self._take_received()
            self._publish(index)
            if not self._spin_until(lambda: bool(self._received), 2.0):
                raise TimeoutError(f'no command for fingerprint state {index}')
            _, data = self._take_received()[-1]
            if data in self._fingerprints:
                raise WbcError('two joint states gave the same command: cannot match commands')
            self._fingerprints[data] = index

    def run(self, publisher: PacedPublisher, rate_hz: float, seconds: float, pid: int) -> dict:
        """Have `publisher` send at `rate_hz` (warm-up, then `seconds`); match the commands."""
        self._publish_from(publisher, rate_hz, DDS_WARMUP_S)
        self._take_received()
        cpu_0, probe_0, wall_0 = process_cpu_seconds(pid), time.process_time(), time.monotonic()
        publisher_0 = process_cpu_seconds(publisher.process.pid)
        sends = self._publish_from(publisher, rate_hz, seconds)
        cpu_1, probe_1, wall_1 = process_cpu_seconds(pid), time.process_time(), time.monotonic()
        publisher_1 = process_cpu_seconds(publisher.process.pid)
        self._spin_until(lambda: False, min(0.5, 100.0 / rate_hz))  # commands still in flight
        report = match_commands(sends, self._take_received(), self._fingerprints, 1 / rate_hz)
        intervals_ns = np.diff([stamp for _, stamp in sends])
        wall = wall_1 - wall_0
        report['rate_hz'] = rate_hz
        report['achieved_rate_hz'] = len(sends) / wall
        report['send_interval_us'] = summary_us(intervals_ns) if intervals_ns.size else None
        report['controller_cpu_share'] = (cpu_1 - cpu_0) / wall
        report['probe_cpu_share'] = (probe_1 - probe_0 + publisher_1 - publisher_0) / wall
        return report

    def _publish_from(
        self, publisher: PacedPublisher, rate_hz: float, seconds: float
    ) -> list[tuple[int, int]]:
        """Receive commands while the publisher process runs; its sends."""
        publisher.start(rate_hz, seconds)
        while not publisher.done():
            self._executor.spin_once(timeout_sec=0.005)
        return publisher.sends()

    def close(self) -> None:
        """Destroy the probe node."""
        self._executor.shutdown()
        self._node.destroy_node()


def match_commands(
    sends: Sequence[tuple[int, int]],
    received: Sequence[tuple[int, bytes]],
    fingerprints: dict[bytes, int],
    period_s: float,
) -> dict:
    """Pair each received command with the send it answers; count what is missing.

    Args:
        sends: (state index, stamp ns) of every joint state sent, in order.
        received: (receipt time ns, command bytes) of every command received.
        fingerprints: command bytes -> the state index that produces it.
        period_s: publishing period; a command later than one period after its stamp is late.

    A command answers the latest send of its state before its receipt; a command that matches
    no state, or a send already answered, is counted as unmatched. Sends left unanswered are
    missed.
    """
    answered = np.zeros(len(sends), dtype=bool)
    latest: dict[int, int] = {}  # state index -> position in `sends` of its latest send so far
    latencies, unmatched, cursor = [], 0, 0
    for receipt, data in sorted(received):
        while cursor < len(sends) and sends[cursor][1] <= receipt:
            latest[sends[cursor][0]] = cursor
            cursor += 1
        position = latest.get(fingerprints.get(data, -1))
        if position is None or answered[position]:
            unmatched += 1
            continue
        answered[position] = True
        latencies.append(receipt - sends[position][1])
    missed = int(len(sends) - answered.sum())
    latency = np.asarray(latencies, dtype=float)
    return {
        'sent': len(sends),
        'received': len(received),
        'missed': missed,
        'missed_fraction': missed / max(len(sends), 1),
        'late': int(np.count_nonzero(latency > period_s * 1e9)),
        'unmatched': unmatched,
        'latency_us': summary_us(latency) if latency.size else None,
    }


def rclpy_node(name: str, context: object) -> object:
    """An rclpy node in `context` (imported here so that the module stays ROS-free)."""
    from rclpy.node import Node

    return Node(name, context=context)


# ---------------------------------------------------------------------------------------------
# 3. Conditioning diagnostics: cost and accuracy


def chain_robot(n_links: int) -> RobotModel:
    """Seed 001's planar chain of `n_links` identical rods."""
    return RobotModel.from_urdf_string(serial_chain_urdf(n_links))


def conditioning_cost(
    name: str, robot: RobotModel, repeats: int = CONDITIONING_REPEATS, seed: int = 0
) -> dict:
    """Per-call cost of κ₂ (eigvalsh), δ and the scaled δₛ on M at random configurations."""
    state = RobotState(robot)
    samples = random_samples(robot, 8, seed)
    inertias = []
    for sample in samples:
        state.update(
            robot.configuration(sample.positions, sample.base_pose),
            robot.velocity(sample.velocities, sample.base_twist),
        )
        inertias.append(state.mass_matrix.copy())
    estimator = ScaledDiagonalRatioEstimator()
    estimator.update(inertias[0], 0.0)  # anchored: every later sample is the cheap path
    clock = time.perf_counter_ns
    costs = np.empty((repeats, 3))
    for repeat in range(repeats):
        inertia = inertias[repeat % len(inertias)]
        start = clock()
        condition_number(inertia)
        exact_done = clock()
        diagonal_ratio(inertia)
        ratio_done = clock()
        estimator.update(inertia, 1e-3 * (repeat + 1))
        costs[repeat] = (exact_done - start, ratio_done - exact_done, clock() - ratio_done)
    kappa_us, ratio_us, scaled_us = (float(np.median(column)) * 1e-3 for column in costs.T)
    return {
        'model': name,
        'n': robot.nv,
        'condition_number_us': kappa_us,
        'diagonal_ratio_us': ratio_us,
        'scaled_diagonal_ratio_us': scaled_us,
        'speedup_diagonal_ratio': kappa_us / ratio_us,
        'speedup_scaled_diagonal_ratio': kappa_us / scaled_us,
    }


def conditioning_costs(
    chain_sizes: Sequence[int] = CHAIN_SIZES,
    robot_names: Sequence[str] = tuple(EXAMPLE_ROBOTS),
    repeats: int = CONDITIONING_REPEATS,
) -> list[dict]:
    """:func:`conditioning_cost` for serial chains and the example robots that are installed."""
    rows = [conditioning_cost(f'serial_chain_{n}', chain_robot(n), repeats) for n in chain_sizes]
    for name in robot_names:
        try:
            robot = example_robot(name)
        except ModelError:
            continue
        rows.append(conditioning_cost(name, robot, repeats))
    return rows


def swing(n_links: int, start: str, duration_s: float = SWING_DURATION_S) -> dict:
    """Seed 001's swing: the chain falls from rest; κ, δ and δₛ every 10 ms.

    As in test/test_conditioning.py: `pin.aba` with semi-implicit Euler at 1 ms; δₛ anchored
    at t = 0 only (the paper's estimator), and re-anchored every 0.25 s.
    """
    model = pin.buildModelFromXML(serial_chain_urdf(n_links))
    data = model.createData()
    q, v, tau = np.zeros(n_links), np.zeros(n_links), np.zeros(n_links)
    q[0] = SWING_STARTS[start]
    paper = ScaledDiagonalRatioEstimator(exact_period_s=SWING_SAMPLE_PERIOD_S)
    reanchored = ScaledDiagonalRatioEstimator(
        rescale_period_s=SWING_RESCALE_PERIOD_S, exact_period_s=SWING_SAMPLE_PERIOD_S
    )
    steps_per_sample = round(SWING_SAMPLE_PERIOD_S / SWING_DT_S)
    rows = []
    for step in range(round(duration_s / SWING_DT_S) + 1):
        if step % steps_per_sample == 0:
            inertia = pin.crba(model, data, q)
            t_s = step * SWING_DT_S
            estimate, again = paper.update(inertia, t_s), reanchored.update(inertia, t_s)
            rows.append(
                (
                    t_s,
                    estimate.condition_number,
                    estimate.scaled_diagonal_ratio,
                    estimate.diagonal_ratio,
                    estimate.estimate_relative_error,
                    again.estimate_relative_error,
                )
            )
        v += SWING_DT_S * pin.aba(model, data, q, v, tau)
        q += SWING_DT_S * v
    return _swing_record(n_links, start, rows)


def _swing_record(n_links: int, start: str, rows: list[tuple]) -> dict:
    time_s, kappa, scaled, ratio, error, error_reanchored = (list(column) for column in zip(*rows))
    errors, errors_reanchored = np.array(error[1:]), np.array(error_reanchored[1:])
    correlation = float(np.corrcoef(np.log(kappa), np.log(ratio))[0, 1]) if len(rows) > 2 else None
    return {
        'n': n_links,
        'start': start,
        'samples': len(rows),
        'correlation_log_kappa_log_delta': correlation,
        'median_relative_error': float(np.median(errors)) if errors.size else None,
        'max_relative_error': float(errors.max()) if errors.size else None,
        'median_relative_error_reanchored': (
            float(np.median(errors_reanchored)) if errors.size else None
        ),
        'max_relative_error_reanchored': float(errors_reanchored.max()) if errors.size else None,
        'series': {
            'time_s': time_s,
            'condition_number': kappa,
            'scaled_diagonal_ratio': scaled,
            'relative_error': [None, *errors.tolist()],
        },
    }


def plot_conditioning(costs: list[dict], swings: list[dict], path: Path) -> None:
    """Three panels as a PNG: cost against n; κ₂ and δₛ along the swings; δₛ's error."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    _plot_costs(axes[0], costs)
    _plot_swings(axes[1], axes[2], swings)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _plot_costs(axes: object, costs: list[dict]) -> None:
    chains = sorted(
        (row for row in costs if row['model'].startswith('serial_chain')), key=lambda row: row['n']
    )
    sizes = [row['n'] for row in chains]
    for key, label in (
        ('condition_number_us', 'exact κ₂ (eigvalsh)'),
        ('diagonal_ratio_us', 'diagonal ratio δ'),
        ('scaled_diagonal_ratio_us', 'scaled diagonal ratio δₛ'),
    ):
        axes.loglog(sizes, [row[key] for row in chains], 'o-', label=label)
    axes.set(xlabel='links n', ylabel='µs per call (median)', title='Cost per sample, chains')
    axes.legend()


def _plot_swings(values_axes: object, error_axes: object, swings: list[dict]) -> None:
    for record in swings:
        series, label = record['series'], f'n={record["n"]}, {record["start"]}'
        (line,) = values_axes.semilogy(series['time_s'], series['condition_number'], label=label)
        values_axes.semilogy(
            series['time_s'], series['scaled_diagonal_ratio'], '--', color=line.get_color()
        )
        error_axes.semilogy(
            series['time_s'][1:], series['relative_error'][1:], color=line.get_color(), label=label
        )
    values_axes.set(xlabel='t (s)', ylabel='κ₂ (solid), δₛ (dashed)', title="Seed 001's swing")
    values_axes.legend(fontsize='small')
    error_axes.set(
        xlabel='t (s)', ylabel='|δₛ − κ₂| / κ₂', title='Estimator error (anchored at t = 0)'
    )
    error_axes.legend(fontsize='small')


# ---------------------------------------------------------------------------------------------
# Targets and report


@dataclass(frozen=True)
class Target:
    """A goal of issue 7, read from the results by `path`."""

    name: str
    path: tuple[str, ...]
    limit: float
    at_most: bool  # True: value <= limit passes; False: value >= limit passes
    unit: str


TARGETS = (
    Target('Panda tick p50', ('tick', 'panda', 'tick_us', 'median'), 60.0, True, 'µs'),
    Target('Panda tick p99', ('tick', 'panda', 'tick_us', 'p99'), 150.0, True, 'µs'),
    Target('Panda tick / floor', ('tick', 'panda', 'ratio'), 10.0, True, ''),
    Target('Talos tick p50', ('tick', 'talos', 'tick_us', 'median'), 300.0, True, 'µs'),
    Target('Talos tick p99', ('tick', 'talos', 'tick_us', 'p99'), 600.0, True, 'µs'),
    Target(
        'DDS 1 kHz latency p99', ('dds', 'rates', '1000', 'latency_us', 'p99'), 1000.0, True, 'µs'
    ),
    Target('DDS 1 kHz missed', ('dds', 'rates', '1000', 'missed_fraction'), 0.001, True, ''),
    Target('δ cheaper than κ at n = 38', ('conditioning', 'speedup_at_38'), 20.0, False, '×'),
)


def _lookup(results: dict, path: tuple[str, ...]) -> float | None:
    value = results
    for key in path:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return float(value)


def evaluate_targets(results: dict) -> list[dict]:
    """PASS / MISS per target, or SKIPPED where the run did not measure it."""
    rows = []
    for target in TARGETS:
        value = _lookup(results, target.path)
        if value is None:
            status = 'SKIPPED'
        else:
            passed = value <= target.limit if target.at_most else value >= target.limit
            status = 'PASS' if passed else 'MISS'
        comparison = '<=' if target.at_most else '>='
        rows.append(
            {
                'name': target.name,
                'target': f'{comparison} {target.limit:g}{target.unit}',
                'value': value,
                'status': status,
            }
        )
    return rows


def format_report(results: dict) -> str:
    """The human-readable tables."""
    lines = [
        f'wbc_bench on {results["meta"]["machine"]} '
        f'(load average {results["meta"]["load_average_start"]})',
        '',
    ]
    lines += _tick_table(results.get('tick', {}))
    lines += _dds_table(results.get('dds'))
    lines += _conditioning_table(results.get('conditioning'))
    lines += ['Targets (issue 7)', f'  {"target":30s} {"goal":>12s} {"value":>12s}  status']
    for row in results['targets']:
        value = '-' if row['value'] is None else f'{row["value"]:.4g}'
        lines.append(f'  {row["name"]:30s} {row["target"]:>12s} {value:>12s}  {row["status"]}')
    return '\n'.join(lines)


def _tick_table(ticks: dict) -> list[str]:
    lines = [
        'Per tick (joint state -> torque, µs; floor = Pinocchio minimum, interleaved)',
        f'  {"scenario":12s} {"nv":>3s} {"p50":>8s} {"p99":>8s} {"max":>9s} '
        f'{"floor p50":>10s} {"ratio":>6s} {"cpu ratio":>9s}',
    ]
    for name, row in ticks.items():
        tick, floor = row['tick_us'], row['floor_us']
        lines.append(
            f'  {name:12s} {row["nv"]:3d} {tick["median"]:8.1f} {tick["p99"]:8.1f} '
            f'{tick["max"]:9.1f} {floor["median"]:10.1f} {row["ratio"]:6.1f} '
            f'{row["ratio_cpu"]:9.1f}'
        )
    return [*lines, '']


def _dds_table(dds: dict | None) -> list[str]:
    if dds is None:
        return ['DDS: skipped (--skip-dds)', '']
    if dds['status'] != 'ok':
        return [f'DDS: {dds["status"]}', '']
    lines = [
        'End to end over DDS (stamp -> command receipt, µs; null node = rclpy + DDS alone)',
        f'  {"node":10s} {"rate":>6s} {"sent":>7s} {"missed":>7s} {"late":>6s} {"p50":>8s} '
        f'{"p99":>8s} {"max":>9s} {"node CPU":>8s} {"probe CPU":>9s}',
    ]
    for node, key in (('null node', 'null_node_rates'), ('controller', 'rates')):
        for row in dds.get(key, {}).values():
            lines.append(f'  {node:10s} {_dds_row(row)}')
    return [*lines, '']


def _dds_row(row: dict) -> str:
    latency = row['latency_us'] or {'median': math.nan, 'p99': math.nan, 'max': math.nan}
    return (
        f'{row["rate_hz"]:6.0f} {row["sent"]:7d} {row["missed"]:7d} {row["late"]:6d} '
        f'{latency["median"]:8.1f} {latency["p99"]:8.1f} {latency["max"]:9.1f} '
        f'{100 * row["controller_cpu_share"]:7.1f}% {100 * row["probe_cpu_share"]:8.1f}%'
    )


def _conditioning_table(conditioning: dict | None) -> list[str]:
    if conditioning is None:
        return []
    lines = [
        'Conditioning diagnostics: cost per call (µs, median)',
        f'  {"model":18s} {"n":>4s} {"kappa":>9s} {"delta":>7s} {"delta_s":>8s} '
        f'{"kappa/delta":>11s}',
    ]
    for row in conditioning['cost']:
        lines.append(
            f'  {row["model"]:18s} {row["n"]:4d} {row["condition_number_us"]:9.1f} '
            f'{row["diagonal_ratio_us"]:7.1f} {row["scaled_diagonal_ratio_us"]:8.1f} '
            f'{row["speedup_diagonal_ratio"]:11.1f}'
        )
    lines += [
        '',
        "Seed 001's swing: |delta_s - kappa| / kappa (anchored at t = 0 / re-anchored)",
        f'  {"start":15s} {"n":>3s} {"corr":>6s} {"median":>8s} {"max":>8s} '
        f'{"median re":>10s} {"max re":>8s}',
    ]
    for row in conditioning['swing']:
        lines.append(
            f'  {row["start"]:15s} {row["n"]:3d} '
            f'{_number(row["correlation_log_kappa_log_delta"])} '
            f'{_number(row["median_relative_error"], 8)} '
            f'{_number(row["max_relative_error"], 8)} '
            f'{_number(row["median_relative_error_reanchored"], 10)} '
            f'{_number(row["max_relative_error_reanchored"], 8)}'
        )
    if conditioning.get('plot'):
        lines.append(f'  plot: {conditioning["plot"]}')
    return [*lines, '']


def _number(value: float | None, width: int = 6) -> str:
    return f'{"-":>{width}s}' if value is None else f'{value:{width}.3f}'


def conditioning_section(
    chain_sizes: Sequence[int] = CHAIN_SIZES,
    robot_names: Sequence[str] = tuple(EXAMPLE_ROBOTS),
    repeats: int = CONDITIONING_REPEATS,
    swing_chains: Sequence[int] = SWING_CHAINS,
    swing_duration_s: float = SWING_DURATION_S,
    plot_path: Path | None = None,
) -> dict:
    """Costs, swing errors and (optionally) the plot."""
    costs = conditioning_costs(chain_sizes, robot_names, repeats)
    swings = [swing(n, start, swing_duration_s) for start in SWING_STARTS for n in swing_chains]
    if plot_path is not None:
        plot_conditioning(costs, swings, plot_path)
    at_38 = [row for row in costs if row['model'] == 'serial_chain_38']
    return {
        'cost': costs,
        'speedup_at_38': at_38[0]['speedup_diagonal_ratio'] if at_38 else None,
        'swing': swings,
        'plot': str(plot_path) if plot_path is not None else None,
    }


def machine_description() -> dict:
    """What the figures depend on: CPU, Python, library versions, load, BLAS threads."""
    return {
        'machine': f'{platform.machine()} {os.cpu_count()} CPUs ({_cpu_model()})',
        'python': platform.python_version(),
        'numpy': np.__version__,
        'pinocchio': pin.__version__,
        'blas_threads': {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES},
        'load_average_start': [round(value, 2) for value in os.getloadavg()],
        'started': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
    }


def _cpu_model() -> str:
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown CPU'


# ---------------------------------------------------------------------------------------------
# Command line


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of `wbc_bench`."""
    parser = argparse.ArgumentParser(
        prog='wbc_bench',
        description='Per-tick cost, DDS latency and conditioning-estimator cost, with targets.',
    )
    parser.add_argument(
        '--config',
        nargs='+',
        type=Path,
        default=[],
        metavar='YAML',
        help='controller params files to time (default: built-in Panda and Talos scenarios)',
    )
    parser.add_argument(
        '--robot',
        action='append',
        choices=sorted(EXAMPLE_ROBOTS),
        help='built-in scenario(s) to time (panda, talos), or the robot of a '
        '--config file without urdf_path',
    )
    parser.add_argument('--ticks', type=int, default=DEFAULT_TICKS)
    parser.add_argument('--json', type=Path, help='write every figure to this file')
    parser.add_argument('--plot', type=Path, help='conditioning plot (PNG)')
    parser.add_argument('--dds-seconds', type=float, default=DEFAULT_DDS_SECONDS)
    parser.add_argument('--skip-dds', action='store_true')
    parser.add_argument('--skip-conditioning', action='store_true')
    parser.add_argument(
        '--domain-id', type=int, help='ROS domain of the DDS run (default: random)'
    )
    arguments = parser.parse_args(argv)
    if arguments.ticks < 1:
        parser.error('--ticks must be >= 1')
    return arguments


def scenarios_from(arguments: argparse.Namespace) -> list[Scenario]:
    """Config files if given, else the built-in scenarios of --robot (default: all)."""
    if arguments.config:
        robot_name = arguments.robot[0] if arguments.robot else None
        return [config_scenario(path, robot_name) for path in arguments.config]
    names = arguments.robot or list(BUILT_IN_SCENARIOS)
    unknown = [name for name in names if name not in BUILT_IN_SCENARIOS]
    if unknown:
        raise ModelError(f'no built-in scenario for {unknown}; give a --config file')
    return [BUILT_IN_SCENARIOS[name]() for name in names]


def run(arguments: argparse.Namespace) -> dict:
    """Every measurement the arguments ask for, as the JSON document."""
    results: dict = {'meta': machine_description()}
    results['meta']['ticks'] = arguments.ticks
    results['tick'] = {
        scenario.name: measure_ticks(scenario, arguments.ticks)
        for scenario in scenarios_from(arguments)
    }
    if not arguments.skip_dds:
        results['dds'] = dds_benchmark(arguments.dds_seconds, domain_id=arguments.domain_id)
    if not arguments.skip_conditioning:
        results['conditioning'] = conditioning_section(plot_path=arguments.plot)
    results['meta']['load_average_end'] = [round(value, 2) for value in os.getloadavg()]
    results['targets'] = evaluate_targets(results)
    return results


def single_threaded_blas(argv: Sequence[str]) -> None:
    """Re-run this process with single-threaded BLAS unless the user chose a thread count.

    Multithreaded OpenBLAS on these small matrices adds millisecond tails (threads woken for
    a 38×38 product on a loaded machine); a real-time controller runs with one BLAS thread.
    The variables must be set before numpy loads, hence the re-exec.
    """
    if any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return
    environment = dict(os.environ, **dict.fromkeys(BLAS_THREAD_VARIABLES, '1'))
    os.execve(sys.executable, [sys.executable, '-m', 'wbc_control.benchmark', *argv], environment)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script `wbc_bench` (called with `argv`, it runs in this process as it is)."""
    if argv is None:
        argv = sys.argv[1:]
        parse_arguments(argv)  # --help and usage errors before the re-exec
        single_threaded_blas(argv)
    arguments = parse_arguments(argv)
    try:
        results = run(arguments)
    except WbcError as error:
        print(f'wbc_bench: {error}', file=sys.stderr)
        return 1
    print(format_report(results))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(results, indent=2) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
