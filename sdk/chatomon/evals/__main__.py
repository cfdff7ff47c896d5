"""`python -m chatomon.evals`: see `chatomon.evals.cli`."""

import sys

from chatomon.evals.cli import main

if __name__ == "__main__":
    sys.exit(main())
