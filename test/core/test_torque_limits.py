from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wbc_control.control.constraints.torque_limits import (
    RANGE_EDGE,
    TorqueLimiter,
    fits,
    range_flags,
)
from wbc_control.exceptions import InvalidShape, InvalidValue


def test_effort_limits_clip_and_report():
    limiter = TorqueLimiter([10.0, np.inf, 2.0])
    out = limiter.apply(np.array([12.0, -1e6, -1.0]))
    np.testing.assert_array_equal(out.torque, [10.0, -1e6, -1.0])
    np.testing.assert_array_equal(out.saturated, [True, False, False])
    assert not out.rate_limited.any()


def test_rate_limit_bounds_the_change_per_tick_and_reset_forgets():
    limiter = TorqueLimiter([100.0, 100.0], rate_limits=[1000.0, np.inf])
    limiter.apply(np.zeros(2), dt=0.001)
    out = limiter.apply(np.array([50.0, 50.0]), dt=0.001)
    np.testing.assert_allclose(out.torque, [1.0, 50.0])
    np.testing.assert_array_equal(out.rate_limited, [True, False])
    limiter.reset()
    np.testing.assert_allclose(limiter.apply(np.array([50.0, 0.0]), dt=0.001).torque, [50, 0])


@pytest.mark.parametrize('limits', [[1.0, -2.0], [np.nan, 1.0], [0.0, 1.0]])
def test_invalid_limits_are_rejected(limits):
    with pytest.raises(InvalidValue):
        TorqueLimiter(limits)


def test_rate_limits_need_one_value_per_joint():
    with pytest.raises(InvalidShape):
        TorqueLimiter([1.0, 1.0], rate_limits=[1.0])


def test_a_downward_step_is_rate_limited_too():
    limiter = TorqueLimiter([100.0], rate_limits=[1000.0])
    limiter.apply(np.array([10.0]), dt=0.001)
    out = limiter.apply(np.array([-10.0]), dt=0.001)
    np.testing.assert_allclose(out.torque, [9.0])
    np.testing.assert_array_equal(out.rate_limited, [True])


def test_the_next_step_is_measured_from_what_was_actually_sent():
    """After a limited step the reference is the sent 1 N m, not the requested 50 N m."""
    limiter = TorqueLimiter([100.0, 5.0], rate_limits=[1000.0, np.inf])
    limiter.apply(np.zeros(2), dt=0.001)
    limiter.apply(np.array([50.0, 50.0]), dt=0.001)  # sends [1, 5]
    out = limiter.apply(np.array([-50.0, -50.0]), dt=0.001)
    np.testing.assert_allclose(out.torque, [0.0, -5.0])  # 1 − 1, and the clipped −5
    out = limiter.apply(np.array([50.0, 3.0]), dt=0.002)
    np.testing.assert_allclose(out.torque, [2.0, 3.0])  # 0 + 1000 · 0.002
    np.testing.assert_array_equal(out.rate_limited, [True, False])


def test_a_repeated_stamp_does_not_freeze_the_command():
    """A zero dt (two commands for one stamp) has no rate to limit: the torque is not held."""
    limiter = TorqueLimiter([100.0], rate_limits=[1000.0])
    limiter.apply(np.zeros(1), dt=0.001)
    out = limiter.apply(np.array([50.0]), dt=0.0)
    np.testing.assert_allclose(out.torque, [50.0])
    assert not out.rate_limited.any()


def test_the_window_is_what_the_next_command_can_reach():
    limiter = TorqueLimiter([10.0, 10.0, 10.0], rate_limits=[1000.0, 1000.0, np.inf])
    assert limiter.window(0.002) is None  # no command yet: only the effort limits
    limiter.apply(np.array([9.0, -5.0, 0.0]), dt=None)
    lower, upper = limiter.window(0.002)
    np.testing.assert_allclose(lower, [7.0, -7.0, -10.0])
    np.testing.assert_allclose(upper, [10.0, -3.0, 10.0])
    # What apply lets through the next tick is exactly that range.
    sent = limiter.apply(np.array([-50.0, 50.0, 50.0]), dt=0.002).torque
    np.testing.assert_allclose(sent, [7.0, -3.0, 10.0])
    assert limiter.window(None) is None
    np.testing.assert_array_equal(limiter.bounds[1], [10.0, 10.0, 10.0])


def test_fits_is_inclusive_and_false_for_a_nan():
    lower, upper = np.array([-1.0, -2.0]), np.array([1.0, 2.0])
    assert fits(np.array([1.0, -2.0]), lower, upper)  # on the edges
    assert not fits(np.array([1.0 + 1e-12, 0.0]), lower, upper)
    assert not fits(np.array([0.0, -2.5]), lower, upper)
    assert not fits(np.array([np.nan, 0.0]), lower, upper)
    assert fits(np.zeros(0), np.zeros(0), np.zeros(0))


