"""The conditioning monitor of the diagnostics sidecar, without ROS (Shah & Saha 2013).

Expected figures come from numpy (eigvalsh, the diagonal) on Pinocchio's CRBA, never from
wbc_control.conditioning.estimators.
"""

from dataclasses import asdict
import math

import numpy as np
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.conditioning.monitor import (
    PIVOT_RATIO_NOTE,
    REJECTION_REASONS,
    ConditioningMonitor,
    DiagnosticsSettings,
    InertiaEvaluator,
    Severity,
)
from wbc_control.config.diagnostics import diagnostics_settings as settings_from
from wbc_control.config.schema import load_schema
from wbc_control.exceptions import InvalidValue

REAL_SETTINGS = [name for name in asdict(DiagnosticsSettings()) if name != 'report_pivot_ratio']


def values(report) -> dict[str, str]:
    return dict(report.values)


# ---------------------------------------------------------------------------------------------
# Moved from test/ros/test_diagnostics_node.py (same assertions)


def test_monitor_reports_error_on_a_singular_inertia_and_recovers():
    monitor = ConditioningMonitor(DiagnosticsSettings())
    assert monitor.add_state(np.diag([1.0, 0.0]), t_s=1.0) is None
    report = monitor.report(1.1)
    assert report.severity == Severity.ERROR
    assert 'not positive definite' in report.message
    assert monitor.add_state(np.diag([1.0, 4.0]), t_s=1.2) is not None
    report = monitor.report(1.3)
    assert report.severity == Severity.OK
    assert dict(report.values)['condition_number'] == '4.0'


def test_monitor_restart_anchors_again():
    monitor = ConditioningMonitor(DiagnosticsSettings(exact_rate=0.0))
    monitor.add_state(np.diag([1.0, 4.0]), t_s=5.0)
    monitor.add_state(np.diag([1.0, 8.0]), t_s=6.0)
    monitor.restart()
    assert monitor.report(0.0).severity == Severity.STALE
    estimate = monitor.add_state(np.diag([1.0, 8.0]), t_s=0.5)
    assert estimate.anchored
    assert estimate.scaled_diagonal_ratio == 8.0


def test_settings_accept_integers_and_reject_other_types():
    values = asdict(DiagnosticsSettings())
    assert settings_from({**values, 'warn_condition': 100}).warn_condition == 100.0
    for name, value in [
        ('warn_condition', True),
        ('exact_rate', '10'),
        ('publish_rate', math.inf),
    ]:
        with pytest.raises(InvalidValue, match=name):
            settings_from({**values, name: value})
    with pytest.raises(InvalidValue, match='report_pivot_ratio'):
        settings_from({**values, 'report_pivot_ratio': 1})


# ---------------------------------------------------------------------------------------------
# Severity


@pytest.mark.parametrize(
    ('kappa', 'severity', 'relation'),
    [
        (5.0, Severity.OK, '< warn_condition 10'),
        (10.0, Severity.WARN, '>= warn_condition 10'),
        (100.0, Severity.ERROR, '>= error_condition 100'),
    ],
)
def test_severity_follows_the_thresholds_inclusively(kappa, severity, relation):
    monitor = ConditioningMonitor(
        DiagnosticsSettings(warn_condition=10.0, error_condition=100.0, exact_rate=0.0)
    )
    monitor.add_state(np.diag([1.0, kappa]), t_s=0.0)
    report = monitor.report(0.1)
    assert report.severity == severity
    assert report.message == f'condition number {kappa:.4g} (exact) {relation}'
    assert values(report)['level_from'] == 'exact'


def test_stale_input_warns_after_the_timeout_and_recovers():
    monitor = ConditioningMonitor(DiagnosticsSettings(joint_state_timeout=0.5))
    monitor.add_state(np.diag([1.0, 2.0]), t_s=1.0)
    assert monitor.report(1.5).severity == Severity.OK
    report = monitor.report(1.6)
    assert report.severity == Severity.WARN
    assert report.message.startswith('stale joint_states: no valid state for 0.60 s')
    monitor.add_state(np.diag([1.0, 2.0]), t_s=1.7)
    assert monitor.report(1.8).severity == Severity.OK


def test_an_old_exact_value_hands_the_severity_to_the_estimate():
    settings = DiagnosticsSettings(exact_rate=0.1, publish_rate=10.0, warn_condition=5.0)
    monitor = ConditioningMonitor(settings)
    monitor.add_state(np.diag([1.0, 2.0]), t_s=0.0)  # anchors: exact kappa 2
    monitor.add_state(np.diag([1.0, 6.0]), t_s=0.05)  # delta_s = 6, exact still fresh
    assert monitor.report(0.05).severity == Severity.OK
    report = monitor.report(0.5)
    assert values(report)['level_from'] == 'scaled_diagonal_ratio'
    assert report.severity == Severity.WARN
    assert 'estimated by the scaled diagonal ratio' in report.message
    assert values(report)['condition_number_age'] == '0.500'


