"""The one place that knows where a program runs: a `Host` starts programs, watches and stops them.

Every run kind asks a host — never `subprocess`, `/proc` or a cgroup directly — to start a program
(argv, cwd, environment, CPUs to pin, a fresh cgroup where the host has them), to hand over its
output lines with timeouts, to stop it with a grace period and to kill its whole tree, to sample
its process tree (CPU time, RSS, VSZ, VmHWM/VmPeak, threads, cgroup memory), to list the sockets
it listens on, and to read the host's own monotonic clock and CPU counters. `LocalHost` is this
machine (the launcher, cgroups, /proc); `SshHost` a client machine reached by OpenSSH; `FakeHost`
runs scripted programs on a scripted clock so that the run kinds' logic is tested in milliseconds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class ProgramSpec:
    """What to start, and how."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    cpus: set[int] | None = None  # pin to these CPUs of the host (None: not pinned)
    cgroup: str | None = None  # a fresh memory cgroup of this name for the run, where the host has cgroups
    stdin_pipe: bool = False  # the harness holds the program's stdin open; closing it tells the program to stop
    label: str = ""  # how messages name the program (e.g. "the server", "agent 2 on client1")


@dataclass
class Ending:
    """How the program ended, as the host measured it (the program's own rusage where it can)."""

    exit_code: int | None  # None when it was killed by a signal
    term_signal: int | None
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kb: int | None  # None when it could not be measured (killed, or a host without the launcher)
    killed_by_harness: bool = False  # timeout, stop grace exceeded, output limit, or interrupted
    oom_killed: bool = False  # the kernel's OOM killer ended it (the run's cgroup counted the kill)

    def how(self) -> str:
        """`exit 3`, `signal 9`, or `the OOM killer (signal 9)`: how a reason names the ending."""
        if self.oom_killed:
            return f"the kernel's OOM killer (signal {self.term_signal or 9}: out of memory)"
        return f"signal {self.term_signal}" if self.term_signal is not None else f"exit {self.exit_code}"


@dataclass(frozen=True)
class Sample:
    """One look at a program's process tree."""

    t_ns: int  # the host's monotonic clock
    cpu_s: float  # utime + stime of every process of the tree so far (ended ones included)
    rss_bytes: int  # sum over the live processes of the tree
    vsz_bytes: int
    threads: int
    cgroup_bytes: int | None  # the run's cgroup's current memory, where it has one
    vm_hwm_bytes: int | None = None  # the program's own VmHWM and VmPeak (kernel high-water marks)
    vm_peak_bytes: int | None = None


@dataclass(frozen=True)
class CpuTimes:
    """Busy and total clock ticks per CPU since boot, to tell how busy the machine was in a window."""

    ticks_per_s: int
    busy: dict[int, int]
    total: dict[int, int]


class OutputLimit(Exception):
    """A program printed more than a run may keep; the message says what was exceeded."""


LIVE: "set[Program]" = set()  # every program started and not yet closed, in this process


def close_all() -> None:
    """Close every program still open: the end of a session, however it ended (a signal can land
    between a program's start and the code that would have closed it)."""
    for program in list(LIVE):
        program.close()


