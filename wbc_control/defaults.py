"""The core's defaults, read from the nodes' parameter schemas, their one source.

A library caller of the core (a joint-state decoder, the conditioning monitor) gets the
defaults a node gets. Read with yaml alone: the schema loader (:mod:`wbc_control.config.schema`)
sits above the core and imports it.
"""

from functools import cache
from pathlib import Path

import yaml

SCHEMA_DIR = Path(__file__).resolve().parent / 'config'


@cache
def _parameters(schema: str) -> dict:
    text = (SCHEMA_DIR / f'{schema}_parameters.yaml').read_text(encoding='utf-8')
    return yaml.safe_load(text)[schema]


def schema_default(schema: str, name: str) -> object:
    """The ``default_value`` of parameter `name` in ``config/<schema>_parameters.yaml``.

    A name in a group or a map is its path in the file, e.g.
    ``tasks.__map_task_names.max_integral``.
    """
    entry = _parameters(schema)
    for key in name.split('.'):
        entry = entry[key]
    return entry['default_value']
