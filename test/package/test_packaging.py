"""The package as ROS 2 sees it: package.xml, a colcon build, and the console scripts."""

import ast
import importlib
from importlib import metadata
import importlib.util
import os
from pathlib import Path
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = 'wbc_control'

EXEC_DEPENDS = {
    'rclpy',
    'rcl_interfaces',
    'std_msgs',
    'sensor_msgs',
    'geometry_msgs',
    'nav_msgs',
    'trajectory_msgs',
    'diagnostic_msgs',
    'visualization_msgs',
    'rosgraph_msgs',
    'lifecycle_msgs',
    'rcl_lifecycle',
    'builtin_interfaces',
    'python3-numpy',
    'python3-scipy',
    'python3-numba',
    'python3-yaml',
    'quadprog-pip',
    'pinocchio',
    'eigenpy',
    'ament_index_python',
    'launch',
    'launch_ros',
    'ros2launch',
}

# Python module -> the rosdep key that installs it. ROS packages are their own keys (released
# for Jazzy, Kilted and Rolling in rosdistro's distribution.yaml, as are pinocchio and eigenpy);
# the python3-* keys are in rosdistro's rosdep/python.yaml.
ROSDEP_KEY = {
    'numpy': 'python3-numpy',
    'scipy': 'python3-scipy',
    'numba': 'python3-numba',
    'yaml': 'python3-yaml',
    'quadprog': 'quadprog-pip',
}
# Imported only by optional parts, and without a rosdep key (pip): the docs say how to get them.
OPTIONAL_IMPORTS = {'mujoco', 'matplotlib', 'daqp'}

# What colcon needs from the repository to build the package (everything else is development).
PACKAGE_FILES = ['package.xml', 'setup.py', 'setup.cfg', 'resource', PACKAGE, 'launch', 'config']


def console_scripts() -> list[str]:
    """The `CONSOLE_SCRIPTS` list literal of setup.py, read without running setup()."""
    tree = ast.parse((REPO / 'setup.py').read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == 'CONSOLE_SCRIPTS'
            for target in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError('setup.py has no CONSOLE_SCRIPTS = [...] list')


def script_names() -> list[str]:
    return [entry.split('=')[0].strip() for entry in console_scripts()]


def data_files(pattern: str) -> list[Path]:
    return sorted(path.relative_to(REPO) for path in REPO.glob(pattern))


def test_package_xml() -> None:
    root = ET.parse(REPO / 'package.xml').getroot()
    assert root.tag == 'package'
    assert root.get('format') == '3'
    assert root.findtext('name') == PACKAGE
    assert root.findtext('license') == 'Apache-2.0'
    assert root.findtext('export/build_type') == 'ament_python'
    assert root.findtext('description').strip()
    assert root.find('maintainer').get('email')
    exec_depends = {element.text for element in root.findall('exec_depend')}
    missing = EXEC_DEPENDS - exec_depends
    assert not missing, f'package.xml lacks exec_depend on {sorted(missing)}'
    assert 'python3-pytest' in {element.text for element in root.findall('test_depend')}


def runtime_imports() -> set[str]:
    """Top-level modules imported by the package and its launch files, minus the stdlib."""
    names = set()
    for path in [*(REPO / PACKAGE).rglob('*.py'), *(REPO / 'launch').glob('*.py')]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split('.')[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split('.')[0])
    return names - set(sys.stdlib_module_names) - {PACKAGE}


def test_every_runtime_import_is_an_exec_depend() -> None:
    root = ET.parse(REPO / 'package.xml').getroot()
    declared = {element.text for element in root.findall('exec_depend')}
    missing = {
        name
        for name in runtime_imports() - OPTIONAL_IMPORTS
        if ROSDEP_KEY.get(name, name) not in declared
    }
    assert not missing, f'package.xml lacks exec_depend for the imports {sorted(missing)}'
    assert declared <= EXEC_DEPENDS, f'undeclared here, check the key: {declared - EXEC_DEPENDS}'


def test_versions_agree() -> None:
    version = ET.parse(REPO / 'package.xml').getroot().findtext('version')
    assert metadata.version(PACKAGE) == version, (
        'package.xml and setup.py disagree on the version (or the installed copy is stale: '
        'run ./run.sh test to reinstall)'
    )


def test_console_scripts_point_at_callables() -> None:
    for entry in console_scripts():
        name, _, target = (part.strip() for part in entry.partition('='))
        module_name, _, attribute = target.partition(':')
        assert name and module_name and attribute, f'malformed console script {entry!r}'
        module = importlib.import_module(module_name)
        function = getattr(module, attribute, None)
        assert callable(function), f'{entry!r}: {target} is not a callable'


def test_installed_console_scripts_match_setup_py() -> None:
    installed = {
        entry_point.name
        for entry_point in metadata.distribution(PACKAGE).entry_points
        if entry_point.group == 'console_scripts'
    }
    assert installed == set(script_names()), (
        'the installed console scripts differ from setup.py: reinstall (./run.sh test does)'
    )


def copy_package(destination: Path) -> None:
    destination.mkdir(parents=True)
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc', '*.egg-info')
    for name in PACKAGE_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, destination / name)


@pytest.mark.slow
def test_colcon_build_installs_everything(tmp_path: Path) -> None:
    if importlib.util.find_spec('colcon_core') is None:
        pytest.skip('colcon is not installed (pip install colcon-common-extensions)')
    workspace = tmp_path / 'ws'
    copy_package(workspace / 'src' / PACKAGE)
    environment = dict(os.environ)
    environment['PATH'] = os.pathsep.join([str(Path(sys.executable).parent), environment['PATH']])
    # colcon must not pick up the developer's own workspace or defaults.
    environment['COLCON_HOME'] = str(tmp_path / 'colcon_home')
    for variable in ('AMENT_PREFIX_PATH', 'COLCON_PREFIX_PATH', 'CMAKE_PREFIX_PATH'):
        environment.pop(variable, None)
    result = subprocess.run(
        [
            sys.executable,
            '-m',
            'colcon',
            '--log-base',
            'log',
            'build',
            '--base-paths',
            'src',
            '--event-handlers',
            'console_direct+',
        ],
        cwd=workspace,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f'colcon build failed:\n{result.stdout}\n{result.stderr}'

    install = workspace / 'install' / PACKAGE
    expected = [
        Path('share', PACKAGE, 'package.xml'),
        Path('share', 'ament_index', 'resource_index', 'packages', PACKAGE),
        *(
            Path('share', PACKAGE, 'launch', path.name)
            for path in data_files('launch/*.launch.py')
        ),
        *(Path('share', PACKAGE, 'config', path.name) for path in data_files('config/*.yaml')),
        *(Path('lib', PACKAGE, name) for name in script_names()),
    ]
    missing = [str(path) for path in expected if not (install / path).exists()]
    assert not missing, f'colcon build did not install {missing}:\n{result.stdout}'
    for name in script_names():
        assert os.access(install / 'lib' / PACKAGE / name, os.X_OK), f'{name} is not executable'
