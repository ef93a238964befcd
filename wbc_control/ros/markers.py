"""`~/markers`: the controller's targets, frames and contact forces for RViz (MarkerArray).

Wiring only: :mod:`wbc_control.viz.snapshot` takes the last tick, :mod:`wbc_control.viz.markers`
draws it as plain data, and :func:`marker_array` copies that into visualization_msgs, in the
world frame. At `markers_rate` Hz (steady clock, as /diagnostics; 0: none) each array carries
every marker of the tick (ADD, which replaces a marker of the same namespace and id) and a
DELETE for each marker drawn before and not now (a task switched off, a contact released).
Setting the rate to 0 at run time clears the display with one DELETEALL.
"""

from collections.abc import Callable, Iterable

from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import Point
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from wbc_control.viz.markers import MarkerSpec, Shape, marker_specs, stale_keys
from wbc_control.viz.snapshot import Snapshot

TOPIC = '~/markers'
SHAPES = {
    Shape.ARROW: Marker.ARROW,
    Shape.SPHERE: Marker.SPHERE,
    Shape.CUBE: Marker.CUBE,
    Shape.CYLINDER: Marker.CYLINDER,
    Shape.LINE_STRIP: Marker.LINE_STRIP,
    Shape.LINE_LIST: Marker.LINE_LIST,
    Shape.TEXT: Marker.TEXT_VIEW_FACING,
}


def marker_message(spec: MarkerSpec, frame_id: str, stamp: TimeMsg) -> Marker:
    """One MarkerSpec as an ADD Marker."""
    marker = Marker(ns=spec.namespace, id=int(spec.id), type=SHAPES[spec.shape])
    marker.header.frame_id, marker.header.stamp = frame_id, stamp
    marker.action = Marker.ADD
    position, orientation = marker.pose.position, marker.pose.orientation
    position.x, position.y, position.z = spec.position
    orientation.x, orientation.y, orientation.z, orientation.w = spec.orientation
    marker.scale.x, marker.scale.y, marker.scale.z = spec.scale
    marker.color = _color(spec.color)
    marker.points = [Point(x=x, y=y, z=z) for x, y, z in spec.points]
    marker.colors = [_color(color) for color in spec.colors]
    marker.text = spec.text
    return marker


def marker_array(
    specs: Iterable[MarkerSpec],
    deleted: Iterable[tuple[str, int]],
    frame_id: str,
    stamp: TimeMsg,
) -> MarkerArray:
    """The DELETEs of `deleted` (namespace, id), then `specs` as ADDs."""
    deletions = [
        Marker(ns=namespace, id=int(marker_id), action=Marker.DELETE)
        for namespace, marker_id in deleted
    ]
    for marker in deletions:
        marker.header.frame_id, marker.header.stamp = frame_id, stamp
    return MarkerArray(markers=[*deletions, *(marker_message(s, frame_id, stamp) for s in specs)])


class MarkerPublisher:
    """Publishes `~/markers` of `node` at a rate that may change at run time.

    Its publisher and its one timer are created here, once (a managed node releases what its
    configure created); a new rate changes the timer's period, 0 cancels it.

    Args:
        node: the controller node.
        rate_hz: markers per second (0: none).
        take: the last tick's snapshot (None: none yet).
        frame_id: the world frame the snapshot is in.
    """

    def __init__(
        self, node: Node, rate_hz: float, take: Callable[[], Snapshot | None], frame_id: str
    ) -> None:
        self._node, self._take, self._frame_id = node, take, frame_id
        self._publisher = node.create_publisher(MarkerArray, TOPIC, 1)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        period = 1.0 / rate_hz if rate_hz > 0.0 else 1.0
        self._timer = node.create_timer(period, self.publish, clock=steady)
        self._rate_hz = rate_hz
        self._drawn: set[tuple[str, int]] = set()
        if rate_hz <= 0.0:
            self._timer.cancel()

    def set_rate(self, rate_hz: float) -> None:
        """Publish at `rate_hz` from now on (0: stop, deleting what was drawn)."""
        if rate_hz == self._rate_hz:
            return
        self._rate_hz = rate_hz
        if rate_hz > 0.0:
            self._timer.timer_period_ns = round(1e9 / rate_hz)
            self._timer.reset()
            return
        self._timer.cancel()
        if self._drawn:
            clear = Marker(action=Marker.DELETEALL)
            clear.header.frame_id = self._frame_id
            self._publisher.publish(MarkerArray(markers=[clear]))
            self._drawn = set()

    def publish(self) -> None:
        """One MarkerArray of the last tick, deleting what it no longer draws."""
        snapshot = self._take()
        if snapshot is None:
            return
        specs = marker_specs(snapshot)
        drawn = {spec.key for spec in specs}
        stamp = self._node.get_clock().now().to_msg()
        deleted = stale_keys(self._drawn, drawn)
        self._publisher.publish(marker_array(specs, deleted, self._frame_id, stamp))
        self._drawn = drawn


def _color(rgba: tuple[float, float, float, float]) -> ColorRGBA:
    red, green, blue, alpha = rgba
    return ColorRGBA(r=red, g=green, b=blue, a=alpha)
