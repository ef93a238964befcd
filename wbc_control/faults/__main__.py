"""`python -m wbc_control.faults`: the `wbc_faults` console script."""

import sys

from wbc_control.faults.injection import main

if __name__ == '__main__':
    sys.exit(main())
