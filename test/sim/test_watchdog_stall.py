"""A stalled controller does not step a lock-stepped simulator with its safe command.

The controller process is stopped (SIGSTOP) for longer than its wall-clock watchdog limit
(1 s under sim time), while the lock-stepped simulator waits for the answer to its last state.
When the controller resumes, the state is queued behind the watchdog's late check: that check
defers the wall criterion once (`Watchdog`), the state is answered with the task torque, and
no state shortly after a stall shows the zero safe command applied.

A command lost in transit (the middleware's repair of a lost sample waits for its next
heartbeat) is a different matter: the simulator waits, and the watchdog's safe command comes
a whole wall timeout after the stall, as it should. Only a safe command applied within
`STALL_EFFECT_S` of the stall's end, well inside that timeout, is the stall's doing.
"""

import os
import signal
import time

import numpy as np
from ros_support import NodeProcess, RosProbe, stamp_s
from sensor_msgs.msg import JointState

from wbc_control.model.example_robots import example_robot_urdf

READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
ARM = [f'panda_joint{i}' for i in range(1, 8)]
#: Longer than the watchdog's wall-clock limit under sim time, max(joint_state_timeout, 1 s).
STALL_S = 2.0
#: Which of the watchdog's late check and the queued state runs first after a stall is up to
#: the executor: several stalls, so that the order that exposes a wrong expiry comes up.
STALLS = 4
#: A safe command the stall caused goes out at the first checks after it (50 ms apart); one
#: for a silence after it, a whole wall timeout (1 s) later.
STALL_EFFECT_S = 0.6
PROBE_DEPTH = 10_000
#: Wall-clock upper bounds only; the loop waits on simulated time.
START_TIMEOUT_S = 120.0
RUN_TIMEOUT_S = 300.0


def stall(node: NodeProcess) -> float:
    """Stop the node's process for `STALL_S` s of wall time; the wall time it went on."""
    os.kill(node.process.pid, signal.SIGSTOP)
    try:
        time.sleep(STALL_S)  # the stall itself is wall time: the stimulus, not a wait
    finally:
        os.kill(node.process.pid, signal.SIGCONT)
    return time.monotonic()


def test_a_controller_stalled_past_the_wall_timeout_answers_its_queued_state():
    urdf = str(example_robot_urdf('panda')[0])
    sim = NodeProcess(
        'wbc_sim',
        {
            'urdf_path': urdf,
            'lockstep': True,
            'real_time_factor': 0.0,  # as fast as the controller answers
            'control_period': 0.004,
            'initial_positions': READY,
            'command_joints': ARM,
        },
    )
    posture = {'type': 'joint_posture', 'kp': 25.0, 'kd': 10.0, 'target': READY}
    controller = NodeProcess(
        'wbc_controller',
        {
            'urdf_path': urdf,
            'command_joints': ARM,
            'use_sim_time': True,
            'task_names': ['posture'],
            'tasks': {'posture': posture},
            'soft_start_time': 0.0,
            'stale_command': 'zero',  # what a wrongly expired watchdog would apply: no effort
        },
    )
    probe = RosProbe('watchdog_stall_probe')
    states: list[JointState] = []
    heard_s: list[float] = []  # wall time each state was heard (never earlier than sent)

    def on_state(message: JointState) -> None:
        states.append(message)
        heard_s.append(time.monotonic())

    probe.node.create_subscription(JointState, 'joint_states', on_state, PROBE_DEPTH)
    resumed_s: list[float] = []
    with sim, controller:
        reached = probe.spin_until(lambda: states and stamp_s(states[-1]) >= 0.5, START_TIMEOUT_S)
        assert reached, f'no loop within {START_TIMEOUT_S:.0f} s:\n{controller.output()[-2000:]}'
        watched = len(states)  # the start may answer a state with a safe command: not judged
        for _ in range(STALLS):
            resumed_s.append(stall(controller))
            after = stamp_s(states[-1]) + 0.2
            resumed = probe.spin_until(lambda t=after: stamp_s(states[-1]) >= t, RUN_TIMEOUT_S)
            assert resumed, f'the loop stopped after a stall:\n{controller.output()[-2000:]}'
    applied = np.array([message.effort for message in states[watched:]])
    zero = watched + np.flatnonzero(~applied.any(axis=1))
    after_stall = [i for i in zero if any(0 <= heard_s[i] - t < STALL_EFFECT_S for t in resumed_s)]
    assert not after_stall, (
        f'{len(after_stall)} simulator steps with zero torque (the safe command) right after a '
        f'stall, first at sim time {stamp_s(states[after_stall[0]]):.3f} s'
        f'\n{controller.output()[-3000:]}'
    )
