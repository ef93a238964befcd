"""Plain parameter values -> numpy arrays and checked strings, with the parameter in errors."""

import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from wbc_control.exceptions import InvalidValue, WbcError
from wbc_control.tasks.task import as_axis_vector


@contextmanager
def parameter_errors(parameter: str) -> Iterator[None]:
    """Prefix the message of any WbcError raised inside with the parameter's name."""
    try:
        yield
    except WbcError as error:
        error.args = (f'{parameter}: {error}',)
        raise


def as_floats(value: object, what: str) -> np.ndarray:
    """A number or a list of numbers from a parameter value, as floats (bools and text refused).

    Raises:
        InvalidValue: the value is not numeric.
    """
    items = value if isinstance(value, list | tuple | array.array | np.ndarray) else [value]
    if any(isinstance(item, bool | np.bool_ | str | bytes) or item is None for item in items):
        raise InvalidValue(f'{what} must be a number or a list of numbers, got {value!r}')
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise InvalidValue(
            f'{what} must be a number or a list of numbers, got {value!r}'
        ) from error


def vector(value: object, size: int, what: str) -> np.ndarray:
    """A scalar (expanded) or exactly `size` finite numbers."""
    return as_axis_vector(as_floats(value, what), size, what)


def scalar(value: object, what: str) -> float:
    """One finite number."""
    number = as_floats(value, what)
    if number.ndim != 0 or not np.isfinite(number):
        raise InvalidValue(f'{what} must be one finite number, got {value!r}')
    return float(number)


def string_list(value: object, parameter: str) -> list[str]:
    """A list of strings (None: empty)."""
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise InvalidValue(f'{parameter}: must be a list of strings, got {value!r}')
    return list(value)


def duplicates(names: Sequence[str]) -> list[str]:
    """The names that occur more than once, sorted."""
    return sorted({name for name in names if names.count(name) > 1})
