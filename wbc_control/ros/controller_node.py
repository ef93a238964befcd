"""The controller node `wbc_controller`: joint states and targets in, joint torques out.

A managed node (the ROS 2 node lifecycle, rclpy.lifecycle): `configure` loads the model,
validates the parameters and creates the topics (a failure names the parameter and leaves the
node unconfigured), `activate` starts commanding with the soft start, `deactivate` ramps to the
safe command over `soft_stop_time` and then publishes nothing, `cleanup` releases what
`configure` built (the parameters stay declared), `shutdown` sends the safe command if it was
commanding and releases everything. With `autostart` (the default) the node configures and
activates itself as it starts, and a configure failure is a start-up error.

Wiring only; the work is in :class:`~wbc_control.control.controller_loop.ControllerLoop`.
Each accepted `joint_states` sample (best effort, depth 1; paired with `odom` for a floating
base) is one tick and one command on `effort_controller/commands` (reliable, depth 1, as
ros2_control's forward_command_controller expects). `~/<task>/target` and
`~/<task>/trajectory` are wired by :mod:`wbc_control.ros.task_inputs`, `~/markers` (RViz) by
:mod:`wbc_control.ros.markers`. Stamps are
judged against the node's clock; a watchdog on the wall clock sends the safe command while no
tick ran for `joint_state_timeout` s of node or wall time, and a jump of the node's clock or
of the publisher's stamps backwards restarts the input rules, the watchdog and the soft start
(:mod:`wbc_control.inputs.timing`). Parameters
come from the schema (:mod:`wbc_control.ros.controller_parameters`); a live set is validated
whole in the on-set callback and applied in the post-set callback.
"""

from functools import partial
import os
from pathlib import Path
import sys
import time
import traceback

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType, JumpThreshold, TimeJump
from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control import cpu_latency
from wbc_control.config import build_entries
from wbc_control.config.assembly import build_inputs, build_loop
from wbc_control.config.live import LiveUpdate, apply_live_update, plan_live_update
from wbc_control.config.schema import load_schema
from wbc_control.control import controller_checks as checks
from wbc_control.control.controller_loop import ControllerLoop, Mode
from wbc_control.cpu_latency import CpuLatencyRequest, CpuLatencyUnavailable
from wbc_control.exceptions import StartupError, WbcError
from wbc_control.inputs.joint_states import JointSample, JointStateRejected
from wbc_control.inputs.odometry import BaseSample, OdometryRejected
from wbc_control.inputs.timing import check_period
from wbc_control.ros import controller_status as status
from wbc_control.ros import messages
from wbc_control.ros.controller_parameters import declare_controller_parameters
from wbc_control.ros.dds_transport import use_udp_transport
from wbc_control.ros.log_throttle import ThrottledLog
from wbc_control.ros.markers import MarkerPublisher
from wbc_control.ros.parameters import declare, refuse_unknown
from wbc_control.ros.runtime import load_robot_model, run_node
from wbc_control.ros.task_inputs import TaskInputs
from wbc_control.viz.snapshot import snapshot

NODE_NAME = 'wbc_controller'
COMMAND_TOPIC = 'effort_controller/commands'
JOINT_STATE_TOPIC = 'joint_states'
ODOM_TOPIC = 'odom'
# Keep-last depth 1 throughout: the newest sample wins.
COMMAND_QOS = QoSProfile(
    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE
)
STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
WATCHDOG_MAX_PERIOD_S = 0.05
# Under use_sim_time a simulator slower than real time is no fault: the wall-clock watchdog
# only catches a stopped clock, so its limit is at least this (s).
SIM_WALL_TIMEOUT_S = 1.0
LOG_THROTTLE_S = 1.0
SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE


