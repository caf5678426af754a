"""What the server scenarios (echo, http) share: metrics of a loaded server, checks of its lines.

A server run (corobench/runkinds/server.py) stores in the run's metrics what the load generator
measured over its window (rates, latency) and what the sampler saw of the server in that window
(CPU, memory); these metrics read them back. The scenario modules add their parameters, the
load generator's argv, and the counts the server's final line must agree on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Mapping

from corobench.scenarios.base import CGROUP, CellWarning, Metric, Param, Scenario, measured
from corobench.scenarios.views import BARS, LINES, PERCENTILES, SERIES, View

if TYPE_CHECKING:
    from corobench.loadgens.base import LoadResult, LoadSpec

RPS = Metric("rps", "requests/s", "requests/s", measured("rps"), "higher")
LAT_MEAN = Metric("lat_mean_us", "latency mean", "µs", measured("lat_mean_us"), "lower")
LAT_P50 = Metric("lat_p50_us", "latency p50", "µs", measured("lat_p50_us"), "lower")
LAT_P90 = Metric("lat_p90_us", "latency p90", "µs", measured("lat_p90_us"), "lower")
LAT_P99 = Metric("lat_p99_us", "latency p99", "µs", measured("lat_p99_us"), "lower")
LAT_P999 = Metric("lat_p999_us", "latency p99.9", "µs", measured("lat_p999_us"), "lower")
LAT_MAX = Metric("lat_max_us", "latency max", "µs", measured("lat_max_us"), "lower")
CORES = Metric("server_cores", "server CPU", "cores", measured("server_cores"), "lower")
CPU_PER_REQUEST = Metric("cpu_us_per_request", "CPU/request", "µs", measured("cpu_us_per_request"), "lower")
RPS_PER_CORE = Metric("rps_per_core", "requests/s per core", "requests/s", measured("rps_per_core"), "higher")
PEAK_RSS = Metric("peak_rss_mib", "peak RSS", "MiB", measured("vm_hwm_bytes", 1 / 2**20), "lower")
PEAK_VSZ = Metric("peak_vsz_mib", "peak VSZ", "MiB", measured("vm_peak_bytes", 1 / 2**20), "lower")
READY_RSS = Metric("ready_rss_mib", "RSS at ready", "MiB", measured("ready_rss_bytes", 1 / 2**20), "lower")
THREADS = Metric("threads_peak", "threads peak", "threads", measured("threads_peak"), "lower")
CLIENT_SHARE = Metric("client_cpu_share", "client CPU share", "of its CPUs", measured("client_cpu_share"), "lower")
SERVER_SHARE = Metric("server_cpu_share", "server CPU share", "of its CPUs", measured("server_cpu_share"), "lower")
SERVER_OTHERS = Metric("server_other_share", "others on server CPUs", "of its CPUs", measured("server_other_share"),
                       "lower")
CLIENT_OTHERS = Metric("client_other_share", "others on client CPUs", "of its CPUs", measured("client_other_share"),
                       "lower")

# A client busy on this share of its CPUs while the server has this much of its own CPUs to spare
# is what limits the rate; a server that used its CPUs too was the limit (or both were).
CLIENT_BOUND = 0.90
SERVER_SPARE = 0.10
BUSY_OTHERS = 0.25  # as results.BUSY_FRACTION: other processes took more than this of the run's CPUs
# A tail far from the body: p99 this many times the median, and at least TAIL_MIN_US. Closed-loop
# servers that serve connections in turn keep p99 within 2-3x the median; a scheduler that lets
# some ready connections wait while others run shows 10-60x (docs/implementations.md, "tokio's tail").
TAIL_RATIO = 8.0
TAIL_MIN_US = 10_000.0
HOST = "127.0.0.1"  # every server binds loopback; port 0: the kernel picks a free port
LATENCIES = (("p50", "lat_p50_us"), ("p90", "lat_p90_us"), ("p99", "lat_p99_us"), ("p99.9", "lat_p999_us"))


def server_views(name: str, headline: tuple[View, ...]) -> tuple[View, ...]:
    """A server scenario's charts: its headline ones, then memory, latency and RSS over time."""
    return headline + (
        View("rss", f"{name}: server peak RSS (VmHWM)", "peak_rss_mib", BARS),
        View("vsz", f"{name}: server peak virtual size (VmPeak)", "peak_vsz_mib", BARS),
        View("latency", f"{name}: latency percentiles", "lat_p50_us", PERCENTILES, metrics=LATENCIES),
        View("rss-time", f"{name}: server RSS during the load", "peak_rss_mib", SERIES,
             metrics=(("server RSS", "rss_series"),)),
    )


