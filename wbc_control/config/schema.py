"""Declarative parameter schemas: one YAML file per node says every parameter once.

The files (``<node>_parameters.yaml`` beside this module) follow the format of
generate_parameter_library (ros2_controllers' parameter files): each parameter has a ``type``, a
``default_value``, a ``description``, ``read_only`` and optional ``validation`` rules; a
``__map_<list>`` level describes one group of parameters per entry of the list parameter
``<list>`` (``tasks.__map_task_names.kp`` is ``tasks.<name>.kp`` for every name in
``task_names``). Two extensions: ``dynamic_typing: true`` for values that may be a scalar or a
list (gains), and a top-level ``include`` naming other schema files whose parameters the node
also declares (the robot-model parameters every node shares). As in generate_parameter_library, a
nested group of parameters is named with dots: ``payload: {mass: {...}}`` is ``payload.mass``.

From a schema the ros layer declares the node's parameters and refuses unknown names; this
module checks values against the declared rules, names the closest parameter to a misspelt one,
and renders the reference tables of docs/parameters.md. It never imports rclpy.

Validation rules (generate_parameter_library names): ``gt<>``, ``gt_eq<>``, ``lt<>``,
``lt_eq<>``, ``bounds<>`` (inclusive), ``one_of<>`` (a list of choices), ``not_empty<>``.
Rules apply to a scalar and to every element of an array.
"""

import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
import difflib
from functools import cache
import math
from pathlib import Path

import yaml

from wbc_control.exceptions import InvalidValue

SCHEMA_DIR = Path(__file__).resolve().parent
MAP_PREFIX = '__map_'
SCALAR_TYPES = ('bool', 'int', 'double', 'string')
ARRAY_TYPES = ('bool_array', 'int_array', 'double_array', 'string_array')
_ELEMENT_WORDS = {
    'bool': 'a bool',
    'int': 'an integer',
    'double': 'a number',
    'string': 'a string',
}
_RULES = ('gt<>', 'gt_eq<>', 'lt<>', 'lt_eq<>', 'bounds<>', 'one_of<>', 'not_empty<>')


