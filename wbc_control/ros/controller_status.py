"""The controller's /diagnostics message: formats the checks of :mod:`controller_checks`.

Nothing is decided here: levels and summaries come from
:mod:`wbc_control.control.loop.controller_checks`; this module gathers their inputs from the
controller loop and turns them into diagnostic_msgs/DiagnosticStatus named "<node>: <check>"
with the robot as hardware id. It also words the node's start-up line.
"""

from collections.abc import Mapping
import time

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np

from wbc_control.config import ControllerSettings
from wbc_control.control.loop import controller_checks as checks
from wbc_control.control.loop.controller_checks import Check, Severity
from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.control.prioritized_controller import PrioritizedController

_LEVELS = {
    Severity.OK: DiagnosticStatus.OK,
    Severity.WARN: DiagnosticStatus.WARN,
    Severity.ERROR: DiagnosticStatus.ERROR,
}


def diagnostic_status(node: str, hardware_id: str, name: str, check: Check) -> DiagnosticStatus:
    """One check as a DiagnosticStatus "<node>: <name>"."""
    return DiagnosticStatus(
        level=_LEVELS[check.severity],
        name=f'{node}: {name}',
        message=check.summary,
        hardware_id=hardware_id,
        values=[
            KeyValue(key=key, value=format_value(value)) for key, value in check.values.items()
        ],
    )


def diagnostic_array(
    stamp: Time, node: str, hardware_id: str, checks: Mapping[str, Check]
) -> DiagnosticArray:
    """Every check of one period in one DiagnosticArray."""
    message = DiagnosticArray()
    message.header.stamp = stamp
    message.status = [
        diagnostic_status(node, hardware_id, name, check) for name, check in checks.items()
    ]
    return message


def format_value(value: object) -> str:
    """Floats to 6 significant digits, everything else as str()."""
    if isinstance(value, float | np.floating):
        return f'{value:.6g}'
    return str(value)


def controller_checks(
    loop: ControllerLoop,
    settings: ControllerSettings,
    waited: str,
    state_age: float | None,
    base_age: float | None,
    clock_hint: str = '',
) -> dict[str, Check]:
    """Every check of the controller now; `base_age` is None on a fixed base.

    `clock_hint`: why the stamps are rejected, when they read another clock than the node's.
    """
    statistics, robot = loop.statistics, loop.controller.robot
    floating = robot.floating_base
    inputs = checks.InputState(
        loop.stale,
        state_age,
        statistics.rate_hz(time.monotonic()),
        waited,
        settings.stale_command,
        base_age,
        settings.odom_pairing if floating else None,
        loop.mode.value,
        clock_hint,
    )
    clipping = checks.clipping_tasks(loop.controller, statistics)
    out_of_reach = checks.out_of_reach_tasks(loop.controller)
    homing = loop.homing is not None and loop.homing.active
    found = {
        'tasks': checks.tasks_check(statistics, clipping, out_of_reach, homing),
        'inputs': checks.inputs_check(statistics, inputs),
        'torques': checks.torques_check(statistics, robot.joint_names, settings.stale_command),
    }
    if loop.controller.contacts:
        found['contacts'] = checks.contacts_check(statistics, loop.controller.friction_coefficient)
    return found


def waited(age: float | None, digits: int, joint_topic: str, odom_topic: str | None) -> str:
    """What the watchdog waits for, e.g. 'no valid joint state for 0.2 s on /joint_states'."""
    topics, what = joint_topic, 'joint state'
    if odom_topic is not None:
        topics += ' + ' + odom_topic
        what = 'joint state + odom pair'
    waiting = f'no {what} yet' if age is None else f'no valid {what} for {age:.{digits}f} s'
    return f'{waiting} on {topics}'


def startup_warnings(loop: ControllerLoop) -> list[str]:
    """Start-up warnings: the URDF read oddly, targets out of reach or unheld, slow rates.

    The URDF read differently from its face value (equal position limits), tasks whose target
    no configuration reaches, posture targets the effort limits cannot hold against gravity,
    joints whose torque rate limit is slow for their effort limit.
    """
    warnings = []
    controller, limiter = loop.controller, loop.output.limiter
    robot = controller.robot
    if robot.zero_range_joints:
        joints = ', '.join(robot.zero_range_joints)
        warnings.append(
            f'the URDF gives {joints} equal lower and upper position limits: taken as '
            'unlimited (no joint-limit walls, no position check on joint states), as MuJoCo '
            'takes them; write their real limits into the URDF'
        )
    for why in checks.out_of_reach_tasks(controller).values():
        warnings.append(
            f'target out of reach, the task cannot be met (the arm stops at the edge of its '
            f'workspace, reaching towards it): {why}'
        )
    if not loop.output.compensates_gravity:  # else the driver holds the weight
        for name, joints in checks.unheld_postures(controller, limiter.effort_limits).items():
            needs = ', '.join(
                f'{j} {g:.3g} N m (limit {limit:.3g})' for j, (g, limit) in joints.items()
            )
            warnings.append(
                f'the effort limits cannot hold the {name} target still against gravity: '
                f'{needs}; the robot will sag from it, pinned at those limits, and may swing '
                'where a task pulls it back. A counterbalance, spring or gear ratio missing '
                'from the URDF? (docs/safety.md, "Effort limits below the weight")'
            )
    slow = checks.slow_torque_rates(robot.joint_names, limiter.effort_limits, limiter.rate_limits)
    if slow:
        joints = ', '.join(f'{name} {seconds:.2g} s' for name, seconds in slow.items())
        warnings.append(
            f'torque_rate_limit is slow for the effort limits: {joints} across the effort '
            f'range (under {checks.SLOW_RATE_RATIO:g} times the effort limit a second). The '
            'joint limits hold (their braking ramps up at that rate), but where a task cannot '
            'be met (a target out of reach) the arm may keep moving in a limit cycle instead of '
            'coming to rest (docs/safety.md, torque_rate_limit)'
        )
    return warnings


def startup_summary(
    controller: PrioritizedController,
    settings: ControllerSettings,
    command_topic: str,
    odom_topic: str | None,
) -> str:
    """The node's start-up line: robot, tasks, contacts, inputs and the command."""
    robot = controller.robot
    summary = f'controlling {robot.name}: tasks '
    summary += ', '.join(entry.name for entry in controller.entries)
    contacts = [f'{c.frame} ({c.kind.value})' for c in controller.contacts]
    summary += f'; contacts {", ".join(contacts)}' if contacts else ''
    if odom_topic is not None:
        summary += f'; floating base, odom on {odom_topic} paired by {settings.odom_pairing}'
    summary += f'; commands for {len(settings.command_joints)} joints on {command_topic}'
    if settings.robot_compensates_gravity:
        summary += ' (tau - g(q): the robot adds gravity itself)'
    if settings.soft_start_time > 0.0:
        summary += f'; soft start over {settings.soft_start_time:g} s'
    return summary
