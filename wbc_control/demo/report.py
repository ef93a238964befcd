"""The demo's record, its summary figures and its plot (matplotlib, no ROS)."""

from dataclasses import dataclass, field
import json
from pathlib import Path
import textwrap

import numpy as np


@dataclass
class DemoRecord:
    """Time series collected during one demo run (sim time in s)."""

    effort_limits: np.ndarray
    joint_names: tuple[str, ...]
    time: list[float] = field(default_factory=list)
    tracking_error: list[float] = field(default_factory=list)  # m
    torque_time: list[float] = field(default_factory=list)
    torques: list[np.ndarray] = field(default_factory=list)  # N m, model order
    kappa_time: list[float] = field(default_factory=list)
    kappa: list[float] = field(default_factory=list)
    estimate_time: list[float] = field(default_factory=list)
    estimate: list[float] = field(default_factory=list)
    path: list[np.ndarray] = field(default_factory=list)  # tracked frame (world, m) per sample
    reference: list[np.ndarray] = field(default_factory=list)  # its target per sample
    payload_kg: float = 0.0  # in the simulator (`wbc_demo --payload`)
    payload_sent_s: float | None = None  # the payload parameters sent to the controller
    payload_set_s: float | None = None  # and acknowledged by it


#: After the controller acknowledged the payload, the seconds the report lets its ramp
#: (`soft_start_time`) and the tracking settle before it measures the error "with" it.
PAYLOAD_SETTLE_S = 1.0


def summarize(record: DemoRecord, settle_s: float) -> dict:
    """Tracking error figures (after `settle_s`), saturation and conditioning ranges."""
    time = np.asarray(record.time)
    error = np.asarray(record.tracking_error)
    settled = error[time >= settle_s] if time.size else error
    torques = np.asarray(record.torques).reshape(-1, len(record.joint_names))
    usage = np.abs(torques) / record.effort_limits if torques.size else np.zeros((0, 1))
    summary = {
        'samples': int(time.size),
        'sim_time_s': float(time[-1]) if time.size else 0.0,
        'tracking_error_rms_mm': _mm(np.sqrt(np.mean(settled**2))) if settled.size else None,
        'tracking_error_max_mm': _mm(settled.max()) if settled.size else None,
        'tracking_error_final_mm': _mm(error[-1]) if error.size else None,
        'peak_torque_fraction_of_limit': float(usage.max()) if usage.size else None,
        'saturated_fraction': float(np.mean(usage >= 1.0 - 1e-9)) if usage.size else None,
        'condition_number_min': float(min(record.kappa)) if record.kappa else None,
        'condition_number_max': float(max(record.kappa)) if record.kappa else None,
    }
    if record.kappa and record.estimate:
        estimate = np.interp(record.kappa_time, record.estimate_time, record.estimate)
        relative = np.abs(estimate - record.kappa) / np.asarray(record.kappa)
        summary['estimate_relative_error_max'] = float(relative.max())
    if record.payload_kg:
        summary |= _payload_figures(record, time, error, settle_s)
    return summary


def _payload_figures(record: DemoRecord, time: np.ndarray, error: np.ndarray, settle_s: float):
    """Tracking error RMS with the payload unknown to the controller, and once it is set.

    Unknown: from `settle_s` to the request; set: from PAYLOAD_SETTLE_S after the controller's
    answer to the end. None where the window holds no sample.
    """
    sent = np.inf if record.payload_sent_s is None else record.payload_sent_s
    answered = np.inf if record.payload_set_s is None else record.payload_set_s
    time = time[: error.size]
    unknown = error[(time >= settle_s) & (time < sent)]
    known = error[time >= answered + PAYLOAD_SETTLE_S]
    return {
        'payload_kg': record.payload_kg,
        'payload_set_at_s': record.payload_set_s,
        'tracking_error_rms_payload_unknown_mm': _rms_mm(unknown),
        'tracking_error_rms_payload_set_mm': _rms_mm(known),
        'tracking_error_max_payload_set_mm': _mm(known.max()) if known.size else None,
    }


def _rms_mm(error: np.ndarray) -> float | None:
    return _mm(np.sqrt(np.mean(error**2))) if error.size else None


