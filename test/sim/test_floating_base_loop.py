"""Legged robots in closed loop over real DDS: wbc_sim (lockstep) + wbc_controller processes.

Talos stands on both feet for 10 s of simulated time with the shipped configs (COM, torso,
left hand reaching a target 19 cm away, posture), and Solo12 shifts its base by a few cm on
its four point feet. The simulator advances one control period per command and the
controller pairs joint states with odometry by stamp, so every run computes the same
trajectory whatever the machine's speed. The test measures the robot from joint_states +
odom with Pinocchio, independently of the controller.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
import time

from geometry_msgs.msg import PointStamped
import mujoco
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from robots import robot
from ros_support import NodeProcess, RosProbe, stamp_s
from scipy.spatial import ConvexHull
from sensor_msgs.msg import JointState
from sim_support import pinocchio_state
import yaml

from wbc_control.demo.scenarios import SCENARIOS
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.urdf_to_mujoco import MujocoOptions, build_mujoco_robot

CONFIG = Path(__file__).resolve().parents[2] / 'config'
#: Wall-clock upper bounds only (the loop itself runs on simulated time): a 2-core machine
#: with other CPU-bound work can take tens of seconds to start three processes.
START_TIMEOUT_S = 120.0
STALL_TIMEOUT_S = 60.0
#: Subscription depth of the probe: deep enough that a probe starved of CPU for seconds
#: queues the states instead of dropping them.
PROBE_DEPTH = 10_000
#: Simulated time per command. 4 ms keeps the 10 s Talos run near a minute of wall time on a
#: 2-core machine (a Talos tick costs 5-20 ms of Python there); 250 Hz is plenty for the gains.
TALOS_CONTROL_PERIOD_S = 0.004
SOLO_CONTROL_PERIOD_S = 0.002
TALOS_SOLES = ('left_sole_link', 'right_sole_link')
#: Talos's sole boxes in the sole frame, shrunk by 1 cm on each side (support polygon margin).
SOLE_X_M = (-0.105, 0.085)
SOLE_Y_M = (-0.057, 0.057)


def config(name: str, node: str) -> dict:
    return yaml.safe_load((CONFIG / f'{name}.yaml').read_text())['/**']['ros__parameters']


@dataclass
class Trajectory:
    """The robot's states as measured from joint_states + odom of the same stamp."""

    robot: RobotModel
    times: list[float] = field(default_factory=list)
    states: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # (q, v)
    _joints: dict[float, JointState] = field(default_factory=dict)
    _odometry: dict[float, Odometry] = field(default_factory=dict)

    def on_joint_state(self, message: JointState) -> None:
        """Keep a joint state until its odometry comes."""
        self._joints[stamp_s(message)] = message
        self._pair(stamp_s(message))

    def on_odometry(self, message: Odometry) -> None:
        """Keep an odometry sample until its joint state comes."""
        self._odometry[stamp_s(message)] = message
        self._pair(stamp_s(message))

    @property
    def sim_time(self) -> float:
        """Stamp of the newest complete state (-1 before the first)."""
        return self.times[-1] if self.times else -1.0

    def _pair(self, stamp: float) -> None:
        if stamp not in self._joints or stamp not in self._odometry or stamp in self.times[-3:]:
            return
        joints, odometry = self._joints.pop(stamp), self._odometry.pop(stamp)
        index = self.robot.joint_index(joints.name)
        pose, twist = odometry.pose.pose, odometry.twist.twist
        base_pose = [pose.position.x, pose.position.y, pose.position.z]
        base_pose += [pose.orientation.x, pose.orientation.y, pose.orientation.z]
        base_pose += [pose.orientation.w]
        base_twist = [twist.linear.x, twist.linear.y, twist.linear.z]
        base_twist += [twist.angular.x, twist.angular.y, twist.angular.z]
        q = self.robot.configuration(np.asarray(joints.position)[index], base_pose)
        v = self.robot.velocity(np.asarray(joints.velocity)[index], base_twist)
        self.times.append(stamp)
        self.states.append((q, v))


