"""MuJoCo model of a URDF robot, with the joint conventions of :class:`RobotModel`.

The simulator must integrate the same rigid-body dynamics the controller models, so the URDF is
converted with every MuJoCo convenience that would change them turned off:

- inertias come from the URDF `<inertial>` elements only (`inertiafromgeom="false"`), never from
  the geometry, and are not "balanced" (`balanceinertia="false"`);
- joint armature, damping and dry friction are 0 (Pinocchio's M(q) and h(q, v) have none; URDF
  `<dynamics>` can be kept with `urdf_joint_dynamics=True`);
- `<mimic>` tags are dropped, because Pinocchio's default URDF parser treats mimic joints as
  independent ones, so MuJoCo must not add the equality constraint;
- links attached by fixed joints are fused into their parent (`fusestatic`), which changes no
  inertia and removes massless static bodies.

With this, M(q) and the bias forces agree with Pinocchio to rounding error (see
test/test_mujoco_model.py). Joint position limits stay as MuJoCo limit constraints (hard stops);
URDF effort limits do not clip anything: torques enter through `qfrc_applied` as commanded.

Meshes. `package://` URIs are resolved against example-robot-data, `AMENT_PREFIX_PATH` and
`ROS_PACKAGE_PATH`; `file://` and relative paths against the URDF's directory. Meshes MuJoCo cannot
decode (anything but .stl, .obj, .msh, e.g. COLLADA .dae) or cannot find are dropped with their
`<visual>` / `<collision>` element and listed in :attr:`MujocoRobot.dropped_meshes`. Visual
geometry is stripped unless `keep_visual=True`; collision geometry is what touches the ground.
Robot geometry collides with the ground plane only, unless `self_collision=True`.

Flat feet. MuJoCo touches a plane with a convex mesh at no more than 3 points, all near its
lowest vertex, so a mesh sole (e.g. Talos's ankle mesh) stands on a small patch at the heel,
not on its whole sole. For the links listed in `box_collision_links` every collision mesh is
replaced by its bounding box in the link frame, which touches a plane at its 4 corners.

Floating base. A free joint is added to the root link. MuJoCo's free-joint velocity is
(linear velocity of the body origin in the *world* frame, angular velocity in the *body* frame),
while Pinocchio's free-flyer velocity has both parts in the body frame:
v_mujoco = T v_pinocchio with T = blockdiag(R, I₃, I). :class:`MujocoSimulation` converts, so
everything it returns is in Pinocchio / nav_msgs conventions (quaternion xyzw, twist in the base
frame).

This module needs the optional dependency `mujoco`; it never imports rclpy.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
import os
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlparse
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidValue, ModelError
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import FREE_FLYER_NQ, FREE_FLYER_NV, RobotModel

#: Mesh file suffixes MuJoCo decodes (compared case-insensitively).
SUPPORTED_MESH_SUFFIXES = frozenset({'.stl', '.obj', '.msh'})
GROUND_PLANE_NAME = 'ground_plane'
_ROBOT_COLLISION_GROUP = 0
_FREE_JOINT_NAME = 'floating_base'


class DroppedMesh(NamedTuple):
    """A URDF geometry element removed because MuJoCo cannot load its mesh."""

    link: str
    element: str  # 'visual' or 'collision'
    uri: str
    reason: str

    def __str__(self) -> str:
        return f'{self.link}/{self.element}: {self.uri} ({self.reason})'


@dataclass(frozen=True)
class MujocoOptions:
    """How to build the MuJoCo model.

    Attributes:
        floating_base: add a free joint to the root link.
        ground_plane: add an infinite plane z = 0 to the world.
        gravity_m_s2: gravity vector in the world frame.
        timestep_s: physics step.
        self_collision: let robot geometry collide with itself (otherwise with the ground only).
        keep_visual: keep loadable visual meshes (for the viewer); they never collide.
        urdf_joint_dynamics: keep URDF joint damping and friction (off: dynamics match Pinocchio).
        box_collision_links: links whose collision meshes become their bounding box (flat feet).
    """

    floating_base: bool = False
    ground_plane: bool = False
    gravity_m_s2: tuple[float, float, float] = (0.0, 0.0, -9.81)
    timestep_s: float = 0.001
    self_collision: bool = False
    keep_visual: bool = False
    urdf_joint_dynamics: bool = False
    box_collision_links: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        gravity = np.asarray(self.gravity_m_s2, dtype=float)
        if gravity.shape != (3,) or not np.isfinite(gravity).all():
            raise InvalidValue(f'gravity needs 3 finite values, got {self.gravity_m_s2!r}')
        if not (np.isfinite(self.timestep_s) and self.timestep_s > 0.0):
            raise InvalidValue(
                f'timestep must be a positive number of seconds, got {self.timestep_s!r}'
            )


@dataclass(frozen=True)
class MujocoRobot:
    """A compiled MuJoCo model of a URDF robot.

    Attributes:
        model: the MuJoCo model.
        root_link: name of the URDF root link (the body carrying the free joint, if any).
        floating_base: whether the root link has a free joint.
        dropped_meshes: geometry removed because its mesh could not be loaded.
    """

    model: mujoco.MjModel
    root_link: str
    floating_base: bool
    dropped_meshes: tuple[DroppedMesh, ...]


def build_mujoco_robot(
    urdf_xml: str,
    options: MujocoOptions = MujocoOptions(),
    urdf_directory: str | Path | None = None,
) -> MujocoRobot:
    """Compile a MuJoCo model from URDF XML.

    Args:
        urdf_xml: the URDF (the ROS `robot_description`).
        options: conversion options.
        urdf_directory: base of relative mesh paths (default: the working directory).

    Raises:
        ModelError: the URDF cannot be parsed or MuJoCo refuses the model (the message says why,
            e.g. a moving link without mass, which Pinocchio accepts but MuJoCo does not).
    """
    directory = Path(urdf_directory) if urdf_directory is not None else Path.cwd()
    prepared, root_link, dropped = prepare_urdf(urdf_xml, directory, options.keep_visual)
    try:
        spec = mujoco.MjSpec.from_string(prepared)
    except ValueError as error:
        raise ModelError(f'MuJoCo cannot read the URDF: {error}') from error
    _configure_spec(spec, root_link, options)
    model = _compile(spec)
    if options.box_collision_links:
        _replace_meshes_by_boxes(spec, model, options.box_collision_links)
        model = _compile(spec)
    return MujocoRobot(model, root_link, options.floating_base, tuple(dropped))


def _compile(spec: mujoco.MjSpec) -> mujoco.MjModel:
    try:
        return spec.compile()
    except ValueError as error:
        raise ModelError(f'MuJoCo cannot compile the URDF: {error}') from error


def _replace_meshes_by_boxes(
    spec: mujoco.MjSpec, model: mujoco.MjModel, links: Sequence[str]
) -> None:
    """Turn the collision meshes of `links` into their bounding boxes in the link frame."""
    boxes: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {link: [] for link in links}
    for geom in range(model.ngeom):
        body = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.geom_bodyid[geom])
        if body in boxes and model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_MESH:
            boxes[body].append(_mesh_bounds(model, geom))
    empty = [link for link, bounds in boxes.items() if not bounds]
    if empty:
        raise ModelError(
            f'box_collision_links: {", ".join(empty)} has no collision mesh (after fusing '
            'fixed joints into their parent link)'
        )
    for geom in spec.geoms:
        bounds = boxes.get(geom.parent.name)
        if bounds and geom.type == mujoco.mjtGeom.mjGEOM_MESH:
            lower, upper = bounds.pop(0)
            geom.type = mujoco.mjtGeom.mjGEOM_BOX
            geom.meshname = ''
            geom.size = (upper - lower) / 2.0
            geom.pos = (upper + lower) / 2.0
            geom.quat = [1.0, 0.0, 0.0, 0.0]


def _mesh_bounds(model: mujoco.MjModel, geom: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corner of a mesh geom's vertices in its body frame."""
    mesh = model.geom_dataid[geom]
    start, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
    rotation = np.zeros(9)
    mujoco.mju_quat2Mat(rotation, model.geom_quat[geom])
    vertices = model.mesh_vert[start : start + count] @ rotation.reshape(3, 3).T
    vertices += model.geom_pos[geom]
    return vertices.min(axis=0), vertices.max(axis=0)


