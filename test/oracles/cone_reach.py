"""How far a cone C f ≤ 0 reaches, by linear programs: the oracle of its closed test.

`cone_reach` is the largest |f_j| over the cone and the unit box, 0 exactly where the cone
is {0} (what `wbc_control.control.constraints.closed_cones.closed` decides without an LP).
"""

import numpy as np
from scipy.optimize import linprog


def cone_reach(cone: np.ndarray) -> float:
    """The largest |f_j| over C f ≤ 0 and the unit box: 0 exactly where the cone is {0}."""
    size = cone.shape[1]
    return max(
        -linprog(
            -sign * np.eye(size)[j], A_ub=cone, b_ub=np.zeros(cone.shape[0]),
            bounds=[(-1.0, 1.0)] * size, method='highs',
        ).fun
        for j in range(size)
        for sign in (1.0, -1.0)
    )  # fmt: skip
