"""Robots we ship no configuration for, through the node's loop on MuJoCo (lock-step, 2 s).

The loop is built from parameters as `wbc_controller` builds it (`parse_controller_settings`,
`parse_tasks`, `parse_contacts`, `build_loop`, default settings: the joint-limit level on), with
generic tasks a user would write for an example-robot-data robot: for an arm the last body
frame 5 cm up over a posture; for a quadruped the base held level where it starts over the
SRDF's standing posture, on point feet (the body frames named *foot*); for the Unitree G1
humanoid the centre of mass over its soles and the pelvis upright over a posture, dropped from
1 mm onto the ground. The simulator is built from the same URDF (`build_mujoco_robot`; several
of these URDFs carry inertia tensors MuJoCo refuses, which it replaces) and the base is lowered
until its feet touch the ground. B1-Z1's gripper frame shares its name with a joint, which
Pinocchio refuses by name.
"""

from pathlib import Path
import subprocess

from dev_scripts import run_dev_script
from edge_runs import (
    CHATTER_SHARE,
    RATE_LIMIT,
    REST_SPEED,
    last_second_speed,
    late_steps,
    lockstep,
)
import numpy as np
import pytest
from robots import G1_SOLES, G1_STANDING, G1_URDF, body_frames, core_loop, tilt_deg
from unconfigured_runs import (
    ARMS,
    MORE_ARMS,
    QUADRUPEDS,
    TICKS,
    Reach,
    Robot,
    build,
    reach,
)

from wbc_control.control.constraints.gravity_holding import HOLDING_SHARE
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

pytestmark = pytest.mark.slow


def check_commands(commands: np.ndarray, effort_limits: np.ndarray, step_share: float) -> None:
    """Finite, within the effort limits, and no step above `step_share` of the largest limit."""
    assert np.isfinite(commands).all()
    assert (np.abs(commands) <= effort_limits + 1e-9).all()
    step = np.abs(np.diff(commands, axis=0)).max()
    assert step <= step_share * effort_limits.max(), f'a command stepped {step:.2f} N m'


@pytest.mark.parametrize('name', ARMS)
def test_an_arm_moves_its_last_frame_5_cm_up(name: str) -> None:
    robot, simulation, positions = build(ARMS[name], floating_base=False)
    tip = body_frames(robot)[-1]
    state = RobotState(robot)
    state.update(robot.configuration(positions), np.zeros(robot.nv))
    target = state.frame_placement(robot.frame_id(tip.name)).translation + [0.0, 0.0, 0.05]
    tasks = {
        'tip': {'type': 'frame_position', 'frame': tip.name, 'kp': 100.0, 'target': list(target)},
        'posture': {'type': 'joint_posture', 'priority': 1, 'kp': 25.0, 'target': list(positions)},
    }
    loop = core_loop(robot, {'task_names': ['tip', 'posture'], 'tasks': tasks})
    commands = lockstep(simulation, loop, TICKS)
    state.update(robot.configuration(simulation.joint_positions()), np.zeros(robot.nv))
    error = np.linalg.norm(state.frame_placement(robot.frame_id(tip.name)).translation - target)
    assert error < 1e-3, f'{tip.name} {error * 1e3:.2f} mm from its target after 2 s'
    check_commands(commands, robot.effort_limits, 0.05)


class StillMoving(AssertionError):
    """An arm not at rest over the last second (what `STILL_MOVING`'s runs are expected to do)."""


#: Runs of the rest test that do not come to rest, with why (docs/safety.md); they still reach
#: inside their limits without a command step (`check_reach` holds: a failure there fails).
#: None: the UR10 with the rate limit (3 times its 330 N m a second) rests because a command
#: the limit holds softens the weak directions (`rate_hold`); without that it cycles through
#: its stretched elbow at 1.7 rad/s.
STILL_MOVING: dict[str, str] = {}


def reach_cases(still_moving: dict | None = None) -> list:
    """Each arm without and with the rate limit; `still_moving`'s ids expected `StillMoving`."""
    cases = []
    for rate_limit, rate_id in ((0.0, 'no_rate_limit'), (RATE_LIMIT, 'rate_limit')):
        for name in ARMS:
            case = f'{name}-{rate_id}'
            reason = (still_moving or {}).get(case)
            marks = [pytest.mark.xfail(raises=StillMoving, reason=reason, strict=True)]
            cases.append(pytest.param(name, rate_limit, id=case, marks=marks if reason else ()))
    return cases


