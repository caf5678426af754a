"""The load-generator interface: from a scenario's load, a target and CPUs, programs on a host; from
their output, one checked result.

A scenario says what load it needs in the generators' common terms (`LoadSpec`: connections in
flight, a count or a duration, warm-up, an open-loop rate, and its own options) and which
generators can drive it; each generator is one module that turns that into its argv, starts it on
a host, and reads back one `LoadResult` — totals (what the server's counts must equal), the
measured window on that host's clock, latency (with an HDR histogram where it has one), per-interval
records, its CPU time, and whether it verified every reply. Agents (several client processes, on
one machine or several) each get a share of the load (`Agent`); merge.py puts them back together.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from corobench.hosts.base import Host, Program


class LoadFailed(Exception):
    """The load could not be a number: (failure kind, reason), as a run's FAILED row says."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class LoadSpec:
    """The load a scenario asks for, for all agents together."""

    scenario: str
    concurrency: int  # connections in flight at once
    count: int | None  # exchanges (http requests) or connections (echo) in all; None: duration-bounded
    duration_s: float | None  # measured seconds (duration-bounded)
    warmup_s: float
    rate: float | None  # open loop: requests/s in all on a fixed schedule; None: closed loop
    options: dict = field(default_factory=dict)  # the scenario's own (echo: size, uuids, per_connection)
    timeout_s: float = 600.0  # how long the load may take before the run is a timeout


@dataclass(frozen=True)
class Agent:
    """One client process's part of the load: its index of `count`, where it starts measuring."""

    index: int = 0
    count: int = 1
    start_at_ns: int | None = None  # the measured window's start on the agent's host clock
    watch_stdin: bool = False  # stop when the harness's end of its stdin closes (remote agents)
    interval_ms: int = 1000
    sources: tuple[str, ...] = ()  # source addresses to spread its connections over


@dataclass
class Interval:
    """One interval of one agent's measured window (on its host's clock)."""

    index: int
    start_ns: int
    end_ns: int
    requests: int
    ok: int
    errors: int
    connections: int
    histogram: str | None  # base64 HdrHistogram V2 (ns)


@dataclass
class LoadResult:
    tool: str
    verified: bool  # every reply checked by the client
    requests: int  # every exchange the client completed, warm-up included (what the server counted)
    ok: int
    connections: int
    window: tuple[int, int]  # the measured window, on the agent host's monotonic clock
    window_requests: int
    window_connections: int | None
    latency_us: dict  # mean, p50, p90, p99, p999, max
    histogram: str | None = None
    intervals: list[Interval] = field(default_factory=list)
    cpu_s: float | None = None  # the client's own CPU time over its run
    wall_s: float | None = None
    active_s: float | None = None  # how long it loaded (warm-up and window; not the wait for a start time)
    cpus: int = 1  # CPUs it had
    raw: dict = field(default_factory=dict)  # its own output, stored with the run

    @property
    def seconds(self) -> float:
        return (self.window[1] - self.window[0]) / 1e9

    @property
    def cpu_share(self) -> float | None:
        """The share of its CPUs the client used over its run (≥ 0.9: it may be the limit)."""
        span = self.active_s or self.wall_s
        if self.cpu_s is None or not span:
            return None
        return min(1.0, self.cpu_s / (span * max(1, self.cpus)))


class LoadRun(ABC):
    """A load started on a host: wait for its result, or abort it."""

    programs: list[Program]

    @abstractmethod
    def result(self, timeout_s: float) -> LoadResult:
        """Wait for the load to end and read it (LoadFailed when it cannot be a number)."""

    def abort(self) -> None:
        for p in self.programs:
            p.kill()

    def close(self) -> None:
        for p in self.programs:
            p.close()


class LoadGenerator(ABC):
    name: str
    verifies_replies: bool = True
    supports_agents: bool = False  # can split a load over several agents and align their windows
    summary: str = ""

    def tools(self) -> list:
        """Manifests of what must be built for this generator (built like implementations)."""
        return []

    def unavailable(self) -> str | None:
        """Why it cannot run here, or None."""
        return None

    def check_spec(self, spec: LoadSpec) -> str | None:
        """Why this generator cannot produce this load (e.g. wrk has no fixed rate), or None."""
        return None

    @abstractmethod
    def start(self, host: Host, spec: LoadSpec, target: str, cpus: set[int] | None, agent: Agent,
              label: str) -> LoadRun:
        """Start the load (all its invocations) on `host`, pinned to `cpus` there."""

    def count_slack(self, spec: LoadSpec) -> int:
        """How many more exchanges the server may have counted than the client completed
        (requests in flight when a generator that does not finish them stopped)."""
        return 0
