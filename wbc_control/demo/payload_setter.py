"""`wbc_demo --payload KG`: tell the controller of the simulator's payload halfway through.

The simulator carries the payload from the start (`payload.*` on `wbc_sim`); the controller
does not know it, so the tracked frame sags. At `set_at_s` of sim time the monitor sets the
same `payload.*` on `wbc_controller` in one atomic request (what `ros2 param set` does one
parameter at a time), and the controller ramps it into its model over `soft_start_time`.
"""

from rcl_interfaces.srv import SetParametersAtomically
from rclpy.node import Node
from rclpy.parameter import Parameter

#: Where the demo's payload sits in the tracked frame (m): a held object's centre below the
#: fingertips and off their axis, so that it pulls the frame down and twists it.
DEMO_PAYLOAD_CENTER_OF_MASS = (0.012, -0.018, 0.045)


def payload_parameters(frame: str, mass: float) -> dict[str, object]:
    """The `payload.*` values of `mass` kg on `frame` (flat names, as `ros2 param set`)."""
    return {
        'payload.frame': frame,
        'payload.mass': float(mass),
        'payload.center_of_mass': list(DEMO_PAYLOAD_CENTER_OF_MASS),
    }


def nested(parameters: dict[str, object]) -> dict[str, dict]:
    """Flat `group.name` values as the nested mapping of a `ros__parameters` file."""
    tree: dict[str, dict] = {}
    for name, value in parameters.items():
        group, key = name.split('.', 1)
        tree.setdefault(group, {})[key] = value
    return tree


class PayloadSetter:
    """Sets `parameters` on `/wbc_controller` once the sim time reaches `set_at_s`.

    Attributes:
        sent_s: sim time the request went out (None before).
        answered_s: sim time the controller's answer arrived (None before).
        refusal: the controller's reason when it refused the values ('' otherwise).
    """

    def __init__(self, node: Node, parameters: dict[str, object], set_at_s: float) -> None:
        self._client = node.create_client(
            SetParametersAtomically, '/wbc_controller/set_parameters_atomically'
        )
        self._request = SetParametersAtomically.Request(
            parameters=[
                Parameter(name, value=value).to_parameter_msg()
                for name, value in parameters.items()
            ]
        )
        self.set_at_s = set_at_s
        self.sent_s: float | None = None
        self.answered_s: float | None = None
        self.refusal = ''
        self._future = None

    def update(self, sim_time_s: float) -> None:
        """Send the request when due (and the service is matched); note the answer's time."""
        if self._future is None:
            if sim_time_s >= self.set_at_s and self._client.service_is_ready():
                self._future = self._client.call_async(self._request)
                self.sent_s = sim_time_s
        elif self.answered_s is None and self._future.done():
            self.answered_s = sim_time_s
            result = self._future.result()
            if result is None or not result.result.successful:
                self.refusal = 'no answer' if result is None else result.result.reason
