"""Conditioning diagnostics: the cost and the accuracy of the κ₂(M) estimators.

The cost of the exact κ₂(M) (eigvalsh) against the diagonal ratio and the scaled diagonal
ratio (Shah & Saha 2013) for serial chains and the shipped robots, and the estimator's relative
error along the swing of a chain of rods.
"""

from collections.abc import Sequence
import math
from pathlib import Path
import time

import numpy as np
import pinocchio as pin

from wbc_control.benchmark.report import plot_conditioning
from wbc_control.benchmark.rod_chain import serial_chain_urdf
from wbc_control.benchmark.scenarios import example_robot
from wbc_control.benchmark.tick import random_samples
from wbc_control.conditioning.estimators import (
    ScaledDiagonalRatioEstimator,
    condition_number,
    diagonal_ratio,
)
from wbc_control.exceptions import ModelError
from wbc_control.model.example_robots import EXAMPLE_ROBOTS
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

CHAIN_SIZES = (4, 10, 20, 38, 50, 100, 200)
CONDITIONING_REPEATS = 1000
SWING_CHAINS = (4, 10, 20)
SWING_STARTS = {'horizontal': 0.0, 'inclined_60deg': math.pi / 3}
SWING_DT_S = 1e-3
SWING_DURATION_S = 2.0
SWING_SAMPLE_PERIOD_S = 0.01
SWING_RESCALE_PERIOD_S = 0.25


def chain_robot(n_links: int) -> RobotModel:
    """Shah & Saha 2013's planar chain of `n_links` identical rods."""
    return RobotModel.from_urdf_string(serial_chain_urdf(n_links))


def conditioning_cost(
    name: str, robot: RobotModel, repeats: int = CONDITIONING_REPEATS, seed: int = 0
) -> dict:
    """Per-call cost of κ₂ (eigvalsh), δ and the scaled δₛ on M at random configurations."""
    state = RobotState(robot)
    samples = random_samples(robot, 8, seed)
    inertias = []
    for sample in samples:
        state.update(
            robot.configuration(sample.positions, sample.base_pose),
            robot.velocity(sample.velocities, sample.base_twist),
        )
        inertias.append(state.mass_matrix.copy())
    estimator = ScaledDiagonalRatioEstimator()
    estimator.update(inertias[0], 0.0)  # anchored: every later sample is the cheap path
    clock = time.perf_counter_ns
    costs = np.empty((repeats, 3))
    for repeat in range(repeats):
        inertia = inertias[repeat % len(inertias)]
        start = clock()
        condition_number(inertia)
        exact_done = clock()
        diagonal_ratio(inertia)
        ratio_done = clock()
        estimator.update(inertia, 1e-3 * (repeat + 1))
        costs[repeat] = (exact_done - start, ratio_done - exact_done, clock() - ratio_done)
    kappa_us, ratio_us, scaled_us = (float(np.median(column)) * 1e-3 for column in costs.T)
    return {
        'model': name,
        'n': robot.nv,
        'condition_number_us': kappa_us,
        'diagonal_ratio_us': ratio_us,
        'scaled_diagonal_ratio_us': scaled_us,
        'speedup_diagonal_ratio': kappa_us / ratio_us,
        'speedup_scaled_diagonal_ratio': kappa_us / scaled_us,
    }


def conditioning_costs(
    chain_sizes: Sequence[int] = CHAIN_SIZES,
    robot_names: Sequence[str] = tuple(EXAMPLE_ROBOTS),
    repeats: int = CONDITIONING_REPEATS,
) -> list[dict]:
    """:func:`conditioning_cost` for serial chains and the example robots that are installed."""
    rows = [conditioning_cost(f'serial_chain_{n}', chain_robot(n), repeats) for n in chain_sizes]
    for name in robot_names:
        try:
            robot = example_robot(name)
        except ModelError:
            continue
        rows.append(conditioning_cost(name, robot, repeats))
    return rows


