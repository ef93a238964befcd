"""Trajectory messages' points, validated against a task, independent of ROS.

A decoded trajectory (:class:`TrajectoryPoints`) is checked here and turned into arrays
(:class:`PointArrays`) for :mod:`wbc_control.inputs.trajectory` to interpolate. Every mistake is
a :class:`TrajectoryRejected` with a reason key: names, size, non_finite, quaternion, times,
expired, limits.
"""

from collections.abc import Sequence
import math
from typing import NamedTuple

import numpy as np

from wbc_control.inputs.timing import InputRejected
from wbc_control.tasks.frame_orientation import QUATERNION_NORM_TOLERANCE

#: Values of one multi-DOF point: x, y, z, qx, qy, qz, qw; and of its twist.
TRANSFORM_SIZE, TWIST_SIZE = 7, 6


class TrajectoryRejected(InputRejected):
    """A trajectory was rejected; `reason` names why.

    Reasons: names, size, non_finite, quaternion, times, expired, limits.
    """


class TrajectoryPoints(NamedTuple):
    """A trajectory message's content, not yet validated (see the module docstring)."""

    names: Sequence[str]
    stamp_s: float  # header.stamp; 0: start on receipt
    times: Sequence[float]  # time_from_start of each point (s)
    values: Sequence[Sequence[float]]  # per point: joint values, or one transform (7)
    velocities: Sequence[Sequence[float]]  # per point: as many as values (joint) or 6, or none
    accelerations: Sequence[Sequence[float]]  # like velocities


class PointArrays(NamedTuple):
    """Validated points of one part (linear or angular): values and optional rates."""

    times: np.ndarray  # (m,)
    values: np.ndarray  # (m, p) positions or (m, 4) quaternions
    velocities: np.ndarray  # (m, k), NaN rows where a point has none
    accelerations: np.ndarray  # (m, k), NaN rows where a point has none


def _reject(reason: str, detail: str) -> TrajectoryRejected:
    return TrajectoryRejected(reason, detail)


def _rate_rows(rates: Sequence[Sequence[float]], size: int, what: str) -> np.ndarray:
    """Per-point rates as (m, size) with NaN rows where a point has none."""
    rows = np.full((len(rates), size), np.nan)
    for i, values in enumerate(rates):
        if len(values) == 0:
            continue
        if len(values) != size:
            raise _reject('size', f'point {i} has {len(values)} {what}, expected 0 or {size}')
        rows[i] = values
        if not np.isfinite(rows[i]).all():
            raise _reject('non_finite', f'point {i} has non-finite {what}')
    return rows


def _value_rows(values: Sequence[Sequence[float]], size: int, what: str) -> np.ndarray:
    rows = np.empty((len(values), size))
    for i, point in enumerate(values):
        if len(point) != size:
            raise _reject('size', f'point {i} has {len(point)} {what}, expected {size}')
        rows[i] = point
    if not np.isfinite(rows).all():
        bad = int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
        raise _reject('non_finite', f'point {bad} has non-finite {what}')
    return rows


def check_times(points: TrajectoryPoints) -> np.ndarray:
    """The points' times: finite, the first >= 0, strictly increasing.

    Raises:
        TrajectoryRejected: 'size' (no point) or 'times'.
    """
    times = np.asarray(points.times, dtype=float)
    if times.size == 0:
        raise _reject('size', 'the trajectory has no point')
    if not np.isfinite(times).all() or times[0] < 0.0:
        raise _reject('times', f'time_from_start must be finite and >= 0, got {times.tolist()}')
    if (np.diff(times) <= 0.0).any():
        raise _reject('times', f'time_from_start must increase strictly, got {times.tolist()}')
    if not math.isfinite(points.stamp_s):
        raise _reject('times', f'header.stamp is not finite: {points.stamp_s}')
    return times


def joint_arrays(points: TrajectoryPoints, joint_names: Sequence[str]) -> PointArrays:
    """Joint positions, velocities, accelerations in model order; every joint named once.

    Raises:
        TrajectoryRejected: 'names', 'size', 'non_finite' or 'times'.
    """
    times = check_times(points)
    names = list(points.names)
    unknown = sorted(set(names) - set(joint_names))
    missing = [name for name in joint_names if name not in names]
    if unknown or missing or len(set(names)) != len(names):
        detail = f'unknown {unknown}, missing {missing}' if unknown or missing else 'duplicates'
        raise _reject('names', f'joint_names must name every actuated joint once: {detail}')
    order = [names.index(name) for name in joint_names]
    size = len(names)
    values = _value_rows(points.values, size, 'positions')[:, order]
    velocities = _rate_rows(points.velocities, size, 'velocities')[:, order]
    accelerations = _rate_rows(points.accelerations, size, 'accelerations')[:, order]
    return PointArrays(times, values, velocities, accelerations)


def transform_arrays(
    points: TrajectoryPoints, accepted: Sequence[str], rotation: bool
) -> tuple[PointArrays, PointArrays]:
    """Linear (x, y, z) and angular (quaternion x, y, z, w) points of a one-joint trajectory.

    Quaternions are checked (unit norm within 1 %) and normalised only if `rotation`.

    Raises:
        TrajectoryRejected: 'names', 'size', 'non_finite', 'quaternion' or 'times'.
    """
    times = check_times(points)
    if list(points.names) not in [[name] for name in accepted]:
        raise _reject(
            'names', f'joint_names must be one of {[[n] for n in accepted]}, got {points.names}'
        )
    values = _value_rows(points.values, TRANSFORM_SIZE, 'transform values')
    velocities = _rate_rows(points.velocities, TWIST_SIZE, 'velocity values')
    accelerations = _rate_rows(points.accelerations, TWIST_SIZE, 'acceleration values')
    quaternions = values[:, 3:]
    if rotation:
        norms = np.linalg.norm(quaternions, axis=1)
        bad = np.flatnonzero(np.abs(norms - 1.0) > QUATERNION_NORM_TOLERANCE)
        if bad.size:
            raise _reject(
                'quaternion', f'point {int(bad[0])} has a quaternion of norm {norms[bad[0]]:.6g}'
            )
        quaternions = quaternions / norms[:, None]
    linear = PointArrays(times, values[:, :3], velocities[:, :3], accelerations[:, :3])
    angular = PointArrays(times, quaternions, velocities[:, 3:], accelerations[:, 3:])
    return linear, angular


def with_start(points: PointArrays, value: np.ndarray, rate: np.ndarray, acceleration):
    """The points with a first point at time 0 (value, rate, acceleration given)."""
    return PointArrays(
        np.concatenate([[0.0], points.times]),
        np.vstack([value, points.values]),
        np.vstack([rate, points.velocities]),
        np.vstack([acceleration, points.accelerations]),
    )
