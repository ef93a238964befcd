"""Diagnostics sidecar ``wbc_diagnostics``: live conditioning of the joint-space inertia matrix.

The node watches M(q) of the robot described by ``robot_description`` / ``urdf_path`` at every
state on ``joint_states`` and reports how ill-conditioned it is (seed 001, Shah & Saha 2013):
the exact kappa_2 = lambda_max / lambda_min of eq (6) at ``exact_rate`` Hz, and at every state the
diagonal ratio delta and the scaled diagonal ratio delta_s = alpha delta of eq (15). It needs
neither the controller nor ``odom``: Pinocchio's free-flyer takes the base twist in the base
frame, so the composite rigid-body algorithm never sees the base pose and M depends on the joint
positions only (the base block holds the total mass and the whole-body inertia about the base
frame). The base pose is therefore left at identity.

All the mathematics is in :mod:`wbc_control.conditioning.estimators`;
:class:`ConditioningMonitor` keeps
the latest figures and decides the level, and :class:`DiagnosticsNode` only turns messages and
parameters into those calls and their results into messages.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
import enum
import math
import numbers
import sys
from typing import Any, NamedTuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np
import pinocchio as pin
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.timer import Timer
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Header

from wbc_control.conditioning.estimators import (
    ConditioningEstimate,
    ScaledDiagonalRatioEstimator,
    pivot_ratio,
)
from wbc_control.exceptions import InvalidValue
from wbc_control.inputs.joint_states import JointStateDecoder, JointStateRejected
from wbc_control.model.robot_model import RobotModel
from wbc_control.ros.runtime import (
    StartupError,
    load_robot_model,
    run_node,
)

NODE_NAME = 'wbc_diagnostics'
CHECK_NAME = 'inertia conditioning'
# Reasons of JointStateDecoder rejections; each has its own counter on /diagnostics.
REJECTION_REASONS = ('ragged', 'joints', 'non_finite', 'out_of_order')
PIVOT_RATIO_NOTE = (
    "seed 001's negative result (Fig. 4): the pivot ratio does not follow the condition "
    'number; do not use it as an estimate'
)
_REJECTION_LOG_PERIOD_S = 5.0
# Slack on the freshness of an exact kappa, for timers that fire a little late.
_AGE_TOLERANCE_S = 1e-3


class Level(enum.IntEnum):
    """Status levels, with the values of diagnostic_msgs/DiagnosticStatus."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


@dataclass(frozen=True)
class DiagnosticsSettings:
    """Live parameters of the node; see :data:`PARAMETER_DESCRIPTIONS` for their meaning."""

    warn_condition: float = 1e4
    error_condition: float = 1e6
    exact_rate: float = 10.0
    rescale_period: float = 0.0
    publish_rate: float = 1.0
    joint_state_timeout: float = 0.5
    report_pivot_ratio: bool = False

    @property
    def exact_period_s(self) -> float:
        """Period of exact eigen-solves, 0 for every state."""
        return 1.0 / self.exact_rate if self.exact_rate > 0.0 else 0.0


PARAMETER_DESCRIPTIONS: dict[str, str] = {
    'warn_condition': 'WARN when the condition number of M reaches this (>= 1, < error_condition)',
    'error_condition': 'ERROR when the condition number of M reaches this (> warn_condition)',
    'exact_rate': 'Hz of exact eigen-solves of M for kappa_2 (>= 0; 0: at every joint state)',
    'rescale_period': 's between re-anchorings of alpha with an exact kappa (>= 0; 0: never)',
    'publish_rate': 'Hz of /diagnostics (> 0)',
    'joint_state_timeout': 's without a valid joint state before the status is stale (> 0)',
    'report_pivot_ratio': "publish the pivot ratio, seed 001's negative result (off by default)",
}


class _Range(NamedTuple):
    valid: Callable[[float], bool]
    requirement: str


_RANGES: dict[str, _Range] = {
    'warn_condition': _Range(lambda x: x >= 1.0, '>= 1'),
    'error_condition': _Range(lambda x: x > 1.0, '> 1'),
    'exact_rate': _Range(lambda x: x >= 0.0, '>= 0 (0: every joint state)'),
    'rescale_period': _Range(lambda x: x >= 0.0, '>= 0 (0: never)'),
    'publish_rate': _Range(lambda x: x > 0.0, '> 0'),
    'joint_state_timeout': _Range(lambda x: x > 0.0, '> 0'),
}