class Loop:
    """wbc_sim in lockstep and wbc_controller as processes, and the probe that watches them."""

    def __init__(self, name: str, control_period_s: float, controller_overrides: dict) -> None:
        urdf_path, floating_base = example_robot_urdf(name)
        self.robot = robot(name)
        model = {'urdf_path': str(urdf_path), 'floating_base': floating_base}
        sim = {
            **config(f'{name}_sim', 'wbc_sim'),
            **model,
            'lockstep': True,
            'real_time_factor': 0.0,  # as fast as the controller answers
            'control_period': control_period_s,
            'lockstep_resend_period': 0.5,
        }
        controller = {
            **config(f'{name}_controller', 'wbc_controller'),
            **model,
            'use_sim_time': True,
            'diagnostics_rate': 0.0,
            # In lock-step the simulator waits for the controller, so a wall-clock stall of a
            # loaded machine is no stale robot; the watchdog's wall-clock bound under sim time,
            # max(joint_state_timeout, 1 s), would otherwise step it with the safe command
            # (seen: Solo12 base 6.25 mm, Talos hand 31 mm off after 1-6 such steps at load 15-30).
            'joint_state_timeout': 10.0,
            **controller_overrides,
        }
        self.probe = RosProbe(f'{name}_loop_probe')
        self.trajectory = Trajectory(self.robot)
        subscriptions = [
            self.probe.node.create_subscription(
                JointState, 'joint_states', self.trajectory.on_joint_state, PROBE_DEPTH
            ),
            self.probe.node.create_subscription(
                Odometry, 'odom', self.trajectory.on_odometry, PROBE_DEPTH
            ),
        ]
        # The probe should hear the run from its first state (stamp 0): the simulator sends it
        # once the controller is connected, so the controller starts only once both of the
        # probe's subscriptions are matched with the simulator's publishers (not merely
        # discovered). Matched on the probe's side only: the simulator's side is not visible
        # here, so the tests do not depend on hearing that one state.
        self.sim = NodeProcess('wbc_sim', sim).__enter__()
        matched = self.probe.spin_until(
            lambda: all(s.get_publisher_count() > 0 for s in subscriptions), START_TIMEOUT_S
        )
        assert matched, (
            f'waited {START_TIMEOUT_S:.0f} s for wbc_sim to publish joint_states and odom:\n'
            f'{self.sim.output()}'
        )
        self.controller = NodeProcess('wbc_controller', controller).__enter__()

    def run_until(self, sim_time_s: float, each_spin: Callable[[], None] | None = None) -> float:
        """Spin until the loop reaches `sim_time_s`; returns the wall time it took.

        Waits on simulated time (the stamps of the states heard); the wall clock only bounds
        how long the loop may go without progress. `each_spin` runs between spins.
        """
        started = time.monotonic()
        last_progress, last_time = time.monotonic(), self.trajectory.sim_time
        while self.trajectory.sim_time < sim_time_s - 1e-9:
            self.probe.spin_until(lambda: self.trajectory.sim_time >= sim_time_s - 1e-9, 0.2)
            if each_spin is not None:
                each_spin()
            if self.trajectory.sim_time > last_time:
                last_progress, last_time = time.monotonic(), self.trajectory.sim_time
            limit = START_TIMEOUT_S if last_time < 0.0 else STALL_TIMEOUT_S
            if time.monotonic() - last_progress > limit or not self.alive():
                raise AssertionError(
                    f'waited {limit:.0f} s of wall time for the loop to pass {last_time:.3f} s '
                    f'of sim time on its way to {sim_time_s:.3f} s (alive: sim '
                    f'{self.sim.alive()}, controller {self.controller.alive()})\n'
                    f'sim:\n{self.sim.output()[-3000:]}\n'
                    f'controller:\n{self.controller.output()[-3000:]}'
                )
        return time.monotonic() - started

    def watchdog_switches(self) -> str:
        """The controller's switches to the safe command after its first state, as it logged them.

        In lock-step the simulator takes a safe command as a command and steps with it: a loop
        stalled for the controller's wall-clock limit (10 s here) on a loaded machine would get a
        zero-torque step and a new soft start. A failure shows them.
        """
        lines = self.controller.output().splitlines()
        switches = [line for line in lines if line.endswith('safe command') and ' for ' in line]
        return f'{len(switches)} wall-clock watchdog switch(es) in the run' + ''.join(
            f'\n  {line}' for line in switches[:10]
        )

    def alive(self) -> bool:
        """True while both processes run."""
        return self.sim.alive() and self.controller.alive()

    def close(self) -> None:
        """Stop both processes and the probe."""
        self.controller.stop()
        self.sim.stop()
        self.probe.close()


