"""The controller loop and the state decoders, assembled from validated settings.

What the controller node (and the benchmark, and the tests that run the node's controller)
build once at start-up from :class:`~wbc_control.config.settings.ControllerSettings`: the
prioritized controller with its joint-limit level and effort limits, the command output, the
loop with its watchdog and soft start, and the decoders of the state topics.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from wbc_control.config.settings import ControllerSettings
from wbc_control.control.constraints.joint_limits import JointLimits
from wbc_control.control.constraints.torque_limits import TorqueLimiter
from wbc_control.control.contact.contacts import Contact
from wbc_control.control.loop.command_output import CommandOutput
from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.control.switching.homing import Homing
from wbc_control.exceptions import InvalidValue
from wbc_control.inputs.joint_states import JointStateDecoder
from wbc_control.inputs.odometry import OdometryDecoder, StatePairing
from wbc_control.model.robot_model import RobotModel


def build_loop(
    robot: RobotModel,
    settings: ControllerSettings,
    entries: Sequence[TaskEntry],
    contacts: Sequence[Contact],
    wall_timeout: float,
    active: bool = True,
) -> ControllerLoop:
    """The controller loop of validated settings (the command output limits what is sent).

    `active`: commanding from the first state; else from `ControllerLoop.activate` on.

    The controller gets the effort limits as well, so that its hierarchy keeps the torque in
    range (the tasks give way) instead of the output clipping joint by joint. Not for a
    driver that adds gravity itself: the limits then bound τ − g(q), which the controller's
    bound on τ does not express; the output alone limits it there.
    """
    joint_limits = None
    if settings.joint_limits:
        joint_limits = JointLimits(
            robot,
            settings.effort_limits,
            margin=settings.joint_limit_margin,
            response=settings.joint_limit_response,
            max_acceleration=settings.max_joint_acceleration,
            torque_rate_limits=settings.torque_rate_limits,
            holding=not settings.robot_compensates_gravity,
        )
    compensated = settings.robot_compensates_gravity
    controller = PrioritizedController(
        robot,
        list(entries),
        singular_value_threshold=settings.singular_value_threshold,
        effort_limits=np.full(robot.n_actuated, np.inf) if compensated else settings.effort_limits,
        contacts=tuple(contacts),
        friction_coefficient=settings.friction_coefficient,
        joint_limits=joint_limits,
        contact_transition_time=settings.contact_transition_time,
        task_transition_time=settings.task_transition_time,
        sole_size=settings.contact_sole_size or None,
    )
    limiter = TorqueLimiter(settings.effort_limits, settings.torque_rate_limits)
    output = CommandOutput(limiter, settings.robot_compensates_gravity)
    return ControllerLoop(
        controller,
        output,
        stale_command=settings.stale_command,
        timeout=settings.joint_state_timeout,
        soft_start_time=settings.soft_start_time,
        wall_timeout=wall_timeout,
        soft_stop_time=settings.soft_stop_time,
        active=active,
        payload=settings.payload,
        homing=build_homing(robot, settings, entries),
    )


def build_homing(
    robot: RobotModel, settings: ControllerSettings, entries: Sequence[TaskEntry]
) -> Homing | None:
    """The homing rule of `homing_tolerance` (None where 0: no homing).

    Raises:
        InvalidValue: homing on a floating base (the posture alone would not keep it
            standing), without a joint_posture task, or a bad timeout.
    """
    if settings.homing_tolerance == 0.0:
        return None
    if robot.floating_base:
        raise InvalidValue(
            'homing_tolerance: homing holds every task but the posture off, which would let a '
            'floating base fall; it is for fixed-base robots (set homing_tolerance: 0.0)'
        )
    postures = [e for e in entries if getattr(e.task, 'TYPE', None) == 'joint_posture']
    if not postures:
        raise InvalidValue(
            'homing_tolerance: homing needs a joint_posture task, whose target is home '
            '(or set homing_tolerance: 0.0)'
        )
    homes = {e.name for e in postures}
    return Homing(
        settings.homing_tolerance,
        settings.homing_timeout,
        [e.task for e in postures],
        frozenset(e.name for e in entries if e.name not in homes),
        settings.command_index,
        robot.joint_names,
    )


class StateInputs(NamedTuple):
    """The decoders of the state topics and their pairing rule."""

    joints: JointStateDecoder
    odometry: OdometryDecoder
    pairing: StatePairing


def build_inputs(robot: RobotModel, settings: ControllerSettings) -> StateInputs:
    """Decoders with the time and plausibility rules of the settings."""
    timeout, tolerance = settings.joint_state_timeout, settings.future_stamp_tolerance
    joints = JointStateDecoder(
        robot,
        timeout_s=timeout,
        future_tolerance_s=tolerance,
        position_margin=settings.position_margin,
        velocity_factor=settings.velocity_factor,
    )
    odometry = OdometryDecoder(
        settings.world_frame, settings.base_frame, timeout_s=timeout, future_tolerance_s=tolerance
    )
    return StateInputs(joints, odometry, StatePairing(settings.odom_pairing, timeout))