class SchemaError(ValueError):
    """A schema file is malformed (a bug in the package, not a user error)."""


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter as the schema declares it.

    Attributes:
        name: full name; inside a map, ``<group>.<key>.<field>`` with the key left as ``{key}``.
        type: one of :data:`SCALAR_TYPES` or :data:`ARRAY_TYPES`.
        default: the default value, or None for "not set" (the parameter is declared by type).
        description: one line for ``ros2 param describe`` and the docs.
        read_only: True for structural parameters (fixed at start-up).
        dynamic_typing: True when the value may also be a scalar of the element type.
        validation: rule name -> arguments, as in the YAML file.
    """

    name: str
    type: str
    default: object
    description: str
    read_only: bool
    dynamic_typing: bool = False
    validation: Mapping[str, tuple] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        """Whether the parameter may change at runtime."""
        return not self.read_only

    def check(self, value: object, name: str | None = None) -> object:
        """Check `value` against the type and the validation rules; returns it unchanged.

        None (not set) passes: whether a parameter is required is the configuration's rule.

        Raises:
            InvalidValue: the message starts with the parameter's name.
        """
        name = name or self.name
        if value is None:
            return value
        items = _elements(value, self.type, self.dynamic_typing, name)
        for rule, arguments in self.validation.items():
            _apply_rule(rule, arguments, value, items, name)
        return value


def _elements(value: object, kind: str, dynamic: bool, name: str) -> list:
    element = kind.removesuffix('_array')
    # rclpy gives a live array parameter as an array.array
    is_list = isinstance(value, list | tuple | array.array)
    if kind in ARRAY_TYPES:
        if not is_list and not dynamic:
            raise InvalidValue(f'{name}: must be a list of {element} values, got {value!r}')
        items = list(value) if is_list else [value]
    else:
        if is_list:
            raise InvalidValue(f'{name}: must be one {element} value, got {value!r}')
        items = [value]
    for item in items:
        if not _is_type(item, element):
            raise InvalidValue(f'{name}: {item!r} is not {_ELEMENT_WORDS[element]}')
    return items


def _is_type(item: object, element: str) -> bool:
    if element == 'bool':
        return isinstance(item, bool)
    if element == 'string':
        return isinstance(item, str)
    if isinstance(item, bool):
        return False
    if element == 'int':
        return isinstance(item, int)
    return isinstance(item, int | float)


def _apply_rule(rule: str, arguments: tuple, value: object, items: list, name: str) -> None:
    if rule == 'not_empty<>':
        if not items or items == ['']:
            raise InvalidValue(f'{name}: must not be empty')
        return
    if rule == 'one_of<>':
        choices = arguments[0]
        bad = [item for item in items if item not in choices]
        if bad:
            raise InvalidValue(
                f'{name}: must be one of {", ".join(map(str, choices))}, got {value!r}'
            )
        return
    numbers = [float(item) for item in items]
    if any(math.isnan(number) for number in numbers):
        raise InvalidValue(f'{name}: must be a number, got {value!r}')
    checks = {
        'gt<>': (lambda x, a: x > a[0], 'must be > {0}'),
        'gt_eq<>': (lambda x, a: x >= a[0], 'must be >= {0}'),
        'lt<>': (lambda x, a: x < a[0], 'must be < {0}'),
        'lt_eq<>': (lambda x, a: x <= a[0], 'must be <= {0}'),
        'bounds<>': (lambda x, a: a[0] <= x <= a[1], 'must be in [{0}, {1}]'),
    }
    test, requirement = checks[rule]
    if not all(test(number, arguments) for number in numbers):
        raise InvalidValue(f'{name}: {requirement.format(*arguments)}, got {value!r}')


@dataclass(frozen=True)
class ParameterMap:
    """A ``__map_<list>`` group: ``<group>.<key>.<field>`` for every key in the list parameter."""

    group: str
    key_list: str
    fields: Mapping[str, ParameterSpec]

    def parameter(self, key: str, field_name: str) -> str:
        """The full name of one field of one key, e.g. ``tasks.hand.kp``."""
        return f'{self.group}.{key}.{field_name}'


@dataclass(frozen=True)
class ParameterSchema:
    """Every parameter of one node: plain parameters and mapped groups."""

    node: str
    parameters: Mapping[str, ParameterSpec]
    maps: Mapping[str, ParameterMap]

    def __iter__(self):
        return iter(self.parameters.values())

    def __getitem__(self, name: str) -> ParameterSpec:
        return self.parameters[name]

    def lookup(self, name: str) -> ParameterSpec | None:
        """The spec of a full parameter name (``tasks.<key>.<field>`` included), or None."""
        if name in self.parameters:
            return self.parameters[name]
        group, _, rest = name.partition('.')
        key, _, field_name = rest.partition('.')
        mapped = self.maps.get(group)
        if mapped is None or not key or '.' in field_name:
            return None
        return mapped.fields.get(field_name)

    def names(self, keys: Mapping[str, Iterable[str]] | None = None) -> list[str]:
        """Every full parameter name, with each map expanded over ``keys[group]``."""
        names = list(self.parameters)
        for group, mapped in self.maps.items():
            for key in (keys or {}).get(group, ()):
                names += [mapped.parameter(key, field_name) for field_name in mapped.fields]
        return names

    def closest(self, name: str, candidates: Iterable[str]) -> str | None:
        """The declared name most like a misspelt one (difflib), or None."""
        matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
        return matches[0] if matches else None

    def check(self, name: str, value: object) -> object:
        """Check one value by full name.

        Raises:
            InvalidValue: unknown name (with the closest known one) or a rule broken.
        """
        spec = self.lookup(name)
        if spec is None:
            raise InvalidValue(unknown_parameter_message(name, self.closest(name, self.names())))
        return spec.check(value, name)


def unknown_parameter_message(name: str, closest: str | None) -> str:
    """One line naming an undeclared parameter and the declared name it most resembles."""
    hint = f"; did you mean '{closest}'?" if closest else ''
    return f"unknown parameter '{name}'{hint}"


@cache
def load_schema(node: str) -> ParameterSchema:
    """The schema of `node` (``<node>_parameters.yaml``, with its includes).

    Raises:
        SchemaError: the file is missing or malformed.
    """
    path = SCHEMA_DIR / f'{node}_parameters.yaml'
    try:
        document = yaml.safe_load(path.read_text(encoding='utf-8'))
    except (OSError, yaml.YAMLError) as error:
        raise SchemaError(f'cannot read the parameter schema {path}: {error}') from error
    if not isinstance(document, dict) or node not in document:
        raise SchemaError(f'{path}: the top level must be the node name {node!r}')
    parameters: dict[str, ParameterSpec] = {}
    for included in document.get('include', ()):
        parameters.update(load_schema(included).parameters)
    maps: dict[str, ParameterMap] = {}
    for name, entry in _flattened(document[node]):
        mapped = _map_of(name, entry)
        if mapped is not None:
            maps[name] = mapped
        else:
            parameters[name] = _spec(name, entry, path)
    return ParameterSchema(node, parameters, maps)


def _flattened(body: Mapping, prefix: str = '') -> Iterable[tuple[str, object]]:
    """(full name, entry) of every parameter and map, a nested group's names joined by '.'."""
    for name, entry in body.items():
        if _is_group(entry):
            yield from _flattened(entry, f'{prefix}{name}.')
        else:
            yield f'{prefix}{name}', entry


