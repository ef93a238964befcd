"""What `wbc_controller` spends per joint state in process, beside the tick itself.

Builds the real controller node (rclpy, the shipped or given params file, as `wbc_bench`'s
DDS run configures it: soft start and rate limit off) and calls its joint-state callback on
stamped `sensor_msgs/JointState` messages of the benchmark's random states, back to back, with
no DDS in between. Prints the callback's p50 / p90 / p99 and, for the same states, the
controller's tick alone (`RobotState.update` + `PrioritizedController.compute`): the
difference is the node's own work per state (decoding, the loop's limits and statistics,
publishing). `--cold` sums a 64 MB array before each state, so that every callback starts with
emptied caches, as one arriving over DDS at 1 kHz finds them (docs/performance.md).
`--idle` sleeps 0.9 ms before each state, the idle part of a 1 kHz period, so that each state
finds the CPU waking from idle as over DDS. `--rejected` gives every message a NaN position
instead: the callback then times the rejection path (decode, count, log throttle), which a
faulty publisher runs for every message:

    OPENBLAS_NUM_THREADS=1 python dev/time_node_callback.py --robot panda --states 3000
    OPENBLAS_NUM_THREADS=1 python dev/time_node_callback.py --robot panda --cold
    OPENBLAS_NUM_THREADS=1 python dev/time_node_callback.py --robot panda --idle
    OPENBLAS_NUM_THREADS=1 python dev/time_node_callback.py --robot panda --rejected

Fixed-base robots only (a floating base ticks on joint states paired with odometry). Needs
rclpy and the message packages (a sourced ROS 2, or the venv's ROS wheels).
"""

import argparse
from collections.abc import Callable
import gc
from pathlib import Path
import tempfile
import time

import numpy as np
import rclpy
from sensor_msgs.msg import JointState
import yaml

from wbc_control.benchmark.dds import dds_parameters
from wbc_control.benchmark.tick import random_samples
from wbc_control.model.robot_state import RobotState
from wbc_control.ros.controller_node import NODE_NAME, ControllerNode

WARMUP = 300
FLUSH_VALUES = 8 * 1024 * 1024  # 64 MB of float64: beyond the machine's caches
IDLE_S = 0.0009  # the idle part of a 1 kHz period


def node_of(robot_name: str, params_path: Path | None) -> ControllerNode:
    """The controller node, built from the params `wbc_bench`'s DDS run gives it."""
    parameters = dds_parameters(robot_name, params_path)
    with tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False) as file:
        yaml.safe_dump({NODE_NAME: {'ros__parameters': parameters}}, file)
    rclpy.init(args=['--ros-args', '--params-file', file.name])
    Path(file.name).unlink()
    return ControllerNode()


def state_messages(node: ControllerNode, count: int, rejected: bool) -> list[JointState]:
    """Joint states of the benchmark's random samples, in the robot's joint order.

    With `rejected`, each has a NaN position, which the node rejects (`joint_states.non_finite`).
    """
    robot = node._robot
    names = [str(name) for name in robot.joint_names]
    messages = []
    for sample in random_samples(robot, count, seed=0):
        message = JointState(name=names)
        message.position = sample.positions.tolist()
        if rejected:
            message.position[0] = float('nan')
        message.velocity = sample.velocities.tolist()
        messages.append(message)
    return messages


def timed_us(
    states: int, call: Callable[[int], None], cold: bool, idle: bool = False
) -> np.ndarray:
    """µs of `call(i)` for i in range(states), after a warm-up.

    Before each call the caches are emptied if `cold`, and the process sleeps `IDLE_S` if `idle`.
    """
    flush = np.ones(FLUSH_VALUES) if cold else None
    durations = np.empty(states)
    gc.collect()
    for index in range(-WARMUP, states):
        if flush is not None:
            flush.sum()
        if idle:
            time.sleep(IDLE_S)
        start = time.perf_counter_ns()
        call(index)
        if index >= 0:
            durations[index] = (time.perf_counter_ns() - start) * 1e-3
    return durations


def main() -> None:
    """Print the callback's and the tick's percentiles for the chosen robot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robot', default='panda', help='example robot of the shipped config')
    parser.add_argument('--params-file', type=Path, default=None)
    parser.add_argument('--states', type=int, default=3000)
    parser.add_argument('--cold', action='store_true', help='empty the caches before each state')
    parser.add_argument('--idle', action='store_true', help='sleep 0.9 ms before each state')
    parser.add_argument(
        '--rejected', action='store_true', help='time the rejection path (NaN positions)'
    )
    arguments = parser.parse_args()
    node = node_of(arguments.robot, arguments.params_file)
    if node._robot.floating_base:
        parser.error('a floating base ticks on joint states paired with odom: fixed base only')
    messages = state_messages(node, 256, arguments.rejected)
    clock = node.get_clock()

    def callback(index: int) -> None:
        message = messages[index % len(messages)]
        message.header.stamp = clock.now().to_msg()
        node._on_joint_state(message)

    controller = node._loop.controller
    state = RobotState(node._robot)
    samples = random_samples(node._robot, 256, seed=0)
    q, v = np.empty(node._robot.nq), np.empty(node._robot.nv)

    def tick(index: int) -> None:
        sample = samples[index % len(samples)]
        node._robot.configuration(sample.positions, sample.base_pose, out=q)
        node._robot.velocity(sample.velocities, sample.base_twist, out=v)
        state.update(q, v)
        controller.compute(state)

    figures = {
        'callback': timed_us(arguments.states, callback, arguments.cold, arguments.idle),
        'tick': timed_us(arguments.states, tick, arguments.cold, arguments.idle),
    }
    node.destroy_node()
    rclpy.shutdown()
    caches = 'emptied before each state' if arguments.cold else 'warm'
    caches += ', 0.9 ms idle before each state' if arguments.idle else ''
    kind = 'rejected states' if arguments.rejected else 'states'
    print(f'{arguments.robot}: {arguments.states} {kind} in process, caches {caches} (µs)')
    for name, durations in figures.items():
        p50, p90, p99 = np.percentile(durations, [50, 90, 99])
        print(f'  {name:9s} p50 {p50:7.1f}  p90 {p90:7.1f}  p99 {p99:7.1f}')
    if arguments.rejected:
        counted = dict(node._loop.statistics.rejected)
        print(f'  every state rejected, none ticked (the tick alone for comparison): {counted}')
        return
    beside = np.median(figures['callback']) - np.median(figures['tick'])
    print(f'  the node beside the tick (p50): {beside:.1f}')


if __name__ == '__main__':
    main()
