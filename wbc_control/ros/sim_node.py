"""`wbc_sim`: the embedded MuJoCo simulator, a stand-in for a torque-controlled robot.

Loads the URDF the controller uses (`robot_description` / `urdf_path`, `floating_base`),
applies `effort_controller/commands` as joint torques and publishes `joint_states`, `odom`
(floating base) and `/clock`. Two ways to advance time:

- paced (default): a wall-clock timer steps the physics at `real_time_factor` × real time
  (0: as fast as possible) and publishes every 1/`publish_rate` s of simulated time; the latest
  command is held, and after `command_timeout` s of simulated time without one the torques
  are zero;
- `lockstep`: every accepted command advances exactly `control_period` s (a whole number of
  physics steps), then one state is published. The first state goes out as soon as a
  controller is connected (a subscriber on joint_states and a publisher on the commands); the
  current state is re-sent unchanged (same stamp) when no command came for
  `lockstep_resend_period` s of wall time, so a state or command lost in transit never stalls
  the loop.

The MuJoCo model is built by :mod:`wbc_control.sim.urdf_to_mujoco` and run by
:mod:`wbc_control.sim.simulation`; commands and pacing are :mod:`wbc_control.sim.command_input`.
"""

from dataclasses import dataclass
import math
import os
import sys
import time

from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMessage
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.exceptions import WbcError
from wbc_control.model.robot_model import RobotModel
from wbc_control.ros.runtime import (
    RobotSource,
    StartupError,
    load_robot_model,
    run_node,
)
from wbc_control.sim.command_input import CommandRejected, RealTimePacer, TorqueCommandInput
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.urdf_to_mujoco import MujocoOptions, build_mujoco_robot

NODE_NAME = 'wbc_sim'
COMMAND_TOPIC = 'effort_controller/commands'
_VIEWER_PERIOD_S = 1.0 / 60.0
RCLError = rclpy_implementation.RCLError


@dataclass(frozen=True)
class SimSettings:
    """The node's parameters after validation (all read-only at runtime)."""

    options: MujocoOptions
    control_steps: int  # physics steps per lock-step command
    publish_steps: int  # physics steps per published state (paced mode)
    real_time_factor: float
    lockstep: bool
    lockstep_resend_s: float
    command_timeout_s: float
    command_index: np.ndarray  # (n_cmd,)
    initial_positions: np.ndarray  # (n_act,)
    initial_base_pose: np.ndarray | None  # (7,) or None: on the ground at the origin
    odom_frame: str
    base_frame: str
    viewer: bool


