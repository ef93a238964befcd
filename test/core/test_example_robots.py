"""Finding example-robot-data: $EXAMPLE_ROBOT_DATA_DIR first, then the pip package."""

from pathlib import Path

import pytest
from robots import example_urdf

from wbc_control.exceptions import ModelError
from wbc_control.model.example_robots import example_robot_urdf, robots_directory


def test_the_environment_variable_wins(monkeypatch, tmp_path: Path) -> None:
    urdf = tmp_path / 'panda_description' / 'urdf' / 'panda.urdf'
    urdf.parent.mkdir(parents=True)
    urdf.write_text('<robot name="mine"/>')
    monkeypatch.setenv('EXAMPLE_ROBOT_DATA_DIR', str(tmp_path))
    assert robots_directory() == tmp_path
    assert example_robot_urdf('panda') == (urdf, False)


def test_a_variable_naming_no_directory_is_one_clear_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv('EXAMPLE_ROBOT_DATA_DIR', str(tmp_path / 'nope'))
    with pytest.raises(ModelError, match='EXAMPLE_ROBOT_DATA_DIR=.*nope is not a directory'):
        robots_directory()


def test_the_pip_package_without_the_variable(monkeypatch) -> None:
    monkeypatch.delenv('EXAMPLE_ROBOT_DATA_DIR', raising=False)
    path, floating_base = example_urdf('solo12')
    assert path.is_file() and floating_base


def test_an_unknown_robot_names_the_known_ones() -> None:
    with pytest.raises(ModelError, match="unknown example robot 'nope'; known: g1, panda"):
        example_robot_urdf('nope')
