"""The controller node `wbc_controller`: joint states and targets in, joint torques out.

A thin translator between ROS and the core (design.md, "The interface users see"):

- `joint_states` (sensor_msgs/JointState, best effort, depth 1: the newest sample wins and the
  subscription connects to reliable and best-effort publishers alike) is decoded by
  :class:`~wbc_control.inputs.joint_states.JointStateDecoder`; every accepted sample runs one tick
  of :class:`~wbc_control.control.prioritized_controller.PrioritizedController` and publishes one
  command.
- `effort_controller/commands` (std_msgs/Float64MultiArray, reliable, volatile, depth 1, which
  matches ros2_control's forward_command_controller) carries the torques in `command_joints`
  order.
- `~/<task>/target` (reliable, depth 1) replaces a task's target: geometry_msgs/PointStamped
  (frame_position, com), geometry_msgs/PoseStamped (frame_orientation uses the orientation
  only, frame_pose both), sensor_msgs/JointState (joint_posture, by name; unnamed joints keep
  their target). `header.frame_id` must be '' or `world_frame`.
- With `floating_base`, `odom` (nav_msgs/Odometry: base pose in `world_frame`, twist in the
  base frame; best effort, depth 1) is decoded by
  :class:`~wbc_control.inputs.odometry.OdometryDecoder`, and a tick needs a joint state and an
  odometry sample paired by :class:`~wbc_control.inputs.odometry.StatePairing` (parameter
  `odom_pairing`: `latest` or `stamp`).
- `contacts` / `contact_types` are the controller's top level (rigid contacts); their forces are
  checked against the friction cone (`friction_coefficient`, live).
- A watchdog publishes the safe command (`stale_command`) while no tick ran for
  `joint_state_timeout` seconds of node time (sim time with `use_sim_time`): no valid joint
  state, or (floating base) no odometry to pair it with.
- `/diagnostics` gets the statuses "<node>: tasks", "<node>: inputs", "<node>: torques" and,
  with contacts, "<node>: contacts".

Parameters are declared in :meth:`ControllerNode._declare_parameters` and validated by
:mod:`wbc_control.config`, which also validates live changes.
"""

import array
from collections import Counter
from dataclasses import replace
from functools import partial
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped, PoseStamped
from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header

from wbc_control.config import (
    LIVE_SETTINGS,
    LIVE_TASK_FIELDS,
    ControllerSettings,
    TaskSpec,
    TaskUpdate,
    apply_task_update,
    build_entries,
    check_task_names,
    parse_contacts,
    parse_controller_settings,
    parse_task,
    plan_task_updates,
    task_class,
    task_fields,
    unknown_task_parameters,
    update_settings,
)
from wbc_control.config.settings import default_settings
from wbc_control.config.tasks import parse_target
from wbc_control.control.contacts import Contact, holding_torque
from wbc_control.control.prioritized_controller import ControllerResult, PrioritizedController
from wbc_control.exceptions import WbcError
from wbc_control.inputs.joint_states import JointSample, JointStateDecoder, JointStateRejected
from wbc_control.inputs.odometry import (
    BaseSample,
    OdometryDecoder,
    OdometryRejected,
    StatePairing,
)
from wbc_control.model.robot_state import RobotState
from wbc_control.ros.runtime import StartupError, load_robot_model, run_node

NODE_NAME = 'wbc_controller'
COMMAND_TOPIC = 'effort_controller/commands'
JOINT_STATE_TOPIC = 'joint_states'
ODOM_TOPIC = 'odom'
COMMAND_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
JOINT_STATE_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT
)
TARGET_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE
)
DIAGNOSTICS_QOS = 10
WATCHDOG_MAX_PERIOD_S = 0.05
LOG_THROTTLE_S = 1.0
#: Base wrench (N, N m) the contact forces may leave unbalanced before the contacts WARN.
BASE_RESIDUAL_WARN = 1e-6

