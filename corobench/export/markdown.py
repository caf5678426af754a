"""Markdown tables: per scenario and parameter set, median with its CI, ratio to the best."""

from __future__ import annotations

from corobench.export.grouping import groups, scenario_warnings, tabulate
from corobench.results import Cell, by_scenario

LEGEND = ("Medians of the measured repetitions; the bracket is the median's 95 % confidence interval from "
          "order statistics (with fewer than 6 runs it is min–max and covers less than 95 %). \"vs best\": how "
          "many times worse than the best program (×2.00: the best is twice as fast, or needs half the memory); "
          "~ marks a difference a Mann-Whitney U test does not find significant at 5 %. FAILED cells did not pass "
          "verification and carry no figure.")


def cell_text(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def scenario_tables(scenario: str, cells: list[Cell], heading: str = "###") -> str:
    lines: list[str] = []
    for label, group in groups(cells):
        data = tabulate(scenario, label, group, warnings=False)
        lines.append(f"{heading} {label}\n")
        lines.append("| " + " | ".join(data.columns) + " |")
        lines.append("|" + "---|" * len(data.columns))
        for i, row in enumerate(data.rows):
            if i in data.failed_rows:
                row = [row[0], f"**{row[1]}**", *row[2:]]
            lines.append("| " + " | ".join(cell_text(x) for x in row) + " |")
        lines.append("")
        lines += [f"- {cell_text(note)}" for note in data.notes]
        if data.notes:
            lines.append("")
    warnings = scenario_warnings(cells)
    if warnings:  # once for the scenario: the same warning under each of its tables was noise
        lines.append(f"{heading} Warnings\n")
        lines += [f"- {cell_text(w)}" for w in warnings] + [""]
    return "\n".join(lines)


def to_markdown(cells: list[Cell]) -> str:
    parts = [LEGEND, ""]
    for scenario, group in by_scenario(cells).items():
        parts.append(f"## {scenario}\n")
        parts.append(scenario_tables(scenario, group))
    return "\n".join(parts)
