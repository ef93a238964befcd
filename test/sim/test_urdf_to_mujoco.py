"""URDF -> MuJoCo conversion: Pinocchio's dynamics options, meshes, inertias, bad input."""

from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
import mujoco
import numpy as np
import pinocchio as pin
import pytest
from sim_support import make_simulation, mass_matrix, set_pinocchio_state, write_small_urdf

from wbc_control.exceptions import InvalidValue, ModelError
from wbc_control.model.example_robots import example_robot_urdf, robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.urdf_to_mujoco import MujocoOptions, build_mujoco_robot, resolve_mesh_uri


@pytest.fixture
def small_urdf(tmp_path: Path) -> Path:
    return write_small_urdf(tmp_path)


def test_dynamics_options_default_to_pinocchio() -> None:
    model = make_simulation('panda').model
    assert not model.dof_damping.any()
    assert not model.dof_armature.any()
    assert not model.dof_frictionloss.any()
    assert model.neq == 0  # the finger <mimic> is independent, as in Pinocchio
    np.testing.assert_allclose(model.opt.gravity, [0.0, 0.0, -9.81])
    assert model.opt.timestep == 0.001


def test_options_are_validated() -> None:
    with pytest.raises(InvalidValue):
        MujocoOptions(gravity_m_s2=(0.0, -9.81))
    with pytest.raises(InvalidValue):
        MujocoOptions(timestep_s=0.0)


def test_package_uris_resolve_to_example_robot_data() -> None:
    uri = 'package://example-robot-data/robots/panda_description/meshes/collision/link0.stl'
    path = resolve_mesh_uri(uri, Path.cwd())
    assert path is not None and path.is_file()
    assert path == (robots_directory() / 'panda_description/meshes/collision/link0.stl').resolve()
    assert resolve_mesh_uri('package://no_such_package/mesh.stl', Path.cwd()) is None


def test_collision_meshes_are_loaded() -> None:
    path, _ = example_robot_urdf('panda')
    mujoco_robot = build_mujoco_robot(path.read_text(), urdf_directory=path.parent)
    assert mujoco_robot.dropped_meshes == ()
    assert mujoco_robot.model.nmesh > 0


def test_collada_visuals_are_dropped_and_listed() -> None:
    path, _ = example_robot_urdf('panda')
    options = MujocoOptions(keep_visual=True)
    dropped = build_mujoco_robot(path.read_text(), options, path.parent).dropped_meshes
    assert dropped
    assert {mesh.element for mesh in dropped} == {'visual'}
    assert all(mesh.uri.endswith('.dae') and 'decode' in mesh.reason for mesh in dropped)


def test_unreadable_meshes_are_dropped_not_fatal(small_urdf: Path) -> None:
    mujoco_robot = build_mujoco_robot(small_urdf.read_text(), urdf_directory=small_urdf.parent)
    reasons = {Path(mesh.uri).name: mesh.reason for mesh in mujoco_robot.dropped_meshes}
    assert set(reasons) == {'link0.dae', 'part.stl'}  # the collada collision, the missing file
    assert 'decode' in reasons['link0.dae']
    assert 'not found' in reasons['part.stl']
    assert mujoco_robot.model.nmesh == 1  # the relative path resolved against the URDF


def test_malformed_urdf_is_a_model_error() -> None:
    with pytest.raises(ModelError):
        build_mujoco_robot('<robot name="x"><link name="a"/>')
    with pytest.raises(ModelError):
        build_mujoco_robot('<sdf/>')


#: Three moving links: a placeholder whose tensor has rank 1 (as example-robot-data's Go1 base),
#: one whose largest principal moment exceeds the other two together, one a rigid body can be.
INERTIAS_URDF = """<robot name="inertias">
  <link name="world_link"/>
  <link name="placeholder">
    <inertial><mass value="1e-6"/>
      <inertia ixx="1e-6" ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6" izz="1e-6"/></inertial>
  </link>
  <link name="impossible">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.05"/></inertial>
  </link>
  <link name="valid">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>
  </link>
  <joint name="a" type="revolute"><parent link="world_link"/><child link="placeholder"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="b" type="revolute"><parent link="placeholder"/><child link="impossible"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="c" type="revolute"><parent link="impossible"/><child link="valid"/>
    <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def body_inertia(mujoco_robot, link: str) -> np.ndarray:
    """The principal moments MuJoCo simulates for `link`'s body, ascending."""
    model = mujoco_robot.model
    return np.sort(model.body_inertia[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, link)])


