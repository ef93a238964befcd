"""Tests of the diagnostics sidecar ``wbc_diagnostics`` over real DDS (Shah & Saha 2013).

The node runs as a separate process (its console script); the test process publishes
sensor_msgs/JointState and /clock and reads /diagnostics and the Float64 topics. Expected values
come from numpy on Pinocchio's CRBA at the same configuration, never from
wbc_control.conditioning.estimators.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
import math
import signal
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pinocchio as pin
import pytest
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from ros_support import NodeProcess, RosProbe
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from wbc_control.benchmark.rod_chain import serial_chain_urdf
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel

SCRIPT = 'wbc_diagnostics'
REQUIRED_KEYS = {
    'condition_number',
    'diagonal_ratio',
    'scaled_diagonal_ratio',
    'alpha',
    'lambda_min',
    'lambda_max',
    'estimate_relative_error',
    'condition_number_age',
    'samples',
    'rejected_samples',
}
# Worst |delta_s - kappa| / kappa of the 4-rod chain swinging down from horizontal, alpha
# anchored at t = 0 (test_conditioning module docstring), with that module's 20 % margin.
FOUR_LINK_SWING_MAX_ERROR = 1.2 * 0.950
# Shah & Saha 2013, below eq (9): kappa_2 of the straight 4-link chain.
EQ7_CONDITION_NUMBER = 1074.0
RTOL = 1e-12
# Start-up of a node process, generous for a loaded machine.
STARTUP_TIMEOUT_S = 120.0
# Upper bound of a wait for a running node (wall clock; generous for a loaded machine).
WAIT_S = 30.0


# ---------------------------------------------------------------------------------------------
# Helpers


def inertia_matrix(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    """M(q) from Pinocchio's CRBA, mirrored to a full symmetric matrix, (nv, nv)."""
    inertia = pin.crba(robot.model, robot.model.createData(), q).copy()
    return np.triu(inertia) + np.triu(inertia, 1).T


class Expected:
    """The numbers the node must publish for M, from numpy."""

    def __init__(self, inertia: np.ndarray) -> None:
        eigenvalues = np.linalg.eigvalsh(inertia)
        self.lambda_min = float(eigenvalues[0])
        self.lambda_max = float(eigenvalues[-1])
        self.condition_number = self.lambda_max / self.lambda_min
        diagonal = np.diag(inertia)
        self.diagonal_ratio = float(diagonal.max() / diagonal.min())
        assert self.condition_number == pytest.approx(np.linalg.cond(inertia), rel=1e-9)


def joint_state(
    names: Sequence[str],
    positions: Sequence[float],
    velocities: Sequence[float] | None = None,
    stamp_s: float = 0.0,
) -> JointState:
    msg = JointState()
    msg.name = list(names)
    msg.position = [float(x) for x in positions]
    msg.velocity = [0.0] * len(msg.position) if velocities is None else list(velocities)
    msg.header.stamp.sec = int(stamp_s)
    msg.header.stamp.nanosec = int(round((stamp_s - int(stamp_s)) * 1e9))
    return msg


def values_of(status: DiagnosticStatus) -> dict[str, str]:
    return {pair.key: pair.value for pair in status.values}


@dataclass
class FirstContact:
    """What a sidecar published before and at its first state."""

    initial_status: DiagnosticStatus
    expected: Expected
    state: JointState
    status: DiagnosticStatus


