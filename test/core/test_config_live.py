"""Live parameter changes: planned as a batch, applied whole or not at all (config/live.py)."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import numpy.testing as npt
from panda_example import (
    example_controller,
    example_specs,
    panda,
    ready_state,
)
import pytest

from wbc_control.config.live import (
    apply_live_update,
    apply_task_update,
    plan_live_update,
    plan_task_updates,
)
from wbc_control.config.settings import parse_controller_settings
from wbc_control.config.tasks import task_specs
from wbc_control.exceptions import InvalidShape, InvalidTaskConfig, InvalidValue

# Live updates -------------------------------------------------------------------------------


def test_a_valid_batch_changes_gains_target_and_weight_together():
    specs = example_specs()
    controller = example_controller(specs)
    new_target = [0.4, 0.1, 0.5, 1.0, 0.0, 0.0, 0.0]
    updates = plan_task_updates(
        panda(),
        specs,
        {
            'tasks.hand.kp': 50.0,
            'tasks.hand.target': new_target,
            'tasks.posture.kd': [2.0] * 9,
            'tasks.posture.weight': 3.0,
        },
    )
    assert {update.spec.name: update.fields for update in updates} == {
        'hand': {'kp', 'target'},
        'posture': {'kd', 'weight'},
    }
    for update in updates:
        apply_task_update(controller, update)
    hand = controller.task('hand')
    npt.assert_allclose(hand.gains.kp, 50.0)
    npt.assert_allclose(hand.gains.kd, 2 * np.sqrt(50.0))  # kd unset: stays critical
    npt.assert_allclose(hand.references[0].position, new_target[:3])
    npt.assert_allclose(controller.task('posture').gains.kd, 2.0)
    npt.assert_allclose(controller.task('posture').gains.kp, 25.0)
    assert controller.weight('posture') == 3.0


def test_kd_can_return_to_critical_damping():
    specs = example_specs()
    (update,) = plan_task_updates(panda(), specs, {'tasks.posture.kd': None})
    assert update.spec.kd is None
    npt.assert_allclose(update.spec.gains.kd, 10.0)


@pytest.mark.parametrize(
    'changes, error, words',
    [
        ({'tasks.hand.kp': -1.0}, InvalidValue, ['tasks.hand.kp', 'non-negative']),
        ({'tasks.hand.kp': None}, InvalidValue, ['tasks.hand.kp', 'required']),
        ({'tasks.hand.kd': [1.0, 2.0]}, InvalidShape, ['tasks.hand.kd', '6 values']),
        ({'tasks.hand.target': [0.0] * 7}, InvalidValue, ['tasks.hand.target', 'unit']),
        ({'tasks.hand.target': None}, InvalidValue, ['cannot be unset']),
        ({'tasks.posture.target': [0.0] * 8}, InvalidShape, ['tasks.posture.target', '9']),
        ({'tasks.posture.weight': -1.0}, InvalidValue, ['tasks.posture.weight']),
        ({'tasks.posture.weight': None}, InvalidValue, ['cannot be unset']),
        ({'tasks.hand.frame': 'panda_link7'}, InvalidTaskConfig, ['read-only at runtime']),
        ({'tasks.hand.priority': 2}, InvalidTaskConfig, ['read-only at runtime']),
        ({'tasks.hand.type': 'com'}, InvalidTaskConfig, ['read-only at runtime']),
        ({'tasks.posture.frame': 'panda_hand'}, InvalidTaskConfig, ['has no frame']),
        ({'tasks.elbow.kp': 1.0}, InvalidTaskConfig, ["no task named 'elbow'", 'hand, posture']),
        ({'tasks.hand': 1.0}, InvalidTaskConfig, ['tasks.<name>.<field>']),
    ],
)
def test_invalid_live_changes_are_refused_with_a_reason(changes, error, words):
    with pytest.raises(error) as raised:
        plan_task_updates(panda(), example_specs(), changes)
    for word in words:
        assert word in str(raised.value)


gain_values = st.one_of(
    st.floats(0.0, 1e3),
    st.floats(-1e3, -1e-3),
    st.just(float('nan')),
    st.lists(st.floats(0.0, 1e3), min_size=1, max_size=8),
)


@settings(max_examples=60, deadline=None)
@given(hand_kp=gain_values, posture_kd=gain_values, hand_weight=st.floats(-1.0, 5.0))
def test_a_batch_is_applied_whole_or_not_at_all(hand_kp, posture_kd, hand_weight):
    specs = example_specs()
    controller = example_controller(specs)
    before = ready_state()
    torque_before = controller.compute(before).torque
    changes = {
        'tasks.hand.kp': hand_kp,
        'tasks.posture.kd': posture_kd,
        'tasks.hand.weight': hand_weight,
    }
    try:
        updates = plan_task_updates(panda(), specs, changes)
    except (InvalidValue, InvalidShape):
        # Refused: nothing may have changed, neither the specs nor the controller.
        npt.assert_allclose(specs['hand'].kp, [100, 100, 100, 60, 60, 60])
        npt.assert_array_equal(controller.compute(before).torque, torque_before)
        return
    for update in updates:
        apply_task_update(controller, update)
    hand, posture = controller.task('hand'), controller.task('posture')
    npt.assert_allclose(hand.gains.kp, np.broadcast_to(hand_kp, 6))
    npt.assert_allclose(hand.gains.kd, 2 * np.sqrt(hand.gains.kp))
    npt.assert_allclose(posture.gains.kd, np.broadcast_to(posture_kd, 9))
    assert controller.weight('hand') == hand_weight


def test_the_specs_in_force_are_read_back_from_the_controller():
    specs = example_specs()
    controller = example_controller(specs)
    back = task_specs(controller)
    for name, spec in specs.items():
        assert (back[name].type, back[name].priority, back[name].weight) == (
            spec.type,
            spec.priority,
            spec.weight,
        )
        npt.assert_allclose(back[name].kp, spec.kp)
        assert (back[name].kd is None) == (spec.kd is None)
    (update,) = plan_task_updates(panda(), back, {'tasks.hand.kp': 50.0})
    apply_task_update(controller, update)
    npt.assert_allclose(controller.task('hand').gains.kd, 2 * np.sqrt(50.0))
    assert task_specs(controller)['hand'].kd is None


def test_a_live_batch_of_settings_and_tasks_is_planned_then_applied():
    specs = example_specs()
    controller = example_controller(specs)
    settings = parse_controller_settings(panda(), {})
    changes = {
        'stale_command': 'gravity',
        'singular_value_threshold': 0.02,
        'tasks.hand.weight': 2,
    }
    planned = plan_live_update(panda(), controller, settings, changes)
    assert controller.singular_value_threshold == settings.singular_value_threshold
    apply_live_update(controller, planned)
    assert planned.settings.stale_command == 'gravity'
    assert controller.singular_value_threshold == 0.02 and controller.weight('hand') == 2.0
    with pytest.raises(InvalidTaskConfig, match='joint_state_timeout: read-only'):
        plan_live_update(panda(), controller, settings, {'joint_state_timeout': 1.0})
