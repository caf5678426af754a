"""CSV: every metric of every cell, with its statistics."""

from __future__ import annotations

import csv
import io

from corobench.results import Cell


def full_csv(cells: list[Cell]) -> str:
    """One line per cell and metric, with the statistics pyperf/benchstat users expect."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["scenario", "program", "params", "threads", "status", "reason", "metric", "unit",
                "n", "median", "median_ci_low", "median_ci_high", "median_ci_level", "mean",
                "mean_ci_low", "mean_ci_high", "min", "max", "stdev", "cv", "warnings"])
    for c in cells:
        params = " ".join(f"{k}={v}" for k, v in c.params.items())
        base = [c.scenario, c.program, params, c.threads if c.threads is not None else "", c.status, c.reason]
        if not c.summaries:
            w.writerow(base + [""] * 14 + ["; ".join(c.warnings)])
            continue
        for metric in c.metrics:
            s = c.summaries.get(metric.key)
            if s is None:
                continue
            w.writerow(base + [metric.key, metric.unit, s.n, f"{s.median:.6g}", f"{s.median_ci[0]:.6g}",
                               f"{s.median_ci[1]:.6g}", f"{s.median_ci_level:.3f}", f"{s.mean:.6g}",
                               f"{s.mean_ci[0]:.6g}", f"{s.mean_ci[1]:.6g}", f"{s.min:.6g}", f"{s.max:.6g}",
                               f"{s.stdev:.6g}", f"{s.cv:.4f}", "; ".join(c.warnings)])
    return out.getvalue()
