"""End-to-end latency through the controller node `wbc_controller` over DDS.

The node runs as a subprocess on loopback, fed `joint_states` at 1 kHz and 500 Hz; latency from
the state's stamp to the receipt of its command, missed and late commands, and the node's CPU
share. The same runs go first through a null node, the floor that rclpy and DDS set on this
machine. Skipped when `wbc_controller` is not installed.

rclpy and the message packages are imported only inside the functions that need them, so that
this module stays importable without ROS.
"""

from collections.abc import Callable, Sequence
import os
from pathlib import Path
import shutil
import sys
import time

import numpy as np

from wbc_control.benchmark.dds_processes import (
    DDS_STARTUP_TIMEOUT_S,
    ControllerProcess,
    PacedPublisher,
    joint_state_messages,
    process_cpu_seconds,
    publish_stamped,
    rclpy_node,
)
from wbc_control.benchmark.scenarios import CONTROLLER_NODE, example_robot
from wbc_control.benchmark.tick import summary_us
from wbc_control.config.shipped import node_parameters, shipped_config
from wbc_control.exceptions import WbcError
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel

DEFAULT_DDS_SECONDS = 20.0
DDS_RATES_HZ = (1000.0, 500.0)
DDS_WARMUP_S = 1.0
FINGERPRINT_ATTEMPTS = 5
CONTROLLER_EXECUTABLE = 'wbc_controller'


def controller_executable() -> str | None:
    """Path of the `wbc_controller` console script (next to this interpreter first)."""
    candidate = Path(sys.executable).parent / CONTROLLER_EXECUTABLE
    if candidate.exists():
        return str(candidate)
    return shutil.which(CONTROLLER_EXECUTABLE)


def dds_parameters(robot_name: str = 'panda', params_path: Path | None = None) -> dict:
    """Node parameters for the DDS run: the shipped Panda config (or `params_path`).

    The URDF comes from example-robot-data unless the file names one; the joint-state timeout
    is raised so that the watchdog stays quiet while commands are being fingerprinted, and the
    soft start and the torque rate limit are off: the probe matches each command to the state
    it answers by its value, which must then depend on that state alone, not on the history
    (the cost of the tick is the same).
    """
    path = params_path or shipped_config(f'{robot_name}_controller.yaml')
    parameters = node_parameters(path, CONTROLLER_NODE)
    if not (parameters.get('robot_description') or parameters.get('urdf_path')):
        urdf, _ = example_robot_urdf(robot_name)
        parameters['urdf_path'] = str(urdf)
    parameters['joint_state_timeout'] = 5.0
    parameters['soft_start_time'] = 0.0
    parameters['torque_rate_limit'] = 0.0
    return parameters


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
        'from wbc_control.benchmark.dds import null_node_main as m; m()',
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
        'robot': robot_name,
        'domain_id': domain_id,
        'seconds': seconds,
        'rates': runs['controller'],
        'null_node_rates': runs['null_node'],
    }


def null_node_main() -> None:
    """A node that answers every joint state with its positions and computes nothing.

    Same topics, QoS and executor (`wbc_control.ros.executors`) as `wbc_controller`; what it
    costs is rclpy and DDS alone.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from wbc_control.ros.executors import create_executor

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
    executor = create_executor()
    executor.add_node(node)
    try:
        executor.spin()
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
        """Record the command of every state, one state at a time.

        On a loaded machine a command can arrive late (the previous state's answer, or the
        watchdog's zero safe command from start-up): a command already recorded or all zeros
        is not taken as this state's, and the state is sent again.
        """
        for index in range(len(self._messages)):
            for _ in range(FINGERPRINT_ATTEMPTS):
                self._take_received()
                self._publish(index)
                if not self._spin_until(lambda: bool(self._received), 2.0):
                    continue
                _, data = self._take_received()[-1]
                if any(data) and data not in self._fingerprints:
                    self._fingerprints[data] = index
                    break
            else:
                raise WbcError(
                    f'no distinct command for fingerprint state {index} in '
                    f'{FINGERPRINT_ATTEMPTS} attempts: cannot match commands'
                )

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
