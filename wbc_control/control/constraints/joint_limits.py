"""Joint position and velocity limits as bounds on the joint accelerations, in viability form.

Each actuated joint gets bounds a⁻ ≤ q̈ᵢ ≤ a⁺ that the hierarchical least squares keeps as hard
constraints (`wbc_control.control.hierarchy.cascade`). They are built so that they can
always be met and never ask the motors for more than they can give:

- walls q⁻_w, q⁺_w stand `margin` inside the URDF limits (a quarter of the range for a joint
  narrower than four margins);
- aᵦ, the braking the joint can get: the declared `max_joint_acceleration`, else
  β (τ̄ − |hᵢ|) / Mᵢᵢ with β = `BRAKING_SHARE` of what its effort limit τ̄ leaves after the
  bias torque h = C q̇ + g, from this tick's M(q) (never below `MIN_BRAKING_SHARE` τ̄ / Mᵢᵢ);
- the speed from which the joint can still stop at its wall braking with aᵦ is the viability
  bound of Del Prete (2018, "Joint position and velocity bounds in discrete-time
  acceleration/torque control of robot manipulators", Sec. III), v² ≤ 2 aᵦ d, d the distance
  to the wall. The ceiling on the joint's speed towards its upper wall is

      v⁺ = min(v̄, √(2 aᵦ d), (k/4) d)           (v⁺ = (k/4) d < 0 beyond the wall)

  with v̄ the URDF velocity limit; the linear term makes the last part of the approach
  critically damped, and beyond a wall the ceiling pulls the joint back in;
- the bound tracks the ceiling at the rate k (`response`, 1/s) and never asks for more braking
  than aᵦ:

      a⁺ = max(k (v⁺ − q̇) − c k (q̇ − v̄)₊, −aᵦ),   a⁻ = min(−k (v⁻ + q̇) + c k (−q̇ − v̄)₊, aᵦ),

  and a⁻ ≤ a⁺; (x)₊ = max(x, 0). The second term acts only on a joint faster than its URDF
  limit (c = `OVERSPEED_RESPONSE`): a wrist that spins at many times its limit after a fall
  is braked at up to aᵦ at once, where tracking at the rate k alone would let it travel
  several radians, through its wall and past its limit, before it slows down;
- with a torque rate limit ṙ (N m/s, `torque_rate_limit`) the braking ramps up at the jerk
  j = γ ṙ / Mᵢᵢ (γ = `JERK_SHARE`; the rest of the rate is left to the bias torque, which
  changes as the arm moves, and to the other joints) and reaches aᵦ after t = aᵦ / j, over which
  the joint travels at most v t: Del Prete's stopping condition becomes v t + v² / (2 aᵦ) ≤ d,
  so √(2 aᵦ d) above becomes its root v = 2 d / (t + √(t² + 2 d / aᵦ)). The same argument one
  derivative up bounds the approach to the ceiling: a joint accelerating at q̈ needs q̈² / (2 j)
  of speed to stop accelerating, so a⁺ ≤ √(2 j (v⁺ − q̇)₊) and a⁻ ≥ −√(2 j (v⁻ + q̇)₊).
  Without a rate limit t = 0 and the bounds are those above. Counting on braking at once, a
  Panda at 150 N m/s ran 0.41 rad past its limits (docs/safety.md).

Near a wall the bound is q̈ ≤ (k²/4) d − k q̇, a critically damped wall. The bound is a
Lipschitz function of (q, q̇) with constants k²/4 and k, so it moves by little from one tick to
the next: a command that follows it does not chatter, where a bound on the next step's position
or velocity (gain 1/dt) or one that asks for more than aᵦ (which the torque limits then cut)
makes the command switch between its limits. Joints without position limits (continuous) have
the velocity ceiling alone; joints without either have no bounds.
"""

import math

from numba import boolean, float64, types
import numpy as np
import numpy.typing as npt

from wbc_control.control.constraints.gravity_holding import HoldingWalls
from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import INDEX, MATRIX, VECTOR
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

#: c: a joint faster than its velocity limit is braked at c k per rad/s over the limit.
OVERSPEED_RESPONSE = 10.0
#: Default distance (rad, or m for prismatic joints) of the wall inside each URDF limit.
DEFAULT_JOINT_LIMIT_MARGIN = 0.05
#: Default rate (1/s) at which a joint's speed is brought under its ceiling.
DEFAULT_JOINT_LIMIT_RESPONSE = 10.0
#: β: the share of what the effort limit leaves after the bias torque that braking may use.
BRAKING_SHARE = 0.5
#: The braking never counts on less than this share of τ̄ / Mᵢᵢ (a joint that gravity loads
#: beyond its effort limit still brakes).
MIN_BRAKING_SHARE = 0.05
#: γ: the share of a joint's torque rate limit its braking may count on ramping up with.
JERK_SHARE = 0.1
#: A bound counts as met within this (rad/s²): rounding must not flip the solver's path.
BOUND_TOLERANCE = 1e-9


