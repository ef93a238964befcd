"""The processes of the DDS measurement: the node under test and the paced publisher.

rclpy and the message packages are imported only inside the functions that need them, so that
this module stays importable without ROS.
"""

import os
from pathlib import Path
import signal
import subprocess
import tempfile
import time

from wbc_control.benchmark.scenarios import CONTROLLER_NODE, example_robot
from wbc_control.benchmark.tick import random_samples
from wbc_control.model.robot_model import RobotModel

DDS_STARTUP_TIMEOUT_S = 60.0
DDS_FINGERPRINTS = 50  # distinct joint states cycled through; commands identify them


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


def rclpy_node(name: str, context: object) -> object:
    """An rclpy node in `context` (imported here so that the module stays ROS-free)."""
    from rclpy.node import Node

    return Node(name, context=context)
