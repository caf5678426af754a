"""JSON: every cell with all its statistics and raw values."""

from __future__ import annotations

import json
from dataclasses import asdict

from corobench.results import Cell


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
