"""http: HTTP/1.1 keep-alive "ping" servers under load (requests/s, latency, CPU cores, per core).

The public comparison this reproduces loaded Rust async runtimes (tokio, tokio-uring, monoio,
glommio, with and without hyper, actix-web) at 80, 420 and 2020 concurrent clients and reported
requests/s, mean latency, the CPU cores the server used and requests/s per core.
"""

from __future__ import annotations

from typing import Mapping

from corobench.loadgens.base import LoadResult, LoadSpec
from corobench.scenarios.base import CGROUP
from corobench.scenarios.serverbase import (CLIENT_SHARE, CORES, CPU_PER_REQUEST, LAT_MAX, LAT_MEAN, LAT_P50,
                                            LAT_P90, LAT_P99, LAT_P999, PEAK_RSS, PEAK_VSZ, READY_RSS, RPS,
                                            RPS_PER_CORE, SERVER_SHARE, THREADS, ServerScenario, param,
                                            SERVER_OTHERS, CLIENT_OTHERS,
                                            server_views)
from corobench.scenarios.views import SummaryTable, LINES, View


class Http(ServerScenario):
    name = "http"
    summary = "HTTP/1.1 keep-alive servers answering GET /ping/<token>, loaded by corobench-load or wrk"
    report_order = 50
    params = (
        param("connections", "--connections", 80, "keep-alive connections open at once"),
        param("duration", "--duration", 10, "seconds of measured load", minimum=0, maximum=24 * 3600),
        param("warmup_s", "--warmup-s", 2, "seconds of load before the measured window", minimum=0, maximum=3600),
        param("requests", "--requests", 0, "requests in total instead of a duration (0: use --duration)",
              minimum=0),
        param("rate", "--rate", 0, "open loop: requests/s on a fixed schedule (0: closed loop)", minimum=0),
    )
    metrics = (RPS, LAT_MEAN, CORES, RPS_PER_CORE, LAT_P50, LAT_P90, LAT_P99, LAT_P999, LAT_MAX, CPU_PER_REQUEST,
               PEAK_RSS, PEAK_VSZ, CGROUP, READY_RSS, THREADS, CLIENT_SHARE, SERVER_SHARE, SERVER_OTHERS, CLIENT_OTHERS)
    # the original's table: requests/s, mean and p99 latency, the server's cores, requests/s per core
    table_metrics = ("lat_mean_us", "lat_p99_us", "server_cores", "rps_per_core")
    examples = "e.g. --connections 80,420,2020 --duration 10 (the original's table); comma lists sweep"
    loadgens = ("corobench-load", "wrk")
    summary_table = SummaryTable(("rps", "lat_mean_us", "lat_p99_us", "server_cores", "rps_per_core"), pivot="connections",
                           title="the original's table: requests/s, mean and p99 latency, CPU cores, requests/s per core")
    views = server_views("http", (View("rps", "http: requests/s against connections", "rps", LINES, x="connections",
                                       xlabel="keep-alive connections", log_x=True, headline=True),))

    def smoke_params(self, params: Mapping) -> dict:
        return {**params, "connections": min(params["connections"], 4), "requests": 200, "duration": 0,
                "warmup_s": 0, "rate": 0}

    def load_spec(self, params: Mapping, run_timeout_s: float) -> LoadSpec:
        counted = bool(params["requests"])
        return LoadSpec(
            scenario=self.name, concurrency=params["connections"], count=params["requests"] or None,
            duration_s=None if counted else params["duration"], warmup_s=0 if counted else params["warmup_s"],
            rate=params["rate"] or None,
            timeout_s=run_timeout_s if counted else params["duration"] + params["warmup_s"] + 60.0)

    def expected_requests(self, params: Mapping) -> int | None:
        return params["requests"] or None

    def check_final(self, params: Mapping, final: Mapping, load: LoadResult, slack: int = 0) -> str | None:
        got = final.get("requests")
        if type(got) is not int or not load.requests <= got <= load.requests + slack:
            within = f" (at most {slack} more were in flight)" if slack else ""
            return f"server's final line: requests is {got!r}, the client completed {load.requests}{within}"
        conns = final.get("connections")
        if not slack and conns is not None and (type(conns) is not int or conns != load.connections):
            return f"server's final line: connections is {conns!r}, the client opened {load.connections}"
        return None


SCENARIO = Http()
