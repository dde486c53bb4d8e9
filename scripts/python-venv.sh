#!/usr/bin/env bash
# The Python client package's virtual environment, tmp/python-client/venv:
# its dependencies, and the tools that build it (make dist-python) and test
# it as installed (make test installs the wheel from dist/ into it), pinned
# in clients/python/requirements-test.txt. Run by scripts/deps.sh --test and
# by make dist-python; it downloads only when that file changed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    echo "Python's venv is missing: run scripts/deps.sh --test as root, or" >&2
    echo "    sudo apt-get install -y --no-install-recommends python3-venv" >&2
    exit 1
fi
PYVENV=tmp/python-client/venv
PYREQ=clients/python/requirements-test.txt
if ! cmp -s "$PYREQ" "$PYVENV/.installed-from" || [ ! -x "$PYVENV/bin/pytest" ]; then
    echo "Making the Python package's virtual environment ($PYREQ) in $PYVENV ..."
    rm -rf "$PYVENV"
    mkdir -p "$(dirname "$PYVENV")"
    python3 -m venv "$PYVENV"
    "$PYVENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PYREQ"
    cp "$PYREQ" "$PYVENV/.installed-from"
fi
