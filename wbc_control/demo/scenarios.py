"""Demo scenarios: robot, node parameters and the moving target, with no ROS dependency.

A scenario is everything `wbc_demo` needs to run the closed loop: the parameters of
`wbc_sim`, `wbc_controller` and `wbc_diagnostics`, and the target the tracked task follows.
The parameters are the shipped files' (config/*.yaml) with what the scenario changes.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from wbc_control.config.shipped import shipped_parameters
from wbc_control.demo.legged import LeggedScenario, Move

PANDA_READY_HAND = [0.307, 0.0, 0.487]  # panda_hand_tcp at the shipped posture target (m)
HAND_DOWN_XYZW = [1.0, 0.0, 0.0, 0.0]
#: The demo's simulator: lock-stepped, as fast as the controller answers.
LOCKSTEP_AS_FAST_AS_ANSWERED = {'lockstep': True, 'real_time_factor': 0.0}
#: A status twice a second; κ₂ estimated at every state, never solved exactly.
DEMO_DIAGNOSTICS = {'exact_rate': 0.0, 'publish_rate': 2.0}
#: Every joint in the command (the fingers too), whose torques the report plots.
EVERY_JOINT_COMMANDED = {'command_joints': []}


@dataclass(frozen=True)
class Scenario:
    """One closed-loop demo.

    Attributes:
        robot: key of `wbc_control.model.example_robots.EXAMPLE_ROBOTS`.
        description: one line for the progress output and the summary.
        controller: `wbc_controller` parameters (without the robot model).
        sim: `wbc_sim` parameters (without the robot model).
        diagnostics: `wbc_diagnostics` parameters (without the robot model).
        tracked_task: name of the task whose target moves.
        tracked_frame: frame whose position the report measures against the target.
        target: sim time (s) -> target position of the tracked frame (world, m).
        motion: sim time (s) -> position, velocity and acceleration of the target; if given,
            the demo sends it as one trajectory on `~/<tracked_task>/trajectory` (velocities
            and accelerations fed forward) instead of streaming `target` set-points.
    """

    robot: str
    description: str
    controller: dict
    sim: dict
    diagnostics: dict
    tracked_task: str
    tracked_frame: str
    target: Callable[[float], np.ndarray] = field(repr=False)
    motion: Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = field(
        default=None, repr=False
    )


def circle(start, radius: float, period_s: float, settle_s: float) -> Callable:
    """A target that holds `start` for `settle_s`, then circles below it in the y-z plane."""
    motion = circle_motion(start, radius, period_s, settle_s)
    return lambda t: motion(t)[0]


#: Seconds over which the circle's speed rises from rest (a smoothstep of the angular rate).
CIRCLE_RAMP_S = 1.0


def _circle_phase(t: float, rate: float) -> tuple[float, float, float]:
    """Phase, rate and acceleration of a circle that starts at rest at t = 0.

    The angular rate rises as rate·(3s² − 2s³), s = t / CIRCLE_RAMP_S, so the path's velocity
    and acceleration are continuous: a trajectory that starts at full speed asks for an
    acceleration step the arm cannot follow without a torque spike.
    """
    if t <= 0.0:
        return 0.0, 0.0, 0.0
    if t >= CIRCLE_RAMP_S:
        return rate * (t - 0.5 * CIRCLE_RAMP_S), rate, 0.0
    s = t / CIRCLE_RAMP_S
    phase = rate * CIRCLE_RAMP_S * (s**3 - 0.5 * s**4)
    return phase, rate * (3.0 * s**2 - 2.0 * s**3), rate * (6.0 * s - 6.0 * s**2) / CIRCLE_RAMP_S


def circle_motion(start, radius: float, period_s: float, settle_s: float) -> Callable:
    """:func:`circle` with its velocity and acceleration: t -> (position, velocity, accel)."""
    center = np.asarray(start, dtype=float) - np.array([0.0, 0.0, radius])
    rate = 2.0 * np.pi / period_s

    def motion(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        phase, phase_rate, phase_acceleration = _circle_phase(t - settle_s, rate)
        radial = np.array([0.0, np.sin(phase), np.cos(phase)])
        tangent = np.array([0.0, radial[2], -radial[1]])
        position = center + radius * radial
        velocity = radius * phase_rate * tangent
        acceleration = radius * (phase_acceleration * tangent - phase_rate**2 * radial)
        return position, velocity, acceleration

    return motion


def panda_tracking() -> Scenario:
    """Panda hand follows a 10 cm circle; orientation held; posture in the null space.

    The circle goes to the controller as one trajectory (trajectory_msgs/
    MultiDOFJointTrajectory with velocities and accelerations), so the PD law is fed forward
    and the hand does not lag: with set-points alone the lag was about K_d v / K_p (here
    80 · 0.079 / 1600 ≈ 4 mm).
    """
    controller = shipped_parameters(
        'panda_controller.yaml',
        'wbc_controller',
        {
            'task_names': ['hand', 'hand_orientation', 'posture'],
            'tasks': {
                'hand': {
                    'type': 'frame_position',
                    'frame': 'panda_hand_tcp',
                    'priority': 0,
                    'kp': 1600.0,
                    'kd': 80.0,
                    'target': PANDA_READY_HAND,
                },
                'hand_orientation': {
                    'type': 'frame_orientation',
                    'frame': 'panda_hand_tcp',
                    'priority': 0,
                    'kp': 400.0,
                    'target': HAND_DOWN_XYZW,
                },
            },
            # Long enough that a lock-stepped loop starved of CPU is not taken for a stale one
            # (the watchdog's safe command would step the simulator); if it were, hold the arm.
            'joint_state_timeout': 5.0,
            'stale_command': 'gravity',
            **EVERY_JOINT_COMMANDED,
        },
    )
    sim = shipped_parameters(
        'panda_sim.yaml', 'wbc_sim', {**LOCKSTEP_AS_FAST_AS_ANSWERED, **EVERY_JOINT_COMMANDED}
    )
    diagnostics = shipped_parameters('diagnostics.yaml', 'wbc_diagnostics', DEMO_DIAGNOSTICS)
    return Scenario(
        robot='panda',
        description='Panda hand tracking a 10 cm circle in 8 s, posture in the null space',
        controller=controller,
        sim=sim,
        diagnostics=diagnostics,
        tracked_task='hand',
        tracked_frame='panda_hand_tcp',
        target=circle(PANDA_READY_HAND, 0.1, period_s=8.0, settle_s=1.0),
        motion=circle_motion(PANDA_READY_HAND, 0.1, period_s=8.0, settle_s=1.0),
    )


def talos_reaching() -> Scenario:
    """Talos stands on both feet and reaches with its left hand (config/talos_*.yaml).

    Contacts (the soles) on top, then the COM over the middle of the feet, then the torso
    upright and the hand, then the posture.
    """
    # The joint-limit level stays on, as the demo has always run it.
    controller = shipped_parameters('talos_controller.yaml', 'wbc_controller')
    sim = shipped_parameters('talos_sim.yaml', 'wbc_sim', LOCKSTEP_AS_FAST_AS_ANSWERED)
    target = np.array(controller['tasks']['hand']['target'])  # 19 cm from where it starts
    return Scenario(
        robot='talos',
        description='Talos on both feet reaches 19 cm with its left hand, COM over its feet',
        controller=controller,
        sim=sim,
        diagnostics=shipped_parameters('diagnostics.yaml', 'wbc_diagnostics', DEMO_DIAGNOSTICS),
        tracked_task='hand',
        tracked_frame='gripper_left_base_link',
        target=lambda t: target,
    )


SCENARIOS: dict[str, Callable[[], Scenario]] = {'panda': panda_tracking, 'talos': talos_reaching}


# Legged: lift a foot ------------------------------------------------------------------------

#: Lift height (m), hold time in the air (s).
FOOT_LIFT_M, FOOT_HOLD_S = 0.05, 2.0


def solo12_lift() -> LeggedScenario:
    """Solo12 shifts its COM over FR, HL, HR, lifts FL 5 cm for 2 s and puts it down.

    The COM moves 5.3 cm towards the middle of the three-feet triangle (5 cm inside its
    nearest edge), FL's load moves to the others over 0.3 s, the foot rises, waits and lands
    where it started, its contact closes over 0.3 s, and the COM moves back. Effort limits are
    Solo12's actuators (2.7 N m: 0.025 N m/A, 12 A, gear 9), not the URDF's 1000 N m.
    """
    controller = shipped_parameters(
        'solo12_controller.yaml',
        'wbc_controller',
        {
            # Long enough that a loop starved of CPU is not taken for a stale one (the
            # watchdog's command would step the lock-stepped simulator); if it were, hold it up.
            'joint_state_timeout': 5.0,
            'stale_command': 'gravity',
            'effort_limits': 2.7,
            'contact_transition_time': 0.3,
            'task_names': ['com', 'base_orientation', 'foot', 'posture'],
            'tasks': {
                'com': {'type': 'com', 'priority': 0, 'kp': 100.0},
                'foot': {
                    'type': 'frame_position',
                    'frame': 'FL_FOOT',
                    'priority': 1,
                    'kp': 900.0,
                },
            },
        },
    )
    sim = shipped_parameters(
        'solo12_sim.yaml',
        'wbc_sim',
        {**LOCKSTEP_AS_FAST_AS_ANSWERED, 'lockstep_resend_period': 5.0},
    )
    feet = controller['contacts']  # FL first
    shift = (-0.04, -0.035, 0.0)
    lift = (0.0, 0.0, FOOT_LIFT_M)
    return LeggedScenario(
        robot='solo12',
        description='Solo12 shifts its COM over three feet, lifts FL 5 cm for 2 s, puts it down',
        controller=controller,
        sim=sim,
        duration_s=7.0,
        com_moves=(Move(0.6, 1.0, shift), Move(5.6, 1.0, tuple(-v for v in shift))),
        foot_task='foot',
        foot_moves=(Move(2.1, 0.5, lift), Move(2.6 + FOOT_HOLD_S, 0.5, (0.0, 0.0, -FOOT_LIFT_M))),
        contacts=((1.7, tuple(feet[1:])), (5.2, tuple(feet))),
        base_frame='base_link',
    )


def talos_lift() -> LeggedScenario:
    """Talos shifts its weight onto the right foot, lifts the left 5 cm for 2 s, puts it down.

    The pelvis moves 8.6 cm sideways over the right sole (a frame_position task on base_link:
    a COM task at the top would also swing the arms sideways, the least-kinetic-energy way to
    move the COM, into the joint limit of arm_left_2), the left sole's load moves to the right
    one over 0.3 s, the left foot (a frame_pose task: it stays flat) rises, waits and lands
    where it started, its contact closes and the pelvis moves back over 2 s. The torso is kept
    level with the feet's tasks, the pelvis below them, with the posture.
    """
    controller = shipped_parameters(
        'talos_controller.yaml',
        'wbc_controller',
        {
            # As Solo12's: a command lost right after discovery (the controller's first answer
            # published before its writer matched the monitor's reader) is replaced by the
            # watchdog's gravity command after 5 s instead of stalling the lock-stepped loop. A
            # controller starved of CPU that long is no stale state: the watchdog's first check
            # after a stall waits for the state queued behind it.
            'joint_state_timeout': 5.0,
            'stale_command': 'gravity',
            'contact_transition_time': 0.3,
            'task_names': ['pelvis', 'torso', 'left_foot', 'pelvis_orientation', 'posture'],
            'tasks': {
                'pelvis': {
                    'type': 'frame_position',
                    'frame': 'base_link',
                    'priority': 0,
                    'kp': 100.0,
                },
                'left_foot': {
                    'type': 'frame_pose',
                    'frame': 'left_sole_link',
                    'priority': 1,
                    'kp': 400.0,
                },
                # Level, with the posture, below the feet: at priority 1 it pitched the
                # re-closed left sole and Talos slid; without it the pelvis pitched on one foot.
                # Weight 0.1 beside the posture (one scale for its 32 joints, set by the light
                # ones): at 1 it swung the right arm to its shoulder's effort limit for 0.4 s.
                'pelvis_orientation': {
                    'type': 'frame_orientation',
                    'frame': 'base_link',
                    'priority': 2,
                    'kp': 40.0,
                    'target': [0.0, 0.0, 0.0, 1.0],
                    'weight': 0.1,
                },
            },
        },
    )
    sim = shipped_parameters(
        'talos_sim.yaml',
        'wbc_sim',
        {**LOCKSTEP_AS_FAST_AS_ANSWERED, 'lockstep_resend_period': 5.0},
    )
    shift = (-0.01, -0.085, 0.0)  # the pelvis from (0, 0) to over the right sole
    lift = (0.0, 0.0, FOOT_LIFT_M)
    return LeggedScenario(
        robot='talos',
        description='Talos shifts its weight onto the right foot, lifts the left 5 cm for 2 s',
        controller=controller,
        sim=sim,
        duration_s=8.5,
        # Back over 2 s: over 1.5 s the re-closed left sole pushed sideways at |f_t|/f_n 0.76.
        com_moves=(Move(0.6, 1.5, shift), Move(6.3, 2.0, tuple(-v for v in shift))),
        foot_task='left_foot',
        foot_moves=(Move(2.6, 0.6, lift), Move(3.2 + FOOT_HOLD_S, 0.6, (0.0, 0.0, -FOOT_LIFT_M))),
        contacts=((2.2, ('right_sole_link',)), (5.9, ('left_sole_link', 'right_sole_link'))),
        base_frame='base_link',
        shift_task='pelvis',
    )


LEGGED_SCENARIOS: dict[str, Callable[[], LeggedScenario]] = {
    'solo12_lift': solo12_lift,
    'talos_lift': talos_lift,
}