class Sidecar:
    """One running wbc_diagnostics process and the probe's endpoints for it."""

    def __init__(
        self,
        probe: RosProbe,
        robot: RobotModel,
        parameters: dict,
        node_name: str = SCRIPT,
        joint_topic: str = 'joint_states',
    ) -> None:
        self.probe = probe
        self.robot = robot
        self.node_name = node_name
        extra = ['-r', f'__node:={node_name}', '-r', f'joint_states:={joint_topic}']
        self.process = NodeProcess(SCRIPT, parameters, node_name, extra)
        self.status_name = f'{node_name}: inertia conditioning'
        self.joint_states = probe.publisher(JointState, joint_topic)
        self.kappas = probe.subscribe(Float64, f'/{node_name}/condition_number')
        self.ratios = probe.subscribe(Float64, f'/{node_name}/diagonal_ratio')
        self.scaled_ratios = probe.subscribe(Float64, f'/{node_name}/scaled_diagonal_ratio')
        self.arrays = probe.subscribe(DiagnosticArray, '/diagnostics')
        self._parameters = AsyncParameterClient(probe.node, f'/{node_name}')
        self.first: FirstContact | None = None

    def __enter__(self) -> 'Sidecar':
        """Start the process and wait until its endpoints are discovered."""
        self.process.__enter__()
        topic = f'/{self.node_name}/scaled_diagonal_ratio'

        def ready() -> bool:
            subscribed = self.joint_states.get_subscription_count() > 0
            return subscribed and self.probe.node.count_publishers(topic) > 0

        assert self.probe.spin_until(ready, STARTUP_TIMEOUT_S), self.process.output()
        return self

    def __exit__(self, *exc) -> None:
        self.process.__exit__(*exc)

    def statuses(self) -> list[DiagnosticStatus]:
        """Every status of this node received so far."""
        return [s for a in self.arrays for s in a.status if s.name == self.status_name]

    def wait_status(
        self,
        condition: Callable[[DiagnosticStatus], bool],
        timeout: float = WAIT_S,
        keep: JointState | None = None,
        since: int | None = None,
    ) -> DiagnosticStatus:
        """The first status satisfying `condition`, republishing `keep` meanwhile.

        Only statuses received after the call count, or from index `since` of `statuses()`.
        """
        start = len(self.statuses()) if since is None else since

        def found() -> DiagnosticStatus | None:
            return next((s for s in self.statuses()[start:] if condition(s)), None)

        assert self.publish_until(keep, lambda: found() is not None, timeout), (
            f'no matching status within {timeout} s; last: {self.statuses()[-1:]}\n'
            f'{self.process.output()}'
        )
        return found()

    def publish_until(self, msg, condition: Callable[[], bool], timeout: float = WAIT_S) -> bool:
        """Publish `msg` (if any) every 0.1 s until `condition()` holds."""
        deadline = timeout / 0.1
        for _ in range(int(deadline)):
            if msg is not None:
                self.joint_states.publish(msg)
            if self.probe.spin_until(condition, 0.1):
                return True
        return condition()

    def send(self, positions: np.ndarray, kappa: float, stamp_s: float = 0.0) -> JointState:
        """Publish a state until the node's condition number for it arrives; return the state.

        With a stamp, copies that arrive after the first are rejected as out of order, so none
        can be evaluated later (e.g. after the next /clock step).
        """
        msg = joint_state(self.robot.joint_names, positions, stamp_s=stamp_s)
        start = len(self.kappas)
        arrived = self.publish_until(
            msg, lambda: any(_close(k.data, kappa) for k in self.kappas[start:])
        )
        assert arrived, f'no condition number {kappa} within {WAIT_S} s\n{self.process.output()}'
        return msg

    def set_parameters(self, **values) -> list:
        """Set parameters one by one, as `ros2 param set` does; the SetParametersResults."""
        assert self._parameters.wait_for_services(WAIT_S), f'no parameter services in {WAIT_S} s'
        future = self._parameters.set_parameters(
            [Parameter(name, value=value) for name, value in values.items()]
        )
        assert self.probe.spin_until(future.done, WAIT_S), f'no parameter answer in {WAIT_S} s'
        return future.result().results


def _close(actual: float, expected: float, rtol: float = RTOL) -> bool:
    return math.isclose(actual, expected, rel_tol=rtol)


