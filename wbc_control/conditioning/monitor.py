"""The conditioning monitor of the diagnostics sidecar: M(q), its figures and their severity.

:class:`InertiaEvaluator` computes the joint-space inertia matrix M(q) alone, by Pinocchio's
composite rigid-body algorithm. A free-flyer takes the base twist in the base frame, so M depends
on the joint positions only (the base block holds the total mass and the whole-body inertia about
the base frame) and the base pose is left at identity: the monitor needs no odometry.

:class:`ConditioningMonitor` keeps the latest figures of Shah & Saha 2013 for each accepted state
(the exact kappa_2 = lambda_max / lambda_min of eq 6 at ``exact_rate``, the diagonal ratio delta
and the scaled diagonal ratio delta_s = alpha delta of eq 15 at every state), counts rejected
states and decides the :class:`Severity` of the status from ``warn_condition`` and
``error_condition``. Nothing here imports rclpy: the sidecar node only wires messages to these
calls.
"""

from dataclasses import dataclass
import enum
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from wbc_control.conditioning.estimators import (
    ConditioningEstimate,
    ScaledDiagonalRatioEstimator,
    pivot_ratio,
)
from wbc_control.defaults import schema_default
from wbc_control.exceptions import InvalidValue
from wbc_control.model.robot_model import RobotModel

#: Reasons of joint-state rejections; each has its own counter in the report.
REJECTION_REASONS = ('ragged', 'joints', 'non_finite', 'out_of_order')
PIVOT_RATIO_NOTE = (
    "Shah & Saha 2013's negative result (Fig. 4): the pivot ratio does not follow the condition "
    'number; do not use it as an estimate'
)
#: Slack on the freshness of an exact kappa, for timers that fire a little late.
_AGE_TOLERANCE_S = 1e-3


