"""The core layers import neither rclpy, message packages, mujoco nor matplotlib.

The core is every folder below the tools: model, tasks, control, conditioning, inputs, config
and viz (plus the package's top-level modules). Only ``ros/`` imports rclpy and only ``sim/``
imports mujoco; demo, benchmark and faults are tools on top that nothing below imports.
"""

import json
import subprocess
import sys
import textwrap

CORE_PACKAGES = ('model', 'tasks', 'control', 'conditioning', 'inputs', 'config', 'viz')
TOOL_PACKAGES = ('ros', 'sim', 'demo', 'benchmark', 'faults')

# Runs in a fresh interpreter: the test process itself may already have imported rclpy.
PROBE = textwrap.dedent(
    """
    import importlib
    import itertools
    import json
    import pkgutil
    import sys

    CORE = {core!r}
    TOOLS = {tools!r}

    def forbidden():
        return sorted(
            name for name in sys.modules
            if name.split('.')[0] in ('rclpy', 'mujoco', 'matplotlib')
            or name.split('.')[0].endswith(('_msgs', '_interfaces'))
            or any(name.startswith(f'wbc_control.{{tool}}') for tool in TOOLS)
        )

    def modules(package):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + '.'):
            module = importlib.import_module(info.name)
            yield info.name
            if info.ispkg:
                yield from modules(module)

    import wbc_control

    imported = ['wbc_control']
    offender = {{}}
    top = [info for info in pkgutil.iter_modules(wbc_control.__path__)]
    unknown = [info.name for info in top if info.ispkg and info.name not in CORE + TOOLS]
    for info in top:
        if info.name in TOOLS:
            continue
        name = 'wbc_control.' + info.name
        module = importlib.import_module(name)
        names = itertools.chain([name], modules(module) if info.ispkg else [])
        for each in names:
            imported.append(each)
            pulled = forbidden()
            if pulled:
                offender = {{each: pulled}}
                break
        if offender:
            break
    json.dump({{'imported': imported, 'offender': offender, 'unknown': unknown}}, sys.stdout)
    """
).format(core=CORE_PACKAGES, tools=TOOL_PACKAGES)


def test_core_imports_no_ros_mujoco_matplotlib_or_tools() -> None:
    result = subprocess.run(
        [sys.executable, '-c', PROBE], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f'importing the core failed:\n{result.stderr}'
    report = json.loads(result.stdout)
    assert report['unknown'] == [], (
        f'sub-packages {report["unknown"]} are in no layer: add them to CORE_PACKAGES or '
        'TOOL_PACKAGES'
    )
    assert report['offender'] == {}, (
        'the core must not import rclpy, message packages, mujoco, matplotlib or the tool '
        f'packages; the first module that did, with what it pulled in: {report["offender"]}'
    )
    for package in CORE_PACKAGES:
        assert f'wbc_control.{package}' in report['imported'], report['imported']
