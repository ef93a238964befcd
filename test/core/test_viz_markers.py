"""The markers of a tick (wbc_control.viz): where they stand, checked against Pinocchio.

The controller runs real ticks on example-robot-data robots; the markers' positions are
compared with the task targets and with frame placements computed here by Pinocchio from the
same configuration, the contact arrows with Newton's law for the whole robot.
"""

import numpy as np
import numpy.testing as npt
import pinocchio as pin
import pytest
from robots import core_loop, robot, shipped_parameters

from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.model.robot_model import RobotModel
from wbc_control.viz.markers import (
    FORCE_SCALE_M_PER_N,
    LINE_LENGTH_M,
    Shape,
    Slot,
    friction_color,
    marker_specs,
    stale_keys,
)
from wbc_control.viz.snapshot import snapshot

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
#: A configuration away from READY, every joint by a different amount.
BENT = READY + np.array([0.11, -0.07, 0.23, 0.19, -0.31, 0.05, 0.37, 0.0, 0.0])
HAND_TARGET = [0.41, -0.13, 0.52, 0.2, -0.1, 0.3, 0.9273618495495704]
HAND_TARGET[3:] = (np.array(HAND_TARGET[3:]) / np.linalg.norm(HAND_TARGET[3:])).tolist()
LINE_AXIS = np.array([1.0, 2.0, -3.0])
PLANE_NORMAL = np.array([0.3, -0.5, 0.8])
PANDA_TASKS = {
    'hand': {'type': 'frame_pose', 'frame': 'panda_hand', 'kp': 50.0, 'target': HAND_TARGET},
    'elbow': {
        'type': 'frame_position', 'frame': 'panda_link4', 'priority': 1, 'kp': 20.0,
        'target': [0.12, 0.27, 0.61],
    },
    'wrist_line': {
        'type': 'frame_position', 'frame': 'panda_link6', 'priority': 1, 'kp': 20.0,
        'target': [0.33, 0.05, 0.44], 'constraint': 'line', 'axis': LINE_AXIS.tolist(),
    },
    'flange_plane': {
        'type': 'frame_position', 'frame': 'panda_link7', 'priority': 2, 'kp': 20.0,
        'target': [0.29, -0.08, 0.47], 'constraint': 'plane', 'axis': PLANE_NORMAL.tolist(),
    },
    'link5_up': {
        'type': 'frame_orientation', 'frame': 'panda_link5', 'priority': 2, 'kp': 20.0,
        'target': [0.0, 0.6, 0.0, 0.8],
    },
    'posture': {'type': 'joint_posture', 'priority': 3, 'kp': 5.0, 'target': READY.tolist()},
}  # fmt: skip


def panda_loop(**settings) -> ControllerLoop:
    parameters = {'task_names': list(PANDA_TASKS), 'tasks': PANDA_TASKS, **settings}
    return core_loop(robot('panda'), parameters)


def placement(model: RobotModel, q: np.ndarray, frame: str) -> pin.SE3:
    """The frame's placement oMf by Pinocchio's forward kinematics, on data of its own."""
    data = model.model.createData()
    pin.framesForwardKinematics(model.model, data, q)
    return data.oMf[model.model.getFrameId(frame)]


def by_key(specs) -> dict:
    return {spec.key: spec for spec in specs}


def rotation(orientation_xyzw) -> np.ndarray:
    x, y, z, w = orientation_xyzw
    return pin.Quaternion(w, x, y, z).toRotationMatrix()


def parallel(a: np.ndarray, b: np.ndarray) -> float:
    """|cos| of the angle between a and b."""
    return abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))


