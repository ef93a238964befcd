"""The shipped Panda simulator and controller started by hand: their clocks, over real DDS.

Started without `use_sim_time`, the controller judges the simulator's stamps (simulated time)
against the wall clock: it must say why it rejects them and what to do, once. Started with it,
a simulator that is killed and started again (its clock and stamps back to 0) must be followed
at once.
"""

from collections.abc import Iterator
import re
import signal
import time

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_support import NodeProcess, RosProbe, named_probe, start_panda_node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

#: Start-up of the node processes (imports, model, DDS discovery): generous for a loaded machine.
START_S = 120.0
#: Wall-clock bound of a wait for a running node (s).
WAIT_S = 30.0
#: Status messages of each node to see after the first hint: seconds of rejections at 2 Hz.
STATUSES_AFTER_HINT = 6
RESTARTS = 10
#: A crash: the simulator gets no chance to leave DDS discovery or to stop its clock.
STOP_SIGNAL = signal.SIGKILL
#: Wall time (s) from the restarted simulator's first state the controller heard to its first
#: task torque: the issue's bound, in what a user waits.
FOLLOW_S = 0.5
#: Simulated time (s) the loop runs before each restart.
RUN_SIM_S = 1.0


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


class Loop:
    """The shipped Panda files on simulated time; the simulator can be stopped and restarted."""

    def __init__(self, probe: RosProbe) -> None:
        self.probe = probe
        every_state = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.states: list[tuple[float, float]] = []  # (wall s, stamp s)
        self.commands: list[tuple[float, bool]] = []  # (wall s, a task torque)
        probe.node.create_subscription(
            JointState,
            'joint_states',
            lambda m: self.states.append((time.monotonic(), stamp_s(m))),
            every_state,
        )
        probe.node.create_subscription(
            Float64MultiArray,
            'effort_controller/commands',
            lambda m: self.commands.append((time.monotonic(), bool(np.any(m.data)))),
            100,
        )
        self.controller = start_panda_node(
            'wbc_controller', 'panda_controller.yaml', 'use_sim_time:=true'
        )
        self.sim = self.start_sim()

    def start_sim(self) -> NodeProcess:
        """A simulator from config/panda_sim.yaml, its clock starting at 0.

        This test's probe is a second joint_states subscriber: the first state waits for both
        it and the controller (else it could go out to the probe alone, and the controller
        would hear it only when re-sent, `lockstep_resend_period` later).
        """
        return start_panda_node(
            'wbc_sim', 'panda_sim.yaml', 'use_sim_time:=true', 'lockstep_subscribers:=2'
        )

    def run_until(self, sim_s: float) -> None:
        """Spin until the simulator published a state at `sim_s` or later."""
        ran = self.probe.spin_until(lambda: self.states and self.states[-1][1] >= sim_s, START_S)
        assert ran, f'{self.sim.output()}\n{self.controller.output()}'

    def restart_sim(self) -> float:
        """Stop the simulator, start it once the safe command went out; the follow time.

        Timed from the copy of the held first state (stamp 0) that the controller answered,
        the last one this probe heard before the first task torque: the simulator re-sends it
        every `lockstep_resend_period` while unanswered, and DDS may match the controller's
        reader to the new process after this probe's, seconds later after a SIGKILL on a
        loaded machine: discovery, not the controller, which this test times.
        """
        self.sim.stop(STOP_SIGNAL)
        self.commands.clear()
        assert self.probe.spin_until(lambda: any(not task for _, task in self.commands), WAIT_S)
        self.states.clear()
        self.sim = self.start_sim()
        assert self.probe.spin_until(lambda: self.states, START_S), self.sim.output()
        first_s = self.states[0][0]
        followed = self.probe.spin_until(
            lambda: any(task and t >= first_s for t, task in self.commands), START_S
        )
        assert followed, f'{self.sim.output()}\n{self.controller.output()}'
        answered_s = next(t for t, task in self.commands if task and t >= first_s)
        held = [t for t, stamp in self.states if stamp == 0.0 and t <= answered_s]
        return answered_s - held[-1] if held else 0.0

    def stop(self) -> None:
        """Stop both nodes."""
        self.sim.stop()
        self.controller.stop()


@pytest.mark.slow
def test_a_restarted_simulator_is_followed_at_once_with_the_soft_start(probe) -> None:
    loop = Loop(probe)
    follow_s = []
    try:
        loop.run_until(RUN_SIM_S)
        for _ in range(RESTARTS):
            follow_s.append(loop.restart_sim())
            loop.run_until(RUN_SIM_S)
    finally:
        loop.stop()
    output = loop.controller.output()
    assert max(follow_s) <= FOLLOW_S, [round(s, 3) for s in follow_s]
    jumps = re.findall(r'clock jumped by -[\d.]+ s: .*soft start restarted', output)
    assert len(jumps) >= RESTARTS, output
    assert 'velocity_limit' not in output and 'position_limit' not in output, output
