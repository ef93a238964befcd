"""The markers that show a :class:`~wbc_control.viz.snapshot.Snapshot`, as plain data.

One namespace per task (its name) and one per contact (`contact/<frame>`), so that a user
toggles them one by one in RViz; ids within a namespace are fixed (:class:`Slot`), so that a
marker that is no longer drawn can be deleted by its key (:func:`stale_keys`).

- pose: the target's axes and the frame's axes (x red, y green, z blue; the target's longer);
- orientation: the target's axes and the frame's, both at the frame's origin;
- point: a sphere at the target, a smaller one at the frame's origin;
- line, plane: the line (a segment of :data:`LINE_LENGTH_M` centred on the target) or a thin
  square of the plane centred on the target, and the frame's origin;
- com: spheres at the target and at the centre of mass, and with contacts, on the ground (the
  height of the lowest contact) the support polygon (the convex hull of the contacts' origins)
  and the centre of mass's projection;
- a contact: an arrow along its force (:data:`FORCE_SCALE_M_PER_N`), from green (no
  tangential force) to red (at or beyond the friction cone, or pulling);
- a level that gave way to a constraint: a red text with its residual over each of its tasks.

The ros layer (:mod:`wbc_control.ros.markers`) turns :class:`MarkerSpec` into
visualization_msgs/Marker, field by field.
"""

from collections.abc import Iterable
from enum import Enum, IntEnum
from typing import NamedTuple

import numpy as np
import pinocchio as pin
from scipy.spatial import ConvexHull, QhullError

from wbc_control.viz.snapshot import ContactView, Placement, Snapshot, TaskView

#: Length of a target's axes and of the frame's (m).
TARGET_AXES_M, CURRENT_AXES_M = 0.15, 0.1
#: Line width of axes, lines and the support polygon (m).
LINE_WIDTH_M = 0.006
#: Diameter of a target sphere and of a current-value sphere (m).
TARGET_SPHERE_M, CURRENT_SPHERE_M = 0.04, 0.025
#: The drawn part of a line target and the side of a plane target's square (m).
LINE_LENGTH_M = PLANE_SIDE_M = 0.5
#: Arrow length per newton of contact force (m/N): 1 m for 1 kN.
FORCE_SCALE_M_PER_N = 1e-3
#: Height of a gave-way text above its task's current value (m) and its letters (m).
TEXT_OFFSET_M, TEXT_HEIGHT_M = 0.12, 0.05

TARGET_COLOR = (1.0, 0.55, 0.0, 0.9)  # orange
CURRENT_COLOR = (0.1, 0.45, 1.0, 0.9)  # blue
PLANE_COLOR = (1.0, 0.55, 0.0, 0.35)
GROUND_COLOR = (0.9, 0.9, 0.2, 0.9)  # the support polygon and the COM's projection
GAVE_WAY_COLOR = (1.0, 0.1, 0.1, 1.0)
AXIS_COLORS = ((1.0, 0.0, 0.0, 1.0), (0.0, 0.8, 0.0, 1.0), (0.0, 0.2, 1.0, 1.0))
IDENTITY_XYZW = (0.0, 0.0, 0.0, 1.0)


class Shape(Enum):
    """The marker types used (visualization_msgs/Marker's names)."""

    ARROW = 'arrow'
    SPHERE = 'sphere'
    CUBE = 'cube'
    CYLINDER = 'cylinder'
    LINE_STRIP = 'line_strip'
    LINE_LIST = 'line_list'
    TEXT = 'text_view_facing'


class Slot(IntEnum):
    """The id of each marker within its namespace."""

    TARGET = 0
    CURRENT = 1
    GAVE_WAY = 2
    SUPPORT_POLYGON = 3
    GROUND_PROJECTION = 4


#: The id of a contact's arrow, alone in the contact's namespace.
FORCE_ID = 0


