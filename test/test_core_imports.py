"""The core (everything but wbc_control.nodes) must import without rclpy or any message package."""

import json
import subprocess
import sys
import textwrap

# Runs in a fresh interpreter: the test process itself may already have imported rclpy.
# Packages are imported one by one before their children are listed (pkgutil.walk_packages
# would import wbc_control.nodes just to look inside it).
PROBE = textwrap.dedent(
    """
    import importlib
    import json
    import pkgutil
    import sys

    def ros_modules():
        return sorted(
            name for name in sys.modules
            if name.split('.')[0] == 'rclpy'
            or name.split('.')[0].endswith(('_msgs', '_interfaces'))
        )

    def core_modules(package):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + '.'):
            if info.name == 'wbc_control.nodes':
                continue
            module = importlib.import_module(info.name)
            yield info.name
            if info.ispkg:
                yield from core_modules(module)

    import wbc_control

    imported = ['wbc_control']
    offender = {}
    for name in core_modules(wbc_control):
        imported.append(name)
        pulled = ros_modules()
        if pulled:
            offender = {name: pulled}
            break
    json.dump({'imported': imported, 'offender': offender}, sys.stdout)
    """
)


def test_core_imports_no_ros() -> None:
    result = subprocess.run(
        [sys.executable, '-c', PROBE], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f'importing the core failed:\n{result.stderr}'
    report = json.loads(result.stdout)
    assert len(report['imported']) > 1, f'no core module found: {report["imported"]}'
    assert not any(name.startswith('wbc_control.nodes') for name in report['imported'])
    assert report['offender'] == {}, (
        'the core must not import rclpy or message packages; the first module that did, '
        f'with what it pulled in: {report["offender"]}'
    )