#: Controller-level parameters: name -> (description, live, dynamically typed).
SETTING_PARAMETERS: dict[str, tuple[str, bool, bool]] = {
    'command_joints': (
        'joints of effort_controller/commands, in its order (default: all actuated joints in '
        'model order)',
        False,
        False,
    ),
    'effort_limits': (
        'effort limit per command joint (N m or N; a scalar applies to all); unset: the URDF',
        False,
        True,
    ),
    'torque_rate_limit': (
        'torque rate limit (N m/s), a scalar or one per command joint; 0 = none',
        False,
        True,
    ),
    'joint_state_timeout': (
        'seconds without a valid joint state before the safe command is published',
        False,
        True,
    ),
    'stale_command': (
        'safe command while the state is stale: zero | gravity (holds the last state: g(q), '
        'balanced by the contact forces when there are contacts)',
        True,
        False,
    ),
    'singular_value_threshold': (
        'relative singular value below which task-space inertia is damped, in (0, 1)',
        True,
        True,
    ),
    'world_frame': (
        "frame_id accepted for targets and odom besides '' (default: the URDF root link; "
        'odom with a floating base)',
        False,
        False,
    ),
    'friction_coefficient': (
        'friction coefficient of the contacts, for the friction-cone check of contact forces',
        True,
        True,
    ),
    'odom_pairing': (
        'floating base: latest (each joint state ticks with the newest odom, if fresh) | '
        'stamp (a joint state ticks with the odom of the same stamp)',
        False,
        False,
    ),
    'base_frame': (
        "child_frame_id accepted for odom besides '' (default: the URDF root link)",
        False,
        False,
    ),
    'diagnostics_rate': ('rate of /diagnostics (Hz); 0 disables it', False, True),
}

#: Task parameters tasks.<name>.<field>: field -> (description, default).
TASK_PARAMETERS: dict[str, tuple[str, object]] = {
    'type': (
        'frame_position | frame_orientation | frame_pose | com | joint_posture',
        Parameter.Type.STRING,
    ),
    'frame': ('frame of the robot model the task drives', Parameter.Type.STRING),
    'priority': ('priority level, 0 = highest', 0),
    'kp': ('proportional gain (1/s^2): a scalar or one value per axis', None),
    'kd': ('derivative gain (1/s): scalar or per axis; unset = critical damping 2 sqrt(kp)', None),
    'target': (
        'world frame: xyz | quaternion xyzw | xyz + xyzw | joint positions in model order; '
        'unset = hold the value measured at the first joint state',
        None,
    ),
    'weight': ('weight within the priority level (> 0)', 1.0),
    'constraint': ('frame_position target set: point | line | plane', 'point'),
    'axis': ('line direction or plane normal (world axes) for constraint line / plane', None),
}

_STRUCTURAL_TYPED = {'type', 'frame', 'priority', 'constraint'}
_TARGET_MESSAGES = {
    'frame_position': PointStamped,
    'com': PointStamped,
    'frame_orientation': PoseStamped,
    'frame_pose': PoseStamped,
    'joint_posture': JointState,
}


def stamp_seconds(header: Header) -> float:
    """The header's stamp in seconds."""
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


class Health:
    """Counters and timings for /diagnostics: totals since start, sums over one period."""

    def __init__(self, n_actuated: int) -> None:
        self.rejected: Counter[str] = Counter()
        self.non_finite_torques = 0
        self.compute_errors = 0
        self.last_error = ''
        self.result: ControllerResult | None = None
        self.commands = 0
        self._n = n_actuated
        self.start_period(time.monotonic())

    def start_period(self, now: float) -> None:
        """Forget the per-period sums."""
        self.period_start = now
        self.rejected_in_period: Counter[str] = Counter()
        self.failures_in_period = 0
        self.ticks_in_period = 0
        self.compute_last_s = self.compute_total_s = self.compute_max_s = 0.0
        self.saturated = np.zeros(self._n, dtype=bool)
        self.rate_limited = np.zeros(self._n, dtype=bool)
        self.pulling: set[str] = set()
        self.outside_friction_cone: set[str] = set()

    def reject(self, key: str) -> None:
        """Count one rejected input under `key` (`<input>.<reason>`)."""
        self.rejected[key] += 1
        self.rejected_in_period[key] += 1

    def tick(self, result: ControllerResult | None, seconds: float) -> None:
        """Record one accepted joint state, its compute time and the controller's result."""
        self.ticks_in_period += 1
        self.compute_last_s = seconds
        self.compute_total_s += seconds
        self.compute_max_s = max(self.compute_max_s, seconds)
        if result is not None:
            self.result = result
            self.saturated |= result.saturated
            self.rate_limited |= result.rate_limited
            for contact in result.contacts:
                if contact.pulling:
                    self.pulling.add(contact.frame)
                if contact.outside_friction_cone:
                    self.outside_friction_cone.add(contact.frame)

    def fail(self, kind: str, message: str) -> None:
        """A tick whose torque could not be used (the safe command went out instead)."""
        if kind == 'non_finite':
            self.non_finite_torques += 1
        else:
            self.compute_errors += 1
        self.failures_in_period += 1
        self.last_error = message


