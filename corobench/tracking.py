"""What a session has running, recorded the moment it starts — on this host or any other.

If the harness is killed outright (kill -9), the launcher's parent-death signal already stops the
local run it was measuring and a remote load generator stops when its ssh channel closes; what may
be left is an empty cgroup, a process that moved out of reach, or a host that lost the connection.
So each process group, cgroup and remote process a run creates is recorded as it starts and
forgotten as it ends (bookkeeping.py keeps the records on disk); the next corobench command finds
a session whose harness is gone, kills what is recorded for it, and says so (recovery.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class Tracker(Protocol):
    def started(self, host: str, what: str, ref: str, identity: str | None, reach: dict | None) -> None: ...

    def ended(self, host: str, what: str, ref: str) -> None: ...


current: Tracker | None = None  # set by `corobench run` for the session's lifetime


def started(host: str, what: str, ref: str, identity: str | None = None, reach: dict | None = None) -> None:
    """Record a process group (`pgid`), cgroup or remote process (`pid`) of `host` as running;
    `reach` says how to get to a remote host again (its ssh destination and options)."""
    if current is not None:
        current.started(host, what, ref, identity, reach)


def ended(host: str, what: str, ref: str) -> None:
    if current is not None:
        current.ended(host, what, ref)


def boot_id(proc: Path = Path("/proc")) -> str:
    try:
        return (proc / "sys/kernel/random/boot_id").read_text().strip()
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