def support_margin(state: RobotState, soles: tuple[str, ...]) -> float:
    """Signed distance (m) of the COM's ground projection inside the feet's support polygon."""
    corners = []
    for sole in soles:
        oMs = state.frame_placement(state.robot.frame_id(sole))
        for x in SOLE_X_M:
            for y in SOLE_Y_M:
                corners.append((oMs.rotation @ np.array([x, y, 0.0]) + oMs.translation)[:2])
    hull = ConvexHull(np.array(corners))
    normals, offsets = hull.equations[:, :2], hull.equations[:, 2]
    return float(-(normals @ state.com[:2] + offsets).max())


# Talos --------------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def talos_run() -> dict:
    """10 s of Talos standing and reaching; what the test measured."""
    loop = Loop('talos', TALOS_CONTROL_PERIOD_S, {})
    try:
        wall_s = loop.run_until(10.0)
    finally:
        loop.close()
    controller = config('talos_controller', 'wbc_controller')
    hand_target = np.array(controller['tasks']['hand']['target'])
    state = RobotState(loop.robot)
    hand = loop.robot.frame_id('gripper_left_base_link')
    heights, margins, hand_errors, soles = [], [], [], []
    for q, v in loop.trajectory.states:
        state.update(q, v)
        heights.append(q[2])
        soles.append(
            [state.frame_placement(loop.robot.frame_id(s)).translation for s in TALOS_SOLES]
        )
        margins.append(support_margin(state, TALOS_SOLES))
        hand_errors.append(np.linalg.norm(state.frame_placement(hand).translation - hand_target))
    result = {
        'wall_s': wall_s,
        'times': np.array(loop.trajectory.times),
        'base_height_m': np.array(heights),
        'com_margin_m': np.array(margins),
        'hand_error_m': np.array(hand_errors),
        'sole_travel_m': float(np.ptp(np.array(soles), axis=0).max()),
        'watchdog': loop.watchdog_switches(),
    }
    print(
        f'\nTalos: {result["times"][-1]:.2f} s simulated in {wall_s:.1f} s wall; base height '
        f'{min(heights):.3f}..{max(heights):.3f} m; COM margin min {min(margins) * 1e3:.1f} mm; '
        f'hand error final {hand_errors[-1] * 1e3:.2f} mm, within 2 cm from '
        f'{result["times"][np.argmax(np.array(hand_errors) < 0.02)]:.2f} s; soles moved '
        f'{result["sole_travel_m"] * 1e3:.2f} mm'
    )
    return result


def test_talos_stands_for_10_s_with_the_com_over_its_feet(talos_run):
    times = talos_run['times']
    assert times[-1] >= 10.0 - 1e-9
    # One control period per command: every stamp lies on the period grid from 0 and (even if
    # a probe starved of CPU lost a few states in transit) nearly every grid point was heard.
    # A simulator that stepped twice per command would cover only half of the grid. The first
    # state (stamp 0) is one of those that can be lost: the simulator's publisher keeps the
    # last 10 states, and once the probe missed it (first heard 0.004 s, at load 17).
    steps = times / TALOS_CONTROL_PERIOD_S
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)
    heard = np.unique(np.round(steps)).size / (round(steps[-1]) + 1)
    assert heard > 0.9, f'only {heard:.1%} of the states were heard'
    watchdog = talos_run['watchdog']
    assert talos_run['base_height_m'].min() > 0.95, watchdog  # half-sitting base: 1.02 m
    assert talos_run['com_margin_m'].min() > 0.0, watchdog
    assert talos_run['sole_travel_m'] < 0.002, watchdog  # the feet neither slip nor lift


def test_talos_hand_reaches_its_target_within_2_cm(talos_run):
    errors, times = talos_run['hand_error_m'], talos_run['times']
    assert errors[0] > 0.15  # the target starts 19 cm away
    assert errors[times >= 3.0].max() < 0.02, talos_run['watchdog']


# Solo12 -------------------------------------------------------------------------------------

