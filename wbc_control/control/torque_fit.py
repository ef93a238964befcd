"""A planned q̈ fitted to the torque range, on a fully actuated fixed base.

Acceleration bounds that keep the joints inside their limits hold only if the torque they need
is sent (Del Prete 2018, "Joint position and velocity bounds in discrete-time
acceleration/torque control of robot manipulators": bounds that ignore what the actuators can
give are not viable). The command is limited to the effort limits and, with a torque rate
limit, to the previous command ± rate · dt; a limiter that clips joint by joint changes,
through the coupling in M, every joint's acceleration, those at their bounds included (a joint
then runs past its velocity limit, and the next tick's bound asks for still more).

So on a fully actuated fixed base, whose torque τ = M q̈ + h is affine in q̈, a q̈ whose torque
leaves that range is replaced by the nearest q̈ (least squares, per joint acceleration) whose
torque is within it, the joints held at a bound weighed `HELD_WEIGHT` times as much as the
rest: a bounded least-squares problem in τ solved by an active set (`box_least_squares`, as in
Stark & Parker 1995, "Bounded-variable least-squares"), in one compiled call
(`joint_limit_kernel.fitted_acceleration`). With contacts the torque depends on the contact
forces too; there the controller lowers the task scale until the torque fits
(`torque_limits.task_scale`).
"""

import numpy as np

from wbc_control.control.joint_limit_kernel import fitted_acceleration
from wbc_control.model.robot_state import RobotState

#: How much more a joint held at its bound weighs than the others in `fit_torque`.
HELD_WEIGHT = 1e3
#: A fitted acceleration this far (rad/s²) past a bound holds the joint at it.
FIT_TOLERANCE = 1e-6


def fit_torque(
    state: RobotState,
    acceleration: np.ndarray,
    held: np.ndarray | None,
    torque_range: tuple[np.ndarray, np.ndarray],
    bounds: tuple[np.ndarray, np.ndarray],
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The q̈ `(nv,)` nearest `acceleration` whose torque M q̈ + h lies in `torque_range`.

    A fully actuated fixed base only (nv = n_act). Nearest in the joints' accelerations, the
    saturated joints `held` `(n_act,)` bool (None: none) and any joint the fit would drive out
    of its `bounds` (this state's (a⁻, a⁺)) weighed `HELD_WEIGHT` times as much, those at
    their bound (the module docstring). Written into `out` (C-ordered, may be `acceleration`
    itself) when given, else a new array.
    """
    held = np.zeros(len(acceleration), dtype=bool) if held is None else held
    out = np.empty(len(acceleration)) if out is None else out
    fitted_acceleration(
        state.inverse_mass_matrix,
        state.nonlinear_effects,
        acceleration,
        held,
        *bounds,
        *torque_range,
        (HELD_WEIGHT, FIT_TOLERANCE),
        out,
    )
    return out
