"""The `wbc_out_of_reach` console script (wbc_control/sim/out_of_reach.py) under its old path.

Kept until test/sim/test_out_of_reach_tool.py names the console script.
"""

import sys

from wbc_control.sim.out_of_reach import main

if __name__ == '__main__':
    sys.exit(main())
