"""`wbc_demo --robot solo12_lift | talos_lift`: a legged script driven over real DDS.

Starts wbc_sim (lock-step) and wbc_controller as processes, and a monitor node that, on each
state (joint_states + odom of one stamp), streams the COM and foot lead targets for the next
control period (:func:`wbc_control.demo.legged.lead_target`), sets `contacts` on the
controller at the script's times, and records the states and commands. The report
(:mod:`wbc_control.demo.legged_report`) measures them afterwards with Pinocchio.

The controller's commands go to the simulator through the monitor (the controller's
`effort_controller/commands` is remapped to `COMMAND_RELAY`): a command is passed on only once
the monitor has handled the state before it, so the lock-stepped simulator cannot run ahead
of the targets however the machine's load starves the monitor, and none is passed on before
the controller subscribes to /clock, joint_states and odom: until then its watchdog's gravity
commands would step the simulator while the robot sags, unseen by the controller.
"""

import argparse
from pathlib import Path
import time

from geometry_msgs.msg import PointStamped, PoseStamped
from nav_msgs.msg import Odometry
import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.demo.command_gate import CommandGate
from wbc_control.demo.legged import LeggedScenario, lead_target
from wbc_control.demo.legged_report import LeggedRecord, summarize_legged, write_legged_report
from wbc_control.demo.processes import (
    spin_until,
    start_node,
    wait_for_simulator,
)
from wbc_control.exceptions import WbcError
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import JointStateMapping, RobotModel
from wbc_control.model.robot_state import RobotState

QUEUE_DEPTH = 1000
COMMAND_TOPIC = '/effort_controller/commands'
COMMAND_RELAY = '/wbc_demo/controller_commands'
#: The foot's target starts streaming this long before its release (s).
FOOT_LEAD_S = 0.1
CONTROLLER = 'wbc_controller'
#: The controller's inputs from the simulator: commands wait until it subscribes to all three.
CONTROLLER_INPUTS = ('/clock', '/joint_states', '/odom')
STALL_TIMEOUT_S = 60.0


