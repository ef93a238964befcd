"""Robots we ship no config for through `wbc_sim.launch.py`, as a new user would try them.

The public interface only: the launch file with the user's controller and simulator files.

Each run is lock-stepped and waits for the probe too (`lockstep_subscribers`: the controller,
the diagnostics node and the probe), whose joint states carry the torque the simulator applied
(`effort`), stamped: steps are taken between consecutive periods only, and at least 90 % of
the periods must arrive. No joint state may be rejected as implausible.
test/sim/test_unconfigured_robots.py runs the same robots through the controller loop without
ROS.

- An arm reaching 1.2 m beyond its reach (the rule of test/sim/test_edges.py): its last body
  frame's position that much farther out (horizontally) than where it starts, over a posture
  at the start, the defaults otherwise (joint limits on, no `torque_rate_limit`, no
  `max_error`), on a pedestal: no ground plane (the UR10 starts stretched out at its
  shoulder's height, 0.13 m; with a plane at its base's height it was not at rest after 6 s,
  0.07 rad/s, and stepped 28 N m). At rest: every joint below 0.02 rad/s over the last second
  of 6 s; no step above 5 % of the largest effort limit after the first 0.5 s; inside the URDF
  limits; the frame closer to its target than at the start.
- The Unitree G1 (29 joints) dropped 1 mm onto its soles with the joint limits on: the soles
  as surface contacts, the centre of mass held where it starts and the posture at the start
  (no targets: the values at the first state), the pelvis upright; the base placed 1 mm above
  touching the ground, as MuJoCo places it (`MujocoSimulation.place_on_ground`). Over 3 s the
  base within 2 mm of its height at the start and within 0.5 deg of upright, every joint below
  0.05 rad/s at the end, no step above 2 % of the largest effort limit after the first 0.1 s
  (the landing's).
"""

from pathlib import Path
from typing import NamedTuple

from edge_runs import CHATTER_SHARE, REST_SPEED
from launch_support import LaunchRun, launch_command, launch_sources
from nav_msgs.msg import Odometry
import numpy as np
import pinocchio as pin
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from robots import G1_SOLES, G1_STANDING, G1_URDF, beyond_reach, tilt_deg
from ros_support import RosProbe, stamp_s
from sensor_msgs.msg import JointState
from sim_support import simulation_of
from unconfigured_runs import ARMS
import yaml

from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel

pytestmark = pytest.mark.slow

SOURCES = launch_sources()


class Run(NamedTuple):
    """What the probe received: joint states and odometry (none for a fixed base)."""

    states: list
    odometry: list


#: Simulated time of a run (s), the control period (s), the start of the chatter rule (s); at
#: rest and without chatter by `edge_runs`' rule (`REST_SPEED`, `CHATTER_SHARE`).
RUN_S, PERIOD_S, SETTLING_S = 6.0, 0.002, 0.5
#: Wall-clock bound of a run: start-up under load and a simulation slower than real time.
RUN_WAIT_S = 300.0
#: The arms of `unconfigured_runs.ARMS` run through the launch file.
LAUNCHED_ARMS = ('ur10', 'xarm7')


def parameters_file(path: Path, parameters: dict) -> str:
    """Write `parameters` as a ROS parameters file for any node name; the launch argument."""
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': parameters}}))
    return str(path)


def arm_files(robot: RobotModel, folder) -> tuple[int, np.ndarray, list[str]]:
    """The tip frame, its target and the launch arguments naming the user's two files."""
    start = robot.joint_positions(pin.neutral(robot.model))
    tip, _, target = beyond_reach(robot, start)
    posture = [float(q) for q in start]
    tasks = {
        'tip': {'type': 'frame_position', 'frame': robot.model.frames[tip].name, 'kp': 100.0,
                'target': [float(x) for x in target]},
        'posture': {'type': 'joint_posture', 'priority': 1, 'kp': 25.0, 'target': posture},
    }  # fmt: skip
    controller = {'task_names': ['tip', 'posture'], 'tasks': tasks}
    sim = {'lockstep': True, 'lockstep_subscribers': 3, 'ground_plane': False,
           'control_period': PERIOD_S, 'initial_positions': posture}  # fmt: skip
    return (
        tip,
        target,
        [
            f'controller_params:={parameters_file(folder / "controller.yaml", controller)}',
            f'sim_params:={parameters_file(folder / "sim.yaml", sim)}',
            'floating_base:=false',
        ],
    )


def run_sim(distro: str, prefix, urdf, arguments: list[str], seconds: float) -> Run:
    """`seconds` of simulated time of `wbc_sim.launch.py` on `urdf` with `arguments`, probed."""
    command = launch_command(distro, prefix, 'wbc_sim.launch.py', f'urdf_path:={urdf}', *arguments)
    with LaunchRun(command) as run:
        probe = RosProbe('unconfigured_probe')
        try:
            qos = QoSProfile(depth=10_000, reliability=ReliabilityPolicy.BEST_EFFORT)
            states = probe.subscribe(JointState, '/joint_states', qos)
            odometry = probe.subscribe(Odometry, '/odom', qos)

            def done() -> bool:
                return bool(states) and stamp_s(states[-1]) >= seconds

            probe.spin_until(lambda: done() or run.process.poll() is not None, RUN_WAIT_S)
            assert done(), run.output()
        finally:
            probe.close()
        run.interrupt()
        output = run.output()
    assert not any(word in output for word in ('velocity_limit', 'position_limit')), output
    return Run(list(states), list(odometry))