def swing(n_links: int, start: str, duration_s: float = SWING_DURATION_S) -> dict:
    """The rod-chain swing: the chain falls from rest; κ, δ and δₛ every 10 ms.

    As in test/test_conditioning.py: `pin.aba` with semi-implicit Euler at 1 ms; δₛ anchored
    at t = 0 only (the paper's estimator), and re-anchored every 0.25 s.
    """
    model = pin.buildModelFromXML(serial_chain_urdf(n_links))
    data = model.createData()
    q, v, tau = np.zeros(n_links), np.zeros(n_links), np.zeros(n_links)
    q[0] = SWING_STARTS[start]
    paper = ScaledDiagonalRatioEstimator(exact_period_s=SWING_SAMPLE_PERIOD_S)
    reanchored = ScaledDiagonalRatioEstimator(
        rescale_period_s=SWING_RESCALE_PERIOD_S, exact_period_s=SWING_SAMPLE_PERIOD_S
    )
    steps_per_sample = round(SWING_SAMPLE_PERIOD_S / SWING_DT_S)
    rows = []
    for step in range(round(duration_s / SWING_DT_S) + 1):
        if step % steps_per_sample == 0:
            inertia = pin.crba(model, data, q)
            t_s = step * SWING_DT_S
            estimate, again = paper.update(inertia, t_s), reanchored.update(inertia, t_s)
            rows.append(
                (
                    t_s,
                    estimate.condition_number,
                    estimate.scaled_diagonal_ratio,
                    estimate.diagonal_ratio,
                    estimate.estimate_relative_error,
                    again.estimate_relative_error,
                )
            )
        v += SWING_DT_S * pin.aba(model, data, q, v, tau)
        q += SWING_DT_S * v
    return _swing_record(n_links, start, rows)


def _swing_record(n_links: int, start: str, rows: list[tuple]) -> dict:
    time_s, kappa, scaled, ratio, error, error_reanchored = (list(column) for column in zip(*rows))
    errors, errors_reanchored = np.array(error[1:]), np.array(error_reanchored[1:])
    correlation = float(np.corrcoef(np.log(kappa), np.log(ratio))[0, 1]) if len(rows) > 2 else None
    return {
        'n': n_links,
        'start': start,
        'samples': len(rows),
        'correlation_log_kappa_log_delta': correlation,
        'median_relative_error': float(np.median(errors)) if errors.size else None,
        'max_relative_error': float(errors.max()) if errors.size else None,
        'median_relative_error_reanchored': (
            float(np.median(errors_reanchored)) if errors.size else None
        ),
        'max_relative_error_reanchored': float(errors_reanchored.max()) if errors.size else None,
        'series': {
            'time_s': time_s,
            'condition_number': kappa,
            'scaled_diagonal_ratio': scaled,
            'relative_error': [None, *errors.tolist()],
        },
    }


def conditioning_section(
    chain_sizes: Sequence[int] = CHAIN_SIZES,
    robot_names: Sequence[str] = tuple(EXAMPLE_ROBOTS),
    repeats: int = CONDITIONING_REPEATS,
    swing_chains: Sequence[int] = SWING_CHAINS,
    swing_duration_s: float = SWING_DURATION_S,
    plot_path: Path | None = None,
) -> dict:
    """Costs, swing errors and (optionally) the plot."""
    costs = conditioning_costs(chain_sizes, robot_names, repeats)
    swings = [swing(n, start, swing_duration_s) for start in SWING_STARTS for n in swing_chains]
    if plot_path is not None:
        plot_conditioning(costs, swings, plot_path)
    at_38 = [row for row in costs if row['model'] == 'serial_chain_38']
    return {
        'cost': costs,
        'speedup_at_38': at_38[0]['speedup_diagonal_ratio'] if at_38 else None,
        'swing': swings,
        'plot': str(plot_path) if plot_path is not None else None,
    }
