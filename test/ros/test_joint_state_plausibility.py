"""The controller and the diagnostics sidecar judge a joint state alike, over real DDS.

Both decode `joint_states` with the plausibility rules of one shared schema
(`joint_state_input`): a speed above `velocity_factor` (5) times the URDF limit is rejected and
counted by both, a speed below it is used by both. The state below runs one joint at 3.5 times
its limit, above the factor the sidecar once used on its own (2).
"""

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest
from ros_support import CONFIG, NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray

from wbc_control.config.schema import load_schema
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel

NAMESPACE = '/plausible'
#: Start-up of two nodes on a loaded machine (wall clock: it bounds the wait only).
STARTUP_S = 180.0
#: Upper bound of a wait for a running node's answer (wall clock, loaded machine).
ANSWER_S = 60.0
FAST_JOINT = 3  # panda_joint4


@pytest.fixture(scope='module')
def panda() -> RobotModel:
    return RobotModel.from_urdf_path(example_robot_urdf('panda')[0])


def state(robot: RobotModel, speed_factor: float) -> JointState:
    """Ready positions, small speeds that differ per joint, one joint at `speed_factor` x limit."""
    limits = np.asarray(robot.model.velocityLimit)[robot.indices.v]
    velocities = np.linspace(-0.2, 0.3, robot.n_actuated) * limits
    velocities[FAST_JOINT] = speed_factor * limits[FAST_JOINT]
    lower, upper = robot.position_limits
    message = JointState()
    message.name = list(robot.joint_names)
    message.position = (lower + np.linspace(0.3, 0.6, robot.n_actuated) * (upper - lower)).tolist()
    message.velocity = velocities.tolist()
    return message


class Statuses:
    """The latest /diagnostics values of each status, by status name."""

    def __init__(self, probe: RosProbe) -> None:
        self.latest: dict[str, dict[str, str]] = {}
        probe.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_array, 50)

    def _on_array(self, message: DiagnosticArray) -> None:
        for status in message.status:
            self.latest[status.name] = {item.key: item.value for item in status.values}

    def count(self, name: str, key: str) -> int:
        """The counter `key` of status `name` (0 before any)."""
        return int(self.latest.get(name, {}).get(key, 0))


def test_both_nodes_reject_above_the_factor_and_accept_below_it(panda, probe):
    factor = load_schema('wbc_controller')['velocity_factor'].default
    assert factor == load_schema('wbc_diagnostics')['velocity_factor'].default == 5.0
    urdf = f'urdf_path:={example_robot_urdf("panda")[0]}'
    common = ['-r', f'__ns:={NAMESPACE}', '-p', urdf]
    controller_args = ['--params-file', str(CONFIG / 'panda_controller.yaml'), *common]
    controller_args += ['-p', 'diagnostics_rate:=10.0']
    sidecar_args = [*common, '-p', 'publish_rate:=10.0']
    commands = probe.subscribe(Float64MultiArray, f'{NAMESPACE}/effort_controller/commands', 50)
    ratios = probe.subscribe(Float64, f'{NAMESPACE}/wbc_diagnostics/diagonal_ratio', 50)
    statuses = Statuses(probe)
    states = probe.publisher(JointState, f'{NAMESPACE}/joint_states')
    with (
        NodeProcess('wbc_controller', extra_args=controller_args) as controller,
        NodeProcess('wbc_diagnostics', extra_args=sidecar_args) as sidecar,
    ):
        both_up = probe.spin_until(lambda: states.get_subscription_count() >= 2, STARTUP_S)
        assert both_up, controller.output() + sidecar.output()
        too_fast = state(panda, 1.1 * factor)
        key = 'velocity_limit'

        def both_rejected() -> bool:
            states.publish(too_fast)
            controller_count = statuses.count(
                'wbc_controller: inputs', f'rejected.joint_states.{key}'
            )
            sidecar_count = statuses.count(
                'wbc_diagnostics: inertia conditioning', f'rejected_samples.{key}'
            )
            return controller_count > 0 and sidecar_count > 0

        assert probe.spin_until(both_rejected, ANSWER_S), controller.output() + sidecar.output()
        assert not ratios, 'the sidecar used a state above the factor'
        assert all(np.count_nonzero(message.data) == 0 for message in commands), (
            'the controller answered a state above the factor'
        )

        plausible = state(panda, 0.7 * factor)  # 3.5 x the limit: between 2 and 5

        def both_accepted() -> bool:
            states.publish(plausible)
            answered = any(np.count_nonzero(message.data) for message in commands)
            return answered and bool(ratios)

        assert probe.spin_until(both_accepted, ANSWER_S), controller.output() + sidecar.output()
        assert controller.alive() and sidecar.alive()