class LeggedMonitor(Node):
    """Drives the script's references and contacts; records states and commands."""

    def __init__(self, scenario: LeggedScenario, robot: RobotModel) -> None:
        super().__init__(
            'wbc_demo_legged', parameter_overrides=[Parameter('use_sim_time', value=True)]
        )
        self.scenario, self.robot = scenario, robot
        self.record = LeggedRecord()
        self.sim_time = -1.0
        self.last_state_wall = time.monotonic()
        self._mapping = JointStateMapping(robot)
        self._period = scenario.sim['control_period']
        self._pending: dict[float, list] = {}
        self._starts: np.ndarray | None = None
        self._foot_from: tuple[np.ndarray, np.ndarray] | None = None
        self._switches = list(scenario.contacts)
        self._parameters = AsyncParameterClient(self, 'wbc_controller')
        foot = scenario.controller['tasks'][scenario.foot_task]
        self._foot_pose = foot['type'] == 'frame_pose'
        self._com = self.create_publisher(
            PointStamped, f'/wbc_controller/{scenario.shift_task}/target', 10
        )
        self._foot = self.create_publisher(
            PoseStamped if self._foot_pose else PointStamped,
            f'/wbc_controller/{scenario.foot_task}/target',
            10,
        )
        self._joint_states = self.create_subscription(
            JointState, 'joint_states', self._on_joint_state, QUEUE_DEPTH
        )
        self.create_subscription(Odometry, 'odom', self._on_odometry, QUEUE_DEPTH)
        self.create_subscription(Float64MultiArray, COMMAND_RELAY, self._on_command, QUEUE_DEPTH)
        self._commands = self.create_publisher(Float64MultiArray, COMMAND_TOPIC, QUEUE_DEPTH)
        self._gate: CommandGate[Float64MultiArray] = CommandGate()
        self._controller_listening = self._controller_ticked = False

    def joint_state_publishers(self) -> int:
        """How many publishers the joint_states subscription has matched."""
        return self._joint_states.get_publisher_count()

    def _on_joint_state(self, message: JointState) -> None:
        try:
            index, mimics = self._mapping.message_indices(message.name)
        except WbcError:  # another robot's joint states on this DDS domain
            return
        stamp = _stamp_s(message)
        positions = np.asarray(message.position, dtype=float)[index]
        velocities = np.asarray(message.velocity, dtype=float)[index]
        if mimics is not None:
            mimics.apply(positions, velocities)
        self._pair(stamp, 0, [positions, velocities])

    def _on_odometry(self, message: Odometry) -> None:
        pose, twist = message.pose.pose, message.twist.twist
        base_pose = [pose.position.x, pose.position.y, pose.position.z]
        base_pose += [pose.orientation.x, pose.orientation.y, pose.orientation.z]
        base_pose += [pose.orientation.w]
        base_twist = [twist.linear.x, twist.linear.y, twist.linear.z]
        base_twist += [twist.angular.x, twist.angular.y, twist.angular.z]
        self._pair(_stamp_s(message), 1, [base_pose, base_twist])

    def _pair(self, stamp: float, slot: int, values: list) -> None:
        halves = self._pending.setdefault(stamp, [None, None])
        halves[slot] = values
        if halves[0] is None or halves[1] is None:
            return
        del self._pending[stamp]
        (positions, velocities), (base_pose, base_twist) = halves
        q = self.robot.configuration(positions, base_pose)
        v = self.robot.velocity(velocities, base_twist)
        self._on_state(stamp, q, v)

    def _on_state(self, stamp: float, q: np.ndarray, v: np.ndarray) -> None:
        if stamp <= self.sim_time:
            # The lock-stepped simulator re-sends its state when no command came for a while:
            # counted again, it would let a second command through for one step, and every
            # command after it would act one control period late. If its command was passed
            # on, it was lost: the same command goes again.
            repeated = self._gate.state_resent() if stamp == self.sim_time else None
            if repeated is not None:
                print(f'\nwbc_demo: state {stamp:.3f} s re-sent: its command was lost, sent again')
                self._commands.publish(repeated)
            return
        self.sim_time = stamp
        self.last_state_wall = time.monotonic()
        if self._starts is None:
            self._starts = self._measure_starts(q)
        if self._foot_from is None and stamp >= self.scenario.com_moves[0].start_s:
            self._foot_from = self._measure_foot(q)
            self.record.foot_start = self._foot_from[0].copy()
        self._publish_targets(stamp + self._period)
        while self._switches and stamp >= self._switches[0][0]:
            _, frames = self._switches.pop(0)
            self._parameters.set_parameters([Parameter('contacts', value=list(frames))])
            self.record.switch_times.append(stamp)
        self.record.times.append(stamp)
        self.record.configurations.append(q)
        self.record.velocities.append(v)
        self._gate.state_handled()
        self.pass_commands()

    def _measure_starts(self, q: np.ndarray) -> np.ndarray:
        """Where the shifting task (the COM or a frame) stands at the first state."""
        state = RobotState(self.robot)
        state.update(q, np.zeros(self.robot.nv))
        task = self.scenario.controller['tasks'][self.scenario.shift_task]
        if task['type'] == 'com':
            start = state.com.copy()
        else:
            start = state.frame_placement(self.robot.frame_id(task['frame'])).translation.copy()
        self.record.com_start = start
        return start

    def _measure_foot(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The foot's position and orientation (xyzw) at `q`.

        Taken when the weight starts to shift: the robot has settled on its feet, and the foot
        still stands flat (a sole may roll a little onto an edge while its load goes); the
        script moves the foot from there and puts it back there.
        """
        state = RobotState(self.robot)
        state.update(q, np.zeros(self.robot.nv))
        foot = state.frame_placement(self.robot.frame_id(self.scenario.foot_frame))
        return foot.translation.copy(), _xyzw(foot.rotation)

    def _publish_targets(self, t: float) -> None:
        scenario = self.scenario
        gains = scenario.gains(scenario.shift_task)
        com = lead_target(self._starts, scenario.com_moves, t, *gains)
        self._com.publish(_point(com))
        if self._foot_from is None or t < scenario.contacts[0][0] - FOOT_LEAD_S:
            return  # the foot task sits out while its contact holds the foot
        foot_start, quaternion = self._foot_from
        foot = lead_target(foot_start, scenario.foot_moves, t, *scenario.gains(scenario.foot_task))
        if self._foot_pose:
            message = PoseStamped()
            position, orientation = message.pose.position, message.pose.orientation
            position.x, position.y, position.z = (float(v) for v in foot)
            orientation.x, orientation.y, orientation.z, orientation.w = quaternion.tolist()
            self._foot.publish(message)
        else:
            self._foot.publish(_point(foot))

    def _on_command(self, message: Float64MultiArray) -> None:
        if not self._controller_ticked:
            # Before its first accepted state the controller's watchdog sends zero torques:
            # passed on, they would step the lock-stepped simulator while the robot sags.
            if not any(message.data):
                return
            self._controller_ticked = True
        if len(message.data) == self.robot.n_actuated and self.sim_time >= 0.0:
            self.record.torque_times.append(self.sim_time)
            self.record.torques.append(np.asarray(message.data))
        self._gate.command(message)  # the newest: the watchdog's ones before the first tick go
        self.pass_commands()

    def started(self) -> bool:
        """Whether a state was recorded."""
        return bool(self.record.times)

    def pass_commands(self) -> None:
        """One command per handled state goes on to the simulator (module docstring)."""
        if not self._controller_listening:
            self._controller_listening = all(
                any(
                    info.node_name == CONTROLLER
                    for info in self.get_subscriptions_info_by_topic(t)
                )
                for t in CONTROLLER_INPUTS
            )
        if not self._controller_listening:
            return
        command = self._gate.take()
        if command is not None:
            self._commands.publish(command)


def _stamp_s(message) -> float:
    return message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec


def _point(values: np.ndarray) -> PointStamped:
    message = PointStamped()
    message.point.x, message.point.y, message.point.z = (float(v) for v in values)
    return message


def _xyzw(rotation: np.ndarray) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(rotation).as_quat()


def run_legged(scenario: LeggedScenario, arguments: argparse.Namespace) -> int:
    """Run one legged script and write its report; returns the exit code."""
    urdf_path, floating_base = example_robot_urdf(scenario.robot)
    robot = RobotModel.from_urdf_path(urdf_path, floating_base)
    model = {'urdf_path': str(urdf_path), 'floating_base': floating_base}
    output: Path = arguments.output
    output.mkdir(parents=True, exist_ok=True)
    duration = min(arguments.duration, scenario.duration_s)
    print(f'wbc_demo: {scenario.description}; output in {output}/', flush=True)
    rclpy.init()
    monitor = LeggedMonitor(scenario, robot)
    processes = [start_node('wbc_sim', {**model, **scenario.sim, 'viewer': False}, output)]
    completed = False
    try:
        if wait_for_simulator(monitor, processes[0]):
            controller = {**model, **scenario.controller, 'use_sim_time': True}
            remap = ['-r', f'effort_controller/commands:={COMMAND_RELAY}']
            processes.append(start_node('wbc_controller', controller, output, remap))
            completed = spin_until(
                monitor,
                processes,
                duration,
                lambda: _status(monitor),
                monitor.pass_commands,
                STALL_TIMEOUT_S,
            )
    except (KeyboardInterrupt, ExternalShutdownException):
        completed = False
    finally:
        for process in processes:
            process.stop()
        monitor.destroy_node()
        rclpy.try_shutdown()
    print()
    summary = summarize_legged(scenario, robot, monitor.record)
    png = write_legged_report(scenario, robot, monitor.record, summary, output)
    print((output / 'summary.txt').read_text(), end='')
    written = f'{png} and ' if png.exists() else ''
    print(f'wbc_demo: wrote {written}{output / "summary.txt"}')
    return 0 if completed else 1


def _status(monitor: LeggedMonitor) -> str:
    contacts = ', '.join(monitor.scenario.contacts_at(monitor.sim_time))
    return f'contacts {contacts:60s}'
