"""Inject faults into a real `wbc_controller` running your configuration and print a table.

    wbc_faults --params-file config/panda_controller.yaml --robot panda
    wbc_faults --params-file my_controller.yaml --urdf /path/to/robot.urdf

Starts `wbc_controller` with the params file (fixed-base robots), talks to it over DDS from a
probe node, injects each fault and checks what the node does: rejected and counted inputs on
/diagnostics, the safe command when the joint states stop, bounded torques for a far target,
refused live parameters, a misspelt parameter that stops the start-up. Prints one row per fault
(fault, expected, observed, verdict) and exits 0 only when every fault passed.
"""

import argparse
from collections.abc import Callable, Sequence
import os
from pathlib import Path
import subprocess
import tempfile
import time
from typing import NamedTuple

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped, PoseStamped
import numpy as np
from rcl_interfaces.srv import SetParameters
import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.config.schema import load_schema
from wbc_control.config.shipped import node_parameters
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.ros.runtime import executable

NAMESPACE = '/fault_injection'
NODE = 'fault_injection_controller'
NODE_SCHEMA = 'wbc_controller'
#: Wall-clock bound of a wait on the controller's answer (a loaded machine can take seconds).
ANSWER_TIMEOUT_S = 60.0
#: Identical commands in a row that show the soft start is over for a constant state.
STEADY_COMMANDS = 5


class Row(NamedTuple):
    """One line of the table."""

    fault: str
    expected: str
    observed: str
    passed: bool


