"""`python -m analyzer` runs the command line."""

import sys

from analyzer.cli import main

sys.exit(main())
