"""What is measured, per scenario, and how each figure is derived from a stored run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Mapping

from corobench.scenarios import get_scenario


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    value: Callable[[Mapping, dict], float | None]  # (run row, params) -> value
    better: str  # "lower" or "higher"


def _col(name: str, scale: float = 1.0) -> Callable[[Mapping, dict], float | None]:
    def get(row: Mapping, params: dict) -> float | None:
        v = row[name]
        return None if v is None else v * scale
    return get


def _cpu(row: Mapping, params: dict) -> float | None:
    if row["user_s"] is None:
        return None
    return row["user_s"] + row["sys_s"]


WALL = Metric("wall_s", "wall", "s", _col("wall_ns", 1e-9), "lower")
CPU = Metric("cpu_s", "CPU user+sys", "s", _cpu, "lower")
# Peak RSS (wait4): the largest process of the run, shared libraries included — the figure the
# well-known "memory of N tasks" comparisons quote. The cgroup peak counts every process of the
# run but only pages charged during it (anonymous memory and newly read files; libraries already
# in the page cache are charged elsewhere), so it is shown beside RSS, not instead of it.
RSS = Metric("rss_mib", "peak RSS", "MiB", _col("max_rss_kb", 1 / 1024), "lower")
CGROUP = Metric("cgroup_mib", "cgroup peak", "MiB", _col("cgroup_peak_bytes", 1 / 2**20), "lower")

CHAIN_TIME = Metric("time_s", "time", "s", _col("elapsed_ns", 1e-9), "lower")
CHAIN_SPEED = Metric(
    "speed", "speed", "events/s",
    lambda row, p: None if not row["elapsed_ns"] else p["workers"] * p["events"] / (row["elapsed_ns"] / 1e9),
    "higher",
)
TASKS_SPAWN = Metric("spawn_s", "spawn", "s", _col("spawn_ns", 1e-9), "lower")
TASKS_ELAPSED = Metric("elapsed_s", "elapsed", "s", _col("elapsed_ns", 1e-9), "lower")
PER_ITERATION = Metric(
    "per_iteration_us", "per iteration", "µs",
    lambda row, p: None if not row["elapsed_ns"] else row["elapsed_ns"] / p["iterations"] / 1e3,
    "lower",
)

# The first metric of each list is the scenario's headline figure.
SCENARIO_METRICS: dict[str, tuple[Metric, ...]] = {
    "chain": (CHAIN_SPEED, CHAIN_TIME, WALL, CPU, RSS, CGROUP),
    "tasks": (RSS, CGROUP, TASKS_SPAWN, TASKS_ELAPSED, CPU, WALL),
    "blocking": (PER_ITERATION, WALL, CPU, RSS, CGROUP),
}


def metrics_for(scenario: str) -> tuple[Metric, ...]:
    get_scenario(scenario)
    return SCENARIO_METRICS[scenario]


def row_params(row: Mapping) -> dict:
    return json.loads(row["params"])
