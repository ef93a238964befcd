"""The simulated payload: added to the MuJoCo body that carries the frame it is fixed to.

What :class:`~wbc_control.model.payload.Payload` does to the controller's Pinocchio model, done
to MuJoCo's, so that the simulator carries the real payload: its dynamic parameters about the
parent joint of its frame (`Payload.dynamic_parameters`) add to that joint's body. A Pinocchio
joint's frame is its MuJoCo body's frame (both are the URDF child link's; links fixed to it are
fused into it in both), so the sum is taken there and written back as MuJoCo stores a body's
inertia: mass, centre of mass `body_ipos`, principal moments `body_inertia` and the principal
axes' orientation `body_iquat` (the eigen-decomposition of the rotational inertia about the
centre of mass). The bodies' URDF inertias are kept, so that a payload is removed exactly.
A frame fixed to the world (on a fixed base) moves nothing: its payload changes nothing.
"""

import mujoco
import numpy as np
import pinocchio as pin

from wbc_control.model.payload import NO_PAYLOAD, Payload
from wbc_control.sim.simulation import MujocoSimulation

_FIELDS = ('body_mass', 'body_ipos', 'body_iquat', 'body_inertia')


class SimulatedPayload:
    """Sets the payload of a simulation's MuJoCo model (see the module docstring)."""

    def __init__(self, sim: MujocoSimulation) -> None:
        self.sim = sim
        self.payload = NO_PAYLOAD
        self._nominal = {name: getattr(sim.model, name).copy() for name in _FIELDS}

    def set(self, payload: Payload) -> None:
        """Carry `payload` from the next step on (the state is kept; derived terms recomputed)."""
        model, robot = self.sim.model, self.sim.robot
        for name, values in self._nominal.items():
            getattr(model, name)[:] = values
        for joint, parameters in payload.dynamic_parameters(robot).items():
            body = self._body(joint)
            if body > 0:
                total = _body_inertia(model, body).toDynamicParameters() + parameters
                _set_body_inertia(model, body, pin.Inertia.FromDynamicParameters(total))
        # The constants derived from masses, computed at qpos0 in a scratch MjData.
        mujoco.mj_setConst(model, mujoco.MjData(model))
        mujoco.mj_forward(model, self.sim.data)
        self.payload = payload

    def _body(self, joint: int) -> int:
        """MuJoCo body id of Pinocchio joint `joint` (0: the world)."""
        if joint == 0:
            return 0
        if self.sim.base is not None and joint == 1:
            return self.sim.base.body
        name = self.sim.robot.model.names[joint]
        return int(self.sim.model.jnt_bodyid[_joint_id(self.sim.model, name)])


def _joint_id(model: mujoco.MjModel, name: str) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)


def _body_inertia(model: mujoco.MjModel, body: int) -> pin.Inertia:
    """A body's inertia in its frame, as Pinocchio's spatial inertia."""
    axes = np.zeros(9)
    mujoco.mju_quat2Mat(axes, model.body_iquat[body])
    axes = axes.reshape(3, 3)
    rotational = (axes * model.body_inertia[body]) @ axes.T
    return pin.Inertia(float(model.body_mass[body]), model.body_ipos[body].copy(), rotational)


def _set_body_inertia(model: mujoco.MjModel, body: int, inertia: pin.Inertia) -> None:
    """Write a spatial inertia as MuJoCo's mass, centre of mass and principal inertia."""
    moments, axes = np.linalg.eigh(inertia.inertia)
    if np.linalg.det(axes) < 0.0:  # a rotation, not a reflection
        axes[:, 0] = -axes[:, 0]
    quaternion = np.zeros(4)
    mujoco.mju_mat2Quat(quaternion, axes.reshape(-1))
    model.body_mass[body] = inertia.mass
    model.body_ipos[body] = inertia.lever
    model.body_iquat[body] = quaternion
    model.body_inertia[body] = moments
