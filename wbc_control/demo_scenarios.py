"""Demo scenarios: robot, node parameters and the moving target, with no ROS dependency.

A scenario is everything `wbc_demo` needs to run the closed loop: the parameters of
`wbc_sim`, `wbc_controller` and `wbc_diagnostics`, and the target the tracked task follows.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

PANDA_READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
PANDA_READY_HAND = [0.307, 0.0, 0.487]  # panda_hand_tcp at PANDA_READY (m)
HAND_DOWN_XYZW = [1.0, 0.0, 0.0, 0.0]


@dataclass(frozen=True)
class Scenario:
    """One closed-loop demo.

    Attributes:
        robot: key of `wbc_control.example_robots.EXAMPLE_ROBOTS`.
        description: one line for the progress output and the summary.
        controller: `wbc_controller` parameters (without the robot model).
        sim: `wbc_sim` parameters (without the robot model).
        diagnostics: `wbc_diagnostics` parameters (without the robot model).
        tracked_task: name of the task whose target moves.
        tracked_frame: frame whose position the report measures against the target.
        target: sim time (s) -> target position of the tracked frame (world, m).
    """

    robot: str
    description: str
    controller: dict
    sim: dict
    diagnostics: dict
    tracked_task: str
    tracked_frame: str
    target: Callable[[float], np.ndarray] = field(repr=False)


def circle(start, radius: float, period_s: float, settle_s: float) -> Callable:
    """A target that holds `start` for `settle_s`, then circles below it in the y-z plane."""
    center = np.asarray(start, dtype=float) - np.array([0.0, 0.0, radius])

    def position(t: float) -> np.ndarray:
        phase = 2.0 * np.pi * max(t - settle_s, 0.0) / period_s
        return center + radius * np.array([0.0, np.sin(phase), np.cos(phase)])

    return position


def panda_tracking() -> Scenario:
    """Panda hand follows a 10 cm circle; orientation held; posture in the null space.

    The target topic carries positions only, so the tracking error has a lag term of about
    K_d v / K_p (here 80 · 0.079 / 1600 ≈ 4 mm) on top of the transient.
    """
    control_period = 0.002
    controller = {
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
            'posture': {
                'type': 'joint_posture',
                'priority': 1,
                'kp': 25.0,
                'target': PANDA_READY,
            },
        },
        'joint_state_timeout': 0.5,
    }
    sim = {
        'timestep': 0.001,
        'control_period': control_period,
        'lockstep': True,
        'initial_positions': PANDA_READY,
        'ground_plane': True,
    }
    diagnostics = {'exact_rate': 0.0, 'publish_rate': 2.0}
    return Scenario(
        robot='panda',
        description='Panda hand tracking a 10 cm circle in 8 s, posture in the null space',
        controller=controller,
        sim=sim,
        diagnostics=diagnostics,
        tracked_task='hand',
        tracked_frame='panda_hand_tcp',
        target=circle(PANDA_READY_HAND, 0.1, period_s=8.0, settle_s=1.0),
    )


SCENARIOS: dict[str, Callable[[], Scenario]] = {'panda': panda_tracking}
