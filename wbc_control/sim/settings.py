"""The simulator's settings from its parameter values, checked against the robot (no ROS).

The parameter schema (``config/wbc_sim_parameters.yaml``) checks each value on its own (types,
signs); :func:`sim_settings` checks what needs the robot model or several values together and
turns periods into whole numbers of physics steps.
"""

from collections.abc import Mapping
from dataclasses import dataclass
import math

import numpy as np

from wbc_control.config.payload import parse_payload
from wbc_control.exceptions import InvalidValue, WbcError
from wbc_control.model.payload import NO_PAYLOAD, Payload
from wbc_control.model.robot_model import RobotModel
from wbc_control.sim.urdf_to_mujoco import MujocoOptions


@dataclass(frozen=True)
class SimSettings:
    """The simulator's parameters after validation (read-only at runtime but the payload)."""

    options: MujocoOptions
    control_steps: int  # physics steps per lock-step command
    publish_steps: int  # physics steps per published state (paced mode)
    real_time_factor: float
    lockstep: bool
    lockstep_resend_s: float
    lockstep_subscribers: int  # joint_states subscribers before the first state
    hold_until_commanded: bool  # paced: time stands at 0 until a non-zero command
    command_timeout_s: float
    command_index: np.ndarray  # (n_cmd,)
    initial_positions: np.ndarray  # (n_act,)
    initial_base_pose: np.ndarray | None  # (7,) or None: on the ground at the origin
    odom_frame: str
    base_frame: str
    viewer: bool
    payload: Payload = NO_PAYLOAD  # the real payload, attached in MuJoCo

    def describe(self, timestep_s: float) -> str:
        """How time advances, in one phrase for the start-up log."""
        if self.lockstep:
            return f'lockstep, {self.control_steps} step(s) of {timestep_s} s per command'
        return (
            f'paced at real_time_factor {self.real_time_factor}, state every '
            f'{self.publish_steps} step(s) of {timestep_s} s'
        )


def sim_settings(values: Mapping[str, object], robot: RobotModel) -> SimSettings:
    """Validate the parameter values of ``wbc_sim`` (name -> value) for `robot`.

    Raises:
        InvalidValue: a value is out of range or inconsistent with the robot model; the message
            names the parameter.
        FrameNotFound: `payload.frame` is not a frame of the model (the message names it).
    """
    timestep = _real('timestep', values['timestep'])
    if timestep <= 0.0 or not math.isfinite(timestep):
        raise InvalidValue(f'timestep must be positive, got {timestep}')
    options = _mujoco_options(values, robot, timestep)
    return SimSettings(
        options=options,
        control_steps=_whole_steps('control_period', values['control_period'], timestep),
        publish_steps=_publish_steps(_real('publish_rate', values['publish_rate']), timestep),
        real_time_factor=_non_negative('real_time_factor', values['real_time_factor']),
        lockstep=bool(values['lockstep']),
        lockstep_resend_s=_non_negative(
            'lockstep_resend_period', values['lockstep_resend_period']
        ),
        lockstep_subscribers=int(values['lockstep_subscribers']),
        hold_until_commanded=bool(values['hold_until_commanded']),
        command_timeout_s=_non_negative('command_timeout', values['command_timeout']),
        command_index=_command_index(_strings(values['command_joints']), robot),
        initial_positions=_initial_positions(values, robot),
        initial_base_pose=_initial_base_pose(_array(values['initial_base_pose']), robot),
        odom_frame=str(values['odom_frame']),
        base_frame=str(values['base_frame']),
        viewer=options.keep_visual,
        payload=parse_payload(robot, values),
    )


def _mujoco_options(
    values: Mapping[str, object], robot: RobotModel, timestep: float
) -> MujocoOptions:
    gravity = _array(values['gravity'])
    if gravity.shape != (3,):
        raise InvalidValue(f'gravity needs 3 values, got {gravity.tolist()}')
    return MujocoOptions(
        floating_base=robot.floating_base,
        ground_plane=bool(values['ground_plane']),
        gravity_m_s2=tuple(gravity.tolist()),
        timestep_s=timestep,
        self_collision=bool(values['self_collision']),
        keep_visual=bool(values['viewer']),
        urdf_joint_dynamics=bool(values['urdf_joint_dynamics']),
        box_collision_links=tuple(_strings(values['box_collision_links'])),
        ground_friction=_non_negative('ground_friction', values['ground_friction']),
    )


def _command_index(names: list[str], robot: RobotModel) -> np.ndarray:
    if not names:
        return np.arange(robot.n_actuated)
    if len(set(names)) != len(names):
        raise InvalidValue('command_joints has duplicate names')
    try:
        return robot.joint_index(names)
    except WbcError as error:
        raise InvalidValue(f'command_joints: {error}') from error


def _initial_positions(values: Mapping[str, object], robot: RobotModel) -> np.ndarray:
    positions = _array(values['initial_positions'])
    names = _strings(values['initial_joint_names'])
    joint_values = _array(values['initial_joint_positions'])
    if positions.size == 0:
        positions = np.zeros(robot.n_actuated)
    if positions.shape != (robot.n_actuated,):
        raise InvalidValue(
            f'initial_positions needs {robot.n_actuated} values (one per joint: '
            f'{", ".join(robot.joint_names)}), got {positions.size}'
        )
    if len(names) != joint_values.size:
        raise InvalidValue(
            f'initial_joint_names ({len(names)}) and initial_joint_positions '
            f'({joint_values.size}) differ in length'
        )
    try:
        positions[robot.joint_index(names)] = joint_values
    except WbcError as error:
        raise InvalidValue(f'initial_joint_names: {error}') from error
    if not np.isfinite(positions).all():
        raise InvalidValue('initial joint positions must be finite')
    return positions


def _initial_base_pose(pose: np.ndarray, robot: RobotModel) -> np.ndarray | None:
    if pose.size == 0:
        return None
    if not robot.floating_base or pose.shape != (7,) or not np.isfinite(pose).all():
        raise InvalidValue('initial_base_pose needs 7 finite values and a floating base')
    return pose


def _whole_steps(name: str, period_s: object, timestep_s: float) -> int:
    period_s = _real(name, period_s)
    steps = round(period_s / timestep_s)
    if steps < 1 or abs(steps * timestep_s - period_s) > 1e-9 * max(1.0, period_s):
        raise InvalidValue(
            f'{name} ({period_s} s) must be a positive multiple of timestep ({timestep_s} s)'
        )
    return steps


def _publish_steps(rate_hz: float, timestep_s: float) -> int:
    if not (math.isfinite(rate_hz) and rate_hz > 0.0):
        raise InvalidValue(f'publish_rate must be positive, got {rate_hz}')
    return max(1, round(1.0 / (rate_hz * timestep_s)))


def _non_negative(name: str, value: object) -> float:
    value = _real(name, value)
    if not (math.isfinite(value) and value >= 0.0):
        raise InvalidValue(f'{name} must be a finite number >= 0, got {value}')
    return value


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValue(f"parameter '{name}' must be a number, got {value!r}")
    return float(value)


def _array(value: object) -> np.ndarray:
    """A parameter array as floats; unset (None) is empty."""
    return np.asarray([] if value is None else list(value), dtype=float)


def _strings(value: object) -> list[str]:
    return [] if value is None else [str(name) for name in value]
