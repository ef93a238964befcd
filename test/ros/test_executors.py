"""The nodes' executor: callbacks run under spin(), which ends when the context shuts down."""

import time

import pytest
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from wbc_control.ros import executors
from wbc_control.ros.executors import (
    EXECUTOR_VARIABLE,
    create_executor,
    executor_kind,
    executor_note,
)


@pytest.mark.parametrize('kind', ['events', 'single'])
def test_spin_runs_callbacks_and_ends_at_shutdown(monkeypatch, kind):
    monkeypatch.setenv(EXECUTOR_VARIABLE, kind)
    if kind == 'events' and executor_kind() != 'events':
        pytest.skip('this rclpy has no EventsExecutor')
    context = rclpy.Context()
    rclpy.init(context=context)  # the test run's own domain (conftest.py)
    received = []
    try:
        node = rclpy.create_node('executor_test', context=context)
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
        node.create_subscription(Float64MultiArray, 'numbers', received.append, qos)
        publisher = node.create_publisher(Float64MultiArray, 'numbers', qos)
        node.create_timer(0.01, lambda: publisher.publish(Float64MultiArray(data=[1.0])))
        executor = create_executor(context)
        executor.add_node(node)
        # Shut down from a callback, as rclpy's signal handler does between callbacks.
        node.create_timer(1.0, context.try_shutdown)
        started = time.monotonic()
        try:
            executor.spin()
        except ExternalShutdownException:
            pass
        elapsed = time.monotonic() - started
    finally:
        rclpy.try_shutdown(context=context)
    assert received, f'{kind}: no callback ran in 1 s of spin()'
    assert elapsed < 1.0 + 5 * executors.SPIN_WAKE_S + 2.0, f'{kind}: spin() ended after {elapsed}'


def test_the_environment_chooses_and_unknown_values_fall_back(monkeypatch):
    monkeypatch.setenv(EXECUTOR_VARIABLE, 'single')
    assert executor_kind() == 'single'
    monkeypatch.setenv(EXECUTOR_VARIABLE, 'nonsense')
    assert executor_kind() in executors.EXECUTORS
    monkeypatch.delenv(EXECUTOR_VARIABLE)
    expected = executors.DEFAULT_EXECUTOR if executors._events_executor() else 'single'
    assert executor_kind() == expected


def test_an_unknown_choice_is_named_in_a_warning(monkeypatch):
    monkeypatch.setenv(EXECUTOR_VARIABLE, 'event')
    assert "'event' is not one of events, single" in executor_note()
    monkeypatch.setenv(EXECUTOR_VARIABLE, 'single')
    assert executor_note() is None


def test_a_pinned_node_keeps_its_executor_and_says_what_it_ignored(monkeypatch):
    monkeypatch.setenv(EXECUTOR_VARIABLE, 'events')
    assert executor_kind('single') == 'single'
    assert "ignored: this node always spins 'single'" in executor_note('single')
    monkeypatch.setenv(EXECUTOR_VARIABLE, 'single')
    assert executor_note('single') is None
