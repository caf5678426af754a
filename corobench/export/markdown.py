"""Markdown tables: per scenario and parameter set, median with its CI, ratio to the best."""

from __future__ import annotations

from corobench.export.format import number, status_text, with_spread
from corobench.export.grouping import groups, ranked
from corobench.results import Cell, by_scenario


def scenario_tables(cells: list[Cell], heading: str = "###") -> str:
    lines: list[str] = []
    for label, group in groups(cells):
        metrics = group[0].metrics
        head = metrics[0]
        lines.append(f"{heading} {label}\n")
        cols = ["program", f"{head.label} ({head.unit}) median [95% CI]", "vs best"]
        cols += [f"{m.label} ({m.unit})" for m in metrics[1:]]
        cols += ["runs", "notes"]
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("|" + "---|" * len(cols))
        for cell, cmp in ranked(group):
            if cell.status != "ok" or cell.headline() is None:
                row = [cell.program, "**" + cell.status.upper() + "**", ""] + ["—"] * (len(metrics) - 1)
                row += [f"{cell.runs_ok}/{cell.runs_total}", status_text(cell).replace("|", "/")]
            else:
                vs = "best" if cmp is None else cmp.describe()
                row = [cell.program, with_spread(cell.headline()), vs]
                row += [number(cell.summaries[m.key].median) if m.key in cell.summaries else "—"
                        for m in metrics[1:]]
                row += [f"{cell.runs_ok}/{cell.runs_total}", "; ".join(cell.warnings)]
            lines.append("| " + " | ".join(str(x) for x in row) + " |")
        lines.append("")
    return "\n".join(lines)


def to_markdown(cells: list[Cell]) -> str:
    parts = []
    for scenario, group in by_scenario(cells).items():
        parts.append(f"## {scenario}\n")
        parts.append(scenario_tables(group))
    return "\n".join(parts)
