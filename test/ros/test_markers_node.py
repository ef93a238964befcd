"""`~/markers` of `wbc_controller` over real DDS: where they stand, deletions, the rate.

The controller runs the Panda (in a namespace) with a pose, a point, a line, a plane and an
orientation task; the test publishes one configuration and reads the MarkerArray: targets
where the parameters put them, current values where Pinocchio (here, on its own data) puts the
frames, to 1e-9, in the world frame. A task switched off has its markers deleted; a rate of 0
publishes nothing, and 0 set at run time clears the display once.
"""

from controller_support import (
    COMMON,
    JOINTS,
    POSTURE_TIMEOUT_S,
    READY,
    Controller,
    joint_state,
)
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import numpy.testing as npt
import pinocchio as pin
import pytest
from robots import robot
from visualization_msgs.msg import Marker, MarkerArray

from wbc_control.viz.markers import Slot

BENT = READY + np.array([0.11, -0.07, 0.23, 0.19, -0.31, 0.05, 0.37, 0.0, 0.0])
HAND = [0.41, -0.13, 0.52, 0.0, 0.6, 0.0, 0.8]
TASKS = {
    'hand': {'type': 'frame_pose', 'frame': 'panda_hand', 'kp': 50.0, 'target': HAND},
    'elbow': {
        'type': 'frame_position', 'frame': 'panda_link4', 'priority': 1, 'kp': 20.0,
        'target': [0.12, 0.27, 0.61],
    },
    'wrist_line': {
        'type': 'frame_position', 'frame': 'panda_link6', 'priority': 1, 'kp': 20.0,
        'target': [0.33, 0.05, 0.44], 'constraint': 'line', 'axis': [1.0, 2.0, -3.0],
    },
    'flange_plane': {
        'type': 'frame_position', 'frame': 'panda_link7', 'priority': 2, 'kp': 20.0,
        'target': [0.29, -0.08, 0.47], 'constraint': 'plane', 'axis': [0.3, -0.5, 0.8],
    },
    'link5_up': {
        'type': 'frame_orientation', 'frame': 'panda_link5', 'priority': 2, 'kp': 20.0,
        'target': [0.0, 0.6, 0.0, 0.8],
    },
    'posture': {'type': 'joint_posture', 'priority': 3, 'kp': 5.0, 'target': READY.tolist()},
}  # fmt: skip
PARAMETERS = {
    **COMMON,
    'task_names': list(TASKS),
    'tasks': TASKS,
    'joint_state_timeout': POSTURE_TIMEOUT_S,  # the one state stays fresh while the test reads
    'task_transition_time': 0.0,
    'markers_rate': 20.0,
}
#: Marker arrays to wait for (wall clock bound of a wait only).
MARKERS_TIMEOUT_S = 60.0


