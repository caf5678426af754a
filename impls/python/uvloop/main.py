"""corobench for python-uvloop: the same code as python-asyncio on uvloop's event loop."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))

import cbaio  # noqa: E402
import uvloop  # noqa: E402

if __name__ == "__main__":
    cbaio.main("python-uvloop", loop_factory=uvloop.new_event_loop)
