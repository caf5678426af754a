"""http: HTTP/1.1 keep-alive "ping" servers under load (requests/s, latency, CPU cores, per core).

The public comparison this reproduces loaded Rust async runtimes (tokio, tokio-uring, monoio,
glommio, with and without hyper, actix-web) at 80, 420 and 2020 concurrent clients and reported
requests/s, mean latency, the CPU cores the server used and requests/s per core.
"""

from __future__ import annotations

from typing import Mapping

from corobench.scenarios.base import CGROUP
from corobench.scenarios.serverbase import (CLIENT_SHARE, CORES, CPU_PER_REQUEST, LAT_MAX, LAT_MEAN, LAT_P50,
                                            LAT_P90, LAT_P99, LAT_P999, PEAK_RSS, PEAK_VSZ, READY_RSS, RPS,
                                            RPS_PER_CORE, SERVER_SHARE, THREADS, ServerScenario, param)


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
               PEAK_RSS, PEAK_VSZ, CGROUP, READY_RSS, THREADS, CLIENT_SHARE, SERVER_SHARE)
    examples = "e.g. --connections 80,420,2020 --duration 10 (the original's table); comma lists sweep"
    wrk_ok = True  # `--loadgen wrk` can load it

    def smoke_params(self, params: Mapping) -> dict:
        return {**params, "connections": min(params["connections"], 4), "requests": 200, "duration": 0,
                "warmup_s": 0, "rate": 0}

    def client_argv(self, params: Mapping, target: str, threads: int) -> list[str]:
        argv = ["http", "--target", target, "--connections", str(params["connections"]), "--threads", str(threads)]
        if params["requests"]:
            argv += ["--requests", str(params["requests"])]
        else:
            argv += ["--duration", str(params["duration"]), "--warmup-s", str(params["warmup_s"])]
        if params["rate"]:
            argv += ["--rate", str(params["rate"])]
        return argv

    def client_timeout_s(self, params: Mapping, run_timeout_s: float) -> float:
        return run_timeout_s if params["requests"] else params["duration"] + params["warmup_s"] + 60.0

    def expected_requests(self, params: Mapping) -> int | None:
        return params["requests"] or None

    def check_final(self, params: Mapping, final: Mapping, client: Mapping) -> str | None:
        got = final.get("requests")
        if got != client["requests"] or type(got) is not int:
            return f"server's final line: requests is {got!r}, the client completed {client['requests']}"
        conns = final.get("connections")
        if conns is not None and (type(conns) is not int or conns != client["connections"]):
            return f"server's final line: connections is {conns!r}, the client opened {client['connections']}"
        return None


SCENARIO = Http()
