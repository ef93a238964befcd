"""Nodes on simulated time keep their timers' rate while /clock and joint states flood them.

rclpy's EventsExecutor (Jazzy 7.1.6, Kilted 9.1.2) fired the diagnostics node's 20 Hz timer on
the ROS clock with gaps of 13 to 52 s of simulated time in 15 to 25 s runs beside a simulator
at real_time_factor 0; a busy-loop shutdown test waited 120 s for a status that never came. The
nodes therefore spin SingleThreadedExecutor on simulated time (wbc_control/ros/executors.py).
"""

from pathlib import Path
import time

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_support import NodeProcess, RosProbe

from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.ros.executors import EXECUTOR_VARIABLE

CONFIG = Path(__file__).resolve().parents[2] / 'config'
START_TIMEOUT_S = 120.0

#: Simulated time the status stamps must cover (s): about 30 s of wall time at the flood's pace.
COVERED_S = 150.0
PUBLISH_RATE_HZ = 20.0
#: Longest gap (s of simulated time) between two statuses: 200 periods. The single-threaded
#: executor's longest was 0.1-0.65 s; the events executor's 13-52 s.
MAX_GAP_S = 10.0


def start(script: str, config: str, *overrides: str) -> NodeProcess:
    """`script` with a shipped Panda config, Panda's URDF and `name:=value` overrides."""
    arguments = ['--params-file', str(CONFIG / config)]
    for override in (f'urdf_path:={example_robot_urdf("panda")[0]}', *overrides):
        arguments += ['-p', override]
    return NodeProcess(script, extra_args=arguments).__enter__()


def stamp_s(array: DiagnosticArray) -> float:
    return array.header.stamp.sec + array.header.stamp.nanosec * 1e-9


def test_the_status_timer_keeps_its_rate_on_a_flooding_simulated_clock(monkeypatch) -> None:
    # The environment asks for the events executor: a node on simulated time must refuse it.
    monkeypatch.setenv(EXECUTOR_VARIABLE, 'events')
    probe = RosProbe('sim_time_timer_probe')
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    statuses = probe.subscribe(DiagnosticArray, '/diagnostics', qos)
    nodes: list[NodeProcess] = []
    try:
        # Unpaced (as fast as it can), no command needed: /clock and joint states flood.
        nodes.append(
            start('wbc_sim', 'panda_sim.yaml', 'real_time_factor:=0.0', 'command_timeout:=0.0')
        )
        rate = f'publish_rate:={PUBLISH_RATE_HZ}'
        nodes.append(
            start(
                'wbc_diagnostics',
                'diagnostics.yaml',
                'exact_rate:=0.0',
                rate,
                'use_sim_time:=true',
            )
        )
        first = lambda: next((stamp_s(a) for a in statuses if stamp_s(a) > 0.0), None)  # noqa: E731
        covered = lambda: first() is not None and stamp_s(statuses[-1]) - first() >= COVERED_S  # noqa: E731
        started = time.monotonic()
        timeout = START_TIMEOUT_S + 4 * COVERED_S
        assert probe.spin_until(covered, timeout), (
            f'{len(statuses)} statuses in {time.monotonic() - started:.0f} s\n'
            + '\n'.join(node.output() for node in nodes)
        )
    finally:
        for node in nodes:
            node.__exit__(None, None, None)
        probe.close()
    stamps = np.array([stamp_s(a) for a in statuses if stamp_s(a) > 0.0])
    gaps = np.diff(stamps)
    worst = int(np.argmax(gaps))
    assert gaps[worst] <= MAX_GAP_S, (
        f'no status from {stamps[worst]:.2f} s to {stamps[worst + 1]:.2f} s of simulated time '
        f'({(gaps > 1.0).sum()} gaps over 1 s in {len(stamps)} statuses)'
    )
    diagnostics_log = nodes[1].output()
    assert 'events ignored on simulated time' in diagnostics_log, diagnostics_log
