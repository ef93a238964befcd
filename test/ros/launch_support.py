"""Run launch files through the real `launch` / `launch_ros`, as `ros2 launch` would.

The package is laid out as colcon installs it, in a prefix built in a temporary directory
(ament index marker, share/wbc_control/{launch,config,package.xml}, lib/wbc_control/<scripts>).
`launch` and `launch_ros` are not on PyPI: when they are not importable, the upstream sources in
the launch harness beside the repository (../shared/launch_harness, `LAUNCH_DISTRO=jazzy` or
`rolling`) are used; without either, the tests skip.
"""

import importlib.util
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO.parent / 'shared' / 'launch_harness'
PACKAGE = 'wbc_control'
WBC_SCRIPTS = ('wbc_controller', 'wbc_sim', 'wbc_diagnostics')
# package -> executables that the launch files start and that are not installable here.
FOREIGN_STUBS = {
    'robot_state_publisher': ['robot_state_publisher'],
    'controller_manager': ['spawner'],
    'ros_gz_sim': ['create'],
    'ros_gz_bridge': ['parameter_bridge'],
}

# What `ros2 launch PKG FILE args` does, minus the package lookup.
RUNNER = """
import sys
from launch import LaunchDescription, LaunchService
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
arguments = [tuple(a.split(':=', 1)) for a in sys.argv[2:]]
service = LaunchService(argv=sys.argv[2:])
service.include_launch_description(LaunchDescription([IncludeLaunchDescription(
    PythonLaunchDescriptionSource(sys.argv[1]), launch_arguments=arguments)]))
rc = service.run()
print('LAUNCH RC', rc, flush=True)
sys.exit(rc)
"""

# A stub executable: records its command line and the parameter files it was given.
STUB = """#!/bin/sh
log="{log}/$(basename "$0").$$"
echo "$@" > "$log.args"
n=0
prev=""
for a in "$@"; do
  if [ "$prev" = "--params-file" ]; then n=$((n+1)); cp "$a" "$log.params$n.yaml"; fi
  prev="$a"
done
echo "STUB $(basename "$0") $*" | cut -c1-200
"""

GZ_SIM_STUB = """from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo
from launch.substitutions import LaunchConfiguration


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument('gz_args', default_value=''),
        LogInfo(msg=['STUB gz sim ', LaunchConfiguration('gz_args')])])
"""


def launch_sources() -> list:
    """Parameters: the installed launch, else the harness distributions, else a skip."""
    if importlib.util.find_spec('launch') and importlib.util.find_spec('launch_ros'):
        return [pytest.param(None, id='installed')]
    if (HARNESS / 'env.sh').is_file():
        return [pytest.param(distro, id=distro) for distro in ('jazzy', 'rolling')]
    reason = f'launch / launch_ros are not importable and {HARNESS} is absent'
    return [pytest.param(None, id='no-launch', marks=pytest.mark.skip(reason=reason))]


def installed_script(name: str) -> Path:
    """A console script of this package; skips the test when it is not installed.

    Looked for next to this interpreter (pip), then in each prefix of AMENT_PREFIX_PATH (colcon).
    """
    candidates = [Path(sys.executable).parent / name]
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / 'lib' / PACKAGE / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    pytest.skip(f'{name} is not installed (pip install -e . or colcon build)')


def _mark_package(prefix: Path, package: str) -> None:
    index = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
    index.mkdir(parents=True, exist_ok=True)
    (index / package).touch()


