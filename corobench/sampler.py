"""Sample a program's process tree at a fixed interval; summarise a time window.

A server run needs figures for the measured window only (CPU cores used while the client loaded
it, its memory under load), not for its whole life, and a chart of its RSS over time. A thread
asks the program's host for a sample every `interval_s` (on this machine a few small /proc files:
negligible next to what it measures) and keeps them; `window(t0, t1)` interpolates the CPU
counters at the window's ends, on the host's monotonic clock. An optional `watch` runs with every
sample (e.g. the check that a server listens only where it was told to).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from corobench.hosts.base import Host, Program, Sample


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


class Sampler:
    """A daemon thread sampling a program's tree through its host until stop()."""

    def __init__(self, host: Host, program: Program, interval_s: float = 0.1,
                 watch: Callable[[], None] | None = None):
        self.host = host
        self.program = program
        self.interval_s = interval_s
        self.watch = watch
        self.samples: list[Sample] = []
        self.vm_hwm_bytes: int | None = None  # the program's VmHWM, last read
        self.vm_peak_bytes: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="corobench-sampler")

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
        if self.watch is not None:
            self.watch()
        s = self.host.sample(self.program)
        if s is None:
            return None  # the tree is gone: keep the last real sample as the end
        if s.vm_hwm_bytes is not None:
            self.vm_hwm_bytes, self.vm_peak_bytes = s.vm_hwm_bytes, s.vm_peak_bytes
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
