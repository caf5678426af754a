"""tasks: N concurrent tasks, each sleeps D ms then counts itself — memory and start-up cost.

The "how much memory do a million tasks need" comparison: peak memory against N (1 … 1,000,000),
and the time to start them all.
"""

from __future__ import annotations

from typing import Mapping

from corobench.scenarios.views import SummaryTable, BARS, LINES, View
from corobench.scenarios.base import CGROUP, CPU, ELAPSED, RSS, WALL, CellWarning, Metric, Param, Scenario, measured
from corobench.units import seconds

SPAWN = Metric("spawn_s", "spawn", "s", measured("spawn_ns", 1e-9), "lower")


class Tasks(Scenario):
    name = "tasks"
    summary = "N concurrent tasks, each sleeps D ms then counts itself: memory and start-up cost"
    report_order = 20
    params = (
        Param("tasks", "--tasks", 10000, "concurrent tasks", short="-n"),
        Param("sleep_ms", "--sleep-ms", 10000, "how long each task sleeps, ms", short="-d", minimum=0),
    )
    metrics = (RSS, CGROUP, SPAWN, ELAPSED, CPU, WALL)
    timing_fields = ("elapsed_ns", "spawn_ns")
    examples = "e.g. -n 1000,100000 -d 1000 (comma lists sweep)"
    legacy_name = "tasks.md"
    summary_table = SummaryTable(("rss_mib",), pivot="tasks", title="peak memory (RSS) of N tasks, as the 1M-tasks comparison")
    views = (
        View("memory", "tasks: peak memory against N", "rss_mib", LINES, x="tasks", xlabel="concurrent tasks N",
             log_x=True, log_y=True, headline=True),
        View("spawn", "tasks: time to start all N", "spawn_s", LINES, x="tasks", xlabel="concurrent tasks N",
             log_x=True, log_y=True),
        View("memory-bars", "tasks: peak memory of N tasks", "rss_mib", BARS),
    )

    def expected_checksum(self, params: Mapping) -> int:
        return params["tasks"]

    def smoke_params(self, params: Mapping) -> dict:
        return {**params, "tasks": 10, "sleep_ms": 1}

    def estimate_s(self, params: Mapping) -> float | None:
        return params["sleep_ms"] / 1000 + 1.0  # every task sleeps once; start-up and spawning besides

    def run_metrics(self, result: Mapping, params: Mapping) -> dict:
        return {"spawn_ns": result["spawn_ns"]}

    def caveats(self, params: Mapping, medians: Mapping[str, float]) -> list[CellWarning]:
        if params["sleep_ms"] > 0 and medians.get("spawn_s", 0) * 1000 > params["sleep_ms"]:
            return [CellWarning(f"spawning took longer than the {params['sleep_ms']} ms sleep: the first tasks ended "
                                f"before the last began, so not all {params['tasks']} were alive at once",
                                f"spawn {seconds(medians['spawn_s'])}")]
        return []

    def legacy(self, cells) -> str:
        """The blog's table: peak memory (median peak RSS, MiB) of each runtime at each N."""
        out = []
        for sleep_ms in sorted({c.params["sleep_ms"] for c in cells}):
            group = [c for c in cells if c.params["sleep_ms"] == sleep_ms]
            ns = sorted({c.params["tasks"] for c in group})
            programs = sorted({c.program for c in group})
            out.append(f"Peak memory (RSS, MiB) of N tasks sleeping {sleep_ms} ms\n")
            out.append("| runtime | " + " | ".join(f"{n:,}" for n in ns) + " |")
            out.append("|---|" + "---:|" * len(ns))
            for program in programs:
                row = []
                for n in ns:
                    cell = next((c for c in group if c.program == program and c.params["tasks"] == n), None)
                    if cell is None:
                        row.append("")
                    elif cell.status == "ok" and "rss_mib" in cell.summaries:
                        row.append(f"{cell.summaries['rss_mib'].median:.1f}")
                    else:
                        row.append(cell.status.upper())
                out.append(f"| {program} | " + " | ".join(row) + " |")
            out.append("")
        return "\n".join(out)


SCENARIO = Tasks()
