"""The legged demos' measurements and plot, from the recorded states and commands.

Everything is measured again with Pinocchio from joint_states + odom, independently of the
controller: base height and tilt, the lifted foot against its reference path, the commanded
torques against the effort limits, and the contact forces those torques produce on the
contacts closed at the time, from the rigid-contact equations of motion
[M Aᵀ; A 0] [q̈; −f] = [Sᵀτ − h; −Ȧq̇] (Johnson 2024, eq 22), checked against the friction cone
‖f_t‖ ≤ μ f_n.
"""

from dataclasses import dataclass, field
import json
import math
from pathlib import Path

import numpy as np

from wbc_control.control.contact.contacts import CONE_TOLERANCE, Contact, contact_jacobian
from wbc_control.demo.legged import LeggedScenario, path
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

#: A contact pressing less than this (N) is unloaded: releasing or closing, its ‖f_t‖ / f_n is
#: not defined, and is not checked against the cone (nor is |f_n| this small called pulling).
UNLOADED_N = 0.5


@dataclass
class LeggedRecord:
    """What the monitor heard: states (q, v) by stamp, commands by the stamp they answer."""

    times: list[float] = field(default_factory=list)
    configurations: list[np.ndarray] = field(default_factory=list)
    velocities: list[np.ndarray] = field(default_factory=list)
    torque_times: list[float] = field(default_factory=list)
    torques: list[np.ndarray] = field(default_factory=list)
    switch_times: list[float] = field(default_factory=list)
    com_start: np.ndarray | None = None
    foot_start: np.ndarray | None = None


@dataclass
class LeggedSeries:
    """Per-sample measurements of a run."""

    times: np.ndarray
    base_height: np.ndarray  # (n,) m
    tilt_deg: np.ndarray  # (n,)
    foot: np.ndarray  # (n, 3) m
    foot_reference: np.ndarray  # (n, 3) m
    torques: np.ndarray  # (n, n_act) N m, NaN where no command was heard
    normal_forces: dict[str, np.ndarray]  # frame -> (n,) N, NaN while not a contact
    friction_ratio: dict[str, np.ndarray]  # frame -> (n,)
    release_s: float  # when the script releases the foot


def effort_limits(scenario: LeggedScenario, robot: RobotModel) -> np.ndarray:
    """The limits the controller ran with (its `effort_limits` scalar, else the URDF's)."""
    limit = scenario.controller.get('effort_limits')
    return robot.effort_limits if limit is None else np.full(robot.n_actuated, float(limit))


def measure(scenario: LeggedScenario, robot: RobotModel, record: LeggedRecord) -> LeggedSeries:
    """Every per-sample measurement of the module docstring."""
    state = RobotState(robot)
    kinds = dict(zip(scenario.controller['contacts'], scenario.controller['contact_types']))
    contacts = {frame: Contact.create(robot, frame, kind) for frame, kind in kinds.items()}
    commands = dict(zip(record.torque_times, record.torques))
    foot_id = robot.frame_id(scenario.foot_frame)
    n = len(record.times)
    series = LeggedSeries(
        np.array(record.times),
        np.zeros(n),
        np.zeros(n),
        np.zeros((n, 3)),
        np.zeros((n, 3)),
        np.full((n, robot.n_actuated), np.nan),
        {frame: np.full(n, np.nan) for frame in contacts},
        {frame: np.full(n, np.nan) for frame in contacts},
        scenario.contacts[0][0],
    )
    for i, (t, q, v) in enumerate(zip(record.times, record.configurations, record.velocities)):
        state.update(q, v)
        base = state.frame_placement(robot.frame_id(scenario.base_frame))
        series.base_height[i] = base.translation[2]
        series.tilt_deg[i] = math.degrees(math.acos(min(1.0, base.rotation[2, 2])))
        series.foot[i] = state.frame_placement(foot_id).translation
        series.foot_reference[i] = record.foot_start + path(scenario.foot_moves, t)[0]
        if t in commands:
            series.torques[i] = commands[t]
            closed = [contacts[f] for f in contacts if _closed(scenario, f, t)]
            _contact_forces(state, closed, commands[t], series, i)
    return series


