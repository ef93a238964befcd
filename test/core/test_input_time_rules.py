"""Time rules for stamped inputs and the watchdog (wbc_control.inputs.timing)."""

import numpy as np
import pytest
from robots import robot

from wbc_control.exceptions import InvalidValue
from wbc_control.inputs.joint_states import JointStateDecoder, JointStateRejected
from wbc_control.inputs.odometry import OdometryDecoder, OdometryRejected
from wbc_control.inputs.timing import (
    WALL_CLOCK_EPOCH_S,
    ClockCheck,
    StampRules,
    Watchdog,
    check_period,
    other_clock,
)

POSE = [0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]
TWIST = [0.0] * 6


def test_a_future_stamp_is_rejected_and_does_not_lock_the_input_out():
    rules = StampRules(timeout_s=0.1, future_tolerance_s=0.01)
    assert rules.admit(10.0, now_s=10.0).reason is None
    assert rules.admit(86_400.0, now_s=10.001).reason == 'future'
    # The next good state is accepted: the future stamp never became the reference.
    assert rules.admit(10.002, now_s=10.002).reason is None
    assert rules.admit(10.0025, now_s=10.003).reason is None


def test_the_first_state_is_compared_with_the_clock():
    rules = StampRules(timeout_s=0.1)
    verdict = rules.admit(1000.0 - 3600.0, now_s=1000.0)
    assert verdict.reason == 'stale' and 'behind' in verdict.detail
    assert rules.admit(999.95, now_s=1000.0).reason is None


def test_order_within_a_run_and_unstamped_samples():
    rules = StampRules(timeout_s=0.1)
    assert rules.admit(5.0, 5.0).reason is None
    assert rules.admit(5.0, 5.01).reason == 'out_of_order'
    assert rules.admit(4.99, 5.01).reason == 'out_of_order'
    assert rules.admit(0.0, 5.02).reason is None
    assert rules.admit(5.02, 5.02).reason is None


def test_a_clock_jumping_back_restarts_the_rules():
    """A simulator reset under use_sim_time: the clock and the stamps start again from zero."""
    rules = StampRules(timeout_s=0.1)
    for t in np.arange(1.0, 8.0, 0.5):
        assert rules.admit(t, t).reason is None
    verdict = rules.admit(0.002, now_s=0.002)
    assert verdict.reason is None and verdict.restarted
    assert not rules.admit(0.004, now_s=0.004).restarted


def test_a_publisher_restarting_its_stamps_restarts_the_rules():
    """The node clock runs on while the publisher's stamps jump back by more than the timeout.

    Only a jump larger than the timeout restarts; a small step back is out of order.
    """
    rules = StampRules(timeout_s=10.0)
    assert rules.admit(100.0, now_s=100.0).reason is None
    assert rules.admit(99.0, now_s=100.1).reason == 'out_of_order'
    verdict = rules.admit(89.0, now_s=95.0)  # clock jumped back too: restarted either way
    assert verdict.reason is None and verdict.restarted
    rules = StampRules(timeout_s=10.0, future_tolerance_s=100.0)
    assert rules.admit(200.0, now_s=150.0).reason is None
    verdict = rules.admit(150.0, now_s=150.5)  # 50 s back, clock still fine
    assert verdict.reason is None and verdict.restarted


def test_order_only_without_a_clock():
    rules = StampRules(timeout_s=np.inf)
    assert rules.admit(3.0, None).reason is None
    assert rules.admit(2.0, None).reason == 'out_of_order'


@pytest.mark.parametrize('value', [0.0, -1.0, np.nan])
def test_invalid_limits_are_rejected(value):
    with pytest.raises(InvalidValue):
        StampRules(value)
    with pytest.raises(InvalidValue):
        Watchdog(value)


def test_odometry_follows_the_same_rules():
    decoder = OdometryDecoder('odom', 'base', timeout_s=0.1, future_tolerance_s=0.01)
    decoder.decode('odom', 'base', POSE, TWIST, 1.0, now_s=1.0)
    for stamp, now, reason in ((1e6, 1.01, 'future'), (0.5, 1.02, 'stale')):
        with pytest.raises(OdometryRejected) as error:
            decoder.decode('odom', 'base', POSE, TWIST, stamp, now_s=now)
        assert error.value.reason == reason
    assert not decoder.decode('odom', 'base', POSE, TWIST, 1.03, now_s=1.03).restarted
    assert decoder.decode('odom', 'base', POSE, TWIST, 0.01, now_s=0.01).restarted


#: A wall-clock reading (November 2026) and a simulator's time.
WALL_S = 1_795_857_949.368
SIM_S = 11.94


