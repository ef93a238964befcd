"""`wbc_demo`: the whole loop in one command (wbc_sim + wbc_controller + wbc_diagnostics).

Starts the three nodes as processes talking over real DDS, moves the tracked task's target,
prints a progress line, and at the end writes demo.png (tracking error, torques against their
limits, κ₂(M) and its scaled-diagonal-ratio estimate) and summary.txt / summary.json. With
`--payload KG` the simulator carries a payload on the tracked frame that the controller learns
of halfway through (:mod:`wbc_control.demo.payload_setter`).
"""

import argparse
from collections.abc import Sequence
import os
from pathlib import Path
import sys
import time

from geometry_msgs.msg import PointStamped
from nav_msgs.msg import Odometry
import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray

from wbc_control.demo.legged_run import run_legged
from wbc_control.demo.payload_setter import PayloadSetter, nested, payload_parameters
from wbc_control.demo.processes import (
    ManagedProcess,
    spin_until,
    start_node,
    wait_for_publisher,
    wait_for_simulator,
    wait_until,
)
from wbc_control.demo.report import DemoRecord, summarize, write_report
from wbc_control.demo.scenarios import LEGGED_SCENARIOS, SCENARIOS, Scenario
from wbc_control.demo.trajectory_sender import (
    TRAJECTORY_COPIES,
    TRAJECTORY_RESEND_S,
    TrajectorySender,
)
from wbc_control.exceptions import WbcError
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import JointStateMapping, RobotModel
from wbc_control.model.robot_state import RobotState

QUEUE_DEPTH = 100
TARGET_PERIOD_S = 0.01


class DemoMonitor(Node):
    """Moves the target and records the loop; the nodes under test do all the control."""

    def __init__(self, scenario: Scenario, robot: RobotModel) -> None:
        super().__init__('wbc_demo', parameter_overrides=[Parameter('use_sim_time', value=True)])
        self.scenario = scenario
        self.robot = robot
        self.state = RobotState(robot)
        self._mapping = JointStateMapping(robot)
        self.frame_id = robot.frame_id(scenario.tracked_frame)
        self.record = DemoRecord(robot.effort_limits, robot.joint_names)
        self.sim_time = 0.0
        self.last_state_wall = time.monotonic()
        self._next_target = 0.0
        self.payload: PayloadSetter | None = None
        if scenario.motion is None:
            topic = f'/wbc_controller/{scenario.tracked_task}/target'
            self._target = self.create_publisher(PointStamped, topic, 10)
        else:
            self.trajectory = TrajectorySender(self, scenario.tracked_task, scenario.motion, 11.0)
        self._joints: tuple[float, np.ndarray] | None = None  # (stamp, positions)
        self._base: tuple[float, np.ndarray] | None = None  # (stamp, pose xyz + xyzw)
        # Configurations are only stored here; forward kinematics runs after the run (and for
        # the progress line), so the callbacks stay cheap and the targets go out on time.
        self._configurations: list[np.ndarray] = []
        self._joint_states = self.create_subscription(
            JointState, 'joint_states', self._on_joint_state, QUEUE_DEPTH
        )
        if robot.floating_base:
            self.create_subscription(Odometry, 'odom', self._on_odometry, QUEUE_DEPTH)
        self.create_subscription(
            Float64MultiArray, 'effort_controller/commands', self._on_command, QUEUE_DEPTH
        )
        self._kappa = self.create_subscription(
            Float64, '/wbc_diagnostics/condition_number', self._on_kappa, 10
        )
        self.create_subscription(
            Float64, '/wbc_diagnostics/scaled_diagonal_ratio', self._on_estimate, 10
        )

    def _on_joint_state(self, message: JointState) -> None:
        index, mimics = self._mapping.message_indices(message.name)
        positions = np.asarray(message.position, dtype=float)[index]
        if mimics is not None:
            mimics.apply(positions)
        self._joints = (_stamp_s(message), positions)
        self._measure()

    def _on_odometry(self, message: Odometry) -> None:
        pose = message.pose.pose
        position, orientation = pose.position, pose.orientation
        values = [position.x, position.y, position.z]
        values += [orientation.x, orientation.y, orientation.z, orientation.w]
        self._base = (_stamp_s(message), np.array(values))
        self._measure()

    def _measure(self) -> None:
        """Record the tracked frame once a joint state (and its odometry) is complete."""
        if self._joints is None:
            return
        stamp, positions = self._joints
        base_pose = None
        if self.robot.floating_base:
            if self._base is None or self._base[0] != stamp:
                return
            base_pose = self._base[1]
        self._joints = None
        self.sim_time = stamp
        self.last_state_wall = time.monotonic()
        if self.scenario.motion is None and self.sim_time >= self._next_target:
            self._publish_target()
        self.record.time.append(self.sim_time)
        self._configurations.append(self.robot.configuration(positions, base_pose))
        if self.payload is not None:
            self.payload.update(self.sim_time)

    def joint_state_publishers(self) -> int:
        """How many publishers the joint_states subscription has matched."""
        return self._joint_states.get_publisher_count()

    def diagnostics_publishers(self) -> int:
        """How many publishers the condition-number subscription has matched."""
        return self._kappa.get_publisher_count()

    def tracked_position(self, index: int) -> np.ndarray:
        """The tracked frame's position (world, m) at recorded sample `index`."""
        self.state.update(self._configurations[index], np.zeros(self.robot.nv))
        return np.array(self.state.frame_placement(self.frame_id).translation)

    def started(self) -> bool:
        """Whether a state was recorded."""
        return bool(self.record.time)

    def tracking_error(self, index: int) -> float:
        """Distance (m) from the tracked frame to the target at recorded sample `index`."""
        target = self.scenario.target(self.record.time[index])
        return float(np.linalg.norm(target - self.tracked_position(index)))

    def finish_record(self) -> DemoRecord:
        """The record with the path, its reference and the tracking error of every sample."""
        count = len(self._configurations)
        self.record.path = [self.tracked_position(i) for i in range(count)]
        self.record.reference = [self.scenario.target(t) for t in self.record.time[:count]]
        self.record.tracking_error = [
            float(np.linalg.norm(r - p)) for r, p in zip(self.record.reference, self.record.path)
        ]
        if self.payload is not None:
            self.record.payload_sent_s = self.payload.sent_s
            self.record.payload_set_s = self.payload.answered_s
        return self.record

    def _publish_target(self) -> None:
        message = PointStamped()
        message.header.stamp = self.get_clock().now().to_msg()
        message.point.x, message.point.y, message.point.z = (
            float(v) for v in self.scenario.target(self.sim_time + TARGET_PERIOD_S)
        )
        self._target.publish(message)
        self._next_target = self.sim_time + TARGET_PERIOD_S

    def _on_command(self, message: Float64MultiArray) -> None:
        if len(message.data) == self.robot.n_actuated:
            self.record.torque_time.append(self.sim_time)
            self.record.torques.append(np.asarray(message.data))

    def _on_kappa(self, message: Float64) -> None:
        self.record.kappa_time.append(self.sim_time)
        self.record.kappa.append(message.data)

    def _on_estimate(self, message: Float64) -> None:
        self.record.estimate_time.append(self.sim_time)
        self.record.estimate.append(message.data)