def random_positions(robot: RobotModel, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random configuration within the joint limits: (q, joint positions in actuated order).

    A floating base gets a random pose too (numpy, not pin.seed: srand(0) equals srand(1)).
    """
    rng = np.random.default_rng(seed)
    positions = rng.uniform(*robot.position_limits)
    base_pose = None
    if robot.floating_base:
        quaternion = rng.standard_normal(4)
        base_pose = np.concatenate(
            [rng.uniform(-1.0, 1.0, 3), quaternion / np.linalg.norm(quaternion)]
        )
    return robot.configuration(positions, base_pose), positions


def status_is(level: bytes, text: str = '') -> Callable[[DiagnosticStatus], bool]:
    """Match the level and a part of the summary (a stale input is a WARN too)."""
    return lambda status: status.level == level and text in status.message


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope='module')
def panda_robot() -> RobotModel:
    path, floating_base = example_robot_urdf('panda')
    return RobotModel.from_urdf_path(path, floating_base)


@pytest.fixture(scope='module')
def panda(probe, panda_robot):
    """Panda sidecar under the default node name; records its first status and first sample."""
    path, _ = example_robot_urdf('panda')
    parameters = {
        'urdf_path': str(path),
        'exact_rate': 0.0,
        'publish_rate': 20.0,
        'joint_state_timeout': 1.0,
    }
    with Sidecar(probe, panda_robot, parameters) as sidecar:
        initial_status = sidecar.wait_status(lambda s: True)
        q, positions = random_positions(panda_robot, 0)
        expected = Expected(inertia_matrix(panda_robot, q))
        # Re-sent until it arrives (the node's best-effort reader may match this publisher
        # after the publisher matched it, and drop what came before), stamped so that the
        # copies after the first are out of order: the node counts exactly one first sample.
        now_s = probe.node.get_clock().now().nanoseconds * 1e-9
        first = joint_state(panda_robot.joint_names, positions, stamp_s=now_s)
        status = sidecar.wait_status(lambda s: values_of(s)['samples'] != '0', keep=first)
        state = joint_state(panda_robot.joint_names, positions)  # unstamped, for later tests
        sidecar.first = FirstContact(initial_status, expected, state, status)
        yield sidecar
        assert sidecar.process.alive(), sidecar.process.output()


# ---------------------------------------------------------------------------------------------
# Panda: values against numpy


def test_status_before_any_state_says_so(panda):
    status = panda.first.initial_status
    assert status.level == DiagnosticStatus.STALE
    assert 'no valid joint_states yet' in status.message
    assert status.hardware_id == 'panda'
    values = values_of(status)
    assert REQUIRED_KEYS <= values.keys()
    assert values['condition_number'] == 'nan'
    assert values['samples'] == '0'


def test_first_sample_scaled_ratio_equals_condition_number(panda):
    expected = panda.first.expected
    values = values_of(panda.first.status)
    assert panda.first.status.name == 'wbc_diagnostics: inertia conditioning'
    kappa = float(values['condition_number'])
    assert _close(kappa, expected.condition_number)
    assert float(values['scaled_diagonal_ratio']) == kappa
    assert float(values['alpha']) == pytest.approx(kappa / expected.diagonal_ratio, rel=RTOL)
    assert values['samples'] == '1'
    assert values['estimate_relative_error'] == 'nan'
    assert panda.first.status.level == DiagnosticStatus.OK
    assert '(exact)' in panda.first.status.message


@pytest.mark.parametrize('seed', [1, 2, 3, 4])
def test_values_equal_numpy_at_random_configurations(panda, panda_robot, seed):
    q, positions = random_positions(panda_robot, seed)
    expected = Expected(inertia_matrix(panda_robot, q))
    alpha = panda.first.expected.condition_number / panda.first.expected.diagonal_ratio
    scaled = alpha * expected.diagonal_ratio
    ratios_start, scaled_start = len(panda.ratios), len(panda.scaled_ratios)
    sent_s = time.time()  # the node's clock: no exact value for this state is older
    state = panda.send(positions, expected.condition_number)

    status = panda.wait_status(
        lambda s: _close(float(values_of(s)['condition_number']), expected.condition_number),
        keep=state,
    )
    values = values_of(status)
    assert _close(float(values['lambda_min']), expected.lambda_min)
    assert _close(float(values['lambda_max']), expected.lambda_max)
    assert _close(float(values['diagonal_ratio']), expected.diagonal_ratio)
    assert _close(float(values['scaled_diagonal_ratio']), scaled, 1e-9)
    assert _close(float(values['alpha']), alpha, 1e-9)
    error = abs(scaled - expected.condition_number) / expected.condition_number
    assert float(values['estimate_relative_error']) == pytest.approx(error, rel=1e-6, abs=1e-12)
    assert 0.0 <= float(values['condition_number_age']) <= time.time() - sent_s
    assert any(_close(m.data, expected.diagonal_ratio) for m in panda.ratios[ratios_start:])
    assert any(_close(m.data, scaled, 1e-9) for m in panda.scaled_ratios[scaled_start:])


def test_float_topics_carry_one_value_per_state(panda, panda_robot):
    q, positions = random_positions(panda_robot, 7)
    expected = Expected(inertia_matrix(panda_robot, q))
    start = len(panda.kappas), len(panda.ratios), len(panda.scaled_ratios)
    panda.send(positions, expected.condition_number)

    def counts() -> list[int]:
        received = [len(panda.kappas), len(panda.ratios), len(panda.scaled_ratios)]
        return [after - before for after, before in zip(received, start)]

    # The three values of a state travel on three topics: wait for the last ones in flight.
    equal = panda.probe.spin_until(lambda: counts()[0] == counts()[1] == counts()[2], WAIT_S)
    assert equal, f'values per topic since the state: {counts()}'
    assert counts()[0] >= 1


def test_state_without_velocities_is_accepted(panda, panda_robot):
    q, positions = random_positions(panda_robot, 8)
    expected = Expected(inertia_matrix(panda_robot, q))
    msg = joint_state(panda_robot.joint_names, positions, velocities=[])
    start = len(panda.kappas)
    assert panda.publish_until(
        msg, lambda: any(_close(k.data, expected.condition_number) for k in panda.kappas[start:])
    )


# ---------------------------------------------------------------------------------------------
# Panda: levels and live parameters


def test_warn_and_error_levels_follow_live_thresholds(panda, panda_robot):
    kappa = panda.first.expected.condition_number
    state = panda.first.state
    assert all(r.successful for r in panda.set_parameters(warn_condition=10))
    summary = f'condition number {kappa:.4g} (exact) >= warn_condition 10'
    panda.wait_status(status_is(DiagnosticStatus.WARN, summary), keep=state)

    assert all(r.successful for r in panda.set_parameters(warn_condition=5.0, error_condition=50))
    summary = f'condition number {kappa:.4g} (exact) >= error_condition 50'
    panda.wait_status(status_is(DiagnosticStatus.ERROR, summary), keep=state)

    assert all(r.successful for r in panda.set_parameters(error_condition=1e6, warn_condition=1e4))
    panda.wait_status(status_is(DiagnosticStatus.OK), keep=state)


@pytest.mark.parametrize(
    ('values', 'reason'),
    [
        ({'warn_condition': 2e6}, 'must be below error_condition'),
        ({'error_condition': 10.0}, 'must be below error_condition'),
        ({'publish_rate': 0.0}, 'publish_rate: must be > 0'),
        ({'exact_rate': -1.0}, 'exact_rate: must be >= 0'),
        ({'joint_state_timeout': math.nan}, 'joint_state_timeout: must be a number'),
        ({'publish_rate': math.inf}, 'publish_rate: must be finite'),
        ({'warn_condition': 'high'}, "warn_condition: 'high' is not a number"),
    ],
)
def test_bad_live_parameters_are_rejected_with_reason(panda, values, reason):
    (result,) = panda.set_parameters(**values)
    assert not result.successful
    assert reason in result.reason
    panda.wait_status(status_is(DiagnosticStatus.OK), keep=panda.first.state)


def test_structural_parameters_are_read_only(panda):
    (result,) = panda.set_parameters(floating_base=True)
    assert not result.successful
    assert 'read-only' in result.reason


def test_unknown_live_parameter_is_refused_naming_the_closest(panda):
    (result,) = panda.set_parameters(warn_condtion=100.0)
    assert not result.successful
    assert "unknown parameter 'warn_condtion'" in result.reason
    assert "'warn_condition'" in result.reason


def test_estimate_sets_the_level_when_the_exact_value_is_old(panda, panda_robot):
    assert all(r.successful for r in panda.set_parameters(exact_rate=0.05))
    try:
        q, positions = random_positions(panda_robot, 9)
        msg = joint_state(panda_robot.joint_names, positions)
        status = panda.wait_status(
            lambda s: values_of(s)['level_from'] == 'scaled_diagonal_ratio', keep=msg
        )
        assert 'estimated by the scaled diagonal ratio' in status.message
        assert float(values_of(status)['condition_number_age']) > 0.0
    finally:
        assert all(r.successful for r in panda.set_parameters(exact_rate=0.0))


def test_pivot_ratio_only_on_request_and_labelled_negative(panda, panda_robot):
    assert 'pivot_ratio' not in values_of(panda.first.status)
    assert all(r.successful for r in panda.set_parameters(report_pivot_ratio=True))
    try:
        q, positions = random_positions(panda_robot, 10)
        inertia = inertia_matrix(panda_robot, q)
        msg = joint_state(panda_robot.joint_names, positions)
        status = panda.wait_status(
            lambda s: values_of(s).get('pivot_ratio', 'nan') != 'nan', keep=msg
        )
        values = values_of(status)
        pivots = np.square(np.diag(np.linalg.cholesky(inertia)))
        assert _close(float(values['pivot_ratio']), pivots.max() / pivots.min(), 1e-9)
        assert 'negative result' in values['pivot_ratio_note']
    finally:
        assert all(r.successful for r in panda.set_parameters(report_pivot_ratio=False))


# ---------------------------------------------------------------------------------------------
# Panda: bad and stale input


def bad_states(robot: RobotModel, positions: np.ndarray) -> dict[str, JointState]:
    names = list(robot.joint_names)
    with_nan = positions.copy()
    with_nan[3] = math.nan
    return {
        'non_finite': joint_state(names, with_nan),
        'ragged': joint_state(names, positions[:-1], velocities=[0.0] * len(names)),
        'joints': joint_state(names[1:], positions[1:]),
    }


def test_bad_states_are_rejected_and_counted(panda, panda_robot):
    _, positions = random_positions(panda_robot, 11)
    for reason, msg in bad_states(panda_robot, positions).items():
        before = int(values_of(panda.statuses()[-1])[f'rejected_samples.{reason}'])
        status = panda.wait_status(
            lambda s, r=reason, b=before: int(values_of(s)[f'rejected_samples.{r}']) > b,
            keep=msg,
        )
        assert int(values_of(status)['rejected_samples']) >= 1
    later = joint_state(panda_robot.joint_names, positions, stamp_s=20.0)
    earlier = joint_state(panda_robot.joint_names, positions, stamp_s=10.0)
    panda.joint_states.publish(later)
    panda.wait_status(
        lambda s: int(values_of(s)['rejected_samples.out_of_order']) > 0, keep=earlier
    )
    assert panda.process.alive()
    q, positions = random_positions(panda_robot, 12)
    panda.send(positions, Expected(inertia_matrix(panda_robot, q)).condition_number)


def test_stale_input_warns(panda):
    panda.wait_status(status_is(DiagnosticStatus.OK), keep=panda.first.state)
    status = panda.wait_status(status_is(DiagnosticStatus.WARN, 'stale joint_states'))
    assert status.message.startswith('stale joint_states: no valid state for')
    panda.wait_status(status_is(DiagnosticStatus.OK), keep=panda.first.state)


# ---------------------------------------------------------------------------------------------
# Floating base, the 4-link chain of Shah & Saha 2013 (eqs 7-9) with sim time, start-up, shutdown


def test_floating_base_talos_matches_numpy_whatever_the_base_pose(probe):
    path, floating_base = example_robot_urdf('talos')
    robot = RobotModel.from_urdf_path(path, floating_base)
    parameters = {'urdf_path': str(path), 'floating_base': True, 'exact_rate': 0.0}
    with Sidecar(probe, robot, parameters, 'diag_talos', '/talos/joint_states') as sidecar:
        q, positions = random_positions(robot, 3)
        assert not np.allclose(q[:7], [0, 0, 0, 0, 0, 0, 1])
        expected = Expected(inertia_matrix(robot, q))
        assert robot.nv == 38
        sidecar.send(positions, expected.condition_number)
        status = sidecar.wait_status(lambda s: values_of(s)['samples'] != '0')
        assert status.hardware_id == robot.name
        values = values_of(status)
        assert _close(float(values['lambda_min']), expected.lambda_min, 1e-9)
        assert _close(float(values['diagonal_ratio']), expected.diagonal_ratio, 1e-9)
        assert sidecar.process.stop(signal.SIGTERM) == 0


def four_link_swing(robot: RobotModel, sample_times_s: list[float]) -> list[np.ndarray]:
    """The 4-rod chain of Shah & Saha 2013 falling from horizontal: q at the times (1 ms Euler)."""
    model, data = robot.model, robot.model.createData()
    q, v = np.zeros(model.nq), np.zeros(model.nv)
    samples = []
    for step in range(round(max(sample_times_s) / 1e-3) + 1):
        if any(abs(step * 1e-3 - t) < 1e-9 for t in sample_times_s):
            samples.append(q.copy())
        v += 1e-3 * pin.aba(model, data, q, v, np.zeros(model.nv))
        q += 1e-3 * v
    return samples


def publish_clock(sidecar: Sidecar, clock, t_s: float) -> None:
    """Publish /clock = `t_s` and wait until the node reads it: its next status bears that stamp.

    (Its status timer runs on the simulated clock, so every step of 0.25 s makes one.)
    """
    msg = Clock()
    msg.clock.sec = int(t_s)
    msg.clock.nanosec = int(round((t_s - int(t_s)) * 1e9))
    start = len(sidecar.arrays)

    def read() -> bool:
        return any(
            array.header.stamp == msg.clock
            for array in sidecar.arrays[start:]
            if any(status.name == sidecar.status_name for status in array.status)
        )

    # Re-sent until read: the first one can go out before the node's /clock subscription has
    # matched the publisher (a volatile topic drops it); re-sending the same time is harmless.
    deadline = time.monotonic() + WAIT_S
    while True:
        clock.publish(msg)
        if sidecar.probe.spin_until(read, 0.2):
            return
        assert time.monotonic() < deadline, (
            f'{sidecar.node_name} did not read /clock = {t_s} s within {WAIT_S} s'
        )


def open_clock_path(sidecar: Sidecar, clock, before_s: float) -> None:
    """Step /clock by 0.1 s up to `before_s` until a status of the node comes back.

    A status published before the node's /diagnostics publisher has matched the probe's
    subscription is lost, and on a stopped simulated clock its timer makes no other one: the
    probe's side of the match (or the ROS graph) does not show the node's. A status heard
    proves the whole path /clock -> node -> /diagnostics -> probe.
    """
    start = len(sidecar.arrays)
    t_s, deadline = before_s - 50.0, time.monotonic() + WAIT_S

    def heard() -> bool:
        arrays = sidecar.arrays[start:]
        return any(s.name == sidecar.status_name for a in arrays for s in a.status)

    while not sidecar.probe.spin_until(heard, 0.2):
        assert t_s < before_s - 0.5 and time.monotonic() < deadline, (
            f'no status of {sidecar.node_name} on /diagnostics within {WAIT_S} s while /clock '
            f'stepped to {t_s:.1f} s'
        )
        t_s += 0.1
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = int(t_s), int(round((t_s - int(t_s)) * 1e9))
        clock.publish(msg)


def test_four_link_chain_scaled_ratio_tracks_kappa_on_sim_time(probe):
    urdf = serial_chain_urdf(4)
    robot = RobotModel.from_urdf_string(urdf)
    parameters = {
        'robot_description': urdf,
        'use_sim_time': True,
        'exact_rate': 0.0,
        'publish_rate': 10.0,
        'joint_state_timeout': 0.5,
    }
    clock = probe.publisher(Clock, '/clock')
    times = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5]
    with Sidecar(probe, robot, parameters, 'diag_chain', '/chain/joint_states') as sidecar:
        open_clock_path(sidecar, clock, 100.0)
        kappas, scaled = [], []
        for t_s, q in zip(times, four_link_swing(robot, times), strict=True):
            publish_clock(sidecar, clock, 100.0 + t_s)
            expected = Expected(inertia_matrix(robot, q))
            start = len(sidecar.scaled_ratios)
            sidecar.send(q, expected.condition_number, stamp_s=100.0 + t_s)
            assert sidecar.probe.spin_until(lambda s=start: len(sidecar.scaled_ratios) > s)
            kappas.append(expected.condition_number)
            scaled.append(sidecar.scaled_ratios[-1].data)
        assert kappas[0] == pytest.approx(EQ7_CONDITION_NUMBER, abs=0.5)
        assert scaled[0] == pytest.approx(kappas[0], rel=RTOL)
        errors = np.abs(np.array(scaled) - kappas) / kappas
        assert errors.max() < FOUR_LINK_SWING_MAX_ERROR
        assert errors[1:].min() > 0.0

        start = len(sidecar.statuses())
        publish_clock(sidecar, clock, 101.75)
        status = sidecar.wait_status(
            lambda s: float(values_of(s)['condition_number_age']) > 0.2, since=start
        )
        values = values_of(status)
        assert float(values['condition_number_age']) == pytest.approx(0.25, abs=0.06)
        assert float(values['estimate_relative_error']) == pytest.approx(errors[-1], rel=1e-6)
        assert status.level == DiagnosticStatus.OK

        # Wall time alone never makes the input stale; sim time does.
        sidecar.probe.spin_for(0.7)
        assert not sidecar.statuses()[-1].message.startswith('stale')
        start = len(sidecar.statuses())
        publish_clock(sidecar, clock, 102.5)
        status = sidecar.wait_status(
            lambda s: s.message.startswith('stale joint_states'), since=start
        )
        assert status.level == DiagnosticStatus.WARN


def test_missing_model_exits_non_zero_naming_both_parameters():
    with NodeProcess(SCRIPT) as node:
        assert node.wait(STARTUP_TIMEOUT_S) != 0
        output = node.output()
    assert 'robot_description' in output and 'urdf_path' in output
    assert 'Traceback' not in output


def test_invalid_start_up_parameter_exits_non_zero_naming_it():
    parameters = {'robot_description': serial_chain_urdf(2), 'warn_condition': 1e7}
    with NodeProcess(SCRIPT, parameters) as node:
        assert node.wait(STARTUP_TIMEOUT_S) != 0
        output = node.output()
    assert 'warn_condition' in output and 'error_condition' in output
    assert 'Traceback' not in output


def test_unknown_start_up_parameter_exits_non_zero_naming_the_closest():
    parameters = {'robot_description': serial_chain_urdf(2), 'publish_rat': 5.0}
    with NodeProcess(SCRIPT, parameters) as node:
        assert node.wait(STARTUP_TIMEOUT_S) != 0
        output = node.output()
    assert "unknown parameter 'publish_rat'" in output and "'publish_rate'" in output
    assert 'Traceback' not in output


def test_sigterm_and_sigint_exit_cleanly(probe):
    urdf = serial_chain_urdf(3)
    robot = RobotModel.from_urdf_string(urdf)
    parameters = {'robot_description': urdf, 'publish_rate': 10.0}
    signals = (signal.SIGTERM, signal.SIGINT)
    sidecars = [
        Sidecar(probe, robot, parameters, f'diag_{sig.name.lower()}', f'/{sig.name}/js')
        for sig in signals
    ]
    for sidecar in sidecars:
        sidecar.__enter__()
    try:
        for sidecar in sidecars:
            sidecar.wait_status(lambda s: True, since=0)
        codes = [sidecar.process.stop(sig) for sidecar, sig in zip(sidecars, signals)]
    finally:
        for sidecar in sidecars:
            sidecar.__exit__(None, None, None)
    for sidecar, code in zip(sidecars, codes):
        output = sidecar.process.output()
        assert code == 0, output
        assert 'Traceback' not in output
