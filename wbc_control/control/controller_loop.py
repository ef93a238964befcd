"""One controller tick from a decoded state to the command to send, and the watchdog's rule.

What the controller node does on every state, without ROS: update the robot state once,
let tasks without a target hold the first state, run the prioritized controller (Khatib 1987;
Sentis & Khatib 2005), turn its torque into the command (:mod:`command_output`) and fall back
to the safe command when the torque is unusable; count it all in :class:`TickStatistics`.
Times are seconds of the node's clock (simulated with `use_sim_time`); the watchdog also
runs on the monotonic wall clock, so a stopped or rewound simulated clock still expires it.
After start-up, a stale period or a restart (:meth:`ControllerLoop.restart`: the clock or the
publisher's stamps jumped back) the command ramps to the task torque over `soft_start_time`
(:class:`~wbc_control.control.soft_start.SoftStart`) from the gravity safe command, the
holding torque: whatever `stale_command` is, a robot that does not compensate gravity itself
must not fall during the ramp (for one that does, the holding command is zero on a fixed
base). With the joint-limit level the ramp acts on the tasks instead: every task's commanded
acceleration ẍ* is scaled by the ramp's α inside the controller, and the level acts in full
from the first tick, so that a joint that fell into its limit while the controller was down is
braked and pulled back at once (blending the torque would have weakened the level too).
"""

from collections.abc import Sequence
import time
import traceback
from typing import NamedTuple

import numpy as np

from wbc_control.control.command_output import CommandOutput
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.control.soft_start import SoftStart
from wbc_control.control.tick_statistics import TickStatistics
from wbc_control.exceptions import WbcError
from wbc_control.inputs.timing import Watchdog
from wbc_control.model.robot_state import RobotState


class TickOutcome(NamedTuple):
    """What one tick sends and what is worth a log line."""

    torque: np.ndarray  # (n_act,) the command, actuated order
    error: str = ''  # why the safe command went out instead of the task torque
    held: tuple[tuple[str, np.ndarray], ...] = ()  # tasks that took the measured target
    resumed: bool = False  # the first tick after a stale period
    # An unexpected exception (a bug), its stack without source lines and without its frames
    # (which would tie this tick's locals into a reference cycle), else None.
    bug: traceback.TracebackException | None = None

    @property
    def trace(self) -> str:
        """The bug's traceback, else empty: its source lines read when asked, not every tick."""
        return '' if self.bug is None else ''.join(self.bug.format())


