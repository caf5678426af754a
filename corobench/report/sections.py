"""Sections a report opens with, before the scenarios' own: what a reader asks first. Each is plain
data (a title, lines, tables, chart files) that report.md and report.html both render."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from corobench.export.grouping import ranked
from corobench.results import Cell, by_scenario
from corobench.scenarios import get_scenario
from corobench.units import human


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    title: str = ""


@dataclass
class Section:
    anchor: str
    title: str
    lines: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[Path] = field(default_factory=list)


def who_wins(cells: list[Cell], min_change: float | None = None) -> Section:
    """Per scenario, parameter set and headline metric: the best program, by how much over the next,
    and whether that difference is one (by the rules of stats.py)."""
    rows = []
    for name, group in by_scenario(cells).items():
        scenario = get_scenario(name)
        labels: dict[str, list[Cell]] = {}
        for c in group:
            labels.setdefault(c.label(), []).append(c)
        for label, same in labels.items():
            order = [(c, t) for c, t in ranked(same, min_change) if c.status == "ok" and c.headline() is not None]
            if not order:
                continue
            best = order[0][0]
            metric = scenario.metrics[0]
            shown = " ".join(part for part in label.split() if not part.endswith("=0"))
            if len(order) == 1:
                rows.append([name, shown, metric.label, best.program, human(best.headline().median, metric.unit),
                             "the only one measured", ""])
                continue
            runner_up, test = order[1]
            mark = test.mark if test is not None else ""
            verdict = {"": "a difference", "~": "not significant", "≈": "under the minimum change"}.get(mark, mark)
            rows.append([name, shown, metric.label, best.program, human(best.headline().median, metric.unit),
                         f"×{test.ratio:.2f} over {runner_up.program}", verdict])
    section = Section("who-wins", "Who wins what",
                      ["The best program per scenario and parameter set on its headline metric, by how much over the "
                       "next one, and whether that is a difference (Mann-Whitney at 5 % and at least 2 %; too few runs "
                       "cannot tell)."])
    section.tables.append(Table(["scenario", "parameters", "metric", "best", "median", "over the next", "difference?"],
                                rows))
    return section
