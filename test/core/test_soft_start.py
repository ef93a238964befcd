"""The soft start and soft stop ramps (wbc_control.control.loop.soft_start)."""

import numpy as np
import pytest

from wbc_control.control.loop.soft_start import SoftStart, SoftStop
from wbc_control.exceptions import InvalidValue

TASK = np.array([28.9, -10.0, 3.0])
SAFE = np.array([0.0, 2.0, -1.0])


def ramp(soft: SoftStart, times: np.ndarray) -> np.ndarray:
    return np.array([soft.apply(TASK, SAFE, t) for t in times])


def test_starts_at_the_safe_command_and_reaches_the_task_torque():
    soft = SoftStart(0.5)
    times = 10.0 + np.arange(0.0, 0.8, 0.001)
    commands = ramp(soft, times)
    np.testing.assert_allclose(commands[0], SAFE)
    np.testing.assert_allclose(commands[times >= 10.5], np.broadcast_to(TASK, (300, 3)))
    # Continuous: the largest step per 1 ms tick is the ramp's slope, 28.9 N m / 0.5 s.
    steps = np.abs(np.diff(commands, axis=0)).max()
    assert steps <= np.abs(TASK - SAFE).max() * 0.001 / 0.5 + 1e-12
    np.testing.assert_allclose(commands[250], 0.5 * (SAFE + TASK))


def test_restart_ramps_again_from_the_safe_command():
    soft = SoftStart(0.2)
    ramp(soft, np.arange(0.0, 0.5, 0.01))
    assert not soft.active(0.5)
    soft.restart()
    commands = ramp(soft, 1.0 + np.arange(0.0, 0.3, 0.01))
    np.testing.assert_allclose(commands[0], SAFE)
    np.testing.assert_allclose(commands[-1], TASK)


def test_a_clock_going_back_starts_over_and_zero_disables():
    soft = SoftStart(0.5)
    soft.apply(TASK, SAFE, 100.0)
    np.testing.assert_allclose(soft.apply(TASK, SAFE, 1.0), SAFE)
    np.testing.assert_allclose(SoftStart(0.0).apply(TASK, SAFE, 0.0), TASK)


@pytest.mark.parametrize('duration', [-0.1, np.nan, np.inf])
def test_invalid_duration(duration):
    with pytest.raises(InvalidValue):
        SoftStart(duration)


def test_soft_stop_runs_from_the_task_torque_to_the_safe_command_after_its_restart():
    stop = SoftStop(0.4)
    stop.restart()
    times = 7.0 + np.arange(0.0, 0.6, 0.01)
    betas = np.array([stop.fraction(t) for t in times])
    assert betas[0] == 1.0
    np.testing.assert_allclose(betas[20], 0.5)  # 0.2 s into 0.4 s
    assert (np.diff(betas) <= 0.0).all() and (betas[times >= 7.4 - 1e-9] == 0.0).all()
    assert (betas[times < 7.4 - 1e-9] > 0.0).all()
    stop.restart()
    assert stop.fraction(9.0) == 1.0 and stop.fraction(9.1) == pytest.approx(0.75)


def test_a_zero_soft_stop_is_the_safe_command_at_once():
    stop = SoftStop(0.0)
    stop.restart()
    assert stop.fraction(3.0) == 0.0


@pytest.mark.parametrize('duration', [-0.1, np.nan, np.inf])
def test_an_invalid_soft_stop_names_its_parameter(duration):
    with pytest.raises(InvalidValue, match='soft_stop_time'):
        SoftStop(duration)