class JointLimits:
    """The viability bounds of the module docstring for every actuated joint.

    Args:
        robot: the model; joints without finite limits (continuous) get no position walls.
        effort_limits: τ̄ per actuated joint (N m or N), for the braking aᵦ.
        margin: how far inside each URDF limit the wall stands (rad or m).
        response: k, the rate (1/s) at which a joint's speed is brought under its ceiling.
        max_acceleration: aᵦ per actuated joint (rad/s² or m/s²), NaN where it comes from the
            effort limits; None: from the effort limits for all.
        torque_rate_limits: ṙ per actuated joint (N m/s, inf for none), for the braking's ramp;
            None: none.
        holding: whether the effort limits bound the whole torque, gravity's included, so that
            a joint that cannot hold its arm up everywhere gets holding walls
            (`gravity_holding`); False for a driver that adds gravity itself.
    """

    def __init__(
        self,
        robot: RobotModel,
        effort_limits: npt.ArrayLike,
        margin: float = DEFAULT_JOINT_LIMIT_MARGIN,
        response: float = DEFAULT_JOINT_LIMIT_RESPONSE,
        max_acceleration: npt.ArrayLike | None = None,
        torque_rate_limits: npt.ArrayLike | None = None,
        holding: bool = True,
    ) -> None:
        margin, response = float(margin), float(response)
        if not (math.isfinite(margin) and margin >= 0.0):
            raise InvalidValue(f'joint limit margin must be finite and >= 0, got {margin}')
        if not (math.isfinite(response) and response > 0.0):
            raise InvalidValue(f'joint limit response must be finite and > 0, got {response}')
        size = robot.n_actuated
        self.robot, self.margin, self.response = robot, margin, response
        self.effort_limits = _per_joint(effort_limits, size, 'effort limits')
        self.max_acceleration = (
            np.full(size, np.nan)  # NaN: from the effort limits
            if max_acceleration is None
            else _per_joint(max_acceleration, size, 'max_joint_acceleration', allow_nan=True)
        )
        self.torque_rate_limits = (
            np.full(size, np.inf)
            if torque_rate_limits is None
            else _per_joint(torque_rate_limits, size, 'torque rate limits')
        )
        velocity = np.asarray(robot.model.velocityLimit, dtype=float)[robot.indices.v]
        self.max_speed = np.where(np.isfinite(velocity) & (velocity > 0.0), velocity, np.inf)
        lower, upper = robot.position_limits
        inset = np.minimum(margin, 0.25 * (upper - lower))
        self.lower_wall = lower + inset  # (n_act,) -inf for continuous joints
        self.upper_wall = upper - inset
        self.joint_names = tuple(robot.joint_names)
        #: Each actuated joint's velocity index, `(n_act,)` int64.
        self.velocity_indices = np.asarray(robot.indices.v, dtype=np.int64)
        # Each joint's entry of q: its position; for a continuous joint (no walls: its distance
        # to them is inf at any finite position) the cosine, a finite stand-in.
        self._q_positions = _position_entries(robot)
        self._bounds = np.empty((2, size))
        holds = self.effort_limits if holding else np.full(size, np.inf)  # inf: no walls
        self.holding = HoldingWalls(robot, holds)
        #: Which actuated joints have holding walls, `(n_act,)` bool (`HoldingWalls.walled`).
        self.walled = self.holding.walled

    def bounds(self, state: RobotState) -> np.ndarray:
        """(a⁻, a⁺) of every actuated joint at `state`, the rows of a `(2, n_act)` buffer.

        The buffer is rewritten by the next call.
        """
        holding = self.holding  # no call on an arm that needs no holding walls (most)
        walls = holding.distances(state.q) if holding.active else holding.walls
        acceleration_bounds(
            state.q, state.v, state.mass_matrix, state.nonlinear_effects, self._q_positions,
            self.velocity_indices, self.lower_wall, self.upper_wall, self.max_speed,
            self.effort_limits, self.max_acceleration, self.torque_rate_limits, self.response,
            walls, self._bounds[0], self._bounds[1],
        )  # fmt: skip
        return self._bounds

    def names(self, held: np.ndarray) -> tuple[str, ...]:
        """The names of the joints where `held` `(n_act,)` is True."""
        return tuple(name for name, flag in zip(self.joint_names, held.tolist()) if flag)


def _per_joint(values: npt.ArrayLike, size: int, what: str, allow_nan: bool = False) -> np.ndarray:
    array = np.array(values, dtype=float)
    if array.shape != (size,):
        raise InvalidShape(f'{what} need one value per actuated joint ({size}), got {array.shape}')
    if (not allow_nan and np.isnan(array).any()) or (array <= 0.0).any():
        raise InvalidValue(f'{what} must be positive (inf for none), got {array.tolist()}')
    return array