class ControllerLoop:
    """The controller, its per-tick state and its statistics; see the module docstring.

    Args:
        controller: the task hierarchy (its own torque limits unused: `output` limits).
        output: limits and offsets the command.
        stale_command: the safe command, 'zero' or 'gravity' (may change at runtime).
        timeout: seconds without a tick before the watchdog sends the safe command.
        soft_start_time: ramp duration (s) from the safe command to the task torque; 0: none.
        wall_timeout: the watchdog's wall-clock limit (s); default `timeout`.
    """

    def __init__(
        self,
        controller: PrioritizedController,
        output: CommandOutput,
        stale_command: str,
        timeout: float,
        soft_start_time: float = 0.0,
        wall_timeout: float | None = None,
    ) -> None:
        robot = controller.robot
        self.controller, self.output = controller, output
        self.stale_command, self.timeout = stale_command, timeout
        self._watchdog = Watchdog(timeout, wall_timeout)
        self.soft_start = SoftStart(soft_start_time)
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
        wall_s: float | None = None,
    ) -> TickOutcome:
        """One accepted state (joints in model order; base pose and twist for a floating base).

        `wall_s` is the monotonic wall time (default: now).
        """
        started = time.perf_counter()
        resumed, self.stale, self.last_state_s = self.stale, False, now_s
        self._watchdog.feed(now_s, time.monotonic() if wall_s is None else wall_s)
        if resumed:
            self.soft_start.restart()
        robot, result, held, error, bug = self.controller.robot, None, (), '', None
        try:
            robot.configuration(positions, base_pose, out=self._q)
            robot.velocity(velocities, base_twist, out=self._v)
            self.state.update(self._q, self._v)
            self.has_state = True
            held = tuple(self._hold_pending_targets())
            ramp = self._ramp(now_s)
            self.controller.torque_bounds = self._torque_window(now_s)
            result = self.controller.compute(self.state, None, now_s)
            command = self.output.task_command(
                result.torque, self.state, self._since_command(now_s), ramp
            )
            if not np.isfinite(command.torque).all():
                error, kind = 'non-finite torque computed: the safe command went out', 'non_finite'
        except WbcError as failure:
            error, kind = f'controller failed: {failure}', 'compute_error'
        except Exception as failure:  # noqa: BLE001  (a bug must cost one safe tick, not the node)
            error = f'internal error: {type(failure).__name__}: {failure}'
            kind = 'compute_error'
            bug = traceback.TracebackException.from_exception(failure, lookup_lines=False)
        if error:
            self.statistics.fail(kind, error)
            result, torque = None, self.safe_torque()
            saturated = rate_limited = self._unlimited
        else:
            # The controller limits its own torque when it knows the effort limits (to scale
            # the tasks), so the output stage alone may see nothing left to clip.
            torque = command.torque
            saturated = command.saturated | result.saturated
            rate_limited = command.rate_limited | result.rate_limited
        seconds = time.perf_counter() - started
        self.statistics.tick(result, saturated, rate_limited, seconds)
        return TickOutcome(torque, error, held, resumed, bug)

    def _hold_pending_targets(self):
        for entry in self.controller.entries:
            if entry.task.target_pending:
                yield entry.name, entry.task.set_target_from_state(self.state)

    def _ramp(self, now_s: float) -> tuple[float, np.ndarray] | None:
        """The soft start's blend with the holding torque; None when done or not by torque.

        With the joint-limit level the tasks' accelerations ramp instead, inside the
        controller, so that the level brakes a joint at its limit in full from the first tick
        (`PrioritizedController.task_ramp`).
        """
        alpha = self.soft_start.fraction(now_s)
        if self.controller.joint_limits is not None:
            self.controller.task_ramp = alpha
            return None
        if alpha >= 1.0:
            return None
        contacts = self.controller.contacts
        return alpha, self.output.hold_command('gravity', self.state, contacts)

    def _torque_window(self, now_s: float) -> tuple[np.ndarray, np.ndarray] | None:
        """The range the command can take this tick (effort and rate limits).

        For the controller's task scaling; None for a driver that adds gravity: the limits
        bound τ − g(q) there, not the controller's τ.
        """
        if self.output.compensates_gravity:
            return None
        return self.output.limiter.window(self._since_command(now_s))

    def restart(self) -> None:
        """The clock or the stamps jumped back: stale until the next good state, then a ramp."""
        self._watchdog.reset()
        self.soft_start.restart()
        self.last_state_s = None
        self.stale = True

    def safe_torque(self) -> np.ndarray:
        """The safe command at the last state (zero before the first)."""
        state = self.state if self.has_state else None
        return self.output.safe_command(self.stale_command, state, self.controller.contacts)

    def sent(self, now_s: float) -> None:
        """A command went out at `now_s` (the rate limit's time step starts here)."""
        self.last_command_s = now_s
        self.statistics.command()

    def watchdog(self, now_s: float, wall_s: float | None = None) -> bool:
        """True while the state is stale: send the safe command.

        Stale: no tick for `timeout` s of node time or the wall timeout of wall time
        (`wall_s`, monotonic, default now), a node clock behind the last tick, or a restart.
        """
        wall_s = time.monotonic() if wall_s is None else wall_s
        self.stale = self._watchdog.expired(now_s, wall_s)
        return self.stale

    def state_age(self, now_s: float) -> float | None:
        """Seconds since the last tick (None before the first)."""
        return None if self.last_state_s is None else now_s - self.last_state_s

    def _since_command(self, now_s: float) -> float | None:
        return None if self.last_command_s is None else now_s - self.last_command_s
