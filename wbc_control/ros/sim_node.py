"""`wbc_sim`: the embedded MuJoCo simulator, a stand-in for a torque-controlled robot.

Loads the URDF the controller uses (`robot_description` / `urdf_path`, `floating_base`),
applies `effort_controller/commands` as joint torques and publishes `joint_states`, `odom`
(floating base) and `/clock`. Wiring only: the MuJoCo model is built by
:mod:`wbc_control.sim.urdf_to_mujoco` and run by :mod:`wbc_control.sim.simulation`; when time
advances and a state goes out (paced or lock-step, `hold_until_commanded`, the first-state
handshake, re-sends) is :mod:`wbc_control.sim.time_protocol`.

A payload (`payload.*`, the controller's parameters) is attached to the MuJoCo body of its
frame (:mod:`wbc_control.sim.payload_body`), at start-up and, live, from the next step.
"""

import sys

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

from wbc_control.config.payload import PAYLOAD_PARAMETERS, parse_payload, payload_values
from wbc_control.config.schema import load_schema
from wbc_control.exceptions import StartupError, WbcError
from wbc_control.model.payload import Payload
from wbc_control.ros.log_throttle import ThrottledLog
from wbc_control.ros.messages import fill_odometry
from wbc_control.ros.parameters import refuse_unknown
from wbc_control.ros.robot_source import RobotSource, declare_node_parameters, load_robot_model
from wbc_control.ros.runtime import run_node
from wbc_control.sim.mujoco_warnings import route_warnings, warning_key
from wbc_control.sim.payload_body import SimulatedPayload
from wbc_control.sim.settings import sim_settings
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.time_protocol import Connections, TimeProtocol
from wbc_control.sim.urdf_to_mujoco import build_mujoco_robot
from wbc_control.sim.viewer import Viewer, ViewerUnavailable

NODE_NAME = 'wbc_sim'
COMMAND_TOPIC = 'effort_controller/commands'
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
        except WbcError as error:
            raise StartupError(str(error)) from error
        self.sim = self._build_simulation(source)
        self.payload = SimulatedPayload(self.sim)
        self.payload.set(self.settings.payload)
        self._planned_payload: Payload | None = None
        # The payload is live; every other parameter is read-only.
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._on_parameters_set)
        self._joint_state = JointState(name=list(robot.joint_names))
        self._odom = Odometry()
        self._odom.header.frame_id = self.settings.odom_frame
        self._odom.child_frame_id = self.settings.base_frame or self.sim.root_link
        self._viewer = self._open_viewer() if self.settings.viewer else None
        self._joint_state_pub = self.create_publisher(JointState, 'joint_states', 10)
        self._odom_pub = (
            self.create_publisher(Odometry, 'odom', 10) if robot.floating_base else None
        )
        self._clock_pub = self.create_publisher(ClockMessage, '/clock', 10)
        self._command_sub = self.create_subscription(
            Float64MultiArray, COMMAND_TOPIC, self._on_command, 10
        )
        self.time_protocol = TimeProtocol(
            self.settings, self.sim, self._publish_state, self._connections, self._throttled
        )
        steady = Clock(clock_type=ClockType.STEADY_TIME)  # this node is the source of sim time
        for timer in self.time_protocol.timers():
            self.create_timer(timer.period_s, timer.callback, clock=steady)
        self.time_protocol.start()
        base = 'floating base' if robot.floating_base else 'fixed base'
        self.get_logger().info(
            f"simulating '{robot.name}' ({robot.n_actuated} joints, {base}); "
            f'{self.settings.describe(self.sim.timestep_s)}; '
            f"commands on '{self.resolve_topic_name(COMMAND_TOPIC)}'; "
            f'payload: {_describe(self.settings.payload)}'
        )

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Refuse unknown names; validate a payload change (applied by the post-set callback)."""
        self._planned_payload = None
        refusal = refuse_unknown(self, self._schema, parameters)
        if refusal is not None:
            return refusal
        changes = {p.name: p.value for p in parameters if p.name in PAYLOAD_PARAMETERS}
        if changes:
            try:
                current = payload_values(self.payload.payload)
                self._planned_payload = parse_payload(self.sim.robot, current | changes)
            except WbcError as error:
                self.get_logger().warning(f'parameter change rejected: {error}')
                return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _on_parameters_set(self, parameters: list[Parameter]) -> None:
        planned, self._planned_payload = self._planned_payload, None
        if planned is not None:
            self.payload.set(planned)
            self.get_logger().info(f'payload: {_describe(planned)}')

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
        self.time_protocol.on_command(np.asarray(message.data, dtype=float))

    def _connections(self) -> Connections:
        return Connections(
            self._joint_state_pub.get_subscription_count(),
            self._command_sub.get_publisher_count() > 0,
        )

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

    def _open_viewer(self) -> Viewer | None:
        try:
            return Viewer(self.sim)
        except ViewerUnavailable as error:
            self.get_logger().warning(f'{error}; running headless')
            return None


def _describe(payload: Payload) -> str:
    if payload.empty:
        return 'none'
    return f'{payload.mass} kg on {payload.frame} at {payload.center_of_mass.tolist()} m'


def main(args: list[str] | None = None) -> None:
    """Console-script entry point `wbc_sim`."""
    sys.exit(run_node(SimNode, NODE_NAME, args))


if __name__ == '__main__':
    main()
