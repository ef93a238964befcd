"""Reports a tick keeps the raw numbers of and builds only when they are read.

`wbc_control.control.controller_types.LazyReports` calls these with what the tick kept; read
the reports before the controller's next tick, which overwrites the buffers they come from.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from wbc_control.control.controller_types import level_reports


class LevelHealth(NamedTuple):
    """What `level_step` reports of a level's task inertia (`level_reports` reads it)."""

    condition_number: float
    rank: int
    damped: int


def level_health(levels: Sequence, generic_ranks: Sequence[int], stats: np.ndarray) -> tuple:
    """Level reports from the recursion's `(levels, 3)` stats rows (NaN: level not solved)."""
    inertias = [
        None if np.isnan(rank) else LevelHealth(condition, int(rank), int(damped))
        for condition, rank, damped in stats.tolist()
    ]
    return level_reports(levels, generic_ranks, inertias)
