"""`wbc_bench launch`: does `wbc_sim.launch.py` keep real time on this machine?

Starts `wbc_sim.launch.py robot:=<robot>` (simulator, controller and diagnostics with the
shipped configuration) through the real `launch` / `launch_ros`: `ros2 launch` when it is on
PATH, else, from a source checkout, the launch harness the launch tests use
(test/ros/launch_support.py) over a temporary install prefix. A probe node in the same (random)
ROS domain then counts, over `--seconds` of wall time after `--warmup` seconds:

- the joint-state rate (`joint_states` per wall-clock second; the shipped `publish_rate` is
  500 per simulated second), and the rate the controller ticked at (the mean of its
  `joint_state_rate_hz` on /diagnostics);
- the fraction of states answered (`effort_controller/commands` per `joint_states` received,
  both counted on raw messages; a starved probe undercounts both);
- the real-time factor (simulated seconds on `/clock` per wall-clock second).

The probe subscribes best effort, so that it never slows a publisher down; its own CPU share is
reported too. Run it on an otherwise quiet machine for figures that mean anything.
"""

import argparse
from collections.abc import Sequence
import importlib.util
import json
import os
from pathlib import Path
import shutil
import signal
import subprocess
import tempfile
import time

from wbc_control.exceptions import WbcError