def test_inertias_no_rigid_body_has_are_replaced_by_the_nearest_valid_and_listed() -> None:
    """MuJoCo refuses these two tensors (Pinocchio takes them).

    Each becomes the nearest tensor with A + B >= C: the moments move by d/3 (1, 1, -1), d = C -
    A - B (0 + 0 < 3e-6: d = 3e-6; 0.01 + 0.01 < 0.05: d = 0.03).
    """
    with pytest.raises(ValueError, match='inertia'):
        mujoco.MjSpec.from_string(INERTIAS_URDF).compile()
    mujoco_robot = build_mujoco_robot(INERTIAS_URDF)
    adjusted = {change.link: change for change in mujoco_robot.adjusted_inertias}
    assert set(adjusted) == {'placeholder', 'impossible'}
    np.testing.assert_allclose(adjusted['placeholder'].principal_moments, [0, 0, 3e-6], atol=1e-18)
    expected = {'placeholder': [1e-6, 1e-6, 2e-6], 'impossible': [0.02, 0.02, 0.04]}
    for link, moments in expected.items():
        np.testing.assert_allclose(adjusted[link].simulated, moments, rtol=1e-5)
        np.testing.assert_allclose(body_inertia(mujoco_robot, link), moments, rtol=1e-5)
    assert 'placeholder' in str(adjusted['placeholder'])
    valid = np.linalg.eigvalsh([[0.02, 0.001, 0.0], [0.001, 0.03, 0.0], [0.0, 0.0, 0.04]])
    np.testing.assert_allclose(body_inertia(mujoco_robot, 'valid'), valid, rtol=1e-12)


def test_go1_is_simulated_with_its_placeholder_base_made_a_rigid_body() -> None:
    """example-robot-data's Go1: MuJoCo refused its 1e-6 kg base link's tensor (rank 1)."""
    path = robots_directory() / 'go1_description/urdf/go1.urdf'
    robot = RobotModel.from_urdf_path(path, floating_base=True)
    mujoco_robot = build_mujoco_robot(
        path.read_text(), MujocoOptions(floating_base=True, ground_plane=True), path.parent
    )
    assert [change.link for change in mujoco_robot.adjusted_inertias] == ['base']
    simulation = MujocoSimulation(robot, mujoco_robot)
    q = pin.neutral(robot.model)
    set_pinocchio_state(simulation, q, np.zeros(robot.nv))
    upper = pin.crba(robot.model, robot.model.createData(), q)
    expected = np.triu(upper) + np.triu(upper, 1).T
    # The simulated base differs from the placeholder's tensor by 1e-6 kg m² at most.
    np.testing.assert_allclose(mass_matrix(simulation), expected, rtol=0.0, atol=2e-6)


#: A moving point mass, a point mass welded to it (fused into it: left alone), and a moving
#: link with neither mass nor inertia (MuJoCo's error, as before). Rounding around zero, as
#: in iCub's r_hip_2 (-5.4e-20): MuJoCo refuses it as a tensor without positive eigenvalues.
POINT_MASSES_URDF = """<robot name="point_masses">
  <link name="world_link"/>
  <link name="point"><inertial><mass value="0.5"/><origin xyz="0 0 0.03"/>
    <inertia ixx="-5.4e-20" ixy="0" ixz="0" iyy="-5.4e-20" iyz="0" izz="0"/></inertial></link>
  <link name="welded"><inertial><mass value="0.1"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="a" type="revolute"><parent link="world_link"/><child link="point"/>
    <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="w" type="fixed"><parent link="point"/><child link="welded"/>
    <origin xyz="0 0.1 0"/></joint>
</robot>
"""


def test_moving_point_masses_get_the_smallest_moment_and_welded_ones_are_left() -> None:
    """A link with mass and a zero tensor in a moving body: 1e-12 kg m² about each axis."""
    with pytest.raises(ValueError, match='inertia'):
        mujoco.MjSpec.from_string(POINT_MASSES_URDF).compile()
    mujoco_robot = build_mujoco_robot(POINT_MASSES_URDF)
    (adjusted,) = mujoco_robot.adjusted_inertias
    assert adjusted.link == 'point'
    np.testing.assert_allclose(adjusted.simulated, [1e-12] * 3, rtol=1e-9)
    # The fused body: the welded 0.1 kg point mass 0.1 m along y adds 0.1 * 0.1² about x.
    model = mujoco_robot.model
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, 'point')
    assert model.body_mass[body] == pytest.approx(0.6)
    massless = POINT_MASSES_URDF.replace('-5.4e-20', '0').replace('value="0.5"', 'value="0"')
    massless = massless.replace('value="0.1"', 'value="0"')
    with pytest.raises(ModelError, match='mass and inertia'):
        build_mujoco_robot(massless)