def _mm(value: float) -> float:
    return round(float(value) * 1e3, 3)


def write_report(record: DemoRecord, summary: dict, description: str, directory: Path) -> Path:
    """Write summary.txt, summary.json, record.npz and demo.png; returns the PNG path."""
    directory.mkdir(parents=True, exist_ok=True)
    np.savez(
        directory / 'record.npz',
        time=record.time,
        tracking_error=record.tracking_error,
        torque_time=record.torque_time,
        torques=np.asarray(record.torques).reshape(-1, len(record.joint_names)),
        effort_limits=record.effort_limits,
        kappa_time=record.kappa_time,
        kappa=record.kappa,
        estimate_time=record.estimate_time,
        estimate=record.estimate,
        payload_kg=record.payload_kg,
        payload_set_s=np.nan if record.payload_set_s is None else record.payload_set_s,
    )
    (directory / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n')
    width = max(map(len, summary), default=0)
    lines = [description, ''] + [f'{key:{width}s} {value}' for key, value in summary.items()]
    (directory / 'summary.txt').write_text('\n'.join(lines) + '\n')
    return _plot(record, description, directory / 'demo.png')


def _plot(record: DemoRecord, description: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib import pyplot as plt

    figure = plt.figure(figsize=(9, 12))
    grid = figure.add_gridspec(4, 1, height_ratios=[1.4, 1, 1, 1])
    path_axes = figure.add_subplot(grid[0])
    error_axes = figure.add_subplot(grid[1])
    torque_axes = figure.add_subplot(grid[2], sharex=error_axes)
    kappa_axes = figure.add_subplot(grid[3], sharex=error_axes)
    figure.suptitle(textwrap.fill(description, 110), fontsize=10)
    _plot_path(path_axes, record)
    error_axes.plot(record.time, np.asarray(record.tracking_error) * 1e3)
    error_axes.set_ylabel('tracking error (mm)')
    error_axes.set_ylim(bottom=0.0)
    if record.payload_set_s is not None:
        error_axes.axvline(record.payload_set_s, color='k', linestyle=':', linewidth=1.0)
        error_axes.set_title(
            f'{record.payload_kg:g} kg payload: unknown to the controller before the dotted'
            ' line, set as a parameter after it',
            fontsize=8,
        )
    torques = np.asarray(record.torques).reshape(-1, len(record.joint_names))
    for column, name in enumerate(record.joint_names):
        torque_axes.plot(
            record.torque_time, torques[:, column] / record.effort_limits[column], label=name
        )
    torque_axes.axhline(1.0, color='k', linestyle='--', linewidth=0.8)
    torque_axes.axhline(-1.0, color='k', linestyle='--', linewidth=0.8)
    torque_axes.set_ylabel('torque / effort limit')
    torque_axes.legend(fontsize=6, ncol=3, loc='upper right')
    kappa_axes.plot(record.kappa_time, record.kappa, label='κ₂(M) exact')
    kappa_axes.plot(record.estimate_time, record.estimate, '--', label='δs scaled diagonal ratio')
    kappa_axes.set_ylabel('condition number of M')
    kappa_axes.set_xlabel('sim time (s)')
    kappa_axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _plot_path(axes, record: DemoRecord) -> None:
    """The tracked frame's path against its reference, in the plane where they move most."""
    path = np.asarray(record.path).reshape(-1, 3)
    reference = np.asarray(record.reference).reshape(-1, 3)
    if not path.size:
        axes.set_title('no path recorded')
        return
    spread = np.ptp(np.vstack([path, reference]), axis=0)
    first, second = sorted(np.argsort(spread)[-2:])
    names = 'xyz'
    axes.plot(reference[:, first], reference[:, second], 'k--', linewidth=1.0, label='reference')
    axes.plot(path[:, first], path[:, second], linewidth=1.0, label='path')
    axes.set_xlabel(f'{names[first]} (m)')
    axes.set_ylabel(f'{names[second]} (m)')
    axes.set_aspect('equal', adjustable='datalim')
    axes.legend(fontsize=8)
