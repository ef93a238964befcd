"""Per-tick cost of the core against the Pinocchio floor (no ROS).

The core's per-tick cost, joint state in numpy -> torque out:
`RobotModel.configuration / velocity`, `RobotState.update`, `PrioritizedController.compute`,
over a pool of random configurations and velocities. Interleaved with every tick, the same
sample goes through the unavoidable Pinocchio floor (crba + nonLinearEffects +
computeJointJacobians + updateFramePlacements, + the COM Jacobian when a task uses the COM),
so that tick / floor does not depend on how loaded the machine is.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
import gc
from pathlib import Path
import sys
import time

import numpy as np
import pinocchio as pin

from wbc_control.benchmark.scenarios import Scenario
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

DEFAULT_TICKS = 5000
WARMUP_TICKS = 200
CALL_COUNT_TICKS = 300
INPUT_POOL_SIZE = 256
JOINT_SPEED_RAD_S = 0.5  # standard deviation of the random joint velocities
BASE_SPEED = 0.2  # m/s and rad/s, standard deviation of the random base twist
BASE_POSITION_RANGE_M = 1.0
_PACKAGE = Path(__file__).resolve().parents[1]  # wbc_control/


@dataclass(frozen=True)
class JointStateSample:
    """One input sample in the node's terms: joint state (+ base pose and twist)."""

    positions: np.ndarray  # (n_act,)
    velocities: np.ndarray  # (n_act,)
    base_pose: np.ndarray | None  # (7,) xyz + quaternion xyzw
    base_twist: np.ndarray | None  # (6,)


def random_samples(robot: RobotModel, count: int, seed: int) -> list[JointStateSample]:
    """Random configurations within the joint limits and random velocities."""
    rng = np.random.default_rng(seed)
    pin.seed(seed)
    lower = robot.model.lowerPositionLimit.copy()
    upper = robot.model.upperPositionLimit.copy()
    if robot.floating_base:
        lower[:3], upper[:3] = -BASE_POSITION_RANGE_M, BASE_POSITION_RANGE_M
    # Plausible speeds, as a robot reports them: within the URDF velocity limits.
    speed_limit = np.asarray(robot.model.velocityLimit, dtype=float)[robot.indices.v]
    speed_limit = np.where(speed_limit > 0.0, speed_limit, np.inf)
    samples = []
    for _ in range(count):
        q = pin.randomConfiguration(robot.model, lower, upper)
        base = robot.floating_base
        samples.append(
            JointStateSample(
                robot.joint_positions(q),
                np.clip(
                    JOINT_SPEED_RAD_S * rng.standard_normal(robot.n_actuated),
                    -speed_limit,
                    speed_limit,
                ),
                q[:7].copy() if base else None,
                BASE_SPEED * rng.standard_normal(6) if base else None,
            )
        )
    return samples


def pinocchio_floor(robot: RobotModel, uses_com: bool) -> Callable[[np.ndarray, np.ndarray], None]:
    """The Pinocchio work no controller of this robot can avoid, on its own Data."""
    model, data = robot.model, robot.model.createData()

    def floor(q: np.ndarray, v: np.ndarray) -> None:
        pin.crba(model, data, q)
        pin.nonLinearEffects(model, data, q, v)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        if uses_com:
            pin.jacobianCenterOfMass(model, data, False)

    return floor


def summary_us(durations_ns: Sequence[float]) -> dict[str, float]:
    """Median, p99 and max of durations given in ns, in µs."""
    values = np.asarray(durations_ns, dtype=float) * 1e-3
    return {
        'median': float(np.median(values)),
        'p99': float(np.percentile(values, 99)),
        'max': float(values.max()),
    }


def tick_function(
    scenario: Scenario, state: RobotState, q: np.ndarray, v: np.ndarray
) -> Callable[[JointStateSample], None]:
    """One controller tick as the node runs it: joint state in numpy -> torque."""
    robot, controller = scenario.robot, scenario.controller

    def tick(sample: JointStateSample) -> None:
        robot.configuration(sample.positions, sample.base_pose, out=q)
        robot.velocity(sample.velocities, sample.base_twist, out=v)
        state.update(q, v)
        controller.compute(state)

    return tick