class ControllerNode(Node):
    """Runs the prioritized whole-body controller on joint states; see the module docstring."""

    def __init__(self, **kwargs) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._robot = robot = load_robot_model(self).robot
        settings_values, contacts, specs = self._declare_parameters()
        self._settings = settings = parse_controller_settings(robot, settings_values)
        self._specs: dict[str, TaskSpec] = {spec.name: spec for spec in specs}
        self._controller = PrioritizedController(
            robot,
            build_entries(robot, specs),
            settings.singular_value_threshold,
            settings.effort_limits,
            settings.torque_rate_limits,
            contacts,
            settings.friction_coefficient,
        )
        self._hold = {spec.name for spec in specs if spec.target is None}
        self._state = RobotState(robot)
        self._decoder = JointStateDecoder(robot)
        self._odom_decoder = OdometryDecoder(settings.world_frame, settings.base_frame)
        self._pairing = StatePairing(settings.odom_pairing, settings.joint_state_timeout)
        self._q = robot.neutral_configuration()
        self._v = np.zeros(robot.nv)
        self._zero = np.zeros(robot.n_actuated)
        self._command = Float64MultiArray()
        self._has_state = False
        self._stale = False
        self._last_state_time: Time | None = None
        self._last_command_time: Time | None = None
        self._health = Health(robot.n_actuated)
        self._wire(settings)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.get_logger().info(self._startup_summary())

    def _startup_summary(self) -> str:
        robot, settings = self._robot, self._settings
        contacts = ', '.join(f'{c.frame} ({c.kind.value})' for c in self._controller.contacts)
        base = (
            f'; floating base, odom on {self.resolve_topic_name(ODOM_TOPIC)} paired by '
            f'{settings.odom_pairing}'
            if robot.floating_base
            else ''
        )
        return (
            f'controlling {robot.name}: tasks {", ".join(self._specs)}'
            + (f'; contacts {contacts}' if contacts else '')
            + base
            + f'; commands for {len(settings.command_joints)} joints on '
            + self.resolve_topic_name(COMMAND_TOPIC)
        )

    def _wire(self, settings: ControllerSettings) -> None:
        self._publisher = self.create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)
        self.create_subscription(
            JointState, JOINT_STATE_TOPIC, self._on_joint_state, JOINT_STATE_QOS
        )
        if self._robot.floating_base:
            self.create_subscription(Odometry, ODOM_TOPIC, self._on_odom, JOINT_STATE_QOS)
        for spec in self._specs.values():
            self.create_subscription(
                _TARGET_MESSAGES[spec.type],
                f'~/{spec.name}/target',
                partial(self._on_target, spec.name),
                TARGET_QOS,
            )
        period = min(settings.joint_state_timeout / 2.0, WATCHDOG_MAX_PERIOD_S)
        self.create_timer(period, self._on_watchdog)
        if settings.diagnostics_rate > 0.0:
            self._diagnostics = self.create_publisher(
                DiagnosticArray, '/diagnostics', DIAGNOSTICS_QOS
            )
            self.create_timer(1.0 / settings.diagnostics_rate, self._on_diagnostics)

    # Parameters ---------------------------------------------------------------------------

    def _declare_parameters(self) -> tuple[dict[str, object], tuple[Contact, ...], list[TaskSpec]]:
        """Declare every parameter (the one place); returns settings, contacts, tasks."""
        defaults = default_settings(self._robot)
        settings = {
            name: self._declare(name, defaults[name], description, live, dynamic)
            for name, (description, live, dynamic) in SETTING_PARAMETERS.items()
        }
        contacts = parse_contacts(
            self._robot,
            self._declare(
                'contacts',
                Parameter.Type.STRING_ARRAY,
                'frames in rigid contact, the top priority (a floating base needs at least one)',
            ),
            self._declare(
                'contact_types',
                Parameter.Type.STRING_ARRAY,
                'surface | point, one per contact; empty: all surface',
            ),
        )
        task_names = check_task_names(
            self._declare(
                'task_names',
                Parameter.Type.STRING_ARRAY,
                'tasks to run; each is described by tasks.<name>.* parameters',
            )
        )
        kinds = {name: self._declare_task_type(name) for name in task_names}
        overrides = getattr(self, '_parameter_overrides', {})
        for ignored in unknown_task_parameters(kinds, overrides):
            self.get_logger().warning(f'{ignored} ignored: that task is not in task_names')
        specs = [self._declare_task(name, kind) for name, kind in kinds.items()]
        return settings, contacts, specs

    def _declare_task_type(self, name: str) -> str:
        description, default = TASK_PARAMETERS['type']
        return task_class(name, self._declare(f'tasks.{name}.type', default, description)).TYPE

    def _declare_task(self, name: str, kind: str) -> TaskSpec:
        values = {'type': kind}
        for field in task_fields(kind):
            description, default = TASK_PARAMETERS[field]
            values[field] = self._declare(
                f'tasks.{name}.{field}',
                default,
                f'task {name}: {description}',
                live=field in LIVE_TASK_FIELDS,
                dynamic=field not in _STRUCTURAL_TYPED,
            )
        return parse_task(self._robot, name, values)

    def _declare(
        self,
        name: str,
        default: object,
        description: str,
        live: bool = False,
        dynamic: bool = False,
    ) -> object:
        """Declare one parameter; a value of the wrong type is a start-up error naming it."""
        descriptor = ParameterDescriptor(
            description=description, read_only=not live, dynamic_typing=dynamic
        )
        try:
            return self.declare_parameter(name, default, descriptor).value
        except ParameterException as error:
            raise StartupError(f"parameter '{name}': {error}") from error

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a batch of live changes with task_config; apply all of it or none."""
        task_changes, setting_changes = {}, {}
        for parameter in parameters:
            if parameter.name == 'use_sim_time':
                continue
            if parameter.type_ == Parameter.Type.NOT_SET:
                return self._refuse(f'{parameter.name}: cannot be unset at runtime')
            if parameter.name.startswith('tasks.'):
                task_changes[parameter.name] = parameter.value
            elif parameter.name in LIVE_SETTINGS:
                setting_changes[parameter.name] = parameter.value
            else:
                return self._refuse(f'{parameter.name} is read-only at runtime')
        try:
            updates = plan_task_updates(self._robot, self._specs, task_changes)
            settings = update_settings(self._settings, setting_changes)
        except WbcError as error:
            return self._refuse(str(error))
        for update in updates:
            self._apply(update)
        self._controller.singular_value_threshold = settings.singular_value_threshold
        self._controller.friction_coefficient = settings.friction_coefficient
        self._settings = settings
        changed = ', '.join(parameter.name for parameter in parameters)
        self.get_logger().info(f'parameters changed: {changed}')
        return SetParametersResult(successful=True)

    def _refuse(self, reason: str) -> SetParametersResult:
        self.get_logger().warning(f'parameter change rejected: {reason}')
        return SetParametersResult(successful=False, reason=reason)

    def _apply(self, update: TaskUpdate) -> None:
        apply_task_update(self._controller, update)
        self._specs[update.spec.name] = update.spec
        if 'target' in update.fields:
            self._hold.discard(update.spec.name)

    # Inputs -------------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        """Decode; tick now (fixed base) or when the pairing rule has both halves."""
        started = time.perf_counter()
        try:
            sample = self._decoder.decode(
                msg.name, msg.position, msg.velocity, stamp_seconds(msg.header)
            )
        except JointStateRejected as rejection:
            self._reject(f'joint_states.{rejection.reason}', f'joint_states rejected: {rejection}')
            return
        now = self.get_clock().now()
        if not self._robot.floating_base:
            self._tick(sample, None, now, started)
            return
        pair = self._pairing.add_joints(sample, now.nanoseconds * 1e-9)
        if pair is not None:
            self._tick(pair.joints, pair.base, now, started)

    def _on_odom(self, msg: Odometry) -> None:
        """Decode the base state; tick if it completes a pair (`odom_pairing: stamp`)."""
        started = time.perf_counter()
        pose, twist = msg.pose.pose, msg.twist.twist
        try:
            sample = self._odom_decoder.decode(
                msg.header.frame_id,
                msg.child_frame_id,
                [
                    pose.position.x,
                    pose.position.y,
                    pose.position.z,
                    pose.orientation.x,
                    pose.orientation.y,
                    pose.orientation.z,
                    pose.orientation.w,
                ],
                [
                    twist.linear.x,
                    twist.linear.y,
                    twist.linear.z,
                    twist.angular.x,
                    twist.angular.y,
                    twist.angular.z,
                ],
                stamp_seconds(msg.header),
            )
        except OdometryRejected as rejection:
            self._reject(f'odom.{rejection.reason}', f'odom rejected: {rejection}')
            return
        now = self.get_clock().now()
        pair = self._pairing.add_base(sample, now.nanoseconds * 1e-9)
        if pair is not None:
            self._tick(pair.joints, pair.base, now, started)

    def _tick(
        self, joints: JointSample, base: BaseSample | None, now: Time, started: float
    ) -> None:
        """One tick: compute and publish (the safe command if the torque is unusable)."""
        self._last_state_time = now
        if self._stale:
            self._stale = False
            self.get_logger().info(f'{self._state_inputs()} back: control resumed')
        result = self._compute(joints, base, now)
        torque = self._safe_torque() if result is None else result.torque
        self._publish(torque, now)
        self._health.tick(result, time.perf_counter() - started)

    def _state_inputs(self) -> str:
        return 'joint states and odom' if self._robot.floating_base else 'joint states'

    def _compute(
        self, joints: JointSample, base: BaseSample | None, now: Time
    ) -> ControllerResult | None:
        """The controller's result, or None when no finite torque could be computed."""
        robot = self._robot
        base_pose, base_twist = (None, None) if base is None else (base.pose, base.twist)
        try:
            robot.configuration(joints.positions, base_pose, out=self._q)
            robot.velocity(joints.velocities, base_twist, out=self._v)
            self._state.update(self._q, self._v)
            self._has_state = True
            if self._hold:
                self._hold_measured_targets()
            result = self._controller.compute(self._state, self._seconds_since_command(now))
        except WbcError as error:
            self._fail('compute_error', f'controller failed: {error}')
            return None
        if not np.isfinite(result.torque).all():
            self._fail('non_finite', 'non-finite torque computed: the safe command went out')
            return None
        return result

    def _fail(self, kind: str, message: str) -> None:
        self._health.fail(kind, message)
        self.get_logger().error(message, throttle_duration_sec=LOG_THROTTLE_S)

    def _hold_measured_targets(self) -> None:
        """Tasks without a configured target hold what the first joint state measures."""
        for name in sorted(self._hold):
            target = self._controller.task(name).target_from_state(self._state)
            self._set_target(name, target)
            self.get_logger().info(
                f'task {name}: no target configured, holding the measured {target.round(4)}'
            )

    def _on_target(self, name: str, msg: PointStamped | PoseStamped | JointState) -> None:
        """Replace a task's target from `~/<name>/target`, or reject the message."""
        frame = msg.header.frame_id
        if frame not in ('', self._settings.world_frame):
            self._reject(
                'targets.frame',
                f"~/{name}/target rejected: frame_id '{frame}' is not the world frame "
                f"'{self._settings.world_frame}' (or '')",
            )
            return
        spec = self._specs[name]
        try:
            target = self._target_values(spec, msg)
        except WbcError as error:
            self._reject('targets.value', f'~/{name}/target rejected: {error}')
            return
        self._set_target(name, target)

    def _target_values(
        self, spec: TaskSpec, msg: PointStamped | PoseStamped | JointState
    ) -> np.ndarray:
        if spec.type == 'joint_posture':
            return self._controller.task(spec.name).target_from_message(
                self._robot, (msg.name, msg.position)
            )
        if isinstance(msg, PointStamped):
            values = [msg.point.x, msg.point.y, msg.point.z]
        else:
            position, orientation = msg.pose.position, msg.pose.orientation
            quaternion = [orientation.x, orientation.y, orientation.z, orientation.w]
            values = quaternion
            if spec.type == 'frame_pose':
                values = [position.x, position.y, position.z, *quaternion]
        return parse_target(self._robot, spec.type, values)

    def _set_target(self, name: str, target: np.ndarray) -> None:
        spec = replace(self._specs[name], target=target)
        self._apply(TaskUpdate(spec, frozenset({'target'})))

    def _reject(self, key: str, message: str) -> None:
        self._health.reject(key)
        self.get_logger().warning(message, throttle_duration_sec=LOG_THROTTLE_S)

    # Output -------------------------------------------------------------------------------

    def _seconds_since_command(self, now: Time) -> float | None:
        if self._last_command_time is None:
            return None
        return (now - self._last_command_time).nanoseconds * 1e-9

    def _safe_torque(self) -> np.ndarray:
        """The safe command (actuated order), effort-limited; the rate limiter restarts from it."""
        torque = self._zero
        if self._settings.stale_command == 'gravity' and self._has_state:
            gravity = holding_torque(self._state, self._controller.contacts)
            if np.isfinite(gravity).all():
                torque = gravity
        limiter = self._controller.limiter
        limiter.reset()
        return limiter.apply(torque, None).torque

    def _publish(self, torque: np.ndarray, now: Time) -> None:
        data = array.array('d')
        data.frombytes(torque[self._settings.command_index].tobytes())
        self._command.data = data
        self._publisher.publish(self._command)
        self._last_command_time = now
        self._health.commands += 1

    def _on_watchdog(self) -> None:
        """While no tick is fresh, publish the safe command, never the last one."""
        now = self.get_clock().now()
        age = self._state_age(now)
        if age is not None and age <= self._settings.joint_state_timeout:
            return
        if not self._stale:
            self._stale = True
            self.get_logger().warning(
                f'{self._waited(age, 3)}: publishing the {self._settings.stale_command} safe '
                'command'
            )
        self._publish(self._safe_torque(), now)

    def _waited(self, age: float | None, digits: int) -> str:
        """What the watchdog is waiting for, e.g. 'no valid joint state for 0.2 s on /js'."""
        topics = self.resolve_topic_name(JOINT_STATE_TOPIC)
        what = 'joint state'
        if self._robot.floating_base:
            topics += ' + ' + self.resolve_topic_name(ODOM_TOPIC)
            what = 'joint state + odom pair'
        waited = f'no {what} yet' if age is None else f'no valid {what} for {age:.{digits}f} s'
        return f'{waited} on {topics}'

    def _state_age(self, now: Time) -> float | None:
        if self._last_state_time is None:
            return None
        return (now - self._last_state_time).nanoseconds * 1e-9

    # Diagnostics --------------------------------------------------------------------------

    def _on_diagnostics(self) -> None:
        message = DiagnosticArray()
        message.header.stamp = self.get_clock().now().to_msg()
        message.status = [self._tasks_status(), self._inputs_status(), self._torques_status()]
        if self._controller.contacts:
            message.status.append(self._contacts_status())
        self._diagnostics.publish(message)
        self._health.start_period(time.monotonic())

    def _status(self, check: str, level: bytes, summary: str, values: dict) -> DiagnosticStatus:
        return DiagnosticStatus(
            level=level,
            name=f'{self.get_name()}: {check}',
            message=summary,
            hardware_id=self._robot.name,
            values=[KeyValue(key=key, value=_format(value)) for key, value in values.items()],
        )

    def _tasks_status(self) -> DiagnosticStatus:
        health, result = self._health, self._health.result
        values = {}
        if result is not None:
            values = {f'{task.name}.error_norm': task.error_norm for task in result.tasks}
            for level in result.levels:
                prefix = f'level_{level.priority}'
                values[f'{prefix}.tasks'] = ','.join(level.task_names)
                values[f'{prefix}.condition_number'] = level.condition_number
                values[f'{prefix}.rank'] = level.rank
                values[f'{prefix}.damped_directions'] = level.damped_directions
        if health.failures_in_period:
            return self._status('tasks', DiagnosticStatus.ERROR, health.last_error, values)
        if result is None:
            summary = 'no torque computed yet (no joint state)'
            return self._status('tasks', DiagnosticStatus.WARN, summary, values)
        damped = [level for level in result.levels if level.damped_directions]
        if damped:
            summary = '; '.join(
                f'level {level.priority} ({",".join(level.task_names)}) near singular: '
                f'{level.damped_directions} damped direction(s)'
                for level in damped
            )
            return self._status('tasks', DiagnosticStatus.WARN, summary, values)
        summary = f'{len(result.tasks)} task(s) on {len(result.levels)} level(s), well conditioned'
        return self._status('tasks', DiagnosticStatus.OK, summary, values)

    def _inputs_status(self) -> DiagnosticStatus:
        health = self._health
        now = self.get_clock().now()
        age = self._state_age(now)
        elapsed = max(time.monotonic() - health.period_start, 1e-9)
        values = {
            'stale': self._stale,
            'joint_state_age_s': float('nan') if age is None else age,
            'joint_state_rate_hz': health.ticks_in_period / elapsed,
            **{f'rejected.{key}': count for key, count in sorted(health.rejected.items())},
        }
        if self._robot.floating_base:
            odom_age = self._pairing.base_age(now.nanoseconds * 1e-9)
            values['odom_age_s'] = float('nan') if odom_age is None else odom_age
            values['odom_pairing'] = self._settings.odom_pairing
        if self._stale:
            waited = self._waited(age, 2)
            summary = f'stale: {waited}; publishing the {self._settings.stale_command} command'
            return self._status('inputs', DiagnosticStatus.ERROR, summary, values)
        if health.rejected_in_period:
            counts = ', '.join(f'{k}: {n}' for k, n in sorted(health.rejected_in_period.items()))
            summary = f'{sum(health.rejected_in_period.values())} input(s) rejected ({counts})'
            return self._status('inputs', DiagnosticStatus.WARN, summary, values)
        summary = f'joint states at {values["joint_state_rate_hz"]:.1f} Hz'
        return self._status('inputs', DiagnosticStatus.OK, summary, values)

    def _contacts_status(self) -> DiagnosticStatus:
        """Contact forces of the last tick; WARN if any pulled or left the cone this period."""
        health, result = self._health, self._health.result
        values = {'friction_coefficient': self._controller.friction_coefficient}
        if result is None:
            summary = 'no contact forces computed yet'
            return self._status('contacts', DiagnosticStatus.WARN, summary, values)
        for contact in result.contacts:
            values[f'{contact.frame}.normal_force_n'] = contact.normal_force
            values[f'{contact.frame}.friction_ratio'] = contact.friction_ratio
            values[f'{contact.frame}.pulling'] = contact.pulling
            values[f'{contact.frame}.outside_friction_cone'] = contact.outside_friction_cone
        values['base_wrench_residual'] = result.base_wrench_residual
        values['constraint_method'] = result.constraint_method
        problems = [f'{frame} pulling' for frame in sorted(health.pulling)]
        problems += [
            f'{frame} outside the friction cone' for frame in sorted(health.outside_friction_cone)
        ]
        if result.base_wrench_residual > BASE_RESIDUAL_WARN:
            problems.append(
                f'the contacts cannot balance the base wrench (residual '
                f'{result.base_wrench_residual:.3g})'
            )
        if problems:
            return self._status('contacts', DiagnosticStatus.WARN, '; '.join(problems), values)
        forces = ', '.join(f'{c.frame} {c.normal_force:.1f} N' for c in result.contacts)
        summary = f'normal forces {forces}; all inside the friction cone'
        return self._status('contacts', DiagnosticStatus.OK, summary, values)

    def _torques_status(self) -> DiagnosticStatus:
        health = self._health
        names = np.array(self._robot.joint_names)
        count = max(health.ticks_in_period, 1)
        values = {
            'saturated_joints': ','.join(names[health.saturated]),
            'rate_limited_joints': ','.join(names[health.rate_limited]),
            'non_finite_torques': health.non_finite_torques,
            'compute_errors': health.compute_errors,
            'commands_published': health.commands,
            'safe_command': self._settings.stale_command,
            'compute_time_ms.last': 1e3 * health.compute_last_s,
            'compute_time_ms.mean': 1e3 * health.compute_total_s / count,
            'compute_time_ms.max': 1e3 * health.compute_max_s,
        }
        if health.failures_in_period:
            summary = f'{health.failures_in_period} tick(s) sent the safe command: '
            return self._status(
                'torques', DiagnosticStatus.ERROR, summary + health.last_error, values
            )
        if health.saturated.any() or health.rate_limited.any():
            limited = ', '.join(names[health.saturated | health.rate_limited])
            summary = f'limited: {limited}'
            return self._status('torques', DiagnosticStatus.WARN, summary, values)
        summary = f'compute {values["compute_time_ms.mean"]:.2f} ms mean per tick'
        return self._status('torques', DiagnosticStatus.OK, summary, values)


def _format(value: object) -> str:
    if isinstance(value, float | np.floating):
        return f'{value:.6g}'
    return str(value)


def main(args: list[str] | None = None) -> None:
    """Console script `wbc_controller`: exits 0 after Ctrl-C / SIGTERM, 1 if it cannot start."""
    sys.exit(run_node(ControllerNode, NODE_NAME, args))


if __name__ == '__main__':
    main()
