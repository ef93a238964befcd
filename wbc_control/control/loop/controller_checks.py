"""The controller's health checks: a level and a one-line summary from numbers (no ROS needed).

Four checks, as /diagnostics publishes them ("<node>: tasks", "inputs", "torques",
"contacts"): each is a :class:`Check` (severity, summary, key values) computed from the
:class:`~wbc_control.control.loop.tick_statistics.TickStatistics` of the period; the ros layer only
formats it.
"""

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from wbc_control.control.loop.tick_statistics import TickStatistics
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.control.results import TransitionReport
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.joint_posture import JointPostureTask

#: Base wrench (N, N m) the contact forces may leave unbalanced before the contacts WARN.
BASE_RESIDUAL_WARN = 1e-6
#: A torque rate limit below this many times the joint's effort limit per second (its range
#: −τ̄..τ̄ crossed in more than 0.25 s) left the arms measured in a limit cycle where a task
#: could not be met (docs/safety.md, torque_rate_limit).
SLOW_RATE_RATIO = 8.0


class Severity(IntEnum):
    """How bad a check's finding is (the levels of diagnostic_msgs/DiagnosticStatus)."""

    OK = 0
    WARN = 1
    ERROR = 2


class Check(NamedTuple):
    """One check's outcome."""

    severity: Severity
    summary: str
    values: dict[str, object]


class InputState(NamedTuple):
    """What the node knows about its inputs now (ages in seconds of node time, None: never)."""

    stale: bool
    state_age: float | None
    rate_hz: float
    waited: str  # e.g. 'no valid joint state for 0.21 s on /joint_states'
    stale_command: str
    odom_age: float | None = None
    odom_pairing: str | None = None  # set for a floating base
    control: str = 'active'  # the loop's Mode: 'active', 'stopping' or 'inactive'
    clock_hint: str = ''  # the stamps read another clock than the node's: cause and fix


def clipping_tasks(controller: PrioritizedController, statistics: TickStatistics) -> list[str]:
    """The tasks whose error at the last tick exceeded their `max_error` (clipped)."""
    result = statistics.result
    if result is None:
        return []
    return [
        task.name for task in result.tasks if controller.task(task.name).gains.clips(task.error)
    ]


def out_of_reach_tasks(controller: PrioritizedController) -> dict[str, str]:
    """Tasks whose target point no configuration reaches, each with why (fixed base only).

    The bound of `wbc_control.model.reach`: such a task cannot be met; the arm comes to rest
    at the edge of its workspace, reaching towards the target (docs/safety.md, targets out of
    reach).
    """
    found = {}
    for entry in controller.entries:
        task = entry.task
        beyond = task.beyond_reach()
        if beyond > 0.0:
            reach = task.reach
            found[entry.name] = (
                f'{entry.name} target {beyond + reach.radius:.3g} m from {reach.joint}, which '
                f'reaches {reach.radius:.3g} m at most'
            )
    return found


def unheld_postures(
    controller: PrioritizedController, effort_limits: np.ndarray
) -> dict[str, dict[str, tuple[float, float]]]:
    """Per joint-posture task, the joints whose effort limit cannot hold its target still.

    Still at q the torque is g(q), the generalized gravity (Featherstone 2008, sec 5.3, the
    recursive Newton-Euler algorithm with q̇ = q̈ = 0); a joint with |gᵢ(q)| > τ̄ᵢ cannot
    hold the target: pinned at its limit, the robot sags from it and swings where a task pulls
    it back. Each such joint with (|gᵢ|, τ̄ᵢ), in joint order. Fixed base only (on a floating
    base the contacts share the load) and targets already set; `effort_limits` `(n_act,)`.
    """
    robot = controller.robot
    if robot.floating_base:
        return {}
    state, found = RobotState(robot), {}
    for entry in controller.entries:
        task = entry.task
        if not isinstance(task, JointPostureTask) or task.target_pending:
            continue
        state.update(task.target_configuration(), np.zeros(robot.nv))
        needed = np.abs(state.gravity[robot.indices.v])
        joints = np.flatnonzero(needed > effort_limits)
        if joints.size:
            found[entry.name] = {
                robot.joint_names[j]: (float(needed[j]), float(effort_limits[j])) for j in joints
            }
    return found


