"""Controller-level parameters -> validated settings; rigid contacts from their parameters.

Names, types, defaults, bounds and which settings are live come from the schema
(``wbc_controller_parameters.yaml``), which checks every value; this module adds what depends
on the robot (joints, frames, limits) and the defaults that do (all actuated joints, the URDF
root link). Rigid contacts (`contacts`, `contact_types`) are the controller's top priority
level (Mistry & Righetti 2011): each is a frame of the model and a type, `surface` (6
constrained directions: a foot sole) or `point` (3: a ball foot); no types at all means every
contact is a surface contact.
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from wbc_control.config._coerce import (
    as_floats,
    duplicates,
    parameter_errors,
    scalar,
    string_list,
)
from wbc_control.config.payload import PAYLOAD_PARAMETERS, parse_payload
from wbc_control.config.schema import load_schema
from wbc_control.control.contact.contacts import Contact
from wbc_control.exceptions import InvalidShape, InvalidTaskConfig, InvalidValue, ModelError
from wbc_control.model.payload import NO_PAYLOAD, Payload
from wbc_control.model.robot_model import RobotModel

_SCHEMA = load_schema('wbc_controller')
#: Contact types the `contact_types` parameter takes (a Contact can also be 'along' an axis).
CONTACT_TYPES = ('surface', 'point')
#: World frame (odometry frame_id) of a floating-base robot unless `world_frame` says otherwise.
DEFAULT_ODOM_FRAME = 'odom'
#: The settings ControllerSettings is made of: the schema's plain parameters but the model,
#: the payload (one setting of its own), contacts and task names.
_SETTINGS = tuple(
    name
    for name in _SCHEMA.parameters
    if name not in load_schema('robot_model').parameters
    and name not in PAYLOAD_PARAMETERS
    and name not in ('contacts', 'contact_types', 'task_names', 'autostart')
)
#: Real-valued settings taken as they are (the others need the robot, or are not reals).
_REAL_SETTINGS = (
    'future_stamp_tolerance',
    'position_margin',
    'velocity_factor',
    'soft_start_time',
    'soft_stop_time',
    'homing_tolerance',
    'homing_timeout',
    'joint_limit_margin',
    'joint_limit_response',
    'contact_transition_time',
    'task_transition_time',
    'markers_rate',
)
#: Controller-level settings that can change at runtime (the schema's read_only: false;
#: `contacts`, live too, is :func:`parse_live_contacts`'s).
LIVE_SETTINGS = frozenset(name for name in _SETTINGS if _SCHEMA[name].live)


@dataclass(frozen=True)
class ControllerSettings:
    """Validated controller-level parameters.

    Attributes:
        command_joints: joints of the command, in its order.
        command_index: positions of `command_joints` in the actuated-joint order, `(n_cmd,)`.
        effort_limits: per actuated joint (N m or N; inf = none), `(n_act,)`.
        torque_rate_limits: per actuated joint (N m/s; inf = none), `(n_act,)`.
        joint_state_timeout: seconds without a valid joint state before the safe command.
        stale_command: safe command while stale: 'zero' or 'gravity' (the holding torque of
            :func:`wbc_control.control.contact.contacts.holding_torque` at the last state).
        singular_value_threshold: ε of the regularized task-space inertia, in (0, 1).
        world_frame: frame_id accepted (besides '') for targets and odometry.
        diagnostics_rate: /diagnostics rate (Hz); 0 disables it.
        friction_coefficient: μ of the friction-cone check of contact forces.
        contact_sole_size: (length, width) of every surface contact's sole (m); () for none.
        odom_pairing: how joint states and odometry make a tick (floating base), one of
            :data:`~wbc_control.inputs.odometry.ODOM_PAIRINGS`.
        base_frame: child_frame_id accepted (besides '') for odometry.
        robot_compensates_gravity: the driver adds g(q) itself: publish τ − g(q).
        future_stamp_tolerance: how far ahead of the node's clock a stamp may be (s).
        position_margin: how far beyond a URDF position limit a position is believed (rad, m).
        velocity_factor: speeds above this multiple of the URDF velocity limit are rejected.
        soft_start_time: ramp from the safe command to the task torque (s); 0 = none.
        soft_stop_time: ramp from the task torque to the safe command when deactivated (s).
        homing_tolerance, homing_timeout: the posture first after a (re)start farther than
            the tolerance from it, for at most the timeout (s); tolerance 0 = no homing
            (:mod:`~wbc_control.control.switching.homing`).
        joint_limits: enforce the URDF position and velocity limits.
        joint_limit_margin, joint_limit_response: where the joints stop and how fast their
            speed is brought under its ceiling
            (:class:`~wbc_control.control.constraints.joint_limits.JointLimits`).
        max_joint_acceleration: the braking per actuated joint (NaN: from the effort limits).
        contact_transition_time: load transfer of a contact switch (s).
        task_transition_time: fade of a task switched on or off (s).
        cpu_dma_latency: the CPU wake-up latency to hold while the node runs (µs; -1: none,
            :mod:`wbc_control.cpu_latency`).
        markers_rate: ~/markers rate (Hz); 0 publishes none.
        payload: the payload the model carries (`payload.*`; live, ramped in over
            `soft_start_time`: :mod:`wbc_control.control.loop.payload_ramp`).
    """

    command_joints: tuple[str, ...]
    command_index: np.ndarray
    effort_limits: np.ndarray
    torque_rate_limits: np.ndarray
    joint_state_timeout: float
    stale_command: str
    singular_value_threshold: float
    world_frame: str
    diagnostics_rate: float
    friction_coefficient: float
    contact_sole_size: tuple[float, ...]
    odom_pairing: str
    base_frame: str
    robot_compensates_gravity: bool
    future_stamp_tolerance: float
    position_margin: float
    velocity_factor: float
    soft_start_time: float
    soft_stop_time: float
    homing_tolerance: float
    homing_timeout: float
    joint_limits: bool
    joint_limit_margin: float
    joint_limit_response: float
    max_joint_acceleration: np.ndarray
    contact_transition_time: float
    task_transition_time: float
    cpu_dma_latency: int
    markers_rate: float
    payload: Payload = NO_PAYLOAD


def root_link(robot: RobotModel) -> str:
    """Name of the URDF root link: the first body frame on the world (or free-flyer) joint."""
    root_joint = 1 if robot.floating_base else 0
    for frame in robot.model.frames:
        if frame.type == pin.FrameType.BODY and frame.parentJoint == root_joint:
            return frame.name
    return robot.model.frames[0].name


def robot_defaults(robot: RobotModel) -> dict[str, object]:
    """The defaults that depend on the robot (the schema leaves them empty)."""
    return {
        'command_joints': list(robot.joint_names),
        'world_frame': DEFAULT_ODOM_FRAME if robot.floating_base else root_link(robot),
        'base_frame': root_link(robot),
    }


def default_settings(robot: RobotModel) -> dict[str, object]:
    """Default value of every controller-level setting (what the node declares)."""
    return {name: _SCHEMA[name].default for name in _SETTINGS} | robot_defaults(robot)


def parse_controller_settings(
    robot: RobotModel, values: Mapping[str, object]
) -> ControllerSettings:
    """Validate the controller-level settings; missing ones take :func:`default_settings`.

    Raises:
        InvalidValue, InvalidShape, JointNotFound, FrameNotFound: the message starts with the
            parameter.
    """
    payload = parse_payload(robot, values)
    given = {k: v for k, v in values.items() if k in _SETTINGS and v is not None}
    for name, value in given.items():
        _SCHEMA[name].check(value)
    values = default_settings(robot) | given
    with parameter_errors('command_joints'):
        command_joints = _command_joints(values['command_joints'])
        command_index = robot.joint_index(command_joints)
    with parameter_errors('effort_limits'):
        effort_limits = _effort_limits(robot, command_index, values['effort_limits'])
    with parameter_errors('torque_rate_limit'):
        rate_limits = _rate_limits(robot, command_index, values['torque_rate_limit'])
    with parameter_errors('joint_state_timeout'):
        timeout = scalar(values['joint_state_timeout'], 'joint_state_timeout')
    with parameter_errors('max_joint_acceleration'):
        max_acceleration = _max_accelerations(
            robot, command_index, values['max_joint_acceleration']
        )
    with parameter_errors('diagnostics_rate'):
        diagnostics_rate = scalar(values['diagnostics_rate'], 'diagnostics_rate')
    settings = ControllerSettings(
        command_joints=command_joints,
        command_index=command_index,
        effort_limits=effort_limits,
        torque_rate_limits=rate_limits,
        joint_state_timeout=timeout,
        stale_command=values['stale_command'],
        singular_value_threshold=values['singular_value_threshold'],
        world_frame=_frame_name(values['world_frame'], 'world_frame'),
        diagnostics_rate=diagnostics_rate,
        friction_coefficient=values['friction_coefficient'],
        contact_sole_size=_sole_size(values['contact_sole_size']),
        odom_pairing=values['odom_pairing'],
        base_frame=_frame_name(values['base_frame'], 'base_frame'),
        robot_compensates_gravity=bool(values['robot_compensates_gravity']),
        joint_limits=bool(values['joint_limits']),
        max_joint_acceleration=max_acceleration,
        cpu_dma_latency=int(values['cpu_dma_latency']),
        payload=payload,
        **{name: scalar(values[name], name) for name in _REAL_SETTINGS},
    )
    return update_settings(settings, {name: values[name] for name in LIVE_SETTINGS})


def update_settings(
    settings: ControllerSettings, changes: Mapping[str, object]
) -> ControllerSettings:
    """Validate live changes of :data:`LIVE_SETTINGS` and return the new settings.

    Raises:
        InvalidTaskConfig: a setting that is not live.
        InvalidValue: a value fails validation.
    """
    updated = {}
    for name, value in changes.items():
        with parameter_errors(name):
            if name not in LIVE_SETTINGS:
                raise InvalidTaskConfig('read-only at runtime; restart the node to change it')
        _SCHEMA[name].check(value)
        with parameter_errors(name):
            updated[name] = value if isinstance(value, str) else scalar(value, name)
    return replace(settings, **updated)


def parse_contacts(robot: RobotModel, frames: object, types: object) -> tuple[Contact, ...]:
    """Validate `contacts` (frame names) and `contact_types` (same length, or empty: surface).

    Raises:
        InvalidTaskConfig, InvalidShape, FrameNotFound: the message starts with the parameter
            at fault and names the bad frames or types.
        ModelError: a floating base without contacts (its base is not actuated).
    """
    frames = string_list(frames, 'contacts')
    kinds = string_list(types, 'contact_types') or ['surface'] * len(frames)
    if robot.floating_base and not frames:
        raise ModelError(
            'floating_base: true needs contacts: the base is not actuated, so list the frames '
            'in rigid contact with the ground (e.g. contacts: [left_sole_link, right_sole_link])'
        )
    with parameter_errors('contacts'):
        repeated = duplicates(frames)
        if repeated:
            raise InvalidTaskConfig(f'duplicate frames: {", ".join(repeated)}')
        unknown = [repr(frame) for frame in frames if not robot.model.existFrame(frame)]
        if unknown:
            raise InvalidTaskConfig(
                f'frame(s) {", ".join(unknown)} not in the robot model; available frames: '
                f'{", ".join(robot.frame_names)}'
            )
    with parameter_errors('contact_types'):
        if len(kinds) != len(frames):
            raise InvalidShape(
                f'{len(kinds)} types for {len(frames)} contacts: give one type per contact '
                '(or none: all surface)'
            )
        bad = [
            f'{frame}: {kind!r}' for frame, kind in zip(frames, kinds) if kind not in CONTACT_TYPES
        ]
        if bad:
            raise InvalidTaskConfig(
                f'{", ".join(bad)}; each type must be one of {", ".join(CONTACT_TYPES)}'
            )
    return tuple(Contact.create(robot, frame, kind) for frame, kind in zip(frames, kinds))


def parse_live_contacts(
    robot: RobotModel, frames: object, known: Mapping[str, Contact]
) -> tuple[Contact, ...]:
    """A live `contacts` value, validated.

    Its frames must be among `known` (the start-up contacts, whose types they keep), unique,
    and at least one on a floating base.

    Raises:
        InvalidTaskConfig, ModelError: the message starts with `contacts`.
    """
    with parameter_errors('contacts'):
        frames = string_list(frames, 'contacts')
        if robot.floating_base and not frames:
            raise ModelError('a floating base needs at least one contact')
        repeated = duplicates(frames)
        if repeated:
            raise InvalidTaskConfig(f'duplicate frames: {", ".join(repeated)}')
        unknown = [repr(frame) for frame in frames if frame not in known]
        if unknown:
            raise InvalidTaskConfig(
                f'frame(s) {", ".join(unknown)} were not contacts at start-up, so their contact '
                f'type is unknown; live contacts are among: {", ".join(known)}'
            )
    return tuple(known[frame] for frame in frames)


def _frame_name(value: object, parameter: str) -> str:
    with parameter_errors(parameter):
        if not isinstance(value, str) or not value:
            raise InvalidValue(f'must be a non-empty frame name, got {value!r}')
    return value


def _command_joints(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not value or not all(isinstance(v, str) for v in value):
        raise InvalidValue(f'must be a non-empty list of joint names, got {value!r}')
    names = tuple(value)
    repeated = duplicates(names)
    if repeated:
        raise InvalidValue(f'duplicate joints: {", ".join(repeated)}')
    return names


def _effort_limits(robot: RobotModel, command_index: np.ndarray, value: object) -> np.ndarray:
    limits = robot.effort_limits
    return _per_command_joint(limits, command_index, value, 'effort_limits', 'none')


def _sole_size(value: object) -> tuple[float, ...]:
    sizes = as_floats(value, 'contact_sole_size')
    if sizes.size not in (0, 2) or not (np.isfinite(sizes).all() and (sizes > 0.0).all()):
        raise InvalidValue(
            f'contact_sole_size must be empty or (length, width) > 0 in m, got {sizes.tolist()}'
        )
    return tuple(sizes.tolist())


def _max_accelerations(robot: RobotModel, command_index: np.ndarray, value: object) -> np.ndarray:
    """The declared braking per actuated joint, NaN where it comes from the effort limits."""
    braking = np.full(robot.n_actuated, np.nan)
    return _per_command_joint(braking, command_index, value, 'max_joint_acceleration', 'no bound')


def _per_command_joint(
    default: np.ndarray, command_index: np.ndarray, value: object, name: str, infinite: str
) -> np.ndarray:
    """`default` (per actuated joint) with `value`, a scalar or one per command joint, > 0.

    None or empty keeps `default`; `.inf` means `infinite`.
    """
    if value is None:
        return default
    override = as_floats(value, name)
    if override.size == 0:
        return default
    override = np.broadcast_to(override, command_index.shape) if override.ndim == 0 else override
    if override.shape != command_index.shape:
        raise InvalidShape(
            f'needs one value per command joint ({command_index.size}) or a scalar, '
            f'got {override.size}'
        )
    if np.isnan(override).any() or (override <= 0.0).any():
        raise InvalidValue(f'must be > 0 (.inf for {infinite}), got {override.tolist()}')
    default[command_index] = override
    return default


def _rate_limits(robot: RobotModel, command_index: np.ndarray, value: object) -> np.ndarray:
    rates = as_floats(value, 'torque_rate_limit')
    limits = np.full(robot.n_actuated, np.inf)
    if rates.size == 0:
        return limits
    if rates.ndim != 0 and rates.shape != command_index.shape:
        raise InvalidShape(
            f'needs a scalar or one value per command joint ({command_index.size}), '
            f'got {rates.size}'
        )
    if np.isnan(rates).any():
        raise InvalidValue(f'must be a number (0 = no limit), got {rates.tolist()}')
    limits[command_index] = np.where(rates > 0.0, rates, np.inf)
    return limits
