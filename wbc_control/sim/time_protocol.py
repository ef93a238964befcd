"""The simulator's time protocol: when physics steps and when a state goes out (no ROS).

Two ways to advance time (``lockstep``):

- paced (default): a wall-clock timer steps the physics at `real_time_factor` × real time
  (0: as fast as possible) and publishes every 1/`publish_rate` s of simulated time; the latest
  command is held, and after `command_timeout` s of simulated time without one the torques are
  zero;
- lock-step: every accepted command advances exactly `control_period` s (a whole number of
  physics steps), then one state is published. The first state goes out as soon as a
  controller is connected (`lockstep_subscribers` subscribers on joint_states and a publisher
  on the commands), and a command before it answers nothing and is ignored; the current state
  is re-sent unchanged (same stamp) when no command came for `lockstep_resend_period` s of wall
  time, so a state lost in transit never stalls the loop; with `real_time_factor` > 0 a state
  computed early waits until its time × 1/factor of wall time (0: as fast as the controller
  answers).

With `hold_until_commanded` time stands at 0 until the first command with a non-zero torque,
so that the robot waits in its initial state while its controller starts (zero: the safe
command a controller sends before it has a state). Paced, the initial state is re-sent every
:data:`HOLD_RESEND_S` of wall time; in lock-step a zero command is ignored as the early one is
(it answers no state, and stepping with it would let the robot fall), and the resend timer
offers the initial state again.

The node supplies the wiring: `publish` sends the current state (joint_states, odom, /clock),
`connections` counts the subscribers and publishers, and :meth:`TimeProtocol.timers` lists the
wall-clock (steady) timers to create.
"""

from collections.abc import Callable
import time
from typing import NamedTuple, Protocol

import numpy as np

from wbc_control.sim.command_input import CommandRejected, RealTimePacer, TorqueCommandInput
from wbc_control.sim.settings import SimSettings
from wbc_control.sim.simulation import MujocoSimulation

#: While held: the initial state is re-sent this often (wall s), for late subscribers.
HOLD_RESEND_S = 0.1
#: Longest period of the lock-step resend timer (wall s).
RESEND_CHECK_MAX_S = 0.05
#: Least time between two lines of a repeated warning (slow simulation, effort limits), s.
REPEATED_WARNING_S = 5.0


class Connections(NamedTuple):
    """Who is connected to the simulator now."""

    listeners: int  # joint_states subscribers
    commanded: bool  # a publisher on the command topic


class SimLog(Protocol):
    """Log lines keyed by what they report (a node throttles them per key)."""

    def info(self, key: str, message: str, period_s: float | None = None) -> None:
        """An informational line."""

    def warning(self, key: str, message: str, period_s: float | None = None) -> None:
        """A warning."""


class Timer(NamedTuple):
    """A wall-clock timer the node creates: its period (s; 0: every turn) and callback."""

    period_s: float
    callback: Callable[[], None]


