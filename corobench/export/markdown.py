"""Markdown: per scenario and parameter set, median with its CI and ratio to the best; a comparison's
tables; and report.md (the tables, the charts, the machine)."""

from __future__ import annotations

import json

from corobench.compare import (TEST, Result, change_text, failure_notes, one_side_text, p_text, session_text,
                               side_text, summary_line)
from corobench.export.base import Exporter, ReportContext
from corobench.export.grouping import groups, scenario_warnings, summary_tables, tabulate
from corobench.results import Cell, by_scenario
from corobench.verify import clean_text

LEGEND = ("Medians of the measured repetitions; the bracket is the median's 95 % confidence interval from "
          "order statistics where a cell has 6 runs or more, and min–max below that (the header says which). "
          "\"vs best\": how many times worse than the best program (×2.00: the best is twice as fast, or needs "
          "half the memory), by a two-sided Mann-Whitney U test at 5 %: ~ not significant; ≈ significant but under "
          "the 2 % that is called a difference; \"too few runs to test\" where the runs cannot reach 5 % at all "
          "(3 + 3 runs), which is not \"no difference\". FAILED cells did not pass verification and carry no "
          "figure. Peak RSS counts every page the process maps, shared libraries too; the cgroup peak counts what "
          "is charged to the run (its own memory, the page cache it read first, kernel memory) over all its "
          "processes, so it can be below the RSS (README, Reading the results).")


def cell_text(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def scenario_tables(scenario: str, cells: list[Cell], heading: str = "###") -> str:
    lines: list[str] = []
    for summary in summary_tables(scenario, cells):  # the section opens with its original's shape
        lines.append(f"{heading} Summary: {summary.title}\n")
        lines.append("| " + " | ".join(summary.columns) + " |")
        lines.append("|" + "---|" * len(summary.columns))
        lines += ["| " + " | ".join(cell_text(x) for x in row) + " |" for row in summary.rows] + [""]
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


def comparison_markdown(result: Result, heading: str = "###") -> str:
    out = [f"A = {session_text(result.a)}, B = {session_text(result.b)}. Change is B against A; better or "
           f"worse: significant by a {TEST} and at least {result.min_change:.0%}; `~` not significant, `≈` "
           f"significant but under {result.min_change:.0%}, \"too few runs to test\" where the runs cannot reach 5 %. "
           "FAILED cells carry no figure.\n",
           f"**{summary_line(result)}**\n"]
    out += [f"- warning: {w}" for w in result.warnings] + [f"- note: {n}" for n in result.notes]
    if result.warnings or result.notes:
        out.append("")
    for group in result.groups():
        metric = group.metric
        out.append(f"{heading} {group.title}\n")
        params = ["parameters"] if group.varying else []
        columns = ["program", *params, "A median [CI]", "B median [CI]", "change", "p", "B vs A"]
        out += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for ln in group.lines:
            verdict = f"**{ln.verdict}**" if ln.verdict in ("better", "worse") or "FAILED" in ln.verdict else ln.verdict
            label = [group.label(ln.a_cell)] if group.varying else []
            row = [ln.a_cell.program, *label, side_text(ln.a_cell, metric), side_text(ln.b_cell, metric),
                   change_text(ln), p_text(ln), verdict]
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    if result.lines and failure_notes(result):
        out += [f"- {note}" for note in failure_notes(result)] + [""]
    for name, cells in (("A", result.only_a), ("B", result.only_b)):
        if cells:
            out.append(f"Only in {name}:\n")
            out += [f"- {one_side_text(c)}" for c in cells]
            out.append("")
    return "\n".join(out)


def machine_section(meta: dict) -> str:
    m = meta["machine"]
    mem = f"{m['memory_bytes'] / 2**30:.1f} GiB" if m.get("memory_bytes") else "?"
    lines = [
        "## Machine and session\n",
        f"- session {meta['session']}, {meta['started_at']} → {meta['finished_at'] or '(unfinished)'}"
        f" ({meta['status']})",
        f"- command: `{meta['command']}`",
        f"- commit: `{meta['git_commit'] or 'unknown'}`",
        f"- CPU: {m.get('cpu_model')}, {m.get('cores')} cores ({m.get('cores_usable')} usable), memory {mem}",
        f"- OS: {m.get('os')}, kernel {m.get('kernel')}, Python {m.get('python')}",
        f"- load average at start: {', '.join(f'{x:.2f}' for x in m.get('loadavg', []))}",
        f"- settings: {json.dumps({k: v for k, v in meta['settings'].items() if k != 'runtime_info'})}",
        "", "Runtime settings are each runtime's defaults (docs/implementations.md, tuning policy), as its "
        "manifest's `info` command reported them for this session.", "",
        "| implementation | toolchain | runtime settings |", "|---|---|---|",
    ]
    info = meta["settings"].get("runtime_info") or {}
    lines += [f"| {k} | {v} | {clean_text(str(info.get(k, '—')), 300).replace('|', '/')} |"
              for k, v in sorted(meta["toolchains"].items())]
    return "\n".join(lines) + "\n"


def section_markdown(section) -> str:
    out = [f"## {section.title}\n"] + [line + "\n" for line in section.lines]
    for chart in section.charts:
        if chart.suffix == ".png":
            out.append(f"![{chart.stem}]({chart.name})\n")
    for table in section.tables:
        if table.title:
            out.append(f"### {table.title}\n")
        out += ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
        out += ["| " + " | ".join(cell_text(x) for x in row) + " |" for row in table.rows] + [""]
    return "\n".join(out)


def report_markdown(ctx: ReportContext) -> str:
    meta = ctx.meta
    md = [f"# corobench report — session {meta['session']}\n", LEGEND + " Error bars in the charts span "
          "min–max of the runs.\n"]
    for section in ctx.sections:
        md.append(section_markdown(section))
    if ctx.comparison is not None:
        md.append(f"## Comparison with session {ctx.comparison.a['session']} (baseline)\n")
        md.append(comparison_markdown(ctx.comparison))
    for scenario, group in by_scenario(ctx.cells).items():
        md.append(f"## {scenario}\n")
        md += [f"![{chart.stem}]({chart.name})\n" for chart in ctx.charts.get(scenario, []) if chart.suffix == ".png"]
        md.append(scenario_tables(scenario, group))
    verify_failures = [r for r in ctx.rows if r.rep == 0 and r.status == "failed"]
    if verify_failures:
        md.append("## Verification failures (tiny size, before measuring)\n")
        md += [f"- {r.program} {r.scenario}: {clean_text(r.reason or '', 500)} (`corobench show {r.id}`)"
               for r in verify_failures]
        md.append("")
    md.append(machine_section(meta))
    return "\n".join(md)


class Markdown(Exporter):
    name = "md"
    help = "Markdown tables (report.md, with the charts and the machine)"
    order = 30

    def session_text(self, cells: list[Cell], meta: dict) -> str:
        return to_markdown(cells)

    def comparison_text(self, result: Result) -> str:
        return comparison_markdown(result)

    def report_files(self, ctx: ReportContext) -> dict[str, str]:
        return {"report.md": report_markdown(ctx)}


EXPORTER = Markdown()
