"""Robot description: URDF -> Pinocchio model and the joint-name <-> index maps.

`RobotModel` is the immutable part (Pinocchio's `Model` plus index tables); the per-tick
workspace lives in :class:`wbc_control.model.robot_state.RobotState`.

Joint conventions. Every actuated joint has one velocity coordinate. Revolute and prismatic
joints have one position coordinate; continuous joints (Pinocchio's unbounded revolute) have two,
(cos θ, sin θ), and are exchanged with the outside world as the angle θ. With a floating base the
first 7 / 6 coordinates of q / v are the free-flyer (position, quaternion xyzw / linear and
angular velocity in the base frame), which matches nav_msgs/Odometry.

Limits. A revolute or prismatic joint whose URDF limits are equal (`lower="0" upper="0"`, what
the SolidWorks URDF exporter writes when no limits are set, with `effort="0"` and
`velocity="0"`) is taken as unlimited in position, as MuJoCo takes it ("equal lower and upper
limits, limit ignored"): held to a zero range, the joint-limit level would pin it and the
joint-state checks would reject every state away from 0. Zero effort and velocity limits are
likewise "none" (:attr:`RobotModel.effort_limits`, the joint-limit level, the state checks).
The controller node names such joints at start-up.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from wbc_control.exceptions import (
    FrameNotFound,
    InvalidShape,
    JointNotFound,
    MissingJoints,
    ModelError,
)
from wbc_control.model.mimic_joints import (
    FilledMimics,
    MimicJoint,
    filled_mimics,
    urdf_mimic_joints,
)
from wbc_control.model.urdf_xml import parse_urdf

FREE_FLYER_NQ = 7
FREE_FLYER_NV = 6
#: Pinocchio's position limit of a joint without one.
_UNLIMITED = np.finfo(float).max


@dataclass(frozen=True)
class JointIndexTables:
    """Index arrays that scatter joint-space values into q and v without Python loops.

    Attributes:
        q_linear: q indices of 1-coordinate joints, `(k,)`.
        linear_joints: positions in the actuated-joint order of those joints, `(k,)`.
        q_cos: q indices of the cosine coordinate of continuous joints, `(c,)`.
        continuous_joints: positions in the actuated-joint order of continuous joints, `(c,)`.
        v: v index of each actuated joint, in actuated-joint order, `(n_act,)`.
    """

    q_linear: np.ndarray
    linear_joints: np.ndarray
    q_cos: np.ndarray
    continuous_joints: np.ndarray
    v: np.ndarray


class RobotModel:
    """A Pinocchio model with the name maps a controller needs.

    Build it with :meth:`from_urdf_string` or :meth:`from_urdf_path`.

    Attributes:
        nq: number of configuration coordinates.
        nv: number of velocity coordinates (degrees of freedom).
        n_actuated: number of actuated joints (all joints below the root).
        base_nv: velocity coordinates of the unactuated base (6 for a floating base, else 0).
        zero_range_joints: revolute or prismatic joints whose URDF gives equal lower and upper
            limits; their position limits are removed (the module docstring).
        mimic_joints: the URDF's `<mimic>` joints (both joints actuated), which a joint state
            may leave out (:class:`JointStateMapping`).
        nominal_inertias: the body inertia of every joint as the URDF gives it, untouched by
            payloads (:meth:`set_payload_parameters`).
    """

    def __init__(
        self, model: pin.Model, floating_base: bool, mimic_joints: Sequence[MimicJoint] = ()
    ) -> None:
        self.model = model
        self.floating_base = floating_base
        self.name = model.name
        first = 2 if floating_base else 1
        names: list[str] = []
        for joint_id in range(first, model.njoints):
            joint = model.joints[joint_id]
            if joint.nv != 1:
                raise ModelError(
                    f"joint '{model.names[joint_id]}' has {joint.nv} velocity coordinates; "
                    'only 1-DoF joints (revolute, continuous, prismatic) are supported '
                    'below the root'
                )
            names.append(model.names[joint_id])
        self.joint_names: tuple[str, ...] = tuple(names)
        # Plain attributes, not properties: the tick reads them (a property is a call).
        self.nq: int = model.nq
        self.nv: int = model.nv
        self.n_actuated: int = len(names)
        self.base_nv: int = FREE_FLYER_NV if floating_base else 0
        self._joint_ids = range(first, model.njoints)
        self.indices = self._build_index_tables()
        self.frame_names: tuple[str, ...] = tuple(frame.name for frame in model.frames)
        # Per-message scatter: slices where the tables are contiguous (no gather), no cos/sin
        # without continuous joints, the shape to check against.
        tables = self.indices
        self._actuated_shape = (len(names),)
        self._q_linear = _as_index(tables.q_linear)
        self._linear_joints = _as_index(tables.linear_joints)
        self._has_continuous = tables.q_cos.size > 0
        self._v_actuated = _as_index(tables.v)
        #: Joints whose URDF limits are equal (lower = upper), taken as unlimited.
        self.zero_range_joints = _unlimit_zero_ranges(model, tables, self.joint_names)
        #: URDF `<mimic>` joints between actuated joints (`wbc_control.model.mimic_joints`).
        self.mimic_joints = tuple(
            mimic
            for mimic in mimic_joints
            if mimic.joint in self.joint_names and mimic.master in self.joint_names
        )
        self.nominal_inertias: tuple[pin.Inertia, ...] = tuple(
            inertia.copy() for inertia in model.inertias
        )
        self._loaded_joints: frozenset[int] = frozenset()

    @classmethod
    def from_urdf_string(cls, urdf_xml: str, floating_base: bool = False) -> 'RobotModel':
        """Parse URDF XML (the ROS `robot_description` convention)."""
        root = parse_urdf(urdf_xml)
        try:
            if floating_base:
                model = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer())
            else:
                model = pin.buildModelFromXML(urdf_xml)
        except (RuntimeError, ValueError) as error:
            raise ModelError(f'Pinocchio cannot build a model of the URDF: {error}') from error
        return cls(model, floating_base, urdf_mimic_joints(root))

    @classmethod
    def from_urdf_path(cls, path: str | Path, floating_base: bool = False) -> 'RobotModel':
        """Read a URDF file."""
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"URDF file '{path}' does not exist")
        return cls.from_urdf_string(path.read_text(), floating_base)

    @property
    def effort_limits(self) -> np.ndarray:
        """URDF effort limit per actuated joint, `(n_act,)`; inf where the URDF gives none."""
        limits = np.asarray(self.model.effortLimit, dtype=float)[self.indices.v].copy()
        limits[~np.isfinite(limits) | (limits <= 0.0)] = np.inf
        return limits

    @property
    def position_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """URDF (lower, upper) position limits per actuated joint, `(n_act,)` each.

        ±inf for continuous joints and for `zero_range_joints` (Pinocchio's ±max there).
        """
        lower = np.full(self.n_actuated, -np.inf)
        upper = np.full(self.n_actuated, np.inf)
        tables = self.indices
        lower[tables.linear_joints] = self.model.lowerPositionLimit[tables.q_linear]
        upper[tables.linear_joints] = self.model.upperPositionLimit[tables.q_linear]
        lower[lower <= -_UNLIMITED] = -np.inf
        upper[upper >= _UNLIMITED] = np.inf
        return lower, upper

    def joint_index(self, names: Iterable[str]) -> np.ndarray:
        """Positions of `names` in the actuated-joint order; JointNotFound lists unknown ones."""
        lookup = {name: i for i, name in enumerate(self.joint_names)}
        names = list(names)
        unknown = [name for name in names if name not in lookup]
        if unknown:
            raise JointNotFound(unknown, self.joint_names)
        return np.array([lookup[name] for name in names], dtype=int)

    def set_payload_parameters(self, parameters: Mapping[int, np.ndarray]) -> None:
        """Body inertias = the URDF's plus payloads, {joint id: dynamic parameters π `(10,)`}.

        π about the joint origin in its frame (`wbc_control.model.payload`); the joints not in
        `parameters` get their URDF inertia back. Every M(q), h and g computed after the call
        includes the payloads.
        """
        inertias, nominal = self.model.inertias, self.nominal_inertias
        for joint in self._loaded_joints - parameters.keys():
            inertias[joint] = nominal[joint].copy()
        for joint, added in parameters.items():
            total = nominal[joint].toDynamicParameters() + added
            # A blend starts at α = 0: nothing added yet, and a massless body stays as it was.
            loaded = total[0] > 0.0 and added.any()
            inertias[joint] = (
                pin.Inertia.FromDynamicParameters(total) if loaded else nominal[joint].copy()
            )
        self._loaded_joints = frozenset(parameters)

    def frame_id(self, name: str) -> int:
        """Pinocchio frame index of `name`; FrameNotFound lists the available frames.

        A URDF may give a link and a joint the same name (example-robot-data's Z1:
        `gripperStator`); Pinocchio then has a frame of each and refuses the bare name. The
        link's (body) frame is the one meant.
        """
        if not self.model.existFrame(name):
            raise FrameNotFound(name, self.frame_names)
        if self.model.existFrame(name, pin.FrameType.BODY):
            return self.model.getFrameId(name, pin.FrameType.BODY)
        return next(index for index, frame in enumerate(self.model.frames) if frame.name == name)

    def neutral_configuration(self) -> np.ndarray:
        """Pinocchio's neutral configuration q0, `(nq,)`."""
        return pin.neutral(self.model)

    def configuration(
        self,
        joint_positions: npt.ArrayLike,
        base_pose: npt.ArrayLike | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Assemble q from joint positions in actuated order (+ base pose xyz, quaternion xyzw).

        Continuous joints take their angle and are stored as (cos, sin).
        """
        positions = joint_positions
        if type(positions) is not np.ndarray:
            positions = np.asarray(positions, dtype=float)
        if positions.shape != self._actuated_shape:
            raise InvalidShape(
                f'expected {self.n_actuated} joint positions, got shape {positions.shape}'
            )
        q = np.empty(self.nq) if out is None else out
        if self.floating_base:
            pose = _IDENTITY_POSE if base_pose is None else base_pose
            if type(pose) is not np.ndarray:
                pose = np.asarray(pose, dtype=float)
            if pose.shape != (FREE_FLYER_NQ,):
                raise InvalidShape(f'base pose needs 7 values (xyz, qxyzw), got {pose.shape}')
            q[:FREE_FLYER_NQ] = pose
        q[self._q_linear] = positions[self._linear_joints]
        if self._has_continuous:
            tables = self.indices
            angles = positions[tables.continuous_joints]
            q[tables.q_cos] = np.cos(angles)
            q[tables.q_cos + 1] = np.sin(angles)
        return q

    def joint_positions(self, q: npt.ArrayLike) -> np.ndarray:
        """Inverse of :meth:`configuration`: joint positions (angles for continuous joints)."""
        if type(q) is not np.ndarray:
            q = np.asarray(q, dtype=float)
        positions = np.empty(self.n_actuated)
        positions[self._linear_joints] = q[self._q_linear]
        if self._has_continuous:
            tables = self.indices
            positions[tables.continuous_joints] = np.arctan2(q[tables.q_cos + 1], q[tables.q_cos])
        return positions

    def velocity(
        self,
        joint_velocities: npt.ArrayLike,
        base_twist: npt.ArrayLike | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Assemble v from joint velocities (+ base twist: linear, angular, in the base frame)."""
        velocities = joint_velocities
        if type(velocities) is not np.ndarray:
            velocities = np.asarray(velocities, dtype=float)
        if velocities.shape != self._actuated_shape:
            raise InvalidShape(
                f'expected {self.n_actuated} joint velocities, got shape {velocities.shape}'
            )
        v = np.empty(self.nv) if out is None else out
        if self.floating_base:
            if base_twist is None:
                v[:FREE_FLYER_NV] = 0.0
            else:
                twist = base_twist
                if type(twist) is not np.ndarray:
                    twist = np.asarray(twist, dtype=float)
                if twist.shape != (FREE_FLYER_NV,):
                    raise InvalidShape(f'base twist needs 6 values, got {twist.shape}')
                v[:FREE_FLYER_NV] = twist
        v[self._v_actuated] = velocities
        return v

    def _build_index_tables(self) -> JointIndexTables:
        q_linear, linear, q_cos, continuous, v = [], [], [], [], []
        for position, joint_id in enumerate(self._joint_ids):
            joint = self.model.joints[joint_id]
            v.append(joint.idx_v)
            if joint.nq == 1:
                q_linear.append(joint.idx_q)
                linear.append(position)
            elif joint.nq == 2:
                q_cos.append(joint.idx_q)
                continuous.append(position)
            else:
                raise ModelError(
                    f"joint '{self.model.names[joint_id]}' has nq={joint.nq}; unsupported"
                )
        as_int = lambda values: np.array(values, dtype=int)  # noqa: E731
        return JointIndexTables(
            as_int(q_linear), as_int(linear), as_int(q_cos), as_int(continuous), as_int(v)
        )


_IDENTITY_POSE = np.array((0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0))
_IDENTITY_POSE.flags.writeable = False


def _unlimit_zero_ranges(
    model: pin.Model, tables: JointIndexTables, joint_names: Sequence[str]
) -> tuple[str, ...]:
    """Remove the position limits of joints with lower = upper; their names, actuated order."""
    lower, upper = model.lowerPositionLimit, model.upperPositionLimit
    coordinates = tables.q_linear
    equal = lower[coordinates] == upper[coordinates]
    if not equal.any():
        return ()
    lower[coordinates[equal]] = -_UNLIMITED
    upper[coordinates[equal]] = _UNLIMITED
    model.lowerPositionLimit, model.upperPositionLimit = lower, upper
    return tuple(joint_names[i] for i in tables.linear_joints[equal])


def _as_index(indices: np.ndarray) -> slice | np.ndarray:
    """A slice when `indices` are consecutive and ascending (a view, no gather), else them."""
    if indices.size and (np.diff(indices) == 1).all():
        return slice(int(indices[0]), int(indices[-1]) + 1)
    return indices


class JointStateMapping:
    """Maps a JointState's name list onto the model's actuated joints (any order, extras ok).

    The permutation is computed once per distinct name list and reused, so the per-message cost
    is one fancy-indexing gather. A URDF `<mimic>` joint the message leaves out is gathered from
    its master's entry, then mapped by the returned :class:`FilledMimics`.
    """

    def __init__(self, robot: RobotModel) -> None:
        self._robot = robot
        self._cache: dict[tuple[str, ...], tuple[np.ndarray, FilledMimics | None]] = {}

    def message_indices(self, names: Sequence[str]) -> tuple[np.ndarray, FilledMimics | None]:
        """Index into the message arrays per actuated joint, and the mimic joints to fill.

        In model order; the fill is None when the message has every joint.

        Raises:
            MissingJoints: if the message lacks some of the model's joints (lists them).
            InvalidShape: if a name appears twice.
        """
        key = tuple(names)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if len(set(key)) != len(key):
            raise InvalidShape('joint_states has duplicate joint names')
        lookup = {name: i for i, name in enumerate(key)}
        joint_names = self._robot.joint_names
        absent = [name for name in joint_names if name not in lookup]
        fill, masters = filled_mimics(self._robot.mimic_joints, absent, joint_names)
        missing = [name for name in absent if masters.get(name) not in lookup]
        if missing:
            raise MissingJoints(missing)
        indices = np.array([lookup[masters.get(name, name)] for name in joint_names], dtype=int)
        if len(self._cache) > 16:
            self._cache.clear()
        self._cache[key] = indices, fill
        return indices, fill
