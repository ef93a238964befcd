"""Does `wbc_sim.launch.py` keep real time on this machine? Launch it and measure.

    python tools/measure_launch_rate.py --robot panda --seconds 20
    python tools/measure_launch_rate.py --robot talos --seconds 20 --json talos_rate.json
    python tools/measure_launch_rate.py --robot talos lockstep:=true   # more launch arguments

Starts `wbc_sim.launch.py robot:=<robot>` (simulator + controller + diagnostics, the shipped
configuration) through the real `launch` / `launch_ros`: `ros2 launch` when it is on PATH,
else `launch` / `launch_ros` as the launch tests find them (test/ros/launch_support.py), with
this package installed into a temporary prefix. A probe node in the same (random)
ROS domain then counts, over `--seconds` of wall time after `--warmup` seconds:

- the joint-state rate (`joint_states` per wall-clock second; the shipped `publish_rate` is
  500 per simulated second), and the rate at which the controller ticked on them (the mean of
  `joint_state_rate_hz` on its /diagnostics);
- the fraction of states answered (`effort_controller/commands` received per joint state
  received; the command carries no stamp, so this is a ratio of counts; both counted on raw,
  undeserialised messages, but a starved probe undercounts both);
- the real-time factor (simulated seconds on `/clock` per wall-clock second).

The probe subscribes best effort, so that it never slows a publisher down; its own CPU share
is printed too. Run it on an otherwise quiet machine for figures that mean anything.
"""

import argparse
from collections.abc import Sequence
import json
import os
from pathlib import Path
import shutil
import sys
import tempfile
import time

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SECONDS = 20.0
DEFAULT_WARMUP_S = 5.0
STARTUP_TIMEOUT_S = 120.0


def launch_command(robot: str, prefix: Path | None, extra: Sequence[str] = ()) -> list[str]:
    """`ros2 launch` when installed, else the harness runner over a temporary prefix."""
    arguments = [f'robot:={robot}', *extra]
    if prefix is None:
        return ['ros2', 'launch', 'wbc_control', 'wbc_sim.launch.py', *arguments]
    sys.path.insert(0, str(REPO / 'test' / 'ros'))
    import launch_support

    distro = None
    if not launch_support.launch_sources()[0].id == 'installed':
        distro = os.environ.get('LAUNCH_DISTRO', 'rolling')
    launch_support.install_prefix(prefix)
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


def measure(
    robot: str, seconds: float, warmup_s: float, domain_id: int, extra: Sequence[str] = ()
) -> dict:
    """Launch, wait for commands, count for `seconds` after `warmup_s`; the figures."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    sys.path.insert(0, str(REPO / 'test' / 'ros'))
    import launch_support

    os.environ['ROS_DOMAIN_ID'] = str(domain_id)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    prefix_root = Path(tempfile.mkdtemp(prefix='wbc_launch_rate'))
    prefix = None if shutil.which('ros2') else prefix_root / 'install'
    command = launch_command(robot, prefix, extra)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    executor = SingleThreadedExecutor(context=context)
    try:
        probe = Probe(context)
        executor.add_node(probe.node)
        with launch_support.LaunchRun(command) as run:
            started = time.monotonic()
            while probe.commands == 0:
                late = time.monotonic() - started > STARTUP_TIMEOUT_S
                if late or run.process.poll() is not None:
                    raise TimeoutError(
                        f'no command within {STARTUP_TIMEOUT_S:g} s of launching:\n'
                        + run.output()[-3000:]
                    )
                executor.spin_once(timeout_sec=0.1)
            startup_s = time.monotonic() - started
            _spin_for(executor, warmup_s)
            cpu_0, first = time.process_time(), probe.snapshot()
            probe.controller_rates.clear()
            _spin_for(executor, seconds)
            cpu_1, last = time.process_time(), probe.snapshot()
            rates = probe.controller_rates
            warnings = run.output().count('slower than real_time_factor')
            run.interrupt()
    finally:
        executor.shutdown()
        rclpy.try_shutdown(context=context)
        shutil.rmtree(prefix_root, ignore_errors=True)
    wall = last[0] - first[0]
    states, commands = last[1] - first[1], last[2] - first[2]
    simulated = None if first[3] is None or last[3] is None else last[3] - first[3]
    return {
        'robot': robot,
        'launch_arguments': list(extra),
        'command': ' '.join(command[:4]) if prefix is None else 'launch harness',
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


def _rate(value: float | None) -> str:
    return 'n/a (no /diagnostics received)' if value is None else f'{value:.0f}/s'


def _spin_for(executor: object, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, measure, print (and write JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--robot', default='panda', choices=('panda', 'talos', 'solo12'))
    parser.add_argument('--seconds', type=float, default=DEFAULT_SECONDS)
    parser.add_argument('--warmup', type=float, default=DEFAULT_WARMUP_S)
    parser.add_argument('--domain-id', type=int, default=None, help='default: random')
    parser.add_argument('--json', help='write the figures to this file')
    parser.add_argument(
        'launch_arguments', nargs='*', help="more launch arguments, e.g. 'lockstep:=true'"
    )
    arguments = parser.parse_args(argv)
    domain_id = arguments.domain_id
    if domain_id is None:
        domain_id = 1 + int.from_bytes(os.urandom(1), 'little') % 100
    result = measure(
        arguments.robot, arguments.seconds, arguments.warmup, domain_id, arguments.launch_arguments
    )
    factor = result['real_time_factor']
    print(
        f'{result["robot"]}: joint states {result["joint_state_rate_hz"]:.0f}/s, '
        f'answered {100.0 * result["answered_fraction"]:.1f} %, '
        f'controller ticks {_rate(result["controller_tick_rate_hz"])}, '
        f'real-time factor {"n/a" if factor is None else f"{factor:.3f}"}, '
        f'{result["slower_than_real_time_warnings"]} slower-than-real-time warnings '
        f'(over {result["seconds"]:.1f} s, load average {result["load_average"][0]:.1f})'
    )
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(result, indent=2) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