def check_reach(robot: RobotModel, outcome: Reach) -> None:
    """Inside its limits, no command step after 0.5 s, and nearer the target than it started."""
    assert max(outcome.beyond) <= 0.0, f'a joint {max(outcome.beyond):.4f} past its limit'
    limits = robot.effort_limits
    late = late_steps(outcome.commands).max(axis=1)
    steps = late > CHATTER_SHARE * limits.max()
    assert not steps.any(), f'{steps.sum()} command steps, the largest {late.max():.2f} N m'
    assert (np.abs(outcome.commands) <= limits + 1e-9).all()
    assert outcome.reached < 1.2 - 0.05, f'{outcome.reached:.3f} m away: it did not reach out'


def check_rest_and_reach(robot: RobotModel, outcome: Reach) -> None:
    """`check_reach`, and at rest over the last second (else `StillMoving`)."""
    check_reach(robot, outcome)
    speed = last_second_speed(outcome.speeds)
    if not speed < REST_SPEED:
        raise StillMoving(f'still moving at {speed:.4f} rad/s over the last second')


@pytest.mark.parametrize(('name', 'rate_limit'), reach_cases(STILL_MOVING))
def test_an_arm_reaching_1_2_m_beyond_its_reach_comes_to_rest_inside_its_limits(
    name: str, rate_limit: float
) -> None:
    robot, simulation, positions = build(ARMS[name], floating_base=False)
    outcome = reach(robot, simulation, positions, rate_limit, 'frame_position')
    check_rest_and_reach(robot, outcome)


#: Arms towards other sides, no rate limit: world axes from the last frame. The xArm7 (the
#: case that stepped most, braking from its velocity limits into a singularity; backwards its
#: posture level alternated tick by tick along a wrist bound) and the Z1 (shoulder and elbow at
#: their walls: its posture level held at the vertex of two nearly parallel joint bounds, whose
#: side turned over with the state): the bounds the point sits on yield below the first level
#: (`stage_rows.stage_inequalities`). The UR10 backwards (its posture level held to a joint
#: bound it had little grip on stepped the shoulder's torque by 17.1 N m at 0.73 s): a joint
#: bound is soft in a level's stage below `stage_qp.JOINT_DEGENERATE` of grip.
OTHER_DIRECTIONS = [
    pytest.param('xarm7', (0.0, 0.0, 1.0), id='xarm7-up'),
    pytest.param('xarm7', (0.0, 1.0, 0.0), id='xarm7-left'),
    pytest.param('xarm7', (1.0, 1.0, 1.0), id='xarm7-diagonal'),
    pytest.param('xarm7', (-1.0, 0.0, 0.0), id='xarm7-back'),
    pytest.param('z1', (0.0, 0.0, -1.0), id='z1-down'),
    pytest.param('z1', (0.0, 1.0, 0.0), id='z1-left'),
    pytest.param('z1', (0.0, -1.0, 0.0), id='z1-right'),
    pytest.param('z1', (-1.0, 0.0, 0.0), id='z1-back'),
    pytest.param('ur10', (-1.0, 0.0, 0.0), id='ur10-back'),
]


@pytest.mark.parametrize(('name', 'direction'), OTHER_DIRECTIONS)
def test_an_arm_reaching_1_2_m_beyond_its_reach_in_other_directions_comes_to_rest(
    name: str, direction: tuple[float, float, float]
) -> None:
    robot, simulation, positions = build(ARMS[name], floating_base=False)
    outcome = reach(robot, simulation, positions, 0.0, 'frame_position', np.array(direction))
    check_rest_and_reach(robot, outcome)


#: Talos's left arm alone: its shoulder's effort limit (22.32 N m) is below the gravity torque
#: of the arm held out (23.3 N m at 1 rad); reaching out of reach it rests where the joints hold
#: the arm with `HOLDING_SHARE` of their limits (`gravity_holding`), not swinging at the limit.
HOLDING_DIRECTIONS = [
    pytest.param(None, id='out'),
    pytest.param((1.0, 1.0, 1.0), id='diagonal'),
    pytest.param((0.0, 1.0, 0.0), id='left'),
]


@pytest.mark.parametrize('direction', HOLDING_DIRECTIONS)
def test_an_arm_too_weak_to_hold_itself_out_rests_where_its_joints_hold_it(direction) -> None:
    robot, simulation, positions = build(MORE_ARMS['talos_left_arm'], floating_base=False)
    way = None if direction is None else np.array(direction)
    outcome = reach(robot, simulation, positions, 0.0, 'frame_position', way)
    check_rest_and_reach(robot, outcome)
    state = RobotState(robot)
    state.update(robot.configuration(simulation.joint_positions()), np.zeros(robot.nv))
    gravity = np.abs(state.gravity[robot.indices.v])
    limits = robot.effort_limits
    # At the wall, up to 3 % of the limit past it (a joint bound the point sits on yields a
    # little to the posture below).
    assert (gravity <= (HOLDING_SHARE + 0.03) * limits).all(), gravity / limits
    assert (gravity / limits).max() > 0.5 * HOLDING_SHARE  # it did raise its arm


