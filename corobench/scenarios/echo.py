"""echo: a TCP echo server doing a little work (UUID v4 strings) per request, under our own load.

The public comparison this reproduces: 50,000 short connections one after another (connect, send
the 17 bytes `abcdefg0123456789`, read the reply, close), the server generating 5 UUIDs per
request as "business work"; it reported peak RSS and peak virtual size per program. With long
connections (`--per-connection` large, S = 1024, U = 0) it is the io_uring runtimes' ping-pong.
"""

from __future__ import annotations

from typing import Mapping

from corobench.errors import UsageError
from corobench.loadgens.base import LoadResult, LoadSpec
from corobench.scenarios.base import CGROUP
from corobench.scenarios.serverbase import (CLIENT_SHARE, CORES, CPU_PER_REQUEST, LAT_MAX, LAT_MEAN, LAT_P50,
                                            LAT_P90, LAT_P99, LAT_P999, PEAK_RSS, PEAK_VSZ, READY_RSS, RPS,
                                            SERVER_SHARE, THREADS, ServerScenario, param,
                                            SERVER_OTHERS, CLIENT_OTHERS,
                                            server_views)
from corobench.scenarios.views import SummaryTable, BARS, View

UUID_LINE = 37  # "\n" + 36 characters


class Echo(ServerScenario):
    name = "echo"
    summary = "a TCP echo server generating U UUIDs per request, loaded by corobench-load"
    report_order = 40
    params = (
        param("connections", "--connections", 50000, "connections in total (0 with --duration: as many as the "
              "time allows)", minimum=0),
        param("concurrency", "--concurrency", 100, "connections in flight at once"),
        param("per_connection", "--per-connection", 1, "request/reply exchanges per connection", to_program=True),
        param("size", "--size", 17, "request bytes", maximum=1 << 20, to_program=True),
        param("uuids", "--uuids", 5, "UUIDs the server generates per request", minimum=0, maximum=1000,
              to_program=True),
        param("rate", "--rate", 0, "open loop: requests/s on a fixed schedule (0: closed loop)", minimum=0),
        param("duration", "--duration", 0, "seconds of load instead of a connection count (0: count)",
              minimum=0, maximum=24 * 3600),
    )
    metrics = (RPS, LAT_P99, CPU_PER_REQUEST, PEAK_RSS, PEAK_VSZ, CGROUP, READY_RSS, THREADS, CORES,
               LAT_P50, LAT_P90, LAT_P999, LAT_MAX, LAT_MEAN, CLIENT_SHARE, SERVER_SHARE, SERVER_OTHERS, CLIENT_OTHERS)
    # the original's point: memory (peak RSS and virtual size) beside the rate it served, its CPU and tail
    table_metrics = ("peak_rss_mib", "peak_vsz_mib", "cpu_us_per_request", "lat_p99_us")
    summary_table = SummaryTable(("peak_rss_mib", "peak_vsz_mib", "rps", "cpu_us_per_request"),
                           title="server memory (peak RSS, peak virtual size) beside the rate and CPU per request")
    views = server_views("echo", (View("rps", "echo: requests/s", "rps", BARS, headline=True),))
    examples = ("e.g. --connections 50000 --size 17 --uuids 5 (the original), or --connections 64 "
                "--per-connection 20000 --size 1024 --uuids 0 (ping-pong); comma lists sweep")

    def normalise(self, raw: Mapping) -> dict:
        params = super().normalise(raw)
        if params["duration"] == 0 and params["connections"] == 0:
            raise UsageError("echo: give --connections K (K > 0) or --duration D")
        return params

    def smoke_params(self, params: Mapping) -> dict:
        return {**params, "connections": min(params["connections"], 100) or 100, "concurrency": min(params["concurrency"], 10),
                "per_connection": min(params["per_connection"], 3), "rate": 0, "duration": 0}

    def load_spec(self, params: Mapping, run_timeout_s: float) -> LoadSpec:
        counted = not params["duration"]
        return LoadSpec(
            scenario=self.name, concurrency=params["concurrency"], count=params["connections"] if counted else None,
            duration_s=None if counted else params["duration"], warmup_s=0, rate=params["rate"] or None,
            options={"per_connection": params["per_connection"], "size": params["size"], "uuids": params["uuids"]},
            timeout_s=run_timeout_s if counted else params["duration"] + 60.0)

    def expected_requests(self, params: Mapping) -> int | None:
        return None if params["duration"] else params["connections"] * params["per_connection"]

    def check_final(self, params: Mapping, final: Mapping, load: LoadResult, slack: int = 0) -> str | None:
        n = load.requests
        size, uuids = params["size"], params["uuids"]
        expected = {
            "size": size, "uuids": uuids, "requests": n, "connections": load.connections,
            "uuids_generated": uuids * n, "bytes_in": size * n, "bytes_out": (size + UUID_LINE * uuids) * n,
            "partial": 0,
        }
        for key, want in expected.items():
            got = final.get(key)
            if got != want or type(got) is not int:
                return f"server's final line: {key} is {got!r}, expected {want} (from the client's counts)"
        return None


SCENARIO = Echo()