def param(name: str, long: str, default: int, help: str, minimum: int = 1, maximum: int = 10**9,
          to_program: bool = False) -> Param:
    return Param(name, long, default, help, minimum=minimum, maximum=maximum, to_program=to_program)


class ServerScenario(Scenario, ABC):
    kind = "server"
    timing_fields = ()
    loadgens: tuple[str, ...] = ("corobench-load",)  # the load generators that can drive it (the first: default)

    def argv(self, params: Mapping, host: str = HOST) -> list[str]:
        """The server's arguments: where to listen, then the parameters the server takes."""
        rest = super().argv(params)
        return [rest[0], "--host", host, "--port", "0", *rest[1:]]

    @abstractmethod
    def load_spec(self, params: Mapping, run_timeout_s: float) -> "LoadSpec":
        """The load these parameters ask for, for all agents together."""

    def expected_requests(self, params: Mapping) -> int | None:
        """Requests a correct count-bounded load completes (None: duration-bounded)."""
        return None

    def estimate_s(self, params: Mapping) -> float | None:
        load = params.get("duration", 0) + params.get("warmup_s", 0)
        return load + 3.0 if load else None  # the server's start and stop besides its load

    @abstractmethod
    def check_final(self, params: Mapping, final: Mapping, load: "LoadResult", slack: int = 0) -> str | None:
        """Why the server's final line disagrees with the clients' counts (the sum over every agent),
        or None; `slack`: how many more exchanges a generator that leaves some in flight allows."""

    def caveats(self, params: Mapping, medians: Mapping[str, float]) -> list[CellWarning]:
        return self._tail(medians) + self._bounds(medians)

    @staticmethod
    def _tail(medians: Mapping[str, float]) -> list[CellWarning]:
        p50, p99 = medians.get("lat_p50_us"), medians.get("lat_p99_us")
        if not p50 or not p99 or p99 < TAIL_MIN_US or p99 < TAIL_RATIO * p50:
            return []
        return [CellWarning("p99 far above the median: some connections waited much longer than most while the "
                            "server was busy (rust-tokio above 256 ready connections per worker: its scheduler's "
                            "global queue, docs/implementations.md \"tokio's tail\")", f"p99 {p99 / p50:.0f}x p50")]

    def _bounds(self, medians: Mapping[str, float]) -> list[CellWarning]:
        client, server = medians.get("client_cpu_share"), medians.get("server_cpu_share")
        taken = max((medians.get(k) or 0 for k in ("server_other_share", "client_other_share")), default=0)
        if (server is not None and server < 1 - SERVER_SPARE and client is not None and client < CLIENT_BOUND
                and taken > BUSY_OTHERS):
            return [CellWarning("neither the server nor the client used its CPUs fully while other processes took "
                                f"more than {BUSY_OTHERS:.0%} of them: the rate measures the machine's contention, not "
                                "the server", f"server {server:.0%}, client {client:.0%}, others {taken:.0%}")]
        if client is None or client < CLIENT_BOUND:
            return []
        if server is None:  # stored before the server's share was
            return [CellWarning(f"the load generator used {CLIENT_BOUND:.0%} or more of its CPUs: the rate may be "
                                "the client's limit, not the server's (give it more --client-cpus)", f"{client:.0%}")]
        if server > 1 - SERVER_SPARE:
            return []
        return [CellWarning(f"the load generator used {CLIENT_BOUND:.0%} or more of its CPUs while the server left "
                            f"more than {SERVER_SPARE:.0%} of its own idle: the rate is the client's limit, not the "
                            "server's (give it more --client-cpus)", f"client {client:.0%}, server {server:.0%}")]