@pytest.mark.parametrize('rate_limit', [0.0, 1000.0])
def test_an_arm_whose_shoulder_sits_on_its_bound_comes_to_rest_reaching_in_front(
    rate_limit: float,
) -> None:
    """Talos's left arm, 1.2 m in front: its shoulder (arm_left_1) stops on its lower bound.

    Without the shoulder the hand's rows have a singular value of 10⁻⁴ against 0.57: the
    hand's level could reach on only by turning the wrist, which its residual hardly sees. With
    the tie-break of the directions a level leaves aimed at no motion, it did, and the wrist
    oscillated at 17 Hz (0.20 rad/s over the last second); aimed at the motion the posture
    asks for (`level_kernel.level_problem`), the arm rests.
    """
    robot, simulation, positions = build(MORE_ARMS['talos_left_arm'], floating_base=False)
    front = np.array((1.0, 0.0, 0.0))
    outcome = reach(robot, simulation, positions, rate_limit, 'frame_position', front)
    check_rest_and_reach(robot, outcome)


@pytest.mark.parametrize(('name', 'rate_limit'), reach_cases())
def test_an_arm_reaching_for_a_pose_1_2_m_beyond_its_reach_does_not_step_its_command(
    name: str, rate_limit: float
) -> None:
    """Not asserted: rest. A pose leaves a six-joint arm no freedom; measured in safety.md."""
    robot, simulation, positions = build(ARMS[name], floating_base=False)
    check_reach(robot, reach(robot, simulation, positions, rate_limit, 'frame_pose'))


@pytest.mark.parametrize('name', QUADRUPEDS)
def test_a_quadruped_stands_on_its_point_feet(name: str) -> None:
    robot, simulation, positions = build(QUADRUPEDS[name], floating_base=True)
    parameters = standing(robot, positions)
    start = simulation.base_pose()
    commands = lockstep(simulation, core_loop(robot, parameters), TICKS)
    end = simulation.base_pose()
    assert abs(end[2] - start[2]) < 0.01, f'base height {start[2]:.4f} -> {end[2]:.4f} m'
    tilt = tilt_deg(end[3], end[4])
    assert tilt < 2.0, f'base tilted {tilt:.2f} deg'
    check_commands(commands, robot.effort_limits, 0.1)


G1 = Robot(G1_URDF, start=G1_STANDING)


@pytest.mark.parametrize(('clearance_m', 'landing_step'), [(1e-3, 0.05), (3e-3, 0.5)])
def test_a_humanoid_stands_with_joint_limits_on_after_a_drop(
    clearance_m: float, landing_step: float
) -> None:
    """The G1 lands on its soles (surface contacts) with the joint-limit level on and stands.

    Landing, the contact rows bring the soles' velocity to rest (their Baumgarte damping,
    `contacts.contact_acceleration`) within the joints' viability bounds: from 1 mm the command
    steps by at most 5 % of the largest effort limit; from 3 mm it saturates for a few ticks
    and steps by up to half of it. Without the damping the 3 mm drop went unstable.
    """
    robot, simulation, positions = build(G1, floating_base=True, clearance_m=clearance_m)
    state = RobotState(robot)
    state.update(robot.configuration(positions, simulation.base_pose()), np.zeros(robot.nv))
    middle = sum(state.frame_placement(robot.frame_id(sole)).translation for sole in G1_SOLES) / 2
    parameters = {
        'floating_base': True,
        'joint_limits': True,
        'contacts': list(G1_SOLES),
        'contact_types': ['surface'] * 2,
        'task_names': ['com', 'pelvis', 'posture'],
        'tasks': {
            'com': {'type': 'com', 'kp': 100.0, 'target': [*middle[:2], float(state.com[2])]},
            'pelvis': {
                'type': 'frame_orientation', 'frame': 'pelvis', 'priority': 1, 'kp': 100.0,
                'target': [0.0, 0.0, 0.0, 1.0],
            },
            'posture': {
                'type': 'joint_posture', 'priority': 2, 'kp': 10.0, 'target': list(positions),
            },
        },
    }  # fmt: skip
    start = simulation.base_pose()
    commands = lockstep(simulation, core_loop(robot, parameters), TICKS)
    end = simulation.base_pose()
    assert abs(end[2] - start[2]) < 2e-3, f'base height {start[2]:.4f} -> {end[2]:.4f} m'
    tilt = tilt_deg(end[3], end[4])
    assert tilt < 0.5, f'base tilted {tilt:.2f} deg'
    assert np.abs(simulation.joint_velocities()).max() < 0.05
    check_commands(commands, robot.effort_limits, landing_step)
    # The landing is over within 0.1 s: then no step above 2 % of the largest limit.
    check_commands(commands[50:], robot.effort_limits, 0.02)


