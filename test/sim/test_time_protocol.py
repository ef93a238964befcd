"""The simulator's time protocol on the real MuJoCo Panda, with a wall clock the test sets."""

import numpy as np
import pytest
from sim_support import make_simulation

from wbc_control.config.schema import load_schema
from wbc_control.sim.settings import sim_settings
from wbc_control.sim.time_protocol import HOLD_RESEND_S, Connections, TimeProtocol

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
#: Gravity-like torques with distinct components (N m), within the Panda's effort limits.
TORQUE = np.array([0.3, -25.0, 0.8, 14.0, 1.1, 2.2, -0.4])
ARM = [f'panda_joint{i}' for i in range(1, 8)]


class WallClock:
    """A monotonic clock the test advances."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        """The time the test set (s)."""
        return self.now_s


class Lines:
    """The protocol's log: (level, key, message)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, str]] = []

    def info(self, key: str, message: str, period_s: float | None = None) -> None:
        """Record an informational line."""
        self.lines.append(('info', key, message))

    def warning(self, key: str, message: str, period_s: float | None = None) -> None:
        """Record a warning."""
        self.lines.append(('warning', key, message))

    def keys(self) -> list[str]:
        """The keys of the lines so far, in order."""
        return [key for _, key, _ in self.lines]


class Rig:
    """A TimeProtocol on the Panda: its published states and its connections."""

    def __init__(self, **parameters) -> None:
        self.sim = make_simulation('panda')
        values = {spec.name: spec.default for spec in load_schema('wbc_sim')}
        values.update(command_joints=ARM, initial_positions=READY.tolist(), **parameters)
        self.settings = sim_settings(values, self.sim.robot)
        self.sim.reset(self.settings.initial_positions)
        self.clock, self.log = WallClock(), Lines()
        self.published: list[tuple[float, np.ndarray]] = []
        self.connected = Connections(0, False)
        self.protocol = TimeProtocol(
            self.settings,
            self.sim,
            self._publish,
            lambda: self.connected,
            self.log,
            self.clock,
        )
        self.protocol.start()

    def _publish(self) -> None:
        self.published.append((self.sim.time_s, self.sim.joint_positions()))

    def stamps(self) -> list[float]:
        """The simulated time of every published state."""
        return [stamp for stamp, _ in self.published]

    def after(self, seconds: float, callback) -> None:
        """Advance the wall clock, then run a timer callback."""
        self.clock.now_s += seconds
        callback()


def test_paced_publishes_its_initial_state_then_what_the_wall_clock_is_owed():
    rig = Rig(publish_rate=500.0, real_time_factor=1.0)
    [timer] = rig.protocol.timers()
    assert timer.period_s == pytest.approx(0.002)
    assert rig.stamps() == [0.0]
    np.testing.assert_allclose(rig.published[0][1], READY)
    rig.protocol.on_physics_timer()  # the pacing's origin
    rig.after(0.0101, rig.protocol.on_physics_timer)
    assert rig.stamps() == pytest.approx([0.0, 0.002, 0.004, 0.006, 0.008, 0.010])


def test_paced_as_fast_as_possible_steps_one_period_per_turn():
    rig = Rig(publish_rate=250.0, real_time_factor=0.0)
    assert [timer.period_s for timer in rig.protocol.timers()] == [0.0]
    for _ in range(3):
        rig.protocol.on_physics_timer()
    assert rig.stamps() == pytest.approx([0.0, 0.004, 0.008, 0.012])


def test_paced_without_a_command_falls_under_zero_torque():
    rig = Rig(real_time_factor=0.0)
    for _ in range(50):
        rig.protocol.on_physics_timer()
    assert rig.sim.time_s == pytest.approx(0.1)
    assert np.abs(rig.published[-1][1] - READY).max() > 1e-3  # gravity moved it
    assert not rig.sim.applied_torque.any()