def settings_from(values: Mapping[str, Any]) -> DiagnosticsSettings:
    """Validate parameter values (start-up and live updates alike) into settings.

    Integers are accepted for the real-valued parameters, since ``-p warn_condition:=1000`` and
    ``ros2 param set`` pass them as integers.

    Args:
        values: Parameter name -> value, for every field of :class:`DiagnosticsSettings`.

    Returns:
        The validated settings.

    Raises:
        InvalidValue: A value has the wrong type or range, or warn_condition >= error_condition;
            the message names the parameter.
    """
    reals = {name: _real(name, values[name], rule) for name, rule in _RANGES.items()}
    if reals['warn_condition'] >= reals['error_condition']:
        raise InvalidValue(
            f'warn_condition ({reals["warn_condition"]:g}) must be below '
            f'error_condition ({reals["error_condition"]:g})'
        )
    pivot = values['report_pivot_ratio']
    if not isinstance(pivot, bool):
        raise InvalidValue(f"parameter 'report_pivot_ratio' must be a bool, got {pivot!r}")
    return DiagnosticsSettings(report_pivot_ratio=pivot, **reals)


def _real(name: str, value: Any, rule: _Range) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidValue(f"parameter '{name}' must be a number, got {value!r}")
    if not math.isfinite(value):
        raise InvalidValue(f"parameter '{name}' must be finite, got {value!r}")
    if not rule.valid(value):
        raise InvalidValue(f"parameter '{name}' must be {rule.requirement}, got {value:g}")
    return float(value)


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
    """The latest exact eigen-solve (seed 001 eq 6) and the time of its state."""

    condition_number: float
    lambda_min: float
    lambda_max: float
    t_s: float


class StatusReport(NamedTuple):
    """What one DiagnosticStatus says: level, one-line summary, key-value pairs (formatted)."""

    level: Level
    message: str
    values: list[tuple[str, str]]


class ConditioningMonitor:
    """Latest conditioning figures of M and the health of the joint-state input (no ROS).

    Feeds every state's M to :class:`ScaledDiagonalRatioEstimator` (seed 001 eq 15), with the
    exact kappa (eq 6) at ``exact_rate`` or at every state when it is 0, and decides the level.
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
        """Level, summary and values at time ``now_s``."""
        level, message = self._assess(now_s)
        return StatusReport(level, message, self._values(now_s))

    def _assess(self, now_s: float) -> tuple[Level, str]:
        settings = self._settings
        if self._last_state_t_s is None:
            return Level.STALE, f'no valid joint_states yet{self._rejection_summary()}'
        silence_s = now_s - self._last_state_t_s
        if silence_s > settings.joint_state_timeout:
            return Level.WARN, (
                f'stale joint_states: no valid state for {silence_s:.2f} s '
                f'(joint_state_timeout {settings.joint_state_timeout:g} s)'
            )
        if self._singular is not None:
            return Level.ERROR, f'M is not positive definite at the latest state: {self._singular}'
        kappa, source = self._level_condition(now_s)
        if kappa >= settings.error_condition:
            return Level.ERROR, _summary(
                kappa, source, '>= error_condition', settings.error_condition
            )
        if kappa >= settings.warn_condition:
            return Level.WARN, _summary(
                kappa, source, '>= warn_condition', settings.warn_condition
            )
        return Level.OK, _summary(kappa, source, '< warn_condition', settings.warn_condition)

    def _level_condition(self, now_s: float) -> tuple[float, str]:
        """The value that sets the level, and its source.

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


