"""`python3 scripts/bench [options]`: runs the benchmark (the package's
docstring says what it measures; `--help` lists the options)."""

import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as `python3 scripts/bench`: the package's parent on the path, in
    # place of the package's own directory (whose module names would shadow
    # others'), then the package imported by name.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    from bench.cli import run_cli
else:
    from .cli import run_cli

sys.exit(run_cli())
