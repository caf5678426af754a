"""cgroup v1 memory accounting: one child cgroup per run, whose peak counts every process in it.

wait4's ru_maxrss sees only the largest single process; a runtime that forks helpers (or a
wrapper script that execs a VM) is counted fully only by the cgroup. Where the machine does not
let us create a cgroup, runs still happen and the cgroup column stays empty.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
PARENT_NAME = "corobench"


class MemoryCgroup:
    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, name: str) -> "MemoryCgroup | None":
        """A fresh child cgroup, or None where cgroup v1 memory accounting is not usable."""
        parent = MEMORY_ROOT / PARENT_NAME
        try:
            parent.mkdir(exist_ok=True)
            path = parent / name
            if path.exists():
                cls(path).remove()
            path.mkdir()
            return cls(path)
        except OSError:
            return None

    def join_self(self) -> None:
        """Move the calling process into the cgroup (called in the child before exec)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_bytes(self) -> int | None:
        try:
            return int((self.path / "memory.max_usage_in_bytes").read_text())
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill_all(self) -> None:
        """SIGKILL everything still inside, including processes that left our process group."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def remove(self) -> None:
        for _ in range(50):
            self.kill_all()
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                import time
                time.sleep(0.02)


def usable() -> tuple[bool, str]:
    """Whether this process can create a memory cgroup, and why not."""
    if not (MEMORY_ROOT / "memory.max_usage_in_bytes").exists():
        return False, "no cgroup v1 memory controller at /sys/fs/cgroup/memory"
    probe = MemoryCgroup.create(f"probe-{os.getpid()}")
    if probe is None:
        return False, "cannot create a child memory cgroup (not root, or read-only cgroupfs)"
    probe.remove()
    return True, "cgroup v1 memory accounting usable"
