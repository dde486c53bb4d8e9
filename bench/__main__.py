"""`python3 bench [options]`: runs the benchmark (the harness package's
docstring says what it measures; `--help` lists the options)."""

import sys

# Run as `python3 bench`: this directory is on the path, so its package
# `harness` imports by name.
from harness.cli import run_cli

sys.exit(run_cli())