def largest_step(states: list, after_s: float, seconds: float) -> float:
    """The largest change of the applied torque between consecutive periods after `after_s`."""
    stamps = np.array([stamp_s(state) for state in states])
    torques = np.array([state.effort for state in states])
    consecutive = np.isclose(np.diff(stamps), PERIOD_S, atol=PERIOD_S / 4)
    steps = np.abs(np.diff(torques, axis=0)).max(axis=1)[consecutive & (stamps[1:] > after_s)]
    assert steps.shape[0] > 0.9 * (seconds - after_s) / PERIOD_S, 'too many periods lost'
    return float(steps.max())


@pytest.mark.parametrize('name', LAUNCHED_ARMS)
@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_an_arm_without_a_config_reaching_beyond_its_reach_comes_to_rest(
    distro, name, real_prefix, tmp_path
):
    urdf = robots_directory() / ARMS[name].urdf
    robot = RobotModel.from_urdf_path(str(urdf), False)
    tip, target, arguments = arm_files(robot, tmp_path)
    states = run_sim(distro, real_prefix, urdf, arguments, RUN_S).states
    last = stamp_s(states[-1])
    speeds = [np.abs(state.velocity).max() for state in states if stamp_s(state) >= last - 1.0]
    positions = np.array(states[-1].position)
    lower, upper = robot.position_limits
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, robot.configuration(positions))
    reached = np.linalg.norm(data.oMf[tip].translation - target)
    step = largest_step(states, SETTLING_S, RUN_S)
    print(f'{name}: rest {max(speeds):.4f} rad/s, largest step {step:.2f} N m, {reached:.3f} m')
    assert max(speeds) < REST_SPEED
    assert ((positions >= lower) & (positions <= upper)).all()
    assert reached < 1.2
    assert step <= CHATTER_SHARE * robot.effort_limits.max()


#: The user's G1 file: COM and posture without targets (held where they start), pelvis upright.
G1_CONTROLLER = {
    'contacts': list(G1_SOLES),
    'contact_types': ['surface'] * len(G1_SOLES),
    'task_names': ['com', 'pelvis', 'posture'],
    'tasks': {
        'com': {'type': 'com', 'kp': 100.0},
        'pelvis': {'type': 'frame_orientation', 'frame': 'pelvis', 'priority': 1, 'kp': 100.0,
                   'target': [0.0, 0.0, 0.0, 1.0]},
        'posture': {'type': 'joint_posture', 'priority': 2, 'kp': 10.0},
    },
}  # fmt: skip
G1_RUN_S, LANDING_S, DROP_M = 3.0, 0.1, 1e-3


def dropped_base_pose(urdf) -> list[float]:
    """The base pose DROP_M above the ground at G1_STANDING, as wbc_sim's MuJoCo places it."""
    simulation = simulation_of(urdf, True, ground_plane=True)
    simulation.reset(np.array(G1_STANDING))
    simulation.place_on_ground(DROP_M)
    return [float(x) for x in simulation.base_pose()]


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_the_g1_stands_after_a_1_mm_drop_with_joint_limits_on(distro, real_prefix, tmp_path):
    urdf = robots_directory() / G1_URDF
    base = dropped_base_pose(urdf)
    sim = {'lockstep': True, 'lockstep_subscribers': 3, 'control_period': PERIOD_S,
           'initial_positions': list(G1_STANDING), 'initial_base_pose': base}  # fmt: skip
    arguments = [
        f'controller_params:={parameters_file(tmp_path / "controller.yaml", G1_CONTROLLER)}',
        f'sim_params:={parameters_file(tmp_path / "sim.yaml", sim)}',
        'floating_base:=true',
    ]
    run = run_sim(distro, real_prefix, urdf, arguments, G1_RUN_S)
    step = largest_step(run.states, LANDING_S, G1_RUN_S)
    states, odometry = run.states, run.odometry
    assert odometry, 'wbc_sim published no odom'
    heights = [message.pose.pose.position.z for message in odometry]
    speed = float(np.abs(states[-1].velocity).max())
    orientation = odometry[-1].pose.pose.orientation
    tilt = tilt_deg(orientation.x, orientation.y)
    print(
        f'G1: base {base[2]:.4f} -> {heights[-1]:.4f} m, tilt {tilt:.3f} deg, '
        f'{speed:.4f} rad/s, largest step after the landing {step:.2f} N m'
    )
    assert abs(heights[-1] - base[2]) < 2e-3
    assert tilt < 0.5
    assert speed < 0.05
    assert step <= 0.02 * RobotModel.from_urdf_path(urdf, True).effort_limits.max()
