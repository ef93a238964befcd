"""A payload changed at run time, ramped into the model so that the torque does not jump.

Picking up a 2 kg object and telling the controller at once would step g(q) by the object's
weight times its lever arm (about 10 N m on a Panda's shoulder): a torque step, which a rate
limit turns into a kick and a driver like Franka's refuses. The model's payload therefore moves
from the payload in force to the new one over `duration_s`, as a blend of the two in dynamic
parameters (:func:`wbc_control.model.payload.blend`), α = clamp((t − t₀) / duration, 0, 1) as in
:class:`~wbc_control.control.loop.soft_start.SoftStart`:

    π(t) = (1 − α) π_from + α π_to

so M(q), h and g(q), linear in π, move linearly from one model to the other. A change while a
ramp is under way starts a new ramp from the blend reached. The ramp starts at the first tick
after the change and applies at each tick before the state is updated.
"""

from wbc_control.control.loop.soft_start import SoftStart
from wbc_control.model.payload import NO_PAYLOAD, Payload, blend
from wbc_control.model.robot_model import RobotModel


class PayloadRamp:
    """The payload of `robot`'s model, and the ramp to a new one.

    Args:
        robot: the model the payload is added to (its inertias change).
        duration_s: ramp time (s); 0 switches at the next tick.
        payload: the payload in force from the start (applied now, without a ramp).
    """

    def __init__(
        self, robot: RobotModel, duration_s: float, payload: Payload = NO_PAYLOAD
    ) -> None:
        self.robot = robot
        self._ramp = SoftStart(duration_s)
        self.payload = payload  # the requested one (the target of a ramp under way)
        self._from = self._to = self._current = payload.dynamic_parameters(robot)
        self._ramping = self._pending = False
        robot.set_payload_parameters(self._to)

    @property
    def ramping(self) -> bool:
        """Whether a change is pending or being ramped in."""
        return self._ramping

    def request(self, payload: Payload) -> None:
        """Ramp to `payload` from the next tick (nothing happens if it is the one in force)."""
        if payload == self.payload:
            return
        self.payload = payload
        self._to = payload.dynamic_parameters(self.robot)
        self._ramp.restart()
        self._ramping = True
        self._pending = True

    def update(self, now_s: float) -> None:
        """Set the model's payload for the tick at node time `now_s` (before the state update)."""
        if not self._ramping:
            return
        if self._pending:  # the blend reached so far is where the new ramp starts
            self._from, self._pending = self._current, False
        alpha = self._ramp.fraction(now_s)
        self._current = blend(self._from, self._to, alpha)
        self.robot.set_payload_parameters(self._current)
        if alpha >= 1.0:
            self._from, self._current, self._ramping = self._to, self._to, False
