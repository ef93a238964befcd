"""URDF -> MuJoCo conversion: Pinocchio's dynamics options, mesh resolution, bad input."""

from pathlib import Path

import numpy as np
import pytest
from sim_support import make_simulation, write_small_urdf

from wbc_control.exceptions import InvalidValue, ModelError
from wbc_control.model.example_robots import example_robot_urdf, robots_directory
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