def test_icub_is_simulated_with_its_point_masses() -> None:
    """example-robot-data's iCub, which MuJoCo refused, simulated with Pinocchio's M(q).

    Its hips, ankles, legs, wrists and head (0.1 to 2.2 kg) have zero tensors or rounding
    around zero (-5.4e-20 kg m²): MuJoCo said 'inertia must have positive eigenvalues'. They
    are given 1e-12 kg m², the tolerance below.
    """
    path = robots_directory() / 'icub_description/robots/icub_reduced.urdf'
    robot = RobotModel.from_urdf_path(path, floating_base=True)
    mujoco_robot = build_mujoco_robot(
        path.read_text(), MujocoOptions(floating_base=True), path.parent
    )
    links = {change.link for change in mujoco_robot.adjusted_inertias}
    assert {'r_hip_1', 'r_hip_2', 'l_ankle_2', 'r_upper_leg'} <= links
    simulation = MujocoSimulation(robot, mujoco_robot)
    q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
    q[:7] = [0.1, -0.2, 0.6, 0.0, 0.0, 0.0, 1.0]
    set_pinocchio_state(simulation, q, np.zeros(robot.nv))
    upper = pin.crba(robot.model, robot.model.createData(), q)
    expected = np.triu(upper) + np.triu(upper, 1).T
    np.testing.assert_allclose(mass_matrix(simulation), expected, rtol=0.0, atol=1e-10)


def test_panda_inertias_are_kept() -> None:
    path, _ = example_robot_urdf('panda')
    assert build_mujoco_robot(path.read_text(), urdf_directory=path.parent).adjusted_inertias == ()


def one_link_urdf(tensor: np.ndarray) -> str:
    """A one-joint robot whose moving link has the inertia `tensor` (3, 3)."""
    entries = dict(
        zip(('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'), tensor[np.triu_indices(3)], strict=True)
    )
    inertia = ' '.join(f'{name}="{float(value)!r}"' for name, value in entries.items())
    return f"""<robot name="one"><link name="base"/>
  <link name="body"><inertial><mass value="1.0"/><inertia {inertia}/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="body"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


@settings(max_examples=200, deadline=None)
@given(
    moments=arrays(np.float64, 3, elements=st.floats(-1.0, 1.0)),
    scale=st.sampled_from([1e-8, 1e-6, 1e-3, 1.0]),
    rotation=arrays(np.float64, 4, elements=st.floats(-1.0, 1.0)).filter(
        lambda q: np.linalg.norm(q) > 0.1
    ),
)
def test_any_tensor_with_a_positive_moment_compiles(moments, scale, rotation) -> None:
    """Random principal moments in random axes (TIAGo's antenna: -3.5e-8, 3.5e-8, 9.1e-8).

    The link moves and has mass: without a positive moment it is a point mass (1e-12 kg m²).
    """
    axes = pin.Quaternion(*(rotation / np.linalg.norm(rotation))).toRotationMatrix()
    tensor = (axes * (moments * scale)) @ axes.T
    mujoco_robot = build_mujoco_robot(one_link_urdf(tensor))
    simulated = np.sort(body_inertia(mujoco_robot, 'body'))
    assert simulated[0] > 0.0 and simulated[0] + simulated[1] >= simulated[2] * (1 - 1e-12)
    smallest, middle, largest = np.sort(moments * scale)
    # At the thresholds rounding in the rotation decides: no claim there.
    assume(abs(smallest - 1e-12) > 1e-14 and abs(smallest + middle - largest) > 1e-9 * largest)
    valid = smallest >= 1e-12 and smallest + middle >= largest
    assert bool(mujoco_robot.adjusted_inertias) != valid


def test_ascii_stl_meshes_are_dropped_and_listed(tmp_path: Path) -> None:
    """MuJoCo reads binary STL only (example-robot-data's simple_humanoid ships an ASCII one)."""
    (tmp_path / 'ascii.stl').write_text(
        'solid part\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n'
        'vertex 0 1 0\nendloop\nendfacet\nendsolid part\n'
    )
    binary = robots_directory() / 'panda_description/meshes/collision/link0.stl'
    urdf = one_link_urdf(np.diag([0.01, 0.02, 0.02])).replace(
        '<inertial>',
        '<collision><geometry><mesh filename="ascii.stl"/></geometry></collision>'
        f'<collision><geometry><mesh filename="{binary}"/></geometry></collision><inertial>',
    )
    mujoco_robot = build_mujoco_robot(urdf, urdf_directory=tmp_path)
    (dropped,) = mujoco_robot.dropped_meshes
    assert dropped.uri == 'ascii.stl' and 'ASCII' in dropped.reason
    assert mujoco_robot.model.nmesh == 1  # the binary one
