"""What a scenario is: its parameters, how it runs, what a correct run reports, how it is shown.

Each scenario is one module in this package (chain.py, tasks.py, ...) holding one `Scenario`
subclass; the rest of the harness reads everything it needs from that object and names no
scenario. A scenario names its run kind (`batch`: one measured process that prints one JSON
line; `server`: a server loaded by our client), see corobench/runkinds/.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from corobench import validate
from corobench.errors import UsageError
from corobench.scenarios.views import SummaryTable, View

if TYPE_CHECKING:
    from corobench.results import Cell
    from corobench.store import RunRow

CHECKSUM_MAX = 2**63 - 1  # the protocol's checksum range (a signed 64-bit integer)


@dataclass(frozen=True)
class Param:
    """One parameter of a scenario: a suite key, a CLI option of `run`, a flag of the program."""

    name: str  # the JSON key and suite key
    long: str  # the program's (and `corobench run`'s) long flag
    default: object
    help: str
    short: str | None = None  # the short flag, where the protocol gives one
    minimum: int = 1
    maximum: int = CHECKSUM_MAX
    choices: tuple[str, ...] = ()  # a name parameter (e.g. the event type) instead of a count
    aliases: Callable[[str], str | None] | None = None  # e.g. "2" -> "str_ptr"
    to_program: bool = True  # passed to the program; False: only the load generator's (servers)

    def parse(self, value: object) -> object:
        if self.choices:
            text = str(value).strip()
            named = self.aliases(text) if self.aliases else None
            if named in self.choices:
                return named
            if text in self.choices:
                return text
            raise UsageError(f"unknown {self.name} '{value}' (use {', '.join(self.choices)})")
        return validate.whole(self.name, value, self.minimum, self.maximum)

    def sort_value(self, value: object) -> object:
        """Reports order a parameter's values numerically, names in the order of `choices`."""
        return self.choices.index(value) if self.choices and value in self.choices else value


class CellWarning(str):
    """A warning about one cell: what it is (the same words for every cell it applies to, so a
    table can say it once) and this cell's detail. As a string: "summary: detail"."""

    summary: str
    detail: str

    def __new__(cls, summary: str, detail: str) -> "CellWarning":
        obj = super().__new__(cls, f"{summary}: {detail}")
        obj.summary, obj.detail = summary, detail
        return obj


class RunView:
    """A stored run as the metrics see it: its columns (as attributes or by name), its parameters
    and its scenario metrics."""

    def __init__(self, row: "RunRow"):
        self.row = row
        self.params: dict = row.params
        self.metrics: dict = row.metrics or {}

    def __getitem__(self, key: str) -> Any:
        return getattr(self.row, key)

    def __getattr__(self, key: str) -> Any:
        return getattr(self.row, key)


@dataclass(frozen=True)
class Metric:
    """A figure derived from one stored run; the scenario's first metric is its headline."""

    key: str
    label: str
    unit: str
    value: Callable[[RunView], float | None]
    better: str  # "lower" or "higher"


def column(name: str, scale: float = 1.0) -> Callable[[RunView], float | None]:
    """A metric read from one of the store's columns (the same for every scenario)."""
    def get(run: RunView) -> float | None:
        v = run[name]
        return None if v is None else v * scale
    return get


def measured(name: str, scale: float = 1.0) -> Callable[[RunView], float | None]:
    """A metric read from the run's scenario metrics (the store's open JSON column)."""
    def get(run: RunView) -> float | None:
        v = run.metrics.get(name)
        return None if v is None else v * scale
    return get


def _cpu(run: RunView) -> float | None:
    return None if run["user_s"] is None else run["user_s"] + run["sys_s"]