class DiagnosticsNode(Node):
    """ROS 2 node: ``joint_states`` -> M(q) -> conditioning -> ``/diagnostics`` and Float64s."""

    def __init__(self, node_name: str = NODE_NAME) -> None:
        super().__init__(node_name)
        self._robot = load_robot_model(self).robot
        self._monitor = ConditioningMonitor(self._declare_settings())
        self._inertia = InertiaEvaluator(self._robot)
        self._decoder = JointStateDecoder(self._robot)
        self._zero_velocities: dict[int, list[float]] = {}
        self._condition_pub = self.create_publisher(Float64, '~/condition_number', 10)
        self._ratio_pub = self.create_publisher(Float64, '~/diagonal_ratio', 10)
        self._scaled_ratio_pub = self.create_publisher(Float64, '~/scaled_diagonal_ratio', 10)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        # Best effort matches reliable and best-effort publishers alike; only the latest counts.
        joint_state_qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, joint_state_qos)
        self._timer = self._create_publish_timer()
        self.add_on_set_parameters_callback(self._validate_update)
        self.add_post_set_parameters_callback(self._apply_update)
        self.get_logger().info(
            f"watching M of '{self._robot.name}' ({self._robot.nv} DoF"
            f'{", floating base" if self._robot.floating_base else ""})'
        )

    def _declare_settings(self) -> DiagnosticsSettings:
        defaults = DiagnosticsSettings()
        values = {}
        for field in fields(DiagnosticsSettings):
            descriptor = ParameterDescriptor(
                description=PARAMETER_DESCRIPTIONS[field.name],
                dynamic_typing=field.name != 'report_pivot_ratio',
            )
            default = getattr(defaults, field.name)
            values[field.name] = self.declare_parameter(field.name, default, descriptor).value
        try:
            return settings_from(values)
        except InvalidValue as error:
            raise StartupError(str(error)) from error

    def _create_publish_timer(self) -> Timer:
        return self.create_timer(1.0 / self._monitor.settings.publish_rate, self._publish_status)

    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_joint_state(self, msg: JointState) -> None:
        now_s = self._now_s()
        last_s = self._monitor.last_state_t_s
        if last_s is not None and now_s < last_s:
            self.get_logger().info('clock jumped back: anchoring alpha again')
            self._monitor.restart()
            self._decoder.reset()
        # M depends on positions only, so a state without velocities is complete here.
        velocities = msg.velocity if len(msg.velocity) else self._zeros(len(msg.name))
        stamp_s = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        try:
            sample = self._decoder.decode(msg.name, msg.position, velocities, stamp_s)
        except JointStateRejected as error:
            self._monitor.reject(error.reason)
            self.get_logger().warning(
                f'rejected joint_states: {error}', throttle_duration_sec=_REJECTION_LOG_PERIOD_S
            )
            return
        inertia = self._inertia.evaluate(sample.positions)
        estimate = self._monitor.add_state(inertia, now_s)
        if estimate is not None:
            self._publish_numbers(estimate)

    def _zeros(self, count: int) -> list[float]:
        return self._zero_velocities.setdefault(count, [0.0] * count)

    def _publish_numbers(self, estimate: ConditioningEstimate) -> None:
        if estimate.condition_number is not None:
            self._condition_pub.publish(Float64(data=estimate.condition_number))
        self._ratio_pub.publish(Float64(data=estimate.diagonal_ratio))
        self._scaled_ratio_pub.publish(Float64(data=estimate.scaled_diagonal_ratio))

    def _publish_status(self) -> None:
        now = self.get_clock().now()
        report = self._monitor.report(now.nanoseconds * 1e-9)
        status = DiagnosticStatus(
            level=bytes([report.level]),
            name=f'{self.get_name()}: {CHECK_NAME}',
            message=report.message,
            hardware_id=self._robot.name,
            values=[KeyValue(key=key, value=value) for key, value in report.values],
        )
        self._diagnostics_pub.publish(
            DiagnosticArray(header=Header(stamp=now.to_msg()), status=[status])
        )

    def _validate_update(self, parameters: list[Parameter]) -> SetParametersResult:
        try:
            self._updated_settings(parameters)
        except InvalidValue as error:
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _apply_update(self, parameters: list[Parameter]) -> None:
        old_rate = self._monitor.settings.publish_rate
        self._monitor.reconfigure(self._updated_settings(parameters))
        if self._monitor.settings.publish_rate != old_rate:
            self.destroy_timer(self._timer)
            self._timer = self._create_publish_timer()

    def _updated_settings(self, parameters: list[Parameter]) -> DiagnosticsSettings:
        current = self._monitor.settings
        changes = {p.name: p.value for p in parameters if p.name in PARAMETER_DESCRIPTIONS}
        if not changes:
            return current
        values = {name: getattr(current, name) for name in PARAMETER_DESCRIPTIONS}
        values.update(changes)
        return settings_from(values)


def main(args: list[str] | None = None) -> None:
    """Console script ``wbc_diagnostics``."""
    sys.exit(run_node(DiagnosticsNode, NODE_NAME, args))


if __name__ == '__main__':
    main()
