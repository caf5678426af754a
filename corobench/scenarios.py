"""The scenarios: their parameters, how they become argv, and what a correct run must report.

A scenario is data, not code paths scattered through the harness: the CLI, suites, verification
and reports all read these definitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from corobench.errors import UsageError

CHECKSUM_MAX = 2**63 - 1  # the protocol's checksum range (a signed 64-bit integer)

ETYPES = ("int", "str", "str_ptr", "str_clone")


def parse_etype(value: object) -> str:
    text = str(value).strip()
    if text.isdigit() and int(text) < len(ETYPES):
        return ETYPES[int(text)]
    if text in ETYPES:
        return text
    raise UsageError(f"unknown event type '{value}' (use 0-3 or {', '.join(ETYPES)})")


@dataclass(frozen=True)
class Param:
    name: str  # the JSON key and suite key
    short: str  # the program's short flag
    long: str  # the program's long flag
    default: object
    help: str
    kind: str = "count"  # "count" (integer >= minimum) or "etype"
    minimum: int = 1

    def parse(self, value: object) -> object:
        if self.kind == "etype":
            return parse_etype(value)
        if isinstance(value, bool):
            raise UsageError(f"{self.name} must be a whole number, not {value!r}")
        try:
            number = int(str(value).strip().replace("_", ""))
        except ValueError:
            raise UsageError(f"{self.name} must be a whole number, not {value!r}") from None
        if number < self.minimum:
            raise UsageError(f"{self.name} must be >= {self.minimum}, not {number}")
        return number


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    params: tuple[Param, ...]
    expected_checksum: Callable[[dict], int]
    extra_expected: Callable[[dict], dict]  # further fields the output must match exactly
    # timing fields the program must report as positive integers
    timing_fields: tuple[str, ...] = ("elapsed_ns",)
    # how to present the work rate: (label, function of params and elapsed seconds)
    unit_of_work: str = "op"
    work_count: Callable[[dict], int] = lambda p: 1
    takes_warmup: bool = False
    takes_cpuprofile: bool = False
    # the tiny size the verification layer uses before measuring anything
    smoke_params: Callable[[dict], dict] = lambda p: p
    # warnings about what a verified result means: (params, median of each metric) -> texts
    caveats: Callable[[dict, dict], list[str]] = lambda p, medians: []

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict:
        return {p.name: p.parse(p.default) for p in self.params}

    def normalise(self, raw: dict) -> dict:
        """Parse user values (CLI or suite) into typed params, filling defaults; check range."""
        params = {}
        for p in self.params:
            params[p.name] = p.parse(raw[p.name]) if raw.get(p.name) is not None else p.parse(p.default)
        if self.expected_checksum(params) > CHECKSUM_MAX:
            raise UsageError(f"{self.name}: the checksum of these parameters exceeds 2^63-1")
        return params

    def argv(self, params: dict) -> list[str]:
        out = [self.name]
        for p in self.params:
            out += [p.long, str(params[p.name])]
        return out


CHAIN = Scenario(
    name="chain",
    summary="W senders each feed their own receiver through a bounded queue of Q, E events each",
    params=(
        Param("workers", "-w", "--workers", 1000, "sender/receiver pairs"),
        Param("events", "-e", "--events", 10000, "events each sender sends"),
        Param("queue", "-q", "--queue", 256, "capacity of each bounded queue"),
        Param("etype", "-t", "--etype", "int", "event type: 0/int 1/str 2/str_ptr 3/str_clone", "etype"),
        Param("esize", "-s", "--esize", 10, "string length in bytes, or the int's value"),
    ),
    expected_checksum=lambda p: p["workers"] * p["events"] * p["esize"],
    extra_expected=lambda p: {"received": p["workers"] * p["events"]},
    unit_of_work="event",
    work_count=lambda p: p["workers"] * p["events"],
    takes_warmup=True,
    takes_cpuprofile=True,
    smoke_params=lambda p: {**p, "workers": 3, "events": 7, "queue": 2, "esize": 5},
)

TASKS = Scenario(
    name="tasks",
    summary="N concurrent tasks, each sleeps D ms then counts itself: memory and start-up cost",
    params=(
        Param("tasks", "-n", "--tasks", 10000, "concurrent tasks"),
        Param("sleep_ms", "-d", "--sleep-ms", 10000, "how long each task sleeps, ms", minimum=0),
    ),
    expected_checksum=lambda p: p["tasks"],
    extra_expected=lambda p: {},
    timing_fields=("elapsed_ns", "spawn_ns"),
    unit_of_work="task",
    work_count=lambda p: p["tasks"],
    smoke_params=lambda p: {**p, "tasks": 10, "sleep_ms": 1},
    caveats=lambda p, m: [
        f"spawning took {m['spawn_s']:.3g} s, longer than the {p['sleep_ms']} ms sleep: the first tasks "
        f"ended before the last began, so not all {p['tasks']} were alive at once"
    ] if m.get("spawn_s", 0) * 1000 > p["sleep_ms"] else [],
)

BLOCKING = Scenario(
    name="blocking",
    summary="T tasks per iteration each read B bytes of /dev/urandom and write them to /dev/null",
    params=(
        Param("tasks", "-n", "--tasks", 1000, "tasks per iteration"),
        Param("iterations", "-i", "--iterations", 1000, "measured iterations"),
        Param("bytes", "-b", "--bytes", 10, "bytes each task reads and writes"),
    ),
    expected_checksum=lambda p: p["tasks"] * p["iterations"] * p["bytes"],
    extra_expected=lambda p: {},
    unit_of_work="iteration",
    work_count=lambda p: p["iterations"],
    smoke_params=lambda p: {**p, "tasks": 4, "iterations": 3, "bytes": 5},
)

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (CHAIN, TASKS, BLOCKING)}
# Server scenarios (docs/protocol.md, "Servers"): manifests may list them; the server run kind runs them.
SERVER_SCENARIOS = ("echo", "http")


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise UsageError(f"unknown scenario '{name}' (known: {', '.join(SCENARIOS)})") from None