def _is_group(entry: object) -> bool:
    """A nested group: entries that are neither a parameter (it has a type) nor a map."""
    return (
        isinstance(entry, dict)
        and bool(entry)
        and 'type' not in entry
        and all(isinstance(value, dict) for value in entry.values())
        and not any(str(key).startswith(MAP_PREFIX) for key in entry)
    )


def _map_of(group: str, entry: object) -> ParameterMap | None:
    if not isinstance(entry, dict) or len(entry) != 1:
        return None
    ((key, fields),) = entry.items()
    if not key.startswith(MAP_PREFIX):
        return None
    key_list = key.removeprefix(MAP_PREFIX)
    specs = {
        name: _spec(f'{group}.{{key}}.{name}', value, SCHEMA_DIR) for name, value in fields.items()
    }
    return ParameterMap(group, key_list, specs)


def _spec(name: str, entry: object, path: Path) -> ParameterSpec:
    if not isinstance(entry, dict) or 'type' not in entry or 'description' not in entry:
        raise SchemaError(f'{path}: {name} needs at least a type and a description')
    kind = entry['type']
    if kind not in SCALAR_TYPES + ARRAY_TYPES:
        raise SchemaError(f'{path}: {name} has an unknown type {kind!r}')
    validation = {
        rule: tuple(arguments) for rule, arguments in entry.get('validation', {}).items()
    }
    unknown = sorted(set(validation) - set(_RULES))
    if unknown:
        raise SchemaError(f'{path}: {name} has unknown validation rules {unknown}')
    return ParameterSpec(
        name=name,
        type=kind,
        default=entry.get('default_value'),
        description=' '.join(str(entry['description']).split()),
        read_only=bool(entry.get('read_only', False)),
        dynamic_typing=bool(entry.get('dynamic_typing', False)),
        validation=validation,
    )


def markdown_table(schema: ParameterSchema) -> str:
    """The reference table of a node's parameters (docs/parameters.md is made of these)."""
    rows = ['| parameter | type | default | at runtime | description |', '|---|---|---|---|---|']
    specs = list(schema) + [
        spec for mapped in schema.maps.values() for spec in mapped.fields.values()
    ]
    for spec in specs:
        name = spec.name.replace('{key}', '<name>')
        kind = spec.type + (' or scalar' if spec.dynamic_typing else '')
        default = '(unset)' if spec.default is None else f'`{spec.default!r}`'
        runtime = 'read-only' if spec.read_only else 'live'
        rules = _rules_text(spec)
        text = f'{spec.description}{rules}'.replace('|', '\\|')
        rows.append(f'| `{name}` | {kind} | {default} | {runtime} | {text} |')
    return '\n'.join(rows)


def _rules_text(spec: ParameterSpec) -> str:
    words = {'gt<>': '>', 'gt_eq<>': '>=', 'lt<>': '<', 'lt_eq<>': '<='}
    parts = []
    for rule, arguments in spec.validation.items():
        if rule in words:
            parts.append(f'{words[rule]} {arguments[0]}')
        elif rule == 'bounds<>':
            parts.append(f'in [{arguments[0]}, {arguments[1]}]')
        elif rule == 'one_of<>':
            parts.append('one of ' + ', '.join(f'`{choice}`' for choice in arguments[0]))
        elif rule == 'not_empty<>':
            parts.append('not empty')
    return f' ({"; ".join(parts)})' if parts else ''