def test_held_time_stands_at_zero_and_the_initial_state_is_resent():
    rig = Rig(real_time_factor=1.0, hold_until_commanded=True)
    rig.after(0.05, rig.protocol.on_physics_timer)
    assert rig.stamps() == [0.0]  # not yet HOLD_RESEND_S
    rig.after(HOLD_RESEND_S, rig.protocol.on_physics_timer)
    rig.after(5.0, rig.protocol.on_physics_timer)
    assert rig.stamps() == [0.0, 0.0, 0.0]
    for _, positions in rig.published:
        np.testing.assert_array_equal(positions, READY)
    rig.protocol.on_command(np.zeros(7))  # a controller's safe command while it starts
    rig.after(HOLD_RESEND_S, rig.protocol.on_physics_timer)
    assert rig.sim.time_s == 0.0 and rig.protocol.holding
    assert 'started' not in rig.log.keys()


def test_held_time_starts_at_the_first_non_zero_command():
    rig = Rig(real_time_factor=1.0, hold_until_commanded=True)
    rig.protocol.on_command(TORQUE)
    assert not rig.protocol.holding and rig.log.keys() == ['started']
    rig.protocol.on_physics_timer()
    rig.after(0.0041, rig.protocol.on_physics_timer)
    assert rig.stamps() == pytest.approx([0.0, 0.002, 0.004])
    np.testing.assert_allclose(rig.sim.applied_torque[:7], TORQUE)


def test_paced_commands_go_stale_after_the_timeout_and_recover():
    rig = Rig(real_time_factor=0.0, command_timeout=0.01)
    rig.protocol.on_command(TORQUE)
    for _ in range(5):  # 0.010 s: not older than the timeout yet
        rig.protocol.on_physics_timer()
    assert 'stale' not in rig.log.keys()
    np.testing.assert_allclose(rig.sim.applied_torque[:7], TORQUE)
    rig.protocol.on_physics_timer()
    assert rig.log.keys()[-1] == 'stale' and not rig.sim.applied_torque.any()
    rig.protocol.on_command(-TORQUE)
    rig.protocol.on_physics_timer()
    assert rig.log.keys()[-1] == 'fresh'
    np.testing.assert_allclose(rig.sim.applied_torque[:7], -TORQUE)


def lockstep(**parameters) -> Rig:
    settings = {
        'lockstep': True,
        'control_period': 0.004,
        'real_time_factor': 0.0,
        'lockstep_resend_period': 0.5,
        **parameters,
    }
    return Rig(**settings)


def test_lockstep_sends_its_first_state_once_a_controller_is_connected_both_ways():
    rig = lockstep(lockstep_subscribers=2)
    [resend] = rig.protocol.timers()
    for connected in (Connections(0, True), Connections(2, False)):
        rig.connected = connected
        rig.after(0.05, resend.callback)
    assert rig.stamps() == [] and 'waiting' not in rig.log.keys()
    rig.connected = Connections(1, True)
    rig.after(0.05, resend.callback)
    assert rig.stamps() == [] and rig.log.keys() == ['waiting']
    rig.connected = Connections(2, True)
    rig.after(0.05, resend.callback)
    assert rig.stamps() == [0.0]


def test_lockstep_ignores_a_command_before_its_first_state():
    rig = lockstep()
    rig.protocol.on_command(TORQUE)
    assert rig.stamps() == [] and rig.sim.time_s == 0.0
    assert rig.log.keys() == ['early_command']
    rig.connected = Connections(1, True)
    rig.protocol.on_resend_timer()
    rig.protocol.on_command(TORQUE)
    assert rig.stamps() == pytest.approx([0.0, 0.004])


def test_lockstep_each_command_advances_one_control_period_and_answers_one_state():
    rig = lockstep()
    rig.connected = Connections(1, True)
    rig.protocol.on_resend_timer()
    for k in range(1, 4):
        rig.protocol.on_command(TORQUE * k)
        np.testing.assert_allclose(rig.sim.applied_torque[:7], TORQUE * k)
    assert rig.stamps() == pytest.approx([0.0, 0.004, 0.008, 0.012])