def test_the_markers_stand_at_the_targets_and_at_the_frames_placements():
    panda = robot('panda')
    loop = panda_loop(joint_limits=False)
    velocities = np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.2, -0.4, 0.0, 0.0])
    loop.tick(BENT, velocities, None, None, 1.0)
    markers = by_key(marker_specs(snapshot(loop)))
    q = panda.configuration(BENT)

    hand = placement(panda, q, 'panda_hand')
    target = markers['hand', Slot.TARGET]
    npt.assert_allclose(target.position, HAND_TARGET[:3], rtol=0, atol=1e-12)
    wanted = pin.Quaternion(HAND_TARGET[6], *HAND_TARGET[3:6]).toRotationMatrix()
    npt.assert_allclose(rotation(target.orientation), wanted, atol=1e-9)
    current = markers['hand', Slot.CURRENT]
    npt.assert_allclose(current.position, hand.translation, rtol=0, atol=1e-9)
    npt.assert_allclose(rotation(current.orientation), hand.rotation, atol=1e-9)
    assert target.shape is current.shape is Shape.LINE_LIST and len(target.points) == 6

    elbow = placement(panda, q, 'panda_link4')
    npt.assert_allclose(markers['elbow', Slot.TARGET].position, [0.12, 0.27, 0.61], atol=1e-12)
    npt.assert_allclose(markers['elbow', Slot.CURRENT].position, elbow.translation, atol=1e-9)

    start, end = np.array(markers['wrist_line', Slot.TARGET].points)
    npt.assert_allclose((start + end) / 2.0, [0.33, 0.05, 0.44], atol=1e-12)
    assert np.linalg.norm(end - start) == pytest.approx(LINE_LENGTH_M)
    assert parallel(end - start, LINE_AXIS) == pytest.approx(1.0, abs=1e-12)
    link6 = placement(panda, q, 'panda_link6')
    npt.assert_allclose(markers['wrist_line', Slot.CURRENT].position, link6.translation, atol=1e-9)

    plane = markers['flange_plane', Slot.TARGET]
    npt.assert_allclose(plane.position, [0.29, -0.08, 0.47], atol=1e-12)
    assert plane.shape is Shape.CUBE
    normal = rotation(plane.orientation)[:, 2]  # the square's thin side
    assert parallel(normal, PLANE_NORMAL) == pytest.approx(1.0, abs=1e-12)

    link5 = placement(panda, q, 'panda_link5')
    orientation = markers['link5_up', Slot.TARGET]
    npt.assert_allclose(orientation.position, link5.translation, atol=1e-9)
    npt.assert_allclose(rotation(orientation.orientation), rotation([0, 0.6, 0, 0.8]), atol=1e-9)
    npt.assert_allclose(
        rotation(markers['link5_up', Slot.CURRENT].orientation), link5.rotation, atol=1e-9
    )

    # A joint posture has no place in space: nothing drawn for it.
    assert {namespace for namespace, _ in markers} == set(PANDA_TASKS) - {'posture'}


def test_a_task_switched_off_loses_its_markers_and_they_are_named_for_deletion():
    loop = panda_loop(joint_limits=False, task_transition_time=0.0)
    loop.tick(BENT, np.zeros(9), None, None, 1.0)
    before = {spec.key for spec in marker_specs(snapshot(loop))}
    loop.controller.set_active('elbow', False)
    loop.tick(BENT, np.zeros(9), None, None, 1.01)
    after = {spec.key for spec in marker_specs(snapshot(loop))}
    assert stale_keys(before, after) == [('elbow', Slot.TARGET), ('elbow', Slot.CURRENT)]
    assert stale_keys(after, before) == []  # nothing is deleted while all is drawn


def test_nothing_is_drawn_before_a_tick():
    assert snapshot(panda_loop()) is None


@pytest.mark.parametrize('name', ['talos', 'solo12'])
def test_contact_arrows_carry_the_robot_and_the_support_polygon_lies_under_the_feet(name):
    model = robot(name)
    parameters = shipped_parameters(f'{name}_controller')
    loop = core_loop(model, parameters)
    rng = np.random.default_rng(7)
    joints = rng.uniform(-0.05, 0.05, model.n_actuated)
    base_pose = [0.02, -0.03, 0.8, 0.0, 0.0, 0.0, 1.0]
    loop.tick(joints, np.zeros(model.n_actuated), base_pose, np.zeros(6), 1.0)
    view = snapshot(loop)
    markers = marker_specs(view)
    arrows = [spec for spec in markers if spec.shape is Shape.ARROW]
    assert {spec.namespace for spec in arrows} == {f'contact/{f}' for f in parameters['contacts']}

    # Newton for the whole robot at rest: the contact forces sum to m (c̈ − g).
    q = model.configuration(joints, base_pose)
    data = model.model.createData()
    pin.jacobianCenterOfMass(model.model, data, q)
    com_acceleration = data.Jcom @ loop.statistics.result.acceleration
    mass = pin.computeTotalMass(model.model)
    total = sum((np.subtract(*spec.points[::-1]) for spec in arrows), np.zeros(3))
    weight = mass * (com_acceleration - model.model.gravity.linear)
    npt.assert_allclose(total / FORCE_SCALE_M_PER_N, weight, rtol=1e-6, atol=1e-6 * mass)
    for spec in arrows:
        frame = spec.namespace.removeprefix('contact/')
        npt.assert_allclose(spec.points[0], placement(model, q, frame).translation, atol=1e-9)

    feet = np.array([placement(model, q, frame).translation for frame in parameters['contacts']])
    com_tasks = [task.name for task in view.tasks if task.kind == 'com']
    if not com_tasks:  # Solo12 has no COM task: no polygon
        assert not [spec for spec in markers if spec.shape is Shape.LINE_STRIP]
        return
    polygon = by_key(markers)[com_tasks[0], Slot.SUPPORT_POLYGON]
    corners = np.array(polygon.points)
    npt.assert_allclose(corners[0], corners[-1])  # closed
    npt.assert_allclose(corners[:, 2], feet[:, 2].min(), atol=1e-12)  # on the ground
    npt.assert_allclose(sorted(map(tuple, corners[:-1, :2])), sorted(map(tuple, feet[:, :2])))
    projection = by_key(markers)[com_tasks[0], Slot.GROUND_PROJECTION]
    com = pin.centerOfMass(model.model, model.model.createData(), q)
    npt.assert_allclose(projection.position, [com[0], com[1], feet[:, 2].min()], atol=1e-9)


