"""Integral action over real DDS: joint friction the controller does not model, and its offset.

wbc_sim runs a copy of the Panda URDF whose arm joints have dry friction (`<dynamics
friction>`, kept with `urdf_joint_dynamics: true`, simulated as MuJoCo's frictionloss); the
controller's model has none. The hand is sent to a target 6 cm away: with K_i = 0 it stops
short, where the PD force no longer overcomes the friction; with K_i set, the integral term
takes it the rest of the way.
"""

from pathlib import Path
import xml.etree.ElementTree as ET

import numpy as np
from panda_loop import HAND, PandaLoop, posture_task, ready_hand
import pytest
from ros_support import RosProbe

from wbc_control.model.example_robots import example_robot_urdf

#: Dry friction of each arm joint (N m): of the order of a Panda's (Gaz et al. 2019).
FRICTION_NM = 0.5
STEP_M = np.array([0.0, 0.05, -0.035])
KP, KI = 200.0, 1000.0  # K_i < K_d K_p = 2 √K_p K_p: the linear loop is stable
END_S = 6.0
#: The steady offset is read over the last second.
STEADY_S = 1.0


@pytest.fixture
def probe():
    probe = RosProbe('integral_loop_probe')
    yield probe
    probe.close()


@pytest.fixture(scope='module')
def friction_urdf(tmp_path_factory) -> Path:
    """The Panda URDF with `friction` on the dynamics of its seven arm joints."""
    source = example_robot_urdf('panda')[0]
    root = ET.fromstring(source.read_text())
    for joint in root.iter('joint'):
        if joint.get('type') == 'revolute':
            dynamics = joint.find('dynamics')
            if dynamics is None:
                dynamics = ET.SubElement(joint, 'dynamics')
            dynamics.set('friction', str(FRICTION_NM))
    path = tmp_path_factory.mktemp('friction') / 'panda_friction.urdf'
    path.write_text(ET.tostring(root, encoding='unicode'))
    # Meshes are found relative to the URDF: the copy points at the originals.
    return path


def hold_step(probe: RosProbe, urdf: Path, ki: float) -> tuple[np.ndarray, np.ndarray]:
    """Sim times and the hand minus its target (m), after a step of the target, with `ki`."""
    target = ready_hand().translation + STEP_M
    tasks = {
        'hand': {
            'type': 'frame_position',
            'frame': HAND,
            'kp': KP,
            'ki': ki,
            'target': target.tolist(),
        },
        'posture': posture_task(),
    }
    sim = {'urdf_joint_dynamics': True}
    with PandaLoop(probe, tasks, {}, sim, str(urdf)) as loop:
        loop.run_until(END_S)
    times = np.asarray(loop.times)
    errors = loop.positions_between(0.0, times[-1]) - target
    return times, errors


def test_integral_action_removes_the_offset_friction_leaves(probe, friction_urdf):
    times, errors = hold_step(probe, friction_urdf, 0.0)
    offset = np.linalg.norm(errors[times >= END_S - STEADY_S], axis=1)
    times, errors = hold_step(probe, friction_urdf, KI)
    late = np.linalg.norm(errors[times >= END_S - STEADY_S], axis=1)
    direction = STEP_M / np.linalg.norm(STEP_M)
    overshoot = np.max(errors @ direction)  # past the target, along the step
    print(
        f'steady offset: {offset.mean() * 1e3:.2f} mm with ki = 0, at most '
        f'{late.max() * 1e3:.3f} mm with ki = {KI:g}; overshoot {overshoot * 1e3:.2f} mm'
    )
    # Friction leaves a measurable offset (0.7 mm on average: the posture below the hand is
    # Euclidean and does not hold the arm back), and the integral term takes most of it off.
    assert offset.min() > 0.3e-3
    assert late.max() < min(1e-3, 0.3 * offset.min())
    assert overshoot < 5e-3
