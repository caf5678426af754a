"""Suites: TOML files that list benchmarks (a scenario, parameter values, implementations).

    name = "quick"
    reps = 3                     # optional, overrides the default repetitions
    timeout = 120                # optional, seconds per run

    [[benchmark]]
    scenario = "chain"
    impls = ["go", "rust-tokio"] # optional: default every implementation of the scenario
    workers = [100, 1000]        # a list sweeps; a scalar is one value
    etype = ["int", "str"]
    events = 1000

Every value list is expanded as a cartesian product, in the order the scenario lists its params.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from corobench.errors import UsageError
from corobench.scenarios import get_scenario

SUITE_KEYS = {"name", "description", "reps", "timeout", "benchmark"}
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


def expand(scenario_name: str, raw: dict) -> list[dict]:
    """Turn {param: value-or-list} into the list of concrete, checked parameter dicts."""
    scenario = get_scenario(scenario_name)
    axes = []
    for p in scenario.params:
        value = raw.get(p.name)
        values = value if isinstance(value, list) else [value]
        if not values:
            raise UsageError(f"{scenario_name}: '{p.name}' has an empty list")
        axes.append([(p.name, v) for v in values])
    return [scenario.normalise(dict(combo)) for combo in itertools.product(*axes)]


def _positive(value: object, what: str, where: str, cast=int) -> object:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise UsageError(f"{where}: '{what}' must be a positive number")
    return cast(value)


def load_suite(path: Path) -> Suite:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read suite {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"suite {path} is not valid TOML: {exc}") from None
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
            param_sets = expand(scenario.name, {k: v for k, v in entry.items() if k in param_names})
        except UsageError as exc:
            raise UsageError(f"{at}: {exc}") from None
        warmup = entry.get("warmup")
        if warmup is not None and (isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0):
            raise UsageError(f"{at}: 'warmup' must be a whole number >= 0")
        for params in param_sets:
            benchmarks.append(Benchmark(
                scenario=scenario.name, params=params, impls=tuple(impls),
                threads=_positive(entry.get("threads"), "threads", at), warmup=warmup,
                timeout=_positive(entry.get("timeout"), "timeout", at, float),
                reps=_positive(entry.get("reps"), "reps", at),
            ))
    return Suite(
        name=str(data.get("name", path.stem)), description=str(data.get("description", "")),
        reps=_positive(data.get("reps"), "reps", where), timeout=_positive(data.get("timeout"), "timeout", where, float),
        benchmarks=tuple(benchmarks),
    )