def count_calls(scenario: Scenario, ticks: int = CALL_COUNT_TICKS, seed: int = 1) -> dict:
    """Function calls per tick, counted with `sys.setprofile` (a figure noise cannot move).

    `python` counts calls of Python functions, `c` calls of C functions (numpy, Pinocchio,
    builtins) made from Python; `total` is their sum, the per-call overhead a tick pays.
    The tick function itself is one of the Python calls. `by_module` splits `total` by the
    module that makes the call (`wbc_control/control/hierarchy/cascade.py`, ...; calls made from
    outside the package, e.g. inside numpy's Python wrappers, count for `other`).
    """
    robot = scenario.robot
    state = RobotState(robot)
    tick = tick_function(scenario, state, np.empty(robot.nq), np.empty(robot.nv))
    samples = random_samples(robot, INPUT_POOL_SIZE, seed)
    # Every sample the count will see, once first: one-time work (numba's first call of a
    # kernel with an argument type it converts, caches filled on first use) stays out of it.
    for sample in samples[:ticks]:
        tick(sample)
    counts = {'call': 0, 'c_call': 0}
    callers: dict[str, int] = {}

    def profile(frame, event, argument) -> None:
        if event in counts and argument is not sys.setprofile:  # not the harness's own
            counts[event] += 1
            caller = frame.f_back if event == 'call' else frame
            name = caller.f_code.co_filename if caller is not None else ''
            callers[name] = callers.get(name, 0) + 1

    batch = [samples[index % len(samples)] for index in range(ticks)]  # not counted
    # A collection during the count would add the __del__ calls of whatever the process left
    # behind (an earlier test's nodes): the node keeps collections out of its ticks as well.
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    sys.setprofile(profile)
    try:
        for sample in batch:
            tick(sample)
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    python, c = counts['call'] / ticks, counts['c_call'] / ticks
    return {
        'python': python,
        'c': c,
        'total': python + c,
        'ticks': ticks,
        'by_module': _by_module(callers, ticks),
    }


def _by_module(callers: dict[str, int], ticks: int) -> dict[str, float]:
    """Calls per tick by package module (`package_module`), largest first."""
    modules: dict[str, float] = {}
    for filename, count in callers.items():
        name = package_module(filename)
        modules[name] = modules.get(name, 0.0) + count / ticks
    return dict(sorted(modules.items(), key=lambda item: -item[1]))


def package_module(filename: str) -> str:
    """`wbc_control/control/hierarchy/cascade.py` for a file of this package, else 'other'."""
    path = Path(filename).resolve() if filename.startswith('/') else None
    if path is None or _PACKAGE not in path.parents:
        return 'other'
    return str(path.relative_to(_PACKAGE.parent))


def measure_ticks(scenario: Scenario, ticks: int = DEFAULT_TICKS, seed: int = 0) -> dict:
    """Time `ticks` controller ticks and as many floor evaluations, interleaved.

    Wall-clock (`perf_counter_ns`) is what the targets use; thread CPU time is reported too,
    since it stays meaningful when other processes take the CPU away.
    """
    robot, controller = scenario.robot, scenario.controller
    state = RobotState(robot)
    floor = pinocchio_floor(robot, scenario.uses_com)
    samples = random_samples(robot, INPUT_POOL_SIZE, seed)
    q, v = np.empty(robot.nq), np.empty(robot.nv)
    tick = tick_function(scenario, state, q, v)
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    records = np.empty((ticks, 4))  # wall tick, wall floor, cpu tick, cpu floor (ns)
    gc.collect()
    for index in range(-WARMUP_TICKS, ticks):
        sample = samples[index % len(samples)]
        wall_0, cpu_0 = wall(), cpu()
        tick(sample)
        wall_1, cpu_1 = wall(), cpu()
        floor(q, v)
        wall_2, cpu_2 = wall(), cpu()
        if index >= 0:
            records[index] = (wall_1 - wall_0, wall_2 - wall_1, cpu_1 - cpu_0, cpu_2 - cpu_1)
    tick_us, floor_us = summary_us(records[:, 0]), summary_us(records[:, 1])
    tick_cpu_us, floor_cpu_us = summary_us(records[:, 2]), summary_us(records[:, 3])
    return {
        'robot': robot.name,
        'source': scenario.source,
        'nv': robot.nv,
        'tasks': [
            {'name': entry.name, 'type': type(entry.task).__name__, 'priority': entry.priority}
            for entry in controller.entries
        ],
        'contacts': [contact.frame for contact in controller.contacts],
        'ticks': ticks,
        'tick_us': tick_us,
        'floor_us': floor_us,
        'ratio': tick_us['median'] / floor_us['median'],
        'p99_over_p50': tick_us['p99'] / tick_us['median'],
        'tick_cpu_us': tick_cpu_us,
        'floor_cpu_us': floor_cpu_us,
        'ratio_cpu': tick_cpu_us['median'] / floor_cpu_us['median'],
        'calls_per_tick': count_calls(scenario),
    }