# Metrics every process-measuring scenario shares.
WALL = Metric("wall_s", "wall", "s", column("wall_ns", 1e-9), "lower")
CPU = Metric("cpu_s", "CPU user+sys", "s", _cpu, "lower")
# Peak RSS (wait4): the largest process of the run, shared libraries included — the figure the
# well-known "memory of N tasks" comparisons quote. The cgroup peak counts every process of the
# run but only pages charged during it (anonymous memory and newly read files; libraries already
# in the page cache are charged elsewhere), so it is shown beside RSS, not instead of it.
RSS = Metric("rss_mib", "peak RSS", "MiB", column("max_rss_kb", 1 / 1024), "lower")
CGROUP = Metric("cgroup_mib", "cgroup peak", "MiB", column("cgroup_peak_bytes", 1 / 2**20), "lower")
ELAPSED = Metric("elapsed_s", "elapsed", "s", column("elapsed_ns", 1e-9), "lower")


class Scenario:
    """Base of every scenario module's class. Override what differs; defaults fit a batch program."""

    name: str = ""
    summary: str = ""
    kind: str = "batch"  # the run kind (corobench/runkinds): "batch" or "server"
    report_order: int = 100  # scenarios appear in reports in this order
    params: tuple[Param, ...] = ()
    metrics: tuple[Metric, ...] = ()  # the first is the headline
    takes_warmup: bool = False  # the program accepts --warmup K (unmeasured passes)
    takes_cpuprofile: bool = False
    # timing fields the program must report as positive integers
    timing_fields: tuple[str, ...] = ("elapsed_ns",)
    examples: str = ""  # `corobench run <name> --help` shows these
    views: tuple[View, ...] = ()  # its charts, drawn by the report layer (views.py)
    table_metrics: tuple[str, ...] = ()  # the terminal table's columns after the headline (default: the next 3)
    summary_table: SummaryTable | None = None  # the table its section opens with (views.py)

    # ---------------------------------------------------------------- parameters

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict:
        return {p.name: p.parse(p.default) for p in self.params}

    def normalise(self, raw: Mapping) -> dict:
        """Parse user values (CLI or suite) into typed params, filling defaults; check range."""
        params = {}
        for p in self.params:
            value = raw.get(p.name)
            params[p.name] = p.parse(p.default if value is None else value)
        checksum = self.expected_checksum(params)
        if checksum is not None and checksum > CHECKSUM_MAX:
            raise UsageError(f"{self.name}: the checksum of these parameters exceeds 2^63-1")
        return params

    def argv(self, params: Mapping) -> list[str]:
        """The program's arguments for these parameters (after its manifest's run argv)."""
        out = [self.name]
        for p in self.params:
            if p.to_program:
                out += [p.long, str(params[p.name])]
        return out

    def smoke_params(self, params: Mapping) -> dict:
        """The tiny size the verification layer runs before measuring anything."""
        return dict(params)

    def estimate_s(self, params: Mapping) -> float | None:
        """How long a run of these parameters should take, where they say (for the plan before any
        earlier run of the cell is known); None: they do not say."""
        return None

    def sort_key(self, params: Mapping) -> tuple:
        return tuple(self.param(k).sort_value(v) if any(p.name == k for p in self.params) else v
                     for k, v in params.items())

    # ---------------------------------------------------------------- verification (batch)

    def expected_checksum(self, params: Mapping) -> int | None:
        """The checksum a correct run reports, or None when the scenario has none."""
        return None

    def expected_fields(self, params: Mapping) -> dict:
        """Further output fields that must match exactly (beyond the echoed parameters)."""
        return {}

    def run_metrics(self, result: Mapping, params: Mapping) -> dict:
        """Scenario figures taken from a verified run's output, stored in the run's metrics."""
        return {}

    # ---------------------------------------------------------------- reports

    def caveats(self, params: Mapping, medians: Mapping[str, float]) -> list[CellWarning]:
        """Warnings about what a verified result means: (params, median of each metric)."""
        return []

    def legacy(self, cells: list[Cell]) -> str | None:
        """The original benchmark's own output format for these cells, where it has one."""
        return None

    legacy_name: str | None = None  # the file `report` writes the legacy output to
