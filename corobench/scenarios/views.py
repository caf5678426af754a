"""What a scenario shows: its charts declared as data, drawn by the report layer (report/charts.py).

A scenario lists `View`s — which metric, against which parameter, split into panels or bar groups
by which, drawn as lines or bars, on log or linear axes — and never draws anything itself; so a new
scenario writes no plotting code, and every chart follows the same rules (ticks in the metric's
unit, shared axes where panels are compared, runs too short to compare marked as such).
"""

from __future__ import annotations

from dataclasses import dataclass

LINES = "lines"  # the metric against parameter `x`, one line per program (bars when x has one value)
BARS = "bars"  # one bar per program
GROUPED = "grouped-bars"  # one row of bars per program, one bar per value of `group`
PERCENTILES = "percentiles"  # several metrics (e.g. latency p50 … p99.9) per program, one line each
SERIES = "series"  # a series each run stored (e.g. RSS over time), the median run's per program


@dataclass(frozen=True)
class View:
    name: str  # the chart's file-name part
    title: str
    metric: str  # the metric key (for PERCENTILES: the first of `metrics`)
    shape: str = BARS
    x: str | None = None  # LINES: the parameter on the x axis
    xlabel: str = ""
    panels: str | None = None  # LINES: one panel per value of this parameter, all sharing one y axis from 0
    group: str | None = None  # GROUPED (and LINES with one x value): the bar groups
    log_x: bool = False
    log_y: bool = False
    metrics: tuple[tuple[str, str], ...] = ()  # PERCENTILES: (label, metric key) pairs; SERIES: ((label, key),)
    headline: bool = False  # the scenario's summary chart: first in its section

    def bars_title(self) -> str:
        """The title when a LINES view is drawn as bars (its x has one value): against nothing."""
        return self.title.split(" against ")[0] if self.shape == LINES else self.title

    def uses(self) -> set[str]:
        """The parameters this view lays out inside one figure; the others split figures."""
        return {p for p in (self.x, self.panels, self.group) if p}


@dataclass(frozen=True)
class SummaryTable:
    """The table a scenario's section opens with, shaped like its original's: one row per program,
    these metrics' medians, and with `pivot` one group of them per value of that parameter (http:
    per connection count; tasks: per N)."""

    metrics: tuple[str, ...]
    pivot: str | None = None
    title: str = ""
