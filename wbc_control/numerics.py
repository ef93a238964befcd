"""numpy's compiled routines without their Python wrappers, resolved once, here.

`np.einsum` dispatches through two Python functions before it reaches the compiled
`c_einsum`; a tick calls it a few times per level and per contact cone, where that wrapper
costs more than the product itself. Used by the cascade's stages (`control.hierarchy`) and the
contact cones (`control.constraints.closed_cones`).
"""

import numpy as np

try:  # numpy 2's compiled einsum, which np.einsum calls after a dispatch and a Python wrapper
    from numpy._core.multiarray import c_einsum as einsum
except ImportError:  # pragma: no cover - numpy 1 (the same function, called through np.einsum)
    einsum = np.einsum

__all__ = ['einsum']