class MarkerReader:
    """The MarkerArrays of one controller, in arrival order."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        topic = f'{controller.topic_prefix}markers'
        self.arrays: list[MarkerArray] = controller.probe.subscribe(MarkerArray, topic)

    def wait(self, condition, what: str) -> MarkerArray:
        """Publish BENT until an array that meets `condition` arrives; that array."""
        found = None
        state = joint_state(JOINTS, BENT, np.zeros(9))

        def met() -> bool:
            nonlocal found
            found = next((array for array in self.arrays if condition(array)), None)
            if found is None:
                self.controller.publish(state)
            return found is not None

        assert self.controller.probe.spin_until(met, MARKERS_TIMEOUT_S), (
            f'no marker array with {what}; {len(self.arrays)} arrays, node output:\n'
            f'{self.controller.process.output()}'
        )
        return found


def added(array: MarkerArray) -> dict[tuple[str, int], Marker]:
    return {(m.ns, m.id): m for m in array.markers if m.action == Marker.ADD}


def deleted(array: MarkerArray) -> set[tuple[str, int]]:
    return {(m.ns, m.id) for m in array.markers if m.action == Marker.DELETE}


def position(marker: Marker) -> np.ndarray:
    return np.array([marker.pose.position.x, marker.pose.position.y, marker.pose.position.z])


def rotation(marker: Marker) -> np.ndarray:
    o = marker.pose.orientation
    return pin.Quaternion(o.w, o.x, o.y, o.z).toRotationMatrix()


@pytest.fixture(scope='module')
def nodes(probe):
    """A controller drawing at 20 Hz in a namespace, and one with markers_rate 0."""
    drawing = Controller(probe, '/arm', 'wbc_controller', PARAMETERS)
    silent = Controller(probe, '/quiet', 'wbc_controller', {**PARAMETERS, 'markers_rate': 0.0})
    try:
        yield drawing.wait_ready(), silent.wait_ready()
    finally:
        drawing.stop()
        silent.stop()


def test_the_markers_stand_at_the_targets_and_the_frames_in_the_world_frame(nodes):
    controller, _ = nodes
    reader = MarkerReader(controller)
    array = reader.wait(lambda a: ('hand', Slot.CURRENT) in added(a), 'the hand drawn')
    markers = added(array)
    assert {m.header.frame_id for m in markers.values()} == {'panda_link0'}
    model = robot('panda').model
    data = model.createData()
    pin.framesForwardKinematics(model, data, robot('panda').configuration(BENT))

    def placement(frame: str) -> pin.SE3:
        return data.oMf[model.getFrameId(frame)]

    npt.assert_allclose(position(markers['hand', Slot.TARGET]), HAND[:3], rtol=0, atol=1e-9)
    npt.assert_allclose(
        rotation(markers['hand', Slot.TARGET]),
        pin.Quaternion(HAND[6], *HAND[3:6]).toRotationMatrix(),
        atol=1e-9,
    )
    hand = placement('panda_hand')
    npt.assert_allclose(position(markers['hand', Slot.CURRENT]), hand.translation, atol=1e-9)
    npt.assert_allclose(rotation(markers['hand', Slot.CURRENT]), hand.rotation, atol=1e-9)
    npt.assert_allclose(position(markers['elbow', Slot.TARGET]), [0.12, 0.27, 0.61], atol=1e-9)
    elbow = placement('panda_link4').translation
    npt.assert_allclose(position(markers['elbow', Slot.CURRENT]), elbow, atol=1e-9)
    ends = np.array([[p.x, p.y, p.z] for p in markers['wrist_line', Slot.TARGET].points])
    npt.assert_allclose(ends.mean(axis=0), [0.33, 0.05, 0.44], atol=1e-9)
    direction = (ends[1] - ends[0]) / np.linalg.norm(ends[1] - ends[0])
    assert abs(direction @ np.array([1.0, 2.0, -3.0]) / np.sqrt(14.0)) == pytest.approx(1.0)
    link6 = placement('panda_link6').translation
    npt.assert_allclose(position(markers['wrist_line', Slot.CURRENT]), link6, atol=1e-9)
    npt.assert_allclose(position(markers['flange_plane', Slot.TARGET]), [0.29, -0.08, 0.47])
    normal = rotation(markers['flange_plane', Slot.TARGET])[:, 2]
    assert abs(normal @ np.array([0.3, -0.5, 0.8])) / np.sqrt(0.98) == pytest.approx(1.0)
    link5 = placement('panda_link5')
    npt.assert_allclose(position(markers['link5_up', Slot.TARGET]), link5.translation, atol=1e-9)
    npt.assert_allclose(rotation(markers['link5_up', Slot.CURRENT]), link5.rotation, atol=1e-9)
    assert {ns for ns, _ in markers} == set(TASKS) - {'posture'}


def test_a_task_switched_off_has_its_markers_deleted(nodes):
    controller, _ = nodes
    reader = MarkerReader(controller)
    reader.wait(lambda a: ('elbow', Slot.TARGET) in added(a), 'the elbow drawn')
    assert all(
        result.successful for result in controller.set_parameters(tasks__elbow__active=False)
    )
    start = len(reader.arrays)
    array = reader.wait(
        lambda a: a in reader.arrays[start:] and ('elbow', Slot.TARGET) in deleted(a),
        'the elbow deleted',
    )
    assert deleted(array) == {('elbow', Slot.TARGET), ('elbow', Slot.CURRENT)}
    assert not any(ns == 'elbow' for ns, _ in added(array))
    assert ('hand', Slot.TARGET) in added(array)  # the others stay
    later = reader.wait(lambda a: a in reader.arrays[reader.arrays.index(array) + 1 :], 'more')
    assert not deleted(later) and not any(ns == 'elbow' for ns, _ in added(later))
    assert all(
        result.successful for result in controller.set_parameters(tasks__elbow__active=True)
    )
    start = len(reader.arrays)
    reader.wait(
        lambda a: a in reader.arrays[start:] and ('elbow', Slot.TARGET) in added(a), 'back'
    )


def test_a_rate_of_zero_publishes_nothing_and_zero_at_run_time_clears_once(nodes):
    drawing, silent = nodes
    quiet, live = MarkerReader(silent), MarkerReader(drawing)
    state = joint_state(JOINTS, BENT, np.zeros(9))
    # Both tick on states; the drawing one publishes arrays meanwhile, the silent one none.
    silent.torque_for(state)
    start = len(live.arrays)
    live.wait(lambda a: len(live.arrays) >= start + 5, 'five more arrays')
    silent.torque_for(state)
    assert quiet.arrays == []

    [refused] = drawing.set_parameters(markers_rate=-1.0)
    assert not refused.successful and 'markers_rate' in refused.reason
    assert all(result.successful for result in drawing.set_parameters(markers_rate=0.0))
    cleared = live.wait(
        lambda a: any(m.action == Marker.DELETEALL for m in a.markers), 'DELETEALL'
    )
    assert len(cleared.markers) == 1
    after = len(live.arrays)
    # Ten diagnostics periods on the steady clock, at the rate markers had: none come.
    assert diagnostics_periods(drawing, 10) and len(live.arrays) == after
    assert all(result.successful for result in drawing.set_parameters(markers_rate=20.0))
    live.wait(lambda a: a in live.arrays[after:] and ('hand', Slot.TARGET) in added(a), 'redrawn')


def diagnostics_periods(controller: Controller, count: int) -> bool:
    """Wait for `count` /diagnostics arrays of `controller` (its own steady-clock timer)."""
    heard = []

    def record(array: DiagnosticArray) -> None:
        if any(s.name.startswith(f'{controller.name}: ') for s in array.status):
            heard.append(array)

    probe = controller.probe
    subscription = probe.node.create_subscription(DiagnosticArray, '/diagnostics', record, 50)
    try:
        return probe.spin_until(lambda: len(heard) >= count, MARKERS_TIMEOUT_S)
    finally:
        probe.node.destroy_subscription(subscription)
