"""One controller tick from a decoded state to the command to send, and the watchdog's rule.

What the controller node does on every state, without ROS: update the robot state once,
let tasks without a target hold the first state, run the prioritized controller (Khatib 1987;
Sentis & Khatib 2005), turn its torque into the command (:mod:`command_output`) and fall back
to the safe command when the torque is unusable; count it all in :class:`TickStatistics`.
Times are seconds of the node's clock (simulated with `use_sim_time`).
"""

from collections.abc import Sequence
import time
from typing import NamedTuple

import numpy as np

from wbc_control.control.command_output import CommandOutput
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.control.tick_statistics import TickStatistics
from wbc_control.exceptions import WbcError
from wbc_control.model.robot_state import RobotState


class TickOutcome(NamedTuple):
    """What one tick sends and what is worth a log line."""

    torque: np.ndarray  # (n_act,) the command, actuated order
    error: str = ''  # why the safe command went out instead of the task torque
    held: tuple[tuple[str, np.ndarray], ...] = ()  # tasks that took the measured target
    resumed: bool = False  # the first tick after a stale period


class ControllerLoop:
    """The controller, its per-tick state and its statistics; see the module docstring.

    Args:
        controller: the task hierarchy (its own torque limits unused: `output` limits).
        output: limits and offsets the command.
        stale_command: the safe command, 'zero' or 'gravity' (may change at runtime).
        timeout: seconds without a tick before the watchdog sends the safe command.
    """

    def __init__(
        self,
        controller: PrioritizedController,
        output: CommandOutput,
        stale_command: str,
        timeout: float,
    ) -> None:
        robot = controller.robot
        self.controller, self.output = controller, output
        self.stale_command, self.timeout = stale_command, timeout
        self.state = RobotState(robot)
        self.statistics = TickStatistics(robot.n_actuated, time.monotonic())
        self.has_state = self.stale = False
        self.last_state_s: float | None = None
        self.last_command_s: float | None = None
        self._q, self._v = robot.neutral_configuration(), np.zeros(robot.nv)
        self._unlimited = np.zeros(robot.n_actuated, dtype=bool)

    def tick(
        self,
        positions: np.ndarray,
        velocities: np.ndarray,
        base_pose: Sequence[float] | None,
        base_twist: Sequence[float] | None,
        now_s: float,
    ) -> TickOutcome:
        """One accepted state (joints in model order; base pose and twist for a floating base)."""
        started = time.perf_counter()
        resumed, self.stale, self.last_state_s = self.stale, False, now_s
        robot, result, held, error = self.controller.robot, None, (), ''
        try:
            robot.configuration(positions, base_pose, out=self._q)
            robot.velocity(velocities, base_twist, out=self._v)
            self.state.update(self._q, self._v)
            self.has_state = True
            held = tuple(self._hold_pending_targets())
            result = self.controller.compute(self.state, None)
            command = self.output.task_command(
                result.torque, self.state, self._since_command(now_s)
            )
            if not np.isfinite(command.torque).all():
                error, kind = 'non-finite torque computed: the safe command went out', 'non_finite'
        except WbcError as failure:
            error, kind = f'controller failed: {failure}', 'compute_error'
        if error:
            self.statistics.fail(kind, error)
            result, torque = None, self.safe_torque()
            saturated = rate_limited = self._unlimited
        else:
            torque, saturated, rate_limited = command
        seconds = time.perf_counter() - started
        self.statistics.tick(result, saturated, rate_limited, seconds)
        return TickOutcome(torque, error, held, resumed)

    def _hold_pending_targets(self):
        for entry in self.controller.entries:
            if entry.task.target_pending:
                yield entry.name, entry.task.set_target_from_state(self.state)

    def safe_torque(self) -> np.ndarray:
        """The safe command at the last state (zero before the first)."""
        state = self.state if self.has_state else None
        return self.output.safe_command(self.stale_command, state, self.controller.contacts)

    def sent(self, now_s: float) -> None:
        """A command went out at `now_s` (the rate limit's time step starts here)."""
        self.last_command_s = now_s
        self.statistics.command()

    def watchdog(self, now_s: float) -> bool:
        """True while the state is stale (no tick for `timeout` s): send the safe command."""
        age = self.state_age(now_s)
        fresh = age is not None and age <= self.timeout
        self.stale = not fresh
        return self.stale

    def state_age(self, now_s: float) -> float | None:
        """Seconds since the last tick (None before the first)."""
        return None if self.last_state_s is None else now_s - self.last_state_s

    def _since_command(self, now_s: float) -> float | None:
        return None if self.last_command_s is None else now_s - self.last_command_s
