"""Launch files: valid Python, and every executable and config file they name exists.

Checked statically here, without launch / launch_ros; test_launch_run.py runs them.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((ROOT / 'launch').glob('*.launch.py'))


def console_scripts() -> set[str]:
    tree = ast.parse((ROOT / 'setup.py').read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == (
            'CONSOLE_SCRIPTS'
        ):
            return {entry.split('=')[0].strip() for entry in ast.literal_eval(node.value)}
    raise AssertionError('setup.py has no CONSOLE_SCRIPTS list')


def calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == name
    ]


def keyword(call: ast.Call, name: str):
    for item in call.keywords:
        if item.arg == name and isinstance(item.value, ast.Constant):
            return item.value.value
    return None


def test_there_are_launch_files():
    names = {path.name for path in LAUNCH_FILES}
    assert {'wbc_control.launch.py', 'wbc_sim.launch.py', 'wbc_gazebo.launch.py'} <= names


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_defines_generate_launch_description(path):
    tree = ast.parse(path.read_text())
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert 'generate_launch_description' in functions
    compile(tree, str(path), 'exec')


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_wbc_executable_is_a_console_script(path):
    scripts = console_scripts()
    tree = ast.parse(path.read_text())
    for call in calls(tree, 'Node'):
        package = keyword(call, 'package')
        executable = keyword(call, 'executable')
        if package in ('wbc_control', None) and executable and executable.startswith('wbc_'):
            assert executable in scripts, f'{path.name} starts {executable}, not installed'
    # wbc_node('wbc_sim', ...): the helper of wbc_control.launch.py that the others reuse.
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or 'wbc_node' not in (
            getattr(node.func, 'id', None),
            getattr(node.func, 'attr', None),
        ):
            continue
        executable = node.args[0].value
        assert executable in scripts, f'{path.name} starts {executable}, not installed'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_named_config_and_launch_file_exists(path):
    tree = ast.parse(path.read_text())
    robots = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == 'ROBOTS':
            robots = ast.literal_eval(node.value)
    for constant in ast.walk(tree):
        if not isinstance(constant, ast.Constant) or not isinstance(constant.value, str):
            continue
        value = constant.value
        if value.endswith(('.yaml', '.rviz')) and not value.startswith('_'):
            assert (ROOT / 'config' / value).is_file(), f'{path.name} names config/{value}'
        elif value.startswith('_') and value.endswith('.yaml'):
            for robot in robots:
                assert (ROOT / 'config' / f'{robot}{value}').is_file(), (
                    f'{path.name} needs config/{robot}{value}'
                )
        elif value.endswith('.launch.py') and 'wbc' in value:
            assert (ROOT / 'launch' / value).is_file()