def test_a_legged_manipulator_reaches_with_its_arm_while_standing() -> None:
    """Unitree B1 with a Z1 arm: base level on four feet, the gripper 5 cm forward and up.

    The gripper's frame, `gripperStator`, names a link and the fixed joint attaching it; the
    controller takes the link's frame (Pinocchio refuses the bare name).
    """
    entry = Robot(
        'b1_description/urdf/b1-z1.urdf',
        'b1_description/srdf/b1-z1.srdf',
        None,
        'standing_with_arm_home',
    )
    robot, simulation, positions = build(entry, floating_base=True)
    state = RobotState(robot)
    state.update(robot.configuration(positions, simulation.base_pose()), np.zeros(robot.nv))
    gripper = robot.frame_id('gripperStator')
    target = state.frame_placement(gripper).translation + [0.05, 0.0, 0.05]
    parameters = standing(robot, positions, posture_priority=2)
    parameters['task_names'].insert(2, 'gripper')
    parameters['tasks']['gripper'] = {
        'type': 'frame_position', 'frame': 'gripperStator', 'priority': 1, 'kp': 100.0,
        'target': list(target),
    }  # fmt: skip
    start = simulation.base_pose()
    commands = lockstep(simulation, core_loop(robot, parameters), TICKS)
    end = simulation.base_pose()
    state.update(robot.configuration(simulation.joint_positions(), end), np.zeros(robot.nv))
    error = np.linalg.norm(state.frame_placement(gripper).translation - target)
    assert error < 1e-3, f'gripper {error * 1e3:.2f} mm from its target'
    assert abs(end[2] - start[2]) < 0.01
    check_commands(commands, robot.effort_limits, 0.1)


def standing(robot: RobotModel, positions: np.ndarray, posture_priority: int = 1) -> dict:
    """Parameters standing `robot` on its four point feet (the body frames named *foot*).

    The base held where it starts and level at priority 0, the posture `positions` below.
    """
    feet = [frame.name for frame in body_frames(robot) if 'foot' in frame.name.lower()]
    assert len(feet) == 4, feet
    base = next(f.name for f in body_frames(robot) if f.parentJoint == 1)
    return {
        'floating_base': True,
        'contacts': feet,
        'contact_types': ['point'] * 4,
        'task_names': ['base', 'level', 'posture'],
        'tasks': {
            'base': {'type': 'frame_position', 'frame': base, 'kp': 100.0},
            'level': {
                'type': 'frame_orientation', 'frame': base, 'kp': 100.0,
                'target': [0.0, 0.0, 0.0, 1.0],
            },
            'posture': {
                'type': 'joint_posture', 'priority': posture_priority, 'kp': 10.0,
                'target': list(positions),
            },
        },
    }  # fmt: skip


def test_these_urdfs_are_example_robot_datas() -> None:
    """The table above names files the installed example-robot-data has."""
    for entry in (*ARMS.values(), *MORE_ARMS.values(), *QUADRUPEDS.values()):
        for relative in filter(None, (entry.urdf, entry.srdf)):
            assert Path(robots_directory() / relative).is_file(), relative


def test_the_reach_script_runs_each_direction_with_the_settings_given() -> None:
    """`dev/unconfigured_reach.py`: a line per run, then the count; a misspelt setting refused."""
    arguments = ('--arm', 'z1', '--directions', 'up', 'back', '--seconds', '0.6')
    lines = run_dev_script(
        'unconfigured_reach.py', *arguments, '--set', 'singular_value_threshold=0.05', timeout=300
    ).splitlines()
    runs, count = lines[:-1], lines[-1]
    assert [line.split(' rate limit')[0] for line in runs] == ['z1 up', 'z1 back']
    assert all(' rad/s over the last second, ' in line for line in runs), lines
    assert count.endswith(' of 2 runs at rest without a step'), count  # 0.6 s: not at rest
    with pytest.raises(subprocess.CalledProcessError) as refused:
        misspelt = ('--set', 'singular_threshold=0.05')
        run_dev_script('unconfigured_reach.py', *arguments, *misspelt, timeout=300)
    assert 'singular_threshold' in refused.value.stderr
    drawn = ('--arm', 'z1', '--starts', '2', '--seed', '3', '--seconds', '0.6')
    first, second = (run_dev_script('unconfigured_reach.py', *drawn, timeout=300) for _ in '12')
    assert first == second, (first, second)  # the seed gives the starts and the directions
    starts = first.splitlines()
    assert len(starts) == 3 and starts[0] != starts[1], starts
    assert starts[-1].endswith(' of 2 runs at rest without a step'), starts