def test_lockstep_resends_the_current_state_only_after_the_resend_period():
    rig = lockstep(lockstep_resend_period=0.5)
    [resend] = rig.protocol.timers()
    assert resend.period_s == pytest.approx(0.05)
    rig.connected = Connections(1, True)
    resend.callback()
    rig.protocol.on_command(TORQUE)
    rig.after(0.49, resend.callback)
    assert rig.stamps() == pytest.approx([0.0, 0.004])
    rig.after(0.02, resend.callback)
    assert rig.stamps() == pytest.approx([0.0, 0.004, 0.004])
    rig.after(0.02, resend.callback)  # the next re-send waits a whole period again
    assert len(rig.published) == 3


def test_lockstep_with_a_real_time_factor_holds_an_early_state_until_its_wall_time():
    rig = lockstep(real_time_factor=0.5, control_period=0.004)
    resend, pace = rig.protocol.timers()
    assert pace.period_s == pytest.approx(0.008)
    rig.connected = Connections(1, True)
    resend.callback()
    rig.protocol.on_command(TORQUE)  # the pacing's origin: published at once
    rig.protocol.on_command(TORQUE)  # 0.004 s later: due 0.008 s of wall time after it
    assert rig.stamps() == pytest.approx([0.0, 0.004])
    rig.after(0.007, pace.callback)
    assert len(rig.published) == 2
    rig.after(0.002, pace.callback)
    assert rig.stamps() == pytest.approx([0.0, 0.004, 0.008])


def test_lockstep_held_ignores_zero_commands_and_keeps_offering_its_initial_state():
    rig = lockstep(hold_until_commanded=True, lockstep_resend_period=0.5)
    rig.connected = Connections(1, True)
    rig.protocol.on_resend_timer()
    rig.after(0.3, lambda: rig.protocol.on_command(np.zeros(7)))
    assert rig.stamps() == [0.0] and rig.sim.time_s == 0.0 and rig.log.keys() == ['held']
    rig.after(0.21, rig.protocol.on_resend_timer)  # a zero command is no answer: re-sent
    assert rig.stamps() == [0.0, 0.0]
    for _, positions in rig.published:
        np.testing.assert_array_equal(positions, READY)
    rig.protocol.on_command(TORQUE)
    assert rig.stamps()[-1] == pytest.approx(0.004) and rig.log.keys()[-1] == 'started'
    rig.protocol.on_command(np.zeros(7))  # once started, a zero command steps as any other
    assert rig.stamps()[-1] == pytest.approx(0.008)


@pytest.mark.parametrize('values', [np.ones(6), np.array([np.nan, 0, 0, 0, 0, 0, 1.0])])
def test_a_rejected_command_is_counted_logged_and_changes_nothing(values):
    rig = lockstep()
    rig.connected = Connections(1, True)
    rig.protocol.on_resend_timer()
    rig.protocol.on_command(values)
    assert rig.stamps() == [0.0] and rig.sim.time_s == 0.0
    [(level, key, message)] = rig.log.lines
    assert level == 'warning' and key.startswith('rejected.') and '1 rejected so far' in message


def test_a_command_beyond_the_effort_limits_is_applied_and_named():
    rig = lockstep()
    rig.connected = Connections(1, True)
    rig.protocol.on_resend_timer()
    beyond = TORQUE.copy()
    beyond[5] = 12.5  # panda_joint6: 12 N m
    rig.protocol.on_command(beyond)
    np.testing.assert_allclose(rig.sim.applied_torque[:7], beyond)
    [(level, key, message)] = rig.log.lines
    assert key == 'beyond_effort' and 'panda_joint6' in message and 'panda_joint5' not in message
    rig.protocol.on_command(TORQUE)
    assert len(rig.log.lines) == 1
