"""What the controller shows of its last tick, as plain data: targets, current values, forces.

A :class:`Snapshot` holds, in the world frame, for every active task with a place in space its
target and its current value (a pose, a point, the line or plane of a line or plane target,
the centre of mass), each contact's force with its friction ratio, and each priority level's
residual: how far the acceleration the level achieved falls short of the one it asked for,
‖ẍ* − (J q̈ + J̇v)‖ over its rows. A level *gave way to a constraint* when it has a residual
while a constraint acted on the tick (joints held at a joint bound, or torques at the edge of
their effort or rate range); a residual without one is
the strict priority of a higher level or a singularity, not a constraint.

Built by :func:`snapshot` from a :class:`~wbc_control.control.loop.controller_loop.ControllerLoop`
between ticks; :mod:`wbc_control.viz.markers` draws it. Nothing here imports ROS.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.control.results import ControllerResult, TaskReport
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.com import ComTask
from wbc_control.tasks.frame_orientation import FrameOrientationTask
from wbc_control.tasks.frame_pose import FramePoseTask
from wbc_control.tasks.frame_position import FramePositionTask, TargetSet
from wbc_control.tasks.task import Task

#: A residual (m/s², rad/s²) below this times (1 + ‖ẍ*‖) is round-off, not a level giving way.
RESIDUAL_TOLERANCE = 1e-6


class Placement(NamedTuple):
    """A position in the world and, for what has one, a rotation (oMf's parts)."""

    position: np.ndarray  # (3,)
    rotation: np.ndarray | None = None  # (3, 3)


class TaskView(NamedTuple):
    """One active task: its kind, target and current value in the world frame.

    `kind` is 'pose', 'orientation', 'point', 'line', 'plane' or 'com'. An orientation
    target is placed at the frame's current origin (the task does not move it); a line or
    plane target is the line through `target.position` along `axis`, or the plane through it
    with normal `axis` (unit).
    """

    name: str
    priority: int
    kind: str
    target: Placement
    current: Placement
    axis: np.ndarray | None = None


class ContactView(NamedTuple):
    """One contact: where it is, the force on the robot there (world, N) and its friction ratio."""

    frame: str
    position: np.ndarray  # (3,) the contact frame's origin
    force: np.ndarray  # (3,) the linear contact force in world axes
    friction_ratio: float  # ‖f_t‖ / f_n (inf when pulling)
    friction_coefficient: float


class LevelView(NamedTuple):
    """One priority level: its tasks, its residual and whether it gave way to a constraint."""

    priority: int
    task_names: tuple[str, ...]
    residual: float
    gave_way: bool


class Snapshot(NamedTuple):
    """The last tick as the markers show it (world frame)."""

    tasks: tuple[TaskView, ...]
    contacts: tuple[ContactView, ...]
    levels: tuple[LevelView, ...]
    com: np.ndarray  # (3,)


def snapshot(loop: ControllerLoop) -> Snapshot | None:
    """The controller's last tick (None before one computed a torque).

    Call it between ticks: the tick's reports are views of buffers the next tick overwrites.
    """
    result = loop.statistics.result
    if not loop.has_state or result is None:
        return None
    controller, state = loop.controller, loop.state
    tasks = tuple(
        view
        for entry in controller.entries
        if controller.active(entry.name)
        for view in [task_view(entry.name, entry.priority, entry.task, state)]
        if view is not None
    )
    known = controller.stacks.known_contacts
    contacts = tuple(
        contact_view(report, known[report.frame], state, controller.friction_coefficient)
        for report in result.contacts
    )
    return Snapshot(tasks, contacts, level_views(result), np.array(state.com))


def task_view(name: str, priority: int, task: Task, state: RobotState) -> TaskView | None:
    """What to show of `task` (None for a task with no place in space, e.g. a joint posture)."""
    sample = task.reference_sample()
    if isinstance(task, ComTask):
        task.read_reference(sample)
        current = Placement(np.array(state.com))
        return TaskView(name, priority, 'com', Placement(sample.position.copy()), current)
    frame_id = getattr(task, 'frame_id', None)
    if frame_id is None:
        return None
    oMf = state.frame_placement(frame_id)
    current = Placement(np.array(oMf.translation), np.array(oMf.rotation))
    if isinstance(task, FramePoseTask | FrameOrientationTask):
        task.read_reference(sample)
        rotation = sample.rotation.copy()
        if isinstance(task, FramePoseTask):
            return TaskView(
                name, priority, 'pose', Placement(sample.position.copy(), rotation), current
            )
        return TaskView(
            name, priority, 'orientation', Placement(current.position, rotation), current
        )
    if isinstance(task, FramePositionTask):
        task.read_reference(sample)
        target = Placement(sample.position.copy())
        kind = task.target_set.value
        if task.target_set is TargetSet.POINT:
            return TaskView(name, priority, kind, target, current)
        # The line's direction is normal to both constrained rows; a plane's normal is its row.
        rows = task.selection
        axis = np.cross(rows[0], rows[1]) if task.target_set is TargetSet.LINE else rows[0]
        return TaskView(name, priority, kind, target, current, axis / np.linalg.norm(axis))
    return None


def contact_view(report, contact, state: RobotState, friction_coefficient: float) -> ContactView:
    """A contact report with its frame's origin and its linear force in world axes."""
    force = contact.rows[:, :3].T @ report.force  # the constrained rows back to world axes
    position = np.array(state.frame_placement(contact.frame_id).translation)
    return ContactView(
        report.frame, position, force, float(report.friction_ratio), friction_coefficient
    )


def level_views(result: ControllerResult) -> tuple[LevelView, ...]:
    """Each level's residual, and whether it gave way to a constraint (module docstring)."""
    constrained = len(result.joints_at_limit) > 0 or bool(
        result.saturated.any() | result.rate_limited.any()
    )
    by_name = {report.name: report for report in result.tasks}
    views = []
    for level in result.levels:
        reports = [by_name[name] for name in level.task_names if name in by_name]
        residual, desired = _residual(reports)
        gave_way = constrained and residual > RESIDUAL_TOLERANCE * (1.0 + desired)
        views.append(LevelView(level.priority, tuple(level.task_names), residual, gave_way))
    return tuple(views)


def _residual(reports: Sequence[TaskReport]) -> tuple[float, float]:
    """‖ẍ* − (J q̈ + J̇v)‖ and ‖ẍ*‖ over the rows of `reports`."""
    if not reports:
        return 0.0, 0.0
    desired = np.concatenate([report.desired_acceleration for report in reports])
    achieved = np.concatenate([report.achieved_acceleration for report in reports])
    return float(np.linalg.norm(desired - achieved)), float(np.linalg.norm(desired))
