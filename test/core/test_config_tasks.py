"""Task parameters: parsing, every error, the shipped example, live updates (config/tasks.py)."""

import numpy as np
import numpy.testing as npt
from panda_example import (
    HAND,
    READY,
    example_controller,
    example_parameters,
    example_specs,
    panda,
    ready_state,
)
import pytest
from robots import robot

from wbc_control.config.settings import parse_controller_settings
from wbc_control.config.tasks import (
    build_entries,
    parse_task,
    parse_tasks,
    task_fields,
    unknown_task_parameters,
)
from wbc_control.exceptions import FrameNotFound, InvalidShape, InvalidTaskConfig, InvalidValue
from wbc_control.tasks.registry import TASK_TYPES

# Parsing ------------------------------------------------------------------------------------


def test_the_shipped_panda_example_parses_and_runs():
    specs = example_specs()
    hand, posture = specs['hand'], specs['posture']
    assert (hand.type, hand.options['frame'], hand.priority) == ('frame_pose', 'panda_hand', 0)
    npt.assert_allclose(hand.kp, [100, 100, 100, 60, 60, 60])
    assert hand.kd is None
    npt.assert_allclose(hand.gains.kd, 2 * np.sqrt(hand.kp))
    assert (posture.type, posture.priority) == ('joint_posture', 1)
    npt.assert_allclose(posture.kp, np.full(9, 25.0))
    npt.assert_allclose(posture.kd, np.full(9, 10.0))
    npt.assert_allclose(posture.target, READY)
    settings = parse_controller_settings(panda(), example_parameters())
    assert settings.command_joints == tuple(f'panda_joint{i}' for i in range(1, 8))
    npt.assert_array_equal(settings.command_index, np.arange(7))
    result = example_controller(specs).compute(ready_state())
    assert np.isfinite(result.torque).all()
    # The example's hand target is the hand's pose at the ready posture (to 1 mm).
    assert result.tasks[0].error_norm < 1e-3


@pytest.mark.parametrize('kind', TASK_TYPES)
def test_every_type_builds_with_scalar_gains_and_critical_damping(kind):
    values = {'type': kind, 'kp': 4.0}
    if 'frame' in task_fields(kind):
        values['frame'] = 'panda_hand'
    spec = parse_task(panda(), 'task', values)
    task = build_entries(panda(), [spec])[0].task
    npt.assert_allclose(task.gains.kp, 4.0)
    npt.assert_allclose(task.gains.kd, 4.0)
    assert spec.target is None and spec.weight == 1.0 and spec.priority == 0


def test_integer_values_from_yaml_are_accepted():
    spec = parse_task(
        panda(),
        'line',
        {
            'type': 'frame_position',
            'frame': 'panda_hand',
            'kp': [10, 20, 30],
            'kd': 3,
            'target': [0, 0, 1],
            'weight': 2,
            'priority': 3,
            'constraint': 'line',
            'axis': [0, 0, 2],
        },
    )
    npt.assert_allclose(spec.kp, [10, 20, 30])
    npt.assert_allclose(spec.kd, [3, 3, 3])
    npt.assert_allclose(spec.options['axis'], [0, 0, 2])
    assert (spec.weight, spec.priority, spec.options['constraint']) == (2.0, 3, 'line')
    assert build_entries(panda(), [spec])[0].task.dim == 2


