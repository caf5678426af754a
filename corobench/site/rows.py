"""The results site's rows: one per cell (a program at one parameter set) of each session, with its
comparability key, and the "latest result per key" the summaries are made of.

A row carries what the pages filter on (parameters, program, machine, date) and show (the
headline and the scenario's table metrics: median, min and max of the verified runs), already
formatted, so that the page's script only filters and never formats a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from corobench.comparability import ComparabilityKey
from corobench.results import Cell
from corobench.scenarios import Metric, Scenario
from corobench.store import SessionRecord
from corobench.units import human


def when(started_at: str | None) -> tuple[str, str]:
    """(date, time in UTC as `YYYY-MM-DD HH:MM:SS`, what a Plotly date axis reads) of a session."""
    try:
        moment = datetime.fromisoformat(started_at or "")
    except ValueError:
        return "unknown", "1970-01-01 00:00:00"
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d"), moment.strftime("%Y-%m-%d %H:%M:%S")


def column_metrics(scenario: Scenario) -> list[Metric]:
    """The headline, then the columns the terminal table shows (its `table_metrics`, else the next 3)."""
    by_key = {m.key: m for m in scenario.metrics}
    rest = [by_key[k] for k in scenario.table_metrics if k in by_key] or list(scenario.metrics[1:4])
    return [scenario.metrics[0], *rest]


@dataclass
class Row:
    """One cell of one session, as the site uses it."""

    id: int  # its index in the scenario's rows
    key: ComparabilityKey
    session: int
    date: str
    time: str  # UTC, for ordering and the history's x axis
    program: str
    params: dict
    threads: int | None
    status: str
    reason: str
    runs_ok: int
    runs_total: int
    figures: list[tuple[float, float, float] | None]  # per column metric: (median, min, max)
    warnings: list[str] = field(default_factory=list)

    @property
    def headline(self) -> tuple[float, float, float] | None:
        return self.figures[0] if self.status == "ok" else None

    @property
    def group(self) -> tuple:
        """Rows that race each other: the same work on the same machine and load layout."""
        return (self.key.params_key, self.key.threads, self.key.machine, self.key.topology)


def make_row(index: int, key: ComparabilityKey, session: SessionRecord, cell: Cell, metrics: list[Metric]) -> Row:
    date, moment = when(session.started_at)
    figures: list[tuple[float, float, float] | None] = []
    for metric in metrics:
        s = cell.summaries.get(metric.key) if cell.status == "ok" else None
        figures.append((s.median, s.min, s.max) if s is not None else None)
    return Row(index, key, session.id, date, moment, cell.program, cell.params, cell.threads, cell.status,
               cell.reason, cell.runs_ok, cell.runs_total, figures, [str(w) for w in cell.warnings])


def figure_text(value: tuple[float, float, float] | None, unit: str, runs: int) -> str:
    """`1.23M [1.10M–1.31M]`: the median, then min–max of the runs."""
    if value is None:
        return "—"
    median, low, high = value
    if runs <= 1 or low == high:
        return human(median, unit)
    return f"{human(median, unit)} [{human(low, unit)}–{human(high, unit)}]"


def latest_per_key(rows: list[Row]) -> list[Row]:
    """For each comparability key the row of its latest session (ties: the later session number)."""
    best: dict[ComparabilityKey, Row] = {}
    for row in rows:
        have = best.get(row.key)
        if have is None or (row.time, row.session) > (have.time, have.session):
            best[row.key] = row
    return [r for r in rows if best[r.key] is r]


def ratio_to_best(value: float, best: float, better: str) -> float | None:
    """How many times worse than the best (1.0 for the best itself)."""
    if value <= 0 or best <= 0:
        return None
    return value / best if better == "lower" else best / value


@dataclass(frozen=True)
class Win:
    program: str  # with its toolchain where a program has several
    clear: bool  # its runs' min–max lies apart from the runner-up's


def winners(rows: list[Row], better: str, name_of: dict[ComparabilityKey, str]) -> dict[tuple, Win]:
    """Per group (parameters, threads, machine, load layout) of the latest rows: the best median,
    and whether it is clear of the runner-up (their ranges of runs do not overlap)."""
    by_group: dict[tuple, list[Row]] = {}
    for row in latest_per_key(rows):
        if row.headline is not None:
            by_group.setdefault(row.group, []).append(row)
    out = {}
    for group, members in by_group.items():
        if len(members) < 2:
            continue  # a race needs two
        ordered = sorted(members, key=lambda r: r.headline[0], reverse=better == "higher")
        first, second = ordered[0].headline, ordered[1].headline
        clear = first[1] > second[2] if better == "higher" else first[2] < second[1]
        out[group] = Win(name_of[ordered[0].key], clear)
    return out


def as_json(row: Row, metrics: list[Metric], param_names: list[str], key_ids: dict[ComparabilityKey, str],
            group_ids: dict[tuple, int]) -> dict[str, Any]:
    """The row as the page's script reads it (short keys: a scenario may have thousands)."""
    return {
        "i": row.id, "k": key_ids[row.key], "g": group_ids[row.group], "s": row.session, "d": row.date,
        "t": row.time, "prog": row.program, "m": row.key.machine, "topo": row.key.topology,
        "tc": row.key.toolchain, "p": [_param_text(row.params.get(name)) for name in param_names],
        "thr": "" if row.threads is None else str(row.threads), "st": row.status, "why": row.reason,
        "n": row.runs_ok, "of": row.runs_total,
        "v": [f[0] if f is not None else None for f in row.figures],
        "f": [figure_text(f, m.unit, row.runs_ok) for f, m in zip(row.figures, metrics)],
        "w": row.warnings,
    }


def _param_text(value: Any) -> str:
    return "" if value is None else str(value)


__all__ = ["Row", "Win", "as_json", "column_metrics", "figure_text", "latest_per_key", "make_row", "ratio_to_best",
           "when", "winners"]
