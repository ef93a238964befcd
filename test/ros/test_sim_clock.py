"""The shipped Panda simulator and controller started by hand: their clocks, over real DDS.

Started without `use_sim_time`, the controller judges the simulator's stamps (simulated time)
against the wall clock: it must say why it rejects them and what to do, once.
"""

from collections.abc import Iterator

from diagnostic_msgs.msg import DiagnosticArray
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_support import RosProbe, named_probe, start_panda_node
from sensor_msgs.msg import JointState

#: Start-up of the node processes (imports, model, DDS discovery): generous for a loaded machine.
START_S = 120.0
#: Wall-clock bound of a wait for a running node (s).
WAIT_S = 30.0
#: Status messages of each node to see after the first hint: seconds of rejections at 2 Hz.
STATUSES_AFTER_HINT = 6


@pytest.fixture
def probe(request) -> Iterator[RosProbe]:
    """A new probe node for each test (each starts its own nodes)."""
    yield from named_probe(request)


def stamp_s(message: JointState) -> float:
    return message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec


class Statuses:
    """The latest /diagnostics values of each check, and how many arrived."""

    def __init__(self, probe: RosProbe) -> None:
        self.latest: dict[str, dict[str, str]] = {}
        self.count: dict[str, int] = {}
        probe.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_status, 50)

    def _on_status(self, message: DiagnosticArray) -> None:
        for status in message.status:
            values = {item.key: item.value for item in status.values}
            self.latest[status.name] = {'message': status.message, **values}
            self.count[status.name] = self.count.get(status.name, 0) + 1

    def hint(self, name: str) -> str:
        """The `clock_hint` of check `name`, '' while there is none."""
        return self.latest.get(name, {}).get('clock_hint', '')


def rejection_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if 'joint_states rejected' in line]


def test_hand_started_without_use_sim_time_the_nodes_name_the_cause_once(probe) -> None:
    """README's `ros2 run` lines as a user types them first, without use_sim_time."""
    statuses = Statuses(probe)
    nodes = [
        start_panda_node('wbc_controller', 'panda_controller.yaml'),
        start_panda_node('wbc_diagnostics', 'diagnostics.yaml'),
        start_panda_node('wbc_sim', 'panda_sim.yaml'),
    ]
    controller, diagnostics, _ = nodes
    inputs, conditioning = 'wbc_controller: inputs', 'wbc_diagnostics: inertia conditioning'
    try:
        hinted = probe.spin_until(
            lambda: statuses.hint(inputs) and statuses.hint(conditioning), START_S
        )
        assert hinted, f'{statuses.latest}\n{controller.output()}\n{diagnostics.output()}'
        seen = dict(statuses.count)
        assert probe.spin_until(
            lambda: all(statuses.count[n] >= seen[n] + STATUSES_AFTER_HINT for n in seen),
            WAIT_S,
        ), statuses.count
    finally:
        for node in nodes:
            node.stop()
    for name in (inputs, conditioning):
        assert 'use_sim_time:=true' in statuses.hint(name), statuses.latest[name]
        assert 'use_sim_time:=true' in statuses.latest[name]['message']
    assert statuses.latest[inputs]['stale'] == 'True'
    lines = rejection_lines(controller.output())
    assert 'stale' in lines[0] and 'likely cause' in lines[0] and 'use_sim_time:=true' in lines[0]
    assert len(lines) >= 3  # rejected on and on, one line a second ...
    assert controller.output().count('likely cause') == 1  # ... the cause named once
    assert diagnostics.output().count('likely cause') == 1
    assert 'use_sim_time:=true' in diagnostics.output()


def test_with_use_sim_time_no_hint_is_given(probe) -> None:
    statuses = Statuses(probe)
    states = probe.subscribe(
        JointState, 'joint_states', QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
    )
    nodes = [
        start_panda_node('wbc_controller', 'panda_controller.yaml', 'use_sim_time:=true'),
        start_panda_node('wbc_sim', 'panda_sim.yaml'),
    ]
    inputs = 'wbc_controller: inputs'
    try:
        assert probe.spin_until(lambda: states and stamp_s(states[-1]) > 2.0, START_S)
        seen = statuses.count.get(inputs, 0)
        assert probe.spin_until(lambda: statuses.count.get(inputs, 0) >= seen + 2, WAIT_S)
    finally:
        for node in nodes:
            node.stop()
    assert statuses.hint(inputs) == '' and statuses.latest[inputs]['stale'] == 'False'
    assert 'likely cause' not in nodes[0].output()
