#!/bin/sh
# Builds impls/python/.venv with uvloop for python-uvloop. Safe to run again.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv --copies "$venv"
fi
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$here/requirements-uvloop.txt"
"$venv/bin/python" -c "import uvloop, sys; sys.stdout.write('uvloop ' + uvloop.__version__ + '\n')"
touch "$venv/uvloop.ok"
