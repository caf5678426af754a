"""Each original benchmark's own output format (e.g. chain's `program,etype,worker,event,time,speed`).

The format belongs to the scenario (`Scenario.legacy`); this exporter only concatenates them, in
report order, for the scenarios of the cells that have one.
"""

from __future__ import annotations

from corobench.export.base import Exporter, ReportContext
from corobench.results import Cell, by_scenario
from corobench.scenarios import get_scenario


def legacy_text(cells: list[Cell]) -> str:
    parts = []
    for scenario, group in by_scenario(cells).items():
        text = get_scenario(scenario).legacy(group)
        if text is not None:
            parts.append(text)
    return "\n".join(parts)


class Legacy(Exporter):
    name = "legacy"
    help = "each original benchmark's own output (chain.csv, tasks.md, blocking.txt)"
    order = 50

    def session_text(self, cells: list[Cell], meta: dict) -> str:
        return legacy_text(cells)

    def report_files(self, ctx: ReportContext) -> dict[str, str]:
        files = {}
        for name, group in by_scenario(ctx.cells).items():
            scenario = get_scenario(name)
            text = scenario.legacy(group)
            if text is not None and scenario.legacy_name:
                files[scenario.legacy_name] = text
        return files


EXPORTER = Legacy()
