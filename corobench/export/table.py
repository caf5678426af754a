"""The terminal table printed after a run (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from corobench.export.format import number, status_text, with_spread
from corobench.export.grouping import groups, ranked
from corobench.results import Cell, by_scenario


def print_table(cells: list[Cell], console: Console | None = None) -> None:
    console = console or Console(width=None if Console().is_terminal else 200)
    for scenario, scenario_cells in by_scenario(cells).items():
        for label, group in groups(scenario_cells):
            metrics = group[0].metrics
            table = Table(title=f"{scenario}: {label}", title_justify="left")
            table.add_column("program")
            table.add_column(f"{metrics[0].label} ({metrics[0].unit})", justify="right")
            table.add_column("vs best", justify="right")
            for m in metrics[1:4]:
                table.add_column(f"{m.label} ({m.unit})", justify="right")
            table.add_column("notes")
            problems = []
            for cell, cmp in ranked(group):
                if cell.status != "ok" or cell.headline() is None:
                    style = "red" if cell.status == "failed" else "yellow"
                    table.add_row(cell.program, f"[{style}]{cell.status.upper()}[/]", "", "", "", "", "see below")
                    problems.append(f"{cell.program}: {status_text(cell)}")
                    continue
                row = [cell.program, with_spread(cell.headline()), "best" if cmp is None else cmp.describe()]
                row += [number(cell.summaries[m.key].median) if m.key in cell.summaries else "—"
                        for m in metrics[1:4]]
                table.add_row(*row, "; ".join(cell.warnings))
            console.print(table)
            for line in problems:
                console.print("  " + line, highlight=False, markup=False)