def test_before_any_state_the_report_is_stale_and_counts_rejections():
    monitor = ConditioningMonitor(DiagnosticsSettings())
    monitor.reject('ragged')
    monitor.reject('ragged')
    monitor.reject('non_finite')
    report = monitor.report(0.0)
    assert report.severity == Severity.STALE
    assert report.message == 'no valid joint_states yet (3 rejected: ragged 2, non_finite 1)'
    figures = values(report)
    assert figures['rejected_samples'] == '3'
    assert {f'rejected_samples.{reason}' for reason in REJECTION_REASONS} <= figures.keys()
    assert figures['condition_number'] == figures['scaled_diagonal_ratio'] == 'nan'
    assert figures['level_from'] == 'none'


# ---------------------------------------------------------------------------------------------
# Figures against numpy


def test_reported_figures_equal_numpy_on_panda():
    panda = robot('panda')
    evaluator = InertiaEvaluator(panda)
    monitor = ConditioningMonitor(DiagnosticsSettings(exact_rate=0.0))
    rng = np.random.default_rng(0)
    for step in range(3):
        positions = rng.uniform(*panda.position_limits)
        inertia = evaluator.evaluate(positions)
        monitor.add_state(inertia, t_s=0.1 * step)
    eigenvalues = np.linalg.eigvalsh(inertia)
    diagonal = np.diag(inertia)
    figures = values(monitor.report(0.25))
    assert float(figures['condition_number']) == pytest.approx(
        eigenvalues[-1] / eigenvalues[0], rel=1e-12
    )
    assert float(figures['lambda_min']) == pytest.approx(eigenvalues[0], rel=1e-12)
    assert float(figures['diagonal_ratio']) == pytest.approx(
        diagonal.max() / diagonal.min(), rel=1e-12
    )
    assert figures['samples'] == '3'


def test_inertia_evaluator_is_the_symmetric_crba_and_ignores_the_base_pose():
    talos = robot('talos')
    evaluator = InertiaEvaluator(talos)
    positions = np.random.default_rng(1).uniform(*talos.position_limits)
    pose = np.array([0.3, -0.2, 1.0, 0.2, 0.1, -0.3, 0.9])
    pose[3:] /= np.linalg.norm(pose[3:])
    q = talos.configuration(positions, pose)
    upper = pin.crba(talos.model, talos.model.createData(), q)
    expected = np.triu(upper) + np.triu(upper, 1).T
    inertia = evaluator.evaluate(positions)
    np.testing.assert_allclose(inertia, expected, rtol=0.0, atol=1e-12 * np.abs(expected).max())
    assert np.array_equal(inertia, inertia.T)


def test_pivot_ratio_only_on_request_and_labelled_negative():
    inertia = np.array([[4.0, 1.0], [1.0, 2.0]])
    monitor = ConditioningMonitor(DiagnosticsSettings())
    monitor.add_state(inertia, t_s=0.0)
    assert 'pivot_ratio' not in values(monitor.report(0.0))
    monitor.reconfigure(DiagnosticsSettings(report_pivot_ratio=True))
    monitor.add_state(inertia, t_s=0.1)
    figures = values(monitor.report(0.1))
    pivots = np.square(np.diag(np.linalg.cholesky(inertia)))
    assert float(figures['pivot_ratio']) == pytest.approx(pivots.max() / pivots.min(), rel=1e-12)
    assert figures['pivot_ratio_note'] == PIVOT_RATIO_NOTE
    assert 'negative result' in PIVOT_RATIO_NOTE and 'seed' not in PIVOT_RATIO_NOTE


def test_a_new_exact_rate_anchors_alpha_again():
    monitor = ConditioningMonitor(DiagnosticsSettings(exact_rate=0.0))
    monitor.add_state(np.diag([1.0, 4.0]), t_s=0.0)
    monitor.reconfigure(DiagnosticsSettings(exact_rate=0.0, warn_condition=50.0))
    assert not monitor.add_state(np.diag([1.0, 8.0]), t_s=0.1).anchored
    monitor.reconfigure(DiagnosticsSettings(exact_rate=5.0))
    assert monitor.add_state(np.diag([1.0, 8.0]), t_s=0.2).anchored


# ---------------------------------------------------------------------------------------------
# Settings and the parameter schema


def test_settings_refuse_crossed_thresholds():
    with pytest.raises(InvalidValue, match='must be below error_condition'):
        settings_from({**asdict(DiagnosticsSettings()), 'warn_condition': 1e6})


def test_schema_defaults_are_the_settings_defaults():
    schema = load_schema('wbc_diagnostics')
    for name, default in asdict(DiagnosticsSettings()).items():
        assert schema[name].default == default, name
        assert schema[name].live, name


@pytest.mark.parametrize('name', REAL_SETTINGS)
@pytest.mark.parametrize('value', [-1.0, 0.0, 0.5, 1.0, 2.0])
def test_schema_rules_and_settings_agree(name, value):
    """The schema documents the bounds settings_from enforces: both accept or both refuse."""
    spec = load_schema('wbc_diagnostics')[name]
    defaults = asdict(DiagnosticsSettings(warn_condition=1.0, error_condition=1e9))
    try:
        spec.check(value)
        schema_accepts = True
    except InvalidValue:
        schema_accepts = False
    try:
        settings_from({**defaults, name: value})
        settings_accept = True
    except InvalidValue as error:
        settings_accept = 'error_condition (' in str(error)  # the cross-field rule, not a bound
    assert schema_accepts == settings_accept
