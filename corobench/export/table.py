"""The terminal tables printed after a run (rich): program names whole, notes below each table."""

from __future__ import annotations

import os

from rich.console import Console
from rich.table import Table

from corobench.export.grouping import groups, tabulate
from corobench.results import Cell, by_scenario

TERMINAL_METRICS = 3  # beyond the headline: the rest are in `--format md/csv/json` and the report


def out_console() -> Console:
    """stdout at the terminal's width; when piped, COLUMNS if set, else 100 columns."""
    probe = Console()
    if probe.is_terminal:
        return probe
    columns = os.environ.get("COLUMNS", "")
    return Console(width=int(columns) if columns.isdigit() and 40 <= int(columns) <= 1000 else 100)


def fitting(data, width: int):
    """Drop metric columns from the right (never program, headline, vs best, runs) until every
    value fits on one line: a cut number is worse than a missing column."""
    def needed(columns: list[int]) -> int:
        # a column needs its widest value or its header; 3 characters of border and padding each
        return sum(max(max(len(r[i]) for r in data.rows) if data.rows else 0, len(data.columns[i])) + 3
                   for i in columns) + 1
    columns = list(range(len(data.columns)))
    while needed(columns) > width and len(columns) > 4:
        columns.pop(-2)  # the last metric before "runs"
    return columns


def print_table(cells: list[Cell], console: Console | None = None) -> None:
    console = console or out_console()
    if cells:
        console.print("Medians [95% CI]; vs best: ×2.00 = twice as slow (or big) as the best, ~ = not significant "
                      "(Mann-Whitney, 5 %). Every metric: --format md, csv or json.", highlight=False, soft_wrap=True)
    for scenario, scenario_cells in by_scenario(cells).items():
        for label, group in groups(scenario_cells):
            data = tabulate(scenario, label, group, TERMINAL_METRICS, ci_in_header=False)
            keep = fitting(data, console.width)
            data.columns = [data.columns[i] for i in keep]
            data.rows = [[row[i] for i in keep] for row in data.rows]
            table = Table(title=data.title, title_justify="left")
            for i, name in enumerate(data.columns):
                table.add_column(name, justify="left" if i == 0 else "right", no_wrap=True)
            for i, row in enumerate(data.rows):
                if i in data.failed_rows:
                    row = [row[0], f"[red]{row[1]}[/]", *row[2:]]
                table.add_row(*row)
            console.print(table)
            for note in data.notes:
                console.print("  " + note, highlight=False, markup=False, soft_wrap=True)
