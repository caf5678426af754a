"""SIGINT, SIGTERM and SIGHUP stop a session the same way: the run in progress is killed (its
process group and cgroup), what finished is kept, the session reads `interrupted`.

The handler raises Interrupted in the main thread, where the harness waits for its programs; it
holds the signal back while a result is being written (`critical()`), so a finished run is never
half stored.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Iterator

from corobench.errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class SignalGuard:
    def __init__(self) -> None:
        self._depth = 0
        self._pending: int | None = None
        self._previous: dict[int, object] = {}

    def _handler(self, signum: int, frame) -> None:
        if self._depth:
            self._pending = signum  # raised when the write in progress is done
            return
        raise Interrupted(signum)

    def install(self) -> "SignalGuard":
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()

    @contextmanager
    def critical(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth and self._pending is not None:
                signum, self._pending = self._pending, None
                raise Interrupted(signum)
