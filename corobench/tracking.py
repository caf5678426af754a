"""What a session has running, recorded the moment it starts.

If the harness is killed outright (kill -9), the launcher's parent-death signal already stops the
run it was measuring; what may be left is an empty cgroup, or a process that moved out of reach.
So each process group and cgroup a run creates is recorded in the results database as it starts
and forgotten as it ends; the next corobench command finds a session whose harness is gone, kills
what is recorded for it, marks it `abandoned` and says so (see recovery.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class Tracker(Protocol):
    def started(self, what: str, ref: str, identity: str | None) -> None: ...

    def ended(self, what: str, ref: str) -> None: ...


current: Tracker | None = None  # set by `corobench run` for the session's lifetime


def started(what: str, ref: str, identity: str | None = None) -> None:
    if current is not None:
        current.started(what, ref, identity)


def ended(what: str, ref: str) -> None:
    if current is not None:
        current.ended(what, ref)


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "?"


def process_identity(pid: int) -> str | None:
    """Who a pid is: the boot and the process's start time (a reused pid has another), or None if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return f"{boot_id()}:{fields[19]}"  # field 22 of /proc/PID/stat: start time in clock ticks
