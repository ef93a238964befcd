"""Nodes on simulated time keep their timers' rate while /clock and joint states flood them.

rclpy's EventsExecutor (Jazzy 7.1.6, Kilted 9.1.2), the nodes' default, fired the diagnostics
node's 20 Hz status timer, then on the ROS clock, with gaps of 3 to 20 s of wall time (13 to
97 s of simulated time) beside a simulator at real_time_factor 0; a busy-loop shutdown test
waited 120 s for a status that never came. The nodes' timers now run on the steady clock.
"""

import time

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_support import NodeProcess, RosProbe, start_panda_node

START_TIMEOUT_S = 120.0
#: Wall time the statuses are watched for once they come (s).
WATCHED_S = 25.0
PUBLISH_RATE_HZ = 20.0
#: Most of the node's own work (s: states handled over its mean rate) between two statuses:
#: 60 periods. On the ROS clock the events executor left 4.1 to 8 s in 3 runs of 3 (4 801 to
#: 7 327 states); on the steady clock at load 6, 1.4 s (1 165 states at about 800 states/s).
MAX_OWN_GAP_S = 3.0
#: Longest wall-clock silence, for a timer that stops for good (s).
MAX_WALL_GAP_S = 15.0


def test_the_status_timer_keeps_its_rate_beside_a_flooding_simulated_clock() -> None:
    probe = RosProbe('sim_time_timer_probe')
    arrivals: list[float] = []  # wall-clock arrival at the probe
    samples: list[int] = []  # the states the node had handled by then
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

    def arrived(array: DiagnosticArray) -> None:
        for status in array.status:
            if status.name.startswith('wbc_diagnostics'):
                arrivals.append(time.monotonic())
                count = [pair.value for pair in status.values if pair.key == 'samples']
                samples.append(int(count[0]) if count else 0)

    probe.node.create_subscription(DiagnosticArray, '/diagnostics', arrived, qos)
    nodes: list[NodeProcess] = []
    try:
        # Unpaced (as fast as it can), no command needed: /clock and joint states flood.
        unpaced = (
            'lockstep:=false',
            'hold_until_commanded:=false',
            'real_time_factor:=0.0',
            'command_timeout:=0.0',
        )
        nodes.append(start_panda_node('wbc_sim', 'panda_sim.yaml', *unpaced))
        settings = ('exact_rate:=0.0', f'publish_rate:={PUBLISH_RATE_HZ}', 'use_sim_time:=true')
        nodes.append(start_panda_node('wbc_diagnostics', 'diagnostics.yaml', *settings))
        assert probe.spin_until(lambda: len(arrivals) > 0, START_TIMEOUT_S), '\n'.join(
            ['no status from wbc_diagnostics'] + [node.output() for node in nodes]
        )
        probe.spin_for(WATCHED_S)
        watched_until = time.monotonic()
    finally:
        for node in nodes:
            node.__exit__(None, None, None)
        probe.close()
    # A stalled timer shows as many states handled between two statuses: the node kept working
    # but did not report. Counted in the node's own time (states over its mean rate), so that
    # a node the machine starves altogether, which handles nothing meanwhile, does not count.
    handled = np.diff(samples)
    rate = (samples[-1] - samples[0]) / (arrivals[-1] - arrivals[0])
    worst = int(np.argmax(handled))
    assert handled[worst] / rate <= MAX_OWN_GAP_S, (
        f"{handled[worst]} states handled ({handled[worst] / rate:.1f} s of the node's work "
        f'at {rate:.0f} states/s) between statuses {worst} and {worst + 1} of {len(samples)}'
    )
    silent = np.diff([*arrivals, watched_until]).max()  # silence up to the end counts too
    assert silent <= MAX_WALL_GAP_S, f'no status for {silent:.1f} s'