class ControllerNode(LifecycleNode):
    """Runs the prioritized whole-body controller on joint states; see the module docstring."""

    def __init__(self, transport_note: str | None = None, **kwargs) -> None:
        super().__init__(NODE_NAME, allow_undeclared_parameters=True, **kwargs)
        if transport_note is not None:
            self.get_logger().info(transport_note)
        self._schema = load_schema(NODE_NAME)
        self._loop: ControllerLoop | None = None  # built by configure
        self._cpu_latency: CpuLatencyRequest | None = None
        self._jump_handle = None
        self._created: list = []  # the publishers, subscriptions and timers configure made
        self._configuring = self._starting = False
        self._failure: Exception | None = None  # why the last configure failed
        self._planned: LiveUpdate | None = None
        autostart = declare(self, self._schema['autostart'])
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._on_parameters_set)
        if autostart:
            self._start()

    def _start(self) -> None:
        """Configure and activate (`autostart`); a configure failure is a start-up error."""
        self._starting = True
        try:
            if self.trigger_configure() != SUCCESS:
                raise self._failure or StartupError('configure failed')
            if self.trigger_activate() != SUCCESS:
                raise StartupError('activate failed')
        finally:
            self._starting = False

    # Lifecycle transitions ----------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load the model, validate the parameters, create the topics: inactive."""
        self._configuring = True
        try:
            self._configure()
        except Exception as error:  # noqa: BLE001  (whatever failed, the node stays unconfigured)
            self._release()
            self._failure = error
            if not self._starting:  # at start-up, run_node reports it
                self._report('configure failed', error)
            return FAILURE
        finally:
            self._configuring = False
        return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Command from the next joint state on, with the soft start from that state."""
        self._loop.activate()
        ramp = self._settings.soft_start_time
        soft_start = f', soft start over {ramp:g} s' if ramp > 0.0 else ''
        self.get_logger().info(f'active: commanding from the next joint state{soft_start}')
        return SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Ramp to the safe command over `soft_stop_time`, then publish nothing."""
        kind = self._settings.stale_command
        if self._loop.deactivate():
            self.get_logger().info(
                f'deactivating: ramping to the {kind} command over '
                f'{self._settings.soft_stop_time:g} s, then publishing nothing'
            )
        else:
            self.get_logger().info('inactive: publishing nothing')
        return SUCCESS

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release what configure built; the parameters stay declared, with their values."""
        self._release()
        self.get_logger().info('cleaned up: unconfigured')
        return SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Send the safe command if commanding (no task torque left standing); release all."""
        loop = self._loop
        if loop is not None and loop.commanding and loop.last_command_s is not None:
            self._publish(loop.safe_torque(), self.get_clock().now())
            self.get_logger().info(f'shutting down: sent the {loop.stale_command} command')
        self._release()
        return SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """A transition raised: release what configure built and be unconfigured."""
        self._release()
        self.get_logger().error('a transition failed: released everything, unconfigured')
        return SUCCESS

    def _report(self, what: str, error: Exception) -> None:
        if isinstance(error, WbcError):
            self.get_logger().error(f'{what}: {error}')
            return
        trace = ''.join(traceback.format_exception(error))
        self.get_logger().error(f'{what}: please report this traceback\n{trace}')

    def _configure(self) -> None:
        before = {id(entity) for entity in self._entities()}
        try:
            self._build()
        finally:  # what to destroy at cleanup, or now if the build failed half way
            self._created = [entity for entity in self._entities() if id(entity) not in before]

    def _build(self) -> None:
        self._robot = robot = load_robot_model(self).robot
        settings, contacts, specs = declare_controller_parameters(self, robot, self._schema)
        self._settings = settings
        timeout = settings.joint_state_timeout
        sim_time = self.get_parameter('use_sim_time').value
        wall_timeout = max(timeout, SIM_WALL_TIMEOUT_S) if sim_time else timeout
        entries = build_entries(robot, specs)
        self._loop = build_loop(robot, settings, entries, contacts, wall_timeout, active=False)
        self._decoder, self._odom_decoder, self._pairing = build_inputs(robot, settings)
        self._command = Float64MultiArray()
        self._traced: set[str] = set()  # internal errors whose traceback was logged
        # Per-message lines (rejections, failed ticks): rclpy's throttle costs a tick a call.
        self._throttled = ThrottledLog(self.get_logger(), LOG_THROTTLE_S)
        self._planned = None
        self._create_interfaces()
        self.get_logger().info(self._startup_summary())
        for warning in status.startup_warnings(self._loop.controller):
            self.get_logger().warning(warning)
        self._cpu_latency = self._hold_cpu_latency(settings.cpu_dma_latency)

    def _entities(self) -> list:
        return [*self.publishers, *self.subscriptions, *self.timers]

    def _release(self) -> None:
        """Destroy every topic and timer configure created, forget the controller."""
        for entity in self._created:
            if isinstance(entity, Publisher):
                self.destroy_publisher(entity)
            elif isinstance(entity, Subscription):
                self.destroy_subscription(entity)
            else:
                self.destroy_timer(entity)
        self._created = []
        if self._jump_handle is not None:
            self._jump_handle.unregister()
            self._jump_handle = None
        if self._cpu_latency is not None:
            self._cpu_latency.release()
            self._cpu_latency = None
        self._loop = None

    def _hold_cpu_latency(self, microseconds: int) -> CpuLatencyRequest | None:
        """The wake-up latency request `cpu_dma_latency` asks for (-1: none); WARN if refused."""
        if microseconds < 0:
            return None
        device = cpu_latency.DEVICE
        try:
            request = CpuLatencyRequest(microseconds, device)
        except CpuLatencyUnavailable as error:
            self.get_logger().warning(
                f'cpu_dma_latency: {error}; the CPUs keep their idle states (give this user '
                f'write access to {device}, or set cpu_dma_latency to -1)'
            )
            return None
        self.get_logger().info(
            f'cpu_dma_latency: the CPUs wake within {microseconds} µs while this node runs'
        )
        return request

    def destroy_node(self) -> None:
        """Drop the CPU latency request, then destroy the node."""
        if self._cpu_latency is not None:
            self._cpu_latency.release()
            self._cpu_latency = None
        super().destroy_node()

    def _create_interfaces(self) -> None:
        settings = self._settings
        self._publisher = self.create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)
        self.create_subscription(JointState, JOINT_STATE_TOPIC, self._on_joint_state, STATE_QOS)
        if self._robot.floating_base:
            self.create_subscription(Odometry, ODOM_TOPIC, self._on_odom, STATE_QOS)
        self._task_inputs = TaskInputs(
            self,
            self._loop.controller,
            self._robot,
            lambda: self._settings.world_frame,
            self._reject,
        )
        period = check_period(settings.joint_state_timeout, WATCHDOG_MAX_PERIOD_S)
        # On the steady clock: a stopped simulated clock must stop neither the watchdog nor the
        # /diagnostics status (and the events executor fired ROS-clock timers in bursts).
        # Reset by every tick, so that a check falls on the timeout after the last state.
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._watchdog_timer = self.create_timer(period, self._on_watchdog, clock=steady)
        backwards = JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1))
        self._jump_handle = self.get_clock().create_jump_callback(
            backwards, post_callback=self._on_clock_jump
        )
        if settings.diagnostics_rate > 0.0:
            self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
            self.create_timer(1.0 / settings.diagnostics_rate, self._on_diagnostics, clock=steady)
        take = partial(snapshot, self._loop)
        self._markers = MarkerPublisher(self, settings.markers_rate, take, settings.world_frame)

    def _startup_summary(self) -> str:
        odom = self.resolve_topic_name(ODOM_TOPIC) if self._robot.floating_base else None
        return status.startup_summary(
            self._loop.controller, self._settings, self.resolve_topic_name(COMMAND_TOPIC), odom
        )

    # Parameters ---------------------------------------------------------------------------

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a batch of live changes as a whole; the post-set callback applies it."""
        if self._configuring:  # configure declaring the parameters: it validates them
            return SetParametersResult(successful=True)
        if self._loop is None:
            if any(p.name != 'use_sim_time' for p in parameters):
                return self._refuse(
                    'the node is unconfigured: its parameters are declared by configure (set '
                    'them then, or give them at start-up)'
                )
            return SetParametersResult(successful=True)
        refusal = refuse_unknown(self, self._schema, parameters)
        if refusal is not None:
            return self._refuse(refusal.reason)
        unset = [p.name for p in parameters if p.type_ == Parameter.Type.NOT_SET]
        if unset:
            return self._refuse(f'{unset[0]}: cannot be unset at runtime')
        changes = {p.name: p.value for p in parameters if p.name != 'use_sim_time'}
        try:
            self._planned = plan_live_update(
                self._robot, self._loop.controller, self._settings, changes
            )
        except WbcError as error:
            return self._refuse(str(error))
        return SetParametersResult(successful=True)

    def _on_parameters_set(self, parameters: list[Parameter]) -> None:
        """Apply what the on-set callback validated."""
        planned, self._planned = self._planned, None
        if planned is None:
            return
        apply_live_update(self._loop.controller, planned)
        self._settings = planned.settings
        self._loop.stale_command = planned.settings.stale_command
        self._markers.set_rate(planned.settings.markers_rate)
        self._loop.set_payload(planned.settings.payload)
        changed = ', '.join(parameter.name for parameter in parameters)
        self.get_logger().info(f'parameters changed: {changed}')

    def _refuse(self, reason: str) -> SetParametersResult:
        self._planned = None
        self.get_logger().warning(f'parameter change rejected: {reason}')
        return SetParametersResult(successful=False, reason=reason)

    # Inputs -------------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        """Decode; tick now (fixed base) or when the pairing rule has both halves."""
        if self._loop is None or not self._loop.commanding:  # inactive: nothing ticks
            return
        stamp, now = messages.stamp_seconds(msg.header), self.get_clock().now()
        try:
            sample = self._decoder.decode(
                msg.name, msg.position, msg.velocity, stamp, now.nanoseconds * 1e-9
            )
        except JointStateRejected as rejection:
            self._restart_if(rejection.restarted, JOINT_STATE_TOPIC)
            self._reject(
                f'joint_states.{rejection.reason}',
                f'joint_states rejected: {rejection}',
                rejection.hint,
            )
            return
        self._restart_if(sample.restarted, JOINT_STATE_TOPIC)
        if not self._robot.floating_base:
            self._tick(sample, None, now)
            return
        pair = self._pairing.add_joints(sample, now.nanoseconds * 1e-9)
        if pair is not None:
            self._tick(pair.joints, pair.base, now)

    def _on_odom(self, msg: Odometry) -> None:
        """Decode the base state; tick if it completes a pair (`odom_pairing: stamp`)."""
        if self._loop is None or not self._loop.commanding:
            return
        now = self.get_clock().now()
        try:
            sample = self._odom_decoder.decode(
                *messages.odometry_arrays(msg), now.nanoseconds * 1e-9
            )
        except OdometryRejected as rejection:
            self._restart_if(rejection.restarted, ODOM_TOPIC)
            self._reject(f'odom.{rejection.reason}', f'odom rejected: {rejection}', rejection.hint)
            return
        self._restart_if(sample.restarted, ODOM_TOPIC)
        pair = self._pairing.add_base(sample, now.nanoseconds * 1e-9)
        if pair is not None:
            self._tick(pair.joints, pair.base, now)

    def _restart_if(self, restarted: bool, topic: str) -> None:
        """The clock or the stamps on `topic` jumped back: restart the watchdog and ramp."""
        if restarted:
            self._loop.restart()
            self._throttled.warning(
                f'restart.{topic}',
                f'{self.resolve_topic_name(topic)}: stamps or clock jumped back (publisher or '
                'simulator restart): time rules, watchdog and soft start restarted',
            )

    def _on_clock_jump(self, jump: TimeJump) -> None:
        """The node's clock jumped backwards (or changed type): forget every time reference."""
        self._decoder.reset()
        self._odom_decoder.reset()
        self._loop.restart()
        self.get_logger().warning(
            f'clock jumped by {jump.delta.nanoseconds * 1e-9:.3f} s: input time rules, '
            'watchdog and soft start restarted'
        )

    def _reject(self, key: str, message: str, hint: str = '') -> None:
        self._loop.statistics.reject(key)
        if hint:  # the first rejection of stamps on another clock: its cause and fix, once
            self._throttled.warning(key, f'{message}; likely cause: {hint}', always=True)
        else:
            self._throttled.warning(key, message)

    # Output -------------------------------------------------------------------------------

    def _tick(self, joints: JointSample, base: BaseSample | None, now: Time) -> None:
        """One tick: compute and publish (the safe command if the torque is unusable)."""
        pose, twist = (None, None) if base is None else (base.pose, base.twist)
        seconds = now.nanoseconds * 1e-9
        # References at the instant the state was measured (its stamp; stamp 0: now).
        self._task_inputs.apply(joints.stamp_s if joints.stamp_s > 0.0 else seconds)
        self._watchdog_timer.reset()  # its checks restart from this state's receipt
        outcome = self._loop.tick(joints.positions, joints.velocities, pose, twist, seconds)
        self._publish(outcome.torque, now)
        logger = self.get_logger()
        if outcome.resumed:
            inputs = 'joint states and odom' if self._robot.floating_base else 'joint states'
            logger.info(f'{inputs} back: control resumed')
        for name, target in outcome.held:
            logger.info(
                f'task {name}: no target configured, holding the measured {target.round(4)}'
            )
        if outcome.error:
            self._throttled.error('tick', outcome.error)
        new_bug = outcome.bug is not None and outcome.error not in self._traced
        if new_bug and len(self._traced) < 10:
            self._traced.add(outcome.error)  # a bug's traceback once, not per tick
            logger.error(f'{outcome.error}: please report this traceback\n{outcome.trace}')
        if outcome.stopped:
            logger.info(
                f'soft stop done: the {self._settings.stale_command} command went out last; '
                'publishing nothing until activated'
            )

    def _publish(self, torque: np.ndarray, now: Time) -> None:
        self._publisher.publish(
            messages.fill_command(self._command, torque[self._settings.command_index])
        )
        self._loop.sent(now.nanoseconds * 1e-9)

    def _on_watchdog(self) -> None:
        """While no tick is fresh, publish the safe command, never the last one."""
        if self._loop is None:  # released by cleanup after this call was queued
            return
        now = self.get_clock().now()
        was_stale, stopping = self._loop.stale, self._loop.mode is Mode.STOPPING
        if not self._loop.watchdog(now.nanoseconds * 1e-9):
            return
        kind = self._settings.stale_command
        if not was_stale:
            waited = self._waited(self._loop.state_age(now.nanoseconds * 1e-9), 3)
            self.get_logger().warning(f'{waited}: publishing the {kind} safe command')
            self._pairing.stale()
        self._publish(self._loop.safe_torque(), now)
        if stopping:
            self.get_logger().info(
                f'soft stop ended by the watchdog with the {kind} command; publishing nothing '
                'until activated'
            )

    def _waited(self, age: float | None, digits: int) -> str:
        """What the watchdog is waiting for, e.g. 'no valid joint state for 0.2 s on /js'."""
        odom = self.resolve_topic_name(ODOM_TOPIC) if self._robot.floating_base else None
        return status.waited(age, digits, self.resolve_topic_name(JOINT_STATE_TOPIC), odom)

    # Diagnostics --------------------------------------------------------------------------

    def _checks(self) -> dict[str, checks.Check]:
        """The controller's checks now ({name: check}, the contacts only with contacts)."""
        now_s = self.get_clock().now().nanoseconds * 1e-9
        age = self._loop.state_age(now_s)
        base_age = self._pairing.base_age(now_s) if self._robot.floating_base else None
        clock_hint = self._decoder.clock_hint or self._odom_decoder.clock_hint
        return status.controller_checks(
            self._loop, self._settings, self._waited(age, 2), age, base_age, clock_hint
        )

    def _on_diagnostics(self) -> None:
        if self._loop is None:
            return
        stamp = self.get_clock().now().to_msg()
        message = status.diagnostic_array(stamp, self.get_name(), self._robot.name, self._checks())
        self._diagnostics.publish(message)
        self._loop.statistics.start_period(time.monotonic())


def main(args: list[str] | None = None) -> None:
    """Console script `wbc_controller`: exits 0 after Ctrl-C / SIGTERM, 1 if it cannot start."""
    note = use_udp_transport(os.environ, Path.cwd())
    sys.exit(run_node(partial(ControllerNode, transport_note=note), NODE_NAME, args))


if __name__ == '__main__':
    main()
