"""Sample a process tree's CPU time and memory at a fixed interval; summarise a time window.

A server run needs figures for the measured window only (CPU cores used while the client loaded
it, its memory under load), not for its whole life, and a chart of its RSS over time. A thread
reads /proc every `interval_s` (a few small files: negligible next to what it measures) and keeps
the samples; `window(t0, t1)` interpolates the CPU counters at the window's ends (the client
reports its window on the same clock, CLOCK_MONOTONIC).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from corobench.cgroup import RunCgroup

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Sample:
    t_ns: int  # time.monotonic_ns()
    cpu_s: float  # utime + stime of every process of the tree so far (ended ones included)
    rss_bytes: int  # sum over the live processes of the tree
    vsz_bytes: int
    threads: int
    cgroup_bytes: int | None  # the cgroup's current memory, where the run has one


@dataclass(frozen=True)
class Window:
    """What the tree did between t0 and t1."""

    seconds: float
    cpu_s: float
    cores: float  # cpu_s / seconds
    rss_peak_bytes: int
    vsz_peak_bytes: int
    threads_peak: int
    cgroup_peak_bytes: int | None
    samples: int


@dataclass
class ProcStat:
    cpu_s: float
    rss_bytes: int
    vsz_bytes: int
    threads: int


def read_stat(pid: int, proc: Path = Path("/proc")) -> ProcStat | None:
    """utime+stime, RSS, VSZ and threads of one process from /proc/PID/stat; None if it is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    fields = text.rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state): utime is field 14, stime 15, num_threads 20, vsize 23, rss 24
    utime, stime = int(fields[11]), int(fields[12])
    return ProcStat(cpu_s=(utime + stime) / CLOCK_TICKS, threads=int(fields[17]),
                    vsz_bytes=int(fields[20]), rss_bytes=int(fields[21]) * PAGE)


def children(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Direct children of a process (of all its threads)."""
    out: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def tree(pid: int, proc: Path = Path("/proc")) -> list[int]:
    seen: list[int] = []
    todo = [pid]
    while todo and len(seen) < 10_000:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo += children(p, proc)
    return seen


def read_status_peaks(pid: int, proc: Path = Path("/proc")) -> tuple[int | None, int | None]:
    """(VmHWM, VmPeak) in bytes: the kernel's own high-water marks of RSS and virtual size."""
    hwm = peak = None
    try:
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
            elif line.startswith("VmPeak:"):
                peak = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return hwm, peak


class Sampler:
    """A daemon thread sampling the tree rooted at `pid` until stop()."""

    def __init__(self, pid: int, cgroup: RunCgroup | None = None, interval_s: float = 0.1,
                 proc: Path = Path("/proc")):
        self.pid = pid
        self.cgroup = cgroup
        self.interval_s = interval_s
        self.proc = proc
        self.samples: list[Sample] = []
        self.vm_hwm_bytes: int | None = None  # the root process's VmHWM, last read
        self.vm_peak_bytes: int | None = None
        self._cpu_by_pid: dict[int, float] = {}  # ended processes keep their last CPU figure
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Sampler":
        self.sample()  # a first sample at once: the baseline (e.g. RSS at ready)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.sample()  # and a last one at the end

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> Sample | None:
        t = time.monotonic_ns()
        rss = vsz = threads = 0
        alive = False
        for pid in tree(self.pid, self.proc):
            stat = read_stat(pid, self.proc)
            if stat is None:
                continue
            alive = True
            self._cpu_by_pid[pid] = stat.cpu_s
            rss += stat.rss_bytes
            vsz += stat.vsz_bytes
            threads += stat.threads
        hwm, peak = read_status_peaks(self.pid, self.proc)
        if hwm is not None:
            self.vm_hwm_bytes, self.vm_peak_bytes = hwm, peak
        cgroup_now = self.cgroup.note_sample() if self.cgroup is not None else None
        if not alive and self.samples:
            return None  # the tree is gone: keep the last real sample as the end
        s = Sample(t, sum(self._cpu_by_pid.values()), rss, vsz, threads, cgroup_now)
        self.samples.append(s)
        return s

    # ---------------------------------------------------------------- summaries

    def cpu_at(self, t_ns: int) -> float:
        """CPU seconds of the tree at time t, interpolated between the samples around it."""
        s = self.samples
        if not s:
            return 0.0
        if t_ns <= s[0].t_ns:
            return s[0].cpu_s
        for a, b in zip(s, s[1:]):
            if a.t_ns <= t_ns <= b.t_ns:
                span = b.t_ns - a.t_ns
                return a.cpu_s + (b.cpu_s - a.cpu_s) * ((t_ns - a.t_ns) / span if span else 1.0)
        return s[-1].cpu_s

    def window(self, t0_ns: int, t1_ns: int) -> Window:
        if t1_ns <= t0_ns:
            raise ValueError("empty window")
        inside = [s for s in self.samples if t0_ns <= s.t_ns <= t1_ns]
        # memory peaks: samples inside, or the one nearest the window if none fell inside it
        pool = inside or sorted(self.samples, key=lambda s: abs(s.t_ns - (t0_ns + t1_ns) // 2))[:1]
        seconds = (t1_ns - t0_ns) / 1e9
        cpu = max(0.0, self.cpu_at(t1_ns) - self.cpu_at(t0_ns))
        cgroup = [s.cgroup_bytes for s in pool if s.cgroup_bytes is not None]
        return Window(
            seconds=seconds, cpu_s=cpu, cores=cpu / seconds,
            rss_peak_bytes=max((s.rss_bytes for s in pool), default=0),
            vsz_peak_bytes=max((s.vsz_bytes for s in pool), default=0),
            threads_peak=max((s.threads for s in pool), default=0),
            cgroup_peak_bytes=max(cgroup) if cgroup else None, samples=len(inside),
        )

    def rss_series(self, max_points: int = 200) -> list[tuple[float, float]]:
        """(seconds since the first sample, RSS MiB), thinned to at most max_points."""
        if not self.samples:
            return []
        t0 = self.samples[0].t_ns
        step = max(1, -(-(len(self.samples) - 1) // max(1, max_points - 1)))  # ceil: first .. last in max_points
        picked = self.samples[::step]
        if picked[-1] is not self.samples[-1]:
            picked.append(self.samples[-1])
        return [(round((s.t_ns - t0) / 1e9, 3), round(s.rss_bytes / 2**20, 2)) for s in picked]