def slow_torque_rates(
    joint_names: Sequence[str], effort_limits: np.ndarray, rate_limits: np.ndarray
) -> dict[str, float]:
    """The joints whose torque rate limit is under `SLOW_RATE_RATIO` τ̄ per second.

    Each with the seconds it takes across its effort range, 2 τ̄ / rate, in joint order; the
    arrays are `(n_act,)`, a rate inf where there is none.
    """
    slow = rate_limits < SLOW_RATE_RATIO * effort_limits  # never without a rate limit
    return {
        name: 2.0 * float(effort / rate)
        for name, effort, rate, flag in zip(joint_names, effort_limits, rate_limits, slow)
        if flag
    }


def tasks_check(
    statistics: TickStatistics,
    clipping: Sequence[str] = (),
    out_of_reach: Mapping[str, str] | None = None,
    homing: bool = False,
) -> Check:
    """Per-task errors and each level's conditioning; WARN on a singularity, clipping, reach.

    `homing`: the tasks but the posture are held off (`control.switching.homing`).

    The reach is `out_of_reach_tasks`'. A level with directions lost to a singularity (the
    exact singularity included: counted against the level's generic rank) or damped is named
    with their number.
    """
    result = statistics.result
    out_of_reach = out_of_reach or {}
    values: dict[str, object] = {
        'clipping_tasks': ','.join(clipping),
        'out_of_reach_tasks': ','.join(out_of_reach),
        'homing': homing,
    }
    if result is not None:
        values |= {f'{task.name}.error_norm': task.error_norm for task in result.tasks}
        for level in result.levels:
            prefix = f'level_{level.priority}'
            values[f'{prefix}.tasks'] = ','.join(level.task_names)
            values[f'{prefix}.condition_number'] = level.condition_number
            values[f'{prefix}.rank'] = level.rank
            values[f'{prefix}.damped_directions'] = level.damped_directions
            values[f'{prefix}.residual'] = level.residual
        values |= switching_values(result.transition)
    if statistics.failures_in_period:
        return Check(Severity.ERROR, statistics.last_error, values)
    if result is None:
        return Check(Severity.WARN, 'no torque computed yet (no joint state)', values)
    damped = [level for level in result.levels if level.damped_directions]
    problems = [
        f'level {level.priority} ({",".join(level.task_names)}) singular: '
        f'{level.damped_directions} lost or damped direction(s)'
        for level in damped
    ]
    if clipping:
        problems.append(f'error clipped to max_error: {", ".join(clipping)}')
    if out_of_reach:
        problems.append(f'target out of reach: {"; ".join(out_of_reach.values())}')
    waiting = '; homing: the other tasks wait for the posture' if homing else ''
    if problems:  # homing still named: a held-off task's level may be the singular one
        return Check(Severity.WARN, '; '.join(problems) + waiting, values)
    summary = f'{len(result.tasks)} task(s) on {len(result.levels)} level(s), well conditioned'
    summary += waiting
    if result.transition.switching:
        summary += f'; switching {result.transition.switching}'
    return Check(Severity.OK, summary, values)


def switching_values(report: TransitionReport) -> dict[str, object]:
    """The contact and task switch under way (or the last one): what, how far, largest step."""
    return {
        'switching': report.switching,
        'switch_progress': report.progress,
        'switch_max_torque_step': report.max_torque_step,
        'switches': report.transitions,
    }


