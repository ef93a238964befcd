"""The simulator's torque-command input and real-time pacing, without ROS or MuJoCo."""

import numpy as np
import pytest

from wbc_control.sim.command_input import (
    MAX_CATCH_UP_PERIODS,
    CommandRejected,
    RealTimePacer,
    TorqueCommandInput,
)


def test_commands_are_held_in_actuated_order_with_zero_elsewhere():
    commands = TorqueCommandInput(4, np.array([2, 0]), timeout_s=0.1)
    torque = commands.accept(np.array([5.0, -1.0]), now_s=0.0)
    np.testing.assert_array_equal(torque, [-1.0, 0.0, 5.0, 0.0])
    held, stale = commands.torque_at(0.05)
    np.testing.assert_array_equal(held, [-1.0, 0.0, 5.0, 0.0])
    assert not stale


def test_a_new_command_replaces_the_whole_previous_one():
    commands = TorqueCommandInput(3, np.array([0, 1, 2]), timeout_s=0.0)
    commands.accept(np.array([1.0, 2.0, 3.0]), now_s=0.0)
    torque = commands.accept(np.array([0.0, 0.0, 7.0]), now_s=0.001)
    np.testing.assert_array_equal(torque, [0.0, 0.0, 7.0])


@pytest.mark.parametrize(
    ('values', 'reason'),
    [(np.array([1.0]), 'length'), (np.array([1.0, np.nan]), 'non_finite')],
)
def test_bad_commands_are_refused_counted_and_change_nothing(values, reason):
    commands = TorqueCommandInput(2, np.array([0, 1]), timeout_s=0.1)
    commands.accept(np.array([1.0, 2.0]), now_s=0.0)
    with pytest.raises(CommandRejected) as raised:
        commands.accept(values, now_s=0.01)
    assert raised.value.reason == reason
    assert commands.rejected == {reason: 1}
    np.testing.assert_array_equal(commands.torque_at(0.02)[0], [1.0, 2.0])


def test_a_command_older_than_the_timeout_means_zero_torque():
    commands = TorqueCommandInput(2, np.array([0, 1]), timeout_s=0.1)
    torque, stale = commands.torque_at(0.0)
    assert stale and not torque.any()
    commands.accept(np.array([1.0, 2.0]), now_s=1.0)
    assert not commands.torque_at(1.05)[1]
    torque, stale = commands.torque_at(1.1 + 1e-9)
    assert stale and not torque.any()


def test_a_zero_timeout_holds_the_last_command_forever():
    commands = TorqueCommandInput(1, np.array([0]), timeout_s=0.0)
    torque, stale = commands.torque_at(0.0)
    assert stale and not torque.any()  # nothing received yet: the node does not log 'received'
    commands.accept(np.array([3.0]), now_s=0.0)
    assert commands.torque_at(1e6) == (pytest.approx([3.0]), False)


class FakeClock:
    """A wall clock the test advances by hand."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        """The current time in seconds."""
        return self.now_s


def test_pacer_runs_one_period_per_call_as_fast_as_possible():
    pacer = RealTimePacer(0.0, 0.002, clock=FakeClock())
    assert [pacer.periods_due(t) for t in (0.0, 0.002, 5.0)] == [1, 1, 1]


def test_pacer_owes_the_wall_clock_whole_periods_from_the_first_call():
    clock = FakeClock()
    pacer = RealTimePacer(0.5, 0.002, clock=clock)
    assert pacer.periods_due(0.0) == 0  # start-up time is not a backlog
    clock.now_s += 0.02  # 10 ms of simulated time at half speed
    assert pacer.periods_due(0.0) == 5
    assert pacer.periods_due(0.010) == 0
    clock.now_s += 0.003
    assert pacer.periods_due(0.010) == 0  # 1.5 ms owed: not a whole period yet
    assert not pacer.dropped_backlog


def test_pacer_drops_a_backlog_beyond_the_catch_up_limit():
    clock = FakeClock()
    pacer = RealTimePacer(1.0, 0.001, clock=clock)
    pacer.periods_due(0.0)
    clock.now_s += 1.0
    assert pacer.periods_due(0.0) == MAX_CATCH_UP_PERIODS
    assert pacer.dropped_backlog
    sim_s = MAX_CATCH_UP_PERIODS * 0.001
    assert pacer.periods_due(sim_s) == 0  # the rest of the second is forgotten
    assert not pacer.dropped_backlog


def test_lockstep_states_wait_for_their_wall_time():
    clock = FakeClock()
    pacer = RealTimePacer(0.5, 0.004, clock=clock)
    assert pacer.wait_s(0.004) == 0.0  # the first state starts the clock
    clock.now_s += 0.001
    assert pacer.wait_s(0.008) == pytest.approx(0.007)  # 4 ms of sim time: 8 ms of wall time
    clock.now_s += 0.007
    assert pacer.wait_s(0.008) == pytest.approx(0.0)
    clock.now_s += 0.05  # the controller was slow: the next state goes at once
    assert pacer.wait_s(0.012) < 0.0
    assert not pacer.dropped_backlog
    assert RealTimePacer(0.0, 0.004, clock=clock).wait_s(5.0) == 0.0  # as fast as possible


def test_lockstep_pacing_drops_a_backlog_instead_of_bursting():
    clock = FakeClock()
    pacer = RealTimePacer(1.0, 0.004, clock=clock)
    pacer.wait_s(0.004)
    clock.now_s += 1.0  # far behind: more than MAX_CATCH_UP_PERIODS periods
    assert pacer.wait_s(0.008) == 0.0
    assert pacer.dropped_backlog
    assert pacer.wait_s(0.012) == pytest.approx(0.004)  # paced again from here