class SimNode(Node):
    """MuJoCo simulation of the robot, driven by torque commands."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        source = load_robot_model(self)
        robot = source.robot
        self.settings = declare_sim_parameters(self, robot)
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
        self._viewer = _open_viewer(self) if self.settings.viewer else None
        self._viewer_synced_s = 0.0
        self._joint_state_pub = self.create_publisher(JointState, 'joint_states', 10)
        self._odom_pub = (
            self.create_publisher(Odometry, 'odom', 10) if robot.floating_base else None
        )
        self._clock_pub = self.create_publisher(ClockMessage, '/clock', 10)
        self._command_sub = self.create_subscription(
            Float64MultiArray, COMMAND_TOPIC, self._on_command, 10
        )
        self._first_state_sent = False
        self._start_timers()
        if not self.settings.lockstep:
            self._publish_first_state()
        self.get_logger().info(self._startup_summary(robot))

    def _publish_first_state(self) -> None:
        self._first_state_sent = True
        self._publish_state()

    def _start_timers(self) -> None:
        """Wall-clock (steady) timers: this node is the source of simulated time."""
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        settings = self.settings
        if settings.lockstep:
            self._last_command_wall_s = time.monotonic()
            resend_s = settings.lockstep_resend_s
            period_s = min(resend_s / 4.0, 0.05) if resend_s > 0.0 else 0.05
            self.create_timer(period_s, self._on_resend_timer, clock=steady)
            return
        publish_period_s = settings.publish_steps * self.sim.timestep_s
        self._pacer = RealTimePacer(settings.real_time_factor, publish_period_s)
        period_s = 0.0
        if settings.real_time_factor > 0.0:
            period_s = publish_period_s / settings.real_time_factor
        self.create_timer(period_s, self._on_physics_timer, clock=steady)

    def destroy_node(self) -> None:
        """Close the viewer window, then destroy the node."""
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
        super().destroy_node()

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
        return sim

    def _on_command(self, message: Float64MultiArray) -> None:
        values = np.asarray(message.data, dtype=float)
        try:
            torque = self.commands.accept(values, self.sim.time_s)
        except CommandRejected as error:
            self._log_rejection(error)
            return
        self._warn_beyond_effort_limits(torque)
        if self.settings.lockstep:
            self._last_command_wall_s = time.monotonic()
            self.sim.apply_torque(torque)
            self.sim.step(self.settings.control_steps)
            self._publish_state()

    def _log_rejection(self, error: CommandRejected) -> None:
        total = sum(self.commands.rejected.values())
        message = f'rejected torque command ({error}); {total} rejected so far'
        if self.commands.rejected[error.reason] == 1:
            self.get_logger().warning(message)
        else:
            self.get_logger().warning(message, throttle_duration_sec=1.0)

    def _on_physics_timer(self) -> None:
        for _ in range(self._pacer.periods_due(self.sim.time_s)):
            torque, stale = self.commands.torque_at(self.sim.time_s)
            self._report_staleness(stale)
            self.sim.apply_torque(torque)
            self.sim.step(self.settings.publish_steps)
            self._publish_state()
        if self._pacer.dropped_backlog:
            self.get_logger().warning(
                'simulation is slower than real_time_factor; dropping the backlog',
                throttle_duration_sec=5.0,
            )

    def _on_resend_timer(self) -> None:
        if not self._first_state_sent:
            # Lockstep starts when a controller is connected both ways, so the first state
            # (stamp 0, which ROS also reads as "unstamped") is answered once, not re-sent.
            connected = (
                self._joint_state_pub.get_subscription_count() > 0
                and self._command_sub.get_publisher_count() > 0
            )
            if connected:
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
                self._publish_odom(stamp)
            self._clock_pub.publish(ClockMessage(clock=stamp))
        except RCLError:
            # SIGTERM shuts the context down from a signal handler, possibly mid-callback;
            # the executor then stops spinning, so only a live context makes this an error.
            if self.context.ok():
                raise
            return
        self._sync_viewer()

    def _publish_odom(self, stamp) -> None:
        pose, twist = self.sim.base_pose(), self.sim.base_twist()
        odom = self._odom
        odom.header.stamp = stamp
        position, orientation = odom.pose.pose.position, odom.pose.pose.orientation
        position.x, position.y, position.z = pose[:3].tolist()
        orientation.x, orientation.y, orientation.z, orientation.w = pose[3:].tolist()
        linear, angular = odom.twist.twist.linear, odom.twist.twist.angular
        linear.x, linear.y, linear.z = twist[:3].tolist()
        angular.x, angular.y, angular.z = twist[3:].tolist()
        self._odom_pub.publish(odom)

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
            self.get_logger().warning(
                f'command beyond the URDF effort limit of {", ".join(names)}; applied unclipped',
                throttle_duration_sec=5.0,
            )

    def _sync_viewer(self) -> None:
        if self._viewer is None:
            return
        now = time.monotonic()
        if now - self._viewer_synced_s < _VIEWER_PERIOD_S:
            return
        self._viewer_synced_s = now
        if not self._viewer.is_running():
            self._viewer = None
            return
        self._viewer.sync()

    def _startup_summary(self, robot: RobotModel) -> str:
        settings = self.settings
        if settings.lockstep:
            mode = (
                f'lockstep, {settings.control_steps} step(s) of {self.sim.timestep_s} s '
                'per command'
            )
        else:
            mode = (
                f'paced at real_time_factor {settings.real_time_factor}, state every '
                f'{settings.publish_steps} step(s) of {self.sim.timestep_s} s'
            )
        base = 'floating base' if robot.floating_base else 'fixed base'
        return (
            f"simulating '{robot.name}' ({robot.n_actuated} joints, {base}); {mode}; "
            f"commands on '{self.resolve_topic_name(COMMAND_TOPIC)}'"
        )


def declare_sim_parameters(node: Node, robot: RobotModel) -> SimSettings:
    """Declare every parameter of the simulator, validate them and return the settings.

    Raises:
        StartupError: a value is out of range or inconsistent with the robot model.
    """
    declare = _ParameterDeclarer(node)
    timestep = declare.number('timestep', 0.001, 'physics step (s)')
    control_period = declare.number(
        'control_period', 0.001, 'lockstep: simulated time per command (s), a multiple of timestep'
    )
    publish_rate = declare.number('publish_rate', 500.0, 'paced mode: states per simulated second')
    real_time_factor = declare.number(
        'real_time_factor', 1.0, 'paced mode: simulated s per wall s (0: as fast as possible)'
    )
    lockstep = declare.value('lockstep', False, 'advance control_period per received command')
    resend = declare.number(
        'lockstep_resend_period',
        1.0,
        'lockstep: re-send the current state after this many wall s without a command (0: never)',
    )
    timeout = declare.number(
        'command_timeout',
        0.1,
        'paced mode: zero torque after this many simulated s without a command (0: hold forever)',
    )
    gravity = declare.array('gravity', [0.0, 0.0, -9.81], 'gravity in the world frame (m/s^2)')
    options = _mujoco_options(declare, robot, timestep, gravity)
    if timestep <= 0.0 or not math.isfinite(timestep):
        raise StartupError(f'timestep must be positive, got {timestep}')
    return SimSettings(
        options=options,
        control_steps=_whole_steps('control_period', control_period, timestep),
        publish_steps=_publish_steps(publish_rate, timestep),
        real_time_factor=_non_negative('real_time_factor', real_time_factor),
        lockstep=lockstep,
        lockstep_resend_s=_non_negative('lockstep_resend_period', resend),
        command_timeout_s=_non_negative('command_timeout', timeout),
        command_index=_command_index(declare, robot),
        initial_positions=_initial_positions(declare, robot),
        initial_base_pose=_initial_base_pose(declare, robot),
        odom_frame=declare.value('odom_frame', 'odom', 'frame_id of odom (world frame)'),
        base_frame=declare.value('base_frame', '', 'child_frame_id of odom (empty: root link)'),
        viewer=options.keep_visual,
    )


class _ParameterDeclarer:
    """Read-only parameter declarations that turn rclpy type errors into StartupError."""

    def __init__(self, node: Node) -> None:
        self._node = node

    def value(self, name: str, default, description: str):
        return self._declare(name, default, description)

    def number(self, name: str, default: float, description: str) -> float:
        value = self._declare(name, default, description, dynamic_typing=True)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise StartupError(f"parameter '{name}' must be a number, got {value!r}")
        return float(value)

    def array(self, name: str, default: list[float] | None, description: str) -> np.ndarray:
        if default is None:
            value = self._declare(name, Parameter.Type.DOUBLE_ARRAY, description)
        else:
            value = self._declare(name, default, description, dynamic_typing=True)
        return np.asarray([] if value is None else list(value), dtype=float)

    def strings(self, name: str, description: str) -> list[str]:
        value = self._declare(name, Parameter.Type.STRING_ARRAY, description)
        return [] if value is None else list(value)

    def _declare(self, name: str, default, description: str, dynamic_typing: bool = False):
        descriptor = ParameterDescriptor(
            description=description, read_only=True, dynamic_typing=dynamic_typing
        )
        try:
            return self._node.declare_parameter(name, default, descriptor).value
        except (ParameterException, TypeError, ValueError) as error:
            raise StartupError(f"parameter '{name}': {error}") from error


def _mujoco_options(
    declare: _ParameterDeclarer, robot: RobotModel, timestep: float, gravity: np.ndarray
) -> MujocoOptions:
    ground = declare.value('ground_plane', True, 'add a ground plane at z = 0')
    self_collision = declare.value('self_collision', False, 'robot links collide with each other')
    viewer = declare.value('viewer', False, 'open the MuJoCo viewer when a display exists')
    dynamics = declare.value(
        'urdf_joint_dynamics', False, 'keep URDF joint damping/friction (off: match Pinocchio)'
    )
    boxes = declare.strings(
        'box_collision_links',
        'links whose collision meshes become their bounding box (flat feet on the ground)',
    )
    if gravity.shape != (3,):
        raise StartupError(f'gravity needs 3 values, got {gravity.tolist()}')
    try:
        return MujocoOptions(
            floating_base=robot.floating_base,
            ground_plane=ground,
            gravity_m_s2=tuple(gravity.tolist()),
            timestep_s=timestep,
            self_collision=self_collision,
            keep_visual=viewer,
            urdf_joint_dynamics=dynamics,
            box_collision_links=tuple(boxes),
        )
    except WbcError as error:
        raise StartupError(str(error)) from error


def _command_index(declare: _ParameterDeclarer, robot: RobotModel) -> np.ndarray:
    names = declare.strings('command_joints', 'joint order of the commands (empty: model order)')
    if not names:
        return np.arange(robot.n_actuated)
    if len(set(names)) != len(names):
        raise StartupError('command_joints has duplicate names')
    try:
        return robot.joint_index(names)
    except WbcError as error:
        raise StartupError(f'command_joints: {error}') from error


def _initial_positions(declare: _ParameterDeclarer, robot: RobotModel) -> np.ndarray:
    positions = declare.array(
        'initial_positions', None, 'initial joint positions in model order (empty: zeros)'
    )
    names = declare.strings('initial_joint_names', 'joints set by initial_joint_positions')
    values = declare.array('initial_joint_positions', None, 'values for initial_joint_names')
    if positions.size == 0:
        positions = np.zeros(robot.n_actuated)
    if positions.shape != (robot.n_actuated,):
        raise StartupError(
            f'initial_positions needs {robot.n_actuated} values (one per joint: '
            f'{", ".join(robot.joint_names)}), got {positions.size}'
        )
    if len(names) != values.size:
        raise StartupError(
            f'initial_joint_names ({len(names)}) and initial_joint_positions ({values.size}) '
            'differ in length'
        )
    try:
        positions[robot.joint_index(names)] = values
    except WbcError as error:
        raise StartupError(f'initial_joint_names: {error}') from error
    if not np.isfinite(positions).all():
        raise StartupError('initial joint positions must be finite')
    return positions


def _initial_base_pose(declare: _ParameterDeclarer, robot: RobotModel) -> np.ndarray | None:
    pose = declare.array(
        'initial_base_pose',
        None,
        'floating base: x y z qx qy qz qw in the world (empty: standing on the ground plane)',
    )
    if pose.size == 0:
        return None
    if not robot.floating_base or pose.shape != (7,) or not np.isfinite(pose).all():
        raise StartupError('initial_base_pose needs 7 finite values and a floating base')
    return pose


def _whole_steps(name: str, period_s: float, timestep_s: float) -> int:
    steps = round(period_s / timestep_s)
    if steps < 1 or abs(steps * timestep_s - period_s) > 1e-9 * max(1.0, period_s):
        raise StartupError(
            f'{name} ({period_s} s) must be a positive multiple of timestep ({timestep_s} s)'
        )
    return steps


def _publish_steps(rate_hz: float, timestep_s: float) -> int:
    if not (math.isfinite(rate_hz) and rate_hz > 0.0):
        raise StartupError(f'publish_rate must be positive, got {rate_hz}')
    return max(1, round(1.0 / (rate_hz * timestep_s)))


def _non_negative(name: str, value: float) -> float:
    if not (math.isfinite(value) and value >= 0.0):
        raise StartupError(f'{name} must be a finite number >= 0, got {value}')
    return value


def _open_viewer(node: Node):
    """MuJoCo's passive viewer, or None (with a log line) when there is no display."""
    if not (os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY')):
        node.get_logger().warning('viewer requested but no display is available; running headless')
        return None
    try:
        import mujoco.viewer

        return mujoco.viewer.launch_passive(node.sim.model, node.sim.data)
    except Exception as error:  # noqa: BLE001 - any GUI failure must leave the simulation running
        node.get_logger().warning(f'cannot open the MuJoCo viewer ({error}); running headless')
        return None


def main(args: list[str] | None = None) -> None:
    """Console-script entry point `wbc_sim`."""
    sys.exit(run_node(SimNode, NODE_NAME, args))


if __name__ == '__main__':
    main()
