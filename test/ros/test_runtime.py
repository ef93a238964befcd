"""The robot-model parameters every node shares, including the URDF from a topic."""

from diagnostic_msgs.msg import DiagnosticArray
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from ros_support import NodeProcess, named_probe
from std_msgs.msg import String

from wbc_control.model.example_robots import example_robot_urdf

LATCHED = QoSProfile(
    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
)


@pytest.fixture
def probe(request):
    """A new probe node for each test."""
    yield from named_probe(request)


def test_urdf_from_a_latched_topic_like_robot_state_publisher(probe):
    publisher = probe.publisher(String, 'test_robot_description', LATCHED)
    publisher.publish(String(data=example_robot_urdf('panda')[0].read_text()))
    statuses = probe.subscribe(DiagnosticArray, '/diagnostics')
    parameters = {'robot_description_topic': '/test_robot_description'}
    with NodeProcess('wbc_diagnostics', parameters) as node:
        found = probe.spin_until(
            lambda: any(s.hardware_id == 'panda' for a in statuses for s in a.status), 30.0
        )
        assert found, node.output()


def test_a_silent_description_topic_is_a_clear_startup_error():
    parameters = {'robot_description_topic': '/nobody_publishes', 'robot_description_timeout': 1.0}
    with NodeProcess('wbc_controller', parameters) as node:
        code = node.wait(30.0)
    assert code == 1
    assert "no URDF on '/nobody_publishes'" in node.output()
    assert 'Traceback' not in node.output()


def test_no_model_source_names_both_parameters():
    with NodeProcess('wbc_sim', {'timestep': 0.001}) as node:
        code = node.wait(30.0)
    assert code == 1
    assert 'robot_description' in node.output() and 'urdf_path' in node.output()
