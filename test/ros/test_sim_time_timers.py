"""Nodes on simulated time keep their timers' rate while /clock and joint states flood them.

rclpy's EventsExecutor (Jazzy 7.1.6, Kilted 9.1.2), the nodes' default, fired the diagnostics
node's 20 Hz status timer, then on the ROS clock, with gaps of 3 to 20 s of wall time (13 to
97 s of simulated time) beside a simulator at real_time_factor 0; a busy-loop shutdown test
waited 120 s for a status that never came. The nodes' timers now run on the steady clock.
"""

from pathlib import Path
import time

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_support import NodeProcess, RosProbe

from wbc_control.model.example_robots import example_robot_urdf

CONFIG = Path(__file__).resolve().parents[2] / 'config'
START_TIMEOUT_S = 120.0
#: Wall time the statuses are watched for once they come (s).
WATCHED_S = 25.0
PUBLISH_RATE_HZ = 20.0
#: Longest wall-clock gap between two statuses at the probe (s): 60 periods, for a loaded
#: machine. On the ROS clock the events executor left gaps of 3 to 20 s in such runs.
MAX_GAP_S = 3.0


def start(script: str, config: str, *overrides: str) -> NodeProcess:
    """`script` with a shipped Panda config, Panda's URDF and `name:=value` overrides."""
    arguments = ['--params-file', str(CONFIG / config)]
    for override in (f'urdf_path:={example_robot_urdf("panda")[0]}', *overrides):
        arguments += ['-p', override]
    return NodeProcess(script, extra_args=arguments).__enter__()


def test_the_status_timer_keeps_its_rate_beside_a_flooding_simulated_clock() -> None:
    probe = RosProbe('sim_time_timer_probe')
    arrivals: list[float] = []  # wall-clock arrival at the probe
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

    def arrived(array: DiagnosticArray) -> None:
        if any(status.name.startswith('wbc_diagnostics') for status in array.status):
            arrivals.append(time.monotonic())

    probe.node.create_subscription(DiagnosticArray, '/diagnostics', arrived, qos)
    nodes: list[NodeProcess] = []
    try:
        # Unpaced (as fast as it can), no command needed: /clock and joint states flood.
        unpaced = ('real_time_factor:=0.0', 'command_timeout:=0.0')
        nodes.append(start('wbc_sim', 'panda_sim.yaml', *unpaced))
        settings = ('exact_rate:=0.0', f'publish_rate:={PUBLISH_RATE_HZ}', 'use_sim_time:=true')
        nodes.append(start('wbc_diagnostics', 'diagnostics.yaml', *settings))
        assert probe.spin_until(lambda: len(arrivals) > 0, START_TIMEOUT_S), '\n'.join(
            ['no status from wbc_diagnostics'] + [node.output() for node in nodes]
        )
        probe.spin_for(WATCHED_S)
        watched_until = time.monotonic()
    finally:
        for node in nodes:
            node.__exit__(None, None, None)
        probe.close()
    gaps = np.diff([*arrivals, watched_until])  # silence up to the end counts too
    worst = int(np.argmax(gaps))
    assert gaps[worst] <= MAX_GAP_S, (
        f'no status for {gaps[worst]:.1f} s after status {worst} of {len(arrivals)} '
        f'({(gaps > 1.0).sum()} gaps over 1 s in {WATCHED_S:.0f} s)'
    )
