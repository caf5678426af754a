"""The `corobench` command's first lines: a stop signal that arrives while Python is still loading
the command (before any session, file or process exists) ends it at once with 128 + the signal,
as every later one does, instead of Python's default death or a traceback from inside an import."""

import os
import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop_while_loading(signum: int, frame) -> None:
    os._exit(128 + signum)  # nothing exists yet that needs cleaning up


def run() -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop_while_loading)
    from corobench.cli import main

    main()
