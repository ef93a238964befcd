"""Reports a tick keeps the raw numbers of and builds only when they are read.

`wbc_control.control.controller_types.LazyReports` calls these with what the tick kept; read
the reports before the controller's next tick, which overwrites the buffers they come from.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from wbc_control.control.controller_types import level_reports


class LevelHealth(NamedTuple):
    """A level's conditioning as the cascade saw it (`level_reports` reads it)."""

    condition_number: float
    rank: int
    damped: int


def level_health(
    levels: Sequence,
    generic_ranks: Sequence[int],
    weights: Sequence,
    residual: np.ndarray,
    offsets: np.ndarray,
) -> tuple:
    """Level reports from the cascade's per-level weights and the stack's residual.

    `weights` are `cascade.LevelWeights` (a level the cascade did not reach has none);
    `residual` `(R,)` is the achieved minus commanded task acceleration, level k's rows
    `offsets[k]:offsets[k + 1]`.
    """
    healths = [
        LevelHealth(level.condition, level.directions - level.weak, level.weak)
        for level in weights
    ]
    healths += [LevelHealth(np.inf, 0, 0)] * (len(levels) - len(healths))
    norms = [
        float(np.linalg.norm(residual[offsets[k] : offsets[k + 1]])) for k in range(len(levels))
    ]
    return level_reports(levels, generic_ranks, healths, norms)
