"""The task registry and what each task type knows about itself.

Targets from the state and from messages, and a new type added with one class and one registry
line.
"""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import numpy.testing as npt
import pytest
from robots import random_state, robot

from wbc_control.config.tasks import (
    build_entries,
    parse_target,
    parse_task,
    parse_tasks,
    task_fields,
    unknown_task_parameters,
)
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.exceptions import InvalidShape, InvalidTaskConfig, InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.tasks.joint_posture import merge_posture_target
from wbc_control.tasks.registry import TASK_TYPES
from wbc_control.tasks.task import PDGains, Task, TaskTerms, as_axis_vector

DOC = Path(__file__).resolve().parents[2] / 'docs' / 'adding_a_task_type.md'
READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]


def panda() -> RobotModel:
    return robot('panda')


# Targets ------------------------------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_a_measured_target_holds_every_task_where_the_robot_is(seed):
    state = random_state(panda(), seed)
    for kind in TASK_TYPES:
        values = {'type': kind, 'kp': 1.0}
        if 'frame' in task_fields(kind):
            values['frame'] = 'panda_link5'
        spec = parse_task(panda(), 'task', values)
        task = build_entries(panda(), [spec])[0].task
        target = task.target_from_state(state)
        npt.assert_array_equal(parse_target(panda(), kind, target), target)
        task.set_target(target)
        npt.assert_allclose(task.compute(state).error, 0.0, atol=1e-9)


def test_partial_posture_target_changes_only_the_named_joints():
    current = np.array(READY)
    target = merge_posture_target(
        panda(), current, ['unknown_joint', 'panda_joint2', 'panda_joint1'], [9.0, -0.5, 0.3]
    )
    expected = current.copy()
    expected[[0, 1]] = [0.3, -0.5]
    npt.assert_allclose(target, expected)
    npt.assert_allclose(current, READY)


@pytest.mark.parametrize(
    'current, names, positions, error, words',
    [
        (READY, ['panda_joint1'], [0.1, 0.2], InvalidShape, ['1 names but 2 positions']),
        (READY, ['panda_joint1'] * 2, [0.1, 0.2], InvalidShape, ['duplicate']),
        (READY, ['wheel'], [0.1], InvalidShape, ['no joint of the model']),
        (READY, ['panda_joint1'], [np.nan], InvalidValue, ['non-finite']),
        (READY, ['panda_joint4'], [1.0], InvalidValue, ['panda_joint4=1']),
        ([np.nan] * 9, ['panda_joint1'], [0.1], InvalidShape, ['panda_joint2', 'no target yet']),
    ],
)
def test_posture_target_message_errors(current, names, positions, error, words):
    with pytest.raises(error) as raised:
        merge_posture_target(panda(), np.array(current), names, positions)
    for word in words:
        assert word in str(raised.value)


# A new task type: one class and one registry line ------------------------------------------


def documented_task_type() -> type[Task]:
    """The task class of docs/adding_a_task_type.md, run as printed there."""
    text = DOC.read_text(encoding='utf-8')
    code = text.split('```python\n', 1)[1].split('```', 1)[0]
    names = {'Task': Task, 'PDGains': PDGains, 'TaskTerms': TaskTerms, 'np': np}
    names['as_axis_vector'] = as_axis_vector
    exec(code, names)  # noqa: S102 - the repository's own documentation
    return names['FrameHeightTask']


@pytest.fixture
def frame_height(monkeypatch):
    cls = documented_task_type()
    monkeypatch.setitem(TASK_TYPES, cls.TYPE, cls)


def test_a_registered_task_type_is_parsed_built_held_and_run(frame_height):
    lift = {'type': 'frame_height', 'frame': 'panda_hand', 'kp': 16, 'target': [0.6]}
    spec = parse_task(panda(), 'lift', lift)
    assert spec.options == {'frame': 'panda_hand'} and spec.kd is None
    npt.assert_allclose(spec.gains.kd, [8.0])
    assert unknown_task_parameters({'lift': 'frame_height'}, ['tasks.lift.frame']) == ()
    with pytest.raises(InvalidShape, match='tasks.lift.target: target of a frame_height task'):
        parse_task(panda(), 'lift', {**lift, 'target': [0.1, 0.2]})
    with pytest.raises(InvalidTaskConfig, match='takes no axis'):
        parse_task(panda(), 'lift', {**lift, 'axis': [0, 0, 1]})
    (entry,) = build_entries(panda(), [spec])
    state = random_state(panda(), 3)
    result = PrioritizedController(panda(), [entry]).compute(state)
    (report,) = result.tasks
    npt.assert_allclose(report.achieved_acceleration, report.desired_acceleration, atol=1e-8)
    held = build_entries(
        panda(), parse_tasks(panda(), ['lift'], {'lift': {**lift, 'target': None}})
    )
    assert held[0].task.target_pending
    npt.assert_allclose(
        held[0].task.set_target_from_state(state),
        state.frame_placement(panda().frame_id('panda_hand')).translation[2:],
    )
    assert not held[0].task.target_pending
    npt.assert_allclose(held[0].task.compute(state).error, 0.0, atol=1e-12)
    held[0].task.assign_target(held[0].task.target_from_message(panda(), [0.1, 0.2, 0.7]))
    npt.assert_allclose(held[0].task.height, [0.7])
