"""corobench for python-asyncio: asyncio's default event loop (see ../common/cbaio.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))

import cbaio  # noqa: E402

if __name__ == "__main__":
    cbaio.main("python-asyncio", loop_factory=None)