def _closed(scenario: LeggedScenario, frame: str, t: float) -> bool:
    return frame != scenario.lifted_foot or not scenario.released(t)


def _contact_forces(state: RobotState, closed, torque, series: LeggedSeries, i: int) -> None:
    """Contact forces of the rigid-contact equations of motion under `torque`."""
    robot = state.robot
    constraint, drift = contact_jacobian(state, closed)  # (m, nv), (m,)
    nv, m = robot.nv, constraint.shape[0]
    generalized = np.zeros(nv)
    generalized[robot.indices.v] = torque
    block = np.block([[state.mass_matrix, constraint.T], [constraint, np.zeros((m, m))]])
    rhs = np.concatenate([generalized - state.nonlinear_effects, -drift])
    forces = -np.linalg.solve(block, rhs)[nv:]
    start = 0
    for contact in closed:
        linear = contact.rows[:, :3].T @ forces[start : start + contact.dim]
        start += contact.dim
        normal = float(linear[2])
        series.normal_forces[contact.frame][i] = normal
        tangential = float(np.hypot(linear[0], linear[1]))
        series.friction_ratio[contact.frame][i] = tangential / normal if normal > 0 else np.inf


def summarize_legged(scenario: LeggedScenario, robot: RobotModel, record: LeggedRecord) -> dict:
    """The figures the tests check and summary.json holds (lengths in mm, angles in deg)."""
    if record.foot_start is None:  # the run ended before the weight shift: nothing to measure
        return {'samples': len(record.times), 'sim_time_s': max(record.times, default=0.0)}
    series = measure(scenario, robot, record)
    scripted = series.times >= scenario.contacts[0][0]  # the foot's path starts at release
    foot_error = np.linalg.norm(series.foot - series.foot_reference, axis=1)[scripted]
    normals = np.concatenate([f[~np.isnan(f)] for f in series.normal_forces.values()])
    ratios = np.concatenate(
        [
            r[f >= UNLOADED_N]
            for r, f in zip(series.friction_ratio.values(), series.normal_forces.values())
        ]
    )
    commanded = series.torques[~np.isnan(series.torques).any(axis=1)]
    limits = effort_limits(scenario, robot)
    mu = scenario.controller['friction_coefficient']
    summary = {
        'robot': scenario.robot,
        'samples': len(record.times),
        'sim_time_s': float(series.times[-1]),
        'switch_times_s': [round(t, 4) for t in record.switch_times],
        'base_height_nominal_m': float(series.base_height[0]),
        'base_height_excursion_mm': 1e3
        * float(np.abs(series.base_height - series.base_height[0]).max()),
        'tilt_max_deg': float(series.tilt_deg.max()),
        'foot_error_max_mm': 1e3 * float(foot_error.max()),
        'foot_error_rms_mm': 1e3 * float(np.sqrt(np.mean(foot_error**2))),
        'foot_lift_max_mm': 1e3 * float((series.foot[:, 2] - record.foot_start[2]).max()),
        'friction_coefficient': mu,
        'friction_ratio_max': float(ratios.max()) if ratios.size else None,
        'normal_force_min_n': float(normals.min()) if normals.size else None,
        'outside_friction_cone_samples': int((ratios > mu * (1.0 + CONE_TOLERANCE)).sum()),
        'pulling_samples': int((normals < -UNLOADED_N).sum()),
        'unloaded_threshold_n': UNLOADED_N,
        'torque_limit_ratio_max': float((np.abs(commanded) / limits).max()),
        'commands': int(commanded.shape[0]),
    }
    return summary