def _write_executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def install_prefix(root: Path, stub_log: Path | None = None) -> Path:
    """wbc_control installed as colcon does, below `root`.

    Real console scripts (links to this interpreter's) when `stub_log` is None, else stubs that
    record their arguments in `stub_log`; stubs also stand in for the ROS packages the Gazebo
    launch file starts.
    """
    share = root / 'share' / PACKAGE
    share.mkdir(parents=True)
    _mark_package(root, PACKAGE)
    shutil.copy2(REPO / 'package.xml', share / 'package.xml')
    for folder, pattern in (('launch', '*.launch.py'), ('config', '*.yaml'), ('config', '*.rviz')):
        (share / folder).mkdir(exist_ok=True)
        for path in sorted((REPO / folder).glob(pattern)):
            shutil.copy2(path, share / folder / path.name)
    lib = root / 'lib' / PACKAGE
    lib.mkdir(parents=True)
    if stub_log is None:
        for script in WBC_SCRIPTS:
            (lib / script).symlink_to(installed_script(script))
        return root
    stub_log.mkdir(parents=True, exist_ok=True)
    stub = STUB.format(log=stub_log)
    for script in WBC_SCRIPTS:
        _write_executable(lib / script, stub)
    for package, executables in FOREIGN_STUBS.items():
        for name in executables:
            add_stub(root, stub_log, package, name)
    _mark_package(root, 'ros_gz_sim')
    gz_launch = root / 'share' / 'ros_gz_sim' / 'launch' / 'gz_sim.launch.py'
    gz_launch.parent.mkdir(parents=True)
    gz_launch.write_text(GZ_SIM_STUB)
    _write_executable(root / 'bin' / 'xacro', '#!/bin/sh\ncat "$1"\n')
    return root


def add_stub(prefix: Path, stub_log: Path, package: str, executable: str) -> None:
    """A stub `executable` of ROS package `package` in `prefix`, recording into `stub_log`."""
    _mark_package(prefix, package)
    _write_executable(prefix / 'lib' / package / executable, STUB.format(log=stub_log))


def launch_command(distro: str | None, prefix: Path, launch_file: str, *args: str) -> list:
    """The command running `launch_file` of the installed prefix with `args` (name:=value)."""
    path = prefix / 'share' / PACKAGE / 'launch' / launch_file
    environment = f'export AMENT_PREFIX_PATH="{prefix}${{AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}}"'
    setup = f'export PATH="{prefix}/bin:$PATH"; {environment}'
    if distro is not None:
        setup = f'export LAUNCH_DISTRO={distro}; . "{HARNESS}/env.sh"; {setup}'
    script = f'{setup}; exec "{sys.executable}" -c "$0" "$@"'
    return ['bash', '-c', script, RUNNER, str(path), *args]


class LaunchRun:
    """A launch process; its output goes to a file. Use as a context manager."""

    def __init__(self, command: list, cwd: Path | None = None) -> None:
        self._log = tempfile.NamedTemporaryFile('w+', suffix='.log', delete=False)
        environment = dict(os.environ, ROS_LOG_DIR=tempfile.mkdtemp(prefix='wbc_launch_log'))
        self.process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=cwd,
            start_new_session=True,
        )

    def __enter__(self) -> 'LaunchRun':
        return self

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def interrupt(self, timeout: float = 20.0) -> int:
        """SIGINT to launch and its processes, as Ctrl-C; the exit code once all stopped.

        A terminal sends Ctrl-C's SIGINT to the whole foreground process group, and launch
        relies on that: it does not forward a SIGINT it received itself.
        """
        os.killpg(self.process.pid, signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float = 30.0) -> int:
        """Wait for launch to exit by itself; fails the test after `timeout` s."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.process.poll() is not None, (
            f'launch still runs after {timeout} s:\n{self.output()}'
        )
        return self.process.returncode

    def output(self) -> str:
        """Everything launch and its processes printed so far."""
        self._log.flush()
        return Path(self._log.name).read_text(errors='replace')


def run_to_end(command: list, timeout: float = 60.0, cwd: Path | None = None) -> tuple[int, str]:
    """Run a launch that ends by itself (in `cwd`); its exit code and output."""
    with LaunchRun(command, cwd) as run:
        code = run.wait(timeout)
        return code, run.output()


def stub_records(log: Path, executable: str) -> list[tuple[str, list[dict]]]:
    """(arguments, parameter files) of every run of a stub executable."""
    records = []
    for args in sorted(log.glob(f'{executable}.*.args')):
        stem = args.name[: -len('.args')]
        params = [yaml.safe_load(path.read_text()) for path in sorted(log.glob(f'{stem}.params*'))]
        records.append((args.read_text(), params))
    return records


def node_parameters(params: list[dict]) -> dict:
    """The `ros__parameters` of every section of `params` (parameter files), merged."""
    merged = {}
    for document in params:
        for section in document.values():
            merged.update(section['ros__parameters'])
    return merged
