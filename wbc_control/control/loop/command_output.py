"""The torque command the controller sends: limited, and offset for drivers that add gravity.

A driver that compensates gravity itself (franka_ros2 / libfranka and several other arms) adds
g(q) to every command it receives; sending the full τ = M q̈ + h would apply gravity twice. With
`compensates_gravity` the command is therefore τ − g(q) of the actuated rows, and the effort and
rate limits apply to that, the torque actually sent.

The safe command keeps its physical meaning in both cases: `gravity` makes the robot receive
the holding torque (:func:`~wbc_control.control.contact.contacts.holding_torque`), so a
driver that adds g(q) is sent the holding torque minus g(q) (zero on a fixed base); `zero`
sends zeros, which on such a driver leaves its own gravity compensation holding the robot.
"""

from collections.abc import Sequence

import numpy as np

from wbc_control.control.constraints.torque_limits import LimitedTorque, TorqueLimiter
from wbc_control.control.contact.contacts import Contact, holding_torque
from wbc_control.model.robot_state import RobotState


class CommandOutput:
    """Turns controller torques (actuated order) into the command to send.

    Args:
        limiter: the effort and rate limits of what is sent.
        compensates_gravity: the driver adds g(q) itself: send τ − g(q).
    """

    def __init__(self, limiter: TorqueLimiter, compensates_gravity: bool = False) -> None:
        self.limiter = limiter
        self.compensates_gravity = compensates_gravity

    def task_command(
        self,
        torque: np.ndarray,
        state: RobotState,
        dt: float | None,
        ramp: tuple[float, np.ndarray] | None = None,
        stop: tuple[float, np.ndarray] | None = None,
    ) -> LimitedTorque:
        """The command for a controller torque τ at `state`; `dt` (s) enables the rate limit.

        `ramp` (α, τ_safe) blends the command with the safe command during a soft start,
        τ_safe + α (τ − τ_safe) in the torque actually sent, before the limits; `stop`
        (β, τ_safe) blends the result the same way during a soft stop.
        """
        if self.compensates_gravity:
            torque = torque - state.gravity[state.robot.indices.v]
        for blend in (ramp, stop):
            if blend is not None and blend[0] < 1.0:
                alpha, safe = blend
                torque = safe + alpha * (torque - safe)
        return self.limiter.apply(torque, dt)

    def hold_command(
        self, kind: str, state: RobotState | None, contacts: Sequence[Contact]
    ) -> np.ndarray:
        """The safe command 'zero' or 'gravity' as sent, before the limits; no side effect."""
        torque = np.zeros(self.limiter.effort_limits.shape[0])
        if kind == 'gravity' and state is not None:
            hold = holding_torque(state, contacts)
            if self.compensates_gravity:
                hold = hold - state.gravity[state.robot.indices.v]
            if np.isfinite(hold).all():
                torque = hold
        return torque

    def safe_command(
        self, kind: str, state: RobotState | None, contacts: Sequence[Contact]
    ) -> np.ndarray:
        """The safe command 'zero' or 'gravity' (holding `state`; zero without a state).

        Effort limited; the rate limit forgets the last task torque and continues from this
        command, so the task torque that follows ramps out of it.
        """
        torque = self.hold_command(kind, state, contacts)
        self.limiter.reset()
        return self.limiter.apply(torque, None).torque