class MarkerSpec(NamedTuple):
    """One marker, in the world frame: what visualization_msgs/Marker needs, as plain data.

    `position` and `orientation` (x, y, z, w) are the marker's pose; `points` (and per-point
    `colors`) are in that pose's frame, as for a Marker's points.
    """

    namespace: str
    id: int
    shape: Shape
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]
    scale: tuple[float, float, float]
    color: tuple[float, float, float, float]
    points: tuple[tuple[float, float, float], ...] = ()
    colors: tuple[tuple[float, float, float, float], ...] = ()
    text: str = ''

    @property
    def key(self) -> tuple[str, int]:
        """(namespace, id): what names the marker in RViz."""
        return self.namespace, self.id


def marker_specs(snapshot: Snapshot) -> list[MarkerSpec]:
    """Every marker of `snapshot` (see the module docstring)."""
    specs: list[MarkerSpec] = []
    ground = _ground_points(snapshot.contacts)
    gave_way = {
        name: level for level in snapshot.levels if level.gave_way for name in level.task_names
    }
    for task in snapshot.tasks:
        specs += task_markers(task)
        if task.kind == 'com' and len(ground):
            specs += support_markers(task.name, task.current.position, ground)
        if task.name in gave_way:
            level = gave_way[task.name]
            text = f'level {level.priority} gave way: residual {level.residual:.3g}'
            specs.append(_text(task.name, task.current.position, text))
    specs += [force_marker(contact) for contact in snapshot.contacts]
    return specs


def stale_keys(
    previous: Iterable[tuple[str, int]], current: Iterable[tuple[str, int]]
) -> list[tuple[str, int]]:
    """The markers drawn before and not now, which must be deleted (sorted)."""
    return sorted(set(previous) - set(current))


def task_markers(task: TaskView) -> list[MarkerSpec]:
    """The target and the current value of one task."""
    name, target, current = task.name, task.target, task.current
    if task.kind in ('pose', 'orientation'):
        return [
            axes(name, Slot.TARGET, target, TARGET_AXES_M),
            axes(name, Slot.CURRENT, current, CURRENT_AXES_M),
        ]
    size = CURRENT_SPHERE_M * (1.6 if task.kind == 'com' else 1.0)
    specs = [_sphere(name, Slot.CURRENT, current.position, size, CURRENT_COLOR)]
    if task.kind == 'line':
        half = 0.5 * LINE_LENGTH_M * task.axis
        ends = (_point(target.position - half), _point(target.position + half))
        line = MarkerSpec(
            name, Slot.TARGET, Shape.LINE_LIST, (0.0, 0.0, 0.0), IDENTITY_XYZW,
            (LINE_WIDTH_M, 0.0, 0.0), TARGET_COLOR, ends,
        )  # fmt: skip
        return [line, *specs]
    if task.kind == 'plane':
        square = MarkerSpec(
            name, Slot.TARGET, Shape.CUBE, _point(target.position), _z_onto(task.axis),
            (PLANE_SIDE_M, PLANE_SIDE_M, 0.002), PLANE_COLOR,
        )  # fmt: skip
        return [square, *specs]
    size = TARGET_SPHERE_M * (1.6 if task.kind == 'com' else 1.0)
    return [_sphere(name, Slot.TARGET, target.position, size, TARGET_COLOR), *specs]


def axes(namespace: str, slot: int, placement: Placement, length: float) -> MarkerSpec:
    """A frame's axes: three segments from its origin along its x, y and z (LINE_LIST)."""
    tips = length * np.eye(3)
    points = tuple(point for tip in tips for point in ((0.0, 0.0, 0.0), _point(tip)))
    colors = tuple(color for color in AXIS_COLORS for _ in range(2))
    orientation = tuple(pin.Quaternion(placement.rotation).coeffs().tolist())
    return MarkerSpec(
        namespace, slot, Shape.LINE_LIST, _point(placement.position), orientation,
        (LINE_WIDTH_M, 0.0, 0.0), (1.0, 1.0, 1.0, 1.0), points, colors,
    )  # fmt: skip