class TimeProtocol:
    """Steps `sim` and publishes its states as the module docstring says.

    Args:
        settings: the simulator's validated parameters.
        sim: the simulation, reset to its initial state.
        publish: sends the current state of `sim`.
        connections: the current subscribers and publishers.
        log: where events are reported.
        clock: monotonic wall clock (s).
    """

    def __init__(
        self,
        settings: SimSettings,
        sim: MujocoSimulation,
        publish: Callable[[], None],
        connections: Callable[[], Connections],
        log: SimLog,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        robot = sim.robot
        self.settings, self.sim = settings, sim
        self._publish, self._connections = publish, connections
        self._log, self._clock = log, clock
        self.commands = TorqueCommandInput(
            robot.n_actuated, settings.command_index, settings.command_timeout_s
        )
        self._effort_limits = robot.effort_limits
        self._joint_names = list(robot.joint_names)
        self.holding = settings.hold_until_commanded
        self.first_state_sent = False
        self._stale = True
        self._state_due = False
        self._last_send_wall_s = clock()  # lock-step: last command; held: last re-send
        steps = settings.control_steps if settings.lockstep else settings.publish_steps
        self._period_s = steps * sim.timestep_s  # simulated s per published state
        self._pacer = RealTimePacer(settings.real_time_factor, self._period_s, clock)

    def timers(self) -> list[Timer]:
        """The wall-clock timers to create: this process is the source of simulated time."""
        factor = self.settings.real_time_factor
        if not self.settings.lockstep:
            return [Timer(self._period_s / factor if factor > 0.0 else 0.0, self.on_physics_timer)]
        resend_s = self.settings.lockstep_resend_s
        check_s = min(resend_s / 4.0, RESEND_CHECK_MAX_S) if resend_s > 0.0 else RESEND_CHECK_MAX_S
        timers = [Timer(check_s, self.on_resend_timer)]
        if factor > 0.0:  # a state computed early waits for its wall time
            timers.append(Timer(self._period_s / factor, self.on_pace_timer))
        return timers

    def start(self) -> None:
        """Paced mode publishes its initial state at once; lock-step waits for a controller."""
        if not self.settings.lockstep:
            self._send_first_state()

    def on_command(self, values: np.ndarray) -> None:
        """A torque command in `command_joints` order: hold it, or step with it (lock-step)."""
        try:
            torque = self.commands.accept(values, self.sim.time_s)
        except CommandRejected as error:
            total = sum(self.commands.rejected.values())
            self._log.warning(
                f'rejected.{error.reason}',
                f'rejected torque command ({error}); {total} rejected so far',
            )
            return
        self._warn_beyond_effort_limits(torque)
        if not self.settings.lockstep:
            self._release_hold(torque)
            return
        if not self.first_state_sent:
            # It answers no state (e.g. a controller's safe command while it starts).
            self._log.info(
                'early_command', 'lockstep: a command before the first state is ignored'
            )
            return
        if not self._release_hold(torque):
            # A safe command, not an answer: the resend timer keeps offering the held state.
            self._log.info('held', 'lockstep: held until the first non-zero command')
            return
        self._last_send_wall_s = self._clock()
        self.sim.apply_torque(torque)
        self.sim.step(self.settings.control_steps)
        self._state_due = True
        self.on_pace_timer()

    def on_physics_timer(self) -> None:
        """Paced mode: run the publish periods the wall clock is owed (or re-send while held)."""
        if self.holding:
            if self._clock() - self._last_send_wall_s >= HOLD_RESEND_S:
                self._last_send_wall_s = self._clock()
                self._publish()
            return
        for _ in range(self._pacer.periods_due(self.sim.time_s)):
            torque, stale = self.commands.torque_at(self.sim.time_s)
            self._report_staleness(stale)
            self.sim.apply_torque(torque)
            self.sim.step(self.settings.publish_steps)
            self._publish()
        self._warn_if_slow()

    def on_pace_timer(self) -> None:
        """Lock-step: publish the state computed last once its wall time has come."""
        if self._state_due and self._pacer.wait_s(self.sim.time_s) <= 0.0:
            self._state_due = False
            self._publish()
            self._warn_if_slow()

    def on_resend_timer(self) -> None:
        """Lock-step: the first state once a controller is connected; later re-sends."""
        if not self.first_state_sent:
            self._first_state_when_connected()
            return
        resend_s = self.settings.lockstep_resend_s
        if resend_s > 0.0 and self._clock() - self._last_send_wall_s >= resend_s:
            self._last_send_wall_s = self._clock()
            self._publish()

    def _first_state_when_connected(self) -> None:
        # Lock-step starts when a controller is connected both ways, so the first state
        # (stamp 0, which ROS also reads as "unstamped") is answered once, not re-sent.
        listeners, commanded = self._connections()
        wanted = self.settings.lockstep_subscribers
        if commanded and 0 < listeners < wanted:
            self._log.info(
                'waiting',
                f'lockstep: waiting for {wanted} joint_states subscribers, {listeners} so far',
            )
        if commanded and listeners >= wanted:
            self._last_send_wall_s = self._clock()
            self._send_first_state()

    def _send_first_state(self) -> None:
        self.first_state_sent = True
        self._publish()

    def _release_hold(self, torque: np.ndarray) -> bool:
        """Whether time runs: the first non-zero command ends the hold."""
        if self.holding and torque.any():
            self.holding = False
            self._log.info('started', 'first non-zero command: simulation started')
        return not self.holding

    def _warn_if_slow(self) -> None:
        if self._pacer.dropped_backlog:
            self._log.warning(
                'slow',
                'simulation is slower than real_time_factor; dropping the backlog',
                REPEATED_WARNING_S,
            )

    def _report_staleness(self, stale: bool) -> None:
        if stale and not self._stale:
            self._log.warning(
                'stale',
                f'no torque command for {self.settings.command_timeout_s} s of simulated time: '
                'applying zero torque',
            )
        elif self._stale and not stale:
            self._log.info('fresh', 'torque commands received: applying them')
        self._stale = stale

    def _warn_beyond_effort_limits(self, torque: np.ndarray) -> None:
        beyond = np.abs(torque) > self._effort_limits
        if beyond.any():
            names = ', '.join(self._joint_names[i] for i in np.flatnonzero(beyond))
            self._log.warning(
                'beyond_effort',
                f'command beyond the URDF effort limit of {names}; applied unclipped',
                REPEATED_WARNING_S,
            )
