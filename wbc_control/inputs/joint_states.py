"""Validation and decoding of joint-state messages, independent of ROS.

The nodes hand over the raw fields of a sensor_msgs/JointState; this module decides whether the
sample is usable and turns it into joint positions and velocities in the model's order. A
rejected sample raises :class:`JointStateRejected` with the reason, and is never used.

Besides shape and finiteness, a sample must be physically plausible: no position beyond the
URDF limits by more than `position_margin` (continuous joints have none), no speed beyond the
URDF velocity limit times `velocity_factor`; and its stamp must pass the time rules of
:mod:`wbc_control.inputs.timing` (future, stale, out of order; clock and publisher restarts).
"""

from collections.abc import Sequence
import math
from typing import NamedTuple

import numpy as np

from wbc_control.defaults import schema_default
from wbc_control.exceptions import InvalidShape, InvalidValue, MissingJoints
from wbc_control.inputs.timing import DEFAULT_FUTURE_TOLERANCE_S, InputRejected, StampRules
from wbc_control.model.robot_model import JointStateMapping, RobotModel

#: Radians (metres for prismatic joints) a position may lie beyond its URDF limit.
DEFAULT_POSITION_MARGIN = float(schema_default('joint_state_input', 'position_margin'))
#: A speed above this multiple of the URDF velocity limit is not believed.
DEFAULT_VELOCITY_FACTOR = float(schema_default('joint_state_input', 'velocity_factor'))

# One C call each per message (`ndarray.sum` / `.any` add a Python wrapper to each call).
_SUM, _ANY = np.add.reduce, np.logical_or.reduce


class JointStateRejected(InputRejected):
    """A joint-state sample was rejected."""


class JointSample(NamedTuple):
    """Joint positions and velocities in actuated-joint order, with their stamp (s)."""

    positions: np.ndarray  # (n_act,)
    velocities: np.ndarray  # (n_act,)
    stamp_s: float
    restarted: bool = False  # the clock or the publisher jumped back: restart watchdog, ramp


class JointStateDecoder:
    """Decode JointState fields for one robot, rejecting unusable, implausible or mistimed samples.

    Args:
        robot: the model whose joints are decoded.
        timeout_s: the stale limit of the time rules (s); inf: stamps are not compared with
            the clock (only their order is checked).
        future_tolerance_s: how far ahead of the clock a stamp may be (s).
        position_margin: how far beyond a URDF position limit a position may be (rad or m).
        velocity_factor: speeds above this multiple of the URDF velocity limit are rejected.
    """

    def __init__(
        self,
        robot: RobotModel,
        timeout_s: float = np.inf,
        future_tolerance_s: float = DEFAULT_FUTURE_TOLERANCE_S,
        position_margin: float = DEFAULT_POSITION_MARGIN,
        velocity_factor: float = DEFAULT_VELOCITY_FACTOR,
    ) -> None:
        if not (position_margin >= 0.0 and velocity_factor >= 1.0):
            raise InvalidValue(
                f'position margin must be >= 0 and velocity factor >= 1, got {position_margin} '
                f'and {velocity_factor}'
            )
        self._mapping = JointStateMapping(robot)
        self._rules = StampRules(timeout_s, future_tolerance_s)
        self._names = np.array(robot.joint_names)
        lower, upper = robot.position_limits
        self._lower = lower - position_margin
        self._upper = upper + position_margin
        velocity = np.asarray(robot.model.velocityLimit, dtype=float)[robot.indices.v]
        velocity = np.where(np.isfinite(velocity) & (velocity > 0.0), velocity, np.inf)
        self._max_speed = velocity * velocity_factor

    def reset(self) -> None:
        """Forget the last accepted stamp (e.g. after a simulation reset)."""
        self._rules.reset()

    @property
    def clock_hint(self) -> str:
        """Why stamps are rejected while they read another clock than the node's, else ''."""
        return self._rules.clock_hint

    def decode(
        self,
        names: Sequence[str],
        positions: Sequence[float],
        velocities: Sequence[float],
        stamp_s: float,
        now_s: float | None = None,
    ) -> JointSample:
        """Validate and reorder one sample received at node time `now_s` (None: order only).

        Raises:
            JointStateRejected: ragged arrays, missing joints or velocities, non-finite values
                of the model's joints, a position or speed beyond its plausible range, or a
                stamp the time rules reject (future, stale, out of order).
        """
        count = len(names)
        if len(positions) != count or len(velocities) != count:
            raise JointStateRejected(
                'ragged',
                f'{count} names, {len(positions)} positions, {len(velocities)} velocities '
                '(a torque controller needs a velocity for every joint)',
            )
        try:
            index, mimics = self._mapping.message_indices(names)
        except (MissingJoints, InvalidShape) as error:
            raise JointStateRejected('joints', str(error)) from error
        joint_positions = np.asarray(positions, dtype=float)[index]
        joint_velocities = np.asarray(velocities, dtype=float)[index]
        if mimics is not None:
            mimics.apply(joint_positions, joint_velocities)
        # A sum is finite exactly when every term is (barring overflow past 1e306, far beyond
        # any plausible joint state): one reduction per array, no elementwise test.
        if not math.isfinite(_SUM(joint_positions) + _SUM(joint_velocities)):
            raise JointStateRejected('non_finite', 'NaN or Inf in positions or velocities')
        self._check_plausible(joint_positions, joint_velocities)
        verdict = self._rules.admit(stamp_s, now_s)
        if verdict.reason is not None:
            raise JointStateRejected(
                verdict.reason, verdict.detail, verdict.restarted, verdict.hint
            )
        return JointSample(joint_positions, joint_velocities, stamp_s, verdict.restarted)

    def _check_plausible(self, positions: np.ndarray, velocities: np.ndarray) -> None:
        outside = (positions < self._lower) | (positions > self._upper)
        if _ANY(outside):
            joints = ', '.join(
                f'{name} {value:.4g}'
                for name, value in zip(self._names[outside], positions[outside])
            )
            raise JointStateRejected('position_limit', f'beyond the URDF limits: {joints}')
        too_fast = np.abs(velocities) > self._max_speed
        if _ANY(too_fast):
            joints = ', '.join(
                f'{name} {value:.4g}'
                for name, value in zip(self._names[too_fast], velocities[too_fast])
            )
            raise JointStateRejected(
                'velocity_limit', f'faster than the URDF velocity limits allow: {joints}'
            )