def inputs_check(statistics: TickStatistics, inputs: InputState) -> Check:
    """State age and rate, rejected inputs; ERROR while stale, WARN when inputs were rejected.

    Inactive (a managed controller not activated) is OK: nothing is sent, nothing is stale.
    """
    values: dict[str, object] = {
        'control': inputs.control,
        'stale': inputs.stale,
        'joint_state_age_s': _seconds(inputs.state_age),
        'joint_state_rate_hz': inputs.rate_hz,
        **{f'rejected.{key}': count for key, count in sorted(statistics.rejected.items())},
    }
    if inputs.odom_pairing is not None:
        values['odom_age_s'] = _seconds(inputs.odom_age)
        values['odom_pairing'] = inputs.odom_pairing
    if inputs.clock_hint:
        values['clock_hint'] = inputs.clock_hint
    if inputs.control == 'inactive':
        return Check(Severity.OK, 'inactive: no joint state ticks, no command is sent', values)
    if inputs.stale:
        summary = f'stale: {inputs.waited}; publishing the {inputs.stale_command} command'
        if inputs.clock_hint:
            summary += f'; likely cause: {inputs.clock_hint}'
        return Check(Severity.ERROR, summary, values)
    rejected = statistics.rejected_in_period
    if rejected:
        counts = ', '.join(f'{key}: {n}' for key, n in sorted(rejected.items()))
        return Check(
            Severity.WARN, f'{sum(rejected.values())} input(s) rejected ({counts})', values
        )
    summary = f'joint states at {inputs.rate_hz:.1f} Hz'
    if inputs.control == 'stopping':
        summary += f'; soft stop: ramping to the {inputs.stale_command} command'
    return Check(Severity.OK, summary, values)


def torques_check(
    statistics: TickStatistics, joint_names: Sequence[str], safe_command: str
) -> Check:
    """Limited joints, failed ticks and compute times; ERROR when a tick sent the safe command."""
    names = np.array(joint_names)
    values: dict[str, object] = {
        'saturated_joints': ','.join(names[statistics.saturated]),
        'rate_limited_joints': ','.join(names[statistics.rate_limited]),
        'non_finite_torques': statistics.non_finite_torques,
        'compute_errors': statistics.compute_errors,
        'commands_published': statistics.commands,
        'safe_command': safe_command,
        'compute_time_ms.last': 1e3 * statistics.compute_last_s,
        'compute_time_ms.mean': 1e3 * statistics.compute_mean_s(),
        'compute_time_ms.max': 1e3 * statistics.compute_max_s,
    }
    result = statistics.result
    at_limit = () if result is None else result.joints_at_limit
    values['joints_at_limit'] = ','.join(at_limit)
    values['solver'] = '' if result is None else result.solver
    if statistics.failures_in_period:
        summary = f'{statistics.failures_in_period} tick(s) sent the safe command: '
        return Check(Severity.ERROR, summary + statistics.last_error, values)
    limited = statistics.saturated | statistics.rate_limited
    if limited.any():
        return Check(Severity.WARN, f'limited: {", ".join(names[limited])}', values)
    if result is not None and result.solver != 'solved':
        return Check(Severity.WARN, f'hierarchy: {result.solver}', values)
    summary = f'compute {values["compute_time_ms.mean"]:.2f} ms mean per tick'
    if at_limit:
        summary += f'; at a joint-limit bound: {", ".join(at_limit)}'
    return Check(Severity.OK, summary, values)


def contacts_check(statistics: TickStatistics, friction_coefficient: float) -> Check:
    """Contact forces of the last tick; WARN if any pulled or left the cone this period."""
    result = statistics.result
    values: dict[str, object] = {'friction_coefficient': friction_coefficient}
    if result is None:
        return Check(Severity.WARN, 'no contact forces computed yet', values)
    for contact in result.contacts:
        values[f'{contact.frame}.normal_force_n'] = contact.normal_force
        values[f'{contact.frame}.friction_ratio'] = contact.friction_ratio
        values[f'{contact.frame}.pulling'] = contact.pulling
        values[f'{contact.frame}.outside_friction_cone'] = contact.outside_friction_cone
    values['base_wrench_residual'] = result.base_wrench_residual
    problems = [f'{frame} pulling' for frame in sorted(statistics.pulling)]
    problems += [
        f'{frame} outside the friction cone' for frame in sorted(statistics.outside_friction_cone)
    ]
    if result.base_wrench_residual > BASE_RESIDUAL_WARN:
        problems.append(
            'the contacts cannot balance the base wrench (residual '
            f'{result.base_wrench_residual:.3g})'
        )
    if problems:
        return Check(Severity.WARN, '; '.join(problems), values)
    forces = ', '.join(f'{c.frame} {c.normal_force:.1f} N' for c in result.contacts)
    return Check(Severity.OK, f'normal forces {forces}; all inside the friction cone', values)


def _seconds(age: float | None) -> float:
    return float('nan') if age is None else age