class FaultProbe:
    """The controller process and the probe node that injects the faults."""

    def __init__(self, params_file: Path, urdf: Path) -> None:
        self.robot = RobotModel.from_urdf_path(urdf)
        lower, upper = self.robot.position_limits
        finite = np.isfinite(lower) & np.isfinite(upper)
        self.names = list(self.robot.joint_names)
        self.parameters = _parameters(params_file)
        self.good = _posture_target(self.parameters, len(self.names))
        if self.good is None:  # no posture target: mid-range
            self.good = np.where(finite, 0.5 * (lower + upper), 0.0)
        self.timeout = float(self.parameters['joint_state_timeout'])
        self.log = tempfile.NamedTemporaryFile('w+', suffix='.log', delete=False)
        base = [executable('wbc_controller'), '--ros-args', '--params-file', str(params_file)]
        self.base_args = [*base, '-p', f'urdf_path:={urdf}']
        args = [*self.base_args, '-r', f'__ns:={NAMESPACE}', '-r', f'__node:={NODE}']
        args += ['-p', 'diagnostics_rate:=10.0']
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        rclpy.init()
        self.node = Node('fault_injector')
        self.commands: list[tuple[float, np.ndarray]] = []
        self.inputs: dict[str, str] = {}
        self.tasks: dict[str, str] = {}
        self.node.create_subscription(
            Float64MultiArray,
            f'{NAMESPACE}/effort_controller/commands',
            lambda m: self.commands.append((time.monotonic(), np.array(m.data))),
            100,
        )
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_status, 50)
        self.states = self.node.create_publisher(JointState, f'{NAMESPACE}/joint_states', 10)
        self.setter = self.node.create_client(SetParameters, f'{NAMESPACE}/{NODE}/set_parameters')

    def _on_status(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            values = {item.key: item.value for item in status.values}
            if status.name == f'{NODE}: inputs':
                self.inputs = values
            elif status.name == f'{NODE}: tasks':
                self.tasks = values

    def spin_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin the probe until `condition()` or `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not condition():
            rclpy.spin_once(self.node, timeout_sec=0.01)
        return condition()

    def state(self, positions=None, velocities=None, names=None, stamp_s=0.0) -> JointState:
        """A joint state (default: mid-range positions, zero velocities, unstamped)."""
        msg = JointState()
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp_s), int(stamp_s % 1 * 1e9)
        msg.name = list(self.names if names is None else names)
        msg.position = [float(x) for x in (self.good if positions is None else positions)]
        msg.velocity = [
            float(x) for x in (np.zeros(len(msg.position)) if velocities is None else velocities)
        ]
        return msg

    def task_command(self, make: Callable[[], JointState], timeout: float = ANSWER_TIMEOUT_S):
        """Publish `make()` every 20 ms until the command is steady; it (None: not in `timeout`).

        A constant state gives a constant task torque once the soft start is over, and a
        different command at every tick of the ramp. A fixed wall-clock window is not enough:
        a probe starved of CPU for longer than the joint-state timeout lets the controller go
        stale, which restarts the ramp. Steady: at least 1 s past the soft start, the last
        `STEADY_COMMANDS` commands equal and not the safe command.
        """
        self.commands.clear()
        soft_start = float(self.parameters['soft_start_time'])
        started = time.monotonic()
        safe = self.safe_command()
        while time.monotonic() < started + timeout:
            self.states.publish(make())
            self.spin_until(lambda: False, 0.02)
            if time.monotonic() > started + soft_start + 0.5 and self._steady(safe):
                return self.commands[-1][1]
        return None

    def safe_command(self) -> np.ndarray:
        """The stale command at the good state, in `command_joints` order."""
        order = [self.names.index(j) for j in self.parameters.get('command_joints') or self.names]
        kind = self.parameters['stale_command']
        if kind == 'zero' or self.parameters['robot_compensates_gravity']:
            return np.zeros(len(order))
        state = RobotState(self.robot)
        state.update(self.good, np.zeros(len(self.names)))
        return state.gravity[order]

    def _steady(self, safe: np.ndarray) -> bool:
        recent = [command for _, command in self.commands[-STEADY_COMMANDS:]]
        if len(recent) < STEADY_COMMANDS or any(c.shape != safe.shape for c in recent):
            return False
        last = recent[-1]
        same = all(np.allclose(c, last, rtol=1e-9, atol=1e-9) for c in recent)
        return same and not np.allclose(last, safe, rtol=1e-9, atol=1e-9)

    def rejected(self, msg: JointState, reason: str) -> Row:
        """Publish `msg` until `reason` is counted on /diagnostics."""
        key = f'rejected.joint_states.{reason}'
        before = int(self.inputs.get(key, 0))
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while time.monotonic() < deadline and int(self.inputs.get(key, 0)) <= before:
            self.states.publish(msg)
            self.spin_until(lambda: int(self.inputs.get(key, 0)) > before, 0.5)
        count = int(self.inputs.get(key, 0)) - before
        return Row('', f'rejected ({reason}), counted', f'{key} +{count}', count > 0)

    def set_parameter(self, name: str, value) -> tuple[bool, str]:
        """A live SetParameters on the controller: (successful, reason)."""
        self.setter.wait_for_service(10.0)
        request = SetParameters.Request()
        request.parameters = [Parameter(name, value=value).to_parameter_msg()]
        future = self.setter.call_async(request)
        rclpy.spin_until_future_complete(self.node, future, timeout_sec=10.0)
        (result,) = future.result().results
        return result.successful, result.reason

    def close(self) -> None:
        """Stop the controller and the probe."""
        self.process.terminate()
        self.process.wait(10.0)
        self.node.destroy_node()
        rclpy.shutdown()


def _parameters(params_file: Path) -> dict:
    """The file's controller parameters over the schema's defaults (what the node will use)."""
    defaults = {name: spec.default for name, spec in load_schema(NODE_SCHEMA).parameters.items()}
    return defaults | node_parameters(params_file, NODE_SCHEMA)


def _posture_target(parameters: dict, size: int) -> np.ndarray | None:
    """The target of the first joint posture task that has one for every joint."""
    for task in parameters.get('tasks', {}).values():
        target = task.get('target')
        if task.get('type') == 'joint_posture' and target is not None and len(target) == size:
            return np.array(target, dtype=float)
    return None


def run_faults(probe: FaultProbe) -> list[Row]:
    """Every fault in turn; each returns a row."""
    # Start-up imports numpy, scipy and Pinocchio: minutes on a heavily loaded machine.
    up = probe.spin_until(lambda: probe.states.get_subscription_count() > 0, 300.0)
    if not up:
        return [Row('start-up', 'node subscribes', controller_output(probe), False)]
    rows = []
    baseline = probe.task_command(probe.state)
    effort = probe.robot.effort_limits
    ok = baseline is not None and np.isfinite(baseline).all()
    rows.append(Row('good state', 'finite task torque', _summary(baseline), ok))
    good, n = probe.good, len(probe.names)
    for fault, msg, reason in (
        ('non-finite position', probe.state(np.r_[np.nan, good[1:]]), 'non_finite'),
        ('ragged arrays', probe.state(good[:-1]), 'ragged'),
        ('missing joint', probe.state(good[1:], np.zeros(n - 1), probe.names[1:]), 'joints'),
        ('duplicate joint', probe.state(names=[probe.names[0]] * n), 'joints'),
        ('velocity 1e150', probe.state(velocities=np.full(n, 1e150)), 'velocity_limit'),
        ('position 50 rad past limit', probe.state(good + 50.0), 'position_limit'),
        ('stamp a day ahead', probe.state(stamp_s=time.time() + 86400.0), 'future'),
        ('stamp an hour old', probe.state(stamp_s=time.time() - 3600.0), 'stale'),
    ):
        rows.append(probe.rejected(msg, reason)._replace(fault=fault))
    rows.append(out_of_order(probe))
    jumbled = probe.task_command(lambda: probe.state(good[::-1], names=probe.names[::-1]))
    same = jumbled is not None and baseline is not None and np.allclose(jumbled, baseline)
    rows.append(Row('jumbled joint order', 'same torque', _summary(jumbled), same))
    resumed = probe.task_command(lambda: probe.state(stamp_s=time.time()))
    ok = resumed is not None and np.abs(resumed).max() > 0.0
    rows.append(Row('current stamps after the faults', 'control resumes', _summary(resumed), ok))
    rows.append(silent_publisher(probe))
    rows.append(far_target(probe, effort))
    rows += live_parameters(probe)
    rows.append(misspelt_parameter(probe))
    return rows


def out_of_order(probe: FaultProbe) -> Row:
    """A stamp before the last accepted one (within the timeout) is rejected as out of order."""
    key = 'rejected.joint_states.out_of_order'
    before = int(probe.inputs.get(key, 0))
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while time.monotonic() < deadline and int(probe.inputs.get(key, 0)) <= before:
        latest = time.time()
        probe.states.publish(probe.state(stamp_s=latest))
        probe.spin_until(lambda: False, 0.01)
        probe.states.publish(probe.state(stamp_s=latest - 0.3 * probe.timeout))
        probe.spin_until(lambda: int(probe.inputs.get(key, 0)) > before, 0.5)
    count = int(probe.inputs.get(key, 0)) - before
    expected = 'rejected (out_of_order), counted'
    return Row('stamp before the last one', expected, f'{key} +{count}', count > 0)


def silent_publisher(probe: FaultProbe) -> Row:
    """States stop: the safe command must follow, and go on.

    When: the state's age at the switch, as the node logged it (a probe's receipt times
    would charge the node with the probe's own waits for a CPU on a loaded machine).
    """
    safe = probe.safe_command()
    probe.states.publish(probe.state())
    probe.commands.clear()

    def is_safe(command: np.ndarray) -> bool:
        return command.shape == safe.shape and np.allclose(command, safe, rtol=1e-9, atol=1e-9)

    came = probe.spin_until(lambda: any(is_safe(c) for _, c in probe.commands), ANSWER_TIMEOUT_S)
    probe.spin_until(lambda: False, probe.timeout + 0.5)
    first = next((i for i, (_, c) in enumerate(probe.commands) if is_safe(c)), None)
    late = [] if first is None else [c for _, c in probe.commands[first:]]
    kind = probe.parameters['stale_command']
    ok = came and len(late) > 1 and is_safe(late[-1])
    probe.log.flush()
    log = Path(probe.log.name).read_text(errors='replace')
    logged = [line for line in log.splitlines() if line.endswith('safe command')]
    when = logged[-1].split(']: ')[-1].split(': ')[0] if logged else 'no switch logged'
    observed = f'{len(late)} safe command(s); the node: {when}'
    if not came:
        observed = f'no safe command within {ANSWER_TIMEOUT_S:.0f} s'
    return Row('silent publisher', f'{kind} safe command', observed, ok)


def far_target(probe: FaultProbe, effort: np.ndarray) -> Row:
    """A frame task's target 10 m away: bounded torques, the task reported as clipping."""
    tasks = probe.parameters.get('tasks', {})
    frame_tasks = [
        (name, task['type'])
        for name, task in tasks.items()
        if task.get('type') in ('frame_position', 'frame_pose')
    ]
    if not frame_tasks:
        return Row('target 10 m away', 'no frame task', 'skipped', True)
    name, kind = frame_tasks[0]
    message = PoseStamped if kind == 'frame_pose' else PointStamped
    publisher = probe.node.create_publisher(message, f'{NAMESPACE}/{NODE}/{name}/target', 1)
    probe.spin_until(lambda: publisher.get_subscription_count() > 0, 10.0)
    msg = message()
    if kind == 'frame_pose':
        msg.pose.position.x, msg.pose.orientation.x, msg.pose.orientation.w = 10.0, 1.0, 0.0
    else:
        msg.point.x = 10.0
    publisher.publish(msg)
    command = probe.task_command(probe.state)
    limits = effort[: 0 if command is None else command.size]
    bounded = command is not None and bool((np.abs(command) < 0.99 * limits).all())
    probe.spin_until(lambda: probe.tasks.get('clipping_tasks') == name, 3.0)
    clipping = probe.tasks.get('clipping_tasks') == name
    observed = f'{_summary(command)}; clipping_tasks={probe.tasks.get("clipping_tasks")!r}'
    expected = f'unsaturated, {name} clipping (tasks.{name}.max_error set)'
    return Row('target 10 m away', expected, observed, bounded and clipping)


def live_parameters(probe: FaultProbe) -> list[Row]:
    """A bad live gain and an unknown live parameter are refused."""
    rows = []
    name = next(iter(probe.parameters.get('tasks', {})), None)
    if name is not None:
        ok, reason = probe.set_parameter(f'tasks.{name}.kp', -1.0)
        rows.append(Row(f'live tasks.{name}.kp = -1', 'refused', reason or 'accepted', not ok))
    ok, reason = probe.set_parameter('tasks.elbow.kp', 10.0)
    named = 'tasks.elbow.kp' in reason
    rows.append(Row('live unknown tasks.elbow.kp', 'refused naming it', reason, not ok and named))
    return rows


def misspelt_parameter(probe: FaultProbe) -> Row:
    """A misspelt parameter (stale_comand) stops the start-up in one line naming it."""
    args = [*probe.base_args, '-r', '__node:=fault_injection_typo', '-p', 'stale_comand:=zero']
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=os.environ)
    output = (done.stdout + done.stderr).strip()
    ok = done.returncode != 0 and 'stale_command' in output and 'Traceback' not in output
    observed = f'exit {done.returncode}: {output.splitlines()[-1] if output else ""}'
    return Row('params file: stale_comand', 'start-up error naming stale_command', observed, ok)


def controller_output(probe: FaultProbe) -> str:
    """The end of the controller's output."""
    probe.log.flush()
    return Path(probe.log.name).read_text()[-300:]


def _summary(command: np.ndarray | None) -> str:
    if command is None:
        return f'no steady command within {ANSWER_TIMEOUT_S:.0f} s'
    return f'max |tau| {np.abs(command).max():.3g}'


def print_table(rows: list[Row]) -> None:
    """The table: fault, expected, observed, verdict."""
    header = Row('fault', 'expected', 'observed', True)
    widths = [max(len(getattr(r, f)) for r in (header, *rows)) for f in Row._fields[:3]]
    for row in (header, *rows):
        verdict = 'verdict' if row is header else ('PASS' if row.passed else 'FAIL')
        cells = [getattr(row, f).ljust(w) for f, w in zip(Row._fields[:3], widths)]
        print(' | '.join([*cells, verdict]))


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line of `wbc_faults`."""
    parser = argparse.ArgumentParser(
        prog='wbc_faults',
        description=__doc__.splitlines()[0],
        epilog='Prints one row per fault and exits 0 only when every fault passed.',
    )
    parser.add_argument(
        '--params-file', type=Path, required=True, help="the controller's params file"
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument('--urdf', type=Path, help='the robot URDF')
    group.add_argument('--robot', help='an example-robot-data robot name, e.g. panda')
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script `wbc_faults`: every fault against the configuration; 0 when all pass."""
    args = parse_arguments(argv)
    urdf = args.urdf if args.urdf is not None else example_robot_urdf(args.robot)[0]
    probe = FaultProbe(args.params_file, urdf)
    try:
        rows = run_faults(probe)
    finally:
        probe.close()
    print_table(rows)
    return 0 if all(row.passed for row in rows) else 1
