"""A payload added to the model equals the same body built into the URDF (Panda, Solo12)."""

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from robots import example_urdf

from wbc_control.config.payload import parse_payload, payload_values
from wbc_control.exceptions import FrameNotFound, InvalidShape, InvalidValue
from wbc_control.model.payload import NO_PAYLOAD, Payload, blend
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

MASS = 2.0
CENTER = (0.013, -0.021, 0.047)  # components differ, so a swapped axis shows
INERTIA = (0.011, 0.0012, -0.0021, 0.017, 0.0031, 0.023)  # ixx ixy ixz iyy iyz izz
#: (robot, frame given to the controller, URDF link the payload is welded to in the reference)
CASES = [
    ('panda', 'panda_hand_tcp', 'panda_hand_tcp'),  # a link rotated from its joint's frame
    ('panda', 'panda_joint5', 'panda_link5'),  # a joint's frame
    ('solo12', 'FL_FOOT', 'FL_FOOT'),  # a floating base, a foot
    ('solo12', 'base_link', 'base_link'),  # a floating base, the base itself
]


def fresh(name: str) -> RobotModel:
    """A RobotModel of its own (the tests change its inertias)."""
    return RobotModel.from_urdf_path(*example_urdf(name))


def with_payload_in_urdf(
    name: str, link: str, mass: float = MASS, inertia: tuple = INERTIA
) -> RobotModel:
    """The robot with a `payload` link welded to `link`: the payload as the URDF would give it."""
    path, floating_base = example_urdf(name)
    root = ET.fromstring(path.read_text())
    body = ET.SubElement(root, 'link', name='test_payload')
    inertial = ET.SubElement(body, 'inertial')
    ET.SubElement(inertial, 'origin', xyz=' '.join(map(str, CENTER)), rpy='0 0 0')
    ET.SubElement(inertial, 'mass', value=str(mass))
    names = ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')
    ET.SubElement(inertial, 'inertia', {n: str(v) for n, v in zip(names, inertia)})
    joint = ET.SubElement(root, 'joint', name='test_payload_joint', type='fixed')
    ET.SubElement(joint, 'parent', link=link)
    ET.SubElement(joint, 'child', link='test_payload')
    return RobotModel.from_urdf_string(ET.tostring(root, encoding='unicode'), floating_base)


