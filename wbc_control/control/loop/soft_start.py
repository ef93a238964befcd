"""Soft start and soft stop: ramp the command between the safe command and the task torque.

After start-up, a controller restart, a stale period or a task switch, the first task torque
may differ from what the robot was just given (zero or gravity compensation) by tens of N m.
The soft start blends them linearly over `duration_s`:

    τ = (1 − α) τ_safe + α τ_task,   α = clamp((t − t₀) / duration, 0, 1)

continuous in time at both ends (α = 0 at the restart, where the safe command went out, and 1
after the ramp). Both torques are taken at the current tick, so a gravity-compensating safe
command follows the arm during the ramp.

The soft stop (a managed controller's deactivation) runs the same ramp backwards, β = 1 − α:
from the task torque at the first tick after :meth:`SoftStop.restart` to the safe command
`duration_s` later, so that the controller hands the robot over to the next one without a step.
"""

import numpy as np

from wbc_control.exceptions import InvalidValue

#: Default ramp duration (s).
DEFAULT_SOFT_START_TIME = 0.5


class SoftStart:
    """The ramp α of the module docstring.

    Args:
        duration_s: ramp duration (s); 0 disables the ramp.
        name: the parameter that sets it, for the error message.
    """

    def __init__(
        self, duration_s: float = DEFAULT_SOFT_START_TIME, name: str = 'soft_start_time'
    ) -> None:
        duration_s = float(duration_s)
        if not (np.isfinite(duration_s) and duration_s >= 0.0):
            raise InvalidValue(f'{name} must be finite and >= 0, got {duration_s}')
        self.duration_s = duration_s
        self._start_s: float | None = None
        self._pending = True  # the first tick after construction starts a ramp

    def restart(self) -> None:
        """Ramp again from the next tick (after a stale period, a restart or a task switch)."""
        self._pending = True

    def fraction(self, now_s: float) -> float:
        """α at node time `now_s`; a restart pending starts the ramp here."""
        if self._pending:
            self._start_s, self._pending = now_s, False
        if self.duration_s == 0.0 or self._start_s is None:
            return 1.0
        elapsed = now_s - self._start_s
        if elapsed < 0.0:  # the clock went back: start over
            self._start_s, elapsed = now_s, 0.0
        return min(elapsed / self.duration_s, 1.0)

    def active(self, now_s: float) -> bool:
        """Whether the ramp is still blending at `now_s`."""
        return self.fraction(now_s) < 1.0

    def apply(self, task_torque: np.ndarray, safe_torque: np.ndarray, now_s: float) -> np.ndarray:
        """The command at `now_s`, `(n,)`: the blend of the two torques."""
        alpha = self.fraction(now_s)
        if alpha >= 1.0:
            return task_torque
        return safe_torque + alpha * (task_torque - safe_torque)


class SoftStop:
    """The ramp β = 1 − α of the module docstring, from the first tick after :meth:`restart`.

    Args:
        duration_s: ramp duration (s); 0: the safe command at the first tick.
    """

    def __init__(self, duration_s: float) -> None:
        self._ramp = SoftStart(duration_s, 'soft_stop_time')
        self.duration_s = self._ramp.duration_s

    def restart(self) -> None:
        """Start the ramp at the next tick."""
        self._ramp.restart()

    def fraction(self, now_s: float) -> float:
        """β at node time `now_s`: 1 at the ramp's first tick, 0 from `duration_s` on."""
        return 1.0 - self._ramp.fraction(now_s)