def test_the_support_polygon_of_four_feet_is_their_hull():
    from wbc_control.viz.markers import support_markers

    feet = np.array(
        [[0.2, 0.15, 0.01], [0.2, -0.15, 0.0], [-0.2, 0.14, 0.02], [-0.19, -0.15, 0.0]]
    )
    inside = np.array([0.0, 0.01, 0.0])  # a fifth contact inside the hull adds no corner
    from wbc_control.viz.markers import _ground_points
    from wbc_control.viz.snapshot import ContactView

    contacts = tuple(
        ContactView(f'foot{i}', point, np.zeros(3), 0.0, 0.7)
        for i, point in enumerate([*feet, inside])
    )
    ground = _ground_points(contacts)
    assert len(ground) == 4
    npt.assert_allclose(sorted(map(tuple, ground[:, :2])), sorted(map(tuple, feet[:, :2])))
    polygon, _ = support_markers('com', np.zeros(3), ground)
    assert len(polygon.points) == 5


def test_the_friction_colour_runs_from_green_at_no_tangential_force_to_red_at_the_cone():
    mu = 0.7
    assert friction_color(0.0, mu) == (0.0, 1.0, 0.0, 1.0)
    assert friction_color(0.35, mu) == pytest.approx((0.5, 0.5, 0.0, 1.0))
    assert friction_color(mu, mu) == (1.0, 0.0, 0.0, 1.0)
    assert friction_color(2.0 * mu, mu) == (1.0, 0.0, 0.0, 1.0)  # outside the cone
    assert friction_color(np.inf, mu) == (1.0, 0.0, 0.0, 1.0)  # pulling
    reds = [friction_color(ratio, mu)[0] for ratio in np.linspace(0.0, mu, 8)]
    assert reds == sorted(reds)


def test_a_level_that_gives_way_to_the_torque_limits_is_marked_and_one_that_does_not_is_not():
    hand = {
        'type': 'frame_position',
        'frame': 'panda_hand',
        'kp': 20.0,
        'target': [0.4, 0.1, 0.45],
    }
    tasks = {'hand': hand, 'posture': PANDA_TASKS['posture']}
    parameters = {'task_names': ['hand', 'posture'], 'tasks': tasks, 'soft_start_time': 0.0}
    free = core_loop(robot('panda'), parameters)
    free.tick(READY, np.zeros(9), None, None, 1.0)
    limited = core_loop(robot('panda'), {**parameters, 'effort_limits': [4.0] * 9})
    limited.tick(READY, np.zeros(9), None, None, 1.0)

    free_level, posture_level = snapshot(free).levels
    assert not free_level.gave_way and free_level.residual < 1e-9
    # The posture yields to the hand (strict priority), not to a constraint: not marked.
    assert posture_level.residual > 1e-3 and not posture_level.gave_way
    assert ('hand', Slot.GAVE_WAY) not in by_key(marker_specs(snapshot(free)))

    level = snapshot(limited).levels[0]
    assert level.gave_way and level.residual > 1.0
    text = by_key(marker_specs(snapshot(limited)))['hand', Slot.GAVE_WAY]
    assert text.shape is Shape.TEXT and f'{level.residual:.3g}' in text.text
    assert (
        text.position[2]
        > limited.state.frame_placement(robot('panda').frame_id('panda_hand')).translation[2]
    )
