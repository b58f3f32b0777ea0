"""python3 -m perfex: the command line (perfex.cli), the same as python3 -m perfex.extract."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python3 -m perfex"))
