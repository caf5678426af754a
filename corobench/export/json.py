"""JSON: every cell with all its statistics and raw values; a comparison with every line and test."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

from corobench.compare import ALPHA, TEST, Result, summary_line
from corobench.export.base import Exporter, ReportContext
from corobench.results import Cell
from corobench.stats import Summary


def to_json(cells: list[Cell], meta: dict | None = None) -> str:
    doc = {
        "meta": meta or {},
        "results": [
            {
                "scenario": c.scenario, "program": c.program, "params": c.params, "threads": c.threads,
                "reported_threads": c.reported_threads, "status": c.status, "reason": c.reason,
                "runs_ok": c.runs_ok, "runs_total": c.runs_total, "warnings": c.warnings,
                "metrics": {
                    m.key: {"unit": m.unit, "better": m.better, **asdict(c.summaries[m.key]),
                            "values": c.values[m.key]}
                    for m in c.metrics if m.key in c.summaries
                },
            }
            for c in cells
        ],
    }
    return json.dumps(doc, indent=2)


def _summary_json(s: Summary | None) -> dict | None:
    if s is None:
        return None
    return {"n": s.n, "median": s.median, "median_ci": list(s.median_ci), "median_ci_level": s.median_ci_level}


def _cell_json(cell: Cell) -> dict:
    return {"scenario": cell.scenario, "program": cell.program, "params": cell.params, "threads": cell.threads,
            "status": cell.status, "reason": cell.reason}


def comparison_json(result: Result) -> str:
    changed, compared, not_compared = result.changed()
    doc = {
        "a": result.a, "b": result.b, "test": TEST, "alpha": ALPHA,
        "summary": {
            "changed": changed, "compared": compared, "not_compared": not_compared,
            "geomean_ratio": [{"scenario": t.scenario, "metric": t.metric.key, "better": t.metric.better,
                               "geomean": t.geomean, "compared": t.compared, "better_count": t.better,
                               "worse_count": t.worse} for t in result.totals],
            "text": summary_line(result),
        },
        "lines": [{"scenario": ln.a_cell.scenario, "program": ln.a_cell.program, "params": ln.a_cell.params,
                   "threads": ln.a_cell.threads, "metric": ln.metric.key, "unit": ln.metric.unit,
                   "better": ln.metric.better, "a_status": ln.a_cell.status, "b_status": ln.b_cell.status,
                   "a_reason": ln.a_cell.reason, "b_reason": ln.b_cell.reason,
                   "a": _summary_json(ln.a), "b": _summary_json(ln.b),
                   "ratio": ln.ratio if ln.ratio is None or math.isfinite(ln.ratio) else None,
                   "change": ln.change, "p_value": ln.test.p_value if ln.test else None,
                   "significant": ln.significant, "verdict": ln.verdict} for ln in result.lines],
        "only_a": [_cell_json(c) for c in result.only_a],
        "only_b": [_cell_json(c) for c in result.only_b],
        "warnings": result.warnings, "notes": result.notes,
    }
    return json.dumps(doc, indent=2)


class Json(Exporter):
    name = "json"
    help = "every cell with its statistics and raw values, and the session's metadata (results.json)"
    order = 40

    def session_text(self, cells: list[Cell], meta: dict) -> str:
        return to_json(cells, meta)

    def comparison_text(self, result: Result) -> str:
        return comparison_json(result)

    def report_files(self, ctx: ReportContext) -> dict[str, str]:
        return {"results.json": to_json(ctx.cells, ctx.meta)}


EXPORTER = Json()
