"""The manifests' `info` command: one line of the runtime settings that shape the figures.

Usage: python cbinfo.py asyncio|uvloop
"""

import asyncio
import gc
import os
import platform
import sys

if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "asyncio"
    if kind == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
        name = f"uvloop {uvloop.__version__} ({type(loop).__module__}.{type(loop).__name__})"
    else:
        loop = asyncio.new_event_loop()
        selector = getattr(loop, "_selector", None)
        name = f"asyncio {type(loop).__name__}" + (f" ({type(selector).__name__})" if selector else "")
    loop.close()
    import httptools

    workers = min(32, (os.cpu_count() or 1) + 4)
    sys.stdout.write(
        f"{platform.python_implementation()} {platform.python_version()}, event loop {name}, "
        f"default executor max_workers {workers}, gc thresholds {gc.get_threshold()}, "
        f"httptools {httptools.__version__}\n"
    )