class Program(ABC):
    """A program running on a host, in its own process group (and cgroup, where asked). Every
    program is in LIVE from its start until close()."""

    host: "Host"
    spec: ProgramSpec
    notes: list[str]  # problems starting it (a failed cgroup join, ...), kept with the run
    pid: int  # on its host

    @abstractmethod
    def wait_line(self, index: int, timeout_s: float) -> str | None:
        """stdout line number `index` (0 = the first), waiting up to timeout_s; None if none came."""

    @abstractmethod
    def lines(self) -> list[str]:
        """The stdout lines so far (complete lines only)."""

    @abstractmethod
    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the program to end; True when it did within the timeout."""

    @property
    @abstractmethod
    def running(self) -> bool: ...

    @abstractmethod
    def stop(self, grace_s: float) -> bool:
        """SIGTERM, then up to grace_s to end; past that, kill it all. True when it ended in time."""

    @abstractmethod
    def kill(self) -> None:
        """Kill the program and everything it started (process group, cgroup, orphans)."""

    @abstractmethod
    def close_stdin(self) -> None:
        """Close the program's stdin (with `stdin_pipe`): the agreed signal to stop."""

    @abstractmethod
    def ending(self) -> Ending:
        """How it ended; call once it ended (wait() returned True, or after kill())."""

    @abstractmethod
    def stdout(self) -> str:
        """Everything it printed on stdout that was kept (bounded)."""

    @abstractmethod
    def stderr_tail(self) -> str:
        """The end of what it printed on stderr (where errors are)."""

    @property
    @abstractmethod
    def output_exceeded(self) -> str | None:
        """Which output limit it broke (it was killed for it), or None."""

    @abstractmethod
    def cgroup_peak_bytes(self) -> int | None:
        """The run's cgroup's memory peak (every process of the run), or None without one."""

    @abstractmethod
    def close(self) -> None:
        """Kill what is left and release everything; never blocks for long."""

    def __enter__(self) -> "Program":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Host(ABC):
    """A machine programs run on."""

    name: str  # as the hosts file and messages name it ("local" for this machine)
    kind: str  # "local", "ssh", "fake"

    @abstractmethod
    def start(self, spec: ProgramSpec) -> Program:
        """Start a program; raises LaunchError with a one-line reason when it cannot."""

    @abstractmethod
    def sample(self, program: Program) -> Sample | None:
        """The program's process tree now; None once it is gone."""

    @abstractmethod
    def listening_outside(self, program: Program, allowed: Callable[[str], bool]) -> list[str]:
        """`tcp host:port` / `udp host:port` of every socket the program's tree (and cgroup) holds
        that accepts connections or datagrams at an address `allowed(address)` refuses."""

    @abstractmethod
    def clock_ns(self) -> int:
        """This host's CLOCK_MONOTONIC, in ns (what its programs' timestamps are on)."""

    @abstractmethod
    def clock_offset(self) -> tuple[int, int]:
        """(this host's monotonic clock − this machine's, in ns; its error bound in ns), measured now."""

    @abstractmethod
    def cpus(self) -> set[int]:
        """The CPUs programs may be pinned to on this host."""

    @abstractmethod
    def cpu_times(self) -> CpuTimes | None:
        """CPU counters now, or None where the host cannot read them."""

    @abstractmethod
    def metadata(self) -> dict:
        """CPU model, cores, memory, kernel, OS, architecture, ... of this host."""

    def install(self, path: str) -> str:
        """Make a self-contained program of this machine (e.g. the load generator) runnable on this
        host; its path there. This machine: the path itself."""
        return path

    def sampler(self, program: Program, interval_s: float, watch: Callable[[], None] | None = None):
        """A started Sampler of the program's tree (sampler.py), every interval_s."""
        from corobench.sampler import Sampler

        return Sampler(self, program, interval_s, watch).start()

    def close(self) -> None:
        """Release connections to the host (nothing of ours may be left running there)."""


class LaunchError(Exception):
    """A program could not be started; the message says why."""


@dataclass
class CpuShare:
    """The share of some CPUs that other processes used during a window (busy-machine detection)."""

    cpus: list[int]
    other: float  # 0..1 of those CPUs' capacity, taken by processes other than ours
    ours_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def other_share(before: CpuTimes | None, after: CpuTimes | None, cpus: set[int], ours_cpu_s: float,
                min_wall_s: float = 0.25) -> float | None:
    """The share of `cpus` that processes other than ours used between two readings: (busy ticks on
    those CPUs − our CPU time) / their capacity; None when unknown or too short to tell (/proc/stat
    counts 10 ms ticks)."""
    if before is None or after is None or not cpus:
        return None
    chosen = [c for c in cpus if c in before.busy and c in after.busy]
    if not chosen:
        return None
    total = sum(after.total[c] - before.total[c] for c in chosen) / after.ticks_per_s
    if total / len(chosen) < min_wall_s:
        return None
    busy = sum(after.busy[c] - before.busy[c] for c in chosen) / after.ticks_per_s
    return max(0.0, min(1.0, (busy - ours_cpu_s) / total)) if total > 0 else None
