"""A MuJoCo simulation exchanged in Pinocchio's conventions (the controller's).

Joint vectors are in the actuated-joint order of the :class:`RobotModel` built from the same URDF
(:mod:`wbc_control.sim.urdf_to_mujoco` builds the MuJoCo model); continuous joints are angles
wrapped to [-π, π).

Floating base. MuJoCo's free-joint velocity is (linear velocity of the body origin in the *world*
frame, angular velocity in the *body* frame), while Pinocchio's free-flyer velocity has both parts
in the body frame: v_mujoco = T v_pinocchio with T = blockdiag(R, I₃, I). :class:`MujocoSimulation`
converts, so the base pose is (xyz, quaternion xyzw) in the world frame and the base twist
(linear, angular) is in the base frame, as in nav_msgs/Odometry.

This module needs the optional dependency `mujoco`; it never imports rclpy.
"""

from collections.abc import Iterable
from typing import NamedTuple

import mujoco
import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidValue, ModelError
from wbc_control.model.robot_model import FREE_FLYER_NQ, FREE_FLYER_NV, RobotModel
from wbc_control.sim.urdf_to_mujoco import MujocoRobot, mesh_vertices


class FreeJointAddresses(NamedTuple):
    """Where the floating base lives in MuJoCo's arrays."""

    qpos: np.ndarray  # (7,) qpos address: xyz, quaternion wxyz
    dof: np.ndarray  # (6,) qvel address: linear (world frame), angular (body frame)
    body: int  # body id of the root link


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
        self.base = self._free_joint_addresses()
        if self.model.nv != robot.nv:
            raise ModelError(
                f'MuJoCo has {self.model.nv} degrees of freedom, Pinocchio {robot.nv}'
            )
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
        if self.base is not None:
            pose = _vector(
                (0, 0, 0, 0, 0, 0, 1) if base_pose is None else base_pose,
                FREE_FLYER_NQ,
                'base pose',
            )
            self.data.qpos[self.base.qpos] = _pose_xyzw_to_mujoco(pose)
        elif base_pose is not None:
            raise InvalidValue('a base pose needs a floating base')
        self.applied_torque[:] = 0.0
        self.data.qfrc_applied[:] = 0.0
        mujoco.mj_forward(self.model, self.data)

    @property
    def colliding_geometry(self) -> int:
        """How many of the robot's geoms collide: none, and a floating base falls through."""
        return int(np.count_nonzero(_colliding(self.model)))

    def place_on_ground(self, clearance_m: float = 0.0) -> float:
        """Lift or lower the floating base so that its lowest collision geometry touches z = 0.

        The lowest point is exact for spheres, capsules, cylinders, ellipsoids, boxes and meshes
        (their vertices), so the robot starts `clearance_m` above the ground: by default
        touching it, its contacts closed after the first physics step. A start in the air is a
        drop that the controller, whose contacts hold the feet still, meets with torques that
        swing the legs (1 mm: Unitree G1 over 29 joints fell, HyQ's torque stepped by 118 N m).
        Returns the base height.
        """
        if self.base is None:
            raise InvalidValue('only a floating base can be placed on the ground')
        mujoco.mj_kinematics(self.model, self.data)
        lowest = _lowest_collision_point(self.model, self.data)
        if np.isfinite(lowest):
            self.data.qpos[self.base.qpos[2]] += clearance_m - lowest
        mujoco.mj_forward(self.model, self.data)
        return float(self.data.qpos[self.base.qpos[2]])

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
        base = self._require_floating_base()
        pose = self.data.qpos[base.qpos]
        return np.concatenate([pose[:3], pose[4:7], pose[3:4]])

    def base_twist(self) -> np.ndarray:
        """Base (linear, angular) velocity in the base frame, Pinocchio's free-flyer v[:6]."""
        base = self._require_floating_base()
        velocity = self.data.qvel[base.dof]
        rotation_world_base = self.base_rotation()
        return np.concatenate([rotation_world_base.T @ velocity[:3], velocity[3:]])

    def base_rotation(self) -> np.ndarray:
        """Orientation of the base in the world, R = ʷR_b, `(3, 3)`."""
        base = self._require_floating_base()
        return self.data.xmat[base.body].reshape(3, 3).copy()

    def _require_floating_base(self) -> FreeJointAddresses:
        if self.base is None:
            raise InvalidValue('the model has a fixed base')
        return self.base

    def _free_joint_addresses(self) -> FreeJointAddresses | None:
        free = np.flatnonzero(self.model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)
        if not self.robot.floating_base:
            return None
        if free.size != 1:
            raise ModelError(f'expected one free joint, found {free.size}')
        qpos = self.model.jnt_qposadr[free[0]] + np.arange(FREE_FLYER_NQ)
        dof = self.model.jnt_dofadr[free[0]] + np.arange(FREE_FLYER_NV)
        body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, self.root_link)
        return FreeJointAddresses(qpos, dof, body)


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


def _colliding(model: mujoco.MjModel) -> np.ndarray:
    """Which geoms belong to the robot and collide, `(ngeom,)` bool."""
    return (model.geom_bodyid > 0) & ((model.geom_contype | model.geom_conaffinity) > 0)


def _lowest_collision_point(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """Lowest world z of the robot's colliding geometry (exact but for height fields and SDFs)."""
    lowest = (_lowest_point(model, data, geom) for geom in np.flatnonzero(_colliding(model)))
    return min(lowest, default=np.inf)


def _lowest_point(model: mujoco.MjModel, data: mujoco.MjData, geom: int) -> float:
    """Lowest world z of one geom: its centre minus its extent along the world's −z."""
    up = data.geom_xmat[geom, 6:9]  # the world z axis in the geom frame
    size, kind = model.geom_size[geom], model.geom_type[geom]
    types = mujoco.mjtGeom
    if kind == types.mjGEOM_SPHERE:
        extent = size[0]
    elif kind == types.mjGEOM_CAPSULE:
        extent = abs(up[2]) * size[1] + size[0]
    elif kind == types.mjGEOM_CYLINDER:  # an end's rim
        extent = abs(up[2]) * size[1] + size[0] * np.sqrt(max(1.0 - up[2] ** 2, 0.0))
    elif kind == types.mjGEOM_ELLIPSOID:
        extent = float(np.linalg.norm(size * up))
    elif kind == types.mjGEOM_BOX:
        extent = float(np.abs(up) @ size)
    elif kind == types.mjGEOM_MESH:
        extent = -float((mesh_vertices(model, geom) @ up).min())
    else:  # height fields, SDFs: the bounding box
        center, half_size = model.geom_aabb[geom, :3], model.geom_aabb[geom, 3:]
        extent = float(np.abs(up) @ half_size - up @ center)
    return float(data.geom_xpos[geom, 2]) - extent


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