def prepare_urdf(
    urdf_xml: str, urdf_directory: Path, keep_visual: bool = False
) -> tuple[str, str, list[DroppedMesh]]:
    """Rewrite a URDF for MuJoCo's parser.

    Resolves mesh URIs to absolute paths, drops geometry whose mesh MuJoCo cannot load, strips
    visual geometry unless `keep_visual`, removes `<mimic>` and sets the compiler options listed
    in the module docstring.

    Returns:
        The rewritten XML, the root link name and the dropped meshes.

    Raises:
        ModelError: the XML is not a URDF.
    """
    try:
        robot = ET.fromstring(urdf_xml)
    except ET.ParseError as error:
        raise ModelError(f'cannot parse the URDF: {error}') from error
    if robot.tag != 'robot':
        raise ModelError(f"the URDF's root element is <{robot.tag}>, not <robot>")
    root_link = _root_link(robot)
    dropped: list[DroppedMesh] = []
    package_roots = package_search_roots()
    for link in robot.iter('link'):
        for element in list(link):
            if element.tag == 'visual' and not keep_visual:
                link.remove(element)
            elif element.tag in ('visual', 'collision'):
                problem = _resolve_geometry(element, urdf_directory, package_roots)
                if problem is not None:
                    dropped.append(DroppedMesh(link.get('name', ''), element.tag, *problem))
                    link.remove(element)
    for joint in robot.iter('joint'):
        for mimic in joint.findall('mimic'):
            joint.remove(mimic)
    for existing in robot.findall('mujoco'):
        robot.remove(existing)
    extension = ET.SubElement(robot, 'mujoco')
    ET.SubElement(
        extension,
        'compiler',
        {
            'strippath': 'false',
            'discardvisual': 'false',
            'fusestatic': 'true',
            'inertiafromgeom': 'false',
            'balanceinertia': 'false',
            'autolimits': 'true',
            'angle': 'radian',
        },
    )
    return ET.tostring(robot, encoding='unicode'), root_link, dropped


