"""blocking: T tasks per iteration each read B bytes of /dev/urandom and write them to /dev/null.

What happens when tasks do small blocking file I/O inside an async runtime? The original reports
the time per iteration of each way to do it (the runtime's async file API, a blocking pool, a
plain blocking call on a worker thread), which are an implementation's variants.
"""

from __future__ import annotations

from typing import Mapping

from corobench.scenarios.views import SummaryTable, BARS, View
from corobench.scenarios.base import CGROUP, CPU, RSS, WALL, Metric, Param, RunView, Scenario


def _per_iteration(run: RunView) -> float | None:
    if not run["elapsed_ns"]:
        return None
    return run["elapsed_ns"] / run.params["iterations"] / 1e3


PER_ITERATION = Metric("per_iteration_us", "per iteration", "µs", _per_iteration, "lower")


class Blocking(Scenario):
    name = "blocking"
    summary = "T tasks per iteration each read B bytes of /dev/urandom and write them to /dev/null"
    report_order = 30
    params = (
        Param("tasks", "--tasks", 1000, "tasks per iteration", short="-n"),
        Param("iterations", "--iterations", 1000, "measured iterations", short="-i"),
        Param("bytes", "--bytes", 10, "bytes each task reads and writes", short="-b"),
    )
    metrics = (PER_ITERATION, WALL, CPU, RSS, CGROUP)
    examples = "e.g. -n 100,1000 -i 100 (comma lists sweep)"
    legacy_name = "blocking.txt"
    summary_table = SummaryTable(("per_iteration_us", "rss_mib"), title="time per iteration, per program and variant")
    views = (View("per-iteration", "blocking: time per iteration", "per_iteration_us", BARS, headline=True),)

    def expected_checksum(self, params: Mapping) -> int:
        return params["tasks"] * params["iterations"] * params["bytes"]

    def smoke_params(self, params: Mapping) -> dict:
        return {**params, "tasks": 4, "iterations": 3, "bytes": 5}

    def run_metrics(self, result: Mapping, params: Mapping) -> dict:
        pool = result.get("pool_threads")
        return {"pool_threads": pool} if type(pool) is int else {}

    def legacy(self, cells) -> str:
        """The original's line per program: `X s total, Y ms avg per iteration` (medians)."""
        lines = []
        for c in cells:
            p = c.params
            head = f"{c.program} ({p['tasks']} tasks x {p['bytes']} bytes, {p['iterations']} iterations)"
            if c.status != "ok" or "per_iteration_us" not in c.summaries:
                lines.append(f"{head}: {c.status.upper()}")
                continue
            per_ms = c.summaries["per_iteration_us"].median / 1e3
            lines.append(f"{head}: {per_ms * p['iterations'] / 1e3:.3f} s total, {per_ms:.3f} ms avg per iteration")
        return "\n".join(lines) + "\n"


SCENARIO = Blocking()
