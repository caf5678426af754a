"""chain: W senders each feed their own receiver through a bounded queue of Q, E events each.

How fast are channels and the scheduler? The original benchmark's sweep: W = 100 … 50,000, four
event types, E = 10,000, Q = 256; it publishes `program,etype,worker,event,time,speed` CSV and a
chart of speed against workers per event type, which `legacy` and `charts` reproduce.
"""

from __future__ import annotations

import csv
import io
from typing import Mapping

from corobench.scenarios.views import SummaryTable, LINES, View
from corobench.scenarios.base import CGROUP, CPU, RSS, WALL, Metric, Param, RunView, Scenario, column

ETYPES = ("int", "str", "str_ptr", "str_clone")


def _etype_number(text: str) -> str | None:
    """The protocol's numeric event types: 0 = int … 3 = str_clone."""
    return ETYPES[int(text)] if text.isascii() and text.isdigit() and int(text) < len(ETYPES) else None


def _speed(run: RunView) -> float | None:
    if not run["elapsed_ns"]:
        return None
    return run.params["workers"] * run.params["events"] / (run["elapsed_ns"] / 1e9)


SPEED = Metric("speed", "speed", "events/s", _speed, "higher")
TIME = Metric("time_s", "time", "s", column("elapsed_ns", 1e-9), "lower")


class Chain(Scenario):
    name = "chain"
    summary = "W senders each feed their own receiver through a bounded queue of Q, E events each"
    report_order = 10
    params = (
        Param("workers", "--workers", 1000, "sender/receiver pairs", short="-w"),
        Param("events", "--events", 10000, "events each sender sends", short="-e"),
        Param("queue", "--queue", 256, "capacity of each bounded queue", short="-q"),
        Param("etype", "--etype", "int", "event type: 0/int 1/str 2/str_ptr 3/str_clone (or 'all')",
              short="-t", choices=ETYPES, aliases=_etype_number),
        Param("esize", "--esize", 10, "string length in bytes, or the int's value", short="-s"),
    )
    metrics = (SPEED, TIME, WALL, CPU, RSS, CGROUP)
    takes_warmup = True
    takes_cpuprofile = True
    examples = "e.g. -w 100,1000 -t all (comma lists sweep; 'all' is every event type)"
    legacy_name = "chain.csv"
    # the original's chart: speed against workers, one panel per event type
    summary_table = SummaryTable(("speed",), pivot="etype", title="speed per event type (events/s)")
    views = (View("speed", "chain: speed against workers", "speed", LINES, x="workers",
                  xlabel="workers (sender/receiver pairs)", panels="etype", log_x=True, headline=True),)

    def expected_checksum(self, params: Mapping) -> int:
        return params["workers"] * params["events"] * params["esize"]

    def expected_fields(self, params: Mapping) -> dict:
        return {"received": params["workers"] * params["events"]}

    def smoke_params(self, params: Mapping) -> dict:
        return {**params, "workers": 3, "events": 7, "queue": 2, "esize": 5}

    def legacy(self, cells) -> str:
        """`program,etype,worker,event,time,speed`: time in s, speed in events/s, both medians.

        FAILED cells keep their line with FAILED in the figures, so no one mistakes a gap for a result.
        """
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["program", "etype", "worker", "event", "time", "speed"])
        for c in cells:
            p = c.params
            if c.status == "ok" and "time_s" in c.summaries:
                time_s = f"{c.summaries['time_s'].median:.6f}"
                speed = f"{c.summaries['speed'].median:.0f}"
            else:
                time_s = speed = c.status.upper()
            w.writerow([c.program, p["etype"], p["workers"], p["events"], time_s, speed])
        return out.getvalue()


SCENARIO = Chain()