def resolve_mesh_uri(
    uri: str, urdf_directory: Path, package_roots: Sequence[Path] | None = None
) -> Path | None:
    """Absolute path of a URDF mesh URI (`package://`, `file://` or a path), None if not found.

    `package://NAME/rest` is looked up as `ROOT/NAME/rest` for every root in `package_roots`
    (default: :func:`package_search_roots`).
    """
    parsed = urlparse(uri)
    if parsed.scheme == 'package':
        roots = package_search_roots() if package_roots is None else package_roots
        relative = Path(unquote(parsed.netloc)) / unquote(parsed.path).lstrip('/')
        candidates = [root / relative for root in roots]
    elif parsed.scheme == 'file':
        candidates = [Path(unquote(parsed.path))]
    else:
        path = Path(uri)
        candidates = [path if path.is_absolute() else urdf_directory / path]
    return next((candidate.resolve() for candidate in candidates if candidate.is_file()), None)


def package_search_roots() -> list[Path]:
    """Directories that contain ROS packages by name (`ROOT/<package>/...`).

    example-robot-data's share directory parent first (its URDFs say
    `package://example-robot-data/robots/...`), then `<prefix>/share` of every
    `AMENT_PREFIX_PATH` entry, then every `ROS_PACKAGE_PATH` entry and its parent.
    """
    roots: list[Path] = []
    try:
        roots.append(robots_directory().parent.parent)
    except ModelError:
        pass
    for prefix in _environment_paths('AMENT_PREFIX_PATH'):
        roots.append(prefix / 'share')
    for entry in _environment_paths('ROS_PACKAGE_PATH'):
        roots += [entry, entry.parent]
    return list(dict.fromkeys(roots))


def _environment_paths(variable: str) -> list[Path]:
    return [Path(entry) for entry in os.environ.get(variable, '').split(os.pathsep) if entry]


def _resolve_geometry(
    element: ET.Element, urdf_directory: Path, package_roots: Sequence[Path]
) -> tuple[str, str] | None:
    """Point a visual/collision mesh at its absolute file; (uri, reason) when it cannot be."""
    mesh = element.find('geometry/mesh')
    if mesh is None:
        return None
    uri = mesh.get('filename', '')
    path = resolve_mesh_uri(uri, urdf_directory, package_roots)
    if path is None:
        return uri, 'file not found'
    if path.suffix.lower() not in SUPPORTED_MESH_SUFFIXES:
        return uri, f'MuJoCo cannot decode {path.suffix} meshes'
    mesh.set('filename', str(path))
    return None


def _root_link(robot: ET.Element) -> str:
    links = [link.get('name', '') for link in robot.findall('link')]
    children = {child.get('link') for child in robot.findall('joint/child')}
    roots = [name for name in links if name not in children]
    if len(roots) != 1:
        raise ModelError(f'the URDF needs exactly one root link, found {roots or "none"}')
    return roots[0]


