"""One memory cgroup per run, on cgroup v1 or v2, whose peak counts every process of the run.

wait4's ru_maxrss sees only the largest single process; a runtime that forks helpers (or a
wrapper script that execs a VM) is counted fully only by the cgroup. The launcher (launcher.c)
moves the program into the cgroup between fork and exec. Where the machine does not let us
create a cgroup, runs still happen and the cgroup column stays empty — never a wrong figure.

- v1 (the memory controller mounted at /sys/fs/cgroup/memory): memory.max_usage_in_bytes.
- v2 (the unified hierarchy at /sys/fs/cgroup, what current Debian and Ubuntu mount): the memory
  controller enabled for our subtree; memory.peak where the kernel has it (5.19+), else the
  highest memory.current seen by whoever samples the run; cpu.stat usage; cgroup.kill (5.14+).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from corobench import tracking

CGROUP_BASE = Path("/sys/fs/cgroup")
PARENT_NAME = "corobench"


@dataclass(frozen=True)
class Hierarchy:
    """Where this machine keeps memory cgroups: version 1 or 2, and the folder runs go under."""

    version: int
    root: Path  # v1: the memory controller's mount; v2: the unified mount

    @property
    def parent(self) -> Path:
        return self.root / PARENT_NAME


def detect(base: Path = CGROUP_BASE) -> Hierarchy | None:
    """The memory cgroup hierarchy in use, v1 first (a hybrid machine accounts memory there)."""
    if (base / "memory" / "memory.max_usage_in_bytes").exists():
        return Hierarchy(1, base / "memory")
    controllers = base / "cgroup.controllers"
    try:
        if "memory" in controllers.read_text().split():
            return Hierarchy(2, base)
    except OSError:
        pass
    return None


def _write(path: Path, text: str) -> None:
    # cgroupfs files are written with one write(2); O_NOFOLLOW: a planted symlink is not followed
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _prepare_parent(h: Hierarchy) -> None:
    h.parent.mkdir(exist_ok=True)
    if h.version == 2:
        # v2 charges memory only where the parent enables the controller for its children
        for level in (h.root, h.parent):
            control = level / "cgroup.subtree_control"
            if "memory" not in control.read_text().split():
                _write(control, "+memory")


class RunCgroup:
    """The cgroup of one run."""

    def __init__(self, path: Path, version: int):
        self.path = path
        self.version = version
        self.sampled_peak: int | None = None  # v2 without memory.peak: the sampler keeps this

    @classmethod
    def create(cls, name: str, hierarchy: Hierarchy | None = None) -> "RunCgroup | None":
        """A fresh child cgroup, or None where memory cgroups are not usable here."""
        h = hierarchy if hierarchy is not None else detect()
        if h is None:
            return None
        try:
            _prepare_parent(h)
            path = h.parent / name
            if path.exists():
                cls(path, h.version).remove()
        except OSError:
            return None
        tracking.started("local", "cgroup", str(path))  # recorded before it exists: never one unrecorded
        try:
            path.mkdir()
        except OSError:
            tracking.ended("local", "cgroup", str(path))
            return None
        return cls(path, h.version)

    def _read_int(self, name: str) -> int | None:
        try:
            return int((self.path / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def current_bytes(self) -> int | None:
        return self._read_int("memory.usage_in_bytes" if self.version == 1 else "memory.current")

    def note_sample(self) -> int | None:
        """Read the current usage and keep the highest seen (v2 kernels without memory.peak)."""
        now = self.current_bytes()
        if now is not None and (self.sampled_peak is None or now > self.sampled_peak):
            self.sampled_peak = now
        return now

    def has_peak_file(self) -> bool:
        return (self.path / ("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak")).exists()

    def peak_bytes(self) -> int | None:
        if self.version == 1:
            return self._read_int("memory.max_usage_in_bytes")
        peak = self._read_int("memory.peak")
        return peak if peak is not None else self.sampled_peak

    def cpu_seconds(self) -> float | None:
        """CPU time of everything in the cgroup (v2 cpu.stat; the v1 memory cgroup has none)."""
        if self.version != 2:
            return None
        try:
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def oom_kills(self) -> int:
        """Processes of this cgroup the kernel's OOM killer ended (v1 memory.oom_control, v2
        memory.events: both count global and cgroup OOM kills of its members)."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill_all(self) -> None:
        """SIGKILL everything still inside, including processes that left the process group."""
        if self.version == 2 and (self.path / "cgroup.kill").exists():
            try:
                _write(self.path / "cgroup.kill", "1")
                return
            except OSError:
                pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def remove(self) -> bool:
        """Kill what is left and remove the cgroup; False when it could not be removed.

        A killed process leaves its cgroup only once it has fully exited, which on a loaded
        machine can take a while: keep trying for up to 10 s."""
        for _ in range(500):
            self.kill_all()
            try:
                self.path.rmdir()
                tracking.ended("local", "cgroup", str(self.path))
                return True
            except FileNotFoundError:
                tracking.ended("local", "cgroup", str(self.path))
                return True
            except OSError:
                time.sleep(0.02)
        return False


def usable() -> tuple[bool, str]:
    """Whether this process can create a memory cgroup, which version, and why not."""
    h = detect()
    if h is None:
        return False, "no memory cgroup controller (neither v1 at /sys/fs/cgroup/memory nor v2 with memory)"
    probe = RunCgroup.create(f"probe-{os.getpid()}", h)
    if probe is None:
        return False, f"cgroup v{h.version}: cannot create a child memory cgroup under {h.parent} (not root, " \
                      "or read-only cgroupfs)"
    detail = "memory.max_usage_in_bytes" if h.version == 1 else (
        "memory.peak" if probe.has_peak_file() else "sampled memory.current (kernel has no memory.peak)")
    probe.remove()
    return True, f"cgroup v{h.version} memory accounting usable under {h.parent} ({detail})"
