"""Suites: TOML files that list benchmarks (a scenario, parameter values, implementations).

    name = "quick"
    reps = 3                     # optional, overrides the default repetitions
    timeout = 120                # optional, seconds per run

    [[benchmark]]
    scenario = "<name>"          # a module of corobench/scenarios/
    impls = ["go", "rust-tokio"] # optional: default every implementation of the scenario
    <param> = [100, 1000]        # the scenario's parameters: a list sweeps; a scalar is one value
    threads = 2                  # optional, as are warmup, timeout and reps

A top-level `hosts = "FILE"` (relative to the suite) loads its server runs from the client hosts
that hosts file names, as `--hosts FILE` does. A `[capacity]` table (slo = ["p99=1ms"], step_s,
warmup_s, reps, resolution, max_rate) makes it a capacity search of its server benchmarks, as
`corobench capacity` runs one.

Every value list is expanded as a cartesian product, in the order the scenario lists its params.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from corobench import validate
from corobench.errors import UsageError
from corobench.files import read_toml
from corobench.scenarios import get_scenario

MAX_BENCHMARKS = 10_000  # parameter sets one sweep may expand to
SUITE_KEYS = {"name", "description", "reps", "timeout", "hosts", "capacity", "benchmark"}
CAPACITY_KEYS = {"slo", "step_s", "warmup_s", "reps", "resolution", "max_rate"}
BENCH_KEYS = {"scenario", "impls", "threads", "warmup", "timeout", "reps"}


@dataclass(frozen=True)
class Benchmark:
    scenario: str
    params: dict
    impls: tuple[str, ...] = ()
    threads: int | None = None
    warmup: int | None = None
    timeout: float | None = None
    reps: int | None = None


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    reps: int | None
    timeout: float | None
    benchmarks: tuple[Benchmark, ...]
    kind_options: dict = field(default_factory=dict)  # e.g. hosts = "FILE": the server runs' hosts file
    capacity: dict | None = None  # a capacity search's settings ([capacity]), checked


def expand(scenario_name: str, raw: dict, typed: bool = False) -> list[dict]:
    """Turn {param: value-or-list} into the list of concrete, checked parameter dicts. `typed`: the
    values come from TOML and keep their type (a number written as a string is an error there;
    the command line gives every value as text)."""
    scenario = get_scenario(scenario_name)
    axes = []
    for p in scenario.params:
        value = raw.get(p.name)
        values = value if isinstance(value, list) else [value]
        if not values:
            raise UsageError(f"{scenario_name}: '{p.name}' has an empty list")
        if typed and not p.choices and any(isinstance(v, str) for v in values):
            raise UsageError(f"{scenario_name}: '{p.name}' must be a number, not a string (TOML values keep their type)")
        axes.append([(p.name, v) for v in values])
    count = 1
    for axis in axes:
        count *= len(axis)
    if count > MAX_BENCHMARKS:
        raise UsageError(f"{scenario_name}: these lists sweep {count} parameter sets; at most {MAX_BENCHMARKS}")
    return [scenario.normalise(dict(combo)) for combo in itertools.product(*axes)]


def load_suite(path: Path) -> Suite:
    data = read_toml(path, "suite")
    where = str(path)
    unknown = set(data) - SUITE_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown key(s): {', '.join(sorted(unknown))}")
    entries = data.get("benchmark")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{where}: needs at least one [[benchmark]] table")
    benchmarks: list[Benchmark] = []
    for i, entry in enumerate(entries, 1):
        at = f"{where}: benchmark {i}"
        if not isinstance(entry, dict) or "scenario" not in entry:
            raise UsageError(f"{at}: needs a 'scenario'")
        scenario = get_scenario(str(entry["scenario"]))
        param_names = {p.name for p in scenario.params}
        unknown = set(entry) - BENCH_KEYS - param_names
        if unknown:
            raise UsageError(f"{at}: unknown key(s) for {scenario.name}: {', '.join(sorted(unknown))}")
        impls = entry.get("impls", [])
        if not isinstance(impls, list) or not all(isinstance(x, str) for x in impls):
            raise UsageError(f"{at}: 'impls' must be a list of implementation ids")
        try:
            param_sets = expand(scenario.name, {k: v for k, v in entry.items() if k in param_names}, typed=True)
        except UsageError as exc:
            raise UsageError(f"{at}: {exc}") from None
        try:
            warmup = _maybe(entry, "warmup", validate.warmup)
            threads = _maybe(entry, "threads", validate.threads)
            timeout = _maybe(entry, "timeout", lambda v, n: validate.seconds(n, v, validate.MIN_TIMEOUT_S))
            reps = _maybe(entry, "reps", lambda v, n: validate.whole(n, v, 1, validate.MAX_REPS))
        except UsageError as exc:
            raise UsageError(f"{at}: {exc}") from None
        for params in param_sets:
            benchmarks.append(Benchmark(scenario=scenario.name, params=params, impls=tuple(impls), threads=threads,
                                        warmup=warmup, timeout=timeout, reps=reps))
    try:
        reps = _maybe(data, "reps", lambda v, n: validate.whole(n, v, 1, validate.MAX_REPS))
        timeout = _maybe(data, "timeout", lambda v, n: validate.seconds(n, v, validate.MIN_TIMEOUT_S))
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    kind_options = {}
    if "hosts" in data:
        if not isinstance(data["hosts"], str) or not data["hosts"]:
            raise UsageError(f"{where}: hosts must be the path of a hosts file")
        kind_options["hosts"] = str(path.parent / data["hosts"])
    capacity = _capacity(data["capacity"], where, benchmarks) if "capacity" in data else None
    return Suite(name=str(data.get("name", path.stem)), description=str(data.get("description", "")),
                 reps=reps, timeout=timeout, benchmarks=tuple(benchmarks), kind_options=kind_options,
                 capacity=capacity)


def _capacity(table: object, where: str, benchmarks: list[Benchmark]) -> dict:
    """A suite's [capacity] table, checked: the objective parsed, the numbers in range."""
    from corobench.capacity import parse_objective

    if not isinstance(table, dict):
        raise UsageError(f"{where}: [capacity] must be a table")
    unknown = set(table) - CAPACITY_KEYS
    if unknown:
        raise UsageError(f"{where}: [capacity]: unknown key(s): {', '.join(sorted(unknown))}")
    slo = table.get("slo")
    if not isinstance(slo, list) or not all(isinstance(x, str) for x in slo):
        raise UsageError(f"{where}: [capacity]: slo must be a list like [\"p99=1ms\"]")
    if any(get_scenario(b.scenario).kind != "server" for b in benchmarks):
        raise UsageError(f"{where}: a capacity suite measures servers only (echo, http)")
    try:
        out = {"objective": parse_objective(slo).limits,
               "step_s": _maybe(table, "step_s", lambda v, n: validate.seconds(n, v, 0.5, 3600)) or 5.0,
               "warmup_s": _maybe(table, "warmup_s", lambda v, n: validate.seconds(n, v, -1e-9, 3600)),
               "reps": _maybe(table, "reps", lambda v, n: validate.whole(n, v, 1, 100)) or 1,
               "resolution": _maybe(table, "resolution", lambda v, n: validate.seconds(n, v, 0.0, 0.99)) or 0.05,
               "max_rate": _maybe(table, "max_rate", lambda v, n: float(validate.whole(n, v, 1, 10**9)))}
    except UsageError as exc:
        raise UsageError(f"{where}: [capacity]: {exc}") from None
    out["warmup_s"] = 1.0 if out["warmup_s"] is None else out["warmup_s"]
    return out


def _maybe(table: dict, key: str, check):
    """table[key] checked by check(value, name), or None when absent (TOML values keep their type:
    `threads = 0.5`, `reps = true` or `reps = "1"` are errors, not 0 or 1)."""
    if key not in table:
        return None
    if isinstance(table[key], str):
        raise UsageError(f"'{key}' must be a number, not a string (TOML values keep their type)")
    return check(table[key], f"'{key}'")
