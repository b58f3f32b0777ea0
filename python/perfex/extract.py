"""python3 -m perfex.extract: the documented entry of the command line (perfex.cli)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
