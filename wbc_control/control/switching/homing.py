"""Homing: after a (re)start far from the joint posture, the posture first, then the tasks.

A strict hierarchy keeps what its higher levels achieve, and a joint posture below them acts
in what they leave free only (Sentis & Khatib 2005). An arm that fell against its joint limits
while the controller was down may still reach its hand target from where it lies, in another
branch of the inverse kinematics (a wrist turned half a turn) or with the self-motion towards
the posture walled off by joint limits: the hierarchy then holds the hand on target and the
arm contorted, for ever. Homing is the usual way out, as an arm is first moved to a start pose
in joint space before a task-space controller takes over:

- after start-up, an activation, a stale period or a restart, if a commanded joint is farther
  than `homing_tolerance` (rad, or m for a prismatic joint) from the target of the joint-posture
  task(s), every other task is held off (`Stacks.hold_off`, faded out over
  `task_transition_time`): the posture alone drives the joints, along a path inside the
  joint limits' box, which is convex;
- once every commanded joint is within the tolerance, or `homing_timeout` s after it began
  (a posture the joints cannot reach must not lock the tasks out), the tasks fade back in.

Joints that are not commanded are left out: nothing the controller sends moves them.
"""

from collections.abc import Sequence

import numpy as np

from wbc_control.exceptions import InvalidValue
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.joint_posture import JointPostureTask

#: Seconds after which homing gives up and the tasks fade in, unless set.
DEFAULT_HOMING_TIMEOUT = 10.0


class Homing:
    """The rule of the module docstring.

    Args:
        tolerance: how far a commanded joint may be from its posture target (rad or m); > 0.
        timeout_s: seconds after which homing ends whatever the posture; > 0.
        postures: the joint-posture tasks whose targets are home.
        others: the names of every other task, held off while homing.
        joints: the commanded joints' indices in the actuated order.
        names: the actuated joints' names, for the messages.
    """

    def __init__(
        self,
        tolerance: float,
        timeout_s: float,
        postures: Sequence[JointPostureTask],
        others: frozenset[str],
        joints: np.ndarray,
        names: Sequence[str],
    ) -> None:
        for label, value in (('homing_tolerance', tolerance), ('homing_timeout', timeout_s)):
            if not (np.isfinite(value) and value > 0.0):
                raise InvalidValue(f'{label} must be finite and > 0, got {value}')
        if not postures:
            raise InvalidValue('homing_tolerance needs a joint_posture task: its target is home')
        self.tolerance, self.timeout_s = float(tolerance), float(timeout_s)
        self.others = frozenset(others)
        self._postures = tuple(postures)
        self._joints = np.asarray(joints, dtype=np.int64)
        self._names = tuple(names)
        self._pending = True  # the first tick after construction may start homing
        self._since_s: float | None = None  # when homing began; None: not homing

    @property
    def active(self) -> bool:
        """Whether the tasks are held off for the posture."""
        return self._since_s is not None

    def restart(self) -> None:
        """Check again at the next tick (start-up, an activation, a stale period, a restart)."""
        self._pending = True

    def update(self, state: RobotState, now_s: float) -> str:
        """Start or end homing at this tick; what changed, as a log line ('' if nothing)."""
        if not (self._pending or self.active):
            return ''
        distance, joint = self._farthest(state)
        if self._pending:
            self._pending = False
            if self.active or distance <= self.tolerance:
                return ''
            self._since_s = now_s
            return (
                f'homing: {self._names[joint]} is {distance:.3g} from its posture target; '
                f'the other tasks wait until every commanded joint is within '
                f'{self.tolerance:g} (at most {self.timeout_s:g} s)'
            )
        elapsed = now_s - self._since_s
        if elapsed < 0.0:  # the clock went back: time the homing from here
            self._since_s, elapsed = now_s, 0.0
        if distance <= self.tolerance:
            self._since_s = None
            return f'homed in {elapsed:.2f} s: the tasks fade in'
        if elapsed >= self.timeout_s:
            self._since_s = None
            return (
                f'homing gave up after {elapsed:.2f} s with {self._names[joint]} '
                f'{distance:.3g} from its posture target: the tasks fade in'
            )
        return ''

    def _farthest(self, state: RobotState) -> tuple[float, int]:
        """The largest distance of a commanded joint to its posture target, and that joint."""
        errors = np.max([np.abs(p.position_error(state)) for p in self._postures], axis=0)
        commanded = errors[self._joints]
        k = int(np.argmax(commanded))
        return float(commanded[k]), int(self._joints[k])
