"""A payload over real DDS: the Panda holds its hand with 2 kg the controller learns of live.

wbc_sim carries the payload from the start (`payload.*`, attached in MuJoCo); wbc_controller
does not know it, so the hand sags. Setting the same `payload.*` on the controller (one atomic
parameter request, as `ros2 param set` would do one by one) ramps it into the controller's
model over `soft_start_time`, and the hand comes back to its target.
"""

import numpy as np
from panda_loop import CONTROL_PERIOD_S, DOWN_XYZW, HAND, PandaLoop, posture_task, ready_hand
import pytest
from ros_support import RosProbe

PAYLOAD = {
    'payload.frame': HAND,
    'payload.mass': 2.0,
    'payload.center_of_mass': [0.012, -0.018, 0.045],  # in panda_hand_tcp (m)
}
#: libfranka's kMaxTorqueRate (N m/s): a command changing faster stops a real Panda.
FRANKA_RATE_LIMIT = 1000.0
SOFT_START_S = 0.5
#: The sim time the payload is set at: the sag has settled by then.
SET_AT_S = 3.0
#: A command this much away from the previous one (N m) is the first of the ramp: at rest
#: on its sagged equilibrium the command changes by less than 1e-5 N m a tick.
DEPARTURE_NM = 1e-3


@pytest.fixture
def probe():
    probe = RosProbe('payload_loop_probe')
    yield probe
    probe.close()


def hand_tasks() -> dict:
    target = ready_hand().translation.tolist()
    return {
        'hand': {'type': 'frame_position', 'frame': HAND, 'kp': 400.0, 'target': target},
        'hand_orientation': {
            'type': 'frame_orientation',
            'frame': HAND,
            'kp': 400.0,
            'target': DOWN_XYZW,
        },
        'posture': posture_task(),
    }


def test_a_live_payload_brings_the_sagging_hand_back_within_a_second(probe):
    target = ready_hand().translation
    # No torque rate limit in the controller: the commands' steps are the law's own, checked
    # below against the limit a real Panda enforces.
    controller = {'soft_start_time': SOFT_START_S, 'torque_rate_limit': 0.0}
    sim = {key: value for key, value in PAYLOAD.items()}
    with PandaLoop(probe, hand_tasks(), controller, sim) as loop:
        loop.run_until(SET_AT_S)
        asked_s = loop.times[-1]
        loop.set_controller_parameters(PAYLOAD)
        # The lock-stepped simulation keeps running while the request is answered (up to
        # seconds of sim time on a loaded machine): 2 s more from the answer.
        loop.run_until(loop.times[-1] + 2.0)
    times = np.asarray(loop.times)
    errors = np.linalg.norm(loop.positions_between(0.0, times[-1]) - target, axis=1)
    sagged = errors[(times >= SET_AT_S - 0.5) & (times <= asked_s)]
    print(f'sag with 2 kg the controller does not know: {sagged.mean() * 1e3:.2f} mm')
    assert sagged.min() > 5e-3, 'the unknown payload should make the hand sag'
    assert np.ptp(sagged) < 1e-4, 'the sag should have settled before the change'
    # The first command of the ramp: the one that leaves the sagged equilibrium.
    efforts = np.asarray(loop.efforts)
    steps = np.abs(np.diff(efforts, axis=0)).max(axis=1)  # steps[i]: state i to i + 1
    after = np.flatnonzero((times[1:] > asked_s) & (steps > DEPARTURE_NM))
    assert after.size, 'the controller never changed its command'
    applied_s = times[after[0]]  # the state whose answer was the first ramped command
    print(f'payload applied {applied_s - asked_s:.3f} s of sim time after it was asked')
    settled = times >= applied_s + 1.0
    print(
        f'error 1 s after the change: {errors[settled].max() * 1e3:.4f} mm; '
        f'largest step {steps[times[1:] > asked_s].max():.3f} N m per '
        f'{CONTROL_PERIOD_S} s tick'
    )
    assert settled.any() and errors[settled].max() < 1e-3
    # No step faster than a real Panda takes, from the request to the end.
    rate = steps[times[1:] > asked_s] / CONTROL_PERIOD_S
    assert rate.max() < FRANKA_RATE_LIMIT, f'{rate.max():.0f} N m/s'