def _configure_spec(spec: mujoco.MjSpec, root_link: str, options: MujocoOptions) -> None:
    spec.option.timestep = options.timestep_s
    spec.option.gravity = np.asarray(options.gravity_m_s2, dtype=float)
    for joint in spec.joints:
        joint.armature = 0.0
        if not options.urdf_joint_dynamics:
            joint.damping = np.zeros_like(joint.damping)
            joint.frictionloss = 0.0
    robot_affinity = 1 if options.self_collision else 0
    for geom in spec.geoms:
        if geom.contype or geom.conaffinity:
            geom.contype, geom.conaffinity = 1, robot_affinity
    if options.floating_base:
        base = spec.body(root_link)
        if base is None or root_link == 'world':
            raise ModelError(f"root link '{root_link}' cannot carry a floating base")
        base.add_freejoint(name=_FREE_JOINT_NAME)
    if options.ground_plane:
        spec.worldbody.add_geom(
            name=GROUND_PLANE_NAME,
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[0.0, 0.0, 0.05],
            contype=1,
            conaffinity=1,
            rgba=[0.6, 0.6, 0.6, 1.0],
        )
        spec.worldbody.add_light(pos=[0.0, 0.0, 5.0], dir=[0.0, 0.0, -1.0])


class JointAddresses(NamedTuple):
    """Where each actuated joint (in :class:`RobotModel` order) lives in MuJoCo's arrays."""

    qpos: np.ndarray  # (n_act,) qpos address
    dof: np.ndarray  # (n_act,) qvel / qfrc address
    continuous: np.ndarray  # (c,) positions in actuated order of continuous joints