def dynamics(robot: RobotModel, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M(q), h(q, v), g(q) at a random state (the same for every model of one robot)."""
    rng = np.random.default_rng(seed)
    pin.seed(seed)
    q = pin.randomConfiguration(robot.model)
    if robot.floating_base:
        q[:3] = rng.uniform(-1.0, 1.0, 3)
    state = RobotState(robot)
    state.update(q, rng.standard_normal(robot.nv))
    return state.mass_matrix.copy(), state.nonlinear_effects.copy(), state.gravity.copy()


@pytest.mark.parametrize(('name', 'frame', 'link'), CASES)
def test_payload_dynamics_equal_the_payload_built_into_the_urdf(name, frame, link):
    robot, reference = fresh(name), with_payload_in_urdf(name, link)
    payload = Payload.create(robot, frame, MASS, CENTER, INERTIA)
    robot.set_payload_parameters(payload.dynamic_parameters(robot))
    for seed in (1, 2, 3):
        for ours, theirs in zip(dynamics(robot, seed), dynamics(reference, seed)):
            np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=1e-9)
    # and the payload changed them: the comparison is not of two unloaded robots
    unloaded = dynamics(fresh(name), 1)[2]
    assert np.abs(dynamics(robot, 1)[2] - unloaded).max() > 0.1


@pytest.mark.parametrize(('name', 'frame', 'link'), CASES[::2])
def test_removing_the_payload_gives_the_urdf_inertias_back_exactly(name, frame, link):
    robot = fresh(name)
    before = dynamics(robot, 4)
    payload = Payload.create(robot, frame, MASS, CENTER)
    robot.set_payload_parameters(payload.dynamic_parameters(robot))
    robot.set_payload_parameters({})
    for after, nominal in zip(dynamics(robot, 4), before):
        np.testing.assert_array_equal(after, nominal)


def test_moving_the_payload_to_another_frame_leaves_nothing_on_the_first():
    robot, reference = fresh('panda'), with_payload_in_urdf('panda', 'panda_link3')
    first = Payload.create(robot, 'panda_hand_tcp', MASS, CENTER, INERTIA)
    robot.set_payload_parameters(first.dynamic_parameters(robot))
    second = Payload.create(robot, 'panda_link3', MASS, CENTER, INERTIA)
    robot.set_payload_parameters(second.dynamic_parameters(robot))
    for ours, theirs in zip(dynamics(robot, 5), dynamics(reference, 5)):
        np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=1e-9)


def test_a_blend_of_two_payloads_is_the_payload_of_the_blended_mass():
    """π is linear in the body: halfway to a payload is the payload of half its mass, inertia."""
    half = tuple(value / 2 for value in INERTIA)
    robot = fresh('panda')
    reference = with_payload_in_urdf('panda', 'panda_hand_tcp', MASS / 2, half)
    payload = Payload.create(robot, 'panda_hand_tcp', MASS, CENTER, INERTIA)
    robot.set_payload_parameters(blend({}, payload.dynamic_parameters(robot), 0.5))
    for ours, theirs in zip(dynamics(robot, 6), dynamics(reference, 6)):
        np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=1e-9)


def test_a_payload_on_a_frame_fixed_to_the_world_changes_nothing():
    robot = fresh('panda')
    before = dynamics(robot, 7)
    payload = Payload.create(robot, 'panda_link0', MASS, CENTER, INERTIA)
    robot.set_payload_parameters(payload.dynamic_parameters(robot))
    for after, nominal in zip(dynamics(robot, 7), before):
        np.testing.assert_array_equal(after, nominal)


def test_an_unknown_frame_is_refused_by_name_with_the_frames_listed():
    robot = fresh('panda')
    with pytest.raises(FrameNotFound, match="'panda_hnad'.*available frames: .*panda_hand_tcp"):
        Payload.create(robot, 'panda_hnad', MASS)
    with pytest.raises(FrameNotFound, match='payload.frame: frame .panda_hnad'):
        parse_payload(robot, {'payload.frame': 'panda_hnad', 'payload.mass': MASS})


@pytest.mark.parametrize(
    ('values', 'message'),
    [
        ({'payload.mass': -0.1}, 'payload.mass: must be >= 0'),
        ({'payload.mass': float('nan')}, 'payload.mass'),
        ({'payload.mass': 1.0, 'payload.frame': ''}, 'payload.frame: a payload with a mass'),
        ({'payload.center_of_mass': [0.1, 0.2]}, 'payload.center_of_mass: needs 3 values'),
        ({'payload.center_of_mass': [0.1, float('inf'), 0.0]}, 'payload.center_of_mass'),
        ({'payload.inertia': [0.1, 0.0, 0.0, 0.1, 0.0]}, 'payload.inertia: needs 6 values'),
        # principal moments 0.01, 0.01, 0.03: the largest beyond the sum of the others
        ({'payload.inertia': [0.01, 0.0, 0.0, 0.01, 0.0, 0.03]}, 'not those of a rigid body'),
        ({'payload.inertia': [-0.01, 0.0, 0.0, 0.02, 0.0, 0.02]}, 'not those of a rigid body'),
        ({'payload.mass': 0.0, 'payload.inertia': list(INERTIA)}, 'needs a payload mass > 0'),
    ],
)
def test_bad_payload_values_are_refused_naming_the_parameter(values, message):
    defaults = {'payload.frame': 'panda_hand_tcp', 'payload.mass': MASS}
    with pytest.raises((InvalidValue, InvalidShape), match=message):
        parse_payload(fresh('panda'), defaults | values)


def test_rigid_body_boundary_a_plus_b_equal_to_c_is_a_body():
    """A flat plate's moments: A + B = C exactly, the edge of what a rigid body can have."""
    robot = fresh('panda')
    plate = [0.01, 0.0, 0.0, 0.02, 0.0, 0.03]
    payload = parse_payload(
        robot, {'payload.frame': 'panda_hand', 'payload.mass': MASS, 'payload.inertia': plate}
    )
    assert payload.inertia.tolist() == plate
    beyond = [0.01, 0.0, 0.0, 0.02, 0.0, 0.0300001]
    with pytest.raises(InvalidValue, match='rigid body'):
        parse_payload(
            robot, {'payload.frame': 'panda_hand', 'payload.mass': MASS, 'payload.inertia': beyond}
        )


def test_defaults_are_no_payload_and_values_read_back():
    robot = fresh('panda')
    assert parse_payload(robot, {}) == NO_PAYLOAD
    assert NO_PAYLOAD.dynamic_parameters(robot) == {}
    payload = Payload.create(robot, 'panda_hand', MASS, CENTER, INERTIA)
    assert parse_payload(robot, payload_values(payload)) == payload
    # a massless payload on a frame is accepted and adds nothing
    assert Payload.create(robot, 'panda_hand', 0.0).dynamic_parameters(robot) == {}
