"""`command_joints` in any order, and a subset of the joints, through the real `wbc_controller`.

Two controller processes (one commanding all nine Panda joints in a shuffled order, one only
the seven arm joints, last first) each answer one joint state over DDS. Each published command
must be the computed torque τ = M (K_p e − K_d v) + h of a posture task, from Pinocchio's CRBA
and RNEA directly, read off in the order the parameter lists.
"""

import time

import numpy as np
import pinocchio as pin
import pytest
from robots import robot
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.model.example_robots import example_robot_urdf

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
JOINTS = list(robot('panda').joint_names)
KP, KD = 25.0, 10.0
ORDERS = {
    'shuffled': [JOINTS[i] for i in (4, 0, 8, 2, 6, 1, 7, 3, 5)],
    'arm_reversed': JOINTS[6::-1],
}
#: Wall-clock upper bound for a controller process to come up and answer on a loaded machine.
ANSWER_TIMEOUT_S = 120.0


def computed_torque(positions: np.ndarray, velocities: np.ndarray) -> np.ndarray:
    """τ = M (K_p (q* − q) − K_d v) + h in model order, from Pinocchio directly."""
    panda = robot('panda')
    model, data = panda.model, panda.model.createData()
    q = panda.configuration(positions)
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    bias = pin.rnea(model, data, q, velocities, np.zeros(model.nv))
    return mass @ (KP * (READY - positions) - KD * velocities) + bias


@pytest.fixture(scope='module')
def answers() -> dict[str, np.ndarray]:
    """Each controller's first task torque for one joint state near the ready posture."""
    rng = np.random.default_rng(17)
    positions = READY + 0.1 * rng.uniform(-1.0, 1.0, 9)
    positions[7:] = np.clip(positions[7:], 0.0, 0.04)
    velocities = 0.2 * rng.standard_normal(9)
    message = JointState(name=JOINTS, position=positions.tolist(), velocity=velocities.tolist())
    probe = RosProbe('command_joint_order_probe')
    received: dict[str, list] = {name: [] for name in ORDERS}
    publishers, processes = {}, {}
    try:
        for name, order in ORDERS.items():
            parameters = {
                'urdf_path': str(example_robot_urdf('panda')[0]),
                'command_joints': order,
                'soft_start_time': 0.0,  # the first task torque, not a ramp from zero
                'joint_limits': False,  # the computed torque, whatever the joints' speeds
                'task_names': ['posture'],
                'tasks': {
                    'posture': {
                        'type': 'joint_posture',
                        'kp': KP,
                        'kd': KD,
                        'target': READY.tolist(),
                    }
                },
            }
            args = ['-r', f'__ns:=/{name}']
            processes[name] = NodeProcess(
                'wbc_controller', parameters, f'/{name}/wbc_controller', args
            ).__enter__()
            probe.node.create_subscription(
                Float64MultiArray,
                f'/{name}/effort_controller/commands',
                lambda msg, name=name: received[name].append(np.array(msg.data)),
                10,
            )
            publishers[name] = probe.publisher(JointState, f'/{name}/joint_states')

        def answered() -> bool:
            # A task torque, not the zero safe command sent before any joint state.
            return all(any(np.abs(c).max() > 1e-9 for c in received[n]) for n in ORDERS)

        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not answered():
            # Volatile QoS: a state sent before the subscription matched is lost, so resend.
            for publisher in publishers.values():
                publisher.publish(message)
            probe.spin_until(answered, 0.5)
            dead = {n: p.output() for n, p in processes.items() if not p.alive()}
            assert not dead, f'a controller exited: {dead}'
            assert time.monotonic() < deadline, (
                f'waited {ANSWER_TIMEOUT_S:.0f} s for a task torque from every controller; '
                f'heard {[n for n in ORDERS if received[n]]}:\n'
                + '\n'.join(p.output()[-2000:] for p in processes.values())
            )
    finally:
        for process in processes.values():
            process.stop()
        probe.close()
    torques = {n: next(c for c in received[n] if np.abs(c).max() > 1e-9) for n in ORDERS}
    return {'expected': computed_torque(positions, velocities), **torques}


@pytest.mark.parametrize('name', list(ORDERS))
def test_commands_follow_the_command_joints_order(answers, name):
    order = ORDERS[name]
    expected = answers['expected'][[JOINTS.index(joint) for joint in order]]
    assert answers[name].shape == (len(order),)
    np.testing.assert_allclose(answers[name], expected, rtol=1e-9, atol=1e-9)
