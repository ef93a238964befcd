"""`wbc_sim`: the embedded MuJoCo simulator, a stand-in for a torque-controlled robot.

Loads the URDF the controller uses (`robot_description` / `urdf_path`, `floating_base`),
applies `effort_controller/commands` as joint torques and publishes `joint_states`, `odom`
(floating base) and `/clock`. Two ways to advance time:

- paced (default): a wall-clock timer steps the physics at `real_time_factor` × real time
  (0: as fast as possible) and publishes every 1/`publish_rate` s of simulated time; the latest
  command is held, and after `command_timeout` s of simulated time without one the torques
  are zero; with `hold_until_commanded` time stands at 0 (the initial state re-sent every
  0.1 s) until the first non-zero command, or a humanoid falls while its controller starts;
- `lockstep`: every accepted command advances exactly `control_period` s (a whole number of
  physics steps), then one state is published. The first state goes out as soon as a
  controller is connected (`lockstep_subscribers` subscribers on joint_states, 1 by default,
  and a publisher on the commands), and a command before it answers nothing and is ignored;
  the current state is re-sent unchanged (same stamp) when no command came for
  `lockstep_resend_period` s of wall time, so a state lost in transit never stalls the loop;
  with `real_time_factor` > 0 a state computed early waits until its time × 1/factor of wall
  time (0: as fast as the controller answers).

The MuJoCo model is built by :mod:`wbc_control.sim.urdf_to_mujoco` and run by
:mod:`wbc_control.sim.simulation`; commands and pacing are :mod:`wbc_control.sim.command_input`.
"""

import sys
import time

from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMessage
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.config.schema import load_schema
from wbc_control.exceptions import InvalidValue, WbcError
from wbc_control.ros.log_throttle import ThrottledLog
from wbc_control.ros.messages import fill_odometry
from wbc_control.ros.parameters import refuse_unknown
from wbc_control.ros.runtime import (
    RobotSource,
    StartupError,
    declare_node_parameters,
    load_robot_model,
    run_node,
)
from wbc_control.sim.command_input import CommandRejected, RealTimePacer, TorqueCommandInput
from wbc_control.sim.mujoco_warnings import route_warnings, warning_key
from wbc_control.sim.settings import sim_settings
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.urdf_to_mujoco import build_mujoco_robot
from wbc_control.sim.viewer import Viewer, ViewerUnavailable

NODE_NAME = 'wbc_sim'
COMMAND_TOPIC = 'effort_controller/commands'
#: Paced mode, holding: the initial state is re-sent this often (wall s).
HOLD_RESEND_S = 0.1
RCLError = rclpy_implementation.RCLError


