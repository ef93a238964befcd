"""URDF -> MuJoCo model, with the dynamics Pinocchio computes from the same URDF.

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

With this, M(q) and the bias forces agree with Pinocchio to rounding error. One exception: an
inertia tensor no rigid body can have (a principal moment not positive, or one larger than the
other two together), which Pinocchio takes and MuJoCo refuses, is simulated as the nearest
tensor a rigid body can have and listed in :attr:`MujocoRobot.adjusted_inertias`
(example-robot-data's Go1, B1, ANYmal, HyQ, TIAGo and finger_edu have some: placeholder links
of 1e-6 kg whose tensor has rank 1, camera links whose largest moment is twice the others').
Joint position limits stay as MuJoCo limit constraints (hard stops); URDF effort limits do not
clip anything.

Meshes. `package://` URIs are resolved against example-robot-data, `AMENT_PREFIX_PATH` and
`ROS_PACKAGE_PATH`; `file://` and relative paths against the URDF's directory. Meshes MuJoCo cannot
decode (anything but .stl, .obj, .msh, e.g. COLLADA .dae; ASCII STL) or cannot find are dropped
with their `<visual>` / `<collision>` element and listed in :attr:`MujocoRobot.dropped_meshes`.
Visual geometry is stripped unless `keep_visual=True`; collision geometry is what touches the
ground. Robot geometry collides with the ground plane only, unless `self_collision=True`.

Flat feet. MuJoCo touches a plane with a convex mesh at no more than 3 points, all near its
lowest vertex, so a mesh sole (e.g. Talos's ankle mesh) stands on a small patch at the heel,
not on its whole sole. For the links listed in `box_collision_links` every collision mesh is
replaced by its bounding box in the link frame, which touches a plane at its 4 corners.

Floating base. A free joint named `floating_base` is added to the root link.

This module needs the optional dependency `mujoco`; it never imports rclpy.
"""

from collections.abc import Sequence
from dataclasses import dataclass
import os
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlparse
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

from wbc_control.exceptions import InvalidValue, ModelError
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.urdf_xml import parse_urdf
from wbc_control.sim.rigid_body_inertia import AdjustedInertia, rigid_body_inertia

#: Mesh file suffixes MuJoCo decodes (compared case-insensitively).
SUPPORTED_MESH_SUFFIXES = frozenset({'.stl', '.obj', '.msh'})
GROUND_PLANE_NAME = 'ground_plane'
FREE_JOINT_NAME = 'floating_base'


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
        ground_friction: the sliding friction coefficient of the ground and of every robot
            geometry (MuJoCo takes the larger of two touching geoms'; 1 is its default).
    """

    floating_base: bool = False
    ground_plane: bool = False
    gravity_m_s2: tuple[float, float, float] = (0.0, 0.0, -9.81)
    timestep_s: float = 0.001
    self_collision: bool = False
    keep_visual: bool = False
    urdf_joint_dynamics: bool = False
    box_collision_links: tuple[str, ...] = ()
    ground_friction: float = 1.0

    def __post_init__(self) -> None:
        gravity = np.asarray(self.gravity_m_s2, dtype=float)
        if gravity.shape != (3,) or not np.isfinite(gravity).all():
            raise InvalidValue(f'gravity needs 3 finite values, got {self.gravity_m_s2!r}')
        if not (np.isfinite(self.ground_friction) and self.ground_friction >= 0.0):
            raise InvalidValue(
                f'ground_friction must be a finite number >= 0, got {self.ground_friction!r}'
            )
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
        adjusted_inertias: inertia tensors replaced because MuJoCo refuses them.
    """

    model: mujoco.MjModel
    root_link: str
    floating_base: bool
    dropped_meshes: tuple[DroppedMesh, ...]
    adjusted_inertias: tuple[AdjustedInertia, ...] = ()


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
    prepared, root_link, dropped, adjusted = prepare_urdf(urdf_xml, directory, options.keep_visual)
    try:
        spec = mujoco.MjSpec.from_string(prepared)
    except ValueError as error:
        raise ModelError(f'MuJoCo cannot read the URDF: {error}') from error
    _configure_spec(spec, root_link, options)
    model = _compile(spec)
    if options.box_collision_links:
        _replace_meshes_by_boxes(spec, model, options.box_collision_links)
        model = _compile(spec)
    return MujocoRobot(model, root_link, options.floating_base, tuple(dropped), tuple(adjusted))


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


def mesh_vertices(model: mujoco.MjModel, geom: int) -> np.ndarray:
    """A mesh geom's vertices in the geom frame, `(count, 3)` (a view of the model's)."""
    mesh = model.geom_dataid[geom]
    start, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
    return model.mesh_vert[start : start + count]


def _mesh_bounds(model: mujoco.MjModel, geom: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corner of a mesh geom's vertices in its body frame."""
    rotation = np.zeros(9)
    mujoco.mju_quat2Mat(rotation, model.geom_quat[geom])
    vertices = mesh_vertices(model, geom) @ rotation.reshape(3, 3).T
    vertices += model.geom_pos[geom]
    return vertices.min(axis=0), vertices.max(axis=0)


def prepare_urdf(
    urdf_xml: str, urdf_directory: Path, keep_visual: bool = False
) -> tuple[str, str, list[DroppedMesh], list[AdjustedInertia]]:
    """Rewrite a URDF for MuJoCo's parser.

    Resolves mesh URIs to absolute paths, drops geometry whose mesh MuJoCo cannot load, strips
    visual geometry unless `keep_visual`, removes `<mimic>`, replaces the inertia tensors MuJoCo
    refuses and sets the compiler options listed in the module docstring.

    Returns:
        The rewritten XML, the root link name, the dropped meshes and the adjusted inertias.

    Raises:
        ModelError: the XML is not a URDF.
    """
    robot = parse_urdf(urdf_xml)
    root_link = _root_link(robot)
    dropped: list[DroppedMesh] = []
    moving = {root_link} | {
        child.get('link')
        for joint in robot.iter('joint')
        if joint.get('type') != 'fixed' and (child := joint.find('child')) is not None
    }
    changes = (rigid_body_inertia(link, link.get('name') in moving) for link in robot.iter('link'))
    adjusted = [change for change in changes if change is not None]
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
    return ET.tostring(robot, encoding='unicode'), root_link, dropped, adjusted


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
    if path.suffix.lower() == '.stl' and not _binary_stl(path):
        return uri, 'MuJoCo cannot decode ASCII STL meshes'
    mesh.set('filename', str(path))
    return None


def _binary_stl(path: Path) -> bool:
    """Whether an STL file is binary: 80 header bytes, a triangle count n, then 50 n bytes."""
    size = path.stat().st_size
    with path.open('rb') as stream:
        header = stream.read(84)
    return len(header) == 84 and size == 84 + 50 * int.from_bytes(header[80:84], 'little')


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
        base.add_freejoint(name=FREE_JOINT_NAME)
    if options.ground_plane:
        spec.worldbody.add_geom(
            name=GROUND_PLANE_NAME,
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[0.0, 0.0, 0.05],
            contype=1,
            conaffinity=1,
            rgba=[0.6, 0.6, 0.6, 1.0],
        )
        for geom in spec.geoms:  # the ground's and the robot's: MuJoCo uses the larger
            geom.friction[0] = options.ground_friction
        spec.worldbody.add_light(pos=[0.0, 0.0, 5.0], dir=[0.0, 0.0, -1.0])
