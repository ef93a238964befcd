"""The controller node `wbc_controller`: joint states and targets in, joint torques out.

A managed node (the ROS 2 node lifecycle, rclpy.lifecycle): `configure` loads the model,
validates the parameters and creates the topics (a failure names the parameter and leaves the
node unconfigured), `activate` starts commanding with the soft start, `deactivate` ramps to the
safe command over `soft_stop_time` and then publishes nothing, `cleanup` releases what
`configure` built (the parameters stay declared), `shutdown` sends the safe command if it was
commanding and releases everything. With `autostart` (the default) the node configures and
activates itself as it starts, and a configure failure is a start-up error.

Wiring only; the work is in :class:`~wbc_control.control.loop.controller_loop.ControllerLoop`. This
module builds and releases the node's topics and timers; its callbacks are in
:mod:`~wbc_control.ros.controller_lifecycle` (transitions),
:mod:`~wbc_control.ros.controller_inputs` (`joint_states`, `odom`, clock jumps),
:mod:`~wbc_control.ros.controller_outputs` (`effort_controller/commands`, the watchdog,
`/diagnostics`) and :mod:`~wbc_control.ros.controller_live_parameters` (live parameters).
`~/<task>/target` and `~/<task>/trajectory` are wired by :mod:`wbc_control.ros.task_inputs`,
`~/markers` (RViz) by :mod:`wbc_control.ros.markers`. Parameters come from the schema
(:mod:`wbc_control.ros.controller_parameters`).
"""

from functools import partial
import os
from pathlib import Path
import sys

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType, JumpThreshold
from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode
from rclpy.publisher import Publisher
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control import cpu_latency
from wbc_control.config import build_entries
from wbc_control.config.assembly import build_inputs, build_loop
from wbc_control.config.live import LiveUpdate
from wbc_control.config.schema import load_schema
from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.cpu_latency import CpuLatencyRequest, CpuLatencyUnavailable
from wbc_control.exceptions import StartupError
from wbc_control.inputs.timing import check_period
from wbc_control.ros import controller_status as status
from wbc_control.ros.controller_inputs import StateInputs
from wbc_control.ros.controller_lifecycle import SUCCESS, LifecycleCallbacks
from wbc_control.ros.controller_live_parameters import LiveParameters
from wbc_control.ros.controller_outputs import CommandOutput
from wbc_control.ros.controller_parameters import declare_controller_parameters
from wbc_control.ros.controller_topics import (
    COMMAND_QOS,
    COMMAND_TOPIC,
    JOINT_STATE_TOPIC,
    LOG_THROTTLE_S,
    NODE_NAME,
    ODOM_TOPIC,
    SIM_WALL_TIMEOUT_S,
    STATE_QOS,
    WATCHDOG_MAX_PERIOD_S,
)
from wbc_control.ros.dds_transport import use_udp_transport
from wbc_control.ros.log_throttle import ThrottledLog
from wbc_control.ros.markers import MarkerPublisher
from wbc_control.ros.parameters import declare
from wbc_control.ros.robot_source import load_robot_model
from wbc_control.ros.runtime import run_node
from wbc_control.ros.task_inputs import TaskInputs
from wbc_control.viz.snapshot import snapshot

__all__ = ['LOG_THROTTLE_S', 'NODE_NAME', 'ControllerNode', 'main']


class ControllerNode(
    LifecycleCallbacks, LiveParameters, StateInputs, CommandOutput, LifecycleNode
):
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
        for warning in status.startup_warnings(self._loop):
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


def main(args: list[str] | None = None) -> None:
    """Console script `wbc_controller`: exits 0 after Ctrl-C / SIGTERM, 1 if it cannot start."""
    note = use_udp_transport(os.environ, Path.cwd())
    sys.exit(run_node(partial(ControllerNode, transport_note=note), NODE_NAME, args))


if __name__ == '__main__':
    main()
