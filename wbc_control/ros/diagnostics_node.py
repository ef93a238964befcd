"""Diagnostics sidecar ``wbc_diagnostics``: live conditioning of the joint-space inertia matrix.

The node watches M(q) of the robot described by ``robot_description`` / ``urdf_path`` at every
state on ``joint_states`` and publishes how ill-conditioned it is (Shah & Saha 2013): a
diagnostic_msgs/DiagnosticArray on ``/diagnostics`` at ``publish_rate`` and, for every accepted
state, std_msgs/Float64 on ``~/diagonal_ratio``, ``~/scaled_diagonal_ratio`` and (when computed)
``~/condition_number``. It needs neither the controller nor ``odom``.

The figures and the severity come from :mod:`wbc_control.conditioning.monitor`; the parameters
from ``config/wbc_diagnostics_parameters.yaml``. This node only turns messages and parameters
into those calls and their results into messages.
"""

from dataclasses import asdict
import sys

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.timer import Timer
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Header

from wbc_control.conditioning.estimators import ConditioningEstimate
from wbc_control.conditioning.monitor import (
    ConditioningMonitor,
    DiagnosticsSettings,
    InertiaEvaluator,
)
from wbc_control.config.diagnostics import diagnostics_settings
from wbc_control.config.schema import load_schema
from wbc_control.exceptions import InvalidValue, StartupError
from wbc_control.inputs.joint_states import JointStateDecoder, JointStateRejected
from wbc_control.inputs.timing import ClockCheck
from wbc_control.ros.log_throttle import ThrottledLog
from wbc_control.ros.parameters import refuse_unknown
from wbc_control.ros.robot_source import declare_node_parameters, load_robot_model
from wbc_control.ros.runtime import run_node

NODE_NAME = 'wbc_diagnostics'
CHECK_NAME = 'inertia conditioning'
_REJECTION_LOG_PERIOD_S = 5.0


class DiagnosticsNode(Node):
    """ROS 2 node: ``joint_states`` -> M(q) -> conditioning -> ``/diagnostics`` and Float64s."""

    #: Its status timer must fire while states flood it: the events executor queues the
    #: timer behind every pending message (wbc_control/ros/executors.py).
    EXECUTOR = 'single'

    def __init__(self, node_name: str = NODE_NAME) -> None:
        super().__init__(node_name, allow_undeclared_parameters=True)
        self._schema = load_schema(NODE_NAME)
        self._robot = load_robot_model(self).robot
        values = declare_node_parameters(self, self._schema)
        try:
            settings = diagnostics_settings(values)
        except InvalidValue as error:
            raise StartupError(str(error)) from error
        self._monitor = ConditioningMonitor(settings)
        self._inertia = InertiaEvaluator(self._robot)
        # The controller's plausibility rules (one shared schema): both accept the same states.
        self._decoder = JointStateDecoder(
            self._robot,
            position_margin=values['position_margin'],
            velocity_factor=values['velocity_factor'],
        )
        self._clock_check = ClockCheck()  # M needs no clock; the user's setup may, elsewhere
        self._throttled = ThrottledLog(self.get_logger(), _REJECTION_LOG_PERIOD_S)
        self._zero_velocities: dict[int, list[float]] = {}
        self._condition_pub = self.create_publisher(Float64, '~/condition_number', 10)
        self._ratio_pub = self.create_publisher(Float64, '~/diagonal_ratio', 10)
        self._scaled_ratio_pub = self.create_publisher(Float64, '~/scaled_diagonal_ratio', 10)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        # Best effort matches reliable and best-effort publishers alike; only the latest counts.
        joint_state_qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, joint_state_qos)
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._timer = self._create_publish_timer()
        self.add_on_set_parameters_callback(self._validate_update)
        self.add_post_set_parameters_callback(self._apply_update)
        self.get_logger().info(
            f"watching M of '{self._robot.name}' ({self._robot.nv} DoF"
            f'{", floating base" if self._robot.floating_base else ""})'
        )

    def _create_publish_timer(self) -> Timer:
        # On the steady clock: a status keeps coming when simulated time stands still.
        period_s = 1.0 / self._monitor.settings.publish_rate
        return self.create_timer(period_s, self._publish_status, clock=self._steady)

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
        hint = self._clock_check.check(stamp_s, now_s)
        if hint:
            self.get_logger().warning(
                f"joint_states stamped {stamp_s:.6f} s, this node's clock reads {now_s:.6f} s; "
                f'likely cause: {hint}'
            )
        try:
            sample = self._decoder.decode(msg.name, msg.position, velocities, stamp_s)
        except JointStateRejected as error:
            self._monitor.reject(error.reason)
            self._throttled.warning(error.reason, f'rejected joint_states: {error}')
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
        level, message, hint = report.severity, report.message, self._clock_check.hint
        values = [KeyValue(key=key, value=value) for key, value in report.values]
        if hint:
            level, message = max(level, DiagnosticStatus.WARN[0]), f'{message}; clock: {hint}'
            values.append(KeyValue(key='clock_hint', value=hint))
        status = DiagnosticStatus(
            level=bytes([level]),
            name=f'{self.get_name()}: {CHECK_NAME}',
            message=message,
            hardware_id=self._robot.name,
            values=values,
        )
        self._diagnostics_pub.publish(
            DiagnosticArray(header=Header(stamp=now.to_msg()), status=[status])
        )

    def _validate_update(self, parameters: list[Parameter]) -> SetParametersResult:
        refusal = refuse_unknown(self, self._schema, parameters)
        if refusal is not None:
            return refusal
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
        values = asdict(current)
        changes = {p.name: p.value for p in parameters if p.name in values}
        if not changes:
            return current
        return diagnostics_settings({**values, **changes})


def main(args: list[str] | None = None) -> None:
    """Console script ``wbc_diagnostics``."""
    sys.exit(run_node(DiagnosticsNode, NODE_NAME, args))


if __name__ == '__main__':
    main()
