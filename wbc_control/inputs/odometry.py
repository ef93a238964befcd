"""Validation of base odometry and its pairing with joint states, independent of ROS.

A floating-base tick needs both halves of the state: the joints (sensor_msgs/JointState) and
the base (nav_msgs/Odometry: pose in the world frame, twist in the base frame, which is
Pinocchio's free-flyer convention, see :mod:`wbc_control.model.robot_model`). They come on two
topics, so the controller must decide which joint state goes with which odometry sample.
:class:`StatePairing` implements the two rules of parameter `odom_pairing`:

- ``latest`` (default): every accepted joint state ticks once, with the newest accepted odometry,
  provided that odometry arrived no longer than `joint_state_timeout` ago. Suits a robot whose
  state estimator publishes at its own rate. A joint state without fresh odometry does not
  tick: the watchdog's safe command takes over, exactly as for stale joint states.
- ``stamp``: a joint state ticks with the odometry of the *same* header stamp, whichever of
  the two arrives second, and each stamp ticks at most once until the watchdog expires
  (:meth:`StatePairing.stale`). Suits sources that publish both per step with one stamp, such
  as `wbc_sim` and most simulators; it is deterministic whatever order DDS delivers the two
  messages in. The exception: `wbc_sim` holding its first state (`hold_until_commanded`)
  re-sends it, stamp 0, until a non-zero command arrives; if the command that answered it was
  lost (published before DDS had matched the simulator's subscription, on a loaded machine),
  the re-sent pair must tick again, or simulator and controller wait on each other for ever.
"""

from collections.abc import Sequence
import math
from typing import NamedTuple

import numpy as np

from wbc_control.exceptions import InvalidValue
from wbc_control.inputs.joint_states import JointSample
from wbc_control.inputs.timing import DEFAULT_FUTURE_TOLERANCE_S, InputRejected, StampRules
from wbc_control.tasks.frame_orientation import unit_quaternion

ODOM_PAIRINGS = ('latest', 'stamp')
#: A base orientation quaternion is accepted when |‖q‖ − 1| is at most this (then normalised).
QUATERNION_NORM_TOLERANCE = 1e-3


class OdometryRejected(InputRejected):
    """An odometry sample was rejected."""


class BaseSample(NamedTuple):
    """The floating base's state in Pinocchio's free-flyer convention, with its stamp (s)."""

    pose: np.ndarray  # (7,) x, y, z, qx, qy, qz, qw in the world frame, unit quaternion
    twist: np.ndarray  # (6,) linear, angular velocity in the base frame
    stamp_s: float
    restarted: bool = False  # the clock or the publisher jumped back: restart watchdog, ramp


class OdometryDecoder:
    """Validate odometry samples, rejecting unusable or out-of-order ones.

    Args:
        world_frame: accepted `header.frame_id` besides ''.
        base_frame: accepted `child_frame_id` besides '' (the frame of the twist).
        timeout_s: the stale limit of the time rules (s); inf: order check only.
        future_tolerance_s: how far ahead of the clock a stamp may be (s).

    Stamps go through the same time rules as joint states (:mod:`wbc_control.inputs.timing`).
    """

    def __init__(
        self,
        world_frame: str,
        base_frame: str,
        timeout_s: float = math.inf,
        future_tolerance_s: float = DEFAULT_FUTURE_TOLERANCE_S,
    ) -> None:
        self._frames = ('', world_frame)
        self._child_frames = ('', base_frame)
        self._rules = StampRules(timeout_s, future_tolerance_s)

    def reset(self) -> None:
        """Forget the last accepted stamp (e.g. after a simulation reset)."""
        self._rules.reset()

    @property
    def clock_hint(self) -> str:
        """Why stamps are rejected while they read another clock than the node's, else ''."""
        return self._rules.clock_hint

    def decode(
        self,
        frame_id: str,
        child_frame_id: str,
        pose: Sequence[float],
        twist: Sequence[float],
        stamp_s: float,
        now_s: float | None = None,
    ) -> BaseSample:
        """Validate one sample: pose (x, y, z, qx, qy, qz, qw), twist (linear, angular).

        Raises:
            OdometryRejected: a frame other than the world / base frame, non-finite values,
                a quaternion that is not unit, or a stamp the time rules reject.
        """
        if frame_id not in self._frames:
            raise OdometryRejected(
                'frame', f"frame_id '{frame_id}' is not the world frame '{self._frames[1]}'"
            )
        if child_frame_id not in self._child_frames:
            raise OdometryRejected(
                'child_frame',
                f"child_frame_id '{child_frame_id}' is not the base frame "
                f"'{self._child_frames[1]}' (the twist must be in the base frame)",
            )
        pose = np.array(pose, dtype=float)
        twist = np.array(twist, dtype=float)
        if not (np.isfinite(pose).all() and np.isfinite(twist).all()):
            raise OdometryRejected('non_finite', 'NaN or Inf in the pose or twist')
        try:
            pose[3:] = unit_quaternion(pose[3:], QUATERNION_NORM_TOLERANCE)
        except InvalidValue as error:
            raise OdometryRejected('quaternion', str(error)) from error
        verdict = self._rules.admit(stamp_s, now_s)
        if verdict.reason is not None:
            raise OdometryRejected(verdict.reason, verdict.detail, verdict.restarted, verdict.hint)
        return BaseSample(pose, twist, stamp_s, verdict.restarted)


class StatePair(NamedTuple):
    """A joint sample and the base sample it is ticked with."""

    joints: JointSample
    base: BaseSample


class StatePairing:
    """Decides when a floating-base tick runs (module docstring: `latest` or `stamp`).

    Args:
        mode: one of :data:`ODOM_PAIRINGS`.
        timeout_s: `latest` only: the newest odometry must have arrived within this time.
    """

    def __init__(self, mode: str, timeout_s: float) -> None:
        if mode not in ODOM_PAIRINGS:
            raise InvalidValue(f'odom_pairing must be one of {", ".join(ODOM_PAIRINGS)}')
        self.mode = mode
        self._timeout_s = timeout_s
        self._base: BaseSample | None = None
        self._base_received_s = -math.inf
        self._waiting: JointSample | None = None  # `stamp`: a joint state awaiting its odometry
        self._ticked_stamp_s = math.nan  # `stamp`: the last stamp that ticked

    def stale(self) -> None:
        """The watchdog expired: the last stamp that ticked may tick again (module docstring)."""
        self._ticked_stamp_s = math.nan

    def base_age(self, now_s: float) -> float | None:
        """Seconds since the newest odometry arrived (None before the first)."""
        return None if self._base is None else now_s - self._base_received_s

    def add_joints(self, joints: JointSample, now_s: float) -> StatePair | None:
        """An accepted joint state arrived at `now_s`; returns the pair to tick with, if any."""
        base = self._base
        if self.mode == 'latest':
            fresh = base is not None and now_s - self._base_received_s <= self._timeout_s
            return StatePair(joints, base) if fresh else None
        self._waiting = joints
        return self._pair_by_stamp()

    def add_base(self, base: BaseSample, now_s: float) -> StatePair | None:
        """An accepted odometry arrived at `now_s`; returns the pair to tick with, if any."""
        self._base, self._base_received_s = base, now_s
        return self._pair_by_stamp() if self.mode == 'stamp' else None

    def _pair_by_stamp(self) -> StatePair | None:
        joints, base = self._waiting, self._base
        if joints is None or base is None or joints.stamp_s != base.stamp_s:
            return None
        if joints.stamp_s == self._ticked_stamp_s:
            return None
        self._waiting, self._ticked_stamp_s = None, joints.stamp_s
        return StatePair(joints, base)
