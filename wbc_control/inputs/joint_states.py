"""Validation and decoding of joint-state messages, independent of ROS.

The nodes hand over the raw fields of a sensor_msgs/JointState; this module decides whether the
sample is usable and turns it into joint positions and velocities in the model's order. A
rejected sample raises :class:`JointStateRejected` with the reason, and is never used.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from wbc_control.exceptions import InvalidShape, MissingJoints, WbcError
from wbc_control.model.robot_model import JointStateMapping, RobotModel


class JointStateRejected(WbcError):
    """A joint-state sample was rejected; `reason` is a short machine-friendly key."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(f'{reason}: {detail}')


class StampOrder:
    """Admits strictly increasing message stamps; 0 (an unstamped publisher) is always admitted."""

    def __init__(self) -> None:
        self._last_stamp_s = -np.inf

    def reset(self) -> None:
        """Forget the last admitted stamp (e.g. after a simulation reset)."""
        self._last_stamp_s = -np.inf

    def admit(self, stamp_s: float) -> str | None:
        """Record `stamp_s` and return None, or return why it is out of order (not recorded)."""
        if stamp_s == 0.0:
            return None
        if stamp_s <= self._last_stamp_s:
            return (
                f'stamp {stamp_s:.6f} s is not after the last accepted {self._last_stamp_s:.6f} s'
            )
        self._last_stamp_s = stamp_s
        return None


class JointSample(NamedTuple):
    """Joint positions and velocities in actuated-joint order, with their stamp (s)."""

    positions: np.ndarray  # (n_act,)
    velocities: np.ndarray  # (n_act,)
    stamp_s: float


class JointStateDecoder:
    """Decode JointState fields for one robot, rejecting unusable or out-of-order samples.

    Stamps of 0 (unstamped publishers) skip the ordering check; any other stamp must be later
    than the last accepted one.
    """

    def __init__(self, robot: RobotModel) -> None:
        self._mapping = JointStateMapping(robot)
        self._order = StampOrder()

    def reset(self) -> None:
        """Forget the last accepted stamp (e.g. after a simulation reset)."""
        self._order.reset()

    def decode(
        self,
        names: Sequence[str],
        positions: Sequence[float],
        velocities: Sequence[float],
        stamp_s: float,
    ) -> JointSample:
        """Validate and reorder one sample.

        Raises:
            JointStateRejected: ragged arrays, missing joints or velocities, non-finite values
                of the model's joints, or a stamp older than the last accepted one.
        """
        count = len(names)
        if len(positions) != count or len(velocities) != count:
            raise JointStateRejected(
                'ragged',
                f'{count} names, {len(positions)} positions, {len(velocities)} velocities '
                '(a torque controller needs a velocity for every joint)',
            )
        try:
            index = self._mapping.message_indices(names)
        except (MissingJoints, InvalidShape) as error:
            raise JointStateRejected('joints', str(error)) from error
        joint_positions = np.asarray(positions, dtype=float)[index]
        joint_velocities = np.asarray(velocities, dtype=float)[index]
        if not (np.isfinite(joint_positions).all() and np.isfinite(joint_velocities).all()):
            raise JointStateRejected('non_finite', 'NaN or Inf in positions or velocities')
        out_of_order = self._order.admit(stamp_s)
        if out_of_order:
            raise JointStateRejected('out_of_order', out_of_order)
        return JointSample(joint_positions, joint_velocities, stamp_s)