class Severity(enum.IntEnum):
    """Severity of a status, with the level values of diagnostic_msgs/DiagnosticStatus."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


def _default(name: str) -> object:
    return schema_default('wbc_diagnostics', name)


@dataclass(frozen=True)
class DiagnosticsSettings:
    """Live settings of the conditioning monitor (the sidecar's parameters of the same names).

    The defaults are the schema's; :func:`wbc_control.config.diagnostics.diagnostics_settings`
    validates parameter values into these settings.

    Attributes:
        warn_condition: WARN when the condition number reaches this.
        error_condition: ERROR when the condition number reaches this.
        exact_rate: Hz of exact eigen-solves (0: at every state).
        rescale_period: s between re-anchorings of alpha (0: never).
        publish_rate: Hz of status reports; an exact kappa stays fresh for one period.
        joint_state_timeout: s without a valid state before the input is stale.
        report_pivot_ratio: also report the pivot ratio (a negative result, off by default).
    """

    warn_condition: float = float(_default('warn_condition'))
    error_condition: float = float(_default('error_condition'))
    exact_rate: float = float(_default('exact_rate'))
    rescale_period: float = float(_default('rescale_period'))
    publish_rate: float = float(_default('publish_rate'))
    joint_state_timeout: float = float(_default('joint_state_timeout'))
    report_pivot_ratio: bool = bool(_default('report_pivot_ratio'))

    @property
    def exact_period_s(self) -> float:
        """Period of exact eigen-solves, 0 for every state."""
        return 1.0 / self.exact_rate if self.exact_rate > 0.0 else 0.0


class InertiaEvaluator:
    """M(q) alone, by Pinocchio's composite rigid-body algorithm (no kinematics, no h(q, v))."""

    def __init__(self, robot: RobotModel) -> None:
        self._robot = robot
        self._data = robot.model.createData()
        self._q = robot.neutral_configuration()
        self._inertia = np.zeros((robot.nv, robot.nv))
        self._lower = np.tril_indices(robot.nv, -1)

    def evaluate(self, joint_positions: np.ndarray) -> np.ndarray:
        """M at the joint positions (actuated order), the base at identity; (nv, nv).

        The returned array is overwritten by the next call.
        """
        self._robot.configuration(joint_positions, out=self._q)
        np.copyto(self._inertia, pin.crba(self._robot.model, self._data, self._q))
        # Older Pinocchio fills the upper triangle only; mirror it so M is exactly symmetric.
        self._inertia[self._lower] = self._inertia.T[self._lower]
        return self._inertia


class ExactCondition(NamedTuple):
    """The latest exact eigen-solve (Shah & Saha 2013, eq 6) and the time of its state."""

    condition_number: float
    lambda_min: float
    lambda_max: float
    t_s: float


class StatusReport(NamedTuple):
    """What one status says: severity, one-line summary, key-value pairs (formatted)."""

    severity: Severity
    message: str
    values: list[tuple[str, str]]


class ConditioningMonitor:
    """Latest conditioning figures of M and the health of the joint-state input (no ROS).

    Feeds every state's M to :class:`ScaledDiagonalRatioEstimator` (Shah & Saha 2013,
    eq 15), with the exact kappa (eq 6) at ``exact_rate`` or at every state when it is 0, and
    decides the severity.
    """

    def __init__(self, settings: DiagnosticsSettings) -> None:
        self._settings = settings
        self._estimator = _estimator_for(settings)
        self.samples = 0
        self.rejected = dict.fromkeys(REJECTION_REASONS, 0)
        self._clear()

    def _clear(self) -> None:
        self._last_state_t_s: float | None = None
        self._estimate: ConditioningEstimate | None = None
        self._exact: ExactCondition | None = None
        self._exact_on_latest = False
        self._relative_error: float | None = None
        self._pivot_ratio: float | None = None
        self._singular: str | None = None

    @property
    def settings(self) -> DiagnosticsSettings:
        """Settings in force."""
        return self._settings

    @property
    def last_state_t_s(self) -> float | None:
        """Time of the latest accepted state, None before the first or after :meth:`restart`."""
        return self._last_state_t_s

    def reconfigure(self, settings: DiagnosticsSettings) -> None:
        """Apply new settings; a new exact_rate or rescale_period re-anchors alpha."""
        if (settings.exact_period_s, settings.rescale_period) != (
            self._settings.exact_period_s,
            self._settings.rescale_period,
        ):
            self._estimator = _estimator_for(settings)
        self._settings = settings

    def restart(self) -> None:
        """Forget the figures and the anchor after the clock jumped back (simulation reset)."""
        self._estimator.reset()
        self._clear()

    def reject(self, reason: str) -> None:
        """Count a rejected joint state."""
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def add_state(self, inertia: np.ndarray, t_s: float) -> ConditioningEstimate | None:
        """Add M of an accepted state at time ``t_s``.

        Returns:
            The estimate of the state, or None if M is not positive definite there (the status
            then turns ERROR).
        """
        self.samples += 1
        self._last_state_t_s = t_s
        force_exact = self._settings.exact_rate == 0.0
        try:
            estimate = self._estimator.update(inertia, t_s, force_exact=force_exact)
        except InvalidValue as error:
            self._singular = str(error)
            return None
        self._singular = None
        self._estimate = estimate
        self._exact_on_latest = estimate.condition_number is not None
        if self._exact_on_latest:
            self._record_exact(estimate, inertia, t_s)
        return estimate

    def _record_exact(
        self, estimate: ConditioningEstimate, inertia: np.ndarray, t_s: float
    ) -> None:
        self._exact = ExactCondition(
            estimate.condition_number, estimate.lambda_min, estimate.lambda_max, t_s
        )
        if estimate.estimate_relative_error is not None:
            self._relative_error = estimate.estimate_relative_error
        if self._settings.report_pivot_ratio:
            self._pivot_ratio = pivot_ratio(inertia)

    def report(self, now_s: float) -> StatusReport:
        """Severity, summary and values at time ``now_s``."""
        severity, message = self._assess(now_s)
        return StatusReport(severity, message, self._values(now_s))

    def _assess(self, now_s: float) -> tuple[Severity, str]:
        settings = self._settings
        if self._last_state_t_s is None:
            return Severity.STALE, f'no valid joint_states yet{self._rejection_summary()}'
        silence_s = now_s - self._last_state_t_s
        if silence_s > settings.joint_state_timeout:
            return Severity.WARN, (
                f'stale joint_states: no valid state for {silence_s:.2f} s '
                f'(joint_state_timeout {settings.joint_state_timeout:g} s)'
            )
        if self._singular is not None:
            return (
                Severity.ERROR,
                f'M is not positive definite at the latest state: {self._singular}',
            )
        kappa, source = self._level_condition(now_s)
        if kappa >= settings.error_condition:
            return Severity.ERROR, _summary(
                kappa, source, '>= error_condition', settings.error_condition
            )
        if kappa >= settings.warn_condition:
            return Severity.WARN, _summary(
                kappa, source, '>= warn_condition', settings.warn_condition
            )
        return Severity.OK, _summary(kappa, source, '< warn_condition', settings.warn_condition)

    def _level_condition(self, now_s: float) -> tuple[float, str]:
        """The value that sets the severity, and its source.

        The exact kappa if it is fresh (computed for the latest state, or within the last
        diagnostics period), else delta_s of the latest state.
        """
        exact = self._exact
        period_s = 1.0 / self._settings.publish_rate + _AGE_TOLERANCE_S
        if exact is not None and (self._exact_on_latest or now_s - exact.t_s <= period_s):
            return exact.condition_number, 'exact'
        return self._estimate.scaled_diagonal_ratio, 'scaled_diagonal_ratio'

    def _values(self, now_s: float) -> list[tuple[str, str]]:
        values = self._exact_values(now_s) + self._estimate_values()
        values += [
            ('estimate_relative_error', _number(self._relative_error)),
            ('level_from', self._level_source(now_s)),
            ('samples', str(self.samples)),
            ('rejected_samples', str(sum(self.rejected.values()))),
        ]
        values += [(f'rejected_samples.{key}', str(count)) for key, count in self.rejected.items()]
        if self._settings.report_pivot_ratio:
            values += [
                ('pivot_ratio', _number(self._pivot_ratio)),
                ('pivot_ratio_note', PIVOT_RATIO_NOTE),
            ]
        return values

    def _exact_values(self, now_s: float) -> list[tuple[str, str]]:
        keys = ('condition_number', 'lambda_min', 'lambda_max', 'condition_number_age')
        exact = self._exact
        if exact is None:
            return [(key, 'nan') for key in keys]
        age_s = max(0.0, now_s - exact.t_s)
        figures = (exact.condition_number, exact.lambda_min, exact.lambda_max)
        return [*zip(keys, map(_number, figures)), (keys[-1], f'{age_s:.3f}')]

    def _estimate_values(self) -> list[tuple[str, str]]:
        keys = ('diagonal_ratio', 'scaled_diagonal_ratio', 'alpha')
        estimate = self._estimate
        if estimate is None:
            return [(key, 'nan') for key in keys]
        return [(key, _number(getattr(estimate, key))) for key in keys]

    def _level_source(self, now_s: float) -> str:
        if self._estimate is None:
            return 'none'
        return self._level_condition(now_s)[1]

    def _rejection_summary(self) -> str:
        counts = [f'{reason} {count}' for reason, count in self.rejected.items() if count]
        return f' ({sum(self.rejected.values())} rejected: {", ".join(counts)})' if counts else ''


def _estimator_for(settings: DiagnosticsSettings) -> ScaledDiagonalRatioEstimator:
    return ScaledDiagonalRatioEstimator(
        rescale_period_s=settings.rescale_period, exact_period_s=settings.exact_period_s
    )


def _summary(kappa: float, source: str, relation: str, threshold: float) -> str:
    how = 'exact' if source == 'exact' else 'estimated by the scaled diagonal ratio'
    return f'condition number {kappa:.4g} ({how}) {relation} {threshold:g}'


def _number(value: float | None) -> str:
    """Full precision (repr round-trips), 'nan' when not available yet."""
    return 'nan' if value is None else repr(float(value))
