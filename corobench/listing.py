"""`corobench list`: implementations x scenarios, and whether each can run here (and if not, why)."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from corobench import build as builder
from corobench.discover import discover, discover_all, unavailable_reason
from corobench.export.table import out_console
from corobench.scenarios import SCENARIOS
from corobench.verify import clean_text


def print_listing(results: Path, tools: list) -> None:
    state = builder.BuildState()
    table = Table(title="implementations (scenarios: yes, or the variants)")
    table.add_column("id", no_wrap=True)  # the names a user types: never cut
    table.add_column("language / runtime")
    for name in SCENARIOS:
        table.add_column(name, justify="center", overflow="fold")  # variant names are typed too: never cut
    table.add_column("status", no_wrap=True)
    details: list[str] = []  # why something cannot run: below the table, whole
    console = out_console()

    def status_of(m) -> str:
        reason = unavailable_reason(m)
        entry = state.get(m)
        if reason:
            details.append(f"{m.id}: cannot run: {reason}")
            return "[yellow]cannot run[/]"
        if m.build and entry and not entry.get("ok"):
            details.append(f"{m.id}: build failed: {entry.get('error')} (log: {entry.get('log')})")
            return "[red]build failed[/]"
        if m.build and not builder.is_up_to_date(m, state):
            return "ready to build" if not entry else "needs rebuild"
        return "[green]ready[/]"

    for m in discover():
        cells = []
        for name in SCENARIOS:
            if name not in m.scenarios:
                cells.append("-")
            else:
                variants = m.variants_of(name)
                cells.append(", ".join(variants) if variants else "yes")
        table.add_row(m.id, f"{m.language} / {m.runtime}", *cells, status_of(m))
    console.print(table)
    for tool in tools:
        console.print(f"tool {tool.id} ({', '.join(tool.scenarios)}): {status_of(tool)}", highlight=False)
    for bad in discover_all()[1]:
        details.append(f"broken manifest {bad.path}: {clean_text(bad.reason, 300)}")
    for line in details:
        console.print("  " + line, highlight=False, markup=False, soft_wrap=True)