@pytest.mark.parametrize(
    ('stamp_s', 'now_s', 'fix'),
    [
        (SIM_S, WALL_S, 'use_sim_time:=true'),  # a simulator's stamps, a node on the wall clock
        (86_400.0 * 3, WALL_S, 'use_sim_time:=true'),  # a driver's clock 3 days since boot
        (WALL_S, SIM_S, 'use_sim_time:=false'),  # wall-clock stamps, a node on simulated time
        (SIM_S, 0.0, 'no /clock has arrived'),  # use_sim_time without a simulator
        (0.051, 0.0, 'no /clock has arrived'),  # just past a plausible skew
        (WALL_S, 0.0, 'no /clock has arrived'),
    ],
)
def test_stamps_on_another_clock_name_the_cause_and_the_fix(stamp_s, now_s, fix):
    assert fix in other_clock(stamp_s, now_s)


@pytest.mark.parametrize(
    ('stamp_s', 'now_s'),
    [
        (WALL_S - 3600.0, WALL_S),  # an hour late: stale, but on the node's clock
        (WALL_S + 7.3, WALL_S),  # hosts whose clocks differ: skew, not another clock
        (SIM_S - 9.5, SIM_S),  # simulated time on both sides
        (0.0, WALL_S),  # unstamped
        (0.0, 0.0),
        (0.002, 0.0),  # a simulator's first step, heard before the /clock of that step
        (0.05, 0.0),
    ],
)
def test_stamps_on_the_same_kind_of_clock_give_no_hint(stamp_s, now_s):
    assert other_clock(stamp_s, now_s) == ''


def test_the_wall_clock_starts_at_the_epoch_boundary():
    assert other_clock(WALL_CLOCK_EPOCH_S - 0.5, WALL_CLOCK_EPOCH_S) != ''
    assert other_clock(WALL_CLOCK_EPOCH_S, WALL_CLOCK_EPOCH_S + 0.5) == ''
    assert other_clock(WALL_CLOCK_EPOCH_S, WALL_CLOCK_EPOCH_S - 0.5) != ''


def test_a_clock_check_tells_each_new_disagreement_once():
    check = ClockCheck()
    first = check.check(SIM_S, WALL_S)
    assert 'use_sim_time:=true' in first and check.hint == first
    assert check.check(SIM_S + 0.002, WALL_S + 0.002) == '' and check.hint == first
    assert check.check(WALL_S, SIM_S) != ''  # another disagreement: told again
    assert check.check(WALL_S, WALL_S) == '' and check.hint == ''
    assert check.check(SIM_S, WALL_S) == first  # back after an agreement: told again


def test_the_first_rejection_of_stamps_on_another_clock_carries_the_hint_once():
    """The shipped Panda files started by hand without use_sim_time, in the decoder."""
    decoder = JointStateDecoder(robot('panda'), timeout_s=0.1)
    names = list(robot('panda').joint_names)
    positions = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
    velocities = [0.01 * i for i in range(9)]
    decoder.decode(names, positions, velocities, 0.0, WALL_S)  # held, unstamped: admitted
    hints = []
    for k in range(1, 4):
        with pytest.raises(JointStateRejected) as rejected:
            decoder.decode(names, positions, velocities, 0.002 * k, WALL_S + 0.002 * k)
        assert rejected.value.reason == 'stale'
        hints.append(rejected.value.hint)
    assert 'use_sim_time:=true' in hints[0] and hints[1:] == ['', '']
    assert decoder.clock_hint == hints[0]  # for /diagnostics while it lasts
    decoder.decode(names, positions, velocities, WALL_S + 0.01, WALL_S + 0.01)
    assert decoder.clock_hint == ''


def test_a_late_stamp_on_the_same_clock_is_stale_without_a_hint():
    rules = StampRules(timeout_s=0.1, future_tolerance_s=0.05)
    verdicts = [rules.admit(WALL_S - 0.5, WALL_S), rules.admit(WALL_S + 0.2, WALL_S)]
    assert [v.reason for v in verdicts] == ['stale', 'future']
    assert [v.hint for v in verdicts] == ['', ''] and rules.clock_hint == ''


def test_odometry_stamps_on_another_clock_carry_the_hint():
    decoder = OdometryDecoder('odom', 'base', timeout_s=0.1)
    with pytest.raises(OdometryRejected) as rejected:
        decoder.decode('odom', 'base', POSE, TWIST, WALL_S, now_s=SIM_S)
    assert rejected.value.reason == 'future' and 'use_sim_time:=false' in rejected.value.hint
    assert decoder.clock_hint == rejected.value.hint


def test_watchdog_expires_on_node_time():
    dog = Watchdog(timeout_s=0.1)
    dog.feed(1.0, 50.0)
    assert not dog.expired(1.05, 50.05)
    assert dog.expired(1.2, 50.05)


def test_before_the_first_state_the_watchdog_waits_a_wall_timeout_from_its_first_check():
    # A lock-stepped simulator's first state may be queued behind the first checks: a safe
    # command sent at once would be taken for its answer, shifting every later command.
    dog = Watchdog(timeout_s=0.1, wall_timeout_s=0.5)
    assert not dog.expired(0.0, 20.0) and dog.age(0.0, 20.0) is None
    assert not dog.expired(0.0, 20.45)
    assert dog.expired(0.0, 20.55)
    assert dog.expired(0.0, 30.0)
    dog.feed(0.0, 30.01)
    assert not dog.expired(0.0, 30.02)