def _stamp_s(message: JointState | Odometry) -> float:
    return message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog='wbc_demo', description=__doc__.splitlines()[0])
    parser.add_argument(
        '--robot', choices=sorted({*SCENARIOS, *LEGGED_SCENARIOS}), default='panda'
    )
    parser.add_argument('--duration', type=float, default=10.0, help='sim seconds (default 10)')
    parser.add_argument('--headless', action='store_true', help='never open the MuJoCo viewer')
    parser.add_argument(
        '--output', type=Path, default=Path('wbc_demo_output'), help='directory for the report'
    )
    parser.add_argument(
        '--payload',
        type=float,
        default=0.0,
        metavar='KG',
        help='a payload on the tracked frame in the simulator, set on the controller halfway',
    )
    arguments = parser.parse_args(argv)
    if not arguments.payload >= 0.0:
        parser.error(f'--payload: a mass >= 0 kg, not {arguments.payload}')
    if arguments.payload and arguments.robot in LEGGED_SCENARIOS:
        parser.error(f'--payload: for {", ".join(sorted(SCENARIOS))}, not {arguments.robot}')
    return arguments


def run(arguments: argparse.Namespace) -> int:
    """Run one scenario; returns the exit code."""
    if arguments.robot in LEGGED_SCENARIOS:
        return run_legged(LEGGED_SCENARIOS[arguments.robot](), arguments)
    scenario = SCENARIOS[arguments.robot]()
    urdf_path, floating_base = example_robot_urdf(scenario.robot)
    robot = RobotModel.from_urdf_path(urdf_path, floating_base)
    model_parameters = {'urdf_path': str(urdf_path), 'floating_base': floating_base}
    output = arguments.output
    output.mkdir(parents=True, exist_ok=True)
    viewer = not arguments.headless and bool(os.environ.get('DISPLAY'))
    payload = payload_parameters(scenario.tracked_frame, arguments.payload)
    description = scenario.description
    if arguments.payload:
        set_at_s = 0.5 * arguments.duration
        description += (
            f'; {arguments.payload:g} kg on {scenario.tracked_frame} in the simulator,'
            f' set on the controller at {set_at_s:g} s'
        )
    print(f'wbc_demo: {description}; output in {output}/', flush=True)
    rclpy.init()
    monitor = DemoMonitor(scenario, robot)
    if scenario.motion is not None:
        monitor.trajectory.end_s = arguments.duration + 1.0
    # The monitor, the controller and the diagnostics node all hear the loop from its first state.
    sim = {**model_parameters, **scenario.sim, 'viewer': viewer, 'lockstep_subscribers': 3}
    if arguments.payload:
        sim |= nested(payload)
        monitor.payload = PayloadSetter(monitor, payload, set_at_s)
        monitor.record.payload_kg = arguments.payload
    nodes = {
        'wbc_diagnostics': {**model_parameters, **scenario.diagnostics, 'use_sim_time': True},
        'wbc_controller': {**model_parameters, **scenario.controller, 'use_sim_time': True},
    }
    processes: list[ManagedProcess] = []
    try:
        if scenario.motion is None:
            completed = start_after_simulator(monitor, sim, nodes, output, processes)
        else:
            completed = start_before_simulator(monitor, sim, nodes, output, processes)
        if completed:
            completed = spin_until(
                monitor, processes, arguments.duration, lambda: _status(monitor)
            )
    except (KeyboardInterrupt, ExternalShutdownException):
        completed = False
    finally:
        for process in processes:
            process.stop()
        monitor.destroy_node()
        rclpy.try_shutdown()
    print()
    record = monitor.finish_record()
    summary = summarize(record, settle_s=2.0)
    png = write_report(record, summary, description, output)
    print((output / 'summary.txt').read_text(), end='')
    print(f'wbc_demo: wrote {png} and {output / "summary.txt"}')
    return 0 if completed and _payload_set(monitor.payload) else 1