def write_legged_report(
    scenario: LeggedScenario,
    robot: RobotModel,
    record: LeggedRecord,
    summary: dict,
    output: Path,
) -> Path:
    """summary.json, summary.txt, record.npz (the states and commands) and demo.png."""
    (output / 'summary.json').write_text(json.dumps(summary, indent=2))
    np.savez_compressed(
        output / 'record.npz',
        times=np.array(record.times),
        configurations=np.array(record.configurations),
        velocities=np.array(record.velocities),
        torque_times=np.array(record.torque_times),
        torques=np.array(record.torques),
    )
    lines = [scenario.description] + [f'  {key}: {value}' for key, value in summary.items()]
    (output / 'summary.txt').write_text('\n'.join(lines) + '\n')
    png = output / 'demo.png'
    if record.foot_start is None:
        return png
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    series = measure(scenario, robot, record)
    figure, axes = plt.subplots(5, 1, figsize=(10, 16), sharex=True)
    _plot_base(axes[0], series)
    _plot_foot(axes[1], axes[2], series)
    _plot_torques(axes[3], series, effort_limits(scenario, robot))
    _plot_forces(axes[4], series, scenario.controller['friction_coefficient'])
    for axis in axes:
        for t in record.switch_times:
            axis.axvline(t, color='0.6', linestyle=':', linewidth=1)
    axes[-1].set_xlabel('sim time (s); dotted: contacts set')
    figure.suptitle(scenario.description)
    figure.tight_layout()
    figure.savefig(png, dpi=90)
    plt.close(figure)
    return png


def _plot_base(axis, series: LeggedSeries) -> None:
    axis.plot(series.times, 1e3 * (series.base_height - series.base_height[0]), label='height')
    axis.axhline(20.0, color='r', linestyle='--', linewidth=1)
    axis.axhline(-20.0, color='r', linestyle='--', linewidth=1, label='±20 mm')
    axis.set_ylabel('base height − nominal (mm)')
    tilt = axis.twinx()
    tilt.plot(series.times, series.tilt_deg, color='tab:orange', label='tilt')
    tilt.axhline(3.0, color='tab:orange', linestyle='--', linewidth=1)
    tilt.set_ylabel('base tilt (deg), limit 3')
    axis.legend(loc='upper left')


def _plot_foot(path_axis, error_axis, series: LeggedSeries) -> None:
    path_axis.plot(series.times, 1e3 * series.foot_reference[:, 2], 'k--', label='reference z')
    path_axis.plot(series.times, 1e3 * series.foot[:, 2], label='lifted foot z')
    path_axis.set_ylabel('foot height (mm)')
    path_axis.legend(loc='upper right')
    error = 1e3 * np.linalg.norm(series.foot - series.foot_reference, axis=1)
    error[series.times < series.release_s] = np.nan
    error_axis.plot(series.times, error, label='|foot − reference| from its release on')
    error_axis.axhline(5.0, color='r', linestyle='--', linewidth=1, label='5 mm')
    error_axis.set_ylabel('foot tracking error (mm)')
    error_axis.legend(loc='upper right')


def _plot_torques(axis, series: LeggedSeries, limits: np.ndarray) -> None:
    axis.plot(series.times, np.abs(series.torques) / limits, linewidth=0.8)
    axis.axhline(1.0, color='r', linestyle='--', linewidth=1, label='effort limit')
    axis.set_ylabel('|τ| / limit per joint')
    axis.legend(loc='upper right')


def _plot_forces(axis, series: LeggedSeries, mu: float) -> None:
    for frame, normal in series.normal_forces.items():
        axis.plot(series.times, normal, label=f'{frame} f_n')
    axis.set_ylabel('normal force (N)')
    ratio_axis = axis.twinx()
    for ratio in series.friction_ratio.values():
        ratio_axis.plot(series.times, ratio, linestyle=':', linewidth=0.8)
    ratio_axis.axhline(mu, color='r', linestyle='--', linewidth=1)
    ratio_axis.set_ylim(0.0, 1.5 * mu)
    ratio_axis.set_ylabel(f'‖f_t‖ / f_n (dotted), cone μ = {mu}')
    axis.legend(loc='upper left', fontsize='small')