class MujocoSimulation:
    """A MuJoCo model and data exchanged in the controller's conventions.

    Joint vectors are in the actuated-joint order of the :class:`RobotModel` built from the same
    URDF; continuous joints are angles wrapped to [-π, π). The base pose is (xyz, quaternion
    xyzw) in the world frame and the base twist (linear, angular) is in the base frame.
    """

    def __init__(self, robot: RobotModel, mujoco_robot: MujocoRobot) -> None:
        if robot.floating_base != mujoco_robot.floating_base:
            raise ModelError('the Pinocchio and MuJoCo models disagree about the floating base')
        self.robot = robot
        self.model = mujoco_robot.model
        self.data = mujoco.MjData(self.model)
        self.root_link = mujoco_robot.root_link
        self.joints = _joint_addresses(self.model, robot)
        self._base_body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, self.root_link)
        self._base_qpos, self._base_dof = self._free_joint_addresses()
        self._pinocchio_dofs = self._pinocchio_dof_order()
        self.applied_torque = np.zeros(robot.n_actuated)
        mujoco.mj_forward(self.model, self.data)

    @property
    def time_s(self) -> float:
        """Simulated time since the last reset."""
        return float(self.data.time)

    @property
    def timestep_s(self) -> float:
        """Physics step."""
        return float(self.model.opt.timestep)

    def reset(
        self,
        joint_positions: npt.ArrayLike | None = None,
        base_pose: npt.ArrayLike | None = None,
    ) -> None:
        """Reset time to 0, velocities and torques to 0, and set the configuration.

        Args:
            joint_positions: actuated order; default zeros.
            base_pose: xyz + quaternion xyzw (floating base only); default identity.
        """
        mujoco.mj_resetData(self.model, self.data)
        positions = np.zeros(self.robot.n_actuated) if joint_positions is None else joint_positions
        positions = _vector(positions, self.robot.n_actuated, 'joint positions')
        self.data.qpos[self.joints.qpos] = positions
        if self._base_qpos is not None:
            pose = _vector(
                (0, 0, 0, 0, 0, 0, 1) if base_pose is None else base_pose,
                FREE_FLYER_NQ,
                'base pose',
            )
            self.data.qpos[self._base_qpos] = _pose_xyzw_to_mujoco(pose)
        elif base_pose is not None:
            raise InvalidValue('a base pose needs a floating base')
        self.applied_torque[:] = 0.0
        self.data.qfrc_applied[:] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def place_on_ground(self, clearance_m: float = 0.001) -> float:
        """Lift or lower the floating base so that its lowest collision geometry touches z = 0.

        Uses bounding boxes, so the robot may start a few millimetres high and settle. Returns
        the base height.
        """
        if self._base_qpos is None:
            raise InvalidValue('only a floating base can be placed on the ground')
        mujoco.mj_kinematics(self.model, self.data)
        lowest = _lowest_collision_point(self.model, self.data)
        if np.isfinite(lowest):
            self.data.qpos[self._base_qpos[2]] += clearance_m - lowest
        mujoco.mj_forward(self.model, self.data)
        return float(self.data.qpos[self._base_qpos[2]])

    def apply_torque(self, torque: npt.ArrayLike) -> None:
        """Hold joint torques (actuated order, N·m or N) until the next call; not clipped."""
        torque = _vector(torque, self.robot.n_actuated, 'joint torques')
        if not np.isfinite(torque).all():
            raise InvalidValue('joint torques must be finite')
        self.applied_torque[:] = torque
        self.data.qfrc_applied[self.joints.dof] = torque

    def step(self, count: int = 1) -> None:
        """Advance `count` physics steps with the held torques."""
        mujoco.mj_step(self.model, self.data, nstep=count)

    def joint_positions(self) -> np.ndarray:
        """Actuated joint positions; continuous joints as angles in [-π, π), `(n_act,)`."""
        positions = self.data.qpos[self.joints.qpos]
        wrapped = positions[self.joints.continuous]
        positions[self.joints.continuous] = np.mod(wrapped + np.pi, 2.0 * np.pi) - np.pi
        return positions

    def joint_velocities(self) -> np.ndarray:
        """Actuated joint velocities, `(n_act,)`."""
        return self.data.qvel[self.joints.dof].copy()

    def base_pose(self) -> np.ndarray:
        """Base position and orientation in the world, (x, y, z, qx, qy, qz, qw)."""
        self._require_floating_base()
        pose = self.data.qpos[self._base_qpos]
        return np.concatenate([pose[:3], pose[4:7], pose[3:4]])

    def base_twist(self) -> np.ndarray:
        """Base (linear, angular) velocity in the base frame, Pinocchio's free-flyer v[:6]."""
        self._require_floating_base()
        velocity = self.data.qvel[self._base_dof]
        rotation_world_base = self._base_rotation()
        return np.concatenate([rotation_world_base.T @ velocity[:3], velocity[3:]])

    def pinocchio_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) for the Pinocchio model of the same URDF."""
        base_pose = self.base_pose() if self._base_qpos is not None else None
        base_twist = self.base_twist() if self._base_qpos is not None else None
        q = self.robot.configuration(self.joint_positions(), base_pose)
        v = self.robot.velocity(self.joint_velocities(), base_twist)
        return q, v

    def set_pinocchio_state(self, q: npt.ArrayLike, v: npt.ArrayLike) -> None:
        """Set MuJoCo's state from Pinocchio's (q, v) and recompute everything derived."""
        q = _vector(q, self.robot.nq, 'q')
        v = _vector(v, self.robot.nv, 'v')
        base_pose = q[:FREE_FLYER_NQ] if self._base_qpos is not None else None
        self.reset(self.robot.joint_positions(q), base_pose)
        velocity = np.zeros(self.model.nv)
        velocity[self._pinocchio_dofs] = v
        if self._base_dof is not None:
            velocity[self._base_dof[:3]] = self._base_rotation() @ v[:3]
        self.data.qvel[:] = velocity
        mujoco.mj_forward(self.model, self.data)

    def mass_matrix(self) -> np.ndarray:
        """M(q) in Pinocchio's velocity coordinates, `(nv, nv)`: Tᵀ M_mujoco T."""
        full = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, self.data, full)
        transform = self._velocity_transform()
        return transform.T @ full @ transform

    def bias_forces(self) -> np.ndarray:
        """h(q, v) = C(q, v) v + g(q) in Pinocchio's coordinates, `(nv,)`.

        MuJoCo's `qfrc_bias` is for its own velocity; with a floating base the world-frame
        linear velocity adds the term M_mujoco c with c = (R (ω × v_base), 0), so that
        h = Tᵀ (qfrc_bias + M_mujoco c).
        """
        full = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, self.data, full)
        bias = self.data.qfrc_bias.copy()
        if self._base_dof is not None:
            twist = self.base_twist()
            drift = np.zeros(self.model.nv)
            drift[self._base_dof[:3]] = self._base_rotation() @ np.cross(twist[3:], twist[:3])
            bias += full @ drift
        return self._velocity_transform().T @ bias

    def acceleration(self) -> np.ndarray:
        """MuJoCo's last forward-dynamics acceleration in Pinocchio's coordinates, `(nv,)`."""
        acceleration = self.data.qacc[self._pinocchio_dofs].copy()
        if self._base_dof is not None:
            twist = self.base_twist()
            linear_world = self.data.qacc[self._base_dof[:3]]
            acceleration[:3] = self._base_rotation().T @ linear_world - np.cross(
                twist[3:], twist[:3]
            )
        return acceleration

    def _velocity_transform(self) -> np.ndarray:
        """T with v_mujoco = T v_pinocchio, `(nv, nv)`, columns in Pinocchio order."""
        transform = np.zeros((self.model.nv, self.model.nv))
        transform[self._pinocchio_dofs, np.arange(self.model.nv)] = 1.0
        if self._base_dof is not None:
            linear = self._base_dof[:3]
            transform[np.ix_(linear, np.arange(3))] = self._base_rotation()
        return transform

    def _base_rotation(self) -> np.ndarray:
        return self.data.xmat[self._base_body].reshape(3, 3).copy()

    def _require_floating_base(self) -> None:
        if self._base_qpos is None:
            raise InvalidValue('the model has a fixed base')

    def _free_joint_addresses(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        free = np.flatnonzero(self.model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)
        if not self.robot.floating_base:
            return None, None
        if free.size != 1:
            raise ModelError(f'expected one free joint, found {free.size}')
        qpos = self.model.jnt_qposadr[free[0]] + np.arange(FREE_FLYER_NQ)
        dof = self.model.jnt_dofadr[free[0]] + np.arange(FREE_FLYER_NV)
        return qpos, dof

    def _pinocchio_dof_order(self) -> np.ndarray:
        """MuJoCo dof address of each Pinocchio velocity coordinate, `(nv,)`."""
        if self.model.nv != self.robot.nv:
            raise ModelError(
                f'MuJoCo has {self.model.nv} degrees of freedom, Pinocchio {self.robot.nv}'
            )
        order = np.empty(self.robot.nv, dtype=int)
        order[self.robot.indices.v] = self.joints.dof
        if self._base_dof is not None:
            order[:FREE_FLYER_NV] = self._base_dof
        return order


def _joint_addresses(model: mujoco.MjModel, robot: RobotModel) -> JointAddresses:
    ids = np.array([_joint_id(model, name) for name in robot.joint_names], dtype=int)
    missing = [name for name, joint_id in zip(robot.joint_names, ids) if joint_id < 0]
    if missing:
        raise ModelError(f'MuJoCo model lacks joint(s) {", ".join(missing)}')
    single = np.isin(
        model.jnt_type[ids], (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
    )
    if not single.all():
        raise ModelError('every actuated joint must be a hinge or slide joint in MuJoCo')
    continuous = np.asarray(robot.indices.continuous_joints, dtype=int)
    return JointAddresses(model.jnt_qposadr[ids], model.jnt_dofadr[ids], continuous)


def _joint_id(model: mujoco.MjModel, name: str) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)


def _lowest_collision_point(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """Lowest world z of the bounding boxes of the robot's colliding geometry."""
    robot = (model.geom_bodyid > 0) & ((model.geom_contype | model.geom_conaffinity) > 0)
    if not robot.any():
        return np.inf
    axis_z = data.geom_xmat[robot, 6:9]  # (g, 3) world z axis in each geom frame
    center, half_size = model.geom_aabb[robot, :3], model.geom_aabb[robot, 3:]
    lowest = (
        data.geom_xpos[robot, 2]
        + np.einsum('gi,gi->g', axis_z, center)
        - np.einsum('gi,gi->g', np.abs(axis_z), half_size)
    )
    return float(lowest.min())


def _pose_xyzw_to_mujoco(pose: np.ndarray) -> np.ndarray:
    quaternion = pose[3:7]
    norm = np.linalg.norm(quaternion)
    if not np.isfinite(norm) or norm < 1e-9:
        raise InvalidValue(f'base orientation quaternion {quaternion.tolist()} has zero norm')
    return np.concatenate([pose[:3], [quaternion[3]], quaternion[:3]]) / np.r_[1, 1, 1, [norm] * 4]


def _vector(values: npt.ArrayLike | Iterable[float], size: int, what: str) -> np.ndarray:
    array = np.array(values, dtype=float).reshape(-1)
    if array.shape != (size,):
        raise InvalidShape(f'expected {size} {what}, got {array.shape[0]}')
    return array