def _position_entries(robot: RobotModel) -> np.ndarray:
    """Each actuated joint's index in q `(n_act,)`: its position, or its cosine if continuous."""
    entries = np.empty(robot.n_actuated, dtype=np.int64)
    tables = robot.indices
    entries[tables.linear_joints] = tables.q_linear
    entries[tables.continuous_joints] = tables.q_cos
    return entries


@kernel()
def _ceiling(distance, max_speed, braking, rate, delay):  # pragma: no cover - runs compiled
    """v⁺(d) = min(v̄, √(2 aᵦ d), (k/4) d); (k/4) d beyond the wall; inf without a wall.

    With the braking's ramp time t = `delay` > 0, the root of v t + v² / (2 aᵦ) = d in place of
    √(2 aᵦ d), written without the cancellation of the quadratic formula.
    """
    ceiling = min(0.25 * rate * distance, max_speed)
    if distance > 0.0:
        if delay > 0.0:
            stop = 2.0 * distance / (delay + math.sqrt(delay * delay + 2.0 * distance / braking))
        else:
            stop = math.sqrt(2.0 * braking * distance)
        ceiling = min(ceiling, stop)
    return ceiling


@kernel(
    types.void(
        VECTOR, VECTOR, types.Array(float64, 2, 'A', readonly=True), VECTOR, INDEX, INDEX,
        VECTOR, VECTOR, VECTOR, VECTOR, VECTOR, VECTOR, float64, MATRIX, float64[::1],
        float64[::1],
    ),
)  # fmt: skip
def acceleration_bounds(
    q,
    v,
    mass,
    bias,
    positions,
    velocities,
    lower_wall,
    upper_wall,
    max_speed,
    effort,
    declared,
    torque_rate,
    rate,
    holding,
    lower,
    upper,
):  # pragma: no cover - runs compiled
    """Write a⁻ and a⁺ of every joint (`JointLimits.bounds`, the module docstring).

    Joint i's position is q[positions[i]], its speed v[velocities[i]]; `declared[i]` is its aᵦ,
    NaN for β (τ̄ − |hᵢ|) / Mᵢᵢ; `torque_rate[i]` its ṙ, inf for none (then t = 0);
    `holding[0, i]`, `holding[1, i]` the distances to its holding walls above and below it
    (`gravity_holding`; inf for none), walls besides the position walls.
    """
    for i in range(positions.shape[0]):
        j = velocities[i]
        position, velocity = q[positions[i]], v[j]
        braking = declared[i]
        if math.isnan(braking):
            room = max(effort[i] - abs(bias[j]), MIN_BRAKING_SHARE * effort[i])
            braking = BRAKING_SHARE * room / mass[j, j]
        jerk = JERK_SHARE * torque_rate[i] / mass[j, j]
        delay = braking / jerk
        above = min(upper_wall[i] - position, holding[0, i])
        below = min(position - lower_wall[i], holding[1, i])
        up = _ceiling(above, max_speed[i], braking, rate, delay)
        down = _ceiling(below, max_speed[i], braking, rate, delay)
        over = OVERSPEED_RESPONSE * rate
        high = rate * (up - velocity) - over * max(velocity - max_speed[i], 0.0)
        low = rate * (-down - velocity) + over * max(-velocity - max_speed[i], 0.0)
        if delay > 0.0:
            high = min(high, math.sqrt(2.0 * jerk * max(up - velocity, 0.0)))
            low = max(low, -math.sqrt(2.0 * jerk * max(down + velocity, 0.0)))
        upper[i] = max(high, -braking)
        lower[i] = min(min(low, braking), upper[i])


#: A joint's acceleration within this fraction of 1 + |q̈ᵢ| of a bound is held at it.
HELD_TOLERANCE = 1e-6


@kernel(types.Tuple((boolean, boolean[::1]))(VECTOR, VECTOR, VECTOR))
def held_joints(acceleration, lower, upper):  # pragma: no cover - runs compiled
    """(any, held) `(n_act,)`: the joints whose q̈ᵢ sits on a⁻ᵢ or a⁺ᵢ.

    Within `HELD_TOLERANCE` (1 + |q̈ᵢ|); compiled, one call where six numpy calls made it.
    """
    held = np.zeros(acceleration.shape[0], np.bool_)
    found = False
    for i in range(acceleration.shape[0]):
        tolerance = HELD_TOLERANCE * (1.0 + abs(acceleration[i]))
        if acceleration[i] <= lower[i] + tolerance or acceleration[i] >= upper[i] - tolerance:
            held[i] = found = True
    return found, held