def _payload_set(payload: PayloadSetter | None) -> bool:
    """Whether the payload (if any) reached the controller; if not, say why."""
    if payload is None or (payload.answered_s is not None and not payload.refusal):
        return True
    reason = payload.refusal or f'no answer by the end (sent at {payload.sent_s} s)'
    print(f'wbc_demo: the controller did not take the payload parameters: {reason}')
    return False


def start_after_simulator(
    monitor: DemoMonitor,
    sim: dict,
    nodes: dict[str, dict],
    output: Path,
    processes: list[ManagedProcess],
) -> bool:
    """Start wbc_sim, then (once heard) wbc_diagnostics and wbc_controller into `processes`.

    For targets sent state by state: the lock-stepped loop starts as soon as the controller
    hears the simulator and runs fast, so the monitor must hear the simulator first, or it
    would miss the start and move the target late. The diagnostics node goes before the
    controller: a fast loop can simulate a whole run before a late node's first κ (CI: none in
    a 3 s run on a loaded machine).
    """
    processes.append(start_node('wbc_sim', sim, output))
    if not wait_for_simulator(monitor, processes[0]):
        return False
    processes.append(start_node('wbc_diagnostics', nodes['wbc_diagnostics'], output))
    if not wait_for_publisher(monitor, monitor.diagnostics_publishers, processes[-1]):
        return False
    processes.append(start_node('wbc_controller', nodes['wbc_controller'], output))
    return True


def start_before_simulator(
    monitor: DemoMonitor,
    sim: dict,
    nodes: dict[str, dict],
    output: Path,
    processes: list[ManagedProcess],
) -> bool:
    """Start wbc_diagnostics and wbc_controller, send the trajectory, then start wbc_sim.

    The controller holds a trajectory received before its first state; it is re-sent until the
    simulator is heard (`TrajectorySender`). The monitor may miss the loop's first states.
    """
    for name, parameters in nodes.items():
        processes.append(start_node(name, parameters, output))
    sender = monitor.trajectory
    if not wait_for_publisher(monitor, monitor.diagnostics_publishers, processes[0]):
        return False
    if not wait_for_publisher(monitor, sender.listening, processes[1]):
        return False
    processes.append(start_node('wbc_sim', sim, output))
    sender.send_due()

    def heard() -> bool:
        return monitor.joint_state_publishers() > 0 and sender.copies >= TRAJECTORY_COPIES

    return wait_until(monitor, heard, processes, sender.send_due, TRAJECTORY_RESEND_S / 2)


def _status(monitor: DemoMonitor) -> str:
    error = monitor.tracking_error(-1) if monitor.record.time else 0.0
    kappa = monitor.record.kappa[-1] if monitor.record.kappa else float('nan')
    return f'tracking error {error * 1e3:7.2f} mm   κ(M) {kappa:9.1f}'


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        sys.exit(run(parse_arguments(argv)))
    except WbcError as error:
        print(f'wbc_demo: {error}', file=sys.stderr)
        sys.exit(1)