def test_after_a_reset_the_watchdog_expires_at_once():
    dog = Watchdog(timeout_s=0.1, wall_timeout_s=0.5)
    assert not dog.expired(0.0, 20.0)
    dog.feed(1.0, 20.01)
    dog.reset()
    assert dog.expired(0.5, 20.02) and dog.age(0.5, 20.02) is None


def test_watchdog_expires_on_wall_time_when_the_node_clock_stops():
    dog = Watchdog(timeout_s=0.1, wall_timeout_s=0.5)
    dog.feed(3.0, 10.0)
    assert not dog.expired(3.0, 10.4)
    assert dog.expired(3.0, 10.6)
    assert dog.age(3.0, 10.6) == pytest.approx(0.6)


def test_a_stall_gives_the_input_a_whole_wall_timeout_from_its_end():
    # A lock-stepped simulator waits for each command: its clock stops with ours. The process
    # stalls 2 s (no check, no callback); the state queued meanwhile may take a few checks to
    # come out of the middleware, and the loop goes on without a safe command.
    dog = Watchdog(timeout_s=0.1, wall_timeout_s=1.0)
    dog.feed(3.0, 10.0)
    assert not dog.expired(3.0, 10.05)
    assert not dog.expired(3.0, 12.05)  # 2 s since the previous check: the stall's end
    assert not dog.expired(3.0, 12.1)
    assert not dog.expired(3.0, 13.05)
    dog.feed(3.004, 13.06)
    assert not dog.expired(3.004, 13.1)


def test_a_stall_grants_one_wall_timeout_per_state_and_never_delays_the_node_clock():
    dog = Watchdog(timeout_s=0.1, wall_timeout_s=1.0)
    dog.feed(3.0, 10.0)
    assert not dog.expired(3.0, 10.05)
    assert not dog.expired(3.0, 12.05)  # stalled
    assert dog.expired(3.0, 13.1)  # a whole wall timeout after the stall: the input is gone
    assert dog.expired(3.0, 14.5)  # stale stays stale: a stall does not make it fresh
    dog.feed(3.0, 14.6)
    assert not dog.expired(3.0, 14.65)
    assert not dog.expired(3.0, 16.0)  # stalled: the wall age counts from here
    assert dog.expired(3.0, 17.5)  # stalled again, no state since the last grace: none now
    dog.feed(3.0, 17.6)
    assert dog.expired(3.5, 19.6)  # node time ran past the timeout: no grace
    dog.feed(4.0, 19.7)
    assert not dog.expired(4.0, 19.75)
    assert not dog.expired(4.0, 19.8)  # checks on time: the wall criterion at once
    assert dog.expired(4.0, 20.75)


def test_a_stall_after_the_input_went_stale_does_not_make_it_fresh():
    dog = Watchdog(timeout_s=0.1, wall_timeout_s=1.0)
    dog.feed(3.0, 10.0)
    assert not dog.expired(3.0, 10.5)
    assert dog.expired(3.0, 11.05)
    assert dog.expired(3.0, 13.0)  # stalled, but the safe command is already going out
    dog.feed(3.0, 13.1)  # fresh again: the next stall gets its grace
    assert not dog.expired(3.0, 15.0)


def test_watchdog_expires_when_the_node_clock_goes_back_and_after_a_reset():
    dog = Watchdog(timeout_s=0.1)
    dog.feed(8.0, 10.0)
    assert dog.expired(0.01, 10.01)
    dog.feed(0.02, 10.02)
    assert not dog.expired(0.03, 10.03)
    dog.reset()
    assert dog.expired(0.03, 10.03)


@pytest.mark.parametrize(
    ('timeout', 'period'),
    [(0.1, 0.05), (0.12, 0.04), (0.03, 0.03), (5.0, 0.05), (0.101, 0.101 / 3)],
)
def test_the_checks_fall_on_the_timeout_at_most_a_period_apart(timeout, period):
    assert check_period(timeout, 0.05) == pytest.approx(period)
    assert (timeout / check_period(timeout, 0.05)) == pytest.approx(round(timeout / period))


def test_states_postpone_the_checks_without_making_a_stall():
    # The node's checks restart from each state: while states come, none runs. The first check
    # after the last state is no stall, however long since the previous check.
    dog = Watchdog(timeout_s=0.1, wall_timeout_s=1.0)
    dog.feed(3.0, 10.0)
    assert not dog.expired(3.0, 10.05)
    for tick in range(1, 1001):
        dog.feed(3.0 + 0.001 * tick, 10.05 + 0.01 * tick)  # 10 s of states, no check
    assert not dog.expired(4.0, 20.1)
    assert dog.expired(4.0, 21.06)  # a wall timeout after the last state: stale, no grace
