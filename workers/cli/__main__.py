"""`python -m workers.cli`: the same as the `perfdash` script."""

import sys

from workers.cli.main import main

sys.exit(main())