@pytest.mark.parametrize(
    'values, error, words',
    [
        ({}, InvalidTaskConfig, ['tasks.t.type', 'required', 'frame_pose']),
        ({'type': 'pose'}, InvalidTaskConfig, ['tasks.t.type', "'pose'", ', '.join(TASK_TYPES)]),
        ({'type': 'frame_pose', 'kp': 1.0}, InvalidTaskConfig, ['tasks.t.frame', 'needs a frame']),
        ({**HAND, 'frame': 'hand'}, FrameNotFound, ['tasks.t.frame', "'hand'", 'panda_hand']),
        ({**HAND, 'frame': 3}, InvalidValue, ['tasks.t.frame', 'string']),
        (
            {**HAND, 'frame': 'panda_link0'},
            InvalidTaskConfig,
            ['tasks.t.frame', "'panda_link0' is fixed to the world"],
        ),
        ({'type': 'com', 'frame': 'panda_hand', 'kp': 1.0}, InvalidTaskConfig, ['takes no frame']),
        ({**HAND, 'axis': [0, 0, 1]}, InvalidTaskConfig, ['takes no axis']),
        ({**HAND, 'priority': -1}, InvalidValue, ['tasks.t.priority', '>= 0']),
        ({**HAND, 'priority': 1.0}, InvalidValue, ['tasks.t.priority', 'integer']),
        ({**HAND, 'priority': True}, InvalidValue, ['tasks.t.priority']),
        ({'type': 'com'}, InvalidValue, ['tasks.t.kp', 'required']),
        ({**HAND, 'kp': -1.0}, InvalidValue, ['tasks.t.kp', 'non-negative']),
        ({**HAND, 'kp': float('nan')}, InvalidValue, ['tasks.t.kp', 'non-finite']),
        ({**HAND, 'kp': [1.0, 2.0, 3.0]}, InvalidShape, ['tasks.t.kp', '6 values']),
        ({**HAND, 'kp': 'stiff'}, InvalidValue, ['tasks.t.kp', 'number']),
        ({**HAND, 'kp': True}, InvalidValue, ['tasks.t.kp', 'number']),
        ({**HAND, 'kd': -2.0}, InvalidValue, ['tasks.t.kd', 'non-negative']),
        ({**HAND, 'kd': [1.0] * 5}, InvalidShape, ['tasks.t.kd', '6 values']),
        ({**HAND, 'target': [0.0, 0.0, 0.5]}, InvalidShape, ['tasks.t.target', '7 values']),
        ({**HAND, 'target': [0, 0, 0.5, 0, 0, 0, 2.0]}, InvalidValue, ['tasks.t.target', 'unit']),
        ({**HAND, 'target': [0, 0, np.inf, 0, 0, 0, 1]}, InvalidValue, ['non-finite']),
        ({**HAND, 'weight': 0.0}, InvalidValue, ['tasks.t.weight', '> 0']),
        ({**HAND, 'weight': np.inf}, InvalidValue, ['tasks.t.weight']),
        ({**HAND, 'weight': [1.0, 2.0]}, InvalidValue, ['tasks.t.weight', 'one finite number']),
    ],
)
def test_task_errors_name_the_parameter_and_the_reason(values, error, words):
    with pytest.raises(error) as raised:
        parse_task(panda(), 't', values)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.parametrize(
    'constraint, axis, error, words',
    [
        ('circle', None, InvalidTaskConfig, ['tasks.p.constraint', 'point, line, plane']),
        ('line', None, InvalidTaskConfig, ['tasks.p.constraint', 'needs an axis']),
        ('plane', [0.0, 0.0, 0.0], InvalidValue, ['non-zero']),
        ('plane', [0.0, 1.0], InvalidShape, ['axis needs 3 values']),
        ('plane', 1.0, InvalidShape, ['axis needs 3 values']),
        ('point', [0.0, 0.0, 1.0], InvalidTaskConfig, ['only used with constraint line']),
    ],
)
def test_constraint_and_axis_errors(constraint, axis, error, words):
    values = {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 1.0}
    values |= {'constraint': constraint, 'axis': axis}
    with pytest.raises(error) as raised:
        parse_task(panda(), 'p', values)
    for word in words:
        assert word in str(raised.value)


def test_unknown_frame_lists_the_frames_of_the_model():
    with pytest.raises(FrameNotFound) as raised:
        parse_task(panda(), 'hand', {**HAND, 'frame': 'gripper'})
    assert raised.value.name == 'gripper'
    assert 'panda_hand' in raised.value.available
    assert str(raised.value).startswith('tasks.hand.frame: ')


def test_a_floating_base_frame_moves_with_the_base():
    """Only frames welded to the world are refused: Talos's base link moves with its base."""
    talos = robot('talos')
    spec = parse_task(
        talos, 'torso', {'type': 'frame_orientation', 'frame': 'base_link', 'kp': 1.0}
    )
    assert spec.options['frame'] == 'base_link'


def test_posture_target_outside_the_joint_limits_names_the_joint():
    target = list(READY)
    target[3] = 0.5  # panda_joint4 lies in [-3.07, -0.07]
    with pytest.raises(InvalidValue, match='panda_joint4=0.5'):
        parse_task(panda(), 'posture', {'type': 'joint_posture', 'kp': 1.0, 'target': target})


@pytest.mark.parametrize(
    'names, words',
    [
        ([], ['task_names', 'list the tasks']),
        ('hand', ['task_names', 'list the tasks']),
        (['hand', 'hand'], ['duplicate task names: hand']),
        (['hand/left'], ['not valid']),
        (['2hand'], ['not valid']),
    ],
)
def test_task_name_errors(names, words):
    with pytest.raises(InvalidTaskConfig) as raised:
        parse_tasks(panda(), names, {'hand': HAND})
    for word in words:
        assert word in str(raised.value)


def test_parameter_name_typos_are_errors_and_unlisted_tasks_are_reported():
    specs = {'hand': 'frame_pose'}
    ignored = unknown_task_parameters(
        specs, ['tasks.hand.kp', 'tasks.old.kp', 'task_names', 'tasks.hand.frame']
    )
    assert ignored == ('tasks.old.kp',)
    with pytest.raises(InvalidTaskConfig, match=r'tasks.hand.Kp: unknown field.*kp'):
        unknown_task_parameters(specs, ['tasks.hand.Kp'])
    with pytest.raises(InvalidTaskConfig, match='tasks.hand.axis'):
        unknown_task_parameters(specs, ['tasks.hand.axis'])
