"""The shipped parameter files (`config/*.yaml`): where they are and what they set.

The demo and the benchmark start from these files and override only what a scenario changes,
so that a shipped value lives in one place. A file is found in the installed share directory
(pip's prefix, then each colcon prefix of AMENT_PREFIX_PATH) or in the source tree.
"""

from collections.abc import Mapping
import os
from pathlib import Path
import sys

import yaml

from wbc_control.exceptions import ModelError

PACKAGE = 'wbc_control'


def shipped_config(name: str) -> Path:
    """The shipped `config/<name>`.

    Raises:
        ModelError: no such file installed or in the source tree.
    """
    prefixes = [sys.prefix, *filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(':'))]
    candidates = [Path(prefix) / 'share' / PACKAGE / 'config' / name for prefix in prefixes]
    candidates.append(Path(__file__).resolve().parents[2] / 'config' / name)
    for path in candidates:
        if path.is_file():
            return path
    raise ModelError(f'no shipped config/{name} (looked in {", ".join(map(str, candidates))})')


def node_parameters(path: Path, node: str) -> dict:
    """The `ros__parameters` for `node` in a params file: `node`, `/node`, `/**` or the only one.

    Raises:
        ModelError: the file has no section for `node`.
    """
    document = yaml.safe_load(Path(path).read_text(encoding='utf-8')) or {}
    sections = {
        name: value['ros__parameters']
        for name, value in document.items()
        if isinstance(value, dict) and 'ros__parameters' in value
    }
    for name in (node, f'/{node}', '/**'):
        if name in sections:
            return dict(sections[name])
    if len(sections) == 1:
        return dict(next(iter(sections.values())))
    raise ModelError(f"{path}: no '{node}: ros__parameters:' section")


def shipped_parameters(name: str, node: str, overrides: Mapping[str, object] = ()) -> dict:
    """The parameters of shipped `config/<name>` for `node`, with `overrides` applied.

    An override replaces a parameter, except `tasks`, whose entries replace whole tasks; the
    tasks not in the resulting `task_names` are dropped.
    """
    parameters = node_parameters(shipped_config(name), node)
    overrides = dict(overrides)
    tasks = {**parameters.get('tasks', {}), **overrides.pop('tasks', {})}
    parameters.update(overrides)
    if 'task_names' in parameters:
        parameters['tasks'] = {t: tasks[t] for t in parameters['task_names'] if t in tasks}
    return parameters