SOLO_SHIFT_M = np.array([0.03, 0.02, -0.02])
FEET = ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')


def test_solo12_shifts_its_base_on_four_point_feet():
    started = time.monotonic()
    loop = Loop('solo12', SOLO_CONTROL_PERIOD_S, {})
    target = loop.probe.publisher(PointStamped, '/wbc_controller/base/target')
    state = RobotState(loop.robot)
    base = loop.robot.frame_id('base_link')
    try:
        loop.run_until(0.5)
        # A target published before the controller's subscription is matched is lost.
        matched = loop.probe.spin_until(lambda: target.get_subscription_count() > 0, 60.0)
        assert matched, 'waited 60 s for wbc_controller to subscribe to base/target'
        state.update(*loop.trajectory.states[-1])
        start = state.frame_placement(base).translation.copy()
        goal = start + SOLO_SHIFT_M
        message = PointStamped()
        message.header.frame_id = 'odom'
        message.point.x, message.point.y, message.point.z = goal.tolist()
        shifted_from = loop.trajectory.sim_time
        target.publish(message)
        # The same goal again after every spin: harmless to the controller, and a copy lost
        # in transit cannot leave the base where it was.
        loop.run_until(shifted_from + 2.5, lambda: target.publish(message))
    finally:
        loop.close()
    watchdog = loop.watchdog_switches()
    errors, feet, times = [], [], []
    for t, (q, v) in zip(loop.trajectory.times, loop.trajectory.states):
        if t >= shifted_from + 1.5:
            times.append(t)
            state.update(q, v)
            errors.append(np.linalg.norm(state.frame_placement(base).translation - goal))
            feet.append([state.frame_placement(loop.robot.frame_id(f)).translation for f in FEET])
    shift_cm = np.linalg.norm(SOLO_SHIFT_M) * 100
    print(
        f'\nSolo12: base error {max(errors) * 1e3:.2f} mm after the {shift_cm:.1f} cm shift; feet '
        f'moved {np.ptp(np.array(feet), axis=0).max() * 1e3:.2f} mm; '
        f'{time.monotonic() - started:.1f} s wall'
    )
    worst = times[int(np.argmax(errors))]
    assert max(errors) < 0.005, f'{max(errors) * 1e3:.2f} mm at {worst:.3f} s; {watchdog}'
    assert np.ptp(np.array(feet), axis=0).max() < 0.002, watchdog  # the feet did not slip


# The simulator's flat feet ------------------------------------------------------------------


def test_box_collision_links_stand_talos_on_the_corners_of_its_soles():
    urdf_path, _ = example_robot_urdf('talos')
    talos = robot('talos')
    sim_config = config('talos_sim', 'wbc_sim')
    options = MujocoOptions(
        floating_base=True,
        ground_plane=True,
        box_collision_links=tuple(sim_config['box_collision_links']),
    )
    sim = MujocoSimulation(talos, build_mujoco_robot(urdf_path.read_text(), options))
    sim.reset(sim_config['initial_positions'])
    sim.place_on_ground(clearance_m=-0.0005)
    mujoco.mj_forward(sim.model, sim.data)
    contacts = sim.data.contact[: sim.data.ncon]
    assert len(contacts) == 8  # 4 corners per sole
    state = RobotState(talos)
    state.update(*pinocchio_state(sim))
    for sole in TALOS_SOLES:
        oMs = state.frame_placement(talos.frame_id(sole))
        assert abs(oMs.translation[2]) < 2e-3  # the box bottom is flush with the sole frame
        local = [oMs.actInv(contact.pos) for contact in contacts]
        near = [p for p in local if abs(p[1]) < 0.1]
        assert len(near) == 4
        assert np.ptp([p[0] for p in near]) > 0.2 and np.ptp([p[1] for p in near]) > 0.12


def test_the_talos_demo_runs_the_shipped_configs():
    scenario = SCENARIOS['talos']()
    controller = config('talos_controller', 'wbc_controller')
    for key in ('contacts', 'contact_types', 'odom_pairing', 'task_names', 'tasks'):
        assert scenario.controller[key] == controller[key], key
    sim = config('talos_sim', 'wbc_sim')
    for key in ('box_collision_links', 'initial_positions', 'initial_base_pose'):
        assert scenario.sim[key] == sim[key], key
