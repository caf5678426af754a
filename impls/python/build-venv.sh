#!/bin/sh
# Builds impls/python/.venv, shared by python-asyncio and python-uvloop: the PyPI packages of
# requirements.txt (httptools for the http server, uvloop for python-uvloop). Safe to run again.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv --copies "$venv"
fi
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$here/requirements.txt"
"$venv/bin/python" -c "import httptools, uvloop, sys; sys.stdout.write('httptools ' + httptools.__version__ + ', uvloop ' + uvloop.__version__ + '\n')"
touch "$venv/deps.ok"