def support_markers(namespace: str, com: np.ndarray, ground: np.ndarray) -> list[MarkerSpec]:
    """The support polygon on the ground and the centre of mass's projection onto it."""
    height = float(ground[0, 2])
    closed = tuple(_point(point) for point in (*ground, ground[0]))
    polygon = MarkerSpec(
        namespace, Slot.SUPPORT_POLYGON, Shape.LINE_STRIP, (0.0, 0.0, 0.0), IDENTITY_XYZW,
        (LINE_WIDTH_M, 0.0, 0.0), GROUND_COLOR, closed,
    )  # fmt: skip
    projection = MarkerSpec(
        namespace, Slot.GROUND_PROJECTION, Shape.CYLINDER, (float(com[0]), float(com[1]), height),
        IDENTITY_XYZW, (TARGET_SPHERE_M, TARGET_SPHERE_M, 0.002), GROUND_COLOR,
    )  # fmt: skip
    return [polygon, projection]


def force_marker(contact: ContactView) -> MarkerSpec:
    """An arrow from the contact's origin along its force, coloured by its friction ratio."""
    start = contact.position
    end = start + FORCE_SCALE_M_PER_N * contact.force
    return MarkerSpec(
        f'contact/{contact.frame}', FORCE_ID, Shape.ARROW, (0.0, 0.0, 0.0), IDENTITY_XYZW,
        (0.015, 0.03, 0.04), friction_color(contact.friction_ratio, contact.friction_coefficient),
        (_point(start), _point(end)),
    )  # fmt: skip


def friction_color(ratio: float, friction_coefficient: float) -> tuple[float, float, float, float]:
    """Green at a ratio of 0, red at μ and beyond (and when pulling: an infinite ratio)."""
    share = min(max(ratio / friction_coefficient, 0.0), 1.0) if np.isfinite(ratio) else 1.0
    return (share, 1.0 - share, 0.0, 1.0)


def _ground_points(contacts: tuple[ContactView, ...]) -> np.ndarray:
    """The support polygon's corners at the lowest contact's height, in order, `(k, 3)`."""
    if not contacts:
        return np.zeros((0, 3))
    origins = np.array([contact.position for contact in contacts])
    height = origins[:, 2].min()
    corners = _hull(origins[:, :2])
    return np.column_stack([corners, np.full(len(corners), height)])


def _hull(points: np.ndarray) -> np.ndarray:
    """The convex hull's corners counter-clockwise, `(k, 2)`; a segment or a point if flat."""
    unique = np.unique(points, axis=0)
    if len(unique) >= 3:
        try:
            return unique[ConvexHull(unique).vertices]
        except QhullError:  # collinear: the segment between the extreme points
            pass
    if len(unique) <= 1:
        return unique
    direction = unique[-1] - unique[0]
    along = unique @ direction
    return unique[[int(np.argmin(along)), int(np.argmax(along))]]


def _sphere(namespace: str, slot: int, position: np.ndarray, size: float, color) -> MarkerSpec:
    return MarkerSpec(
        namespace, slot, Shape.SPHERE, _point(position), IDENTITY_XYZW, (size, size, size), color
    )


def _text(namespace: str, position: np.ndarray, text: str) -> MarkerSpec:
    above = _point(position + np.array([0.0, 0.0, TEXT_OFFSET_M]))
    return MarkerSpec(
        namespace, Slot.GAVE_WAY, Shape.TEXT, above, IDENTITY_XYZW,
        (0.0, 0.0, TEXT_HEIGHT_M), GAVE_WAY_COLOR, text=text,
    )  # fmt: skip


def _z_onto(normal: np.ndarray) -> tuple[float, float, float, float]:
    """The quaternion (x, y, z, w) that turns the z axis onto `normal` (unit)."""
    rotation = pin.Quaternion.FromTwoVectors(np.array([0.0, 0.0, 1.0]), normal)
    return tuple(rotation.coeffs().tolist())


def _point(vector: np.ndarray) -> tuple[float, float, float]:
    return float(vector[0]), float(vector[1]), float(vector[2])