class SimNode(Node):
    """MuJoCo simulation of the robot, driven by torque commands."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs) -> None:
        super().__init__(node_name, allow_undeclared_parameters=True, **kwargs)
        self._viewer: Viewer | None = None  # destroy_node runs after a failed start as well
        # Lines on per-command and per-step paths: rclpy's throttle costs more than a step.
        self._throttled = ThrottledLog(self.get_logger(), 1.0)
        # MuJoCo's warnings into this node's log, not into MUJOCO_LOG.TXT where it was started.
        self._other_mujoco_warnings = route_warnings(self._on_mujoco_warning)
        self._schema = load_schema(NODE_NAME)
        source = load_robot_model(self)
        robot = source.robot
        try:
            self.settings = sim_settings(declare_node_parameters(self, self._schema), robot)
        except InvalidValue as error:
            raise StartupError(str(error)) from error
        # Every parameter is read-only: a live set can only be of an unknown name.
        self.add_on_set_parameters_callback(self._refuse_unknown)
        self.sim = self._build_simulation(source)
        self.commands = TorqueCommandInput(
            robot.n_actuated, self.settings.command_index, self.settings.command_timeout_s
        )
        self._effort_limits = robot.effort_limits
        self._joint_state = JointState(name=list(robot.joint_names))
        self._odom = Odometry()
        self._odom.header.frame_id = self.settings.odom_frame
        self._odom.child_frame_id = self.settings.base_frame or self.sim.root_link
        self._stale = True
        self._viewer = self._open_viewer() if self.settings.viewer else None
        self._joint_state_pub = self.create_publisher(JointState, 'joint_states', 10)
        self._odom_pub = (
            self.create_publisher(Odometry, 'odom', 10) if robot.floating_base else None
        )
        self._clock_pub = self.create_publisher(ClockMessage, '/clock', 10)
        self._command_sub = self.create_subscription(
            Float64MultiArray, COMMAND_TOPIC, self._on_command, 10
        )
        self._first_state_sent = False
        # Paced mode with hold_until_commanded: time stands at 0 until a non-zero command.
        self._holding = not self.settings.lockstep and self.settings.hold_until_commanded
        self._last_hold_wall_s = time.monotonic()
        self._start_timers()
        if not self.settings.lockstep:
            self._publish_first_state()
        base = 'floating base' if robot.floating_base else 'fixed base'
        self.get_logger().info(
            f"simulating '{robot.name}' ({robot.n_actuated} joints, {base}); "
            f'{self.settings.describe(self.sim.timestep_s)}; '
            f"commands on '{self.resolve_topic_name(COMMAND_TOPIC)}'"
        )

    def _refuse_unknown(self, parameters: list[Parameter]) -> SetParametersResult:
        refusal = refuse_unknown(self, self._schema, parameters)
        return refusal or SetParametersResult(successful=True)

    def _publish_first_state(self) -> None:
        self._first_state_sent = True
        self._publish_state()

    def _start_timers(self) -> None:
        """Wall-clock (steady) timers: this node is the source of simulated time."""
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        settings, factor = self.settings, self.settings.real_time_factor
        if settings.lockstep:
            self._last_command_wall_s = time.monotonic()
            resend_s = settings.lockstep_resend_s
            period_s = min(resend_s / 4.0, 0.05) if resend_s > 0.0 else 0.05
            self.create_timer(period_s, self._on_resend_timer, clock=steady)
            control_period_s = settings.control_steps * self.sim.timestep_s
            self._pacer, self._state_due = RealTimePacer(factor, control_period_s), False
            if factor > 0.0:  # a state computed early waits for its wall time
                self.create_timer(control_period_s / factor, self._on_pace_timer, clock=steady)
            return
        publish_period_s = settings.publish_steps * self.sim.timestep_s
        self._pacer = RealTimePacer(factor, publish_period_s)
        period_s = publish_period_s / factor if factor > 0.0 else 0.0
        self.create_timer(period_s, self._on_physics_timer, clock=steady)

    def destroy_node(self) -> None:
        """Close the viewer window, then destroy the node."""
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
        route_warnings(self._other_mujoco_warnings)
        super().destroy_node()

    def _on_mujoco_warning(self, text: str) -> None:
        self._throttled.warning(f'mujoco.{warning_key(text)}', f'MuJoCo: {text}')

    def _build_simulation(self, source: RobotSource) -> MujocoSimulation:
        robot = source.robot
        try:
            mujoco_robot = build_mujoco_robot(
                source.urdf_xml, self.settings.options, source.directory
            )
            sim = MujocoSimulation(robot, mujoco_robot)
            sim.reset(self.settings.initial_positions, self.settings.initial_base_pose)
            if robot.floating_base and self.settings.initial_base_pose is None:
                if self.settings.options.ground_plane:
                    sim.place_on_ground()
        except WbcError as error:
            raise StartupError(f'cannot build the MuJoCo model: {error}') from error
        for dropped in mujoco_robot.dropped_meshes:
            self.get_logger().info(f'dropped mesh {dropped}')
        for adjusted in mujoco_robot.adjusted_inertias:
            self.get_logger().warning(f'inertia {adjusted}')
        if (
            robot.floating_base
            and self.settings.options.ground_plane
            and not sim.colliding_geometry
        ):
            self.get_logger().warning(
                'no collision geometry on the robot (meshes MuJoCo cannot read are dropped, '
                'above): nothing touches the ground plane and the base falls through it; give '
                'the URDF collision shapes or binary STL / OBJ meshes'
            )
        return sim

    def _on_command(self, message: Float64MultiArray) -> None:
        values = np.asarray(message.data, dtype=float)
        try:
            torque = self.commands.accept(values, self.sim.time_s)
        except CommandRejected as error:
            self._log_rejection(error)
            return
        self._warn_beyond_effort_limits(torque)
        if self._holding and torque.any():
            self._holding = False
            self.get_logger().info('first non-zero command: simulation started')
        if self.settings.lockstep:
            if not self._first_state_sent:
                # It answers no state (e.g. a controller's safe command while it starts).
                self._throttled.info(
                    'early_command', 'lockstep: a command before the first state is ignored'
                )
                return
            self._last_command_wall_s = time.monotonic()
            self.sim.apply_torque(torque)
            self.sim.step(self.settings.control_steps)
            self._state_due = True
            self._on_pace_timer()

    def _log_rejection(self, error: CommandRejected) -> None:
        total = sum(self.commands.rejected.values())
        message = f'rejected torque command ({error}); {total} rejected so far'
        self._throttled.warning(f'rejected.{error.reason}', message)

    def _on_physics_timer(self) -> None:
        if self._holding:
            if time.monotonic() - self._last_hold_wall_s >= HOLD_RESEND_S:
                self._last_hold_wall_s = time.monotonic()
                self._publish_state()  # the initial state again, for late subscribers
            return
        for _ in range(self._pacer.periods_due(self.sim.time_s)):
            torque, stale = self.commands.torque_at(self.sim.time_s)
            self._report_staleness(stale)
            self.sim.apply_torque(torque)
            self.sim.step(self.settings.publish_steps)
            self._publish_state()
        self._warn_if_slow()

    def _on_pace_timer(self) -> None:
        if self._state_due and self._pacer.wait_s(self.sim.time_s) <= 0.0:
            self._state_due = False
            self._publish_state()
            self._warn_if_slow()

    def _warn_if_slow(self) -> None:
        if self._pacer.dropped_backlog:
            self._throttled.warning(
                'slow', 'simulation is slower than real_time_factor; dropping the backlog', 5.0
            )

    def _on_resend_timer(self) -> None:
        if not self._first_state_sent:
            # Lockstep starts when a controller is connected both ways, so the first state
            # (stamp 0, which ROS also reads as "unstamped") is answered once, not re-sent.
            listeners = self._joint_state_pub.get_subscription_count()
            wanted = self.settings.lockstep_subscribers
            commanded = self._command_sub.get_publisher_count() > 0
            if commanded and 0 < listeners < wanted:
                self._throttled.info(
                    'waiting',
                    f'lockstep: waiting for {wanted} joint_states subscribers, {listeners} so far',
                )
            if commanded and listeners >= wanted:
                self._last_command_wall_s = time.monotonic()
                self._publish_first_state()
            return
        resend_s = self.settings.lockstep_resend_s
        if resend_s > 0.0 and time.monotonic() - self._last_command_wall_s >= resend_s:
            self._last_command_wall_s = time.monotonic()
            self._publish_state()

    def _publish_state(self) -> None:
        stamp = Time(nanoseconds=round(self.sim.time_s * 1e9)).to_msg()
        state = self._joint_state
        state.header.stamp = stamp
        state.position = self.sim.joint_positions().tolist()
        state.velocity = self.sim.joint_velocities().tolist()
        state.effort = self.sim.applied_torque.tolist()
        try:
            self._joint_state_pub.publish(state)
            if self._odom_pub is not None:
                pose, twist = self.sim.base_pose(), self.sim.base_twist()
                self._odom_pub.publish(fill_odometry(self._odom, pose, twist, stamp))
            self._clock_pub.publish(ClockMessage(clock=stamp))
        except RCLError:
            # SIGTERM shuts the context down from a signal handler, possibly mid-callback;
            # the executor then stops spinning, so only a live context makes this an error.
            if self.context.ok():
                raise
            return
        if self._viewer is not None and not self._viewer.sync():
            self._viewer = None  # the window was closed

    def _report_staleness(self, stale: bool) -> None:
        if stale and not self._stale:
            self.get_logger().warning(
                f'no torque command for {self.settings.command_timeout_s} s of simulated time: '
                'applying zero torque'
            )
        elif self._stale and not stale:
            self.get_logger().info('torque commands received: applying them')
        self._stale = stale

    def _warn_beyond_effort_limits(self, torque: np.ndarray) -> None:
        beyond = np.abs(torque) > self._effort_limits
        if beyond.any():
            names = [self._joint_state.name[i] for i in np.flatnonzero(beyond)]
            self._throttled.warning(
                'beyond_effort',
                f'command beyond the URDF effort limit of {", ".join(names)}; applied unclipped',
                5.0,
            )

    def _open_viewer(self) -> Viewer | None:
        try:
            return Viewer(self.sim)
        except ViewerUnavailable as error:
            self.get_logger().warning(f'{error}; running headless')
            return None


def main(args: list[str] | None = None) -> None:
    """Console-script entry point `wbc_sim`."""
    sys.exit(run_node(SimNode, NODE_NAME, args))


if __name__ == '__main__':
    main()
