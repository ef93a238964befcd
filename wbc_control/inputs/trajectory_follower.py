"""The trajectories a controller's tasks follow: received, replaced, sampled every tick.

Rules, as ros2_controllers' joint trajectory controller: a trajectory's points are timed from
its header stamp (zero: from its receipt). A new trajectory replaces the one in force from its
own start time on; until then the old one (or the set-point) goes on. If its first point is
later than its start, the reference at the start time is prepended as a point at time 0, so the
motion starts where the reference is. A trajectory that ends before its receipt is rejected
('expired'). After the last point the reference holds it. A set-point (`~/<task>/target` or the
`target` parameter) ends the task's trajectories.

:meth:`TaskTrajectories.apply` runs on every tick before the controller reads the tasks: it
evaluates the interpolation and copies the sample into the task's preallocated reference
(:meth:`Task.write_reference`); nothing is built per tick.
"""

from collections.abc import Iterable

from wbc_control.exceptions import InvalidTaskConfig, InvalidValue
from wbc_control.inputs.trajectory import PositionSpline, RotationTrajectory, Trajectory
from wbc_control.inputs.trajectory_points import (
    TrajectoryPoints,
    TrajectoryRejected,
    joint_arrays,
    transform_arrays,
    with_start,
)
from wbc_control.model.robot_model import RobotModel
from wbc_control.tasks.frame_orientation import quaternion_xyzw
from wbc_control.tasks.joint_posture import check_posture_limits
from wbc_control.tasks.task import ReferenceSample, Task


def build_trajectory(
    robot: RobotModel,
    name: str,
    task: Task,
    points: TrajectoryPoints,
    now_s: float,
    reference_at,
) -> Trajectory:
    """Validate `points` for task `name` and build the interpolation.

    Args:
        robot: the model (joint names and limits of a posture).
        name: the task's name (a multi-DOF trajectory's joint name: it or the task's frame).
        task: the task, whose :attr:`Task.TRAJECTORY` says what the points move.
        points: the decoded message.
        now_s: the time of receipt (node clock, s).
        reference_at: start time (s) -> the :class:`ReferenceSample` in force then, for a
            first point later than the start.

    Raises:
        TrajectoryRejected: with the reason; nothing is changed.
    """
    kind = task.TRAJECTORY
    start_s = points.stamp_s if points.stamp_s != 0.0 else now_s
    if kind == 'joint':
        linear, angular = joint_arrays(points, robot.joint_names), None
        for values in linear.values:
            try:
                check_posture_limits(robot, values)
            except InvalidValue as error:
                raise TrajectoryRejected('limits', str(error)) from error
    else:
        accepted = [name] + ([task.frame] if hasattr(task, 'frame') else [])
        linear, angular = transform_arrays(points, accepted, kind != 'linear')
        linear = None if kind == 'rotation' else linear
        angular = None if kind == 'linear' else angular
    times = (linear or angular).times
    end_s = start_s + float(times[-1])
    if end_s < now_s:
        raise TrajectoryRejected(
            'expired', f'it ended at {end_s:.3f} s, before its receipt at {now_s:.3f} s'
        )
    if times[0] > 0.0:
        current = reference_at(start_s)
        rates = current.velocity.size
        if linear is not None:
            rows = slice(0, 3) if angular is not None else slice(0, rates)
            first = (current.position, current.velocity[rows], current.acceleration[rows])
            linear = with_start(linear, *first)
        if angular is not None:
            rows = slice(rates - 3, rates)
            first = (quaternion_xyzw(current.rotation), current.velocity[rows])
            angular = with_start(angular, *first, current.acceleration[rows])
    return Trajectory(
        start_s,
        end_s,
        None if linear is None else PositionSpline(linear),
        None if angular is None else RotationTrajectory(angular),
    )


class _Track:
    """One task's trajectories: the one in force and the one waiting for its start."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.sample = task.reference_sample()
        self.scratch = task.reference_sample()
        self.active: Trajectory | None = None
        self.pending: Trajectory | None = None
        self.target_count = task.target_count

    def reference_at(self, time_s: float) -> ReferenceSample:
        """The reference in force at `time_s` as the trajectories now stand."""
        pending, active = self.pending, self.active
        if pending is not None and time_s >= pending.start_s:
            pending.sample(time_s, self.scratch)
        elif active is not None:
            active.sample(time_s, self.scratch)
        else:
            self.task.read_reference(self.scratch)
        return self.scratch


class TaskTrajectories:
    """The trajectories of a controller's tasks; see the module docstring.

    Args:
        robot: the model.
        tasks: (name, task) of every task that takes a trajectory.
    """

    def __init__(self, robot: RobotModel, tasks: Iterable[tuple[str, Task]]) -> None:
        self.robot = robot
        self._tracks = {name: _Track(task) for name, task in tasks}
        self._busy: list[_Track] = []

    def receive(self, name: str, points: TrajectoryPoints, now_s: float) -> Trajectory:
        """Validate and build a trajectory for task `name`; it takes over at its start.

        Raises:
            TrajectoryRejected: the reason; the reference in force is kept.
            KeyError: no such task.
        """
        track = self._tracks[name]
        self._forget_if_replaced(track)
        if track.task.target_pending and (len(points.times) == 0 or points.times[0] > 0.0):
            raise TrajectoryRejected(
                'times',
                'the task has no reference yet (no state received): the first point '
                'must have time_from_start 0',
            )
        trajectory = build_trajectory(
            self.robot, name, track.task, points, now_s, track.reference_at
        )
        track.pending, track.target_count = trajectory, track.task.target_count
        if track not in self._busy:
            self._busy.append(track)
        return trajectory

    def following(self, name: str) -> bool:
        """Whether task `name` has a trajectory in force or waiting."""
        track = self._tracks[name]
        self._forget_if_replaced(track)
        return track.active is not None or track.pending is not None

    def apply(self, now_s: float) -> None:
        """Write every followed task's reference at `now_s` (one tick; no allocation)."""
        finished = False
        for track in self._busy:
            task = track.task
            if task.target_count != track.target_count:
                self._forget_if_replaced(track)
                finished = True
                continue
            pending, active = track.pending, track.active
            if pending is not None and now_s >= pending.start_s:
                active = track.active = pending
                track.pending = None
            if active is None:
                continue
            if not active.sample(now_s, track.sample):
                track.active, finished = None, track.pending is None
            task.write_reference(track.sample)
        if finished:
            self._busy = [t for t in self._busy if t.active is not None or t.pending is not None]

    @staticmethod
    def _forget_if_replaced(track: _Track) -> bool:
        """A set-point was assigned since the trajectory came: drop the trajectories."""
        if track.task.target_count == track.target_count:
            return False
        track.active = track.pending = None
        track.target_count = track.task.target_count
        return True


def trajectory_tasks(entries) -> list[tuple[str, Task]]:
    """(name, task) of the controller entries whose type takes a trajectory."""
    return [(entry.name, entry.task) for entry in entries if _takes_trajectory(entry.task)]


def _takes_trajectory(task: Task) -> bool:
    try:
        task.read_reference(task.reference_sample())
    except InvalidTaskConfig:  # a task type without a reference sample layout
        return False
    return True
