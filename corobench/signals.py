"""SIGINT, SIGTERM and SIGHUP stop a session the same way: the run in progress is killed (its
process group and cgroup), what finished is kept, the session reads `interrupted`.

The handler raises Interrupted in the main thread, where the harness waits for its programs; it
holds the signal back while a result is being written (`critical()`), so a finished run is never
half stored. Only the first signal stops anything: once stopping, later ones (a burst of Ctrl-C, a
SIGTERM after a SIGHUP) are noted and ignored, so that they cannot cut short the cleanup — killing
the run, ending the session, removing the bookkeeping — that the first one started.
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Iterator

from corobench.errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class SignalGuard:
    def __init__(self) -> None:
        self._depth = 0
        self._pending: int | None = None
        self._previous: dict[int, object] = {}
        self._previous_unraisable = None
        self.stopping: int | None = None  # the first signal, once one came

    def _handler(self, signum: int, frame) -> None:
        if self.stopping is not None:
            return  # already stopping: the cleanup must finish
        if self._depth:
            self._pending = signum  # raised when the write in progress is done
            return
        self.stopping = signum
        raise Interrupted(signum)

    def install(self) -> "SignalGuard":
        self._previous_unraisable = previous_hook = sys.unraisablehook
        sys.unraisablehook = lambda unraisable: _lost_interrupts_are_quiet(unraisable, previous_hook)
        for sig in STOP_SIGNALS:
            self._previous[sig] = previous = signal.signal(sig, self._handler)
            outer = getattr(previous, "__self__", None)
            if isinstance(outer, SignalGuard) and outer.stopping is not None and self.stopping is None:
                self.stopping = outer.stopping  # the process's guard caught one whose raise was lost
        return self

    def check(self) -> None:
        """Raise Interrupted for a stop signal whose exception Python swallowed: raised while a weakref
        callback or a __del__ runs (an import's module-lock cleanup, say), it is printed as "Exception
        ignored" and goes nowhere, and this guard then ignores the signals that follow. Called where
        work would go on (before a run starts, before a session is called finished), which an
        Interrupted that did propagate never reaches."""
        if self.stopping is not None:
            raise Interrupted(self.stopping)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()
        if self._previous_unraisable is not None:
            sys.unraisablehook, self._previous_unraisable = self._previous_unraisable, None

    @contextmanager
    def critical(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth and self._pending is not None and self.stopping is None:
                signum, self._pending = self._pending, None
                self.stopping = signum
                raise Interrupted(signum)


def _lost_interrupts_are_quiet(unraisable, previous_hook) -> None:
    """Python prints an exception it cannot raise (in a weakref callback, a __del__) as "Exception
    ignored … Traceback"; an Interrupted lost that way is not news: check() raises it again. Anything
    else goes to the hook that was there before."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    previous_hook(unraisable)


class ExitGuard(SignalGuard):
    """The whole process's handlers (the command line's `main`): outside a session the first stop
    signal raises Interrupted too, and a session's guard hands back to this one, so that a signal
    that arrives as a session ends is not Python's default KeyboardInterrupt or death."""
