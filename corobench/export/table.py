"""The terminal tables (rich) of a session and of a comparison: program names whole, notes below each table."""

from __future__ import annotations

import io
import os

from rich.console import Console
from rich.table import Table
from rich.text import Text

from corobench import compare as cmp
from corobench.compare import Result
from corobench.export.base import Exporter
from corobench.export.grouping import groups, summary_tables, tabulate
from corobench.results import Cell, by_scenario
from corobench.stats import interval_name
from corobench.verify import clean_text



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
        runs = [c.headline().n for c in cells if c.status == "ok" and c.headline() is not None]
        console.print(f"Medians [{interval_name(runs)}]; vs best: ×2.00 = twice as slow (or big) as the best; ~ not "
                      "significant, ≈ under 2 % (Mann-Whitney, 5 %). Every metric: --format md, csv or json.",
                      highlight=False, soft_wrap=True)
    for scenario, scenario_cells in by_scenario(cells).items():
        for summary in summary_tables(scenario, scenario_cells):  # first: the scenario's own point
            table = Table(title=f"{scenario} summary: {summary.title}", title_justify="left")
            for i, name in enumerate(summary.columns):
                table.add_column(name, justify="left" if i == 0 else "right", overflow="fold")
            for row in summary.rows:
                table.add_row(*[Text(x) for x in row])
            console.print(table)
        for label, group in groups(scenario_cells):
            data = tabulate(scenario, label, group, terminal=True, ci_in_header=False)
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


def print_comparison(result: Result, console: Console | None = None) -> None:
    """The comparison as terminal tables: one per scenario and metric."""
    console = console or out_console()
    console.print(f"A = {cmp.session_text(result.a)}\nB = {cmp.session_text(result.b)}", highlight=False,
                  markup=False)
    styles = {"better": "green", "worse": "red"}
    for group in result.groups():
        metric = group.metric
        console.print(group.title, highlight=False, markup=False, soft_wrap=True)  # one line, however long
        table = Table()
        table.add_column("program", no_wrap=True)
        if group.varying:
            table.add_column("parameters")
        for col in ("A median [CI]", "B median [CI]", "change"):
            table.add_column(col, justify="right", no_wrap=True)  # a figure is never cut
        table.add_column("p", justify="right")
        table.add_column("B vs A")
        for ln in group.lines:
            verdict = ln.verdict
            sides = [cmp.side_text(c, metric) for c in (ln.a_cell, ln.b_cell)]
            label = [Text(group.label(ln.a_cell))] if group.varying else []
            # Text, not markup: names and brackets print as they are
            table.add_row(Text(ln.a_cell.program), *label,
                          *[Text(t, style="red" if t == "FAILED" else "") for t in sides],
                          Text(cmp.change_text(ln)), Text(cmp.p_text(ln)),
                          Text(verdict, style=styles.get(verdict, "red" if "FAILED" in verdict else "")))
        console.print(table)
    for reason in cmp.failure_notes(result):
        console.print("  " + clean_text(reason, 300), highlight=False, markup=False, soft_wrap=True)
    for name, cells in (("A", result.only_a), ("B", result.only_b)):
        if cells:
            console.print(f"only in {name}:", highlight=False, soft_wrap=True)
            for cell in cells:
                console.print("  " + cmp.one_side_text(cell), highlight=False, markup=False, soft_wrap=True)
    console.print(cmp.summary_line(result), highlight=False, markup=False, soft_wrap=True)
    for line in result.warnings:
        console.print("warning: " + line, style="yellow", highlight=False, markup=False, soft_wrap=True)
    for line in result.notes:
        console.print(f"note: {line}", highlight=False, markup=False, soft_wrap=True)


class Terminal(Exporter):
    name = "table"
    help = "tables for the terminal: each scenario's headline metrics"
    order = 10

    def session_text(self, cells: list[Cell], meta: dict) -> str:
        console = Console(record=True, width=out_console().width, file=io.StringIO())
        print_table(cells, console)
        return console.export_text()

    def print_session(self, cells: list[Cell], meta: dict) -> None:
        print_table(cells)

    def comparison_text(self, result: Result) -> str:
        console = Console(record=True, width=out_console().width, file=io.StringIO())
        print_comparison(result, console)
        return console.export_text()

    def print_comparison(self, result: Result) -> None:
        print_comparison(result)


EXPORTER = Terminal()