SOURCE_TREE = Path(__file__).resolve().parents[2]
DEFAULT_SECONDS = 20.0
DEFAULT_WARMUP_S = 5.0
#: Wall-clock bound on the first command: start-up imports and compiles on a loaded machine.
STARTUP_TIMEOUT_S = 120.0
#: Simulated time (s) the loop must advance, with commands flowing, before the warm-up starts:
#: the controller's first command (its safe command, before any state) comes before its first
#: tick, which compiles its kernels for seconds on a cold cache, and in lock-step the simulated
#: clock advances only on answered states.
STARTUP_SIM_S = 0.2
ROBOTS = ('panda', 'talos', 'solo12')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `wbc_bench launch`."""
    parser.add_argument('--robot', default='panda', choices=ROBOTS)
    parser.add_argument(
        '--seconds', type=float, default=DEFAULT_SECONDS, help='wall time counted (s)'
    )
    parser.add_argument(
        '--warmup', type=float, default=DEFAULT_WARMUP_S, help='wall time before counting (s)'
    )
    parser.add_argument('--domain-id', type=int, help='ROS domain (default: random)')
    parser.add_argument('--json', type=Path, help='write the figures to this file')
    parser.add_argument(
        'launch_arguments', nargs='*', help="more launch arguments, e.g. 'lockstep:=true'"
    )


def launch_command(robot: str, prefix_root: Path, extra: Sequence[str] = ()) -> list[str]:
    """`ros2 launch` when installed, else the source checkout's launch harness.

    Raises:
        WbcError: neither is available.
    """
    arguments = [f'robot:={robot}', *extra]
    if shutil.which('ros2'):
        return ['ros2', 'launch', 'wbc_control', 'wbc_sim.launch.py', *arguments]
    harness = SOURCE_TREE / 'test' / 'ros' / 'launch_support.py'
    if not harness.is_file():
        raise WbcError('wbc_bench launch needs `ros2` on PATH (source your ROS 2 installation)')
    # A source checkout without ROS 2: the launch tests' harness (not installed, not a dependency).
    spec = importlib.util.spec_from_file_location('launch_support', harness)
    launch_support = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch_support)

    distro = None
    if launch_support.launch_sources()[0].id != 'installed':
        distro = os.environ.get('LAUNCH_DISTRO', 'rolling')
    prefix = launch_support.install_prefix(prefix_root / 'install')
    return launch_support.launch_command(distro, prefix, 'wbc_sim.launch.py', *arguments)


class Probe:
    """Counts joint states, commands and simulated time; spun by the caller."""

    def __init__(self, context: object) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.node import Node
        from rclpy.qos import qos_profile_sensor_data
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.node = Node('wbc_launch_rate_probe', context=context)
        self.states = self.commands = 0
        self.sim_time_s: float | None = None
        self.controller_rates: list[float] = []
        qos = qos_profile_sensor_data
        # Raw (serialized) messages: counting costs the probe no deserialisation.
        self.node.create_subscription(JointState, 'joint_states', self._on_state, qos, raw=True)
        self.node.create_subscription(
            Float64MultiArray, 'effort_controller/commands', self._on_command, qos, raw=True
        )
        self.node.create_subscription(Clock, '/clock', self._on_clock, qos)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)

    def _on_state(self, message: object) -> None:
        self.states += 1

    def _on_command(self, message: object) -> None:
        self.commands += 1

    def _on_diagnostics(self, message: object) -> None:
        for status in message.status:
            for value in status.values:
                if value.key == 'joint_state_rate_hz':
                    self.controller_rates.append(float(value.value))

    def _on_clock(self, message: object) -> None:
        self.sim_time_s = message.clock.sec + 1e-9 * message.clock.nanosec

    def snapshot(self) -> tuple[float, int, int, float | None]:
        """(wall s, states, commands, simulated s) now."""
        return time.monotonic(), self.states, self.commands, self.sim_time_s


class LaunchProcess:
    """The launch, in its own process group; its output goes to a file."""

    def __init__(self, command: list[str]) -> None:
        self.log = tempfile.NamedTemporaryFile('w+', suffix='.log')
        environment = dict(os.environ, ROS_LOG_DIR=tempfile.mkdtemp(prefix='wbc_launch_log'))
        self.process = subprocess.Popen(
            command,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )

    def output(self) -> str:
        """Everything launch and its processes printed so far."""
        self.log.flush()
        return Path(self.log.name).read_text(errors='replace')

    def stop(self, timeout_s: float = 20.0) -> None:
        """Ctrl-C to the whole group, as a terminal sends it; SIGKILL if it does not end."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def measure(
    robot: str, seconds: float, warmup_s: float, domain_id: int, extra: Sequence[str] = ()
) -> dict:
    """Launch, wait for the loop to run, count for `seconds` after `warmup_s`; the figures.

    Raises:
        WbcError: no launch available, or the loop not running within `STARTUP_TIMEOUT_S`.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    os.environ['ROS_DOMAIN_ID'] = str(domain_id)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    prefix_root = Path(tempfile.mkdtemp(prefix='wbc_launch_rate'))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    executor = SingleThreadedExecutor(context=context)
    launch = None
    try:
        command = launch_command(robot, prefix_root, extra)
        probe = Probe(context)
        executor.add_node(probe.node)
        launch = LaunchProcess(command)
        started = time.monotonic()
        # Both streams the figures are made of, commands and the simulated clock (whose
        # best-effort subscription may match a while after the commands flow), and the loop
        # running on them: STARTUP_SIM_S of simulated time since both were first seen.
        since = None
        while since is None or probe.sim_time_s - since < STARTUP_SIM_S:
            if time.monotonic() - started > STARTUP_TIMEOUT_S or launch.process.poll() is not None:
                raise WbcError(
                    f'no command, no /clock or no {STARTUP_SIM_S:g} s of simulated time within '
                    f'{STARTUP_TIMEOUT_S:g} s of launching:\n' + launch.output()[-3000:]
                )
            executor.spin_once(timeout_sec=0.1)
            if since is None and probe.commands and probe.sim_time_s is not None:
                since = probe.sim_time_s
        startup_s = time.monotonic() - started
        _spin_for(executor, warmup_s)
        cpu_0, first = time.process_time(), probe.snapshot()
        probe.controller_rates.clear()
        _spin_for(executor, seconds)
        cpu_1, last = time.process_time(), probe.snapshot()
        rates = probe.controller_rates
        warnings = launch.output().count('slower than real_time_factor')
    finally:
        if launch is not None:
            launch.stop()
        executor.shutdown()
        rclpy.try_shutdown(context=context)
        shutil.rmtree(prefix_root, ignore_errors=True)
    wall = last[0] - first[0]
    states, commands = last[1] - first[1], last[2] - first[2]
    simulated = None if first[3] is None or last[3] is None else last[3] - first[3]
    return {
        'robot': robot,
        'launch_arguments': list(extra),
        'command': ' '.join(command[:4]) if command[0] == 'ros2' else 'launch harness',
        'startup_s': startup_s,
        'seconds': wall,
        'joint_state_rate_hz': states / wall,
        'command_rate_hz': commands / wall,
        'answered_fraction': commands / states if states else 0.0,
        'controller_tick_rate_hz': sum(rates) / len(rates) if rates else None,
        'real_time_factor': None if simulated is None else simulated / wall,
        'slower_than_real_time_warnings': warnings,
        'probe_cpu_share': (cpu_1 - cpu_0) / wall,
        'load_average': os.getloadavg(),
    }


def _spin_for(executor: object, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)


def summary(result: dict) -> str:
    """One line of the figures."""
    factor, ticks = result['real_time_factor'], result['controller_tick_rate_hz']
    return (
        f'{result["robot"]}: joint states {result["joint_state_rate_hz"]:.0f}/s, '
        f'answered {100.0 * result["answered_fraction"]:.1f} %, controller ticks '
        f'{"n/a (no /diagnostics received)" if ticks is None else f"{ticks:.0f}/s"}, '
        f'real-time factor {"n/a" if factor is None else f"{factor:.3f}"}, '
        f'{result["slower_than_real_time_warnings"]} slower-than-real-time warnings '
        f'(over {result["seconds"]:.1f} s, load average {result["load_average"][0]:.1f})'
    )


def run(arguments: argparse.Namespace) -> int:
    """Measure, print the line, write the JSON if asked."""
    domain_id = arguments.domain_id
    if domain_id is None:
        domain_id = 1 + int.from_bytes(os.urandom(1), 'little') % 100
    result = measure(
        arguments.robot, arguments.seconds, arguments.warmup, domain_id, arguments.launch_arguments
    )
    print(summary(result))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(result, indent=2) + '\n')
    return 0
