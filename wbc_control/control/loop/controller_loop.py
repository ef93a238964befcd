"""One controller tick from a decoded state to the command to send, and the watchdog's rule.

What the controller node does on every state, without ROS: update the robot state once,
let tasks without a target hold the first state, run the prioritized controller (Khatib 1987;
Sentis & Khatib 2005), turn its torque into the command (:mod:`command_output`) and fall back
to the safe command when the torque is unusable; count it all in :class:`TickStatistics`.
Times are seconds of the node's clock (simulated with `use_sim_time`); the watchdog also
runs on the monotonic wall clock, so a stopped or rewound simulated clock still expires it.
After start-up, a stale period or a restart (:meth:`ControllerLoop.restart`: the clock or the
publisher's stamps jumped back) the command ramps to the task torque over `soft_start_time`
(:class:`~wbc_control.control.loop.soft_start.SoftStart`) from the gravity safe command, the
holding torque: whatever `stale_command` is, a robot that does not compensate gravity itself
must not fall during the ramp (for one that does, the holding command is zero on a fixed
base). With the joint-limit level the ramp acts on the tasks instead: every task's commanded
acceleration ẍ* is scaled by the ramp's α inside the controller, and the level acts in full
from the first tick, so that a joint that fell into its limit while the controller was down is
braked and pulled back at once (blending the torque would have weakened the level too).

With `homing_tolerance` set, the same events check whether a commanded joint is far from its
posture target; if so the other tasks wait for the posture
(:mod:`~wbc_control.control.switching.homing`), and tasks without a target take it where
homing ended.

A managed controller (the ROS 2 node lifecycle) starts and stops commanding through
:meth:`ControllerLoop.activate` and :meth:`ControllerLoop.deactivate` (:class:`Mode`). Activating
starts over as after start-up: the next state ticks with the soft start, the watchdog gives it
the start's grace. Deactivating ramps the command from the task torque to the safe command
(`stale_command`) over `soft_stop_time` (:class:`~wbc_control.control.loop.soft_start.SoftStop`,
blending the torque whatever the joint-limit level does, since the safe command does not keep
it), within the effort and rate limits: the stop ends at the first tick whose command is the
safe command itself (the rate limit can hold it back past `soft_stop_time`), or when the
watchdog sends the safe command, and from then on nothing is sent.

A payload set at run time (:meth:`ControllerLoop.set_payload`) enters the model the tick
computes M, h and g with over the same time (:mod:`~wbc_control.control.loop.payload_ramp`).
Tasks with integral action add the tick's error to their integral term after the tick, over
the time since the last one, unless the tick gave way to a constraint or a soft start or stop
is under way (:mod:`~wbc_control.tasks.integral`).
"""

from collections.abc import Sequence
from enum import Enum
import time
import traceback
from typing import NamedTuple

import numpy as np

from wbc_control.control.loop.command_output import CommandOutput
from wbc_control.control.loop.payload_ramp import PayloadRamp
from wbc_control.control.loop.soft_start import SoftStart, SoftStop
from wbc_control.control.loop.tick_statistics import TickStatistics
from wbc_control.control.prioritized_controller import ControllerResult, PrioritizedController
from wbc_control.control.switching.homing import Homing
from wbc_control.exceptions import WbcError
from wbc_control.inputs.timing import Watchdog
from wbc_control.model.payload import NO_PAYLOAD, Payload
from wbc_control.model.robot_state import RobotState


class Mode(Enum):
    """Whether the loop commands the robot; see the module docstring."""

    ACTIVE = 'active'  # every state ticks and is answered
    STOPPING = 'stopping'  # the soft stop: the ticks ramp the command to the safe command
    INACTIVE = 'inactive'  # no tick, no command


class TickOutcome(NamedTuple):
    """What one tick sends and what is worth a log line."""

    torque: np.ndarray  # (n_act,) the command, actuated order
    error: str = ''  # why the safe command went out instead of the task torque
    held: tuple[tuple[str, np.ndarray], ...] = ()  # tasks that took the measured target
    resumed: bool = False  # the first tick after a stale period
    # An unexpected exception (a bug), its stack without source lines and without its frames
    # (which would tie this tick's locals into a reference cycle), else None.
    bug: traceback.TracebackException | None = None
    stopped: bool = False  # the soft stop's last command: nothing is sent after it
    homing: str = ''  # homing began or ended at this tick (`control.switching.homing`)

    @property
    def trace(self) -> str:
        """The bug's traceback, else empty: its source lines read when asked, not every tick."""
        return '' if self.bug is None else ''.join(self.bug.format())