class NumpyLimiter:
    """The limiter as written with `np.clip`: the reference of `TorqueLimiter`'s faster form."""

    def __init__(self, effort_limits: np.ndarray, rate_limits: np.ndarray) -> None:
        self.effort, self.rate, self.previous = effort_limits, rate_limits, None

    def limit(self, torque: np.ndarray, dt: float | None):
        """(limited, saturated, rate limited), as `TorqueLimiter.limit` computed them before."""
        limited = np.maximum(np.minimum(torque, self.effort), -self.effort)
        saturated = limited != torque
        rate_limited = np.zeros(torque.shape[0], dtype=bool)
        if self.previous is not None and dt is not None and dt > 0.0:
            step = self.rate * dt
            with np.errstate(invalid='ignore'):  # inf - inf: a NaN bound, as the kernel has
                low, high = self.previous - step, self.previous + step
            rate_limited = (limited < low) | (limited > high)
            limited = np.clip(limited, low, high)
        self.previous = limited.copy()
        return limited, saturated, rate_limited

    def window(self, dt: float | None):
        """(lower, upper), as `TorqueLimiter.window` computed them before."""
        if self.previous is None or dt is None or dt <= 0.0:
            return None
        step = self.rate * dt
        return (
            np.maximum(-self.effort, self.previous - step),
            np.minimum(self.effort, self.previous + step),
        )


SIZE = 3
LIMITS = st.one_of(st.floats(1e-3, 1e3), st.just(np.inf))
TORQUES = st.one_of(
    st.floats(-2e3, 2e3),
    st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300]),
)
DT = st.one_of(st.none(), st.sampled_from([0.0, -1e-3]), st.floats(1e-5, 0.1))
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just('limit'), st.lists(TORQUES, min_size=SIZE, max_size=SIZE), DT),
        st.tuples(st.just('window'), st.just(None), DT),
        st.tuples(st.just('reset'), st.just(None), st.just(None)),
    ),
    max_size=12,
)


def same_bits(actual, expected) -> bool:
    return actual.dtype == expected.dtype and actual.tobytes() == expected.tobytes()


@pytest.mark.filterwarnings('ignore:invalid value:RuntimeWarning')  # inf - inf, unlimited joints
@settings(max_examples=300, deadline=None)
@given(
    st.lists(LIMITS, min_size=SIZE, max_size=SIZE),
    st.lists(LIMITS, min_size=SIZE, max_size=SIZE),
    STEPS,
)
def test_the_limiter_gives_np_clips_limits_bit_for_bit(effort, rate, steps):
    """NaN, ±inf, ±0, ties and no previous command included, through resets and windows."""
    limiter = TorqueLimiter(effort, rate_limits=rate)
    reference = NumpyLimiter(np.array(effort), np.array(rate))
    for kind, values, dt in steps:
        if kind == 'reset':
            limiter.reset()
            reference.previous = None
        elif kind == 'window':
            window, expected = limiter.window(dt), reference.window(dt)
            assert (window is None) == (expected is None)
            if expected is not None:
                assert same_bits(window[0], expected[0]) and same_bits(window[1], expected[1])
        else:
            torque = np.array(values)
            out = limiter.apply(torque, dt)
            expected = reference.limit(torque, dt)
            assert same_bits(out.torque, expected[0]), (out.torque, expected[0])
            assert out.saturated.tolist() == expected[1].tolist()
            assert out.rate_limited.tolist() == expected[2].tolist()
            np.testing.assert_array_equal(torque, values)  # the input is left as it was


def test_range_flags_split_the_edge_between_saturation_and_the_rate_window():
    effort = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    lower = np.array([-10.0, -5.0, -3.0, -40.0, -50.0, -np.inf])
    upper = np.array([10.0, 5.0, 3.0, 40.0, 50.0, np.inf])
    edge = RANGE_EDGE * (1.0 + 5.0)
    torque = np.array([10.0, 5.0 - 0.5 * edge, 3.0 - 1e-7, -20.0, np.nan, 1e6])
    saturated, rate_limited = range_flags(torque, lower, upper, effort)  # the rows
    # at the effort limit; at the window's edge within the tolerance; just inside; inside; NaN;
    # no window at all
    np.testing.assert_array_equal(saturated, [True, False, False, False, False, False])
    np.testing.assert_array_equal(rate_limited, [False, True, False, False, False, False])
