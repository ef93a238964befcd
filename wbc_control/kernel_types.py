"""Argument types of the compiled kernels' signatures (numba), one definition for all of them.

Inputs are read-only arrays of any layout (`MATRIX`, `VECTOR`, `INDEX`, `FLAGS`): a writable
array converts to that, M† and task terms may be frozen, and a task Jacobian may be a strided
view. Buffers a kernel writes are C-contiguous (`C_MATRIX`, `C_VECTOR`).
"""

from numba import boolean, float64, int64, types

MATRIX = types.Array(float64, 2, 'A', readonly=True)
VECTOR = types.Array(float64, 1, 'A', readonly=True)
INDEX = types.Array(int64, 1, 'A', readonly=True)
FLAGS = types.Array(boolean, 1, 'A', readonly=True)
C_MATRIX = float64[:, ::1]
C_VECTOR = float64[::1]