def _gave_way(result: ControllerResult) -> bool:
    """Whether the tasks gave way this tick, besides the torque limits: a switch under way.

    With a saturated or rate-limited torque and a soft start, what freezes every integral term
    (`wbc_control.tasks.integral`; a joint held at a joint-limit bound freezes the tasks that
    move it: `PrioritizedController.integrate`). A level held back by a friction cone or a
    centre-of-pressure row keeps integrating within its `max_integral`.
    """
    return bool(result.transition.switching)


class ControllerLoop:
    """The controller, its per-tick state and its statistics; see the module docstring.

    Args:
        controller: the task hierarchy (its own torque limits unused: `output` limits).
        output: limits and offsets the command.
        stale_command: the safe command, 'zero' or 'gravity' (may change at runtime).
        timeout: seconds without a tick before the watchdog sends the safe command.
        soft_start_time: ramp duration (s) from the safe command to the task torque; 0: none.
            A payload change ramps into the model over the same time.
        wall_timeout: the watchdog's wall-clock limit (s); default `timeout`.
        soft_stop_time: ramp duration (s) from the task torque to the safe command when
            deactivated; 0: the safe command at the next tick.
        active: command from the first state (else from :meth:`activate` on).
        payload: the payload the model carries from the start.
        homing: the posture first after a (re)start far from it (`control.switching.homing`);
            None: no homing.
    """

    def __init__(
        self,
        controller: PrioritizedController,
        output: CommandOutput,
        stale_command: str,
        timeout: float,
        soft_start_time: float = 0.0,
        wall_timeout: float | None = None,
        soft_stop_time: float = 0.0,
        active: bool = True,
        payload: Payload = NO_PAYLOAD,
        homing: Homing | None = None,
    ) -> None:
        robot = controller.robot
        self.controller, self.output = controller, output
        self.stale_command, self.timeout = stale_command, timeout
        self._watchdog = Watchdog(timeout, wall_timeout)
        self.soft_start = SoftStart(soft_start_time)
        self.soft_stop = SoftStop(soft_stop_time)
        self.homing = homing
        self.mode = Mode.ACTIVE if active else Mode.INACTIVE
        self.payload = PayloadRamp(robot, soft_start_time, payload)
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

        `wall_s` is the monotonic wall time (default: now). Only while :attr:`commanding`.
        """
        started = time.perf_counter()
        previous_s = None if self.stale else self.last_state_s
        resumed, self.stale, self.last_state_s = self.stale, False, now_s
        self._watchdog.feed(now_s, time.monotonic() if wall_s is None else wall_s)
        if resumed:
            self._restart_ramps()
        robot, result, held, error, bug, homed = self.controller.robot, None, (), '', None, ''
        stopping = self.mode is Mode.STOPPING
        beta = self.soft_stop.fraction(now_s) if stopping else 1.0
        held_back = False  # the rate limit held the command back from what it asked
        try:
            self.payload.update(now_s)
            robot.configuration(positions, base_pose, out=self._q)
            robot.velocity(velocities, base_twist, out=self._v)
            self.state.update(self._q, self._v)
            self.has_state = True
            homed = self._home(now_s)
            held = tuple(self._hold_pending_targets())
            alpha = self.soft_start.fraction(now_s)
            task_ramp, blend = self._ramp(alpha)
            window = self._torque_window(now_s)
            result = self.controller.compute(self.state, None, now_s, window, task_ramp)
            stop = (beta, self._hold(self.stale_command)) if stopping else None
            command = self.output.task_command(
                result.torque, self.state, self._since_command(now_s), blend, stop
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
            held_back = bool(command.rate_limited.any())
            if previous_s is not None and self.controller.integrating:
                limited = saturated.any() or rate_limited.any() or stopping
                frozen = limited or _gave_way(result) or self.soft_start.active(now_s)
                self.controller.integrate(now_s - previous_s, frozen)
        seconds = time.perf_counter() - started
        self.statistics.tick(result, saturated, rate_limited, seconds)
        # Over once the safe command itself went out (a failed tick sends it too).
        stopped = stopping and (bool(error) or (beta == 0.0 and not held_back))
        if stopped:
            self.mode = Mode.INACTIVE
        return TickOutcome(torque, error, held, resumed, bug, stopped, homed)

    def _home(self, now_s: float) -> str:
        """Homing's rule at this tick: the other tasks held off or back; what changed."""
        if self.homing is None:
            return ''
        was = self.homing.active
        event = self.homing.update(self.state, now_s)
        if self.homing.active != was:
            self.controller.hold_off(self.homing.others if self.homing.active else frozenset())
        return event

    def _hold_pending_targets(self):
        """Tasks without a target take the measured one, once in force (not while homing)."""
        waiting = self.homing.others if self.homing is not None and self.homing.active else ()
        for entry in self.controller.entries:
            if entry.task.target_pending and entry.name not in waiting:
                yield entry.name, entry.task.set_target_from_state(self.state)

    def _restart_ramps(self) -> None:
        """The soft start from the next tick, which checks homing again; the band from ε."""
        self.soft_start.restart()
        self.controller.restart()
        if self.homing is not None:
            self.homing.restart()

    def _ramp(self, alpha: float) -> tuple[float, tuple[float, np.ndarray] | None]:
        """The soft start's (task ramp, torque blend) at its fraction α.

        With joint limits the tasks' accelerations ramp inside the controller, so that the
        bounds hold in full from the first tick; otherwise the torque is blended with the
        holding torque. Whichever is not used is (1, None).
        """
        if self.controller.joint_limits is not None:
            return alpha, None
        if alpha >= 1.0:
            return 1.0, None
        return 1.0, (alpha, self._hold('gravity'))

    def _hold(self, kind: str) -> np.ndarray:
        """The safe command `kind` at the current state, as sent, before the limits."""
        return self.output.hold_command(kind, self.state, self.controller.contacts)

    def _torque_window(self, now_s: float) -> tuple[np.ndarray, np.ndarray] | None:
        """The range the command can take this tick (effort and rate limits).

        For the controller's task scaling; None for a driver that adds gravity: the limits
        bound τ − g(q) there, not the controller's τ.
        """
        if self.output.compensates_gravity:
            return None
        return self.output.limiter.window(self._since_command(now_s))

    @property
    def commanding(self) -> bool:
        """Whether states tick and commands go out (active, or stopping softly)."""
        return self.mode is not Mode.INACTIVE

    def activate(self) -> None:
        """Command from the next state on, with the soft start, as after start-up.

        What was seen before no longer counts: the watchdog gives the next state the start's
        grace, then sends the safe command (zero: without a state, whatever `stale_command`).
        """
        self.mode = Mode.ACTIVE
        self._watchdog.rearm()
        self._restart_ramps()
        self.output.limiter.reset()
        self.has_state = self.stale = False
        self.last_state_s = self.last_command_s = None

    def deactivate(self) -> bool:
        """Stop commanding: the soft stop from the next tick, then nothing.

        Returns whether a soft stop is under way. Without one to ramp from (no state ticked
        since the activation, or stale: the safe command is what went out last) the loop is
        inactive at once.
        """
        if self.mode is Mode.ACTIVE:
            if self.stale or not self.has_state:
                self.mode = Mode.INACTIVE
            else:
                self.mode = Mode.STOPPING
                self.soft_stop.restart()
        return self.mode is Mode.STOPPING

    def set_payload(self, payload: Payload) -> None:
        """Carry `payload` from the next tick, ramped in over `soft_start_time`."""
        self.payload.request(payload)

    def restart(self) -> None:
        """The clock or the stamps jumped back: stale until the next good state, then a ramp.

        Nothing to do while inactive: :meth:`activate` starts over.
        """
        if self.mode is Mode.INACTIVE:
            return
        self._watchdog.reset()
        self._restart_ramps()
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
        """True while the state is stale: send the safe command (never while inactive).

        Stale: no tick for `timeout` s of node time or the wall timeout of wall time
        (`wall_s`, monotonic, default now), a node clock behind the last tick, or a restart.
        The safe command a soft stop gets so ends it.
        """
        if self.mode is Mode.INACTIVE:
            return False
        wall_s = time.monotonic() if wall_s is None else wall_s
        self.stale = self._watchdog.expired(now_s, wall_s)
        if self.stale and self.mode is Mode.STOPPING:
            self.mode = Mode.INACTIVE
        return self.stale

    def state_age(self, now_s: float) -> float | None:
        """Seconds since the last tick (None before the first)."""
        return None if self.last_state_s is None else now_s - self.last_state_s

    def _since_command(self, now_s: float) -> float | None:
        return None if self.last_command_s is None else now_s - self.last_command_s
